//! The helm provider configuration's `chart` field (`types_provider.go`: `Chart`) and the
//! Context's `configurations.helmChartRepoCredentials`, with Landscaper's JSON names, and the
//! choice of the source Landscaper makes when several are set.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::SourceError;

/// `chart` of the helm provider configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChartSpec {
    /// An OCI reference (`host/repo:tag`, `@sha256:…`); `local://charts/NAME` is the
    /// appliance's manifests-folder extension.
    #[serde(default, rename = "ref", skip_serializing_if = "String::is_empty")]
    pub reference: String,
    /// Removed from Landscaper; rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_resource: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive: Option<ArchiveAccess>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub helm_chart_repo: Option<HelmChartRepo>,
    /// A base64 global resource key (component support, issue 18).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_ref: String,
}

/// `chart.archive`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArchiveAccess {
    /// A base64 `.tgz`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub raw: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<RemoteArchiveAccess>,
}

/// `chart.archive.remote`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoteArchiveAccess {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub url: String,
}

/// `chart.helmChartRepo`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HelmChartRepo {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub helm_chart_repo_url: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub helm_chart_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub helm_chart_version: String,
}

/// Key of the Context configuration holding helm chart repository credentials.
pub const HELM_CHART_REPO_CREDENTIALS_KEY: &str = "helmChartRepoCredentials";
/// Default key of `secretRef` in a helm chart repository credential.
pub const AUTH_HEADER_SECRET_DEFAULT_KEY: &str = "authHeader";
/// Landscaper's annotation asking the helm deployer to cache charts. Accepted; the cache here is
/// always on.
pub const CACHE_HELM_CHARTS_ANNOTATION: &str = "landscaper.gardener.cloud/cache-helm-charts";

/// `configurations.helmChartRepoCredentials`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HelmChartRepoCredentials {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub auths: Vec<HelmRepoAuth>,
}

/// One entry of `helmChartRepoCredentials.auths`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HelmRepoAuth {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub url: String,
    /// A PEM CA certificate (Landscaper documents it as "PEM format and base64 encoded";
    /// both plain and base64 PEM are accepted).
    #[serde(
        default,
        rename = "customCAData",
        skip_serializing_if = "String::is_empty"
    )]
    pub custom_ca_data: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub auth_header: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<AuthSecretRef>,
}

/// `secretRef` of a helm chart repository credential (a Secret in the Context's namespace).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthSecretRef {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key: String,
}

