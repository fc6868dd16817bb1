//! Helm chart repositories: `index.yaml`, the version choice of Helm's `IndexFile.Get` (an exact
//! version string first, then the highest version satisfying the constraint), chart URLs
//! resolved against the index URL, and the credentials of the Context's
//! `helmChartRepoCredentials` (the longest matching URL prefix wins, as Landscaper's helm chart
//! repository client does).

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::Deserialize;

use crate::error::SourceError;
use crate::oci::SecretData;
use crate::spec::{AUTH_HEADER_SECRET_DEFAULT_KEY, HelmChartRepoCredentials, HelmRepoAuth};
use landscaper_model::semver::{Constraints, Version};

/// Landscaper's `NormalizeUrl`: trimmed, no trailing `/`, `https://` when no scheme is given.
pub fn normalize_url(url: &str) -> String {
    let url = url.trim().trim_end_matches('/');
    if url.contains("://") {
        url.to_string()
    } else {
        format!("https://{url}")
    }
}

/// One version of a chart in an index.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexEntry {
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub urls: Vec<String>,
    #[serde(default)]
    pub digest: String,
}

/// `index.yaml` (only what a lookup needs).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Index {
    #[serde(default)]
    pub entries: BTreeMap<String, Vec<IndexEntry>>,
}

fn yaml_options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        with_snippet: false,
        // Public indexes are large (tens of MB); the alias limits stay.
        budget: serde_saphyr::budget! {
            max_nodes: 20_000_000,
            max_events: 40_000_000,
            max_documents: 1,
            max_recorded_anchor_events: 100_000,
            max_recorded_anchor_bytes: 16 * 1024 * 1024,
        },
    }
}

impl Index {
    pub fn parse(what: &str, bytes: &[u8]) -> Result<Index, SourceError> {
        let text = std::str::from_utf8(bytes).map_err(|_| SourceError::InvalidResponse {
            what: what.to_string(),
            detail: "index is not UTF-8".into(),
        })?;
        serde_saphyr::from_str_with_options(text, yaml_options()).map_err(|e| {
            SourceError::InvalidResponse {
                what: what.to_string(),
                detail: format!("index cannot be parsed: {e}"),
            }
        })
    }

    /// Helm's `IndexFile.Get(name, version)`.
    pub fn get(&self, name: &str, version: &str) -> Result<&IndexEntry, String> {
        let versions = match self.entries.get(name) {
            None => return Err(format!("chart {name:?} not found in repository")),
            Some(v) if v.is_empty() => {
                return Err(format!("chart {name:?} has no versions in repository"));
            }
            Some(v) => v,
        };
        let constraint = if version.is_empty() {
            Constraints::parse("*").ok()
        } else {
            Constraints::parse(version).ok()
        };
        if !version.is_empty()
            && let Some(exact) = versions.iter().find(|v| v.version == version)
        {
            return Ok(exact);
        }
        let Some(constraint) = constraint else {
            return Err(format!(
                "chart {name:?} version {version:?} not found in repository (and not a version constraint)"
            ));
        };
        versions
            .iter()
            .filter_map(|e| Version::parse(&e.version).ok().map(|v| (v, e)))
            .filter(|(v, _)| constraint.check(v))
            .max_by(|a, b| a.0.compare(&b.0))
            .map(|(_, e)| e)
            .ok_or_else(|| format!("chart {name:?} version {version:?} not found in repository"))
    }
}

/// The credentials to use for URLs, from `helmChartRepoCredentials` and the Secrets it names.
#[derive(Clone, Default)]
pub struct RepoAuths {
    /// Normalised URL prefixes, longest first.
    auths: Vec<HelmRepoAuth>,
}

impl std::fmt::Debug for RepoAuths {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let urls: Vec<&str> = self.auths.iter().map(|a| a.url.as_str()).collect();
        f.debug_struct("RepoAuths").field("urls", &urls).finish()
    }
}

/// What to send to one URL.
#[derive(Clone, Default, PartialEq)]
pub struct RequestAuth {
    pub authorization: Option<String>,
    pub ca_pem: Option<Vec<u8>>,
}

impl std::fmt::Debug for RequestAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestAuth")
            .field(
                "authorization",
                &self.authorization.as_ref().map(|_| "<redacted>"),
            )
            .field("ca_pem", &self.ca_pem.is_some())
            .finish()
    }
}

