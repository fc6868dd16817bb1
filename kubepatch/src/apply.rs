//! Server-side apply and the `managedFields` bookkeeping of every other write, after
//! structured-merge-diff and kube-apiserver's field manager.

use serde_json::{Map, Value, json};

use crate::fields::{
    Comparison, FieldSet, compare, display_path, field_element, field_set, item_element,
};
use crate::schema::{ApplyList, Node, root_for};
use crate::{FieldConflict, PatchError, type_of};

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// The manager kube invents for the fields of an object that had no `managedFields` when it
/// was first applied to.
const BEFORE_FIRST_APPLY: &str = "before-first-apply";
/// Only this manager gets the client-side to server-side apply upgrade.
const KUBECTL: &str = "kubectl";

/// One server-side apply request.
pub struct ApplyRequest<'a> {
    /// The current object (None: apply creates it).
    pub live: Option<&'a Value>,
    /// The applied configuration (already parsed from YAML/JSON).
    pub applied: &'a Value,
    /// The `fieldManager` query parameter (required for apply).
    pub manager: &'a str,
    pub force: bool,
    /// RFC 3339 time for `managedFields[].time`.
    pub now: &'a str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Operation {
    Apply,
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One `managedFields` entry.
#[derive(Debug, Clone, PartialEq)]
struct ManagerEntry {
    manager: String,
    operation: Operation,
    api_version: String,
    time: Option<String>,
    subresource: String,
    fields: FieldSet,
}

impl ManagerEntry {
    /// kube keys entries by manager, operation, subresource and, for updates, apiVersion.
    fn is(
        &self,
        manager: &str,
        operation: Operation,
        api_version: &str,
        subresource: &str,
    ) -> bool {
        self.manager == manager
            && self.operation == operation
            && self.subresource == subresource
            && (operation == Operation::Apply || self.api_version == api_version)
    }

    /// The manager as kube-apiserver prints it in conflicts.
    fn description(&self) -> String {
        let mut text = Value::from(self.manager.as_str()).to_string();
        if !self.subresource.is_empty() {
            text.push_str(&format!(
                " with subresource {}",
                Value::from(self.subresource.as_str())
            ));
        }
        if self.operation == Operation::Update {
            text.push_str(&format!(" using {}", self.api_version));
        }
        text
    }

    fn to_json(&self) -> Value {
        let mut entry = Map::new();
        entry.insert("manager".into(), Value::from(self.manager.as_str()));
        entry.insert("operation".into(), Value::from(self.operation.as_str()));
        entry.insert("apiVersion".into(), Value::from(self.api_version.as_str()));
        if let Some(time) = &self.time {
            entry.insert("time".into(), Value::from(time.as_str()));
        }
        entry.insert("fieldsType".into(), Value::from("FieldsV1"));
        entry.insert("fieldsV1".into(), self.fields.to_fields_v1());
        if !self.subresource.is_empty() {
            entry.insert("subresource".into(), Value::from(self.subresource.as_str()));
        }
        Value::Object(entry)
    }

    fn from_json(entry: &Value) -> Result<ManagerEntry, String> {
        let text = |key: &str| {
            entry
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let operation = match text("operation").as_str() {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            other => return Err(format!("unsupported managedFields operation {other:?}")),
        };
        match entry.get("fieldsType").and_then(Value::as_str) {
            Some("FieldsV1") | None => {}
            Some(other) => return Err(format!("unsupported fieldsType {other:?}")),
        }
        let fields = match entry.get("fieldsV1") {
            Some(fields) => FieldSet::from_fields_v1(fields)?,
            None => FieldSet::default(),
        };
        Ok(ManagerEntry {
            manager: text("manager"),
            operation,
            api_version: text("apiVersion"),
            time: entry.get("time").and_then(Value::as_str).map(str::to_owned),
            subresource: text("subresource"),
            fields,
        })
    }
}

fn managed_fields_of(object: &Value) -> Option<&Value> {
    object.get("metadata")?.get("managedFields")
}

fn decode_managed_fields(object: &Value) -> Result<Vec<ManagerEntry>, String> {
    let entries = match managed_fields_of(object) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(entries)) => entries,
        Some(_) => return Err("metadata.managedFields must be a list".into()),
    };
    let mut decoded: Vec<ManagerEntry> = Vec::new();
    for entry in entries {
        let entry = ManagerEntry::from_json(entry)?;
        // Two entries for one manager: kube keeps their union.
        match decoded.iter_mut().find(|e| {
            e.is(
                &entry.manager,
                entry.operation,
                &entry.api_version,
                &entry.subresource,
            )
        }) {
            Some(existing) => existing.fields = existing.fields.union(&entry.fields),
            None => decoded.push(entry),
        }
    }
    Ok(decoded)
}

