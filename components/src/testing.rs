//! Test doubles: an in-memory component repository.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::descriptor::access_field;
use crate::{
    Artifact, BoxFuture, ComponentError, ComponentSource, ComponentVersion, RepositoryContext,
    RepositoryKind, resource_access,
};

/// A [`ComponentSource`] over in-memory descriptors and blobs. Blobs are keyed by what the
/// access names: `localBlob.localReference`, `localFilesystemBlob.fileName`,
/// `ociArtifact`/`ociRegistry` `imageReference`, `helm` `helmRepository/helmChart`.
/// The repository context of a lookup is ignored (one repository).
#[derive(Default)]
pub struct MemoryRepository {
    components: Mutex<BTreeMap<(String, String), Arc<ComponentVersion>>>,
    blobs: Mutex<BTreeMap<String, (String, Vec<u8>)>>,
    lookups: AtomicUsize,
}

impl MemoryRepository {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses and adds a descriptor (YAML/JSON, v2 or v3alpha1).
    pub fn add_descriptor(&self, bytes: &[u8]) -> Result<Arc<ComponentVersion>, ComponentError> {
        let ctx = RepositoryContext::for_file(RepositoryKind::Local {
            file_path: "memory".into(),
        });
        let cv = Arc::new(ComponentVersion::parse(bytes, "memory", ctx)?);
        self.add(cv.clone());
        Ok(cv)
    }

    pub fn add(&self, cv: Arc<ComponentVersion>) {
        if let Ok(mut m) = self.components.lock() {
            m.insert((cv.name.clone(), cv.version.clone()), cv);
        }
    }

    /// A blob under the key its access names (see the type's doc). `media_type` is used when
    /// the access declares none.
    pub fn add_blob(&self, key: &str, media_type: &str, bytes: impl Into<Vec<u8>>) {
        if let Ok(mut m) = self.blobs.lock() {
            m.insert(key.to_string(), (media_type.to_string(), bytes.into()));
        }
    }

    /// How many component-version lookups were answered (found or not).
    pub fn lookups(&self) -> usize {
        self.lookups.load(Ordering::Relaxed)
    }
}

/// The blob key an access names, and its declared media type.
pub(crate) fn access_key(access: &Value, ty: &str) -> Option<(String, Option<String>)> {
    let mt = access_field(access, "mediaType").map(str::to_string);
    let base = ty
        .split('/')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let key = match base.as_str() {
        "localblob" => access_field(access, "localReference")?.to_string(),
        "localfilesystemblob" => access_field(access, "fileName")?.to_string(),
        "ociartifact" | "ociregistry" | "ociimage" => {
            access_field(access, "imageReference")?.to_string()
        }
        "helm" => format!(
            "{}/{}",
            access_field(access, "helmRepository").unwrap_or_default(),
            access_field(access, "helmChart").unwrap_or_default()
        ),
        _ => return None,
    };
    Some((key, mt))
}

