//! Helm 3.19's release record (`helm.sh/helm/v3/pkg/release` and `pkg/chart`) with the JSON
//! names, field order and emptiness rules of Go's `encoding/json`: the real `helm` reads what
//! the appliance writes and the other way round.
//!
//! Go details kept: `helm.sh/helm/v3/pkg/time` writes a zero time as `""` (hence
//! `"deleted": ""` in every record), `[]byte` fields (chart files, schema) are base64 strings,
//! nil slices and maps without `omitempty` are `null` (`lock`, `schema`, `files`), Go map keys
//! are sorted (serde_json's default map), and whole numbers are written without a fraction.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// A release revision as Helm stores it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Release {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<Info>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart: Option<ChartRecord>,
    /// The values the user supplied (not coalesced with the chart's).
    #[serde(
        default,
        skip_serializing_if = "Map::is_empty",
        deserialize_with = "null_as_empty_map"
    )]
    pub config: Map<String, Value>,
    /// The rendered manifests (no hooks, no CRDs of `crds/`), `---\n# Source: ...` documents.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub manifest: String,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_empty_vec"
    )]
    pub hooks: Vec<Hook>,
    /// The revision, from 1.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub version: u32,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// User labels: not in the JSON, stored as labels of the Secret (`json:"-"`).
    #[serde(skip)]
    pub labels: BTreeMap<String, String>,
}

impl Release {
    /// The status of the revision (`unknown` without info).
    pub fn status(&self) -> Status {
        self.info.as_ref().map_or(Status::Unknown, |i| i.status)
    }

    pub fn info_mut(&mut self) -> &mut Info {
        self.info.get_or_insert_with(Info::default)
    }

    /// `<chart name>-<chart version>` as `helm list` shows it.
    pub fn chart_label(&self) -> String {
        self.chart
            .as_ref()
            .and_then(|c| c.metadata.as_ref())
            .map(|m| format!("{}-{}", m.name, m.version))
            .unwrap_or_default()
    }
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

fn null_as_empty_map<'de, D: Deserializer<'de>>(d: D) -> Result<Map<String, Value>, D::Error> {
    Ok(Option::<Map<String, Value>>::deserialize(d)?.unwrap_or_default())
}

fn null_as_empty_vec<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// `release.Info`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Info {
    #[serde(default, with = "helm_time", skip_serializing_if = "Option::is_none")]
    pub first_deployed: Option<jiff::Timestamp>,
    #[serde(default, with = "helm_time", skip_serializing_if = "Option::is_none")]
    pub last_deployed: Option<jiff::Timestamp>,
    /// Always written (`""` while not deleted).
    #[serde(default, with = "helm_time")]
    pub deleted: Option<jiff::Timestamp>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default, skip_serializing_if = "Status::is_empty")]
    pub status: Status,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub notes: String,
}

/// `release.Status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Status {
    /// Also any status this version does not know.
    #[default]
    Unknown,
    Deployed,
    Uninstalled,
    Superseded,
    Failed,
    Uninstalling,
    PendingInstall,
    PendingUpgrade,
    PendingRollback,
}

impl Status {
    pub const ALL: [Status; 9] = [
        Status::Unknown,
        Status::Deployed,
        Status::Uninstalled,
        Status::Superseded,
        Status::Failed,
        Status::Uninstalling,
        Status::PendingInstall,
        Status::PendingUpgrade,
        Status::PendingRollback,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Unknown => "unknown",
            Status::Deployed => "deployed",
            Status::Uninstalled => "uninstalled",
            Status::Superseded => "superseded",
            Status::Failed => "failed",
            Status::Uninstalling => "uninstalling",
            Status::PendingInstall => "pending-install",
            Status::PendingUpgrade => "pending-upgrade",
            Status::PendingRollback => "pending-rollback",
        }
    }

    pub fn parse(text: &str) -> Status {
        Status::ALL
            .into_iter()
            .find(|s| s.as_str() == text)
            .unwrap_or(Status::Unknown)
    }

    /// `Status.IsPending`: an operation on the release is (or was left) in flight.
    pub fn is_pending(self) -> bool {
        matches!(
            self,
            Status::PendingInstall | Status::PendingUpgrade | Status::PendingRollback
        )
    }

    /// Go's `omitempty` on a string type: only `""` is left out; `unknown` is written.
    fn is_empty(&self) -> bool {
        false
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Status {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Status {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Status, D::Error> {
        Ok(Status::parse(&String::deserialize(d)?))
    }
}

/// `chart.Chart` as it is marshalled (the subcharts are not part of a release record).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChartRecord {
    pub metadata: Option<Metadata>,
    pub lock: Option<Lock>,
    #[serde(default)]
    pub templates: Option<Vec<ChartFile>>,
    #[serde(default)]
    pub values: Option<Map<String, Value>>,
    #[serde(default, with = "go_bytes")]
    pub schema: Option<Vec<u8>>,
    #[serde(default)]
    pub files: Option<Vec<ChartFile>>,
}

/// `chart.File`: the data is base64 in JSON.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChartFile {
    pub name: String,
    #[serde(with = "go_bytes_vec")]
    pub data: Vec<u8>,
}

