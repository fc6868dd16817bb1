//! Server-side printing: `meta.k8s.io/v1` `Table` objects with the printer columns of
//! Landscaper's CRDs (`additionalPrinterColumns`), of kube-apiserver's printers for ConfigMaps,
//! Secrets and Namespaces, and the appliance's own for ManifestFiles and TransportArchives. Cells follow
//! kube-apiserver: a missing value is `null`, dates become ages like `5m` or `3d4h`.

use jiff::Timestamp;
use landscaper_store::Kind;
use serde_json::{Map, Value, json};

use super::negotiate::IncludeObject;
use super::resources::Resource;

/// One printer column and how to compute its cell.
pub struct Column {
    pub name: &'static str,
    /// `string`, `integer` or `date`.
    pub kind: &'static str,
    pub format: &'static str,
    pub description: &'static str,
    /// 0 is shown by default, higher only with `-o wide`.
    pub priority: i64,
    pub cell: fn(&Value, Timestamp) -> Value,
}

const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const AGE_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.";

const NAME: Column = Column {
    name: "Name",
    kind: "string",
    format: "name",
    description: NAME_DESCRIPTION,
    priority: 0,
    cell: |o, _| Value::String(landscaper_store::object::name(o).to_string()),
};

/// The `Age` column of a CRD (type `date`).
const CRD_AGE: Column = Column {
    name: "Age",
    kind: "date",
    format: "",
    description: "Custom resource definition column (in JSONPath format): .metadata.creationTimestamp",
    priority: 0,
    cell: |o, now| age(o, now),
};

/// The `Age` column of kube-apiserver's built-in printers (type `string`).
const CORE_AGE: Column = Column {
    name: "Age",
    kind: "string",
    format: "",
    description: AGE_DESCRIPTION,
    priority: 0,
    cell: |o, now| age(o, now),
};

const fn crd_string(
    name: &'static str,
    description: &'static str,
    cell: fn(&Value, Timestamp) -> Value,
) -> Column {
    Column {
        name,
        kind: "string",
        format: "",
        description,
        priority: 0,
        cell,
    }
}

const PHASE: Column = crd_string(
    "Phase",
    "Custom resource definition column (in JSONPath format): .status.phase",
    |o, _| string_at(o, &["status", "phase"]),
);
const EXPORT_REF: Column = crd_string(
    "ExportRef",
    "Custom resource definition column (in JSONPath format): .status.exportRef.name",
    |o, _| string_at(o, &["status", "exportRef", "name"]),
);
const TYPE: Column = crd_string(
    "Type",
    "Custom resource definition column (in JSONPath format): .spec.type",
    |o, _| string_at(o, &["spec", "type"]),
);
const CONTEXT_LABEL: Column = crd_string(
    "Context",
    "Custom resource definition column (in JSONPath format): .metadata.labels['data\\.landscaper\\.gardener\\.cloud\\/context']",
    |o, _| label(o, "data.landscaper.gardener.cloud/context"),
);
const KEY_LABEL: Column = crd_string(
    "Key",
    "Custom resource definition column (in JSONPath format): .metadata.labels['data\\.landscaper\\.gardener\\.cloud\\/key']",
    |o, _| label(o, "data.landscaper.gardener.cloud/key"),
);

const INSTALLATION: &[Column] = &[
    NAME,
    PHASE,
    crd_string(
        "Execution",
        "Custom resource definition column (in JSONPath format): .status.executionRef.name",
        |o, _| string_at(o, &["status", "executionRef", "name"]),
    ),
    CRD_AGE,
];
const EXECUTION: &[Column] = &[NAME, PHASE, EXPORT_REF, CRD_AGE];
const DEPLOY_ITEM: &[Column] = &[NAME, TYPE, PHASE, EXPORT_REF, CRD_AGE];
const DATA_OBJECT: &[Column] = &[NAME, CONTEXT_LABEL, KEY_LABEL, CRD_AGE];
const TARGET: &[Column] = &[
    NAME,
    TYPE,
    CONTEXT_LABEL,
    KEY_LABEL,
    crd_string(
        "Idx",
        "Custom resource definition column (in JSONPath format): .metadata.labels['data\\.landscaper\\.gardener\\.cloud\\/index']",
        |o, _| label(o, "data.landscaper.gardener.cloud/index"),
    ),
    crd_string(
        "TMKey",
        "Custom resource definition column (in JSONPath format): .metadata.labels['data\\.landscaper\\.gardener\\.cloud\\/targetmapkey']",
        |o, _| label(o, "data.landscaper.gardener.cloud/targetmapkey"),
    ),
    CRD_AGE,
];
const CONTEXT: &[Column] = &[NAME, CRD_AGE];

