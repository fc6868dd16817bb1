//! `TransportArchive`: the appliance's record of one OCM transport archive (a Common Transport
//! Format archive or a component archive, as a directory, `.tar` or `.tgz`) in the watched
//! manifests folder, which the appliance resolves component versions from before any registry
//! (issue 18).
//!
//! `appliance.landscaper-appliance.io/v1alpha1`, cluster-scoped, read-only (written by the
//! ingest only). Never sent to a Landscaper.

use serde::{Deserialize, Serialize};

use super::meta::ObjectMeta;

/// `status.phase` of an archive that was read.
pub const TRANSPORT_ARCHIVE_READY: &str = "Ready";
/// `status.phase` of an archive that could not be read (`status.lastError` says why).
pub const TRANSPORT_ARCHIVE_FAILED: &str = "Failed";

/// A transport archive (a common transport format of component versions) the appliance
/// imported (an appliance kind).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TransportArchive {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: TransportArchiveSpec,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<TransportArchiveStatus>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TransportArchiveSpec {
    /// Path relative to the manifests folder, `/`-separated. Required.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TransportArchiveStatus {
    /// `Ready` or `Failed`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub phase: String,
    /// OCM repository type: `CommonTransportFormat` or `ComponentArchive`; absent when the
    /// archive could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub r#type: Option<String>,
    /// How it is stored: `directory`, `tar` or `tgz`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Bytes: the file's size, or the sum of the directory's files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// The component versions the archive holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub component_versions: Option<Vec<ArchivedComponentVersion>>,
    /// Why the archive cannot be used; absent when it is Ready.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// When the archive was last read (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_time: Option<String>,
}

/// One component version held by an archive.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ArchivedComponentVersion {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub version: String,
    /// Number of resources of the component version.
    #[serde(default)]
    pub resources: u64,
}
