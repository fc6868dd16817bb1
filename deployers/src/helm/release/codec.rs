//! Helm's storage encoding (`pkg/storage/driver/util.go` and `secrets.go`): the release as
//! JSON, gzip (best compression), base64; stored in the Secret
//! `sh.helm.release.v1.<name>.v<revision>` of type `helm.sh/release.v1` under the data key
//! `release`, labelled `name`, `owner=helm`, `status`, `version` (and `createdAt` when created,
//! `modifiedAt` when updated, in Unix seconds), with the release's own labels beside them.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use base64::Engine as _;
use serde_json::{Value, json};

use super::model::Release;

/// The Secret type of Helm 3 release records.
pub const SECRET_TYPE: &str = "helm.sh/release.v1";
/// The Secret data key holding the encoded release.
pub const DATA_KEY: &str = "release";
/// The labels Helm sets itself; all others on a record are the release's labels.
pub const SYSTEM_LABELS: [&str; 6] = [
    "name",
    "owner",
    "status",
    "version",
    "createdAt",
    "modifiedAt",
];

const GZIP_MAGIC: [u8; 3] = [0x1f, 0x8b, 0x08];

#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("release {key}: data is not base64: {source}")]
    Base64 {
        key: String,
        source: base64::DecodeError,
    },
    #[error("release {key}: data is not gzip: {source}")]
    Gzip { key: String, source: std::io::Error },
    #[error("release {key}: data is not a release: {source}")]
    Json {
        key: String,
        source: serde_json::Error,
    },
    #[error("release {key}: Secret has no data key {DATA_KEY:?}")]
    MissingData { key: String },
    #[error("encoding release {name}: {message}")]
    Encode { name: String, message: String },
}

/// `sh.helm.release.v1.<name>.v<revision>` (`makeKey`).
pub fn secret_name(release: &str, revision: u32) -> String {
    format!("sh.helm.release.v1.{release}.v{revision}")
}

/// `encodeRelease`: JSON, gzip, base64.
pub fn encode(release: &Release) -> Result<String, CodecError> {
    let fail = |message: String| CodecError::Encode {
        name: release.name.clone(),
        message,
    };
    let json = serde_json::to_vec(release).map_err(|e| fail(e.to_string()))?;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&json).map_err(|e| fail(e.to_string()))?;
    let bytes = gz.finish().map_err(|e| fail(e.to_string()))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// `decodeRelease`: base64, gunzip when it is gzip (records of old Helm versions are not),
/// JSON. `key` names the record in errors.
pub fn decode(key: &str, data: &str) -> Result<Release, CodecError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|source| CodecError::Base64 {
            key: key.to_string(),
            source,
        })?;
    let json = if bytes.starts_with(&GZIP_MAGIC) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(bytes.as_slice())
            .read_to_end(&mut out)
            .map_err(|source| CodecError::Gzip {
                key: key.to_string(),
                source,
            })?;
        out
    } else {
        bytes
    };
    serde_json::from_slice(&json).map_err(|source| CodecError::Json {
        key: key.to_string(),
        source,
    })
}

/// When the record is written: `createdAt` on create, `modifiedAt` on update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordWrite {
    Create,
    Update,
}

/// The labels of a record (`newSecretsObject`): the release's labels, then the system labels
/// over them.
pub fn labels(release: &Release, write: RecordWrite, now_unix: i64) -> BTreeMap<String, String> {
    let mut labels = release.labels.clone();
    let stamp = match write {
        RecordWrite::Create => "createdAt",
        RecordWrite::Update => "modifiedAt",
    };
    labels.insert(stamp.into(), now_unix.to_string());
    labels.insert("name".into(), release.name.clone());
    labels.insert("owner".into(), "helm".into());
    labels.insert("status".into(), release.status().as_str().into());
    labels.insert("version".into(), release.version.to_string());
    labels
}

/// The Secret holding `release` (Kubernetes' `data` is base64 of the encoded text).
pub fn to_secret(
    release: &Release,
    write: RecordWrite,
    now_unix: i64,
) -> Result<Value, CodecError> {
    let encoded = encode(release)?;
    Ok(json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": secret_name(&release.name, release.version),
            "namespace": release.namespace,
            "labels": labels(release, write, now_unix),
        },
        "type": SECRET_TYPE,
        "data": {DATA_KEY: base64::engine::general_purpose::STANDARD.encode(encoded)},
    }))
}

/// The release in a Secret read from the API server, its user labels restored
/// (`filterSystemLabels`).
pub fn from_secret(secret: &Value) -> Result<Release, CodecError> {
    let key = secret
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let Some(data) = secret.pointer("/data/release").and_then(Value::as_str) else {
        return Err(CodecError::MissingData { key });
    };
    let text = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|source| CodecError::Base64 {
            key: key.clone(),
            source,
        })?;
    let text = String::from_utf8_lossy(&text);
    let mut release = decode(&key, &text)?;
    if let Some(labels) = secret
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
    {
        release.labels = labels
            .iter()
            .filter(|(k, _)| !SYSTEM_LABELS.contains(&k.as_str()))
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect();
    }
    Ok(release)
}