const CONFIG_MAP: &[Column] = &[
    NAME,
    Column {
        name: "Data",
        kind: "string",
        format: "",
        description: "Data contains the configuration data.",
        priority: 0,
        cell: |o, _| Value::from(count(o, "data") + count(o, "binaryData")),
    },
    CORE_AGE,
];
const SECRET: &[Column] = &[
    NAME,
    Column {
        name: "Type",
        kind: "string",
        format: "",
        description: "Used to facilitate programmatic handling of secret data.",
        priority: 0,
        cell: |o, _| match o.get("type").and_then(Value::as_str) {
            Some(t) if !t.is_empty() => Value::String(t.to_string()),
            _ => Value::String("Opaque".into()),
        },
    },
    Column {
        name: "Data",
        kind: "string",
        format: "",
        description: "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'.",
        priority: 0,
        cell: |o, _| Value::from(secret_keys(o)),
    },
    CORE_AGE,
];
const NAMESPACE: &[Column] = &[
    NAME,
    Column {
        name: "Status",
        kind: "string",
        format: "",
        description: "The status of the namespace",
        priority: 0,
        cell: |o, _| string_at(o, &["status", "phase"]),
    },
    CORE_AGE,
];
const MANIFEST_FILE: &[Column] = &[
    NAME,
    Column {
        name: "Path",
        kind: "string",
        format: "",
        description: "Path of the file relative to the manifests folder.",
        priority: 0,
        cell: |o, _| string_at(o, &["spec", "path"]),
    },
    Column {
        name: "Phase",
        kind: "string",
        format: "",
        description: "Applied when the file's last revision was ingested, Error when it was rejected (the objects of its last good revision stay).",
        priority: 0,
        cell: |o, _| string_at(o, &["status", "phase"]),
    },
    Column {
        name: "Objects",
        kind: "integer",
        format: "",
        description: "Number of objects the file defines (as of its last good revision).",
        priority: 0,
        cell: |o, _| {
            Value::from(
                at(o, &["status", "objects"])
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len),
            )
        },
    },
    Column {
        name: "Error",
        kind: "string",
        format: "",
        description: "Why the last revision of the file was rejected (with line and column when known).",
        priority: 0,
        cell: |o, _| manifest_error(o),
    },
    CRD_AGE,
    Column {
        name: "Skipped",
        kind: "string",
        format: "",
        description: "Whether the file is disabled by a NAME.skip file beside it.",
        priority: 1,
        cell: |o, _| {
            let skipped = at(o, &["status", "skipped"])
                .and_then(Value::as_bool)
                .unwrap_or(false);
            Value::String(skipped.to_string())
        },
    },
    Column {
        name: "SHA256",
        kind: "string",
        format: "",
        description: "SHA-256 of the file content last ingested.",
        priority: 1,
        cell: |o, _| string_at(o, &["status", "sha256"]),
    },
];

