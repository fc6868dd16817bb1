//! `Target` (`types_target.go`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::meta::ObjectMeta;
use super::shared::{LocalSecretReference, some_value};

/// Access information for an environment, e.g. a Kubernetes cluster.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: TargetSpec,
}

/// `type` plus at most one of `config` and `secretRef`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetSpec {
    /// Target type, e.g. `landscaper.gardener.cloud/kubernetes-cluster`. Required.
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub r#type: String,
    /// Inline configuration, free-form (for clusters: `{kubeconfig: "..."}`).
    #[serde(
        default,
        deserialize_with = "some_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub config: Option<Value>,
    /// Secret holding the configuration (`key` selects one entry).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalSecretReference>,
}

/// The kubeconfig text Landscaper's `KubernetesClusterTargetConfig` decoder finds in a target
/// configuration, whatever the target type:
/// * an object naming `kubeconfig`, `oidcConfig` or `selfConfig`: the `kubeconfig` string, or the
///   JSON text of a non-string `kubeconfig` (e.g. `{secretRef: …}`); none without `kubeconfig`;
/// * anything else is taken as the kubeconfig itself: a string as it is, other values as JSON
///   text (`null`, and no configuration at all, as the empty text).
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
    Some(match config {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_the_kubeconfig_field() {
        assert_eq!(
            kubeconfig_text(Some(&json!({"kubeconfig": "apiVersion: v1"}))).as_deref(),
            Some("apiVersion: v1")
        );
        assert_eq!(
            kubeconfig_text(Some(&json!({"kubeconfig": {"secretRef": {"name": "s"}}}))).as_deref(),
            Some(r#"{"secretRef":{"name":"s"}}"#)
        );
        assert_eq!(kubeconfig_text(Some(&json!({"oidcConfig": {}}))), None);
        assert_eq!(
            kubeconfig_text(Some(&json!({"oidcConfig": {"server": "x"}}))),
            None
        );
    }

    #[test]
    fn the_whole_configuration_counts_as_kubeconfig_without_a_kubeconfig_field() {
        // Landscaper's decoder falls back to reading the whole content as the kubeconfig.
        assert_eq!(
            kubeconfig_text(Some(&json!({"foo": "bar"}))).as_deref(),
            Some(r#"{"foo":"bar"}"#)
        );
        assert_eq!(kubeconfig_text(None).as_deref(), Some(""));
        assert_eq!(kubeconfig_text(Some(&Value::Null)).as_deref(), Some(""));
        assert_eq!(kubeconfig_text(Some(&json!("abc"))).as_deref(), Some("abc"));
        assert_eq!(
            kubeconfig_text(Some(&json!("clusters: []"))).as_deref(),
            Some("clusters: []")
        );
    }
}
