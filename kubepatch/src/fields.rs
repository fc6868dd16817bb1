//! Field sets as structured-merge-diff keeps them, and their `FieldsV1` encoding.
//!
//! A path is a list of path elements, each kept in its `FieldsV1` spelling: `f:name` (a field
//! or map entry), `k:{"name":"nginx"}` (an associative-list item by its keys), `v:"value"`
//! (a set item) and `i:0` (an item by index). A set marks the paths it contains as members;
//! a path can be a member and have member children at once (`".": {}` in `FieldsV1`).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::schema::{ApplyList, ListSpec, Node};

pub(crate) type Path = Vec<String>;

#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct FieldSet {
    entries: BTreeMap<String, Entry>,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Entry {
    member: bool,
    children: FieldSet,
}

impl FieldSet {
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(crate) fn insert(&mut self, path: &[String]) {
        let Some((first, rest)) = path.split_first() else {
            return;
        };
        let entry = self.entries.entry(first.clone()).or_default();
        if rest.is_empty() {
            entry.member = true;
        } else {
            entry.children.insert(rest);
        }
    }

    #[cfg(test)]
    pub(crate) fn has(&self, path: &[String]) -> bool {
        match path.split_first() {
            None => false,
            Some((first, rest)) => self.entries.get(first).is_some_and(|entry| {
                if rest.is_empty() {
                    entry.member
                } else {
                    entry.children.has(rest)
                }
            }),
        }
    }

    /// The subset below one path element (for walking a value alongside the set).
    pub(crate) fn child(&self, element: &str) -> Option<(bool, &FieldSet)> {
        self.entries
            .get(element)
            .map(|entry| (entry.member, &entry.children))
    }

    pub(crate) fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        for (element, theirs) in &other.entries {
            let entry = out.entries.entry(element.clone()).or_default();
            entry.member |= theirs.member;
            entry.children = entry.children.union(&theirs.children);
        }
        out
    }

    /// Paths of `self` that are not members of `other` (path by path, not by prefix).
    pub(crate) fn difference(&self, other: &FieldSet) -> FieldSet {
        self.combine(other, |mine, theirs| mine && !theirs, FieldSet::difference)
    }

    pub(crate) fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet::default();
        for (element, mine) in &self.entries {
            if let Some(theirs) = other.entries.get(element) {
                out.put(
                    element,
                    mine.member && theirs.member,
                    mine.children.intersection(&theirs.children),
                );
            }
        }
        out
    }

    /// Paths of `self` that are neither members of `other` nor below one of its members.
    pub(crate) fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet::default();
        for (element, mine) in &self.entries {
            match other.entries.get(element) {
                Some(theirs) if theirs.member => {}
                Some(theirs) => out.put(
                    element,
                    mine.member,
                    mine.children.recursive_difference(&theirs.children),
                ),
                None => {
                    out.entries.insert(element.clone(), mine.clone());
                }
            }
        }
        out
    }

    fn combine(
        &self,
        other: &FieldSet,
        member: fn(bool, bool) -> bool,
        children: fn(&FieldSet, &FieldSet) -> FieldSet,
    ) -> FieldSet {
        let mut out = FieldSet::default();
        let empty = FieldSet::default();
        for (element, mine) in &self.entries {
            let (their_member, their_children) = other
                .entries
                .get(element)
                .map_or((false, &empty), |e| (e.member, &e.children));
            out.put(
                element,
                member(mine.member, their_member),
                children(&mine.children, their_children),
            );
        }
        out
    }

    /// Adds an entry unless it would be empty (keeps the set free of empty entries).
    fn put(&mut self, element: &str, member: bool, children: FieldSet) {
        if member || !children.is_empty() {
            self.entries
                .insert(element.to_owned(), Entry { member, children });
        }
    }

    /// Member paths in structured-merge-diff's iteration order: a level's members first, then
    /// its children, each sorted.
    pub(crate) fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        for (element, entry) in &self.entries {
            if entry.member {
                let mut path = prefix.clone();
                path.push(element.clone());
                out.push(path);
            }
        }
        for (element, entry) in &self.entries {
            prefix.push(element.clone());
            entry.children.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    pub(crate) fn to_fields_v1(&self) -> Value {
        Value::Object(self.to_json_map(false))
    }

    fn to_json_map(&self, include_self: bool) -> Map<String, Value> {
        let mut map = Map::new();
        if include_self {
            map.insert(".".into(), Value::Object(Map::new()));
        }
        for (element, entry) in &self.entries {
            map.insert(
                element.clone(),
                Value::Object(
                    entry
                        .children
                        .to_json_map(entry.member && !entry.children.is_empty()),
                ),
            );
        }
        map
    }

    pub(crate) fn from_fields_v1(value: &Value) -> Result<FieldSet, String> {
        let Some(map) = value.as_object() else {
            return Err("fieldsV1 must be an object".into());
        };
        let mut set = FieldSet::default();
        for (element, child) in map {
            if element == "." {
                continue;
            }
            if !["f:", "k:", "v:", "i:"]
                .iter()
                .any(|p| element.starts_with(p))
            {
                return Err(format!("unexpected path element {element:?} in fieldsV1"));
            }
            let Some(child_map) = child.as_object() else {
                return Err(format!("fieldsV1 entry {element:?} must be an object"));
            };
            let member = child_map.is_empty() || child_map.contains_key(".");
            set.put(element, member, FieldSet::from_fields_v1(child)?);
        }
        Ok(set)
    }
}

