//! Typed content of resources (FORMATS.md §7, §7.1, §8, §10).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::archive::{ArtifactSet, MAX_UNPACKED_BYTES, maybe_gunzip, untar};
use crate::{Artifact, ComponentError};

pub const BLUEPRINT_ARCHIVE_MEDIA_TYPES: &[&str] = &[
    "application/x-tar",
    "application/x-tgz",
    "application/x-tar+gzip",
    "application/vnd.gardener.landscaper.blueprint.v1+tar",
    "application/vnd.gardener.landscaper.blueprint.v1+tar+gzip",
    "application/vnd.gardener.landscaper.blueprint.layer.v1.tar",
    "application/vnd.gardener.landscaper.blueprint.layer.v1.tar+gzip",
];
/// The blueprint layer types accepted in an OCI artifact (layer 0).
const BLUEPRINT_LAYER_MEDIA_TYPES: &[&str] = &[
    "application/vnd.gardener.landscaper.blueprint.v1+tar",
    "application/vnd.gardener.landscaper.blueprint.v1+tar+gzip",
    "application/vnd.gardener.landscaper.blueprint.layer.v1.tar",
    "application/vnd.gardener.landscaper.blueprint.layer.v1.tar+gzip",
];
pub const BLUEPRINT_CONFIG_MEDIA_TYPE: &str =
    "application/vnd.gardener.landscaper.blueprint.config.v1";
pub const OCI_MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
pub const DOCKER_MANIFEST_MEDIA_TYPE: &str = "application/vnd.docker.distribution.manifest.v2+json";
pub const HELM_CHART_LAYER_MEDIA_TYPE: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";
pub const HELM_LEGACY_CHART_LAYER_MEDIA_TYPE: &str = "application/tar+gzip";

/// Resource types Landscaper treats as blueprints.
pub fn is_blueprint_type(ty: &str) -> bool {
    matches!(ty, "landscaper.gardener.cloud/blueprint" | "blueprint")
}
pub fn is_jsonschema_type(ty: &str) -> bool {
    ty == "landscaper.gardener.cloud/jsonschema"
}
pub fn is_helm_chart_type(ty: &str) -> bool {
    matches!(ty, "helmChart" | "helm.io/chart" | "helm")
}

/// The media type without parameters (`; charset=…`).
fn base_media_type(mt: &str) -> &str {
    mt.split(';').next().unwrap_or_default().trim()
}

/// `application/vnd.oci.image.manifest.v1+tar[+gzip]` and the Docker form: an artifact set.
pub fn is_artifact_set_media_type(mt: &str) -> bool {
    let mt = base_media_type(mt);
    [
        OCI_MANIFEST_MEDIA_TYPE,
        DOCKER_MANIFEST_MEDIA_TYPE,
        "application/vnd.oci.image.index.v1+json",
    ]
    .iter()
    .any(|m| {
        let stem = m.trim_end_matches("+json");
        mt == *m
            || mt == format!("{stem}+tar")
            || mt == format!("{stem}+tar+gzip")
            || mt == format!("{m}+tar")
            || mt == format!("{m}+tar+gzip")
    })
}

fn content_error(a: &Artifact, reason: impl Into<String>) -> ComponentError {
    ComponentError::Content {
        component: String::new(),
        version: String::new(),
        resource: a.digest.clone(),
        reason: reason.into(),
    }
}

/// A blueprint file tree (path → bytes) from any blueprint media type; bounded size; no
/// paths leaving the root; `blueprint.yaml` must be at the root.
pub fn blueprint_files(a: &Artifact) -> Result<BTreeMap<String, Vec<u8>>, ComponentError> {
    let mt = base_media_type(&a.media_type);
    let archive: Vec<u8> = if BLUEPRINT_ARCHIVE_MEDIA_TYPES.contains(&mt) {
        a.bytes.to_vec()
    } else if is_artifact_set_media_type(mt) {
        let set = ArtifactSet::open(&a.bytes).map_err(|e| content_error(a, e))?;
        let (_, manifest) = set.main_manifest().map_err(|e| content_error(a, e))?;
        let config_type = manifest["config"]["mediaType"].as_str().unwrap_or_default();
        let layer0 = &manifest["layers"][0];
        let layer_type = layer0["mediaType"].as_str().unwrap_or_default();
        if config_type != BLUEPRINT_CONFIG_MEDIA_TYPE
            && !BLUEPRINT_LAYER_MEDIA_TYPES.contains(&layer_type)
        {
            return Err(content_error(
                a,
                format!(
                    "OCI artifact is no blueprint (config {config_type:?}, layer {layer_type:?})"
                ),
            ));
        }
        let digest = layer0["digest"]
            .as_str()
            .ok_or_else(|| content_error(a, "blueprint artifact has no layer"))?;
        set.blob(digest).map_err(|e| content_error(a, e))?.to_vec()
    } else {
        return Err(content_error(
            a,
            format!("artifact does not match blueprint downloader: media type {mt:?}"),
        ));
    };
    let files = untar(&archive, MAX_UNPACKED_BYTES)
        .map_err(|e| content_error(a, format!("blueprint archive: {e}")))?;
    if !files.contains_key("blueprint.yaml") {
        return Err(content_error(
            a,
            "the blueprint has no blueprint.yaml at its root",
        ));
    }
    Ok(files)
}

