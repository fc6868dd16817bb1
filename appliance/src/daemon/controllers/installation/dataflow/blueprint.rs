//! Blueprint source: inline, or a directory of the manifests folder.

use landscaper_store::model::Installation;
use landscaper_templating::blueprint::Blueprint;
use serde_json::Value;

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

/// The installation's blueprint and, with `spec.componentDescriptor.ref`, its resolved
/// component versions: the repository context is the reference's own, else the Context's
/// `repositoryContext` (else `RepositoryContextMissing`); the blueprint comes from the
/// resource `spec.blueprint.ref.resourceName` of the component version (or inline). Without
/// a component reference this is [`load_blueprint`].
pub async fn resolve_blueprint(
    store: &(impl landscaper_store::ObjectSource + ?Sized),
    inst: &Installation,
    manifests_dir: Option<&std::path::Path>,
    components: Option<&std::sync::Arc<crate::components::ComponentResolver>>,
) -> Result<(Blueprint, Option<crate::components::InstallationComponents>), PhaseError> {
    let Some(reference) = component_reference(inst) else {
        return load_blueprint(inst, manifests_dir).map(|b| (b, None));
    };
    let (name, version) = reference;
    let ctx = repository_context(store, inst)?;
    let Some(resolver) = components else {
        return Err(fatal(
            OP_INIT,
            "ResolveComponentDescriptor",
            format!(
                "component version {name}:{version}: the appliance has no component repositories configured"
            ),
        ));
    };
    let resolver = &resolver.with_pull_secrets(context_pull_secrets(store, inst)?);
    let overwrites = landscaper_components::Overwrites::default();
    let resolved = resolver
        .resolve(&ctx, name, version, &overwrites)
        .await
        .map_err(|e| component_error("ResolveComponentDescriptor", &e.into()))?;
    resolver.pin(&pin_owner(inst), &resolved);
    let resource = inst
        .spec
        .blueprint
        .reference
        .as_ref()
        .and_then(|r| r.resource_name.as_deref());
    let blueprint = match resource {
        Some(r) if !r.starts_with(LOCAL_BLUEPRINT_PREFIX) => resolver
            .blueprint(&ctx, &resolved.root, r)
            .await
            .map_err(|e| component_error("ResolveBlueprint", &e))?,
        _ => load_blueprint(inst, manifests_dir)?,
    };
    let schema = crate::components::schema_for(&blueprint, &resolved.root);
    let resources = crate::components::InstallationResources::reader(
        resolver.clone(),
        ctx.clone(),
        resolved.clone(),
    );
    Ok((
        blueprint,
        Some(crate::components::InstallationComponents {
            resolved,
            context: ctx,
            schema,
            resources,
        }),
    ))
}

const OP_INIT: &str = "InitPrerequisites";

/// The owner name of an installation's cache pins.
pub fn pin_owner(inst: &Installation) -> String {
    pin_owner_of(namespace(inst), name(inst))
}

/// [`pin_owner`] by namespace and name.
pub fn pin_owner_of(namespace: &str, name: &str) -> String {
    format!("installation {namespace}/{name}")
}

/// `spec.componentDescriptor.ref`'s component name and version, when given.
fn component_reference(inst: &Installation) -> Option<(&str, &str)> {
    let r = inst
        .spec
        .component_descriptor
        .as_ref()?
        .reference
        .as_ref()?;
    let name = r.component_name.as_deref().filter(|s| !s.is_empty())?;
    Some((name, r.version.as_deref().unwrap_or_default()))
}

/// The installation's Context (`spec.context`, else `default`), if stored.
fn installation_context(
    store: &(impl landscaper_store::ObjectSource + ?Sized),
    inst: &Installation,
) -> Result<Option<Value>, PhaseError> {
    let context = inst
        .spec
        .context
        .as_deref()
        .filter(|c| !c.is_empty())
        .unwrap_or(landscaper_store::model::constants::DEFAULT_CONTEXT_NAME);
    let key =
        landscaper_store::ObjectKey::new(landscaper_store::Kind::Context, namespace(inst), context);
    store.get(&key).map_err(|e| store_error(OP_INIT, e))
}

/// The Secrets named in the installation's Context's `registryPullSecrets`, read from the
/// Context's namespace as Landscaper does; a missing one is an error naming it (retried: it
/// may be applied later).
pub fn context_pull_secrets(
    store: &(impl landscaper_store::ObjectSource + ?Sized),
    inst: &Installation,
) -> Result<Vec<landscaper_sources::SecretData>, PhaseError> {
    let Some(context) = installation_context(store, inst)? else {
        return Ok(Vec::new());
    };
    let names = context
        .get("registryPullSecrets")
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r.get("name").and_then(Value::as_str))
                .filter(|n| !n.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    names
        .iter()
        .map(|name| {
            crate::daemon::read_secret(store, namespace(inst), name).ok_or_else(|| {
                normal(
                    OP_INIT,
                    "ResolveComponentDescriptor",
                    format!(
                        "registryPullSecrets of Context {}/{}: secret {name:?} not found",
                        namespace(inst),
                        landscaper_store::object::name(&context)
                    ),
                )
            })
        })
        .collect()
}

/// The repository context of `spec.componentDescriptor.ref`: its own, else the Context's.
pub fn repository_context(
    store: &(impl landscaper_store::ObjectSource + ?Sized),
    inst: &Installation,
) -> Result<landscaper_components::RepositoryContext, PhaseError> {
    let own = inst
        .spec
        .component_descriptor
        .as_ref()
        .and_then(|c| c.reference.as_ref())
        .and_then(|r| r.repository_context.clone())
        .filter(|v| !v.is_null());
    let raw = match own {
        Some(v) => Some(v),
        None => installation_context(store, inst)?
            .and_then(|o| o.get("repositoryContext").cloned())
            .filter(|v| !v.is_null()),
    };
    let Some(raw) = raw else {
        return Err(component_error(
            "ResolveComponentDescriptor",
            &landscaper_components::ComponentError::RepositoryContextMissing.into(),
        ));
    };
    landscaper_components::RepositoryContext::parse(&raw)
        .map_err(|e| component_error("ResolveComponentDescriptor", &e.into()))
}

/// A component failure as the installation's error: retryable ones (registry unreachable,
/// 5xx) are normal errors, the others fatal with `ERR_CONFIGURATION_PROBLEM`.
fn component_error(reason: &str, e: &crate::components::ComponentsFailure) -> PhaseError {
    let error = crate::daemon::controllers::lserror::LsError::new(OP_INIT, reason, e.to_string());
    if e.is_retryable() {
        PhaseError::Normal(error)
    } else {
        PhaseError::Fatal(
            error.with_code(landscaper_store::model::constants::ERR_CONFIGURATION_PROBLEM),
        )
    }
}