/// The appliance's own printer for TransportArchives (issue 18).
const TRANSPORT_ARCHIVE: &[Column] = &[
    NAME,
    Column {
        name: "Path",
        kind: "string",
        format: "",
        description: "Path of the archive relative to the manifests folder.",
        priority: 0,
        cell: |o, _| string_at(o, &["spec", "path"]),
    },
    Column {
        name: "Phase",
        kind: "string",
        format: "",
        description: "Ready when the archive was read, Failed when it cannot be used.",
        priority: 0,
        cell: |o, _| string_at(o, &["status", "phase"]),
    },
    Column {
        name: "Components",
        kind: "string",
        format: "",
        description: "The component versions the archive holds (name:version).",
        priority: 0,
        cell: |o, _| {
            let held: Vec<String> = at(o, &["status", "componentVersions"])
                .and_then(Value::as_array)
                .map(|cvs| {
                    cvs.iter()
                        .map(|cv| {
                            format!(
                                "{}:{}",
                                cv["name"].as_str().unwrap_or_default(),
                                cv["version"].as_str().unwrap_or_default()
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            Value::String(held.join(","))
        },
    },
    Column {
        name: "Error",
        kind: "string",
        format: "",
        description: "Why the archive cannot be used.",
        priority: 0,
        cell: |o, _| string_at(o, &["status", "lastError"]),
    },
    CRD_AGE,
    Column {
        name: "Type",
        kind: "string",
        format: "",
        description: "OCM repository type: CommonTransportFormat or ComponentArchive.",
        priority: 1,
        cell: |o, _| string_at(o, &["status", "type"]),
    },
    Column {
        name: "Format",
        kind: "string",
        format: "",
        description: "How the archive is stored: directory, tar or tgz.",
        priority: 1,
        cell: |o, _| string_at(o, &["status", "format"]),
    },
    Column {
        name: "Size",
        kind: "integer",
        format: "",
        description: "Size of the archive in bytes.",
        priority: 1,
        cell: |o, _| at(o, &["status", "size"]).cloned().unwrap_or(Value::Null),
    },
];

/// kube-apiserver's printer for Events (`printEvent`), which answers as with `-o wide`: the
/// columns of priority 1 are only shown by `kubectl get events -o wide`.
const EVENT: &[Column] = &[
    Column {
        name: "Last Seen",
        kind: "string",
        format: "",
        description: "The time at which the most recent occurrence of this event was recorded.",
        priority: 0,
        cell: |o, now| event_age(o, "lastTimestamp", now),
    },
    Column {
        name: "Type",
        kind: "string",
        format: "",
        description: "Type of this event (Normal, Warning), new types could be added in the future",
        priority: 0,
        cell: |o, _| plain_string(o, &["type"]),
    },
    Column {
        name: "Reason",
        kind: "string",
        format: "",
        description: "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
        priority: 0,
        cell: |o, _| plain_string(o, &["reason"]),
    },
    Column {
        name: "Object",
        kind: "string",
        format: "",
        description: "The object that this event is about.",
        priority: 0,
        cell: |o, _| {
            let kind = at(o, &["involvedObject", "kind"])
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_lowercase();
            Value::String(
                match at(o, &["involvedObject", "name"]).and_then(Value::as_str) {
                    Some(name) if !name.is_empty() => format!("{kind}/{name}"),
                    _ => kind,
                },
            )
        },
    },
    Column {
        name: "Subobject",
        kind: "string",
        format: "",
        description: "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2].",
        priority: 1,
        cell: |o, _| plain_string(o, &["involvedObject", "fieldPath"]),
    },
    Column {
        name: "Source",
        kind: "string",
        format: "",
        description: "The component reporting this event. Should be a short machine understandable string.",
        priority: 1,
        cell: |o, _| {
            let first = |a: &[&str], b: &[&str]| -> String {
                [a, b]
                    .iter()
                    .filter_map(|p| at(o, p).and_then(Value::as_str))
                    .find(|s| !s.is_empty())
                    .unwrap_or_default()
                    .to_string()
            };
            let component = first(&["source", "component"], &["reportingComponent"]);
            let instance = first(&["source", "host"], &["reportingInstance"]);
            Value::String(if instance.is_empty() {
                component
            } else {
                format!("{component}, {instance}")
            })
        },
    },
    Column {
        name: "Message",
        kind: "string",
        format: "",
        description: "A human-readable description of the status of this operation.",
        priority: 0,
        cell: |o, _| {
            Value::String(
                o.get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .trim()
                    .to_string(),
            )
        },
    },
    Column {
        name: "First Seen",
        kind: "string",
        format: "",
        description: "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
        priority: 1,
        cell: |o, now| event_age(o, "firstTimestamp", now),
    },
    Column {
        name: "Count",
        kind: "string",
        format: "",
        description: "The number of times this event has occurred.",
        priority: 1,
        cell: |o, _| match o.get("count").and_then(Value::as_i64) {
            Some(c) if c > 0 => Value::from(c),
            _ => Value::from(1),
        },
    },
    Column {
        priority: 1,
        ..NAME
    },
];

/// The printer columns of a resource.
pub fn columns(resource: Resource) -> &'static [Column] {
    match resource {
        Resource::Kind(kind) => match kind {
            Kind::Installation => INSTALLATION,
            Kind::Execution => EXECUTION,
            Kind::DeployItem => DEPLOY_ITEM,
            Kind::DataObject => DATA_OBJECT,
            Kind::Target => TARGET,
            Kind::Context => CONTEXT,
            Kind::ConfigMap => CONFIG_MAP,
            Kind::Secret => SECRET,
            Kind::ManifestFile => MANIFEST_FILE,
            Kind::TransportArchive => TRANSPORT_ARCHIVE,
        },
        Resource::Namespaces => NAMESPACE,
        Resource::Events => EVENT,
    }
}

fn at<'a>(object: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(object, |v, key| v.get(key))
}

/// A string column's cell as the CRD table convertor renders it: strings as they are, other
/// values as JSON, missing or null values as `null`.
fn string_at(object: &Value, path: &[&str]) -> Value {
    match at(object, path) {
        None | Some(Value::Null) => Value::Null,
        Some(Value::String(s)) => Value::String(s.clone()),
        Some(other) => Value::String(other.to_string()),
    }
}

/// A string field as kube-apiserver's built-in printers show it: missing is the empty string.
fn plain_string(object: &Value, path: &[&str]) -> Value {
    Value::String(
        at(object, path)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
    )
}

/// An event's age by one of its timestamps (`translateTimestampSince`); `lastTimestamp` falls
/// back to `firstTimestamp` and that to `eventTime`, as in kube-apiserver's `printEvent`.
fn event_age(object: &Value, field: &str, now: Timestamp) -> Value {
    let fields: &[&str] = match field {
        "lastTimestamp" => &["lastTimestamp", "firstTimestamp", "eventTime"],
        _ => &["firstTimestamp", "eventTime"],
    };
    let time = fields
        .iter()
        .filter_map(|f| object.get(*f).and_then(Value::as_str))
        .find_map(|t| t.parse::<Timestamp>().ok());
    Value::String(match time {
        Some(t) => human_duration(now.as_second() - t.as_second()),
        None => "<unknown>".to_string(),
    })
}

fn label(object: &Value, key: &str) -> Value {
    string_at(object, &["metadata", "labels", key])
}

fn count(object: &Value, field: &str) -> usize {
    object
        .get(field)
        .and_then(Value::as_object)
        .map_or(0, Map::len)
}

/// Keys of `data` and `stringData` together (a stored Secret may still hold `stringData`).
fn secret_keys(object: &Value) -> usize {
    let mut keys: Vec<&String> = ["data", "stringData"]
        .iter()
        .filter_map(|f| object.get(*f).and_then(Value::as_object))
        .flat_map(Map::keys)
        .collect();
    keys.sort();
    keys.dedup();
    keys.len()
}

fn manifest_error(object: &Value) -> Value {
    let Some(error) = at(object, &["status", "lastError"]) else {
        return Value::Null;
    };
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let line = error.get("line").and_then(Value::as_u64);
    let column = error.get("column").and_then(Value::as_u64);
    Value::String(match (line, column) {
        (Some(l), Some(c)) => format!("{l}:{c}: {message}"),
        (Some(l), None) => format!("{l}: {message}"),
        _ => message.to_string(),
    })
}

fn age(object: &Value, now: Timestamp) -> Value {
    let created = landscaper_store::object::meta_str(object, "creationTimestamp")
        .and_then(|t| t.parse::<Timestamp>().ok());
    Value::String(match created {
        Some(created) => human_duration(now.as_second() - created.as_second()),
        None => "<unknown>".to_string(),
    })
}

/// Kubernetes' `duration.HumanDuration`: a short, rounded-down age such as `45s`, `3m20s`,
/// `5h2m` or `3d4h`.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let days = (hours / 24) % 365;
        return if days == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{days}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// How to build tables for one response (or one watch stream).
#[derive(Debug, Clone, Copy)]
pub struct TableOptions {
    /// `v1` or `v1beta1`.
    pub version: &'static str,
    pub include_object: IncludeObject,
    /// Leave out the column definitions (watch events after the first one).
    pub no_headers: bool,
}

fn column_definitions(resource: Resource) -> Value {
    Value::Array(
        columns(resource)
            .iter()
            .map(|c| {
                json!({
                    "name": c.name,
                    "type": c.kind,
                    "format": c.format,
                    "description": c.description,
                    "priority": c.priority,
                })
            })
            .collect(),
    )
}

fn row(resource: Resource, object: &Value, options: &TableOptions, now: Timestamp) -> Value {
    let cells: Vec<Value> = columns(resource)
        .iter()
        .map(|c| (c.cell)(object, now))
        .collect();
    let mut row = Map::new();
    row.insert("cells".into(), Value::Array(cells));
    match options.include_object {
        IncludeObject::None => {}
        IncludeObject::Object => {
            row.insert("object".into(), object.clone());
        }
        IncludeObject::Metadata => {
            row.insert(
                "object".into(),
                json!({
                    "kind": "PartialObjectMetadata",
                    "apiVersion": format!("meta.k8s.io/{}", options.version),
                    "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
                }),
            );
        }
    }
    Value::Object(row)
}

/// A `Table` of `objects` (already redacted) at `resource_version`.
pub fn to_table(
    resource: Resource,
    objects: &[Value],
    resource_version: &str,
    options: &TableOptions,
) -> Value {
    let now = Timestamp::now();
    let mut metadata = Map::new();
    if !resource_version.is_empty() {
        metadata.insert(
            "resourceVersion".into(),
            Value::String(resource_version.to_string()),
        );
    }
    json!({
        "kind": "Table",
        "apiVersion": format!("meta.k8s.io/{}", options.version),
        "metadata": metadata,
        "columnDefinitions": if options.no_headers { Value::Null } else { column_definitions(resource) },
        "rows": objects.iter().map(|o| row(resource, o, options, now)).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations_match_kubernetes() {
        for (seconds, text) in [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (200, "3m20s"),
            (600, "10m"),
            (179 * 60, "179m"),
            (3 * 3600, "3h"),
            (5 * 3600 + 120, "5h2m"),
            (8 * 3600, "8h"),
            (47 * 3600, "47h"),
            (48 * 3600, "2d"),
            (3 * 86400 + 4 * 3600, "3d4h"),
            (8 * 86400, "8d"),
            (800 * 86400, "2y70d"),
            (365 * 9 * 86400, "9y"),
        ] {
            assert_eq!(human_duration(seconds), text, "{seconds}s");
        }
    }

    #[test]
    fn event_rows_follow_kube_apiserver() {
        let event = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "a.0000000000000008", "namespace": "e2e", "resourceVersion": "8"},
            "involvedObject": {"kind": "Installation", "name": "a", "namespace": "e2e"},
            "reason": "Succeeded", "type": "Normal",
            "message": "phase Progressing -> Succeeded\n",
            "source": {"component": "landscaper-appliance"},
            "firstTimestamp": "2020-01-01T00:00:00Z",
            "lastTimestamp": "2020-01-02T00:00:00Z",
            "count": 2,
        });
        let options = TableOptions {
            version: "v1",
            include_object: IncludeObject::Metadata,
            no_headers: false,
        };
        let table = to_table(Resource::Events, &[event], "9", &options);
        let columns: Vec<(&str, i64)> = table["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["name"].as_str().unwrap(), c["priority"].as_i64().unwrap()))
            .collect();
        assert_eq!(
            columns,
            [
                ("Last Seen", 0),
                ("Type", 0),
                ("Reason", 0),
                ("Object", 0),
                ("Subobject", 1),
                ("Source", 1),
                ("Message", 0),
                ("First Seen", 1),
                ("Count", 1),
                ("Name", 1),
            ]
        );
        let cells = table["rows"][0]["cells"].as_array().unwrap();
        assert!(cells[0].as_str().unwrap().contains('y'), "{}", cells[0]);
        assert!(cells[7].as_str().unwrap().contains('y'), "{}", cells[7]);
        assert_eq!(
            cells[1..7],
            json!([
                "Normal",
                "Succeeded",
                "installation/a",
                "",
                "landscaper-appliance",
                "phase Progressing -> Succeeded"
            ])
            .as_array()
            .unwrap()[..]
        );
        assert_eq!(cells[8], 2);
        assert_eq!(cells[9], "a.0000000000000008");
        let bare = to_table(
            Resource::Events,
            &[json!({"metadata": {"name": "x"}})],
            "",
            &options,
        );
        assert_eq!(
            bare["rows"][0]["cells"],
            json!(["<unknown>", "", "", "", "", "", "", "<unknown>", 1, "x"])
        );
    }

    #[test]
    fn transport_archive_rows_list_component_versions_and_errors() {
        let options = TableOptions {
            version: "v1",
            include_object: IncludeObject::Metadata,
            no_headers: false,
        };
        let ready = json!({
            "apiVersion": "appliance.landscaper-appliance.io/v1alpha1", "kind": "TransportArchive",
            "metadata": {"name": "m.tgz"}, "spec": {"path": "air/m.tgz"},
            "status": {"phase": "Ready", "type": "CommonTransportFormat", "format": "tgz", "size": 10,
                       "componentVersions": [{"name": "a.io/x", "version": "1.0.0", "resources": 2},
                                             {"name": "a.io/y", "version": "2.0.0", "resources": 0}]},
        });
        let failed = json!({
            "metadata": {"name": "t.tar"}, "spec": {"path": "t.tar"},
            "status": {"phase": "Failed", "lastError": "truncated"},
        });
        let table = to_table(
            Resource::Kind(Kind::TransportArchive),
            &[ready, failed],
            "9",
            &options,
        );
        let names: Vec<&str> = table["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "Name",
                "Path",
                "Phase",
                "Components",
                "Error",
                "Age",
                "Type",
                "Format",
                "Size"
            ]
        );
        let cells = &table["rows"][0]["cells"];
        assert_eq!(cells[1], "air/m.tgz");
        assert_eq!(cells[2], "Ready");
        assert_eq!(cells[3], "a.io/x:1.0.0,a.io/y:2.0.0");
        assert_eq!(cells[4], Value::Null);
        assert_eq!(cells[8], 10);
        let cells = &table["rows"][1]["cells"];
        assert_eq!(cells[2], "Failed");
        assert_eq!(cells[3], "");
        assert_eq!(cells[4], "truncated");
    }

    #[test]
    fn installation_rows_follow_the_crd_columns() {
        let inst = json!({
            "apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation",
            "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "4",
                         "creationTimestamp": "2020-01-01T00:00:00Z"},
            "status": {"phase": "Succeeded", "executionRef": {"name": "a-exec"}},
        });
        let options = TableOptions {
            version: "v1",
            include_object: IncludeObject::Metadata,
            no_headers: false,
        };
        let table = to_table(Resource::Kind(Kind::Installation), &[inst], "9", &options);
        assert_eq!(table["metadata"]["resourceVersion"], "9");
        let names: Vec<&str> = table["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["Name", "Phase", "Execution", "Age"]);
        let cells = &table["rows"][0]["cells"];
        assert_eq!(cells[0], "a");
        assert_eq!(cells[1], "Succeeded");
        assert_eq!(cells[2], "a-exec");
        assert!(cells[3].as_str().unwrap().contains('y'), "{}", cells[3]);
        assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(table["rows"][0]["object"]["metadata"]["namespace"], "ns");
        let bare = json!({"metadata": {"name": "b"}});
        let table = to_table(
            Resource::Kind(Kind::Installation),
            &[bare],
            "",
            &TableOptions {
                no_headers: true,
                include_object: IncludeObject::None,
                ..options
            },
        );
        assert_eq!(table["columnDefinitions"], Value::Null);
        assert_eq!(
            table["rows"][0]["cells"],
            json!(["b", null, null, "<unknown>"])
        );
        assert_eq!(table["rows"][0].get("object"), None);
    }
}