pub(crate) fn field_element(name: &str) -> String {
    format!("f:{name}")
}

/// The path element of a list item: its keys, its value, or (for lists without identity)
/// nothing, since atomic lists are never walked.
pub(crate) fn item_element(spec: &ListSpec, item: &Value) -> Result<String, String> {
    match spec.apply {
        ApplyList::Map(keys) => {
            let Some(fields) = item.as_object() else {
                return Err("associative list with keys may not have non-map elements".into());
            };
            let mut key_values = Map::new();
            for key in keys {
                if let Some(value) = fields.get(key.name) {
                    key_values.insert(key.name.to_owned(), value.clone());
                } else if let Some(default) = key.default {
                    key_values.insert(key.name.to_owned(), Value::from(default));
                }
            }
            if key_values.is_empty() {
                let names: Vec<&str> = keys.iter().map(|k| k.name).collect();
                return Err(format!(
                    "associative list with keys has an element that omits all key fields {names:?} (and doesn't have default values for any key fields)"
                ));
            }
            // serde_json's map is sorted, like structured-merge-diff's key field lists.
            Ok(format!("k:{}", Value::Object(key_values)))
        }
        ApplyList::Set => {
            if item.is_object() || item.is_array() {
                return Err(
                    "associative list without keys has an element that's a map type".into(),
                );
            }
            Ok(format!("v:{item}"))
        }
        ApplyList::Atomic => Err("atomic lists have no item paths".into()),
    }
}

/// The shape a value takes under a node.
enum Shape<'a> {
    Leaf,
    Object(&'a Map<String, Value>),
    List(&'a ListSpec, &'a [Value]),
}

fn shape<'a>(node: &'a Node, value: &'a Value) -> Shape<'a> {
    match (node, value) {
        (Node::Atomic, _) => Shape::Leaf,
        (Node::Struct(_) | Node::Map(_) | Node::Untyped, Value::Object(map)) => Shape::Object(map),
        (Node::List(spec), Value::Array(items)) if spec.apply != ApplyList::Atomic => {
            Shape::List(spec, items)
        }
        _ => Shape::Leaf,
    }
}

/// The fields a value sets (structured-merge-diff's `ToFieldSet`): leaves, map entries, list
/// items, and struct fields whose value is `null` or `{}`.
pub(crate) fn field_set(value: &Value, node: &'static Node) -> Result<FieldSet, String> {
    let mut set = FieldSet::default();
    collect_fields(value, node, &mut Vec::new(), &mut set)?;
    Ok(set)
}

fn collect_fields(
    value: &Value,
    node: &'static Node,
    path: &mut Path,
    set: &mut FieldSet,
) -> Result<(), String> {
    match shape(node, value) {
        Shape::Leaf => set.insert(path),
        Shape::Object(map) => {
            for (key, child_value) in map {
                let child = node.child(key);
                path.push(field_element(key));
                collect_fields(child_value, child.node, path, set)?;
                let empty_object = child_value.as_object().is_some_and(Map::is_empty);
                if child_value.is_null() || empty_object || !child.declared {
                    set.insert(path);
                }
                path.pop();
            }
        }
        Shape::List(spec, items) => {
            let elements = items
                .iter()
                .map(|item| {
                    item_element(spec, item).map_err(|e| format!("{}: {e}", display_path(path)))
                })
                .collect::<Result<Vec<_>, _>>()?;
            for (index, (element, item)) in elements.iter().zip(items).enumerate() {
                path.push(element.clone());
                // A duplicated key is owned as a whole, like structured-merge-diff does.
                if !elements[..index].contains(element)
                    && elements.iter().filter(|e| *e == element).count() == 1
                {
                    collect_fields(item, spec.item, path, set)?;
                }
                set.insert(path);
                path.pop();
            }
        }
    }
    Ok(())
}

/// What changed between two versions of an object.
#[derive(Debug, Default)]
pub(crate) struct Comparison {
    pub added: FieldSet,
    pub removed: FieldSet,
    pub modified: FieldSet,
}