/// `managedFields` in kube's order: Apply before Update, then by time, manager, apiVersion and
/// subresource. Empty when no entry is left.
fn encode_managed_fields(mut entries: Vec<ManagerEntry>) -> Option<Value> {
    entries.retain(|entry| !entry.fields.is_empty());
    if entries.is_empty() {
        return None;
    }
    entries.sort_by(|a, b| {
        let seconds = |e: &ManagerEntry| e.time.as_deref().and_then(unix_seconds).unwrap_or(0);
        (
            a.operation,
            seconds(a),
            &a.manager,
            &a.api_version,
            &a.subresource,
        )
            .cmp(&(
                b.operation,
                seconds(b),
                &b.manager,
                &b.api_version,
                &b.subresource,
            ))
    });
    Some(Value::Array(
        entries.iter().map(ManagerEntry::to_json).collect(),
    ))
}

fn set_managed_fields(object: &mut Value, managed: Option<Value>) {
    let Some(object) = object.as_object_mut() else {
        return;
    };
    match managed {
        Some(managed) => {
            let metadata = object
                .entry("metadata")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(metadata) = metadata.as_object_mut() {
                metadata.insert("managedFields".into(), managed);
            }
        }
        None => {
            if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                metadata.remove("managedFields");
            }
        }
    }
}

fn without_managed_fields(object: &Value) -> Value {
    let mut object = object.clone();
    set_managed_fields(&mut object, None);
    object
}

/// Fields nobody owns: identity and server-maintained metadata (kube's "strip meta" set).
fn server_owned_fields() -> FieldSet {
    let mut set = FieldSet::default();
    set.insert(&[field_element("apiVersion")]);
    set.insert(&[field_element("kind")]);
    set.insert(&[field_element("metadata")]);
    for name in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        set.insert(&[field_element("metadata"), field_element(name)]);
    }
    set
}

/// Fields a write does not own because the endpoint resets them: `status` for the main
/// resource, everything but `status` for the status subresource.
fn ignored_fields(subresource: &str, old: &Value, new: &Value) -> FieldSet {
    let mut set = FieldSet::default();
    match subresource {
        "" => set.insert(&[field_element("status")]),
        "status" => {
            for object in [old, new] {
                for key in object.as_object().into_iter().flat_map(Map::keys) {
                    if key != "status" {
                        set.insert(&[field_element(key)]);
                    }
                }
            }
        }
        _ => {}
    }
    set
}

/// The fields a write sets or changes (what kube calls the current operation's fields).
fn changed_fields(comparison: &Comparison) -> FieldSet {
    comparison
        .modified
        .union(&comparison.added)
        .difference(&server_owned_fields())
}

/// Returns `new` with `metadata.managedFields` updated for a create (`old` None), update or
/// non-apply patch by `manager` (operation `Update`, through `subresource` such as `status`
/// when given): it owns the fields it set or changed, and other managers lose the fields whose
/// values it changed or removed.
///
/// As in kube: managed fields sent in `new` replace the stored ones (except through a
/// subresource); `managedFields: []` or `[{}]` resets them; an existing object (one with a
/// `metadata.uid`) that has no managed fields is not tracked.
pub fn track_update(
    old: Option<&Value>,
    new: &Value,
    manager: &str,
    subresource: Option<&str>,
    now: &str,
) -> Value {
    let subresource = subresource.unwrap_or("");
    let stored = || {
        old.map_or(Ok(Vec::new()), decode_managed_fields)
            .unwrap_or_default()
    };
    let mut managers = if !subresource.is_empty() {
        stored()
    } else if is_reset(managed_fields_of(new)) {
        Vec::new()
    } else {
        match decode_managed_fields(new) {
            Ok(sent) if !sent.is_empty() => sent,
            _ => stored(),
        }
    };
    let mut result = without_managed_fields(new);
    let existing = old.is_some_and(|o| {
        o.pointer("/metadata/uid")
            .is_some_and(|uid| uid.as_str() != Some(""))
    });
    if managers.is_empty() && existing {
        return result;
    }
    let old_clean = old.map_or_else(|| json!({}), without_managed_fields);
    let (api_version, kind) = type_of(new);
    let node = root_for(api_version, kind);
    record_update(
        &mut managers,
        &old_clean,
        &result,
        node,
        manager,
        api_version,
        subresource,
        now,
    );
    let managed = encode_managed_fields(managers);
    set_managed_fields(&mut result, managed);
    keep_timestamps_of_noop(old, result)
}

