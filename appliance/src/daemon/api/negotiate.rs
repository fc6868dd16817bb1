//! Request options: the list/watch query parameters and `Accept` header negotiation.

use std::collections::HashMap;
use std::time::Duration;

use axum::http::{HeaderMap, header};
use landscaper_store::{LabelSelector, ObjectKey};
use serde_json::Value;

use super::status::ApiError;

/// One entry of an `Accept` header: `type/subtype;param=value;...`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct MediaRange {
    essence: String,
    params: HashMap<String, String>,
}

fn media_ranges(headers: &HeaderMap) -> Vec<MediaRange> {
    let accept = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",");
    accept
        .split(',')
        .filter(|r| !r.trim().is_empty())
        .map(|range| {
            let mut parts = range.split(';');
            let essence = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
            let params = parts
                .filter_map(|p| {
                    let (k, v) = p.split_once('=')?;
                    Some((k.trim().to_string(), v.trim().trim_matches('"').to_string()))
                })
                .collect();
            MediaRange { essence, params }
        })
        .collect()
}

fn is_json(essence: &str) -> bool {
    matches!(essence, "application/json" | "application/*" | "*/*")
}

/// How a read answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Representation {
    /// The objects themselves (or a `<Kind>List`).
    Object,
    /// A `meta.k8s.io` `Table` of the given version (`v1` or `v1beta1`).
    Table { version: &'static str },
}

/// Picks the first entry of the `Accept` header this server can produce, as kube-apiserver
/// does: `application/json;as=Table;g=meta.k8s.io;v=v1` gives a table, plain JSON the objects.
/// Unknown transformations (`as=PartialObjectMetadata`, protobuf) are skipped; if nothing is
/// left, the answer is 406.
pub fn representation(headers: &HeaderMap) -> Result<Representation, ApiError> {
    let ranges = media_ranges(headers);
    if ranges.is_empty() {
        return Ok(Representation::Object);
    }
    for range in &ranges {
        if !is_json(&range.essence) {
            continue;
        }
        match range.params.get("as").map(String::as_str) {
            None => return Ok(Representation::Object),
            Some("Table") if range.params.get("g").map(String::as_str) == Some("meta.k8s.io") => {
                match range.params.get("v").map(String::as_str) {
                    Some("v1") => return Ok(Representation::Table { version: "v1" }),
                    Some("v1beta1") => return Ok(Representation::Table { version: "v1beta1" }),
                    _ => continue,
                }
            }
            Some(_) => continue,
        }
    }
    Err(ApiError::not_acceptable(format!(
        "only the following media types are accepted: application/json, \
         application/json;as=Table;v=v1;g=meta.k8s.io (asked for {:?})",
        headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    )))
}

/// Which discovery document `/api` and `/apis` answer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiscoveryFormat {
    /// `APIVersions` / `APIGroupList`.
    Legacy,
    /// `apidiscovery.k8s.io` `APIGroupDiscoveryList` of the given version (`v2` or `v2beta1`).
    Aggregated { version: &'static str },
}

pub fn discovery_format(headers: &HeaderMap) -> DiscoveryFormat {
    for range in media_ranges(headers) {
        if !is_json(&range.essence) {
            continue;
        }
        let param = |k: &str| range.params.get(k).map(String::as_str);
        match param("as") {
            None => return DiscoveryFormat::Legacy,
            Some("APIGroupDiscoveryList") if param("g") == Some("apidiscovery.k8s.io") => {
                match param("v") {
                    Some("v2") => return DiscoveryFormat::Aggregated { version: "v2" },
                    Some("v2beta1") => return DiscoveryFormat::Aggregated { version: "v2beta1" },
                    _ => {}
                }
            }
            Some(_) => {}
        }
    }
    DiscoveryFormat::Legacy
}

/// A field selector term's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldOp {
    Equals,
    NotEquals,
}

/// The supported field of a field selector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Name,
    Namespace,
    /// A further field label one resource supports (see [`FieldSelector::parse_with`]), as
    /// its dotted JSON path, e.g. `involvedObject.name` of Events.
    Path(&'static str),
}