impl ComponentSource for MemoryRepository {
    fn component_version<'a>(
        &'a self,
        ctx: &'a RepositoryContext,
        name: &'a str,
        version: &'a str,
    ) -> BoxFuture<'a, Result<Arc<ComponentVersion>, ComponentError>> {
        Box::pin(async move {
            self.lookups.fetch_add(1, Ordering::Relaxed);
            let found = self
                .components
                .lock()
                .ok()
                .and_then(|m| m.get(&(name.to_string(), version.to_string())).cloned());
            found.ok_or_else(|| ComponentError::NotFound {
                component: name.to_string(),
                version: version.to_string(),
                repository: ctx.describe(),
            })
        })
    }

    fn resource<'a>(
        &'a self,
        component: &'a ComponentVersion,
        resource_name: &'a str,
    ) -> BoxFuture<'a, Result<Artifact, ComponentError>> {
        Box::pin(async move {
            let (access, ty) = resource_access(component, resource_name)?;
            let content_err = |reason: String| ComponentError::Content {
                component: component.name.clone(),
                version: component.version.clone(),
                resource: resource_name.to_string(),
                reason,
            };
            let (key, declared) = access_key(&access, &ty)
                .ok_or_else(|| content_err(format!("unsupported access type {ty:?}")))?;
            let blob = self.blobs.lock().ok().and_then(|m| m.get(&key).cloned());
            let (stored_mt, bytes) =
                blob.ok_or_else(|| content_err(format!("blob {key:?} not found")))?;
            Ok(Artifact::new(declared.unwrap_or(stored_mt), bytes))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Overwrites, SchemaVersion, resolve_transitive, uri};

    const ROOT: &str = r#"
meta: {schemaVersion: v2}
component:
  name: example.com/root
  version: 1.0.0
  provider: internal
  repositoryContexts: [{type: ociRegistry, baseUrl: example.com}]
  resources:
  - {name: cfg, type: yaml, version: 1.0.0, relation: local, access: {type: localBlob, localReference: cfg, mediaType: application/yaml}}
  componentReferences:
  - {name: leaf, componentName: example.com/leaf, version: 1.0.0}
  - {name: leaf-again, componentName: example.com/leaf, version: 1.0.0}
"#;
    const LEAF: &str = r#"
apiVersion: ocm.software/v3alpha1
kind: ComponentVersion
metadata: {name: example.com/leaf, version: 1.0.0, provider: {name: internal}}
repositoryContexts: [{type: ociRegistry, baseUrl: example.com}]
spec:
  resources:
  - {name: chart, type: helmChart, version: 1.0.0, relation: local, access: {type: localBlob, localReference: chart}}
  references:
  - {name: back, componentName: example.com/root, version: 1.0.0}
"#;

    fn ctx() -> RepositoryContext {
        RepositoryContext::parse(
            &serde_json::json!({"type": "ociRegistry", "baseUrl": "example.com"}),
        )
        .expect("ctx")
    }

    #[tokio::test]
    async fn transitive_resolution_with_cycle_and_bindings() {
        let repo = MemoryRepository::new();
        repo.add_descriptor(ROOT.as_bytes()).expect("root");
        repo.add_descriptor(LEAF.as_bytes()).expect("leaf");
        repo.add_blob("cfg", "text/plain", b"a: 1".to_vec());
        let resolved = resolve_transitive(
            &repo,
            &ctx(),
            "example.com/root",
            "1.0.0",
            &Overwrites::default(),
        )
        .await
        .expect("resolves");
        let names: Vec<&str> = resolved.all.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, vec!["example.com/root", "example.com/leaf"]);
        let v2 = resolved.components_binding(SchemaVersion::V2);
        assert_eq!(v2["components"].as_array().map(Vec::len), Some(2));
        assert_eq!(v2["meta"]["schemaVersion"], "v2");
        let v3 = resolved.components_binding(SchemaVersion::V3Alpha1);
        assert_eq!(v3[1]["apiVersion"], "ocm.software/v3alpha1");
        assert_eq!(
            resolved.cd_binding(SchemaVersion::V2)["component"]["name"],
            "example.com/root"
        );
        let a = repo.resource(&resolved.root, "cfg").await.expect("blob");
        assert_eq!(a.media_type, "application/yaml");
        assert_eq!(&a.bytes[..], b"a: 1");
        let err = repo
            .resource(&resolved.root, "nope")
            .await
            .expect_err("missing");
        assert!(
            matches!(err, ComponentError::ResourceNotFound { .. }),
            "{err}"
        );
        let u = uri::CdUri::parse("cd://componentReferences/leaf/resources/chart").expect("uri");
        let (owner, res) = crate::resolve_uri(&repo, &ctx(), &resolved.root, &u)
            .await
            .expect("walks");
        assert_eq!(
            (owner.name.as_str(), res.as_str()),
            ("example.com/leaf", "chart")
        );
        let key = uri::resource_key(&owner, &res);
        let id = uri::parse_resource_key(&key).expect("decodes");
        assert_eq!(id.component.name, "example.com/leaf");
        assert_eq!(id.resource["name"], "chart");
    }

    #[tokio::test]
    async fn missing_reference_and_overwrites() {
        let repo = MemoryRepository::new();
        repo.add_descriptor(ROOT.as_bytes()).expect("root");
        let err = resolve_transitive(
            &repo,
            &ctx(),
            "example.com/root",
            "1.0.0",
            &Overwrites::default(),
        )
        .await
        .expect_err("leaf missing");
        assert!(err.to_string().contains("example.com/leaf:1.0.0"), "{err}");
        let leaf2 = LEAF.replace("version: 1.0.0, provider", "version: 2.0.0, provider");
        repo.add_descriptor(leaf2.as_bytes()).expect("leaf 2");
        let ow = Overwrites::parse(&serde_json::json!([
            {"source": {"componentName": "example.com/leaf"}, "substitution": {"version": "2.0.0"}}
        ]))
        .expect("parses");
        let resolved = resolve_transitive(&repo, &ctx(), "example.com/root", "1.0.0", &ow)
            .await
            .expect("overwritten");
        assert_eq!(resolved.all[1].version, "2.0.0");
    }

    #[test]
    fn overwrite_rules_match_on_what_they_set() {
        let other = RepositoryContext::parse(
            &serde_json::json!({"type": "ociRegistry", "baseUrl": "other.example.com"}),
        )
        .expect("ctx");
        let ow = Overwrites::parse(&serde_json::json!([
            {"source": {"componentName": "a.io/x", "version": "1.0.0"}, "substitution": {"version": "1.0.1"}},
            {"source": {"repositoryContext": {"type": "ociRegistry", "baseUrl": "example.com"}},
             "substitution": {"repositoryContext": {"type": "ociRegistry", "baseUrl": "other.example.com"}}},
        ]))
        .expect("parses");
        assert_eq!(
            ow.apply(&ctx(), "a.io/x", "1.0.0"),
            (ctx(), "a.io/x".into(), "1.0.1".into())
        );
        // Another version of a.io/x: only the context rule applies.
        assert_eq!(
            ow.apply(&ctx(), "a.io/x", "2.0.0"),
            (other.clone(), "a.io/x".into(), "2.0.0".into())
        );
        // In another context nothing matches.
        assert_eq!(
            ow.apply(&other, "b.io/y", "1.0.0"),
            (other.clone(), "b.io/y".into(), "1.0.0".into())
        );
        for bad in [
            serde_json::json!({}),
            serde_json::json!([{"substitution": {}}]),
            serde_json::json!([
            {"source": {"componentName": "a"}, "substitution": {"repositoryContext": {"type": "nope"}}}]),
        ] {
            assert!(Overwrites::parse(&bad).is_err(), "{bad}");
        }
        assert!(
            Overwrites::parse(&serde_json::Value::Null)
                .expect("none")
                .rules
                .is_empty()
        );
    }
}
