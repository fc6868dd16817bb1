//! `meta.k8s.io/v1` `Table` responses for `kubectl get` (asked for with
//! `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`).

use serde_json::{Value, json};

use crate::object::{self, str_at};
use crate::resources::ResourceType;

/// Whether `Accept` asks for a Table before any plain representation.
pub fn wants_table(accept: &str) -> bool {
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let essence = parts.next().unwrap_or("");
        if !matches!(essence, "application/json" | "*/*" | "application/*") {
            continue;
        }
        let params: Vec<(&str, &str)> = parts.filter_map(|p| p.split_once('=')).collect();
        let param = |k: &str| params.iter().find(|(n, _)| *n == k).map(|(_, v)| *v);
        match param("as") {
            None => return false,
            Some("Table")
                if param("g") == Some("meta.k8s.io")
                    && matches!(param("v"), Some("v1" | "v1beta1")) =>
            {
                return true;
            }
            Some(_) => {}
        }
    }
    false
}

struct Column {
    name: &'static str,
    type_: &'static str,
    cell: fn(&Value) -> Value,
}

fn col(name: &'static str, type_: &'static str, cell: fn(&Value) -> Value) -> Column {
    Column { name, type_, cell }
}

/// kube's `HumanDuration` of the object's age.
pub fn age(obj: &Value) -> Value {
    let created = str_at(obj, "/metadata/creationTimestamp");
    let Ok(ts) = created.parse::<jiff::Timestamp>() else {
        return json!("<unknown>");
    };
    let secs = (jiff::Timestamp::now().as_second() - ts.as_second()).max(0);
    json!(human_duration(secs))
}

pub fn human_duration(secs: i64) -> String {
    let (m, h, d) = (secs / 60, secs / 3600, secs / 86400);
    if secs < 120 {
        format!("{secs}s")
    } else if m < 10 {
        let s = secs % 60;
        if s == 0 {
            format!("{m}m")
        } else {
            format!("{m}m{s}s")
        }
    } else if h < 3 {
        format!("{m}m")
    } else if h < 8 {
        let rm = m % 60;
        if rm == 0 {
            format!("{h}h")
        } else {
            format!("{h}h{rm}m")
        }
    } else if h < 48 {
        format!("{h}h")
    } else if d < 8 {
        let rh = h % 24;
        if rh == 0 {
            format!("{d}d")
        } else {
            format!("{d}d{rh}h")
        }
    } else {
        format!("{d}d")
    }
}

