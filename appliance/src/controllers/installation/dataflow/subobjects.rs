//! What the deploy executions and subinstallation executions render.

use landscaper_store::model::Installation;
use landscaper_templating::blueprint::{
    Bindings, Blueprint, InstallationTemplate, render_deploy_executions, render_subinstallations,
    resolve_deploy_items,
};
use std::collections::BTreeMap;

use super::*;
use crate::controllers::lserror::PhaseError;

/// What the deploy executions and subinstallation executions rendered.
pub struct RenderedSubobjects {
    pub deploy_items: Vec<landscaper_store::model::DeployItemTemplate>,
    pub subinstallations: Vec<InstallationTemplate>,
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