/// A parsed `fieldSelector`: `metadata.name` and `metadata.namespace` with `=`, `==` and `!=`,
/// which every resource of kube-apiserver supports (and `kubectl get NAME --watch` uses).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    pub terms: Vec<(Field, FieldOp, String)>,
}

impl FieldSelector {
    pub fn parse(input: &str) -> Result<Self, ApiError> {
        Self::parse_with(input, &[])
    }

    /// [`parse`](Self::parse) that also accepts the field labels `extra` (dotted JSON paths
    /// of string fields, e.g. `involvedObject.kind`) as [`Field::Path`]; selectors with such
    /// terms must be matched with [`matches_object`](Self::matches_object).
    pub fn parse_with(input: &str, extra: &[&'static str]) -> Result<Self, ApiError> {
        let mut terms = Vec::new();
        for term in split_unescaped(input, ',') {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            let (field, op, value) = if let Some((f, v)) = term.split_once("!=") {
                (f, FieldOp::NotEquals, v)
            } else if let Some((f, v)) = term.split_once("==") {
                (f, FieldOp::Equals, v)
            } else if let Some((f, v)) = term.split_once('=') {
                (f, FieldOp::Equals, v)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid field selector: invalid selector: '{input}'; can't understand '{term}'"
                )));
            };
            let field = match field.trim() {
                "metadata.name" => Field::Name,
                "metadata.namespace" => Field::Namespace,
                other => match extra.iter().find(|e| **e == other) {
                    Some(path) => Field::Path(path),
                    None => {
                        return Err(ApiError::bad_request(format!(
                            "field label not supported: {other}"
                        )));
                    }
                },
            };
            terms.push((field, op, unescape(value.trim())));
        }
        Ok(FieldSelector { terms })
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Matches an object's key (the supported fields never change).
    pub fn matches_key(&self, key: &ObjectKey) -> bool {
        self.matches_fields(&key.name, &key.namespace)
    }

    pub fn matches_object(&self, object: &Value) -> bool {
        self.matches(|field| match field {
            Field::Name => landscaper_store::object::name(object),
            Field::Namespace => landscaper_store::object::namespace(object),
            // A missing field is the empty string, as for kube-apiserver's field sets.
            Field::Path(path) => path
                .split('.')
                .try_fold(object, |v, key| v.get(key))
                .and_then(Value::as_str)
                .unwrap_or_default(),
        })
    }

    /// Matches by name and namespace; [`Field::Path`] terms only match the empty string
    /// here (use [`matches_object`](Self::matches_object) for them).
    pub fn matches_fields(&self, name: &str, namespace: &str) -> bool {
        self.matches(|field| match field {
            Field::Name => name,
            Field::Namespace => namespace,
            Field::Path(_) => "",
        })
    }

    fn matches<'a>(&self, actual: impl Fn(Field) -> &'a str) -> bool {
        self.terms
            .iter()
            .all(|(field, op, value)| (actual(*field) == value) == (*op == FieldOp::Equals))
    }

    /// The name an equality term pins, if any.
    pub fn name(&self) -> Option<&str> {
        self.terms.iter().find_map(|(f, op, v)| {
            (*f == Field::Name && *op == FieldOp::Equals).then_some(v.as_str())
        })
    }
}

/// Splits on `sep` not preceded by a backslash (the field selector escape).
fn split_unescaped(input: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in input.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            c if c == sep && !escaped => {
                parts.push(&input[start..i]);
                start = i + c.len_utf8();
            }
            _ => escaped = false,
        }
    }
    parts.push(&input[start..]);
    parts
}

fn unescape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// How much of each object a table row carries (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    None,
    /// `PartialObjectMetadata` (the default): enough for kubectl's NAMESPACE and label columns.
    #[default]
    Metadata,
    Object,
}

/// Where a watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchStart {
    /// `resourceVersion` unset or `0`: synthetic ADDED events for the current objects first
    /// (unless `sendInitialEvents=false`).
    Now { initial_events: bool },
    /// `resourceVersion=N`: the changes after N.
    After(u64),
}

