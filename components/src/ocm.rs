//! OCM's storage of component versions in OCI repositories (registries and CTFs),
//! FORMATS.md §3, §4: name mappings, tags, the manifest, config and descriptor layer.

use std::io::Read;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::NameMapping;

pub const COMPONENT_DESCRIPTOR_NAMESPACE: &str = "component-descriptors";
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.ocm.software.component.config.v1+json";
pub const DESCRIPTOR_TAR_MEDIA_TYPE: &str =
    "application/vnd.ocm.software.component-descriptor.v2+yaml+tar";
pub const OCI_INDEX_MEDIA_TYPE: &str = "application/vnd.oci.image.index.v1+json";

pub const CONFIG_MEDIA_TYPES: &[&str] = &[
    CONFIG_MEDIA_TYPE,
    "application/vnd.gardener.cloud.cnudie.component.config.v1+json",
    "application/vnd.oci.gardener.cloud.cnudie.component-descriptor-metadata.config.v2+json",
];
pub const DESCRIPTOR_TAR_MEDIA_TYPES: &[&str] = &[
    DESCRIPTOR_TAR_MEDIA_TYPE,
    "application/vnd.gardener.cloud.cnudie.component-descriptor.v2+yaml+tar",
    "application/vnd.oci.gardener.cloud.cnudie.component-descriptor.config.v2+yaml+tar",
    "application/vnd.ocm.software.component-descriptor.v2+json+tar",
];
pub const DESCRIPTOR_PLAIN_MEDIA_TYPES: &[&str] = &[
    "application/vnd.ocm.software.component-descriptor.v2+json",
    "application/vnd.ocm.software.component-descriptor.v2+yaml",
    "application/vnd.gardener.cloud.cnudie.component-descriptor.v2+json",
    "application/vnd.gardener.cloud.cnudie.component-descriptor.v2+yaml",
];

pub const MAX_OCM_MANIFEST_BYTES: usize = 4 << 20;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The OCI repository of a component (`subPath/component-descriptors/<name>` or
/// `subPath/<hex(sha256(name))>`).
pub fn component_repository(sub_path: Option<&str>, mapping: NameMapping, name: &str) -> String {
    let tail = match mapping {
        NameMapping::UrlPath => format!("{COMPONENT_DESCRIPTOR_NAMESPACE}/{name}"),
        NameMapping::Sha256Digest => hex(&Sha256::digest(name.as_bytes())),
    };
    match sub_path
        .map(|s| s.trim_matches('/'))
        .filter(|s| !s.is_empty())
    {
        Some(sp) => format!("{sp}/{tail}"),
        None => tail,
    }
}

fn ident_ok(s: &str) -> bool {
    !s.is_empty()
        && s.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
}

/// Masterminds' relaxed semver: optional `v`, missing minor/patch allowed.
pub fn is_relaxed_semver(v: &str) -> bool {
    let v = v.strip_prefix('v').unwrap_or(v);
    let (rest, build) = match v.split_once('+') {
        Some((r, b)) => (r, Some(b)),
        None => (v, None),
    };
    if build.is_some_and(|b| !ident_ok(b)) {
        return false;
    }
    let (core, pre) = match rest.split_once('-') {
        Some((c, p)) => (c, Some(p)),
        None => (rest, None),
    };
    if pre.is_some_and(|p| !ident_ok(p)) {
        return false;
    }
    let parts: Vec<&str> = core.split('.').collect();
    !parts.is_empty()
        && parts.len() <= 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 20 && p.bytes().all(|b| b.is_ascii_digit()))
}

/// Version → tag (`+` → `.build-`); `None` if the version is no (relaxed) semver.
pub fn version_to_tag(version: &str) -> Option<String> {
    if !is_relaxed_semver(version) {
        return None;
    }
    Some(version.replace('+', ".build-"))
}

/// Tag → version (the first `.build-` → `+`).
pub fn tag_to_version(tag: &str) -> String {
    tag.replacen(".build-", "+", 1)
}

