//! OCM component versions as Landscaper resolves them (issue 18): descriptors (v2 and
//! `ocm.software/v3alpha1`), repository contexts, repositories (OCI registry, CTF, component
//! archives, Landscaper's `local`), resources and their typed content. FORMATS.md in the
//! acceptance data describes every format with its source.
//!
//! | module | what |
//! |---|---|
//! | [`descriptor`] | [`ComponentVersion::parse`]: YAML/JSON, both schemas, Landscaper's validation, v2 ↔ v3alpha1 |
//! | [`context`] | [`RepositoryContext::parse`]: type aliases, keys matched case-insensitively |
//! | [`ocm`] | OCM's OCI layout: name mappings, `+` ↔ `.build-` tags, manifest → config → descriptor layer (all media types incl. legacy) |
//! | [`files`] | CTF (directory / .tar / .tgz by content), component archives, `local` repositories; [`files::CtfWriter`] |
//! | `registry` | component versions and `localBlob` / `ociArtifact` / `helm` resources from registries through sources' OCI client and the shared cache; [`registry::push_component_version`] |
//! | [`components`] | [`Components`], the real [`ComponentSource`]: folder archives first (mirror), then the context's repository; `offline`; pins |
//! | [`content`] | blueprint file trees, chart .tgz, JSON schemas from resource bytes (bounded, no path traversal) |
//! | [`uri`] | `cd://` URIs and `getResourceKey` keys |
//! | [`schema`] | `cd://` refs of blueprint JSON schemas inlined (relative to the owning component; cycles) |
//! | [`testing`] | [`testing::MemoryRepository`] |
//!
//! Every blob read is verified against its digest (CTF file names, registry digests, the
//! cache); nothing that failed verification is cached.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{Value, json};

pub mod archive;
pub mod components;
pub mod content;
pub mod context;
pub mod descriptor;
mod error;
pub mod files;
#[doc(hidden)]
pub mod fuzzing;
pub mod ocm;
pub mod registry;
pub mod schema;
pub mod testing;
pub mod uri;

pub use components::{ArchiveEntry, Components, ComponentsConfig};
pub use context::{NameMapping, RepositoryContext, RepositoryKind};
pub use descriptor::{ComponentReference, ComponentVersion, SchemaVersion};
pub use error::ComponentError;

pub type BoxFuture<'a, T> = futures_util::future::BoxFuture<'a, T>;

/// A resource's bytes as its access delivers them.
#[derive(Debug, Clone)]
pub struct Artifact {
    pub media_type: String,
    /// `sha256:<hex>` of `bytes`.
    pub digest: String,
    pub bytes: bytes::Bytes,
}

impl Artifact {
    pub fn new(media_type: impl Into<String>, bytes: impl Into<bytes::Bytes>) -> Self {
        let bytes = bytes.into();
        Artifact {
            media_type: media_type.into(),
            digest: landscaper_sources::archive::sha256_digest(&bytes),
            bytes,
        }
    }
}

/// Where component versions and their resources come from.
pub trait ComponentSource: Send + Sync {
    fn component_version<'a>(
        &'a self,
        ctx: &'a RepositoryContext,
        name: &'a str,
        version: &'a str,
    ) -> BoxFuture<'a, Result<Arc<ComponentVersion>, ComponentError>>;
    fn resource<'a>(
        &'a self,
        component: &'a ComponentVersion,
        resource_name: &'a str,
    ) -> BoxFuture<'a, Result<Artifact, ComponentError>>;
}

/// One rule of the Context's `componentVersionOverwrites` (Landscaper's
/// `ComponentVersionOverwrite`): `source` selects by component name, version and repository
/// context, each only when given; `substitution` replaces what it sets.
#[derive(Debug, Clone, PartialEq)]
pub struct OverwriteRule {
    pub source_name: String,
    pub source_version: Option<String>,
    pub source_context: Option<Value>,
    pub name: Option<String>,
    pub version: Option<String>,
    pub context: Option<RepositoryContext>,
}

/// Context `componentVersionOverwrites` (cheap form: component name [+version] → new
/// version/name/context). The first matching rule applies.
#[derive(Debug, Clone, Default)]
pub struct Overwrites {
    pub rules: Vec<OverwriteRule>,
}