fn int(obj: &Value, pointer: &str) -> i64 {
    obj.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn name(obj: &Value) -> Value {
    json!(object::name(obj))
}

fn ready_of(obj: &Value) -> Value {
    json!(format!(
        "{}/{}",
        int(obj, "/status/readyReplicas"),
        int(obj, "/spec/replicas")
    ))
}

fn count(obj: &Value, field: &str) -> Value {
    json!(
        obj.get(field)
            .and_then(Value::as_object)
            .map_or(0, |m| m.len())
            + if field == "data" {
                obj.get("binaryData")
                    .and_then(Value::as_object)
                    .map_or(0, |m| m.len())
            } else {
                0
            }
    )
}

fn columns(rt: &ResourceType) -> Vec<Column> {
    let mut cols = vec![col("Name", "string", name)];
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "namespaces") => cols.push(col("Status", "string", |o| {
            json!(str_at(o, "/status/phase"))
        })),
        ("", "configmaps") => cols.push(col("Data", "integer", |o| count(o, "data"))),
        ("", "secrets") => {
            cols.push(col("Type", "string", |o| json!(str_at(o, "/type"))));
            cols.push(col("Data", "integer", |o| count(o, "data")));
        }
        ("", "services") => {
            cols.push(col("Type", "string", |o| json!(str_at(o, "/spec/type"))));
            cols.push(col("Cluster-IP", "string", |o| {
                json!(str_at(o, "/spec/clusterIP"))
            }));
            cols.push(col("External-IP", "string", |_| json!("<none>")));
            cols.push(col("Port(s)", "string", |o| {
                let ports: Vec<String> = o
                    .pointer("/spec/ports")
                    .and_then(Value::as_array)
                    .map(|ps| {
                        ps.iter()
                            .map(|p| {
                                format!(
                                    "{}/{}",
                                    p.get("port").and_then(Value::as_i64).unwrap_or(0),
                                    p.get("protocol").and_then(Value::as_str).unwrap_or("TCP")
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                json!(if ports.is_empty() {
                    "<none>".to_string()
                } else {
                    ports.join(",")
                })
            }));
        }
        ("", "pods") => {
            cols.push(col("Ready", "string", |o| {
                let total = o
                    .pointer("/spec/containers")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
                let ready = o
                    .pointer("/status/containerStatuses")
                    .and_then(Value::as_array)
                    .map_or(0, |cs| {
                        cs.iter()
                            .filter(|c| c.get("ready") == Some(&json!(true)))
                            .count()
                    });
                json!(format!("{ready}/{total}"))
            }));
            cols.push(col("Status", "string", |o| {
                json!(match str_at(o, "/status/phase") {
                    "" => "Pending",
                    p => p,
                })
            }));
            cols.push(col("Restarts", "string", |_| json!("0")));
        }
        ("apps", "deployments") => {
            cols.push(col("Ready", "string", ready_of));
            cols.push(col("Up-to-date", "integer", |o| {
                json!(int(o, "/status/updatedReplicas"))
            }));
            cols.push(col("Available", "integer", |o| {
                json!(int(o, "/status/availableReplicas"))
            }));
        }
        ("apps", "statefulsets") => cols.push(col("Ready", "string", ready_of)),
        ("apps", "replicasets") => {
            cols.push(col("Desired", "integer", |o| {
                json!(int(o, "/spec/replicas"))
            }));
            cols.push(col("Current", "integer", |o| {
                json!(int(o, "/status/replicas"))
            }));
            cols.push(col("Ready", "integer", |o| {
                json!(int(o, "/status/readyReplicas"))
            }));
        }
        ("apps", "daemonsets") => {
            cols.push(col("Desired", "integer", |o| {
                json!(int(o, "/status/desiredNumberScheduled"))
            }));
            cols.push(col("Ready", "integer", |o| {
                json!(int(o, "/status/numberReady"))
            }));
        }
        ("batch", "jobs") => {
            cols.push(col("Status", "string", |o| {
                let complete = o
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .is_some_and(|cs| {
                        cs.iter().any(|c| {
                            c.get("type") == Some(&json!("Complete"))
                                && c.get("status") == Some(&json!("True"))
                        })
                    });
                json!(if complete { "Complete" } else { "Running" })
            }));
            cols.push(col("Completions", "string", |o| {
                json!(format!(
                    "{}/{}",
                    int(o, "/status/succeeded"),
                    o.pointer("/spec/completions")
                        .and_then(Value::as_i64)
                        .unwrap_or(1)
                ))
            }));
        }
        _ => {}
    }
    cols
}

fn metadata_only(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or(json!({})),
    })
}

/// Evaluates a simple CRD printer-column JSONPath (`.spec.x`, `.metadata.labels.y`).
fn json_path_cell(obj: &Value, path: &str) -> Value {
    let path = path
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .trim_start_matches('.');
    let mut cur = obj;
    for seg in path.split('.').filter(|s| !s.is_empty()) {
        match cur.get(seg) {
            Some(v) => cur = v,
            None => return Value::Null,
        }
    }
    cur.clone()
}

/// A Table of `objects`; `headers` false leaves out the column definitions (watch events
/// after the first).
pub fn table(rt: &ResourceType, objects: &[Value], resource_version: &str, headers: bool) -> Value {
    let cols = columns(rt);
    let custom = &rt.printer_columns;
    let mut defs: Vec<Value> = cols
        .iter()
        .map(|c| {
            json!({"name": c.name, "type": c.type_, "format": if c.name == "Name" { "name" } else { "" },
                   "description": c.name, "priority": 0})
        })
        .collect();
    for c in custom {
        defs.push(json!({"name": c.name, "type": c.type_, "format": "", "description": c.description, "priority": c.priority}));
    }
    let has_age_column = custom.iter().any(|c| c.name.eq_ignore_ascii_case("age"));
    if !has_age_column {
        defs.push(json!({"name": "Age", "type": "string", "format": "", "description": "Age", "priority": 0}));
    }
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let mut cells: Vec<Value> = cols.iter().map(|c| (c.cell)(o)).collect();
            for c in custom {
                let v = json_path_cell(o, &c.json_path);
                cells.push(if c.json_path.contains("creationTimestamp") {
                    age(o)
                } else {
                    v
                });
            }
            if !has_age_column {
                cells.push(age(o));
            }
            json!({"cells": cells, "object": metadata_only(o)})
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": if headers { Value::Array(defs) } else { Value::Array(Vec::new()) },
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_negotiation() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(150), "2m30s");
        assert_eq!(human_duration(3 * 86400), "3d");
        assert!(wants_table(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
        ));
        assert!(!wants_table("application/json"));
    }
}