/// Whether a loaded descriptor's version fits the requested one.
pub fn version_matches(requested: &str, found: &str) -> bool {
    found == requested || version_to_tag(requested).is_some_and(|t| t == found)
}

/// An OCI descriptor inside a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    pub media_type: String,
    pub digest: String,
    pub size: u64,
}

fn layer_of(v: &Value) -> Option<Layer> {
    Some(Layer {
        media_type: v
            .get("mediaType")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        digest: v.get("digest")?.as_str()?.to_string(),
        size: v.get("size").and_then(Value::as_u64).unwrap_or(0),
    })
}

/// An image manifest or index, as far as component versions need it.
#[derive(Debug, Clone, PartialEq)]
pub enum OciDocument {
    Manifest {
        config: Layer,
        layers: Vec<Layer>,
        media_type: String,
    },
    /// An index: the digest of the manifest to follow (annotation `software.ocm.descriptor`,
    /// else the first).
    Index { manifests: Vec<(Layer, bool)> },
}

/// Parses a manifest or index (bounded; unknown fields ignored).
pub fn parse_oci_document(bytes: &[u8]) -> Result<OciDocument, String> {
    if bytes.len() > MAX_OCM_MANIFEST_BYTES {
        return Err("manifest larger than 4 MiB".into());
    }
    let v: Value =
        serde_json::from_slice(bytes).map_err(|e| format!("manifest is no JSON: {e}"))?;
    if !v.is_object() {
        return Err("manifest is no JSON object".into());
    }
    let media_type = v
        .get("mediaType")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if let Some(list) = v.get("manifests").and_then(Value::as_array)
        && v.get("layers").is_none()
    {
        let manifests = list
            .iter()
            .filter_map(|m| {
                let l = layer_of(m)?;
                let marked = m["annotations"]["software.ocm.descriptor"].as_str() == Some("true");
                Some((l, marked))
            })
            .collect();
        return Ok(OciDocument::Index { manifests });
    }
    let config = v
        .get("config")
        .and_then(layer_of)
        .ok_or("manifest has no config")?;
    let layers = v
        .get("layers")
        .and_then(Value::as_array)
        .map(|l| l.iter().filter_map(layer_of).collect())
        .unwrap_or_default();
    Ok(OciDocument::Manifest {
        config,
        layers,
        media_type,
    })
}

impl OciDocument {
    /// For an index: the manifest to follow.
    pub fn descriptor_manifest(&self) -> Option<&Layer> {
        match self {
            OciDocument::Index { manifests } => manifests
                .iter()
                .find(|(_, marked)| *marked)
                .or_else(|| manifests.first())
                .map(|(l, _)| l),
            OciDocument::Manifest { .. } => None,
        }
    }
}

/// What a component manifest's config says.
#[derive(Debug)]
pub enum ConfigCheck {
    /// Empty config media type: "not found".
    NotAComponent(String),
    /// Read the config blob with this digest, then [`descriptor_layer_from_config`].
    ReadConfig(Layer),
}

pub fn check_config(config: &Layer) -> ConfigCheck {
    if config.media_type.is_empty() {
        return ConfigCheck::NotAComponent("the manifest's config has no media type".into());
    }
    if !CONFIG_MEDIA_TYPES.contains(&config.media_type.as_str()) {
        return ConfigCheck::NotAComponent(format!(
            "artifact is no component (config media type {:?})",
            config.media_type
        ));
    }
    ConfigCheck::ReadConfig(config.clone())
}

/// The descriptor layer named by the config blob (`componentDescriptorLayer`), which must be
/// one of the manifest's layers.
pub fn descriptor_layer_from_config(
    config_bytes: &[u8],
    layers: &[Layer],
) -> Result<Layer, String> {
    let v: Value = serde_json::from_slice(config_bytes)
        .map_err(|e| format!("component config is no JSON: {e}"))?;
    let digest = v["componentDescriptorLayer"]["digest"]
        .as_str()
        .ok_or("component config has no componentDescriptorLayer.digest")?;
    layers
        .iter()
        .find(|l| l.digest == digest)
        .cloned()
        .ok_or_else(|| {
            format!("component config names layer {digest}, which the manifest does not have")
        })
}

