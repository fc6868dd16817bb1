//! `ManifestFile`: the appliance's record of one file in the watched manifests folder.
//!
//! `appliance.landscaper-appliance.io/v1alpha1`, cluster-scoped. Never sent to a Landscaper.

use serde::{Deserialize, Serialize};

use super::meta::ObjectMeta;

/// A manifest file the appliance ingested from its watched folder, with the objects it
/// defines and its errors (an appliance kind).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestFile {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: ManifestFileSpec,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<ManifestFileStatus>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ManifestFileSpec {
    /// Path relative to the manifests folder, `/`-separated. Required.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestFileStatus {
    /// Hex SHA-256 of the file content last ingested.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Objects the file defines (as of the last successful ingest).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objects: Option<Vec<ManifestObjectReference>>,
    /// Why the last ingest was rejected; absent when it succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<ManifestError>,
    /// When the file content was last read (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_time: Option<String>,
    /// Set for `.skip` files, which are recorded but not applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<bool>,
    /// Non-fatal findings, e.g. `unknown field "spec.foo"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
    /// Hex SHA-256 of the newest content seen, good or bad (`sha256` is the last applied one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_sha256: Option<String>,
    /// `Applied`, `Error` or `Skipped`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
}

/// One object defined by a manifest file.
#[derive(
    Debug,
    Clone,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct ManifestObjectReference {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    /// Absent for cluster-scoped kinds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default)]
    pub name: String,
}

/// Where and why a manifest file was rejected.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestError {
    /// 0-based index of the YAML document; absent for file-level errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub document: Option<u32>,
    /// 1-based line in the file, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// 1-based column in the file, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    #[serde(default)]
    pub message: String,
    /// Field path inside the object, e.g. `spec.imports.data[0].dataRef`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}
