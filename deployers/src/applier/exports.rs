//! Exports (`pkg/deployer/lib/resourcemanager/exporter.go`): values read with JSONPath from
//! objects in the cluster, placed at their (dotted) keys.

use serde_json::{Map, Value};

use super::config::{Export, Exports};
use super::jsonpath::{KubePath, construct, merge_maps};
use super::targets::{SecondaryTargetError, TargetClients};
use crate::kubernetes::{ClusterClient, ObjectRef};

/// Why an export has no value (yet).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExportError {
    /// The export's secondary target (`targetName`) has no client.
    #[error("export {key}: {error}")]
    SecondaryTarget {
        key: String,
        error: SecondaryTargetError,
    },
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

/// `doExport` for one export with `fromResource`, read through `client` (the client of the
/// export's target).
async fn export_value(
    client: &dyn ClusterClient,
    export: &Export,
) -> Result<Option<Map<String, Value>>, ExportError> {
    let Some(from) = &export.from_resource else {
        // Exports without a resource are helm value exports; nothing to read here.
        return Ok(None);
    };
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

/// All exports merged into one map; the first export without a value stops it. An export
/// with `targetName` reads from that secondary target's cluster.
pub async fn collect_exports(
    clients: &mut TargetClients<'_>,
    exports: &Exports,
) -> Result<Map<String, Value>, ExportError> {
    let mut result = Map::new();
    for export in &exports.exports {
        if export.from_resource.is_none() {
            // A helm value export: nothing to read, no target needed.
            continue;
        }
        let client = clients
            .client(export.target_name.as_deref())
            .await
            .map_err(|error| ExportError::SecondaryTarget {
                key: export.key.clone(),
                error,
            })?;
        if let Some(value) = export_value(client.as_ref(), export).await? {
            merge_maps(&mut result, value);
        }
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::SecondaryTargets;
    use crate::applier::config::{FromObjectReference, TypedObjectReference};
    use crate::applier::targets::tests::{FakeFactory, resolved};
    use crate::kubernetes::FakeCluster;
    use serde_json::json;

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    /// `collect_exports` with `cluster` as the primary target and `second` as the secondary
    /// target `other`.
    fn collect_with(
        cluster: &Arc<FakeCluster>,
        second: Option<&Arc<FakeCluster>>,
        exports: &Exports,
    ) -> Result<Map<String, Value>, ExportError> {
        let factory = FakeFactory {
            clusters: second
                .map(|c| ("second".to_string(), c.clone()))
                .into_iter()
                .collect(),
        };
        let targets: SecondaryTargets = second
            .map(|_| ("other".to_string(), resolved("other", "second")))
            .into_iter()
            .collect();
        let mut clients = TargetClients::new(cluster.clone(), &factory, &targets);
        block_on(collect_exports(&mut clients, exports))
    }

    fn collect(
        cluster: &Arc<FakeCluster>,
        exports: &Exports,
    ) -> Result<Map<String, Value>, ExportError> {
        collect_with(cluster, None, exports)
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
        let cluster = Arc::new(FakeCluster::new());
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
        let result = collect(&cluster, &exports).unwrap();
        assert_eq!(
            Value::Object(result),
            json!({"test-token": "ZHVtbXk=", "settings": {"all": {"a": "1", "b": "2"}}})
        );
    }

    #[test]
    fn missing_objects_and_values_are_unavailable() {
        let cluster = Arc::new(FakeCluster::new());
        let exports = Exports {
            exports: vec![export("k", ".data.token", "Secret", "absent")],
        };
        let err = collect(&cluster, &exports).unwrap_err();
        assert!(matches!(err, ExportError::Unavailable { .. }), "{err}");
        assert!(
            err.to_string().contains("Secret acc-05/absent not found"),
            "{err}"
        );
        cluster.insert(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "absent", "namespace": "acc-05"}, "data": {}}));
        let err = collect(&cluster, &exports).unwrap_err();
        assert!(err.to_string().contains(".data.token not found"), "{err}");
    }

    #[test]
    fn exports_with_a_target_name_read_from_the_secondary_target() {
        let cluster = Arc::new(FakeCluster::new());
        let second = Arc::new(FakeCluster::new());
        cluster.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": "acc-05"}, "data": {"where": "primary"}}));
        second.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": "acc-05"}, "data": {"where": "secondary"}}));
        let mut remote = export("remote", ".data.where", "ConfigMap", "cm");
        remote.target_name = Some("other".into());
        let exports = Exports {
            exports: vec![export("local", ".data.where", "ConfigMap", "cm"), remote],
        };
        let result = collect_with(&cluster, Some(&second), &exports).unwrap();
        assert_eq!(
            Value::Object(result),
            json!({"local": "primary", "remote": "secondary"})
        );

        // Without the Target: a retried error in Landscaper's words.
        let err = collect(&cluster, &exports).unwrap_err();
        assert_eq!(
            err.to_string(),
            "export remote: unable to read secondary target other: targets.landscaper.gardener.cloud \"other\" not found"
        );
        let ExportError::SecondaryTarget { error, .. } = &err else {
            panic!("{err:?}");
        };
        assert!(error.codes().is_empty());

        // A value export (no fromResource) needs no target.
        let values = Exports {
            exports: vec![Export {
                key: "v".into(),
                json_path: ".x".into(),
                target_name: Some("absent".into()),
                ..Default::default()
            }],
        };
        assert_eq!(collect(&cluster, &values), Ok(Map::new()));
    }

    #[test]
    fn follows_object_references() {
        let cluster = Arc::new(FakeCluster::new());
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
        let result = collect(&cluster, &Exports { exports: vec![e] }).unwrap();
        assert_eq!(Value::Object(result), json!({"token": "dG9r"}));
    }
}
