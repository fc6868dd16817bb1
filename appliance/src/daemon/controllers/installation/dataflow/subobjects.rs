//! What the deploy executions and subinstallation executions render, and the subinstallation
//! and Execution objects made from it.

use landscaper_store::model::Installation;
use landscaper_store::model::constants::*;
use landscaper_store::{Kind, object};
use landscaper_templating::blueprint::{
    Bindings, Blueprint, InstallationTemplate, render_deploy_executions, render_subinstallations,
    resolve_deploy_items,
};
use serde_json::{Value, json};
use std::collections::BTreeMap;

use super::*;
use crate::daemon::controllers::jobs;
use crate::daemon::controllers::lserror::PhaseError;

/// What the deploy executions and subinstallation executions rendered.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderedSubobjects {
    pub deploy_items: Vec<landscaper_store::model::DeployItemTemplate>,
    pub subinstallations: Vec<InstallationTemplate>,
    /// Subinstallation templates with `blueprint.ref: cd://…`, by template name: the
    /// component version owning the blueprint resource ([`resolve_component_blueprints`]).
    pub component_blueprints: BTreeMap<String, ComponentBlueprint>,
}

/// Where a subinstallation's `cd://` blueprint lives (FORMATS.md §9a): the component version
/// that owns the resource, in the parent's repository context.
#[derive(Debug, Clone, PartialEq)]
pub struct ComponentBlueprint {
    pub repository_context: Value,
    pub component_name: String,
    pub version: String,
    pub resource_name: String,
}

/// Resolves the `cd://` blueprint references of the rendered subinstallations from the
/// parent's resolved component versions (Landscaper's
/// `GetBlueprintDefinitionFromInstallationTemplate`).
pub fn resolve_component_blueprints(
    rendered: &mut RenderedSubobjects,
    components: Option<&crate::components::InstallationComponents>,
) -> Result<(), PhaseError> {
    const OP: &str = "CreateImportsAndSubobjects";
    for template in &rendered.subinstallations {
        let reference = template.blueprint.reference.as_str();
        if !reference.starts_with("cd://") {
            continue;
        }
        let Some(c) = components else {
            return Err(fatal(
                OP,
                "EnsureSubinstallations",
                format!(
                    "subinstallation {:?}: blueprint.ref {reference:?} needs the installation's spec.componentDescriptor",
                    template.name
                ),
            ));
        };
        let (component, resource) =
            crate::components::locate_in(&c.resolved, reference).map_err(|e| {
                fatal(
                    OP,
                    "EnsureSubinstallations",
                    format!("subinstallation {:?}: {e}", template.name),
                )
            })?;
        rendered.component_blueprints.insert(
            template.name.clone(),
            ComponentBlueprint {
                repository_context: c.context.raw.clone(),
                component_name: component.name.clone(),
                version: component.version.clone(),
                resource_name: resource,
            },
        );
    }
    Ok(())
}

pub fn render_subobjects(
    inst: &Installation,
    blueprint: &Blueprint,
    bindings: &Bindings,
) -> Result<RenderedSubobjects, PhaseError> {
    const OP: &str = "CreateImportsAndSubobjects";
    let deploy = render_deploy_executions(blueprint, bindings)
        .map_err(|e| fatal(OP, "ReconcileExecution", e.to_string()))?;
    let deploy_items = resolve_deploy_items(
        blueprint,
        &bindings.imports,
        namespace(inst),
        &deploy.deploy_items,
    )
    .map_err(|e| fatal(OP, "ReconcileExecution", e.to_string()))?;
    validate_deploy_item_names(&deploy_items).map_err(|m| fatal(OP, "ReconcileExecution", m))?;
    let subs = render_subinstallations(blueprint, bindings)
        .map_err(|e| fatal(OP, "EnsureSubinstallations", e.to_string()))?;
    Ok(RenderedSubobjects {
        deploy_items,
        subinstallations: subs.subinstallations,
        component_blueprints: BTreeMap::new(),
    })
}

/// Landscaper's execution validation: unique names, known `dependsOn` entries, no cycles.
pub fn validate_deploy_item_names(
    items: &[landscaper_store::model::DeployItemTemplate],
) -> Result<(), String> {
    let mut seen = std::collections::BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        if !seen.insert(item.name.as_str()) {
            return Err(format!(
                "deployItems[{i}].name: Duplicate value: {:?}",
                item.name
            ));
        }
    }
    for (i, item) in items.iter().enumerate() {
        for (j, d) in item.depends_on.iter().flatten().enumerate() {
            if !seen.contains(d.as_str()) {
                return Err(format!(
                    "deployItems[{i}].dependsOn[{j}]: Not found: {d:?}: deploy item does not exist"
                ));
            }
        }
    }
    // Kahn's algorithm: whatever cannot be ordered is on a cycle.
    let mut remaining: BTreeMap<&str, Vec<&str>> = items
        .iter()
        .map(|i| {
            (
                i.name.as_str(),
                i.depends_on.iter().flatten().map(String::as_str).collect(),
            )
        })
        .collect();
    loop {
        let ready: Vec<&str> = remaining
            .iter()
            .filter(|(_, deps)| deps.iter().all(|d| !remaining.contains_key(d)))
            .map(|(n, _)| *n)
            .collect();
        if ready.is_empty() {
            break;
        }
        for n in ready {
            remaining.remove(n);
        }
    }
    if !remaining.is_empty() {
        let names: Vec<&str> = remaining.keys().copied().collect();
        return Err(format!(
            "deployItems: Forbidden: cyclic dependencies between deploy items: {}",
            names.join(", ")
        ));
    }
    Ok(())
}