fn is_reset(managed: Option<&Value>) -> bool {
    match managed {
        Some(Value::Array(entries)) => {
            entries.is_empty() || (entries.len() == 1 && entries[0] == json!({}))
        }
        _ => false,
    }
}

/// structured-merge-diff's `Update` for `manager`, forcing ownership of what it changed.
#[allow(clippy::too_many_arguments)]
fn record_update(
    managers: &mut Vec<ManagerEntry>,
    old: &Value,
    new: &Value,
    node: &'static Node,
    manager: &str,
    api_version: &str,
    subresource: &str,
    now: &str,
) {
    let mut comparison = compare(old, new, node);
    comparison.exclude(&ignored_fields(subresource, old, new));
    let taken = comparison.modified.union(&comparison.added);
    for entry in managers.iter_mut() {
        entry.fields = entry
            .fields
            .difference(&taken)
            .difference(&comparison.removed);
    }
    let changed = changed_fields(&comparison);
    if !changed.is_empty() {
        match managers
            .iter_mut()
            .find(|e| e.is(manager, Operation::Update, api_version, subresource))
        {
            Some(entry) => {
                entry.fields = entry.fields.union(&changed);
                entry.time = Some(now.to_owned());
            }
            None => managers.push(ManagerEntry {
                manager: manager.to_owned(),
                operation: Operation::Update,
                api_version: api_version.to_owned(),
                time: Some(now.to_owned()),
                subresource: subresource.to_owned(),
                fields: changed,
            }),
        }
    }
    managers.retain(|entry| !entry.fields.is_empty());
}

/// kube does not rewrite an object whose only change would be `managedFields` timestamps: it
/// keeps the stored entries.
fn keep_timestamps_of_noop(old: Option<&Value>, mut result: Value) -> Value {
    let Some(old) = old else {
        return result;
    };
    if without_managed_fields(old) != without_managed_fields(&result) {
        return result;
    }
    let untimed = |object: &Value| -> Option<Vec<Value>> {
        let entries = managed_fields_of(object)?.as_array()?;
        Some(
            entries
                .iter()
                .map(|entry| {
                    let mut entry = entry.clone();
                    if let Some(fields) = entry.as_object_mut() {
                        fields.remove("time");
                    }
                    entry
                })
                .collect(),
        )
    };
    if untimed(old) == untimed(&result) {
        set_managed_fields(&mut result, managed_fields_of(old).cloned());
    }
    result
}