impl Overwrites {
    /// From the `overwrites` list of a ComponentVersionOverwrites object:
    /// `[{source: {componentName, version?, repositoryContext?}, substitution: {...}}]`.
    pub fn parse(value: &Value) -> Result<Self, ComponentError> {
        let invalid = |reason: String| ComponentError::InvalidRepositoryContext {
            reason: format!("componentVersionOverwrites: {reason}"),
        };
        let list = match value {
            Value::Null => return Ok(Overwrites::default()),
            Value::Array(a) => a,
            _ => return Err(invalid("expected a list".into())),
        };
        let mut rules = Vec::new();
        for (i, item) in list.iter().enumerate() {
            let source = &item["source"];
            let sub = &item["substitution"];
            // Every field of the source is optional; an empty one matches anything.
            let source_name = source["componentName"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            if !source.is_object() {
                return Err(invalid(format!("entry {i}: source must be an object")));
            }
            let context = match sub.get("repositoryContext") {
                None | Some(Value::Null) => None,
                Some(v) => Some(RepositoryContext::parse(v)?),
            };
            rules.push(OverwriteRule {
                source_name,
                source_version: source["version"].as_str().map(str::to_string),
                source_context: source
                    .get("repositoryContext")
                    .filter(|v| !v.is_null())
                    .cloned(),
                name: sub["componentName"]
                    .as_str()
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
                version: sub["version"]
                    .as_str()
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
                context,
            });
        }
        Ok(Overwrites { rules })
    }

    /// The (context, name, version) to look up instead.
    pub fn apply(
        &self,
        ctx: &RepositoryContext,
        name: &str,
        version: &str,
    ) -> (RepositoryContext, String, String) {
        for rule in &self.rules {
            if (!rule.source_name.is_empty() && rule.source_name != name)
                || rule
                    .source_version
                    .as_deref()
                    .is_some_and(|v| !v.is_empty() && v != version)
                || rule.source_context.as_ref().is_some_and(|c| *c != ctx.raw)
            {
                continue;
            }
            return (
                rule.context.clone().unwrap_or_else(|| ctx.clone()),
                rule.name.clone().unwrap_or_else(|| name.to_string()),
                rule.version.clone().unwrap_or_else(|| version.to_string()),
            );
        }
        (ctx.clone(), name.to_string(), version.to_string())
    }
}

/// The installation's component version and everything reachable through references, each
/// (name, version) once, all looked up in the installation's repository context; root first.
#[derive(Debug, Clone)]
pub struct ResolvedComponents {
    pub root: Arc<ComponentVersion>,
    pub all: Vec<Arc<ComponentVersion>>,
}

pub async fn resolve_transitive(
    source: &dyn ComponentSource,
    ctx: &RepositoryContext,
    name: &str,
    version: &str,
    overwrites: &Overwrites,
) -> Result<ResolvedComponents, ComponentError> {
    let (rctx, rname, rversion) = overwrites.apply(ctx, name, version);
    let root = source.component_version(&rctx, &rname, &rversion).await?;
    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    seen.insert((root.name.clone(), root.version.clone()));
    let mut all = vec![root.clone()];
    // Depth-first, iteratively: a stack of components whose references are still to visit.
    let mut stack: Vec<Arc<ComponentVersion>> = vec![root.clone()];
    while let Some(current) = stack.pop() {
        for reference in current.references().into_iter().rev() {
            let (c, n, v) = overwrites.apply(ctx, &reference.component_name, &reference.version);
            if !seen.insert((n.clone(), v.clone())) {
                continue;
            }
            let found = source.component_version(&c, &n, &v).await?;
            seen.insert((found.name.clone(), found.version.clone()));
            all.push(found.clone());
            stack.push(found);
        }
    }
    Ok(ResolvedComponents { root, all })
}

impl ResolvedComponents {
    /// `.cd`.
    pub fn cd_binding(&self, schema: SchemaVersion) -> Value {
        self.root.descriptor_in(schema)
    }

    /// `.components` (v2: `{meta, components: […]}`; v3alpha1: a list).
    pub fn components_binding(&self, schema: SchemaVersion) -> Value {
        let list: Vec<Value> = self.all.iter().map(|c| c.descriptor_in(schema)).collect();
        match schema {
            SchemaVersion::V2 => json!({"meta": {"schemaVersion": "v2"}, "components": list}),
            SchemaVersion::V3Alpha1 => Value::Array(list),
        }
    }

    /// The component with this name and version, if resolved.
    pub fn get(&self, name: &str, version: &str) -> Option<&Arc<ComponentVersion>> {
        self.all
            .iter()
            .find(|c| c.name == name && c.version == version)
    }
}

/// Walks a CdUri from a component through `.references()` via the source.
pub async fn resolve_uri(
    source: &dyn ComponentSource,
    ctx: &RepositoryContext,
    from: &ComponentVersion,
    uri: &uri::CdUri,
) -> Result<(Arc<ComponentVersion>, String), ComponentError> {
    let mut current = Arc::new(from.clone());
    for ref_name in &uri.references {
        let reference = current
            .references()
            .into_iter()
            .find(|r| &r.name == ref_name)
            .ok_or_else(|| ComponentError::InvalidUri {
                uri: uri.to_string(),
                reason: format!(
                    "component version {}:{} has no component reference {ref_name:?}",
                    current.name, current.version
                ),
            })?;
        current = source
            .component_version(ctx, &reference.component_name, &reference.version)
            .await?;
    }
    current.resource(&uri.resource)?;
    Ok((current, uri.resource.clone()))
}

/// Helper for sources: the resource entry, its access and access type.
pub(crate) fn resource_access(
    component: &ComponentVersion,
    resource_name: &str,
) -> Result<(Value, String), ComponentError> {
    let resource = component.resource(resource_name)?;
    let (access, ty) = component.resource_access(resource)?;
    Ok((access.clone(), ty))
}

/// The label map of extra identities etc. is not needed here; re-exported for convenience.
pub type Identity = BTreeMap<String, String>;
