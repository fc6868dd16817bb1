//! `cd://` references in blueprint JSON schemas (FORMATS.md §10): every `{"$ref":
//! "cd://…"}` is replaced by the referenced `landscaper.gardener.cloud/jsonschema` resource
//! (its own `cd://` refs resolved relative to the component that owns it), so that the
//! validator needs no network. Cycles are errors naming the chain ("cycle").

use std::sync::Arc;

use serde_json::Value;

use crate::content::{in_context, is_jsonschema_type, json_schema};
use crate::uri::CdUri;
use crate::{ComponentError, ComponentSource, ComponentVersion, RepositoryContext, resolve_uri};

/// Bounds the nesting of `cd://` schemas.
pub const MAX_DEPTH: usize = 32;

/// Resolves the `cd://` refs of `schema` from `component`. Without `ctx` the component's own
/// effective repository context (the last `repositoryContexts` entry) is used, as Landscaper
/// does.
pub async fn resolve_cd_refs(
    source: &dyn ComponentSource,
    ctx: Option<&RepositoryContext>,
    component: &ComponentVersion,
    schema: &Value,
) -> Result<Value, ComponentError> {
    let ctx = match ctx {
        Some(c) => c.clone(),
        None => {
            let raw = component
                .effective_repository_context()
                .ok_or(ComponentError::RepositoryContextMissing)?;
            RepositoryContext::parse(raw)?
        }
    };
    let mut chain = Vec::new();
    resolve(
        source,
        &ctx,
        &Arc::new(component.clone()),
        schema.clone(),
        &mut chain,
    )
    .await
}

type Chain = Vec<String>;

fn resolve<'a>(
    source: &'a dyn ComponentSource,
    ctx: &'a RepositoryContext,
    component: &'a Arc<ComponentVersion>,
    value: Value,
    chain: &'a mut Chain,
) -> crate::BoxFuture<'a, Result<Value, ComponentError>> {
    Box::pin(async move {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(r)) = map.get("$ref")
                    && r.starts_with("cd://")
                {
                    return referenced(source, ctx, component, r, chain).await;
                }
                let mut out = serde_json::Map::new();
                for (k, v) in map {
                    let resolved = resolve(source, ctx, component, v, chain).await?;
                    out.insert(k, resolved);
                }
                Ok(Value::Object(out))
            }
            Value::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for v in items {
                    out.push(resolve(source, ctx, component, v, chain).await?);
                }
                Ok(Value::Array(out))
            }
            other => Ok(other),
        }
    })
}