/// Server-side apply: merges the applied configuration into the live object and returns the
/// new object with `metadata.managedFields` updated, or the conflicts with other managers.
///
/// The applied configuration's `status` is dropped (apply to the main resource does not write
/// it), `metadata.managedFields` in it is refused, and fields the manager applied before but
/// omits now are removed unless another manager owns them. The caller sets `uid`,
/// `resourceVersion`, `generation`, `creationTimestamp` and the like.
pub fn server_side_apply(req: ApplyRequest<'_>) -> Result<Value, PatchError> {
    if !req.applied.is_object() {
        return Err(PatchError::BadRequest(
            "the apply configuration must be an object".into(),
        ));
    }
    let (api_version, kind) = type_of(req.applied);
    if api_version.is_empty() || kind.is_empty() {
        return Err(PatchError::BadRequest(format!(
            "invalid object type: apiVersion {api_version:?}, kind {kind:?}: both must be set"
        )));
    }
    if let Some(live) = req.live {
        let (_, live_kind) = type_of(live);
        if !live_kind.is_empty() && live_kind != kind {
            return Err(PatchError::BadRequest(format!(
                "the kind of the apply configuration ({kind}) does not match the object's ({live_kind})"
            )));
        }
    }
    if managed_fields_of(req.applied).is_some_and(|m| !m.is_null()) {
        return Err(PatchError::BadRequest(
            "metadata.managedFields must be nil".into(),
        ));
    }
    if req.manager.is_empty() {
        return Err(PatchError::BadRequest(
            "PATCH requests with apply content type must have a fieldManager query parameter"
                .into(),
        ));
    }
    let node = root_for(api_version, kind);
    let live = req.live.map_or_else(|| json!({}), without_managed_fields);
    let mut managers = match req.live {
        Some(object) => decode_managed_fields(object)
            .map_err(|e| PatchError::Invalid(format!("failed to decode managed fields: {e}")))?,
        None => Vec::new(),
    };
    if req.live.is_some() && managers.is_empty() {
        let (live_api_version, _) = type_of(&live);
        let api_version = if live_api_version.is_empty() {
            api_version
        } else {
            live_api_version
        };
        record_update(
            &mut managers,
            &json!({}),
            &live,
            node,
            BEFORE_FIRST_APPLY,
            api_version,
            "",
            req.now,
        );
    }

    let mut config = req.applied.clone();
    if let Some(fields) = config.as_object_mut() {
        fields.remove("status");
    }
    set_managed_fields(&mut config, None);
    let ignored = ignored_fields("", &live, &config);
    let applied_fields = field_set(&config, node)
        .map_err(|e| PatchError::Invalid(format!("failed to create typed patch object: {e}")))?
        .difference(&server_owned_fields())
        .recursive_difference(&ignored);
    let mut merged = merge_values(Some(&live), &config, node)
        .map_err(|e| PatchError::Invalid(format!("failed to merge config: {e}")))?;

    let previously_applied = match managers
        .iter_mut()
        .find(|e| e.is(req.manager, Operation::Apply, api_version, ""))
    {
        Some(entry) => Some(std::mem::replace(&mut entry.fields, applied_fields)),
        None => {
            managers.push(ManagerEntry {
                manager: req.manager.to_owned(),
                operation: Operation::Apply,
                api_version: api_version.to_owned(),
                time: None,
                subresource: String::new(),
                fields: applied_fields,
            });
            None
        }
    };
    let applier = managers
        .iter()
        .position(|e| e.is(req.manager, Operation::Apply, api_version, ""))
        .unwrap_or(0);
    managers[applier].api_version = api_version.to_owned();

    // Prune what this manager applied last time, no longer applies, and nobody else owns.
    if let Some(previous) = previously_applied {
        let owned = managers
            .iter()
            .fold(FieldSet::default(), |all, entry| all.union(&entry.fields));
        remove_fields(&mut merged, &previous.difference(&owned), node);
    }

    let mut comparison = compare(&live, &merged, node);
    comparison.exclude(&ignored);
    let taken = comparison.modified.union(&comparison.added);
    let mut conflicts: Vec<(usize, FieldSet)> = managers
        .iter()
        .enumerate()
        .filter(|(index, _)| *index != applier)
        .map(|(index, entry)| (index, entry.fields.intersection(&taken)))
        .filter(|(_, set)| !set.is_empty())
        .collect();
    if !conflicts.is_empty() && !req.force {
        // kubectl upgrading from client-side apply: fields still as last applied may move.
        let allowed = (req.manager == KUBECTL)
            .then(|| allowed_conflicts_from_last_applied(&live, node))
            .flatten()
            .unwrap_or_default();
        let remaining: Vec<(usize, FieldSet)> = conflicts
            .iter()
            .map(|(index, set)| (*index, set.difference(&allowed)))
            .filter(|(_, set)| !set.is_empty())
            .collect();
        if !remaining.is_empty() {
            return Err(PatchError::Conflict(describe_conflicts(
                &managers, remaining,
            )));
        }
    }
    for (index, set) in conflicts.drain(..) {
        managers[index].fields = managers[index].fields.difference(&set);
    }
    for (index, entry) in managers.iter_mut().enumerate() {
        if index != applier {
            entry.fields = entry.fields.difference(&comparison.removed);
        }
    }
    managers[applier].time = Some(req.now.to_owned());

    if req.manager == KUBECTL && last_applied_of(&merged).is_some() {
        set_annotation(
            &mut merged,
            LAST_APPLIED,
            last_applied_annotation(req.applied),
        );
    }
    set_managed_fields(&mut merged, encode_managed_fields(managers));
    Ok(keep_timestamps_of_noop(req.live, merged))
}

