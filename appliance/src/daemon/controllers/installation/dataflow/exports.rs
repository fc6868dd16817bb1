//! Export writing: an installation's exports constructed and published into its parent scope.

use landscaper_store::model::Installation;
use landscaper_store::model::constants::*;
use landscaper_store::model::names::generate_data_object_name;
use landscaper_store::{Kind, ObjectKey, ObjectSource, object};
use landscaper_templating::blueprint::{
    Bindings, Blueprint, ExportBindings, render_export_executions,
};
use landscaper_templating::spiff::{self, SpiffOptions};
use serde_json::{Map, Value, json};

use super::*;
use crate::daemon::controllers::lserror::PhaseError;

/// The exports of an installation, from its deploy items' exports, the objects in its own
/// scope and its imports, through the export executions and the export data mappings.
pub fn construct_exports(
    store: &(impl ObjectSource + ?Sized),
    inst: &Installation,
    blueprint: &Blueprint,
    bindings: &Bindings,
) -> Result<Map<String, Value>, PhaseError> {
    const OP: &str = "ConstructExports";
    let ns = namespace(inst);
    let scope = own_scope(inst);
    // `.deployitems`: the execution's export DataObject.
    let mut deploy_items = None;
    if let Some(exec_ref) = inst
        .status
        .as_ref()
        .and_then(|s| s.execution_reference.as_ref())
    {
        let exec = store
            .get(&ObjectKey::new(Kind::Execution, ns, &exec_ref.name))
            .map_err(|e| store_error(OP, e))?;
        if let Some(r) = exec
            .as_ref()
            .and_then(|e| e.pointer("/status/exportRef/name"))
            .and_then(Value::as_str)
            && let Some(d) = store
                .get(&ObjectKey::new(Kind::DataObject, ns, r))
                .map_err(|e| store_error(OP, e))?
        {
            deploy_items = d.get("data").and_then(Value::as_object).cloned();
        }
    }
    let mut data_objects = Map::new();
    let mut targets = Map::new();
    let in_scope = |kind: Kind| -> Result<Vec<Value>, PhaseError> {
        let selector = label_equals(DATA_OBJECT_CONTEXT_LABEL, &scope);
        store
            .list(kind, Some(ns), &selector)
            .map_err(|e| store_error(OP, e))
    };
    for d in in_scope(Kind::DataObject)? {
        if let Some(key) = object::labels(&d).get(DATA_OBJECT_KEY_LABEL) {
            data_objects.insert(key.clone(), d.get("data").cloned().unwrap_or(Value::Null));
        }
    }
    for t in in_scope(Kind::Target)? {
        let labels = object::labels(&t);
        if labels.contains_key(DATA_OBJECT_INDEX_LABEL)
            || labels.contains_key(DATA_OBJECT_TARGET_MAP_KEY_LABEL)
        {
            continue;
        }
        if let Some(key) = labels.get(DATA_OBJECT_KEY_LABEL) {
            targets.insert(key.clone(), t);
        }
    }
    let export_bindings = ExportBindings {
        base: bindings.clone(),
        deploy_items,
        data_objects,
        targets,
    };
    let rendered = render_export_executions(blueprint, &export_bindings)
        .map_err(|e| fatal(OP, "ExportExecutions", e.to_string()))?;
    let mut exports = rendered.exports;
    if let Some(mappings) = inst
        .spec
        .export_data_mappings
        .as_ref()
        .filter(|m| !m.is_empty())
    {
        let mappings: Map<String, Value> = mappings.clone().into_iter().collect();
        // Every export at the top level and all of them under `exports`, as Landscaper binds them.
        let mut binding = exports.clone();
        binding.insert("exports".into(), Value::Object(exports.clone()));
        let mapped = spiff::evaluate_data_mappings(&mappings, &binding, &SpiffOptions::default())
            .map_err(|(k, e)| {
            fatal(
                OP,
                "ExportDataMappings",
                format!("spec.exportDataMappings.{k}: {e}"),
            )
        })?;
        for (k, v) in mapped {
            exports.insert(k, v);
        }
    }
    Ok(exports)
}

/// The DataObjects and Targets that publish an installation's exports into its parent scope.
pub fn export_objects(
    inst: &Installation,
    inst_value: &Value,
    exports: &Map<String, Value>,
    job_id: &str,
    from_secret: bool,
) -> Result<Vec<Value>, PhaseError> {
    const OP: &str = "CreateOrUpdateExports";
    let scope = parent_scope(inst);
    let ns = namespace(inst);
    let source = own_scope(inst);
    let owner = crate::daemon::controllers::jobs::owner_reference(Kind::Installation, inst_value);
    let labels = |key: &str| {
        let mut l = Map::new();
        if !scope.is_empty() {
            l.insert(DATA_OBJECT_CONTEXT_LABEL.into(), json!(scope));
        }
        l.insert(DATA_OBJECT_KEY_LABEL.into(), json!(key));
        l.insert(DATA_OBJECT_SOURCE_LABEL.into(), json!(source));
        l.insert(
            DATA_OBJECT_SOURCE_TYPE_LABEL.into(),
            json!(DATA_OBJECT_SOURCE_TYPE_EXPORT),
        );
        l.insert(DATA_OBJECT_JOB_ID_LABEL.into(), json!(job_id));
        l
    };
    let mut out = Vec::new();
    for e in inst.spec.data_exports() {
        let Some(value) = exports.get(&e.name) else {
            return Err(fatal(
                OP,
                "ExportMissing",
                format!(
                    "export {:?} (dataRef {:?}) has no value: the blueprint's export executions or the exportDataMappings must produce it",
                    e.name, e.data_ref
                ),
            ));
        };
        out.push(super::imports::owned_data_object(
            generate_data_object_name(&scope, &e.data_ref),
            ns,
            labels(&e.data_ref),
            &owner,
            value,
            from_secret,
        ));
    }
    for e in inst.spec.target_exports() {
        let Some(value) = exports.get(&e.name) else {
            return Err(fatal(
                OP,
                "ExportMissing",
                format!(
                    "target export {:?} (target {:?}) has no value",
                    e.name, e.target
                ),
            ));
        };
        // A target template: {type, config | secretRef, labels, annotations}.
        let mut spec = Map::new();
        for k in ["type", "config", "secretRef"] {
            if let Some(v) = value.get(k) {
                spec.insert(k.into(), v.clone());
            }
        }
        let mut l = labels(&e.target);
        if let Some(extra) = value.get("labels").and_then(Value::as_object) {
            for (k, v) in extra {
                l.entry(k.clone()).or_insert(v.clone());
            }
        }
        let mut metadata = json!({
            "name": generate_data_object_name(&scope, &e.target),
            "namespace": ns,
            "labels": l,
            "ownerReferences": [owner.clone()],
        });
        if let Some(a) = value.get("annotations").filter(|a| a.is_object()) {
            metadata["annotations"] = a.clone();
        }
        if from_secret {
            // The template may have written Secret values into the config.
            metadata["annotations"][FROM_SECRET_ANNOTATION] = json!("true");
        }
        out.push(json!({
            "apiVersion": Kind::Target.api_version(),
            "kind": "Target",
            "metadata": metadata,
            "spec": spec,
        }));
    }
    Ok(out)
}
