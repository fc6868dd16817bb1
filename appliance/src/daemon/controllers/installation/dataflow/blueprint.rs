//! Blueprint source: inline, or a directory of the manifests folder.

use landscaper_store::model::Installation;
use landscaper_templating::blueprint::Blueprint;

use super::*;
use crate::daemon::controllers::lserror::PhaseError;

/// The prefix of `spec.blueprint.ref.resourceName` that names a blueprint directory in the
/// manifests folder (an appliance extension for edge users without a component registry).
pub const LOCAL_BLUEPRINT_PREFIX: &str = "local://";

/// The installation's blueprint: inline (`spec.blueprint.inline.filesystem`), or a directory of
/// the manifests folder (`spec.blueprint.ref.resourceName: local://<path>`).
pub fn load_blueprint(
    inst: &Installation,
    manifests_dir: Option<&std::path::Path>,
) -> Result<Blueprint, PhaseError> {
    const OP: &str = "InitPrerequisites";
    let Some(fs) = inst
        .spec
        .blueprint
        .inline
        .as_ref()
        .and_then(|i| i.filesystem.as_ref())
    else {
        let reference = inst
            .spec
            .blueprint
            .reference
            .as_ref()
            .and_then(|r| r.resource_name.as_deref());
        if let Some(path) = reference.and_then(|r| r.strip_prefix(LOCAL_BLUEPRINT_PREFIX)) {
            return load_local_blueprint(path, manifests_dir);
        }
        if reference.is_some() {
            return Err(fatal(
                OP,
                "ResolveBlueprint",
                format!(
                    "blueprint references (spec.blueprint.ref) need a component registry, which the appliance does not have: use spec.blueprint.inline.filesystem, or resourceName: {LOCAL_BLUEPRINT_PREFIX}<directory in the manifests folder>"
                ),
            ));
        }
        return Err(fatal(
            OP,
            "ResolveBlueprint",
            "spec.blueprint: neither inline nor ref is given",
        ));
    };
    Blueprint::from_yamlfs(fs).map_err(|e| {
        fatal(
            OP,
            "ResolveBlueprint",
            format!("unable to read the inline blueprint: {e}"),
        )
    })
}

/// A blueprint directory inside the manifests folder; paths that leave it are refused.
fn load_local_blueprint(
    path: &str,
    manifests_dir: Option<&std::path::Path>,
) -> Result<Blueprint, PhaseError> {
    const OP: &str = "InitPrerequisites";
    let Some(root) = manifests_dir else {
        return Err(fatal(
            OP,
            "ResolveBlueprint",
            "local blueprints need the manifests folder",
        ));
    };
    let relative = std::path::Path::new(path);
    if relative.is_absolute()
        || relative
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(fatal(
            OP,
            "ResolveBlueprint",
            format!(
                "spec.blueprint.ref.resourceName: {LOCAL_BLUEPRINT_PREFIX}{path}: the path must be relative to the manifests folder and stay inside it"
            ),
        ));
    }
    let dir = root.join(relative);
    // A normal error: the directory may appear with the next copy into the folder.
    if !dir.join("blueprint.yaml").is_file() {
        return Err(normal(
            OP,
            "ResolveBlueprint",
            format!(
                "spec.blueprint.ref.resourceName: {LOCAL_BLUEPRINT_PREFIX}{path}: no blueprint.yaml in {}",
                dir.display()
            ),
        ));
    }
    Blueprint::from_dir(&dir).map_err(|e| {
        fatal(
            OP,
            "ResolveBlueprint",
            format!("unable to read the blueprint {LOCAL_BLUEPRINT_PREFIX}{path}: {e}"),
        )
    })
}