/// The query parameters of reads (`ListOptions`/`GetOptions` of the Kubernetes API).
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    pub label_selector: LabelSelector,
    pub field_selector: FieldSelector,
    pub watch: bool,
    /// `resourceVersion` as given.
    pub resource_version: Option<String>,
    pub timeout: Option<Duration>,
    pub allow_bookmarks: bool,
    pub send_initial_events: Option<bool>,
    pub include_object: IncludeObject,
    /// Show Secret values and Target kubeconfigs: set for authorised callers (token or the
    /// Unix socket), never from the query.
    pub reveal_secrets: bool,
}

fn boolean(params: &HashMap<String, String>, name: &str) -> Result<Option<bool>, ApiError> {
    match params.get(name).map(String::as_str) {
        None => Ok(None),
        Some("true" | "1" | "True" | "TRUE") => Ok(Some(true)),
        Some("false" | "0" | "False" | "FALSE" | "") => Ok(Some(false)),
        Some(other) => Err(ApiError::bad_request(format!(
            "invalid value for {name}: {other:?} (expected true or false)"
        ))),
    }
}

impl ReadOptions {
    /// Parses the query. `limit` is accepted and ignored: like any server may, this one
    /// returns complete lists and never sets `continue`; a non-empty `continue` is rejected.
    pub fn from_query(params: &HashMap<String, String>) -> Result<Self, ApiError> {
        let label_selector = match params.get("labelSelector") {
            Some(s) => LabelSelector::parse(s).map_err(|e| {
                ApiError::bad_request(format!("unable to parse requirement: {}", e.message))
            })?,
            None => LabelSelector::everything(),
        };
        let field_selector = match params.get("fieldSelector") {
            Some(s) => FieldSelector::parse(s)?,
            None => FieldSelector::default(),
        };
        if params.get("continue").is_some_and(|c| !c.is_empty()) {
            return Err(ApiError::bad_request(
                "continue key is not valid: this server returns complete lists and issues no continue tokens",
            ));
        }
        let timeout = match params.get("timeoutSeconds") {
            Some(t) => Some(Duration::from_secs(t.parse::<u64>().map_err(|_| {
                ApiError::bad_request(format!("invalid timeoutSeconds {t:?}"))
            })?)),
            None => None,
        };
        let include_object = match params.get("includeObject").map(String::as_str) {
            None | Some("" | "Metadata") => IncludeObject::Metadata,
            Some("None") => IncludeObject::None,
            Some("Object") => IncludeObject::Object,
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "includeObject: Unsupported value: {other:?}: supported values: \"Metadata\", \"None\", \"Object\""
                )));
            }
        };
        Ok(ReadOptions {
            label_selector,
            field_selector,
            watch: boolean(params, "watch")?.unwrap_or(false),
            resource_version: params.get("resourceVersion").cloned(),
            timeout,
            allow_bookmarks: boolean(params, "allowWatchBookmarks")?.unwrap_or(false),
            send_initial_events: boolean(params, "sendInitialEvents")?,
            include_object,
            reveal_secrets: false,
        })
    }

    /// Where a watch with these options starts.
    pub fn watch_start(&self) -> Result<WatchStart, ApiError> {
        match self.resource_version.as_deref() {
            None | Some("" | "0") => Ok(WatchStart::Now {
                initial_events: self.send_initial_events.unwrap_or(true),
            }),
            Some(rv) => {
                let revision = rv.parse::<u64>().map_err(|_| {
                    ApiError::bad_request(format!("invalid resource version: {rv:?}"))
                })?;
                if self.send_initial_events == Some(true) {
                    Ok(WatchStart::Now {
                        initial_events: true,
                    })
                } else {
                    Ok(WatchStart::After(revision))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn accept(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn negotiates_tables_like_kube_apiserver() {
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(
            representation(&accept(kubectl)).unwrap(),
            Representation::Table { version: "v1" }
        );
        assert_eq!(
            representation(&accept("application/json;as=Table;v=v1beta1;g=meta.k8s.io")).unwrap(),
            Representation::Table { version: "v1beta1" }
        );
        assert_eq!(
            representation(&accept(
                "application/vnd.kubernetes.protobuf,application/json"
            ))
            .unwrap(),
            Representation::Object
        );
        assert_eq!(
            representation(&HeaderMap::new()).unwrap(),
            Representation::Object
        );
        assert!(representation(&accept("application/vnd.kubernetes.protobuf")).is_err());
        assert!(
            representation(&accept(
                "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
            ))
            .is_err()
        );
    }

    #[test]
    fn negotiates_aggregated_discovery() {
        let kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(
            discovery_format(&accept(kubectl)),
            DiscoveryFormat::Aggregated { version: "v2" }
        );
        assert_eq!(
            discovery_format(&accept(
                "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
            )),
            DiscoveryFormat::Aggregated { version: "v2beta1" }
        );
        assert_eq!(
            discovery_format(&accept("application/json")),
            DiscoveryFormat::Legacy
        );
        assert_eq!(discovery_format(&HeaderMap::new()), DiscoveryFormat::Legacy);
    }

    #[test]
    fn parses_field_selectors() {
        let s = FieldSelector::parse("metadata.name=a,metadata.namespace!=b").unwrap();
        assert!(s.matches_fields("a", "c"));
        assert!(!s.matches_fields("a", "b"));
        assert!(!s.matches_fields("x", "c"));
        assert_eq!(s.name(), Some("a"));
        assert!(
            FieldSelector::parse("metadata.name==a")
                .unwrap()
                .matches_fields("a", "")
        );
        assert!(FieldSelector::parse("").unwrap().is_empty());
        let e = FieldSelector::parse("spec.type=x").unwrap_err();
        assert_eq!(e.code.as_u16(), 400);
        assert_eq!(e.message, "field label not supported: spec.type");
        assert!(FieldSelector::parse("metadata.name").is_err());
        assert_eq!(
            FieldSelector::parse(r"metadata.name=a\,b").unwrap().name(),
            Some("a,b")
        );
    }

    #[test]
    fn parses_extra_field_labels_of_one_resource() {
        let extra = ["involvedObject.name", "type"];
        let s = FieldSelector::parse_with("involvedObject.name=a,type!=Warning", &extra).unwrap();
        let event = serde_json::json!({"metadata": {"name": "a.1"},
            "involvedObject": {"name": "a"}, "type": "Normal"});
        assert!(s.matches_object(&event));
        let warning = serde_json::json!({"involvedObject": {"name": "a"}, "type": "Warning"});
        assert!(!s.matches_object(&warning));
        // A missing field is the empty string.
        let s = FieldSelector::parse_with("involvedObject.name=", &extra).unwrap();
        assert!(s.matches_object(&serde_json::json!({})));
        // Other resources do not know the label.
        assert!(FieldSelector::parse("involvedObject.name=a").is_err());
        let e = FieldSelector::parse_with("reason=x", &extra).unwrap_err();
        assert_eq!(e.message, "field label not supported: reason");
    }

    #[test]
    fn parses_watch_starts() {
        let opts = |pairs: &[(&str, &str)]| {
            ReadOptions::from_query(
                &pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )
            .unwrap()
        };
        assert_eq!(
            opts(&[("watch", "true")]).watch_start().unwrap(),
            WatchStart::Now {
                initial_events: true
            }
        );
        assert_eq!(
            opts(&[("watch", "1"), ("resourceVersion", "7")])
                .watch_start()
                .unwrap(),
            WatchStart::After(7)
        );
        assert!(
            opts(&[("watch", "1"), ("resourceVersion", "x")])
                .watch_start()
                .is_err()
        );
        assert!(opts(&[("watch", "1")]).watch);
        assert!(
            ReadOptions::from_query(&[("labelSelector".to_string(), "a in (b".to_string())].into())
                .is_err()
        );
        assert!(
            ReadOptions::from_query(&[("continue".to_string(), "abc".to_string())].into()).is_err()
        );
    }
}