impl RepoAuths {
    pub fn new(credentials: HelmChartRepoCredentials) -> Self {
        let mut auths = credentials.auths;
        for auth in &mut auths {
            auth.url = normalize_url(&auth.url);
        }
        auths.sort_by(|a, b| {
            b.url
                .len()
                .cmp(&a.url.len())
                .then_with(|| a.url.cmp(&b.url))
        });
        RepoAuths { auths }
    }

    /// The header and CA for `url` (none when no configured URL is a prefix of it).
    pub fn for_url(
        &self,
        url: &str,
        secrets: &BTreeMap<String, SecretData>,
    ) -> Result<RequestAuth, SourceError> {
        let Some(auth) = self.auths.iter().find(|a| url.starts_with(&a.url)) else {
            return Ok(RequestAuth::default());
        };
        let what = format!("helmChartRepoCredentials for {}", auth.url);
        let err = |detail: String| SourceError::Credentials {
            what: what.clone(),
            detail,
        };
        let authorization = match (&auth.auth_header, &auth.secret_ref) {
            (h, Some(_)) if !h.is_empty() => {
                return Err(err("auth header and secret ref are both set".into()));
            }
            (h, None) if !h.is_empty() => Some(h.clone()),
            (_, Some(secret_ref)) => {
                let key = if secret_ref.key.is_empty() {
                    AUTH_HEADER_SECRET_DEFAULT_KEY
                } else {
                    &secret_ref.key
                };
                let secret = secrets
                    .get(&secret_ref.name)
                    .ok_or_else(|| err(format!("secret {:?} not found", secret_ref.name)))?;
                let value = secret.data.get(key).ok_or_else(|| {
                    err(format!(
                        "key {key} not found in secret {:?}",
                        secret_ref.name
                    ))
                })?;
                Some(
                    String::from_utf8(value.clone())
                        .map_err(|_| {
                            err(format!(
                                "key {key} of secret {:?} is not text",
                                secret_ref.name
                            ))
                        })?
                        .trim_end_matches(['\r', '\n'])
                        .to_string(),
                )
            }
            _ => {
                return Err(err("neither auth header nor secret ref is set".into()));
            }
        };
        let ca_pem =
            if auth.custom_ca_data.is_empty() {
                None
            } else {
                Some(ca_pem(&auth.custom_ca_data).ok_or_else(|| {
                    err("customCAData is neither PEM nor base64-encoded PEM".into())
                })?)
            };
        Ok(RequestAuth {
            authorization,
            ca_pem,
        })
    }
}