/// A chart .tgz from a chart blob or an OCI artifact set (layer by media type; legacy
/// `application/tar+gzip` as fallback).
pub fn helm_chart_tgz(a: &Artifact) -> Result<Vec<u8>, ComponentError> {
    let mt = base_media_type(&a.media_type);
    let chart = if is_artifact_set_media_type(mt) {
        let set = ArtifactSet::open(&a.bytes).map_err(|e| content_error(a, e))?;
        let (_, manifest) = set.main_manifest().map_err(|e| content_error(a, e))?;
        let layers = manifest["layers"].as_array().cloned().unwrap_or_default();
        let find = |t: &str| {
            layers
                .iter()
                .find(|l| l["mediaType"].as_str() == Some(t))
                .cloned()
        };
        let layer = find(HELM_CHART_LAYER_MEDIA_TYPE)
            .or_else(|| find(HELM_LEGACY_CHART_LAYER_MEDIA_TYPE))
            .ok_or_else(|| content_error(a, "the OCI artifact has no helm chart layer"))?;
        let digest = layer["digest"].as_str().unwrap_or_default();
        set.blob(digest).map_err(|e| content_error(a, e))?.to_vec()
    } else {
        a.bytes.to_vec()
    };
    if !crate::archive::is_gzip(&chart) {
        return Err(content_error(a, "the chart is not a gzipped tar archive"));
    }
    Ok(chart)
}

/// JSON schema bytes (gunzipped if needed), parsed.
pub fn json_schema(a: &Artifact) -> Result<Value, ComponentError> {
    let bytes = maybe_gunzip(&a.bytes, MAX_UNPACKED_BYTES).map_err(|e| content_error(a, e))?;
    serde_json::from_slice(&bytes)
        .or_else(|_| crate::descriptor::parse_yaml(&bytes, "jsonschema"))
        .map_err(|e| content_error(a, format!("not a JSON schema: {e}")))
}

