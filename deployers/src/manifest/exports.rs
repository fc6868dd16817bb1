//! Exports (`pkg/deployer/lib/resourcemanager/exporter.go`): values read with JSONPath from
//! objects in the cluster, placed at their (dotted) keys.

use serde_json::{Map, Value};

use super::config::{Export, Exports};
use super::jsonpath::{KubePath, construct, merge_maps};
use crate::kubernetes::{ClusterClient, ObjectRef};

/// Why an export has no value (yet).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExportError {
    #[error("export {key}: targetName (a secondary target) is not supported by the appliance")]
    SecondaryTarget { key: String },
    /// The value is not available (yet); retried.
    #[error("export {key}: {message}")]
    Unavailable { key: String, message: String },
}

fn unavailable(export: &Export, message: impl Into<String>) -> ExportError {
    ExportError::Unavailable {
        key: export.key.clone(),
        message: message.into(),
    }
}

async fn read(client: &dyn ClusterClient, reference: &ObjectRef) -> Result<Value, String> {
    match client.get(reference).await {
        Ok(Some(object)) => Ok(object),
        Ok(None) => Err(format!("{reference} not found")),
        Err(e) => Err(format!("unable to get {reference}: {e}")),
    }
}

/// `doExport` for one export with `fromResource`.
async fn export_value(
    client: &dyn ClusterClient,
    export: &Export,
) -> Result<Option<Map<String, Value>>, ExportError> {
    let Some(from) = &export.from_resource else {
        // Exports without a resource are helm value exports; nothing to read here.
        return Ok(None);
    };
    if export.target_name.is_some() {
        return Err(ExportError::SecondaryTarget {
            key: export.key.clone(),
        });
    }
    let reference = ObjectRef::new(&from.api_version, &from.kind, &from.namespace, &from.name);
    let object = read(client, &reference)
        .await
        .map_err(|e| unavailable(export, e))?;
    let path = KubePath::parse(&export.json_path).map_err(|e| unavailable(export, e))?;
    let mut value = path.value(&object).map_err(|e| unavailable(export, e))?;
    if let Some(follow) = &export.from_object_reference {
        let Value::Object(target) = &value else {
            return Err(unavailable(
                export,
                format!("unexpected reference {value}, expected map with name and namespace"),
            ));
        };
        let name = match target.get("name") {
            Some(Value::String(name)) => name.clone(),
            Some(other) => {
                return Err(unavailable(
                    export,
                    format!("expected name {other} to be a string"),
                ));
            }
            None => {
                return Err(unavailable(
                    export,
                    format!("unexpected reference {value}, expected map to have a name key"),
                ));
            }
        };
        let namespace = match target.get("namespace") {
            None => from.namespace.clone(),
            Some(Value::String(ns)) => ns.clone(),
            Some(other) => {
                return Err(unavailable(
                    export,
                    format!("expected namespace {other} to be a string"),
                ));
            }
        };
        let referenced = ObjectRef::new(&follow.api_version, &follow.kind, &namespace, &name);
        let object = read(client, &referenced)
            .await
            .map_err(|e| unavailable(export, e))?;
        let path = KubePath::parse(&follow.json_path).map_err(|e| unavailable(export, e))?;
        value = path.value(&object).map_err(|e| unavailable(export, e))?;
    }
    construct(&export.key, value)
        .map(Some)
        .map_err(|e| unavailable(export, e))
}

/// All exports merged into one map; the first export without a value stops it.
pub async fn collect_exports(
    client: &dyn ClusterClient,
    exports: &Exports,
) -> Result<Map<String, Value>, ExportError> {
    let mut result = Map::new();
    for export in &exports.exports {
        if let Some(value) = export_value(client, export).await? {
            merge_maps(&mut result, value);
        }
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kubernetes::FakeCluster;
    use crate::manifest::config::{FromObjectReference, TypedObjectReference};
    use serde_json::json;

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    fn export(key: &str, path: &str, kind: &str, name: &str) -> Export {
        Export {
            key: key.into(),
            json_path: path.into(),
            from_resource: Some(TypedObjectReference {
                api_version: "v1".into(),
                kind: kind.into(),
                name: name.into(),
                namespace: "acc-05".into(),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn reads_values_at_nested_keys_and_keeps_secret_data_encoded() {
        let cluster = FakeCluster::new();
        cluster.insert(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "test-secret", "namespace": "acc-05"}, "data": {"token": "ZHVtbXk="}}));
        cluster.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": "acc-05"}, "data": {"a": "1", "b": "2"}}));
        let exports = Exports {
            exports: vec![
                export("test-token", ".data.token", "Secret", "test-secret"),
                export("settings.all", "data", "ConfigMap", "cm"),
                Export {
                    key: "helm".into(),
                    json_path: ".x".into(),
                    ..Default::default()
                },
            ],
        };
        let result = block_on(collect_exports(&cluster, &exports)).unwrap();
        assert_eq!(
            Value::Object(result),
            json!({"test-token": "ZHVtbXk=", "settings": {"all": {"a": "1", "b": "2"}}})
        );
    }

    #[test]
    fn missing_objects_and_values_are_unavailable() {
        let cluster = FakeCluster::new();
        let exports = Exports {
            exports: vec![export("k", ".data.token", "Secret", "absent")],
        };
        let err = block_on(collect_exports(&cluster, &exports)).unwrap_err();
        assert!(matches!(err, ExportError::Unavailable { .. }), "{err}");
        assert!(
            err.to_string().contains("Secret acc-05/absent not found"),
            "{err}"
        );
        cluster.insert(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "absent", "namespace": "acc-05"}, "data": {}}));
        let err = block_on(collect_exports(&cluster, &exports)).unwrap_err();
        assert!(err.to_string().contains(".data.token not found"), "{err}");
        let mut secondary = export("k", ".data", "Secret", "absent");
        secondary.target_name = Some("other".into());
        let err = block_on(collect_exports(
            &cluster,
            &Exports {
                exports: vec![secondary],
            },
        ))
        .unwrap_err();
        assert!(matches!(err, ExportError::SecondaryTarget { .. }));
    }

    #[test]
    fn follows_object_references() {
        let cluster = FakeCluster::new();
        cluster.insert(json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "sa", "namespace": "acc-05"}, "secrets": [{"name": "sa-token"}]}));
        cluster.insert(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "sa-token", "namespace": "acc-05"}, "data": {"token": "dG9r"}}));
        let mut e = export("token", ".secrets[0]", "ServiceAccount", "sa");
        e.from_object_reference = Some(FromObjectReference {
            api_version: "v1".into(),
            kind: "Secret".into(),
            json_path: ".data.token".into(),
        });
        let result = block_on(collect_exports(&cluster, &Exports { exports: vec![e] })).unwrap();
        assert_eq!(Value::Object(result), json!({"token": "dG9r"}));
    }
}
