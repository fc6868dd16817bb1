//! Repository contexts (OCM repository specifications), FORMATS.md §2.

use std::path::PathBuf;

use serde_json::Value;

use crate::ComponentError;

/// A repository context parsed from its untyped JSON; `raw` is kept as given.
#[derive(Debug, Clone, PartialEq)]
pub struct RepositoryContext {
    pub kind: RepositoryKind,
    pub raw: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RepositoryKind {
    /// `base_url` is `host[:port]` (no scheme, no path); a path in `baseUrl` is moved in front
    /// of `subPath`.
    Oci {
        base_url: String,
        sub_path: Option<String>,
        mapping: NameMapping,
        insecure: bool,
    },
    /// Directory, .tar or .tgz (detected by content).
    Ctf {
        file_path: PathBuf,
    },
    ComponentArchive {
        file_path: PathBuf,
    },
    /// Landscaper's `local` type (`filePath` relative to the local root).
    Local {
        file_path: PathBuf,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameMapping {
    UrlPath,
    Sha256Digest,
}

/// The value of `key` in `object`, matched case-insensitively as Go's encoding/json does (an
/// exact match wins).
pub fn get_ci<'v>(object: &'v Value, key: &str) -> Option<&'v Value> {
    let map = object.as_object()?;
    if let Some(v) = map.get(key) {
        return Some(v);
    }
    map.iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .map(|(_, v)| v)
}

fn get_str<'v>(object: &'v Value, key: &str) -> Option<&'v str> {
    get_ci(object, key).and_then(Value::as_str)
}

impl RepositoryContext {
    pub fn parse(value: &Value) -> Result<Self, ComponentError> {
        let invalid = |reason: String| ComponentError::InvalidRepositoryContext { reason };
        if !value.is_object() {
            return Err(invalid(format!("expected an object, got {value}")));
        }
        let ty = get_str(value, "type")
            .ok_or_else(|| invalid("no type".to_string()))?
            .trim();
        let lower = ty.to_ascii_lowercase();
        let file_path = || -> Result<PathBuf, ComponentError> {
            match get_str(value, "filePath") {
                Some(p) if !p.is_empty() => Ok(PathBuf::from(p)),
                _ => Err(invalid(format!("type {ty} needs filePath"))),
            }
        };
        let kind = match lower.as_str() {
            "ociregistry" | "ociregistry/v1" | "oci" | "oci/v1" => {
                let base = get_str(value, "baseUrl")
                    .filter(|b| !b.trim().is_empty())
                    .ok_or_else(|| invalid(format!("type {ty} needs baseUrl")))?
                    .trim();
                let (explicit_http, rest) = if let Some(rest) = base.strip_prefix("http://") {
                    (true, rest)
                } else if let Some(rest) = base.strip_prefix("https://") {
                    (false, rest)
                } else if base.contains("://") {
                    return Err(invalid(format!("baseUrl {base:?}: unsupported scheme")));
                } else {
                    (false, base)
                };
                let rest = rest.trim_end_matches('/');
                let (host, path) = match rest.split_once('/') {
                    Some((h, p)) => (h, Some(p.trim_matches('/'))),
                    None => (rest, None),
                };
                if host.is_empty()
                    || !host.bytes().all(|b| {
                        b.is_ascii_alphanumeric()
                            || matches!(b, b'.' | b'-' | b':' | b'[' | b']' | b'_')
                    })
                {
                    return Err(invalid(format!("baseUrl {base:?}: invalid host")));
                }
                let sub = get_str(value, "subPath")
                    .map(|s| s.trim_matches('/'))
                    .filter(|s| !s.is_empty());
                let sub_path = match (path.filter(|p| !p.is_empty()), sub) {
                    (Some(p), Some(s)) => Some(format!("{p}/{s}")),
                    (Some(p), None) => Some(p.to_string()),
                    (None, Some(s)) => Some(s.to_string()),
                    (None, None) => None,
                };
                if let Some(sp) = &sub_path
                    && !sp.split('/').all(|c| {
                        !c.is_empty()
                            && c.bytes().all(|b| {
                                b.is_ascii_lowercase()
                                    || b.is_ascii_digit()
                                    || matches!(b, b'.' | b'_' | b'-')
                            })
                    })
                {
                    return Err(invalid(format!(
                        "subPath {sp:?} is no valid repository path"
                    )));
                }
                let mapping = match get_str(value, "componentNameMapping") {
                    None | Some("") | Some("urlPath") => NameMapping::UrlPath,
                    Some("sha256-digest") => NameMapping::Sha256Digest,
                    Some(other) => {
                        return Err(invalid(format!("unknown componentNameMapping {other:?}")));
                    }
                };
                let insecure = explicit_http
                    || get_ci(value, "insecure")
                        .and_then(Value::as_bool)
                        .unwrap_or(false)
                    || get_ci(value, "plainHTTP")
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                RepositoryKind::Oci {
                    base_url: host.to_string(),
                    sub_path,
                    mapping,
                    insecure,
                }
            }
            "commontransportformat" | "commontransportformat/v1" | "ctf" | "ctf/v1" => {
                RepositoryKind::Ctf {
                    file_path: file_path()?,
                }
            }
            "componentarchive" | "componentarchive/v1" => RepositoryKind::ComponentArchive {
                file_path: file_path()?,
            },
            "local" => RepositoryKind::Local {
                file_path: PathBuf::from(get_str(value, "filePath").unwrap_or("./")),
            },
            "inline" => {
                return Err(invalid(
                    "type inline only describes componentDescriptor.inline".to_string(),
                ));
            }
            _ => return Err(invalid(format!("unsupported type {ty:?}"))),
        };
        Ok(RepositoryContext {
            kind,
            raw: value.clone(),
        })
    }

