//! Component versions in OCI registries (FORMATS.md §3, §4).

use crate::components::Components;
use crate::{Artifact, ComponentError, ComponentVersion, RepositoryContext};

pub(crate) async fn component_version(
    _components: &Components,
    ctx: &RepositoryContext,
    _name: &str,
    _version: &str,
) -> Result<ComponentVersion, ComponentError> {
    Err(ComponentError::repo(ctx.describe(), "not yet implemented"))
}

pub(crate) async fn resource(
    _components: &Components,
    cv: &ComponentVersion,
    _resource_name: &str,
) -> Result<Artifact, ComponentError> {
    Err(ComponentError::repo(
        cv.repository_context.describe(),
        "not yet implemented",
    ))
}
