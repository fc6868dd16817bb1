//! The data-flow index: which installations of a scope import or export which DataObject or
//! Target reference. Predecessor, successor and duplicate-export checks ask it for the few
//! installations that matter instead of reading every sibling (which made a namespace of n root
//! installations cost n² object reads).
//!
//! Entries are derived from the stored objects and written in the same redb transaction, so
//! the index is never behind the objects it describes.

use serde_json::Value;

use crate::key::ObjectKey;
use crate::model::Kind;
use crate::model::constants::ENCOMPASSED_BY_LABEL;

/// Whether an installation reads (imports) or writes (exports) a reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FlowDirection {
    Import,
    Export,
}

/// What a reference names: a DataObject (`dataRef`) or a Target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FlowKind {
    Data,
    Target,
}

/// One edge end of the data flow: an installation of a scope imports or exports `reference`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FlowRef<'a> {
    pub direction: FlowDirection,
    pub kind: FlowKind,
    pub reference: &'a str,
}

impl FlowDirection {
    fn tag(self) -> char {
        match self {
            FlowDirection::Import => 'i',
            FlowDirection::Export => 'e',
        }
    }
}

impl FlowKind {
    fn tag(self) -> char {
        match self {
            FlowKind::Data => 'd',
            FlowKind::Target => 't',
        }
    }
}

/// The scope of siblings: namespace and parent installation (empty for roots).
fn scope_prefix(namespace: &str, parent: Option<&str>) -> String {
    format!("{namespace}\0{}\0", parent.unwrap_or_default())
}

/// The index prefix under which the names of the matching installations follow.
pub(crate) fn query_prefix(namespace: &str, parent: Option<&str>, flow: FlowRef<'_>) -> String {
    format!(
        "{}{}{}\0{}\0",
        scope_prefix(namespace, parent),
        flow.direction.tag(),
        flow.kind.tag(),
        flow.reference
    )
}

fn strings(value: Option<&Value>) -> impl Iterator<Item = &str> {
    value
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .into_iter()
}

/// The references an installation object imports and exports, as Landscaper's `IsSuccessor`
/// compares them: data imports by `dataRef`; target imports by `target`, every element of
/// `targets` and `targetMap`, `targetListRef` and `targetMapRef`; exports by `dataRef` and
/// `target`.
pub fn installation_flows(object: &Value) -> Vec<(FlowDirection, FlowKind, String)> {
    let mut out = Vec::new();
    let list = |pointer: &str| -> Vec<&Value> {
        object
            .pointer(pointer)
            .and_then(Value::as_array)
            .map(|a| a.iter().collect())
            .unwrap_or_default()
    };
    for import in list("/spec/imports/data") {
        for r in strings(import.get("dataRef")) {
            out.push((FlowDirection::Import, FlowKind::Data, r.to_string()));
        }
    }
    for import in list("/spec/imports/targets") {
        let mut add = |r: &str| out.push((FlowDirection::Import, FlowKind::Target, r.to_string()));
        for field in ["target", "targetListRef", "targetMapRef"] {
            strings(import.get(field)).for_each(&mut add);
        }
        if let Some(items) = import.get("targets").and_then(Value::as_array) {
            items
                .iter()
                .flat_map(|t| strings(Some(t)))
                .for_each(&mut add);
        }
        if let Some(map) = import.get("targetMap").and_then(Value::as_object) {
            map.values()
                .flat_map(|t| strings(Some(t)))
                .for_each(&mut add);
        }
    }
    for export in list("/spec/exports/data") {
        for r in strings(export.get("dataRef")) {
            out.push((FlowDirection::Export, FlowKind::Data, r.to_string()));
        }
    }
    for export in list("/spec/exports/targets") {
        for r in strings(export.get("target")) {
            out.push((FlowDirection::Export, FlowKind::Target, r.to_string()));
        }
    }
    out.sort_by(|a, b| (a.0.tag(), a.1.tag(), &a.2).cmp(&(b.0.tag(), b.1.tag(), &b.2)));
    out.dedup();
    out
}

/// The index keys of one stored object (none for other kinds).
pub(crate) fn index_keys(key: &ObjectKey, object: &Value) -> Vec<String> {
    if key.kind != Kind::Installation {
        return Vec::new();
    }
    let parent = object
        .pointer("/metadata/labels")
        .and_then(|l| l.get(ENCOMPASSED_BY_LABEL))
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty());
    installation_flows(object)
        .into_iter()
        .map(|(direction, kind, reference)| {
            let flow = FlowRef {
                direction,
                kind,
                reference: &reference,
            };
            format!("{}{}", query_prefix(&key.namespace, parent, flow), key.name)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_import_and_export_form_is_indexed() {
        let inst = json!({
            "metadata": {"name": "a", "namespace": "ns",
                "labels": {ENCOMPASSED_BY_LABEL: "root"}},
            "spec": {
                "imports": {
                    "data": [{"name": "x", "dataRef": "d1"}, {"name": "cm", "configMapRef": {"name": "c"}}],
                    "targets": [
                        {"name": "t", "target": "t1"},
                        {"name": "ts", "targets": ["t2", "t3"]},
                        {"name": "tm", "targetMap": {"k": "t4"}},
                        {"name": "tl", "targetListRef": "t5"},
                        {"name": "tr", "targetMapRef": "t6"}
                    ]
                },
                "exports": {"data": [{"name": "o", "dataRef": "d2"}], "targets": [{"name": "ot", "target": "t7"}]}
            }
        });
        let key = ObjectKey::new(Kind::Installation, "ns", "a");
        let keys = index_keys(&key, &inst);
        let expect = |d, k, r: &str| {
            format!(
                "{}a",
                query_prefix(
                    "ns",
                    Some("root"),
                    FlowRef {
                        direction: d,
                        kind: k,
                        reference: r
                    }
                )
            )
        };
        use FlowDirection::*;
        use FlowKind::*;
        let mut want = vec![
            expect(Import, Data, "d1"),
            expect(Import, Target, "t1"),
            expect(Import, Target, "t2"),
            expect(Import, Target, "t3"),
            expect(Import, Target, "t4"),
            expect(Import, Target, "t5"),
            expect(Import, Target, "t6"),
            expect(Export, Data, "d2"),
            expect(Export, Target, "t7"),
        ];
        let mut got = keys.clone();
        want.sort();
        got.sort();
        assert_eq!(got, want);
    }

    #[test]
    fn roots_and_children_are_different_scopes_and_other_kinds_have_no_entries() {
        let flow = FlowRef {
            direction: FlowDirection::Export,
            kind: FlowKind::Data,
            reference: "d",
        };
        assert_ne!(
            query_prefix("ns", None, flow),
            query_prefix("ns", Some("p"), flow)
        );
        // A reference that is a prefix of another must not match it.
        let longer = FlowRef {
            reference: "dd",
            ..flow
        };
        assert!(!query_prefix("ns", None, longer).starts_with(&query_prefix("ns", None, flow)));
        let t =
            json!({"metadata": {"name": "t"}, "spec": {"exports": {"data": [{"dataRef": "d"}]}}});
        assert!(index_keys(&ObjectKey::new(Kind::Target, "ns", "t"), &t).is_empty());
    }
}