/// `chart.Metadata` (Chart.yaml), in Go's field order.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub home: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maintainers: Vec<Maintainer>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub icon: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub condition: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tags: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub app_version: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deprecated: bool,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kube_version: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<Dependency>,
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub chart_type: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Maintainer {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub email: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub url: String,
}

/// `chart.Dependency`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Dependency {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    #[serde(default)]
    pub repository: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub condition: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub enabled: bool,
    #[serde(
        default,
        rename = "import-values",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub import_values: Vec<Value>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub alias: String,
}

/// `chart.Lock` (Chart.lock).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Lock {
    /// A Go `time.Time` as Go marshals it (RFC 3339 with the file's offset, fraction without
    /// trailing zeros, `Z` for UTC); empty is Go's zero time.
    #[serde(default, with = "go_time")]
    pub generated: String,
    #[serde(default)]
    pub digest: String,
    #[serde(default, deserialize_with = "null_as_empty_vec")]
    pub dependencies: Vec<Dependency>,
}

/// `release.Hook` (`pkg/release/hook.go`): the one hook type of the appliance, read from and
/// written to release records, built by [`crate::helm::hooks::hooks_from_manifests`] and run by
/// [`crate::helm::hooks::run_hooks`]. Events and delete policies stay the strings Helm stores.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Hook {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// The template path (`CHART/templates/x.yaml`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub manifest: String,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_empty_vec"
    )]
    pub events: Vec<String>,
    /// Written even when the hook never ran (a struct is never empty for Go).
    #[serde(default)]
    pub last_run: HookExecution,
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub weight: i64,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_empty_vec"
    )]
    pub delete_policies: Vec<String>,
    /// `output_log_policies` (Helm 3.15+).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_empty_vec"
    )]
    pub output_log_policies: Vec<String>,
}

fn is_zero_i64(v: &i64) -> bool {
    *v == 0
}

/// `release.HookExecution`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HookExecution {
    #[serde(default, with = "helm_time")]
    pub started_at: Option<jiff::Timestamp>,
    #[serde(default, with = "helm_time")]
    pub completed_at: Option<jiff::Timestamp>,
    /// `Unknown`, `Running`, `Succeeded`, `Failed`, or `""` before the first run.
    #[serde(default)]
    pub phase: HookPhase,
}

/// `release.HookPhase`; `None` is the zero value (`""`) of a hook that never ran. A phase
/// this version does not know reads as `Unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum HookPhase {
    #[default]
    #[serde(rename = "")]
    None,
    Running,
    Succeeded,
    Failed,
    #[serde(other)]
    Unknown,
}

/// `helm.sh/helm/v3/pkg/time.Time`: RFC 3339 with nanoseconds, `""` for the zero time.
mod helm_time {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &Option<jiff::Timestamp>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            None => s.serialize_str(""),
            Some(t) => s.serialize_str(&super::go_rfc3339_nano(*t)),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<jiff::Timestamp>, D::Error> {
        let text = Option::<String>::deserialize(d)?.unwrap_or_default();
        // Go's zero time written by an older encoder.
        if text.is_empty() || text.starts_with("0001-01-01T00:00:00") {
            return Ok(None);
        }
        text.parse::<jiff::Timestamp>()
            .map(Some)
            .map_err(serde::de::Error::custom)
    }
}

/// A plain Go `time.Time` (not Helm's `time` package, which writes the zero time as `""`).
mod go_time {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &str, s: S) -> Result<S::Ok, S::Error> {
        if t.is_empty() {
            s.serialize_str("0001-01-01T00:00:00Z")
        } else {
            s.serialize_str(&super::go_time_text(t))
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        let text = Option::<String>::deserialize(d)?.unwrap_or_default();
        if text == "0001-01-01T00:00:00Z" {
            return Ok(String::new());
        }
        Ok(super::go_time_text(&text))
    }
}

