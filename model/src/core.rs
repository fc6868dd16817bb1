//! Core Kubernetes `ConfigMap` and `Secret` (`v1`), used as import sources.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::meta::ObjectMeta;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMap {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<BTreeMap<String, String>>,
    /// Values are base64-encoded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binary_data: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub immutable: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Secret {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// e.g. `Opaque`.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub r#type: Option<String>,
    /// Values are base64-encoded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<BTreeMap<String, String>>,
    /// Write-only convenience: plain values that take precedence over `data`. The write path
    /// merges it into `data` ([`super::prepare_for_storage`]), so stored Secrets never have it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub string_data: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub immutable: Option<bool>,
}

impl Secret {
    /// Decoded values: `data` (base64-decoded) overlaid with `stringData`, as the API server
    /// would store them. Invalid base64 entries are skipped (validation rejects them).
    pub fn decoded_data(&self) -> BTreeMap<String, Vec<u8>> {
        use base64::Engine as _;
        let mut out = BTreeMap::new();
        for (k, v) in self.data.iter().flatten() {
            if let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(v) {
                out.insert(k.clone(), bytes);
            }
        }
        for (k, v) in self.string_data.iter().flatten() {
            out.insert(k.clone(), v.as_bytes().to_vec());
        }
        out
    }
}

impl ConfigMap {
    /// Values of `data` and (base64-decoded) `binaryData` together.
    pub fn decoded_data(&self) -> BTreeMap<String, Vec<u8>> {
        use base64::Engine as _;
        let mut out = BTreeMap::new();
        for (k, v) in self.binary_data.iter().flatten() {
            if let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(v) {
                out.insert(k.clone(), bytes);
            }
        }
        for (k, v) in self.data.iter().flatten() {
            out.insert(k.clone(), v.as_bytes().to_vec());
        }
        out
    }
}