async fn referenced(
    source: &dyn ComponentSource,
    ctx: &RepositoryContext,
    component: &Arc<ComponentVersion>,
    reference: &str,
    chain: &mut Chain,
) -> Result<Value, ComponentError> {
    let (uri_text, fragment) = match reference.split_once('#') {
        Some((u, f)) => (u, Some(f)),
        None => (reference, None),
    };
    let uri = CdUri::parse(uri_text)?;
    let (owner, resource_name) = resolve_uri(source, ctx, component, &uri).await?;
    let link = format!("{}:{}/{}", owner.name, owner.version, resource_name);
    if chain.contains(&link) || chain.len() >= MAX_DEPTH {
        let mut all = chain.clone();
        all.push(link);
        return Err(ComponentError::Cycle {
            chain: format!("cycle in cd:// schema references: {}", all.join(" -> ")),
        });
    }
    let resource = owner.resource(&resource_name)?;
    let ty = resource["type"].as_str().unwrap_or_default();
    if !is_jsonschema_type(ty) {
        return Err(ComponentError::WrongResourceType {
            component: owner.name.clone(),
            version: owner.version.clone(),
            resource: resource_name,
            found: ty.to_string(),
            expected: "landscaper.gardener.cloud/jsonschema".into(),
        });
    }
    let artifact = source.resource(&owner, &resource_name).await?;
    let schema = json_schema(&artifact)
        .map_err(|e| in_context(e, &owner.name, &owner.version, &resource_name))?;
    let schema = match fragment.filter(|f| !f.is_empty()) {
        Some(pointer) => {
            schema
                .pointer(pointer)
                .cloned()
                .ok_or_else(|| ComponentError::Content {
                    component: owner.name.clone(),
                    version: owner.version.clone(),
                    resource: resource_name.clone(),
                    reason: format!("the schema has no {pointer:?}"),
                })?
        }
        None => schema,
    };
    chain.push(link);
    let resolved = resolve(source, ctx, &owner, schema, chain).await;
    chain.pop();
    resolved
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::MemoryRepository;

    fn descriptor(name: &str, refs: &[(&str, &str)], schemas: &[&str]) -> String {
        let refs: Vec<String> = refs
            .iter()
            .map(|(r, c)| format!("  - {{name: {r}, componentName: {c}, version: 1.0.0}}\n"))
            .collect();
        let res: Vec<String> = schemas
            .iter()
            .map(|s| format!("  - {{name: {s}, type: landscaper.gardener.cloud/jsonschema, version: 1.0.0, relation: local, access: {{type: localBlob, localReference: {name}-{s}}}}}\n"))
            .collect();
        format!(
            "meta: {{schemaVersion: v2}}\ncomponent:\n  name: {name}\n  version: 1.0.0\n  provider: p\n  repositoryContexts: [{{type: ociRegistry, baseUrl: example.com}}]\n  componentReferences:\n{}  resources:\n{}",
            if refs.is_empty() { "  []\n".to_string() } else { refs.concat() },
            if res.is_empty() { "  []\n".to_string() } else { res.concat() },
        )
        .replace("componentReferences:\n  []", "componentReferences: []")
        .replace("resources:\n  []", "resources: []")
    }

    fn ctx() -> RepositoryContext {
        RepositoryContext::parse(
            &serde_json::json!({"type": "ociRegistry", "baseUrl": "example.com"}),
        )
        .expect("ctx")
    }

    #[tokio::test]
    async fn chains_resolve_relative_to_the_owner_and_cycles_fail() {
        let repo = MemoryRepository::new();
        let root = repo
            .add_descriptor(descriptor("x.io/root", &[("ref-1", "x.io/one")], &[]).as_bytes())
            .expect("root");
        repo.add_descriptor(descriptor("x.io/one", &[("ref-2", "x.io/two")], &["s"]).as_bytes())
            .expect("one");
        repo.add_descriptor(
            descriptor("x.io/two", &[("back", "x.io/one")], &["mem", "loop"]).as_bytes(),
        )
        .expect("two");
        repo.add_blob("x.io/one-s", "application/json", br#"{"type":"object","properties":{"m":{"$ref":"cd://componentReferences/ref-2/resources/mem"}}}"#.to_vec());
        repo.add_blob(
            "x.io/two-mem",
            "application/json",
            br#"{"definitions":{"d":{"type":"string"}}}"#.to_vec(),
        );
        repo.add_blob(
            "x.io/two-loop",
            "application/json",
            br#"{"$ref":"cd://componentReferences/back/resources/s"}"#.to_vec(),
        );
        let schema = serde_json::json!({"properties": {"a": {"$ref": "cd://componentReferences/ref-1/resources/s"},
            "b": {"$ref": "cd://componentReferences/ref-1/componentReferences/ref-2/resources/mem#/definitions/d"},
            "c": {"$ref": "local://other"}}});
        let got = resolve_cd_refs(&repo, Some(&ctx()), &root, &schema)
            .await
            .expect("resolves");
        assert_eq!(
            got["properties"]["a"]["properties"]["m"],
            serde_json::json!({"definitions": {"d": {"type": "string"}}})
        );
        assert_eq!(
            got["properties"]["b"],
            serde_json::json!({"type": "string"})
        );
        assert_eq!(
            got["properties"]["c"],
            serde_json::json!({"$ref": "local://other"})
        );
        // one.s → (two) mem is fine; two.loop → one.s → two.mem ... and back to s: a cycle.
        repo.add_blob(
            "x.io/two-mem",
            "application/json",
            br#"{"$ref":"cd://resources/loop"}"#.to_vec(),
        );
        let err = resolve_cd_refs(&repo, Some(&ctx()), &root, &schema)
            .await
            .expect_err("cycle");
        assert!(
            matches!(err, ComponentError::Cycle { .. }) && err.to_string().contains("cycle"),
            "{err}"
        );
        // Without a context the descriptor's own one is used (here: the same repository).
        let plain = serde_json::json!({"$ref": "cd://componentReferences/ref-1/resources/nope"});
        let err = resolve_cd_refs(&repo, None, &root, &plain)
            .await
            .expect_err("missing");
        assert!(
            matches!(err, ComponentError::ResourceNotFound { .. }),
            "{err}"
        );
    }
}