fn describe_conflicts(
    managers: &[ManagerEntry],
    conflicts: Vec<(usize, FieldSet)>,
) -> Vec<FieldConflict> {
    let mut conflicts: Vec<(&ManagerEntry, FieldSet)> = conflicts
        .into_iter()
        .map(|(index, set)| (&managers[index], set))
        .collect();
    conflicts.sort_by(|(a, _), (b, _)| {
        (&a.manager, a.operation, &a.api_version, &a.subresource).cmp(&(
            &b.manager,
            b.operation,
            &b.api_version,
            &b.subresource,
        ))
    });
    conflicts
        .into_iter()
        .flat_map(|(entry, set)| {
            set.paths().into_iter().map(move |path| FieldConflict {
                manager: entry.manager.clone(),
                field: display_path(&path),
                description: entry.description(),
            })
        })
        .collect()
}

fn last_applied_of(object: &Value) -> Option<&str> {
    object
        .pointer("/metadata/annotations")?
        .get(LAST_APPLIED)?
        .as_str()
        .filter(|text| !text.is_empty())
}

/// The fields of the last client-side applied configuration whose values are still live.
fn allowed_conflicts_from_last_applied(live: &Value, node: &'static Node) -> Option<FieldSet> {
    let last_applied: Value = serde_json::from_str(last_applied_of(live)?).ok()?;
    if type_of(&last_applied).0 != type_of(live).0 {
        return None;
    }
    let fields = field_set(&last_applied, node).ok()?;
    let comparison = compare(&last_applied, live, node);
    Some(
        fields
            .difference(&comparison.modified)
            .difference(&comparison.added)
            .difference(&comparison.removed),
    )
}

/// The annotation kube writes after a `kubectl` server-side apply: the applied configuration
/// without the annotation, encoded as Go's `encoding/json` does (sorted keys, HTML escaped,
/// trailing newline).
fn last_applied_annotation(applied: &Value) -> String {
    let mut applied = applied.clone();
    if let Some(metadata) = applied.get_mut("metadata").and_then(Value::as_object_mut)
        && let Some(annotations) = metadata
            .get_mut("annotations")
            .and_then(Value::as_object_mut)
    {
        annotations.remove(LAST_APPLIED);
        if annotations.is_empty() {
            metadata.remove("annotations");
        }
    }
    let mut text = String::new();
    for c in applied.to_string().chars() {
        match c {
            '<' => text.push_str("\\u003c"),
            '>' => text.push_str("\\u003e"),
            '&' => text.push_str("\\u0026"),
            '\u{2028}' => text.push_str("\\u2028"),
            '\u{2029}' => text.push_str("\\u2029"),
            other => text.push(other),
        }
    }
    text.push('\n');
    text
}

fn set_annotation(object: &mut Value, key: &str, value: String) {
    if let Some(annotations) = object
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        annotations.insert(key.to_owned(), Value::from(value));
    }
}

/// structured-merge-diff's merge of an applied configuration into the live object: objects
/// merge field by field, associative lists item by item (kube's order), anything else is
/// replaced. A `null` in the configuration removes the field.
fn merge_values(
    live: Option<&Value>,
    config: &Value,
    node: &'static Node,
) -> Result<Value, String> {
    match (node, config) {
        (Node::Atomic, _) => Ok(config.clone()),
        (Node::Struct(_) | Node::Map(_) | Node::Untyped, Value::Object(config_fields)) => {
            let mut merged = match live {
                Some(Value::Object(live_fields)) => live_fields.clone(),
                _ => Map::new(),
            };
            for (key, config_value) in config_fields {
                if config_value.is_null() {
                    merged.remove(key);
                    continue;
                }
                let child = node.child(key);
                let value = merge_values(merged.get(key), config_value, child.node)?;
                merged.insert(key.clone(), value);
            }
            Ok(Value::Object(merged))
        }
        (Node::List(spec), Value::Array(config_items)) if spec.apply != ApplyList::Atomic => {
            let live_items = match live {
                Some(Value::Array(items)) => items.as_slice(),
                _ => &[],
            };
            merge_lists(live_items, config_items, spec).map(Value::Array)
        }
        _ => Ok(config.clone()),
    }
}