    /// A context for a file repository found outside any Installation (archives in the
    /// manifests folder).
    pub fn for_file(kind: RepositoryKind) -> Self {
        let raw = match &kind {
            RepositoryKind::Ctf { file_path } => serde_json::json!({
                "type": "CommonTransportFormat/v1", "filePath": file_path.display().to_string()}),
            RepositoryKind::ComponentArchive { file_path } => serde_json::json!({
                "type": "ComponentArchive/v1", "filePath": file_path.display().to_string()}),
            RepositoryKind::Local { file_path } => serde_json::json!({
                "type": "local", "filePath": file_path.display().to_string()}),
            RepositoryKind::Oci {
                base_url, sub_path, ..
            } => {
                let mut v = serde_json::json!({"type": "OCIRegistry", "baseUrl": base_url});
                if let Some(sp) = sub_path {
                    v["subPath"] = Value::String(sp.clone());
                }
                v
            }
        };
        RepositoryContext { kind, raw }
    }

    /// A short description for messages (no credentials are ever part of a context).
    pub fn describe(&self) -> String {
        match &self.kind {
            RepositoryKind::Oci {
                base_url, sub_path, ..
            } => match sub_path {
                Some(sp) => format!("{base_url}/{sp}"),
                None => base_url.clone(),
            },
            RepositoryKind::Ctf { file_path } => format!("CTF {}", file_path.display()),
            RepositoryKind::ComponentArchive { file_path } => {
                format!("component archive {}", file_path.display())
            }
            RepositoryKind::Local { file_path } => format!("local {}", file_path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn oci_contexts_parse_with_aliases_and_paths() {
        for ty in [
            "ociRegistry",
            "OCIRegistry",
            "OCIRegistry/v1",
            "oci",
            "OCI/v1",
        ] {
            let c = RepositoryContext::parse(&json!({"type": ty, "baseUrl": "ghcr.io/ocm/test"}))
                .expect(ty);
            assert_eq!(
                c.kind,
                RepositoryKind::Oci {
                    base_url: "ghcr.io".into(),
                    sub_path: Some("ocm/test".into()),
                    mapping: NameMapping::UrlPath,
                    insecure: false
                }
            );
        }
        let c = RepositoryContext::parse(
            &json!({"type": "OCIRegistry", "baseUrl": "http://reg:5000/a",
            "subPath": "b", "componentNameMapping": "sha256-digest"}),
        )
        .expect("parses");
        assert_eq!(
            c.kind,
            RepositoryKind::Oci {
                base_url: "reg:5000".into(),
                sub_path: Some("a/b".into()),
                mapping: NameMapping::Sha256Digest,
                insecure: true
            }
        );
        for bad in [
            json!({"type": "ociRegistry"}),
            json!({"type": "ociRegistry", "baseUrl": "ftp://x"}),
            json!({"type": "ociRegistry", "baseUrl": "x", "componentNameMapping": "other"}),
            json!({"type": "nope"}),
            json!({"baseUrl": "x"}),
            json!("ociRegistry"),
            json!({"type": "CommonTransportFormat/v1"}),
        ] {
            assert!(RepositoryContext::parse(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn keys_match_case_insensitively() {
        let c =
            RepositoryContext::parse(&json!({"type": "local", "filepath": "./testdata/ocmrepo"}))
                .expect("parses");
        assert_eq!(
            c.kind,
            RepositoryKind::Local {
                file_path: "./testdata/ocmrepo".into()
            }
        );
        let c = RepositoryContext::parse(
            &json!({"Type": "CommonTransportFormat/v1", "FILEPATH": "x.tgz", "fileFormat": "tgz"}),
        )
        .expect("parses");
        assert_eq!(
            c.kind,
            RepositoryKind::Ctf {
                file_path: "x.tgz".into()
            }
        );
    }
}
