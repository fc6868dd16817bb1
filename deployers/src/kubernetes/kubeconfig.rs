//! The kubeconfig of a `landscaper.gardener.cloud/kubernetes-cluster` Target.

use serde_json::Value;

/// The kubeconfig text Landscaper's `KubernetesClusterTargetConfig` decoder finds in a target
/// configuration (the same rule the dispatcher validates with):
/// * an object naming `kubeconfig`, `oidcConfig` or `selfConfig`: the `kubeconfig` string, or
///   the JSON text of a non-string `kubeconfig`; `None` without `kubeconfig`;
/// * anything else is the kubeconfig itself: a string as it is, other values as JSON text.
pub fn kubeconfig_text(config: Option<&Value>) -> Option<String> {
    let config = config.unwrap_or(&Value::Null);
    if let Value::Object(map) = config {
        let present = |k: &str| map.get(k).is_some_and(|v| !v.is_null());
        if present("kubeconfig") || present("oidcConfig") || present("selfConfig") {
            return match map.get("kubeconfig") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(other) => Some(other.to_string()),
            };
        }
    }
    match config {
        Value::Null => None,
        Value::String(s) if s.trim().is_empty() => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_the_kubeconfig() {
        assert_eq!(
            kubeconfig_text(Some(&json!({"kubeconfig": "apiVersion: v1"}))).as_deref(),
            Some("apiVersion: v1")
        );
        assert_eq!(kubeconfig_text(Some(&json!({"oidcConfig": {}}))), None);
        assert_eq!(
            kubeconfig_text(Some(&json!("clusters: []"))).as_deref(),
            Some("clusters: []")
        );
        assert_eq!(kubeconfig_text(None), None);
    }
}