/// The source Landscaper uses for a `chart` (`chartresolver.GetChart`): `archive` first, then
/// `ref`, `helmChartRepo`, `fromResource`, `resourceRef`.
#[derive(Debug, Clone, PartialEq)]
pub enum ChartSource<'a> {
    Raw(&'a str),
    Url(&'a str),
    Oci(&'a str),
    Local(&'a str),
    HelmRepo(&'a HelmChartRepo),
}

/// Prefix of the manifests-folder extension in `chart.ref`.
pub const LOCAL_PREFIX: &str = "local://";

impl ChartSpec {
    /// The source to fetch, validated as Landscaper's `ValidateChart` does.
    pub fn source(&self) -> Result<ChartSource<'_>, SourceError> {
        if let Some(archive) = &self.archive {
            if !archive.raw.is_empty() {
                return Ok(ChartSource::Raw(&archive.raw));
            }
            return match &archive.remote {
                Some(remote) if !remote.url.is_empty() => Ok(ChartSource::Url(&remote.url)),
                Some(_) => Err(SourceError::InvalidSpec(
                    "chart.archive.remote.url: Required value: must not be empty".into(),
                )),
                None => Err(SourceError::InvalidSpec(
                    "chart.archive.raw.remote: Required value: must not be empty".into(),
                )),
            };
        }
        if !self.reference.is_empty() {
            if let Some(rest) = self.reference.strip_prefix(LOCAL_PREFIX) {
                return Ok(ChartSource::Local(rest));
            }
            return Ok(ChartSource::Oci(&self.reference));
        }
        if let Some(repo) = &self.helm_chart_repo {
            for (field, value) in [
                ("helmChartRepoUrl", &repo.helm_chart_repo_url),
                ("helmChartName", &repo.helm_chart_name),
                ("helmChartVersion", &repo.helm_chart_version),
            ] {
                if value.is_empty() {
                    return Err(SourceError::InvalidSpec(format!(
                        "chart.helmChartRepo.{field}: Required value: must not be empty"
                    )));
                }
            }
            return Ok(ChartSource::HelmRepo(repo));
        }
        if self.from_resource.is_some() {
            return Err(SourceError::FromResourceUnsupported);
        }
        if !self.resource_ref.is_empty() {
            return Err(SourceError::ResourceRefUnsupported);
        }
        Err(SourceError::InvalidSpec(
            "chart: Required value: must not be empty: either ref, fromResource, helmChartRepo or resourceRef must be set"
                .into(),
        ))
    }
}

/// Reads `helmChartRepoCredentials` from a Context's `configurations`.
pub fn helm_repo_credentials(
    configurations: &std::collections::BTreeMap<String, Value>,
) -> Result<HelmChartRepoCredentials, SourceError> {
    match configurations.get(HELM_CHART_REPO_CREDENTIALS_KEY) {
        None => Ok(HelmChartRepoCredentials::default()),
        Some(raw) => serde_json::from_value(raw.clone()).map_err(|e| SourceError::Credentials {
            what: format!("configurations.{HELM_CHART_REPO_CREDENTIALS_KEY}"),
            detail: format!("cannot be parsed: {e}"),
        }),
    }
}

/// Names of the Secrets (in the Context's namespace) that `helmChartRepoCredentials` refers to
/// through `secretRef`: the deployer reads these and passes them in the fetch context.
pub fn helm_repo_secret_names(
    configurations: &std::collections::BTreeMap<String, Value>,
) -> Vec<String> {
    let mut names: Vec<String> = helm_repo_credentials(configurations)
        .map(|c| {
            c.auths
                .into_iter()
                .filter_map(|a| a.secret_ref.map(|r| r.name))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: &str) -> ChartSpec {
        serde_json::from_str(json).expect("chart spec parses")
    }

    #[test]
    fn landscaper_field_names_round_trip() {
        let text = r#"{"ref":"example.com/charts/a:1.0.0","archive":{"raw":"abc","remote":{"url":"https://x/y.tgz"}},"helmChartRepo":{"helmChartRepoUrl":"https://r","helmChartName":"n","helmChartVersion":"1"},"resourceRef":"a2V5"}"#;
        let parsed = spec(text);
        assert_eq!(parsed.reference, "example.com/charts/a:1.0.0");
        assert_eq!(
            parsed
                .helm_chart_repo
                .as_ref()
                .map(|r| r.helm_chart_name.as_str()),
            Some("n")
        );
        let back = serde_json::to_string(&parsed).expect("serialises");
        assert_eq!(
            serde_json::from_str::<Value>(&back).ok(),
            serde_json::from_str::<Value>(text).ok()
        );
    }

    #[test]
    fn archive_wins_then_ref_then_repo() {
        let s = spec(r#"{"ref":"r:1","archive":{"raw":"abc"}}"#);
        assert_eq!(s.source().ok(), Some(ChartSource::Raw("abc")));
        let s = spec(
            r#"{"ref":"r:1","helmChartRepo":{"helmChartRepoUrl":"u","helmChartName":"n","helmChartVersion":"1"}}"#,
        );
        assert_eq!(s.source().ok(), Some(ChartSource::Oci("r:1")));
        let s = spec(r#"{"ref":"local://charts/app"}"#);
        assert_eq!(s.source().ok(), Some(ChartSource::Local("charts/app")));
    }

    #[test]
    fn rejected_sources_say_why() {
        let err = spec(r#"{"fromResource":{"resourceName":"x"}}"#)
            .source()
            .expect_err("fromResource is rejected");
        assert_eq!(err.to_string(), "chart.fromResource is no longer supported");
        let err = spec(r#"{"resourceRef":"a2V5"}"#)
            .source()
            .expect_err("resourceRef is rejected");
        assert!(err.to_string().contains("needs component support"), "{err}");
        assert!(!err.is_retryable());
        let err = spec("{}").source().expect_err("empty chart");
        assert!(err.to_string().contains("must not be empty"), "{err}");
        let err = spec(r#"{"archive":{"remote":{}}}"#)
            .source()
            .expect_err("remote without url");
        assert!(
            err.to_string().contains("chart.archive.remote.url"),
            "{err}"
        );
        let err = spec(r#"{"helmChartRepo":{"helmChartRepoUrl":"u","helmChartName":"n"}}"#)
            .source()
            .expect_err("repo without version");
        assert!(err.to_string().contains("helmChartVersion"), "{err}");
    }

    #[test]
    fn credential_field_names_as_landscaper() {
        let text = r#"{"auths":[{"url":"https://r","customCAData":"PEM","authHeader":"Basic x","secretRef":{"name":"s","key":"k"}}]}"#;
        let parsed: HelmChartRepoCredentials = serde_json::from_str(text).expect("parses");
        assert_eq!(parsed.auths[0].custom_ca_data, "PEM");
        let back = serde_json::to_value(&parsed).expect("serialises");
        assert_eq!(Some(back), serde_json::from_str::<Value>(text).ok());
    }

    #[test]
    fn secret_names_of_repo_credentials() {
        let configurations: std::collections::BTreeMap<String, Value> = serde_json::from_str(
            r#"{"helmChartRepoCredentials":{"auths":[{"url":"https://a","secretRef":{"name":"s2"}},{"url":"https://b","authHeader":"Basic eDp5"},{"url":"https://c","secretRef":{"name":"s1","key":"k"}}]}}"#,
        )
        .expect("parses");
        assert_eq!(helm_repo_secret_names(&configurations), vec!["s1", "s2"]);
    }
}
