//! Object identity: kind, namespace and name.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::model::Kind;

/// The identity of a stored object. Cluster-scoped kinds have an empty namespace.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ObjectKey {
    pub kind: Kind,
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    pub fn new(kind: Kind, namespace: impl Into<String>, name: impl Into<String>) -> Self {
        ObjectKey {
            kind,
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// The key under which the object is stored: `Kind/namespace/name`. Names and namespaces
    /// cannot contain `/`, so the encoding is unambiguous and sorts by kind, then namespace.
    pub fn storage_key(&self) -> String {
        format!("{}/{}/{}", self.kind.as_str(), self.namespace, self.name)
    }

    /// Parses a [`storage_key`](Self::storage_key).
    pub fn from_storage_key(key: &str) -> Option<ObjectKey> {
        let mut parts = key.splitn(3, '/');
        let kind = Kind::from_kind_name(parts.next()?)?;
        let namespace = parts.next()?;
        let name = parts.next()?;
        Some(ObjectKey::new(kind, namespace, name))
    }

    /// Prefix covering every object of `kind`, optionally within one namespace.
    pub(crate) fn prefix(kind: Kind, namespace: Option<&str>) -> String {
        match namespace {
            Some(ns) => format!("{}/{}/", kind.as_str(), ns),
            None => format!("{}/", kind.as_str()),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.kind, self.name)
        } else {
            write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_key_round_trips() {
        let key = ObjectKey::new(Kind::Installation, "cu-example", "root-1");
        assert_eq!(key.storage_key(), "Installation/cu-example/root-1");
        assert_eq!(ObjectKey::from_storage_key(&key.storage_key()), Some(key));
        let file = ObjectKey::new(Kind::ManifestFile, "", "a.yaml");
        assert_eq!(ObjectKey::from_storage_key(&file.storage_key()), Some(file));
        assert_eq!(ObjectKey::from_storage_key("Nope/a/b"), None);
    }
}
