//! Namespaces, derived from the stored objects: every namespace some object lives in, plus
//! `default`. They are not stored and cannot be watched; each is `Active` and was "created"
//! with its oldest object.

use std::collections::BTreeMap;

use landscaper_store::{Kind, LabelSelector, Store, StoreError};
use serde_json::{Value, json};

use super::objects::blocking;
use super::status::ApiError;

const DEFAULT: &str = "default";

/// Namespace name → oldest `creationTimestamp` of its objects, and the newest snapshot
/// revision read.
fn scan(store: &Store) -> Result<(BTreeMap<String, Option<String>>, u64), StoreError> {
    let mut namespaces: BTreeMap<String, Option<String>> = BTreeMap::new();
    namespaces.insert(DEFAULT.to_string(), None);
    let mut revision = 0;
    for kind in Kind::ALL.into_iter().filter(|k| k.namespaced()) {
        let listed = store.list(kind, None, &LabelSelector::everything())?;
        revision = revision.max(listed.revision);
        for item in &listed.items {
            let namespace = landscaper_store::object::namespace(item);
            if namespace.is_empty() {
                continue;
            }
            let created = landscaper_store::object::meta_str(item, "creationTimestamp");
            let oldest = namespaces.entry(namespace.to_string()).or_default();
            if let Some(created) = created
                && oldest.as_deref().is_none_or(|o| created < o)
            {
                *oldest = Some(created.to_string());
            }
        }
    }
    Ok((namespaces, revision))
}

fn namespace_object(name: &str, created: Option<&str>) -> Value {
    let mut object = json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/metadata.name": name},
        },
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    });
    if let Some(created) = created {
        object["metadata"]["creationTimestamp"] = Value::String(created.to_string());
    }
    object
}

/// All namespaces and the revision they were derived at.
pub async fn list(store: &Store) -> Result<(Vec<Value>, u64), ApiError> {
    let store = store.clone();
    let (namespaces, revision) = blocking(move || scan(&store)).await?;
    let items = namespaces
        .iter()
        .map(|(name, created)| namespace_object(name, created.as_deref()))
        .collect();
    Ok((items, revision))
}

pub async fn get(store: &Store, name: &str) -> Result<Value, ApiError> {
    let store = store.clone();
    let (namespaces, _) = blocking(move || scan(&store)).await?;
    namespaces
        .get(name)
        .map(|created| namespace_object(name, created.as_deref()))
        .ok_or_else(|| ApiError::not_found("namespaces", "", name))
}
