use serde_json::json;

use super::*;

fn minimal() -> Value {
    json!({"apiVersion": V1ALPHA1, "kind": "ProviderConfiguration", "name": "rel",
        "namespace": "apps", "chart": {"ref": "example.com/charts/app:1.0.0"}})
}

fn invalid(value: Value) -> String {
    match ProviderConfiguration::parse(&value) {
        Err(ConfigError::Invalid(message)) => message,
        other => panic!("expected a validation error, got {other:?}"),
    }
}

#[test]
fn defaults_are_landscapers() {
    let config = ProviderConfiguration::parse(&minimal()).unwrap();
    assert!(config.helm_deployment, "helmDeployment defaults to true");
    assert!(!config.create_namespace);
    assert_eq!(config.update_strategy, UpdateStrategy::Update);
    assert_eq!(config.values, Value::Null);
    assert_eq!(config.chart.reference, "example.com/charts/app:1.0.0");
    assert!(config.exports.is_none());
    // apiVersion and kind may be omitted; unknown fields are ignored.
    let mut bare = minimal();
    bare.as_object_mut().unwrap().remove("apiVersion");
    bare.as_object_mut().unwrap().remove("kind");
    bare["somethingElse"] = json!(1);
    assert_eq!(ProviderConfiguration::parse(&bare).unwrap(), config);
}

#[test]
fn every_field_is_read() {
    let mut value = minimal();
    let extra = json!({
        "createNamespace": true,
        "helmDeployment": false,
        "updateStrategy": "patch",
        "values": {"a": {"b": 1}},
        "helmDeploymentConfig": {"install": {"atomic": true}, "uninstall": {"timeout": "5m"}},
        "readinessChecks": {"disableDefault": true},
        "exports": {"exports": [{"key": "a", "jsonPath": ".Values.a"}]},
        "exportsFromManifests": [{"key": "b", "jsonPath": ".Release.Name"}],
        "continuousReconcile": {"every": "1h"},
        "deletionGroups": [{"predefinedResourceGroup": {"type": "namespaced-resources"}}],
        "deletionGroupsDuringUpdate": [{"predefinedResourceGroup": {"type": "crds"}}],
    });
    value
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let config = ProviderConfiguration::parse(&value).unwrap();
    assert!(config.create_namespace);
    assert!(!config.helm_deployment);
    assert_eq!(config.update_strategy, UpdateStrategy::Patch);
    assert_eq!(config.values, json!({"a": {"b": 1}}));
    assert!(config.readiness_checks.disable_default);
    assert_eq!(config.deletion_groups.len(), 1);
    assert_eq!(config.deletion_groups_during_update.len(), 1);
    assert!(config.continuous_reconcile.is_some());
    // exportsFromManifests first, then exports.
    let keys: Vec<String> = config
        .all_exports()
        .exports
        .into_iter()
        .map(|e| e.key)
        .collect();
    assert_eq!(keys, ["b", "a"]);
}

#[test]
fn required_fields_and_invalid_values_are_reported_as_landscaper_does() {
    let message = invalid(json!({"chart": {"ref": "x"}}));
    assert_eq!(
        message,
        "[name: Required value: must not be empty, namespace: Required value: must not be empty]"
    );
    let mut no_chart = minimal();
    no_chart.as_object_mut().unwrap().remove("chart");
    assert_eq!(
        invalid(no_chart),
        "chart: Required value: must not be empty: either ref, fromResource, helmChartRepo or resourceRef must be set"
    );
    let mut repo = minimal();
    repo["chart"] = json!({"helmChartRepo": {"helmChartRepoUrl": "https://r"}});
    assert!(invalid(repo).contains("chart.helmChartRepo.helmChartName: Required value"));
    let mut archive = minimal();
    archive["chart"] = json!({"archive": {}});
    assert_eq!(
        invalid(archive),
        "chart.archive.raw.remote: Required value: must not be empty"
    );
    let mut args = minimal();
    args["helmDeploymentConfig"] = json!({"uninstall": {"atomic": true}});
    assert_eq!(
        invalid(args),
        "helmDeploymentConfig.uninstall: Unsupported value: \"atomic\": supported values: \"timeout\", \"wait\""
    );
    let mut duplicate = minimal();
    duplicate["exportsFromManifests"] = json!([
        {"key": "a", "jsonPath": ".x"}, {"key": "a", "jsonPath": ""}]);
    let message = invalid(duplicate);
    assert!(
        message.contains("exportsFromManifests[1].key: Duplicate value"),
        "{message}"
    );
    assert!(
        message.contains("exportsFromManifests[1].jsonPath: Required value"),
        "{message}"
    );
}

#[test]
fn type_and_shape_errors_are_parse_errors() {
    let mut wrong_version = minimal();
    wrong_version["apiVersion"] = json!("manifest.deployer.landscaper.gardener.cloud/v1alpha2");
    assert!(matches!(
        ProviderConfiguration::parse(&wrong_version),
        Err(ConfigError::Parse(m)) if m.contains("is not registered") || m.contains("registered for version")
    ));
    let mut values = minimal();
    values["values"] = json!([1, 2]);
    assert!(matches!(
        ProviderConfiguration::parse(&values),
        Err(ConfigError::Parse(m)) if m.contains("values: must be an object")
    ));
    assert!(matches!(
        ProviderConfiguration::parse(&json!("text")),
        Err(ConfigError::Parse(_))
    ));
}
