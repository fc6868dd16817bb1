//! Tar (optionally gzipped) reading with bounds and path checks, and OCM artifact sets
//! (FORMATS.md §12.2).

use std::collections::BTreeMap;
use std::io::Read;

use serde_json::Value;

use landscaper_sources::archive::sha256_digest;

/// Upper bound of everything unpacked from one blob (the sources' artifact limit).
pub const MAX_UNPACKED_BYTES: u64 = landscaper_sources::DEFAULT_MAX_ARTIFACT_BYTES;
/// Upper bound of entries in one archive.
pub const MAX_ENTRIES: usize = 100_000;

pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x1f, 0x8b])
}

/// Gunzips when gzipped, bounded.
pub fn maybe_gunzip(bytes: &[u8], limit: u64) -> Result<Vec<u8>, String> {
    if !is_gzip(bytes) {
        return Ok(bytes.to_vec());
    }
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes)
        .take(limit + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("gzip: {e}"))?;
    if out.len() as u64 > limit {
        return Err(format!("larger than {limit} bytes unpacked"));
    }
    Ok(out)
}

/// A relative path inside an archive, normalised (`./a/b` → `a/b`); `None` for paths that
/// would leave the root (absolute, `..`).
pub fn safe_path(raw: &str) -> Option<String> {
    if raw.starts_with('/') || raw.contains('\\') {
        return None;
    }
    let mut parts = Vec::new();
    for c in raw.split('/') {
        match c {
            "" | "." => {}
            ".." => return None,
            c => parts.push(c),
        }
    }
    if parts.is_empty() {
        return None;
    }
    Some(parts.join("/"))
}

/// The regular files of a tar (gzipped or not): path → bytes. Directories are skipped; links
/// and paths leaving the root are errors.
pub fn untar(bytes: &[u8], limit: u64) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let data = maybe_gunzip(bytes, limit)?;
    if data.len() < 512 {
        return Err("not a tar archive (too short)".into());
    }
    let mut archive = tar::Archive::new(data.as_slice());
    let mut files = BTreeMap::new();
    let mut total = 0u64;
    let entries = archive.entries().map_err(|e| format!("tar: {e}"))?;
    for (i, entry) in entries.enumerate() {
        if i >= MAX_ENTRIES {
            return Err(format!("more than {MAX_ENTRIES} entries"));
        }
        let mut entry = entry.map_err(|e| format!("tar: {e}"))?;
        let path_bytes = entry.path_bytes().into_owned();
        let raw =
            String::from_utf8(path_bytes).map_err(|_| "tar: path is not UTF-8".to_string())?;
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            continue;
        }
        if kind.is_pax_global_extensions()
            || kind.is_pax_local_extensions()
            || kind.is_gnu_longname()
        {
            continue;
        }
        if !kind.is_file() {
            return Err(format!(
                "tar entry {raw:?}: only regular files and directories are allowed"
            ));
        }
        let path = safe_path(raw.trim_start_matches("./"))
            .ok_or_else(|| format!("tar entry {raw:?} leaves the archive root"))?;
        total += entry.size();
        if total > limit {
            return Err(format!("larger than {limit} bytes unpacked"));
        }
        let mut content = Vec::with_capacity(entry.size().min(limit) as usize);
        entry
            .read_to_end(&mut content)
            .map_err(|e| format!("tar entry {path}: {e}"))?;
        files.insert(path, content);
    }
    if files.is_empty() {
        return Err("the archive holds no files".into());
    }
    Ok(files)
}

/// Tars `files` (path → bytes) with fixed metadata (as OCM does), uncompressed.
pub fn tar_files(files: &BTreeMap<String, Vec<u8>>) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, bytes) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(1_640_995_200);
        header.set_entry_type(tar::EntryType::Regular);
        // Paths were checked on the way in; a failure here only drops the entry.
        let _ = builder.append_data(&mut header, path, bytes.as_slice());
    }
    builder.into_inner().unwrap_or_default()
}

/// An OCM artifact set: `index.json` (or `artifact-descriptor.json`) + `blobs/sha256.<hex>`.
#[derive(Debug, Clone)]
pub struct ArtifactSet {
    pub index: Value,
    blobs: BTreeMap<String, Vec<u8>>,
}

impl ArtifactSet {
    pub fn open(bytes: &[u8]) -> Result<Self, String> {
        let files = untar(bytes, MAX_UNPACKED_BYTES)?;
        let index_bytes = files
            .get("index.json")
            .or_else(|| files.get("artifact-descriptor.json"))
            .ok_or("artifact set without index.json")?;
        let index: Value =
            serde_json::from_slice(index_bytes).map_err(|e| format!("index.json: {e}"))?;
        let mut blobs = BTreeMap::new();
        for (path, content) in files {
            if let Some(name) = path.strip_prefix("blobs/") {
                // Flat `sha256.<hex>` (OCM) or OCI layout's `sha256/<hex>`.
                let digest = name.replacen(['.', '/'], ":", 1);
                blobs.insert(digest, content);
            }
        }
        Ok(ArtifactSet { index, blobs })
    }