fn merge_lists(
    live: &[Value],
    config: &[Value],
    spec: &'static crate::schema::ListSpec,
) -> Result<Vec<Value>, String> {
    let elements = |items: &[Value]| -> Result<Vec<String>, String> {
        items.iter().map(|item| item_element(spec, item)).collect()
    };
    let live_elements = elements(live)?;
    let config_elements = elements(config)?;
    for (index, element) in config_elements.iter().enumerate() {
        if config_elements[..index].contains(element) {
            return Err(format!(
                "duplicate entries for key {}",
                display_path(std::slice::from_ref(element))
            ));
        }
    }
    let in_config = |element: &String| config_elements.iter().position(|e| e == element);
    // A live item duplicated under one key is not merged: the configured item replaces them.
    let live_match = |element: &String| -> Option<&Value> {
        let mut matches = live_elements
            .iter()
            .zip(live)
            .filter(|(e, _)| *e == element);
        let first = matches.next();
        if matches.next().is_some() {
            None
        } else {
            first.map(|(_, item)| item)
        }
    };
    let mut shared = config_elements.iter().filter(|e| live_elements.contains(e));
    let mut next_shared = shared.next();
    let mut merged_config: Vec<&String> = Vec::new();
    let mut out = Vec::with_capacity(live.len().max(config.len()));
    let (mut li, mut ci) = (0, 0);
    // The order rule: live-only items keep their place, configured items come in the
    // configuration's order.
    while li < live.len() || ci < config.len() {
        if li < live.len() && ci < config.len() {
            let element = &live_elements[li];
            if *element == config_elements[ci] {
                merged_config.push(element);
                out.push(merge_values(live_match(element), &config[ci], spec.item)?);
                li += 1;
                ci += 1;
                next_shared = shared.next();
                continue;
            }
            if in_config(element).is_some() && next_shared.is_some_and(|n| n != element) {
                li += 1;
                continue;
            }
        }
        if li < live.len() {
            let element = &live_elements[li];
            if in_config(element).is_none() {
                out.push(live[li].clone());
                li += 1;
                continue;
            } else if merged_config.contains(&element) {
                li += 1;
            }
        }
        if ci < config.len() {
            let element = &config_elements[ci];
            merged_config.push(element);
            out.push(merge_values(live_match(element), &config[ci], spec.item)?);
            ci += 1;
            if next_shared == Some(element) {
                next_shared = shared.next();
            }
        }
    }
    Ok(out)
}

/// Removes the member paths of `set` from `value` (leaves, map entries and list items whole).
fn remove_fields(value: &mut Value, set: &FieldSet, node: &'static Node) {
    if set.is_empty() || matches!(node, Node::Atomic) {
        return;
    }
    match value {
        Value::Object(fields) => {
            let keys: Vec<String> = fields.keys().cloned().collect();
            for key in keys {
                let Some((member, children)) = set.child(&field_element(&key)) else {
                    continue;
                };
                if member {
                    fields.remove(&key);
                } else if let Some(child_value) = fields.get_mut(&key) {
                    remove_fields(child_value, children, node.child(&key).node);
                }
            }
        }
        Value::Array(items) => {
            let Some(spec) = node.list().filter(|spec| spec.apply != ApplyList::Atomic) else {
                return;
            };
            items.retain_mut(|item| {
                let Ok(element) = item_element(spec, item) else {
                    return true;
                };
                match set.child(&element) {
                    Some((true, _)) => false,
                    Some((false, children)) => {
                        remove_fields(item, children, spec.item);
                        true
                    }
                    None => true,
                }
            });
        }
        _ => {}
    }
}

/// Seconds since the epoch of an RFC 3339 time, for ordering `managedFields` as kube does.
fn unix_seconds(time: &str) -> Option<i64> {
    let bytes = time.as_bytes();
    let number = |range: std::ops::Range<usize>| -> Option<i64> {
        let text = time.get(range)?;
        text.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| text.parse().ok())?
    };
    if bytes.len() < 20 || bytes[4] != b'-' || bytes[7] != b'-' || !matches!(bytes[10], b'T' | b't')
    {
        return None;
    }
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    let mut rest = time.get(19..)?;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        rest = &fraction[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let (h, m) = rest[1..].split_once(':')?;
            sign * (h.parse::<i64>().ok()? * 3600 + m.parse::<i64>().ok()? * 60)
        }
    };
    // Days from the civil date (proleptic Gregorian), after Howard Hinnant's algorithm.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    Some(days * 86_400 + hour * 3600 + minute * 60 + second - offset)
}

#[cfg(test)]
mod tests;
