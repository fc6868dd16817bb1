//! The `scale` subresource (`autoscaling/v1` Scale) of Deployments, ReplicaSets,
//! StatefulSets and ReplicationControllers: what `kubectl scale` and HPA-style clients use.

use serde_json::{Value, json};

use crate::object;
use crate::resources::ResourceType;

/// Whether the resource serves `/scale`.
pub fn supported(rt: &ResourceType) -> bool {
    matches!(
        (rt.group.as_str(), rt.plural.as_str()),
        ("apps", "deployments" | "replicasets" | "statefulsets") | ("", "replicationcontrollers")
    )
}

/// The label selector of `spec.selector` as a string (`app=web,tier in (a,b)`); for a
/// ReplicationController's plain map too.
pub fn selector_string(selector: Option<&Value>) -> String {
    let Some(selector) = selector else {
        return String::new();
    };
    let plain = |m: &serde_json::Map<String, Value>| -> Vec<String> {
        m.iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
            .collect()
    };
    let Some(m) = selector.as_object() else {
        return String::new();
    };
    if !m.contains_key("matchLabels") && !m.contains_key("matchExpressions") {
        return plain(m).join(",");
    }
    let mut parts = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(plain)
        .unwrap_or_default();
    for e in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = object::str_at(e, "/key");
        let values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .map(|vs| vs.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        parts.push(match object::str_at(e, "/operator") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => continue,
        });
    }
    parts.join(",")
}

/// The Scale of an object.
pub fn scale_of(obj: &Value) -> Value {
    let mut metadata = serde_json::Map::new();
    for key in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = obj.pointer(&format!("/metadata/{key}")) {
            metadata.insert(key.into(), v.clone());
        }
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": {"replicas": obj.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1)},
        "status": {
            "replicas": obj.pointer("/status/replicas").and_then(Value::as_i64).unwrap_or(0),
            "selector": selector_string(obj.pointer("/spec/selector")),
        },
    })
}

/// The replicas a written Scale asks for: a non-negative integer at `spec.replicas`.
pub fn requested_replicas(scale: &Value) -> Result<i64, String> {
    match scale.pointer("/spec/replicas") {
        None | Some(Value::Null) => Ok(0),
        Some(v) => match v.as_i64() {
            Some(n) if n >= 0 => Ok(n),
            _ => Err(format!(
                "spec.replicas: Invalid value: {v}: must be greater than or equal to 0"
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_shape_and_selectors() {
        let d = json!({"metadata": {"name": "web", "namespace": "ns", "resourceVersion": "7", "labels": {"x": "y"}},
                       "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"},
                         "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]}},
                       "status": {"replicas": 2}});
        let s = scale_of(&d);
        assert_eq!(s["spec"]["replicas"], 3);
        assert_eq!(
            s["status"],
            json!({"replicas": 2, "selector": "app=web,tier in (a,b)"})
        );
        assert_eq!(s["metadata"]["resourceVersion"], "7");
        assert!(s["metadata"].get("labels").is_none());
        assert_eq!(selector_string(Some(&json!({"app": "rc"}))), "app=rc");
        assert_eq!(requested_replicas(&json!({"spec": {"replicas": 5}})), Ok(5));
        assert!(requested_replicas(&json!({"spec": {"replicas": -1}})).is_err());
    }
}