/// PEM as given, or base64 of PEM.
fn ca_pem(data: &str) -> Option<Vec<u8>> {
    if data.contains("-----BEGIN") {
        return Some(data.as_bytes().to_vec());
    }
    let compact: String = data.split_whitespace().collect();
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(compact)
        .ok()?;
    let is_pem = std::str::from_utf8(&decoded).is_ok_and(|t| t.contains("-----BEGIN"));
    is_pem.then_some(decoded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::AuthSecretRef;

    const INDEX: &str = r#"
apiVersion: v1
entries:
  app:
    - version: 1.10.0
      urls: [app-1.10.0.tgz]
    - version: 1.9.0
      urls: [app-1.9.0.tgz]
    - version: 2.0.0-rc.1
      urls: [app-2.0.0-rc.1.tgz]
    - version: 1.2.0
      urls: ["https://cdn.example.com/app-1.2.0.tgz"]
  empty: []
generated: "2024-01-01T00:00:00Z"
"#;

    #[test]
    fn versions_are_chosen_as_helm_does() {
        let index = Index::parse("t", INDEX.as_bytes()).expect("parses");
        assert_eq!(
            index.get("app", "1.9.0").map(|e| &e.urls[0]),
            Ok(&"app-1.9.0.tgz".to_string())
        );
        assert_eq!(
            index.get("app", "").map(|e| e.version.as_str()),
            Ok("1.10.0")
        );
        assert_eq!(
            index.get("app", "^1.2").map(|e| e.version.as_str()),
            Ok("1.10.0")
        );
        assert_eq!(
            index.get("app", "~1.9").map(|e| e.version.as_str()),
            Ok("1.9.0")
        );
        assert_eq!(
            index.get("app", ">=2.0.0-0").map(|e| e.version.as_str()),
            Ok("2.0.0-rc.1")
        );
        assert_eq!(
            index.get("app", "2.0.0-rc.1").map(|e| e.version.as_str()),
            Ok("2.0.0-rc.1")
        );
        assert!(index.get("app", "3.0.0").is_err());
        assert!(index.get("app", "not-a-version").is_err());
        assert!(
            index
                .get("other", "1.0.0")
                .expect_err("missing")
                .contains("not found")
        );
        assert!(index.get("empty", "").is_err());
    }

    #[test]
    fn broken_index_is_a_clear_error() {
        let err = Index::parse("https://r/index.yaml", b"entries: [unclosed").expect_err("broken");
        assert!(
            err.to_string()
                .starts_with("https://r/index.yaml: index cannot be parsed"),
            "{err}"
        );
    }

    #[test]
    fn urls_normalise_as_landscaper() {
        assert_eq!(
            normalize_url(" charts.example.com/ "),
            "https://charts.example.com"
        );
        assert_eq!(
            normalize_url("http://127.0.0.1:8080/"),
            "http://127.0.0.1:8080"
        );
    }

    fn auth(url: &str, header: &str) -> HelmRepoAuth {
        HelmRepoAuth {
            url: url.into(),
            auth_header: header.into(),
            ..Default::default()
        }
    }

    #[test]
    fn the_longest_prefix_wins() {
        let auths = RepoAuths::new(HelmChartRepoCredentials {
            auths: vec![
                auth("charts.example.com", "Basic short"),
                auth("https://charts.example.com/private/", "Basic long"),
            ],
        });
        let none = BTreeMap::new();
        let got = |url: &str| auths.for_url(url, &none).expect("ok").authorization;
        assert_eq!(
            got("https://charts.example.com/private/index.yaml").as_deref(),
            Some("Basic long")
        );
        assert_eq!(
            got("https://charts.example.com/public/index.yaml").as_deref(),
            Some("Basic short")
        );
        assert_eq!(got("https://other.example.com/index.yaml"), None);
    }

    #[test]
    fn secret_refs_and_their_errors() {
        let auths = RepoAuths::new(HelmChartRepoCredentials {
            auths: vec![HelmRepoAuth {
                url: "https://r.example.com".into(),
                secret_ref: Some(AuthSecretRef {
                    name: "repo-auth".into(),
                    key: String::new(),
                }),
                ..Default::default()
            }],
        });
        let mut secrets = BTreeMap::new();
        let err = auths
            .for_url("https://r.example.com/index.yaml", &secrets)
            .expect_err("missing secret");
        assert!(
            err.to_string().contains("secret \"repo-auth\" not found"),
            "{err}"
        );
        assert!(err.is_configuration_problem());
        secrets.insert(
            "repo-auth".to_string(),
            SecretData {
                name: "repo-auth".into(),
                secret_type: "Opaque".into(),
                data: [("authHeader".to_string(), b"Basic c2VjcmV0\n".to_vec())].into(),
            },
        );
        let got = auths
            .for_url("https://r.example.com/index.yaml", &secrets)
            .expect("found");
        assert_eq!(got.authorization.as_deref(), Some("Basic c2VjcmV0"));
        let both = RepoAuths::new(HelmChartRepoCredentials {
            auths: vec![HelmRepoAuth {
                url: "https://r.example.com".into(),
                auth_header: "Basic x".into(),
                secret_ref: Some(AuthSecretRef::default()),
                ..Default::default()
            }],
        });
        let err = both
            .for_url("https://r.example.com/x", &secrets)
            .expect_err("both set");
        assert!(err.to_string().contains("both set"), "{err}");
        assert!(!err.to_string().contains("Basic"), "no credential in {err}");
    }

    #[test]
    fn custom_ca_plain_or_base64() {
        let pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        assert_eq!(ca_pem(pem).as_deref(), Some(pem.as_bytes()));
        let b64 = base64::engine::general_purpose::STANDARD.encode(pem);
        assert_eq!(ca_pem(&b64).as_deref(), Some(pem.as_bytes()));
        assert_eq!(ca_pem("bm90IHBlbQ=="), None);
    }
}