/// Fills in component, version and resource of a [`ComponentError::Content`] raised by the
/// functions above (they only see bytes; their errors name the artifact's digest).
pub fn in_context(
    err: ComponentError,
    component: &str,
    version: &str,
    resource: &str,
) -> ComponentError {
    match err {
        ComponentError::Content { reason, .. } => ComponentError::Content {
            component: component.to_string(),
            version: version.to_string(),
            resource: resource.to_string(),
            reason,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::{build_artifact_set, tar_files};
    use landscaper_sources::archive::sha256_digest;

    fn blueprint_tar() -> Vec<u8> {
        let files: BTreeMap<String, Vec<u8>> = [
            (
                "blueprint.yaml".to_string(),
                b"apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Blueprint\n".to_vec(),
            ),
            ("data/x".to_string(), b"x".to_vec()),
        ]
        .into();
        tar_files(&files)
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, bytes).expect("gzip");
        gz.finish().expect("gzip")
    }

    fn oci_set(config_type: &str, layer_type: &str, layer: &[u8]) -> Vec<u8> {
        let config = b"{}".to_vec();
        let manifest = serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2, "mediaType": OCI_MANIFEST_MEDIA_TYPE,
            "config": {"mediaType": config_type, "digest": sha256_digest(&config), "size": 2},
            "layers": [{"mediaType": layer_type, "digest": sha256_digest(layer), "size": layer.len()}],
        }))
        .expect("json");
        build_artifact_set(
            OCI_MANIFEST_MEDIA_TYPE,
            &sha256_digest(&manifest),
            &manifest,
            &[
                (sha256_digest(&config), config),
                (sha256_digest(layer), layer.to_vec()),
            ],
        )
    }

    #[test]
    fn every_blueprint_archive_media_type_gzipped_or_not() {
        let tar = blueprint_tar();
        let tgz = gzip(&tar);
        for mt in BLUEPRINT_ARCHIVE_MEDIA_TYPES {
            for bytes in [&tar, &tgz] {
                let files = blueprint_files(&Artifact::new(*mt, bytes.clone())).expect(mt);
                assert_eq!(files.len(), 2, "{mt}");
            }
        }
        let err =
            blueprint_files(&Artifact::new("text/plain", tar.clone())).expect_err("other type");
        assert!(
            err.to_string()
                .contains("does not match blueprint downloader"),
            "{err}"
        );
        let no_root: BTreeMap<String, Vec<u8>> =
            [("sub/blueprint.yaml".to_string(), b"x".to_vec())].into();
        assert!(blueprint_files(&Artifact::new("application/x-tar", tar_files(&no_root))).is_err());
    }

    #[test]
    fn blueprint_as_its_own_oci_artifact() {
        let layer = gzip(&blueprint_tar());
        let by_config = oci_set(
            BLUEPRINT_CONFIG_MEDIA_TYPE,
            "application/octet-stream",
            &layer,
        );
        let by_layer = oci_set(
            "application/vnd.oci.image.config.v1+json",
            "application/vnd.gardener.landscaper.blueprint.layer.v1.tar+gzip",
            &layer,
        );
        for set in [by_config, by_layer] {
            let a = Artifact::new("application/vnd.oci.image.manifest.v1+tar+gzip", set);
            assert!(
                blueprint_files(&a)
                    .expect("artifact set")
                    .contains_key("blueprint.yaml")
            );
        }
        let image = oci_set(
            "application/vnd.oci.image.config.v1+json",
            "application/vnd.oci.image.layer.v1.tar+gzip",
            &layer,
        );
        let err = blueprint_files(&Artifact::new(
            "application/vnd.oci.image.manifest.v1+tar+gzip",
            image,
        ))
        .expect_err("no blueprint");
        assert!(err.to_string().contains("no blueprint"), "{err}");
    }

    #[test]
    fn charts_from_blobs_and_artifact_sets() {
        let chart = gzip(&tar_files(
            &[("app/Chart.yaml".to_string(), b"name: app".to_vec())].into(),
        ));
        assert_eq!(
            helm_chart_tgz(&Artifact::new(HELM_CHART_LAYER_MEDIA_TYPE, chart.clone()))
                .expect("blob"),
            chart
        );
        let legacy = oci_set(
            "application/vnd.cncf.helm.config.v1+json",
            HELM_LEGACY_CHART_LAYER_MEDIA_TYPE,
            &chart,
        );
        assert_eq!(
            helm_chart_tgz(&Artifact::new(
                "application/vnd.oci.image.manifest.v1+tar+gzip",
                legacy
            ))
            .expect("legacy"),
            chart
        );
        assert!(
            helm_chart_tgz(&Artifact::new(
                HELM_CHART_LAYER_MEDIA_TYPE,
                b"not gzip".to_vec()
            ))
            .is_err()
        );
    }

    #[test]
    fn tampered_artifact_set_blobs_are_refused() {
        let layer = gzip(&blueprint_tar());
        let set = oci_set(
            BLUEPRINT_CONFIG_MEDIA_TYPE,
            "application/octet-stream",
            &layer,
        );
        // Re-pack with the layer's content changed but its name kept.
        let mut files = crate::archive::untar(&set, 1 << 20).expect("untar");
        let name = format!("blobs/{}", sha256_digest(&layer).replacen(':', ".", 1));
        files.insert(name, gzip(b"tampered"));
        let err = blueprint_files(&Artifact::new(
            "application/vnd.oci.image.manifest.v1+tar+gzip",
            tar_files(&files),
        ))
        .expect_err("digest mismatch");
        assert!(err.to_string().contains("digest mismatch"), "{err}");
    }

    #[test]
    fn json_schemas_plain_gzipped_or_yaml() {
        let schema = br#"{"type": "string"}"#;
        let want = serde_json::json!({"type": "string"});
        assert_eq!(
            json_schema(&Artifact::new("application/json", schema.to_vec())).expect("plain"),
            want
        );
        assert_eq!(
            json_schema(&Artifact::new("x", gzip(schema))).expect("gzip"),
            want
        );
        assert_eq!(
            json_schema(&Artifact::new("x", b"type: string\n".to_vec())).expect("yaml"),
            want
        );
    }
}

#[cfg(test)]
mod message_tests {
    use super::*;

    #[test]
    fn content_errors_name_the_resource_once_in_context() {
        let a = Artifact::new("text/plain", b"x".to_vec());
        let err = blueprint_files(&a).expect_err("not a blueprint");
        assert!(
            err.to_string()
                .starts_with(&format!("artifact {}:", a.digest)),
            "{err}"
        );
        let err = in_context(err, "example.com/a", "1.0.0", "blueprint");
        assert!(
            err.to_string()
                .starts_with("resource \"blueprint\" of component version example.com/a:1.0.0:"),
            "{err}"
        );
    }
}