    /// A blob by digest, verified.
    pub fn blob(&self, digest: &str) -> Result<&[u8], String> {
        let bytes = self
            .blobs
            .get(digest)
            .ok_or_else(|| format!("artifact set has no blob {digest}"))?;
        let actual = sha256_digest(bytes);
        if actual != digest {
            return Err(format!(
                "blob {digest}: digest mismatch (content is {actual})"
            ));
        }
        Ok(bytes)
    }

    /// The main manifest: the index annotation `software.ocm/main`, else the only/first
    /// manifest of the index. An index at that place is followed to its first manifest.
    pub fn main_manifest(&self) -> Result<(String, Value), String> {
        let digest = self.index["annotations"]["software.ocm/main"]
            .as_str()
            .map(str::to_string)
            .or_else(|| {
                self.index["manifests"]
                    .as_array()
                    .and_then(|m| m.first())
                    .and_then(|m| m["digest"].as_str())
                    .map(str::to_string)
            })
            .ok_or("artifact set index names no manifest")?;
        let mut digest = digest;
        for _ in 0..4 {
            let manifest: Value = serde_json::from_slice(self.blob(&digest)?)
                .map_err(|e| format!("manifest {digest}: {e}"))?;
            if manifest.get("manifests").is_some() && manifest.get("layers").is_none() {
                digest = manifest["manifests"][0]["digest"]
                    .as_str()
                    .ok_or("nested index without manifests")?
                    .to_string();
                continue;
            }
            return Ok((digest, manifest));
        }
        Err("nested indexes too deep".into())
    }
}

/// Builds an artifact set (tar.gz) from a manifest and its blobs (for `ociArtifact` access).
pub fn build_artifact_set(
    manifest_media_type: &str,
    manifest_digest: &str,
    manifest: &[u8],
    blobs: &[(String, Vec<u8>)],
) -> Vec<u8> {
    let index = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": manifest_media_type, "digest": manifest_digest, "size": manifest.len()}],
        "annotations": {"software.ocm/main": manifest_digest},
    });
    let mut files = BTreeMap::new();
    files.insert(
        "index.json".to_string(),
        serde_json::to_vec(&index).unwrap_or_default(),
    );
    files.insert(
        "oci-layout".to_string(),
        br#"{"imageLayoutVersion":"1.0.0"}"#.to_vec(),
    );
    files.insert(
        format!("blobs/{}", manifest_digest.replacen(':', ".", 1)),
        manifest.to_vec(),
    );
    for (digest, bytes) in blobs {
        files.insert(
            format!("blobs/{}", digest.replacen(':', ".", 1)),
            bytes.clone(),
        );
    }
    let tar = tar_files(&files);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let _ = std::io::Write::write_all(&mut gz, &tar);
    gz.finish().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_paths() {
        assert_eq!(safe_path("./a/b").as_deref(), Some("a/b"));
        assert_eq!(safe_path("a//b/").as_deref(), Some("a/b"));
        for bad in ["/etc/passwd", "../x", "a/../../x", "a\\b", "", "."] {
            assert_eq!(safe_path(bad), None, "{bad}");
        }
    }

    #[test]
    fn tar_round_trip_and_traversal() {
        let files: BTreeMap<String, Vec<u8>> = [
            ("blueprint.yaml".to_string(), b"x".to_vec()),
            ("data/t".to_string(), b"y".to_vec()),
        ]
        .into();
        assert_eq!(untar(&tar_files(&files), 1 << 20).expect("untars"), files);
        let mut builder = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_gnu();
        header.set_size(1);
        header.set_entry_type(tar::EntryType::Regular);
        // `append_data` refuses `..`; write the name into the header directly.
        header.as_old_mut().name[..5].copy_from_slice(b"../x\0");
        header.set_cksum();
        builder.append(&header, &b"z"[..]).expect("append");
        let evil = builder.into_inner().expect("tar");
        let err = untar(&evil, 1 << 20).expect_err("traversal");
        assert!(err.contains("leaves"), "{err}");
        assert!(untar(b"short", 100).is_err());
        let big: BTreeMap<String, Vec<u8>> = [("a".to_string(), vec![0u8; 4096])].into();
        assert!(
            untar(&tar_files(&big), 1000)
                .expect_err("bounded")
                .contains("larger")
        );
    }
}
