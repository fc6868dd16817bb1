use super::*;
use serde_json::json;

#[test]
fn decodes_v1alpha2_with_defaults_and_ignores_unknown_fields() {
    let config = ProviderConfiguration::parse(&json!({
        "apiVersion": V1ALPHA2, "kind": "ProviderConfiguration", "unknownField": 1,
        "manifests": [{"manifest": {"apiVersion": "v1", "kind": "ConfigMap"}},
                      {"policy": "keep", "manifest": {"kind": "X"}, "annotateBeforeDelete": {"a": "b"}}],
        "readinessChecks": {"timeout": "10m", "custom": [{"name": "c",
            "resourceSelector": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "namespace": "n"}],
            "requirements": [{"jsonPath": ".data.ready", "operator": "in", "values": [{"value": "a"}, {"value": "b"}]}]}]},
        "exports": {"defaultTimeout": "5m", "exports": [{"key": "k", "jsonPath": ".data", "fromResource": {"apiVersion": "v1", "kind": "Secret", "name": "s", "namespace": "n"}}]},
        "deletionGroups": [{"predefinedResourceGroup": {"type": "crds", "forceDelete": true}}],
        "continuousReconcile": {"every": "1h"}
    }))
    .unwrap();
    assert_eq!(config.update_strategy, UpdateStrategy::Update);
    assert_eq!(config.manifests[0].policy, ManifestPolicy::Manage);
    assert_eq!(config.manifests[1].policy, ManifestPolicy::Keep);
    assert_eq!(
        config
            .readiness_checks
            .custom_readiness_checks
            .as_ref()
            .unwrap()[0]
            .requirements[0]
            .values
            .len(),
        2
    );
    assert_eq!(config.exports.unwrap().exports[0].key, "k");
    assert!(
        config.deletion_groups[0]
            .predefined_resource_group
            .as_ref()
            .unwrap()
            .force_delete
    );
}

#[test]
fn converts_v1alpha1_manifests_to_managed_entries() {
    let config = ProviderConfiguration::parse(&json!({
        "apiVersion": V1ALPHA1, "kind": "ProviderConfiguration", "updateStrategy": "patch",
        "manifests": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}]
    }))
    .unwrap();
    assert_eq!(config.update_strategy, UpdateStrategy::Patch);
    assert_eq!(config.manifests[0].policy, ManifestPolicy::Manage);
    assert_eq!(
        config.manifests[0].manifest.as_ref().unwrap()["kind"],
        "ConfigMap"
    );
}

#[test]
fn unknown_strategies_and_policies_are_kept() {
    let config = ProviderConfiguration::parse(&json!({"updateStrategy": "replace",
        "manifests": [{"policy": "weird", "manifest": {"kind": "X"}}]}))
    .unwrap();
    assert_eq!(
        config.update_strategy,
        UpdateStrategy::Other("replace".into())
    );
    assert_eq!(config.manifests[0].policy.as_str(), "weird");
}

#[test]
fn rejects_wrong_types_and_invalid_content() {
    let parse = |v: Value| ProviderConfiguration::parse(&v).unwrap_err();
    assert!(matches!(
        parse(json!({"apiVersion": "helm.deployer.landscaper.gardener.cloud/v1alpha1"})),
        ConfigError::Parse(_)
    ));
    assert!(matches!(
        parse(json!({"kind": "ProviderStatus"})),
        ConfigError::Parse(_)
    ));
    assert!(matches!(
        parse(json!({"manifests": "x"})),
        ConfigError::Parse(_)
    ));
    assert!(matches!(parse(json!("text")), ConfigError::Parse(_)));
    let e = parse(
        json!({"readinessChecks": {"custom": [{"name": "", "requirements": [
        {"jsonPath": ".a", "operator": "like"}, {"jsonPath": ".b", "operator": "=", "values": [{"value": 1}, {"value": 2}]}]}]}}),
    );
    let text = e.to_string();
    assert!(
        text.contains("customHealthCheckConfiguration.name: Required value"),
        "{text}"
    );
    assert!(
        text.contains("must have either a resource or a set of labels"),
        "{text}"
    );
    assert!(text.contains("\"like\": is not a valid operator"), "{text}");
    assert!(
        text.contains("must have exactly one value to compare to"),
        "{text}"
    );
    let e = parse(
        json!({"deletionGroups": [{}, {"predefinedResourceGroup": {"type": "all"}},
        {"customResourceGroup": {"resources": []}}]}),
    );
    let text = e.to_string();
    assert!(
        text.contains(
            "deletionGroups[0]: either predefinedResourceGroup or customResourceGroup must be set"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "deletionGroups[1]: predefinedResourceGroup.type: Unsupported value: \"all\""
        ),
        "{text}"
    );
    assert!(
        text.contains("deletionGroups[2]: customResourceGroup.resources: Required value"),
        "{text}"
    );
    assert!(
        ProviderConfiguration::parse(
            &json!({"continuousReconcile": {"cron": "* * * * *", "every": "1h"}})
        )
        .is_err()
    );
}

/// Every manifest deployer configuration in the acceptance expectations decodes and validates.
#[test]
fn parses_the_acceptance_configurations() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/acceptance");
    let Ok(cases) = std::fs::read_dir(&root) else {
        println!("SKIP: {} not present", root.display());
        return;
    };
    fn collect(value: &Value, found: &mut Vec<Value>) {
        match value {
            Value::Object(map) => {
                if map
                    .get("apiVersion")
                    .and_then(Value::as_str)
                    .is_some_and(|v| v.starts_with(API_GROUP))
                    && map.get("kind").and_then(Value::as_str) == Some("ProviderConfiguration")
                {
                    found.push(value.clone());
                }
                map.values().for_each(|v| collect(v, found));
            }
            Value::Array(items) => items.iter().for_each(|v| collect(v, found)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    for case in cases.flatten() {
        let Ok(files) = std::fs::read_dir(case.path().join("expected")) else {
            continue;
        };
        for file in files.flatten() {
            let name = file.file_name().to_string_lossy().to_string();
            if !name.starts_with("manifest.") {
                continue;
            }
            let text = std::fs::read_to_string(file.path()).unwrap();
            let value: Value = serde_saphyr::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: {e}", file.path().display()));
            collect(&value, &mut found);
        }
    }
    println!("{} configurations", found.len());
    assert!(!found.is_empty());
    for config in &found {
        ProviderConfiguration::parse(config).unwrap_or_else(|e| panic!("{config}: {e}"));
    }
}