impl Comparison {
    pub(crate) fn exclude(&mut self, ignored: &FieldSet) {
        self.added = self.added.recursive_difference(ignored);
        self.removed = self.removed.recursive_difference(ignored);
        self.modified = self.modified.recursive_difference(ignored);
    }
}

/// structured-merge-diff's `Compare`: leaves that changed are modified; anything (leaf or not)
/// only in `new` is added, only in `old` removed.
pub(crate) fn compare(old: &Value, new: &Value, node: &'static Node) -> Comparison {
    let mut comparison = Comparison::default();
    compare_values(Some(old), Some(new), node, &mut Vec::new(), &mut comparison);
    comparison
}

fn compare_values(
    old: Option<&Value>,
    new: Option<&Value>,
    node: &'static Node,
    path: &mut Path,
    out: &mut Comparison,
) {
    let old_shape = old.map(|v| shape(node, v));
    let new_shape = new.map(|v| shape(node, v));
    let descended = match (old_shape, new_shape) {
        (Some(Shape::Object(a)), Some(Shape::Object(b))) => {
            compare_objects(Some(a), Some(b), node, path, out)
        }
        (Some(Shape::Object(a)), None) => compare_objects(Some(a), None, node, path, out),
        (None, Some(Shape::Object(b))) => compare_objects(None, Some(b), node, path, out),
        (Some(Shape::List(spec, a)), Some(Shape::List(_, b))) => {
            compare_lists(a, b, spec, path, out)
        }
        (Some(Shape::List(spec, a)), None) => compare_lists(a, &[], spec, path, out),
        (None, Some(Shape::List(spec, b))) => compare_lists(&[], b, spec, path, out),
        _ => false,
    };
    if !descended {
        compare_leaf(old, new, path, out);
    } else if old.is_none() {
        out.added.insert(path);
    } else if new.is_none() {
        out.removed.insert(path);
    }
}

fn compare_leaf(old: Option<&Value>, new: Option<&Value>, path: &Path, out: &mut Comparison) {
    if path.is_empty() {
        return;
    }
    match (old, new) {
        (None, Some(_)) => out.added.insert(path),
        (Some(_), None) => out.removed.insert(path),
        (Some(a), Some(b)) if a != b => out.modified.insert(path),
        _ => {}
    }
}

/// Returns false when both sides are empty, so the caller compares them as a leaf.
fn compare_objects(
    old: Option<&Map<String, Value>>,
    new: Option<&Map<String, Value>>,
    node: &'static Node,
    path: &mut Path,
    out: &mut Comparison,
) -> bool {
    if old.is_none_or(Map::is_empty) && new.is_none_or(Map::is_empty) {
        return false;
    }
    let empty_object = Value::Object(Map::new());
    let empty_list = Value::Array(Vec::new());
    let mut keys: Vec<&String> = old.into_iter().flat_map(Map::keys).collect();
    keys.extend(new.into_iter().flat_map(Map::keys));
    keys.sort();
    keys.dedup();
    for key in keys {
        let child = node.child(key);
        // A non-pointer struct (or non-omitempty list) is there, empty, wherever its parent is.
        let empty = if child.node.list().is_some() {
            &empty_list
        } else {
            &empty_object
        };
        let implicit = child.always_present.then_some(empty);
        let old_value = old.and_then(|m| m.get(key.as_str()).or(implicit));
        let new_value = new.and_then(|m| m.get(key.as_str()).or(implicit));
        path.push(field_element(key));
        compare_values(old_value, new_value, child.node, path, out);
        path.pop();
    }
    true
}

fn compare_lists(
    old: &[Value],
    new: &[Value],
    spec: &ListSpec,
    path: &mut Path,
    out: &mut Comparison,
) -> bool {
    if old.is_empty() && new.is_empty() {
        return false;
    }
    // Items without identity: compare the list as one value.
    let (Some(old_items), Some(new_items)) = (indexed(spec, old), indexed(spec, new)) else {
        return false;
    };
    let mut elements: Vec<&String> = old_items.iter().map(|(e, _)| e).collect();
    elements.extend(new_items.iter().map(|(e, _)| e));
    let mut seen = std::collections::BTreeSet::new();
    elements.retain(|e| seen.insert(*e));
    for element in elements {
        let before: Vec<&Value> = old_items
            .iter()
            .filter(|(e, _)| e == element)
            .map(|(_, v)| *v)
            .collect();
        let after: Vec<&Value> = new_items
            .iter()
            .filter(|(e, _)| e == element)
            .map(|(_, v)| *v)
            .collect();
        path.push(element.clone());
        match (before.len(), after.len()) {
            (0..=1, 0..=1) => compare_values(
                before.first().copied(),
                after.first().copied(),
                spec.item,
                path,
                out,
            ),
            (2.., 2..) => {
                if before != after {
                    out.modified.insert(path);
                }
            }
            (2.., _) => {
                if let Some(item) = after.first() {
                    compare_values(None, Some(item), spec.item, path, out);
                }
                out.removed.insert(path);
            }
            (_, _) => {
                if let Some(item) = before.first() {
                    compare_values(Some(item), None, spec.item, path, out);
                }
                out.added.insert(path);
            }
        }
        path.pop();
    }
    true
}