/// The descriptor bytes of a descriptor layer.
pub fn descriptor_from_layer(media_type: &str, bytes: &[u8]) -> Result<Vec<u8>, String> {
    if DESCRIPTOR_PLAIN_MEDIA_TYPES.contains(&media_type) {
        return Ok(bytes.to_vec());
    }
    if !DESCRIPTOR_TAR_MEDIA_TYPES.contains(&media_type) {
        return Err(format!(
            "unsupported component descriptor layer media type {media_type:?}"
        ));
    }
    let mut archive = tar::Archive::new(bytes);
    let entries = archive
        .entries()
        .map_err(|e| format!("descriptor tar: {e}"))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| format!("descriptor tar: {e}"))?;
        let path = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        if path.trim_start_matches("./").trim_start_matches('/') == "component-descriptor.yaml" {
            let mut out = Vec::new();
            entry
                .by_ref()
                .take(crate::descriptor::MAX_DESCRIPTOR_BYTES as u64 + 1)
                .read_to_end(&mut out)
                .map_err(|e| format!("descriptor tar: {e}"))?;
            return Ok(out);
        }
    }
    Err("descriptor tar has no component-descriptor.yaml".into())
}

/// Writes a descriptor tar as the OCM library does (fixed mtime, mode 0, uid/gid 0).
pub fn descriptor_tar(descriptor: &[u8]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_ustar();
    header.set_size(descriptor.len() as u64);
    header.set_mode(0);
    header.set_mtime(1_640_995_200);
    header.set_entry_type(tar::EntryType::Regular);
    let _ = builder.append_data(&mut header, "component-descriptor.yaml", descriptor);
    builder.into_inner().unwrap_or_default()
}

/// The CTF `artifact-index.json`.
pub fn parse_artifact_index(bytes: &[u8]) -> Result<Vec<(String, String, String)>, String> {
    let v: Value =
        serde_json::from_slice(bytes).map_err(|e| format!("artifact-index.json: {e}"))?;
    if !v.is_object() {
        return Err("artifact-index.json is no object".into());
    }
    let mut out = Vec::new();
    for a in v["artifacts"].as_array().into_iter().flatten() {
        let repository = a["repository"].as_str().unwrap_or_default();
        let digest = a["digest"].as_str().unwrap_or_default();
        if repository.is_empty() || digest.is_empty() {
            return Err("artifact-index.json: entry without repository or digest".into());
        }
        out.push((
            repository.to_string(),
            a["tag"].as_str().unwrap_or_default().to_string(),
            digest.to_string(),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_mappings() {
        assert_eq!(
            component_repository(
                Some("ocm/test"),
                NameMapping::UrlPath,
                "github.com/acme/helloworld"
            ),
            "ocm/test/component-descriptors/github.com/acme/helloworld"
        );
        let d = component_repository(
            None,
            NameMapping::Sha256Digest,
            "github.com/acme/helloworld",
        );
        assert_eq!(d.len(), 64);
        assert!(!d.contains("component-descriptors"));
    }

    #[test]
    fn tags() {
        assert_eq!(
            version_to_tag("1.2.3+ci.42").as_deref(),
            Some("1.2.3.build-ci.42")
        );
        assert_eq!(tag_to_version("1.2.3.build-ci.42"), "1.2.3+ci.42");
        for ok in ["v1", "1.2", "1.2.3-rc.1", "v0.1.0"] {
            assert!(is_relaxed_semver(ok), "{ok}");
        }
        for bad in ["", "latest", "1.2.3.4", "1..2", "1.2.3+", "1.2.3-"] {
            assert!(!is_relaxed_semver(bad), "{bad}");
        }
        assert!(version_matches("1.0.0+a", "1.0.0.build-a"));
        assert!(!version_matches("1.0.0", "1.0.1"));
    }
}
