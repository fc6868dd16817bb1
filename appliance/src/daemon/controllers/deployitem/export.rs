//! The export Secret of a deploy item (`CreateOrUpdateExport` in `pkg/deployer/lib/utils.go`):
//! `<item>-export` in the item's namespace (or where `status.exportRef` already points), data key
//! `config` holding the export as JSON, owned by the item. Pure functions.

use landscaper_store::Kind;
use landscaper_store::model::constants::DATA_OBJECT_SECRET_DATA_KEY;
use landscaper_store::model::{DeployItem, ObjectReference};
use landscaper_store::object;
use serde_json::{Map, Value, json};

/// Where the item's export lives: the existing `status.exportRef` (`current`), else
/// `<item>-export` in the item's namespace.
pub fn export_reference(item: &DeployItem, current: Option<&ObjectReference>) -> ObjectReference {
    if let Some(r) = current.filter(|r| !r.name.is_empty()) {
        let namespace = if r.namespace.is_empty() {
            item.metadata.namespace()
        } else {
            &r.namespace
        };
        return ObjectReference::new(namespace, r.name.clone());
    }
    ObjectReference::new(
        item.metadata.namespace(),
        format!("{}-export", item.metadata.name()),
    )
}

/// The owner reference Landscaper's `controllerutil.SetOwnerReference` writes (not a
/// controller reference).
pub fn owner_reference(item: &DeployItem) -> Value {
    json!({
        "apiVersion": Kind::DeployItem.api_version(),
        "kind": Kind::DeployItem.as_str(),
        "name": item.metadata.name(),
        "uid": item.metadata.uid.clone().unwrap_or_default(),
    })
}

/// The export Secret to write: `existing` (the stored Secret, if any) with its data replaced
/// and the item's owner reference ensured, or a new Secret. `None` when `existing` already
/// holds exactly this.
pub fn export_secret(
    item: &DeployItem,
    reference: &ObjectReference,
    export: &Value,
    existing: Option<&Value>,
) -> Option<Value> {
    let encoded = base64(export.to_string().as_bytes());
    let mut secret = existing.cloned().unwrap_or_else(|| {
        json!({
            "apiVersion": Kind::Secret.api_version(),
            "kind": Kind::Secret.as_str(),
            "metadata": {"name": reference.name, "namespace": reference.namespace},
            "type": "Opaque",
        })
    });
    let mut data = Map::new();
    data.insert(DATA_OBJECT_SECRET_DATA_KEY.into(), Value::String(encoded));
    if let Some(map) = secret.as_object_mut() {
        map.insert("data".into(), Value::Object(data));
        map.remove("stringData");
    }
    let owner = owner_reference(item);
    let meta = object::metadata_mut(&mut secret);
    let refs = meta
        .entry("ownerReferences")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !refs.is_array() {
        *refs = Value::Array(Vec::new());
    }
    let refs = refs.as_array_mut().expect("an array");
    match refs
        .iter_mut()
        .find(|r| r.get("uid") == owner.get("uid") && r.get("kind") == owner.get("kind"))
    {
        Some(r) => {
            // Keep flags someone else set; refresh the identifying fields.
            for field in ["apiVersion", "kind", "name", "uid"] {
                r[field] = owner[field].clone();
            }
        }
        None => refs.push(owner),
    }
    (existing != Some(&secret)).then_some(secret)
}

/// Standard base64 with padding (as Kubernetes stores Secret data).
pub fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use landscaper_store::model::{ObjectMeta, Secret, from_value};

    fn item() -> DeployItem {
        let mut meta = ObjectMeta::namespaced("ns", "di");
        meta.uid = Some("u-1".into());
        DeployItem {
            metadata: meta,
            ..Default::default()
        }
    }

    #[test]
    fn base64_matches_the_standard_encoding() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
        let all: Vec<u8> = (0..=255).collect();
        let s = Secret {
            data: Some([("k".to_string(), base64(&all))].into()),
            ..Default::default()
        };
        assert_eq!(s.decoded_data()["k"], all);
    }

    #[test]
    fn the_export_secret_is_named_after_the_item_and_owned_by_it() {
        let di = item();
        let r = export_reference(&di, None);
        assert_eq!(r, ObjectReference::new("ns", "di-export"));
        let secret = export_secret(&di, &r, &json!({"a": {"b": 1}}), None).unwrap();
        let typed: Secret = from_value(&secret).unwrap();
        assert_eq!(typed.metadata.name(), "di-export");
        assert_eq!(typed.r#type.as_deref(), Some("Opaque"));
        assert_eq!(typed.decoded_data()["config"], br#"{"a":{"b":1}}"#.to_vec());
        let owners = typed.metadata.owner_references.unwrap();
        assert_eq!(owners.len(), 1);
        assert_eq!(
            (owners[0].kind.as_str(), owners[0].uid.as_str()),
            ("DeployItem", "u-1")
        );
        assert_eq!(owners[0].controller, None);
        // Writing the same export again changes nothing.
        assert_eq!(
            export_secret(&di, &r, &json!({"a": {"b": 1}}), Some(&secret)),
            None
        );
        let changed = export_secret(&di, &r, &json!(2), Some(&secret)).unwrap();
        assert_eq!(
            changed["metadata"]["ownerReferences"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn an_existing_export_reference_is_kept() {
        let di = item();
        let current = ObjectReference::new("", "mock-export-abcde");
        assert_eq!(
            export_reference(&di, Some(&current)),
            ObjectReference::new("ns", "mock-export-abcde")
        );
    }
}