fn indexed<'a>(spec: &ListSpec, items: &'a [Value]) -> Option<Vec<(String, &'a Value)>> {
    items
        .iter()
        .map(|item| item_element(spec, item).ok().map(|e| (e, item)))
        .collect()
}

/// A path as kube prints it in conflicts: `.spec.containers[name="nginx"].image`.
pub(crate) fn display_path(path: &[String]) -> String {
    path.iter()
        .map(|element| display_element(element))
        .collect()
}

fn display_element(element: &str) -> String {
    if let Some(name) = element.strip_prefix("f:") {
        return format!(".{name}");
    }
    if let Some(keys) = element.strip_prefix("k:") {
        let parsed: Option<Map<String, Value>> = serde_json::from_str(keys).ok();
        let Some(parsed) = parsed else {
            return format!("[{keys}]");
        };
        let parts: Vec<String> = parsed
            .iter()
            .map(|(name, value)| format!("{name}={}", display_value(value)))
            .collect();
        return format!("[{}]", parts.join(","));
    }
    if let Some(value) = element.strip_prefix("v:") {
        let shown =
            serde_json::from_str(value).map_or_else(|_| value.to_owned(), |v| display_value(&v));
        return format!("[={shown}]");
    }
    if let Some(index) = element.strip_prefix("i:") {
        return format!("[{index}]");
    }
    element.to_owned()
}

/// structured-merge-diff's `value.ToString`: strings quoted, numbers and booleans bare.
fn display_value(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::String(s) => Value::from(s.as_str()).to_string(),
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(display_value)
                .collect::<Vec<_>>()
                .join(",")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{k}={}", display_value(v)))
                .collect::<Vec<_>>()
                .join(",")
        ),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn path(elements: &[&str]) -> Path {
        elements.iter().map(|e| (*e).to_owned()).collect()
    }

    #[test]
    fn fields_v1_round_trips_with_dot_for_members_with_children() {
        let encoded = json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                             "f:spec": {"f:containers": {"k:{\"name\":\"a\"}": {".": {}, "f:image": {}}}}});
        let set = FieldSet::from_fields_v1(&encoded).unwrap();
        assert!(set.has(&path(&["f:metadata", "f:labels"])));
        assert!(set.has(&path(&["f:metadata", "f:labels", "f:app"])));
        assert!(!set.has(&path(&["f:metadata"])));
        assert_eq!(set.to_fields_v1(), encoded);
        assert!(FieldSet::from_fields_v1(&json!({"x:bad": {}})).is_err());
        assert!(FieldSet::from_fields_v1(&json!([])).is_err());
    }

    #[test]
    fn set_operations_work_path_by_path() {
        let mut a = FieldSet::default();
        a.insert(&path(&["f:data"]));
        a.insert(&path(&["f:data", "f:x"]));
        let mut b = FieldSet::default();
        b.insert(&path(&["f:data", "f:x"]));
        let difference = a.difference(&b);
        assert!(difference.has(&path(&["f:data"])) && !difference.has(&path(&["f:data", "f:x"])));
        assert_eq!(a.intersection(&b), b);
        assert_eq!(a.union(&b), a);
        let mut prefix = FieldSet::default();
        prefix.insert(&path(&["f:data"]));
        assert!(a.recursive_difference(&prefix).is_empty());
        assert_eq!(a.paths(), vec![path(&["f:data"]), path(&["f:data", "f:x"])]);
    }

    #[test]
    fn paths_display_like_kube() {
        assert_eq!(
            display_path(&path(&[
                "f:spec",
                "f:containers",
                "k:{\"name\":\"nginx\"}",
                "f:image"
            ])),
            r#".spec.containers[name="nginx"].image"#
        );
        assert_eq!(
            display_path(&path(&[
                "f:ports",
                "k:{\"containerPort\":80,\"protocol\":\"TCP\"}"
            ])),
            r#".ports[containerPort=80,protocol="TCP"]"#
        );
        assert_eq!(
            display_path(&path(&["f:metadata", "f:finalizers", "v:\"a\""])),
            r#".metadata.finalizers[="a"]"#
        );
        assert_eq!(display_path(&path(&["f:list", "i:3"])), ".list[3]");
    }
}