/// The subinstallation object for a template (Landscaper's `createOrUpdateNewInstallation`).
pub fn subinstallation_object(
    parent: &Installation,
    parent_value: &Value,
    template: &landscaper_templating::blueprint::InstallationTemplate,
    current: Option<&Value>,
    from_secret: bool,
    component_blueprint: Option<&ComponentBlueprint>,
) -> Result<Value, String> {
    let mut component_descriptor = parent
        .spec
        .component_descriptor
        .as_ref()
        .map(|cd| serde_json::to_value(cd).unwrap_or_default());
    let blueprint = if let Some(fs) = &template.blueprint.filesystem {
        json!({"inline": {"filesystem": fs}})
    } else if let Some(cb) = component_blueprint {
        component_descriptor = Some(json!({"ref": {
            "repositoryContext": cb.repository_context,
            "componentName": cb.component_name,
            "version": cb.version,
        }}));
        json!({"ref": {"resourceName": cb.resource_name}})
    } else if !template.blueprint.reference.is_empty() {
        return Err(format!(
            "subinstallation {:?}: blueprint.ref {:?}: only cd:// references are supported",
            template.name, template.blueprint.reference
        ));
    } else {
        return Err(format!("subinstallation {:?}: no blueprint", template.name));
    };
    let mut spec = serde_json::Map::new();
    if let Some(c) = &parent.spec.context {
        spec.insert("context".into(), json!(c));
    }
    if let Some(cd) = component_descriptor {
        spec.insert("componentDescriptor".into(), cd);
    }
    spec.insert("blueprint".into(), blueprint);
    let imports = serde_json::to_value(&template.imports).unwrap_or_default();
    if imports.as_object().is_some_and(|m| !m.is_empty()) {
        spec.insert("imports".into(), imports);
    }
    if let Some(m) = &template.import_data_mappings {
        spec.insert(
            "importDataMappings".into(),
            serde_json::to_value(m).unwrap_or_default(),
        );
    }
    let exports = serde_json::to_value(&template.exports).unwrap_or_default();
    if exports.as_object().is_some_and(|m| !m.is_empty()) {
        spec.insert("exports".into(), exports);
    }
    if let Some(m) = &template.export_data_mappings {
        spec.insert(
            "exportDataMappings".into(),
            serde_json::to_value(m).unwrap_or_default(),
        );
    }
    if let Some(o) = &template.optimization {
        spec.insert(
            "optimization".into(),
            serde_json::to_value(o).unwrap_or_default(),
        );
    }
    let mut v = match current {
        Some(c) => c.clone(),
        None => json!({
            "apiVersion": Kind::Installation.api_version(),
            "kind": "Installation",
            "metadata": {
                "generateName": format!("{}-", truncate(&template.name, 52)),
                "namespace": namespace(parent),
                "finalizers": [LANDSCAPER_FINALIZER],
            },
        }),
    };
    let meta = object::metadata_mut(&mut v);
    meta.insert("labels".into(), json!({ENCOMPASSED_BY_LABEL: name(parent)}));
    let mut annotations = serde_json::Map::new();
    // Requests in flight (interrupt, delete-without-uninstall) stay.
    if let Some(cur) = current
        .and_then(|c| c.pointer("/metadata/annotations"))
        .and_then(Value::as_object)
    {
        for k in [OPERATION_ANNOTATION, DELETE_WITHOUT_UNINSTALL_ANNOTATION] {
            if let Some(x) = cur.get(k) {
                annotations.insert(k.into(), x.clone());
            }
        }
    }
    annotations.insert(SUBINSTALLATION_NAME_ANNOTATION.into(), json!(template.name));
    if from_secret {
        // Its data mappings are rendered from the parent's imports, Secret values included.
        annotations.insert(FROM_SECRET_ANNOTATION.into(), json!("true"));
    }
    meta.insert("annotations".into(), Value::Object(annotations));
    meta.insert(
        "ownerReferences".into(),
        json!([jobs::owner_reference(Kind::Installation, parent_value)]),
    );
    v["spec"] = Value::Object(spec);
    Ok(v)
}

fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// The Execution of an installation (Landscaper's `ExecutionOperation.Ensure`).
pub fn execution_object(
    inst: &Installation,
    inst_value: &Value,
    items: &[landscaper_store::model::DeployItemTemplate],
    current: Option<&Value>,
    from_secret: bool,
) -> Value {
    let mut v = match current {
        Some(c) => c.clone(),
        None => json!({
            "apiVersion": Kind::Execution.api_version(),
            "kind": "Execution",
            "metadata": {
                "name": name(inst),
                "namespace": namespace(inst),
                "finalizers": [LANDSCAPER_FINALIZER],
            },
        }),
    };
    object::metadata_mut(&mut v).insert(
        "ownerReferences".into(),
        json!([jobs::owner_reference(Kind::Installation, inst_value)]),
    );
    // The deploy item configs are rendered from the imports, Secret values included; the
    // execution controller passes the mark on to the deploy items and the export.
    jobs::set_annotation(
        &mut v,
        FROM_SECRET_ANNOTATION,
        from_secret.then_some("true"),
    );
    let mut spec = serde_json::Map::new();
    if let Some(c) = &inst.spec.context {
        spec.insert("context".into(), json!(c));
    }
    spec.insert(
        "deployItems".into(),
        serde_json::to_value(items).unwrap_or_default(),
    );
    v["spec"] = Value::Object(spec);
    v
}