/// An RFC 3339 time as Go re-marshals it after parsing: the fraction without trailing zeros,
/// a zero offset as `Z`, any other offset kept. Text that is not such a time stays as it is.
pub fn go_time_text(text: &str) -> String {
    if text.parse::<jiff::Timestamp>().is_err() || text.len() < 20 || !text.is_char_boundary(19) {
        return text.to_string();
    }
    let (seconds, rest) = text.split_at(19);
    let (fraction, zone) = match rest.strip_prefix('.') {
        Some(r) => {
            let end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
            (r[..end].trim_end_matches('0'), &r[end..])
        }
        None => ("", rest),
    };
    let zone = match zone {
        "z" | "Z" | "+00:00" | "-00:00" => "Z",
        other => other,
    };
    let fraction = if fraction.is_empty() {
        String::new()
    } else {
        format!(".{fraction}")
    };
    format!("{seconds}{fraction}{zone}")
}

/// Go's `time.RFC3339Nano` of a UTC time: trailing zeros of the fraction dropped, `Z`.
pub fn go_rfc3339_nano(t: jiff::Timestamp) -> String {
    let seconds = t.strftime("%Y-%m-%dT%H:%M:%S").to_string();
    let nanos = t.subsec_nanosecond();
    if nanos == 0 {
        return format!("{seconds}Z");
    }
    let fraction = format!("{nanos:09}");
    format!("{seconds}.{}Z", fraction.trim_end_matches('0'))
}

/// A Go `[]byte`: base64 (standard, padded) or `null`.
mod go_bytes {
    use base64::Engine as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(b: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        match b {
            None => s.serialize_none(),
            Some(b) => s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(b)),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u8>>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(text) => base64::engine::general_purpose::STANDARD
                .decode(text)
                .map(Some)
                .map_err(serde::de::Error::custom),
        }
    }
}

mod go_bytes_vec {
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
        super::go_bytes::serialize(&Some(b.to_vec()), s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        Ok(super::go_bytes::deserialize(d)?.unwrap_or_default())
    }
}

/// Numbers as Go's `encoding/json` writes `float64`s that hold whole numbers (`1`, not
/// `1.0`): chart values are read as float64 by Helm.
pub fn go_numbers(value: &mut Value) {
    match value {
        Value::Number(n) => {
            if let Some(f) = n.as_f64()
                && !n.is_i64()
                && !n.is_u64()
                && f.fract() == 0.0
                && f.abs() < 1e15
            {
                // Exact for |f| < 2^53.
                #[allow(clippy::cast_possible_truncation)]
                let i = f as i64;
                *n = i.into();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(go_numbers),
        Value::Object(map) => map.values_mut().for_each(go_numbers),
        _ => {}
    }
}

impl ChartRecord {
    /// The record of a loaded chart (top level only, as Helm marshals it, with its
    /// `Chart.lock`; a lock whose fields do not fit `chart.Lock` is left out).
    pub fn of(chart: &landscaper_charts::chart::Chart) -> ChartRecord {
        let files = |files: &[landscaper_charts::chart::File]| -> Option<Vec<ChartFile>> {
            if files.is_empty() {
                return None;
            }
            Some(
                files
                    .iter()
                    .map(|f| ChartFile {
                        name: f.name.clone(),
                        data: f.data.to_vec(),
                    })
                    .collect(),
            )
        };
        let mut values = Value::Object(chart.values.clone());
        go_numbers(&mut values);
        let values = match values {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        ChartRecord {
            metadata: Some(Metadata::of(&chart.metadata)),
            lock: chart
                .lock
                .as_ref()
                .and_then(|lock| serde_json::from_value(lock.clone()).ok()),
            templates: files(&chart.templates),
            values: Some(values),
            schema: chart.schema.as_ref().map(|s| s.to_vec()),
            files: files(&chart.files),
        }
    }
}

impl Metadata {
    pub fn of(m: &landscaper_charts::chart::Metadata) -> Metadata {
        Metadata {
            name: m.name.clone(),
            home: m.home.clone(),
            sources: m.sources.clone(),
            version: m.version.clone(),
            description: m.description.clone(),
            keywords: m.keywords.clone(),
            maintainers: m
                .maintainers
                .iter()
                .map(|x| Maintainer {
                    name: x.name.clone(),
                    email: x.email.clone(),
                    url: x.url.clone(),
                })
                .collect(),
            icon: m.icon.clone(),
            api_version: m.api_version.clone(),
            condition: m.condition.clone(),
            tags: m.tags.clone(),
            app_version: m.app_version.clone(),
            deprecated: m.deprecated,
            annotations: m.annotations.clone(),
            kube_version: m.kube_version.clone(),
            dependencies: m
                .dependencies
                .iter()
                .map(|d| Dependency {
                    name: d.name.clone(),
                    version: d.version.clone(),
                    repository: d.repository.clone(),
                    condition: d.condition.clone(),
                    tags: d.tags.clone(),
                    enabled: d.enabled,
                    import_values: d.import_values.clone(),
                    alias: d.alias.clone(),
                })
                .collect(),
            chart_type: m.chart_type.clone(),
        }
    }
}
