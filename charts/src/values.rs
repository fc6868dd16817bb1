//! Values as Helm 3 computes them (`pkg/chartutil/{coalesce,dependencies,values}.go`):
//! coalescing user values over chart defaults (parent over subchart, `global` copied into
//! every subchart, `null` deleting a key), dependency `condition`/`tags`/`alias`/`enabled`,
//! and `import-values` in both forms.
//!
//! Values are the template engine's [`Value`]s: maps are shared references, as Go's are, so
//! the aliasing of Helm's shallow copies (`copyMap` in `coalesceGlobals`) is reproduced.

use std::collections::BTreeMap;

use landscaper_templating::gotemplate::Value;
use landscaper_templating::gotemplate::value::{Elem, GoMap, MapRef, new_map};

use crate::ChartError;
use crate::chart::{Chart, Dependency};
use crate::semver::is_compatible_range;

pub const GLOBAL_KEY: &str = "global";

/// A fresh `map[string]interface{}`.
pub fn new_table() -> MapRef {
    new_map(Elem::Interface, BTreeMap::new())
}

/// Helm's `istable`: a `map[string]interface{}`.
pub fn as_table(v: &Value) -> Option<&MapRef> {
    match v {
        Value::Map(m) if m.elem == Elem::Interface => Some(m),
        _ => None,
    }
}

/// `copystructure.Copy`: a deep copy of maps and lists.
pub fn deep_copy(v: &Value) -> Value {
    match v {
        Value::Map(m) => Value::Map(deep_copy_map(m)),
        Value::List(l) => Value::typed_list(l.elem, l.iter().map(deep_copy).collect()),
        other => other.clone(),
    }
}

pub fn deep_copy_map(m: &GoMap) -> MapRef {
    new_map(
        m.elem,
        m.borrow()
            .iter()
            .map(|(k, v)| (k.clone(), deep_copy(v)))
            .collect(),
    )
}

/// A chart's default values as a fresh table.
pub fn chart_values(c: &Chart) -> MapRef {
    match Value::from_json(&serde_json::Value::Object(c.values.clone())) {
        Value::Map(m) => m,
        _ => new_table(),
    }
}

fn concat_prefix(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else {
        format!("{a}.{b}")
    }
}

/// `CoalesceValues` (merge = false) and `MergeValues` (merge = true): a copy of `vals`
/// coalesced with the chart's defaults and those of its dependencies.
pub fn coalesce_values(
    c: &Chart,
    vals: Option<&MapRef>,
    merge: bool,
) -> Result<MapRef, ChartError> {
    let dest = match vals {
        Some(v) => deep_copy_map(v),
        None => new_table(),
    };
    coalesce(c, dest, "", merge)
}

fn coalesce(c: &Chart, dest: MapRef, prefix: &str, merge: bool) -> Result<MapRef, ChartError> {
    coalesce_chart_values(c, &dest, prefix, merge);
    coalesce_deps(c, dest, prefix, merge)
}

fn coalesce_deps(c: &Chart, dest: MapRef, prefix: &str, merge: bool) -> Result<MapRef, ChartError> {
    for sub in &c.dependencies {
        let name = sub.name();
        let existing = dest.borrow().get(name).cloned();
        let dv = match existing {
            None => {
                let t = new_table();
                dest.borrow_mut()
                    .insert(name.to_string(), Value::Map(t.clone()));
                t
            }
            Some(v) => match as_table(&v) {
                Some(t) => t.clone(),
                None => {
                    return Err(ChartError::Values(format!(
                        "type mismatch on {name}: %!t({}={})",
                        v.type_name(),
                        landscaper_templating::gotemplate::print::format_value(&v)
                    )));
                }
            },
        };
        let sub_prefix = concat_prefix(prefix, c.name());
        coalesce_globals(&dv, &dest);
        let out = coalesce(sub, dv, &sub_prefix, merge)?;
        dest.borrow_mut().insert(name.to_string(), Value::Map(out));
    }
    Ok(dest)
}

/// `coalesceGlobals`: the parent's `global` over the subchart's.
fn coalesce_globals(dest: &MapRef, src: &MapRef) {
    let dg = match dest.borrow().get(GLOBAL_KEY).cloned() {
        None => new_table(),
        Some(v) => match as_table(&v) {
            Some(t) => t.clone(),
            None => return,
        },
    };
    let sg = match src.borrow().get(GLOBAL_KEY).cloned() {
        None => new_table(),
        Some(v) => match as_table(&v) {
            Some(t) => t.clone(),
            None => return,
        },
    };
    let entries: Vec<(String, Value)> = sg
        .borrow()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (key, val) in entries {
        if let Some(t) = as_table(&val) {
            // copyMap: a shallow copy.
            let vv = new_map(Elem::Interface, t.borrow().clone());
            let destv = dg.borrow().get(&key).cloned();
            match destv {
                None => {
                    dg.borrow_mut().insert(key, Value::Map(vv));
                }
                Some(dv) => {
                    if let Some(dvm) = as_table(&dv) {
                        coalesce_tables(&vv, dvm, true);
                        dg.borrow_mut().insert(key, Value::Map(vv));
                    }
                }
            }
        } else {
            let dv_is_table = dg.borrow().get(&key).is_some_and(|v| as_table(v).is_some());
            if !dv_is_table {
                dg.borrow_mut().insert(key, val);
            }
        }
    }
    dest.borrow_mut()
        .insert(GLOBAL_KEY.to_string(), Value::Map(dg));
}

/// `coalesceValues`: the chart's defaults under the given values.
fn coalesce_chart_values(c: &Chart, v: &MapRef, _prefix: &str, merge: bool) {
    let vc = chart_values(c);
    let entries: Vec<(String, Value)> = vc
        .borrow()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (key, val) in entries {
        let existing = v.borrow().get(&key).cloned();
        match existing {
            Some(Value::Nil) if !merge => {
                v.borrow_mut().remove(&key);
            }
            Some(value) => {
                if let (Some(dest), Some(src)) = (as_table(&value), as_table(&val)) {
                    let merge = merge || c.dependencies.iter().any(|d| d.name() == key);
                    coalesce_tables(dest, src, merge);
                }
            }
            None => {
                v.borrow_mut().insert(key, val);
            }
        }
    }
}

/// `coalesceTablesFullKey`: `src` under `dst` (dst wins); with !merge, a nil in dst deletes.
pub fn coalesce_tables(dst: &MapRef, src: &MapRef, merge: bool) {
    if std::rc::Rc::ptr_eq(dst, src) {
        return;
    }
    let entries: Vec<(String, Value)> = src
        .borrow()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (key, val) in entries {
        let dv = dst.borrow().get(&key).cloned();
        match dv {
            Some(Value::Nil) if !merge => {
                dst.borrow_mut().remove(&key);
            }
            None => {
                dst.borrow_mut().insert(key, val);
            }
            Some(dv) => {
                if let (Some(s), Some(d)) = (as_table(&val), as_table(&dv)) {
                    coalesce_tables(d, s, merge);
                }
            }
        }
    }
}

/// `Values.Table`: the table at a dotted path.
pub fn table(v: &MapRef, path: &str) -> Option<MapRef> {
    let mut cur = v.clone();
    for part in path.split('.') {
        let next = cur.borrow().get(part).cloned()?;
        cur = as_table(&next)?.clone();
    }
    Some(cur)
}

/// `Values.PathValue`: a non-table value at a dotted path.
fn path_value(v: &MapRef, path: &str) -> Option<Value> {
    if path.is_empty() {
        return None;
    }
    let (parent, key) = match path.rsplit_once('.') {
        Some((p, k)) => (table(v, p)?, k),
        None => (v.clone(), path),
    };
    let val = parent.borrow().get(key).cloned()?;
    if as_table(&val).is_some() {
        return None;
    }
    Some(val)
}

/// `ProcessDependenciesWithMerge`: drops disabled dependencies (conditions, tags), applies
/// aliases and imports values.
pub fn process_dependencies(c: &mut Chart, vals: &MapRef) -> Result<(), ChartError> {
    process_dependency_enabled(c, vals, "")?;
    process_dependency_import_values(c)
}

fn process_dependency_enabled(c: &mut Chart, v: &MapRef, path: &str) -> Result<(), ChartError> {
    if c.metadata.dependencies.is_empty() {
        return Ok(());
    }
    let existing = std::mem::take(&mut c.dependencies);
    let mut deps: Vec<Chart> = existing
        .iter()
        .filter(|e| {
            !c.metadata
                .dependencies
                .iter()
                .any(|r| e.name() == r.name && is_compatible_range(&r.version, &e.metadata.version))
        })
        .cloned()
        .collect();
    for req in &mut c.metadata.dependencies {
        if let Some(found) = existing.iter().find(|e| {
            e.name() == req.name && is_compatible_range(&req.version, &e.metadata.version)
        }) {
            let mut copy = found.clone();
            if !req.alias.is_empty() {
                copy.metadata.name = req.alias.clone();
            }
            deps.push(copy);
        }
        if !req.alias.is_empty() {
            req.name = req.alias.clone();
        }
    }
    c.dependencies = deps;
    for r in &mut c.metadata.dependencies {
        r.enabled = true;
    }
    let cvals = coalesce_values(c, Some(v), false)?;
    process_dependency_tags(&mut c.metadata.dependencies, &cvals);
    process_dependency_conditions(&mut c.metadata.dependencies, &cvals, path);
    let removed: Vec<String> = c
        .metadata
        .dependencies
        .iter()
        .filter(|r| !r.enabled)
        .map(|r| r.name.clone())
        .collect();
    c.dependencies
        .retain(|d| !removed.iter().any(|n| n == d.name()));
    c.metadata
        .dependencies
        .retain(|d| !removed.contains(&d.name));
    for t in &mut c.dependencies {
        let sub_path = format!("{path}{}.", t.name());
        process_dependency_enabled(t, &cvals, &sub_path)?;
    }
    Ok(())
}

fn process_dependency_tags(reqs: &mut [Dependency], cvals: &MapRef) {
    let Some(vt) = table(cvals, "tags") else {
        return;
    };
    for r in reqs {
        let (mut has_true, mut has_false) = (false, false);
        for k in &r.tags {
            if let Some(Value::Bool(b)) = vt.borrow().get(k) {
                if *b {
                    has_true = true;
                } else {
                    has_false = true;
                }
            }
        }
        if !has_true && has_false {
            r.enabled = false;
        } else if has_true || !has_false {
            r.enabled = true;
        }
    }
}

fn process_dependency_conditions(reqs: &mut [Dependency], cvals: &MapRef, path: &str) {
    for r in reqs {
        for cond in r.condition.trim().split(',') {
            if cond.is_empty() {
                continue;
            }
            if let Some(Value::Bool(b)) = path_value(cvals, &format!("{path}{cond}")) {
                r.enabled = b;
                break;
            }
        }
    }
}

fn path_to_map(path: &str, data: MapRef) -> MapRef {
    if path == "." {
        return data;
    }
    let mut cur = data;
    for part in path.split('.').rev() {
        let mut m = BTreeMap::new();
        m.insert(part.to_string(), Value::Map(cur));
        cur = new_map(Elem::Interface, m);
    }
    cur
}

fn go_sprint(v: Option<&serde_json::Value>) -> String {
    match v {
        None | Some(serde_json::Value::Null) => "<nil>".into(),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(other) => {
            landscaper_templating::gotemplate::print::format_value(&Value::from_json(other))
        }
    }
}

fn process_import_values(c: &mut Chart) -> Result<(), ChartError> {
    if c.metadata.dependencies.is_empty() {
        return Ok(());
    }
    let cvals = coalesce_values(c, None, true)?;
    let b = new_table();
    for r in &mut c.metadata.dependencies {
        let mut out = Vec::new();
        for riv in &r.import_values {
            match riv {
                serde_json::Value::Object(iv) => {
                    let child = go_sprint(iv.get("child"));
                    let parent = go_sprint(iv.get("parent"));
                    out.push(serde_json::json!({"child": child, "parent": parent}));
                    if let Some(vv) = table(&cvals, &format!("{}.{child}", r.name)) {
                        coalesce_tables(&b, &path_to_map(&parent, vv), true);
                    }
                }
                serde_json::Value::String(iv) => {
                    let child = format!("exports.{iv}");
                    out.push(serde_json::json!({"child": child, "parent": "."}));
                    if let Some(vm) = table(&cvals, &format!("{}.{child}", r.name)) {
                        coalesce_tables(&b, &vm, true);
                    }
                }
                _ => {}
            }
        }
        r.import_values = out;
    }
    let merged = deep_copy_map(&cvals);
    coalesce_tables(&merged, &b, true);
    let json = Value::Map(merged)
        .to_json()
        .map_err(|e| ChartError::Values(format!("import-values of {}: {e}", c.name())))?;
    if let serde_json::Value::Object(o) = json {
        c.values = o;
    }
    Ok(())
}

fn process_dependency_import_values(c: &mut Chart) -> Result<(), ChartError> {
    for d in &mut c.dependencies {
        process_dependency_import_values(d)?;
    }
    process_import_values(c)
}

/// `mergeMaps` of Helm's values options: `b` over `a`, tables merged recursively.
pub fn merge_maps(a: &MapRef, b: &MapRef) -> MapRef {
    let out = new_map(Elem::Interface, a.borrow().clone());
    for (k, v) in b.borrow().iter() {
        if let Some(vm) = as_table(v) {
            let existing = out.borrow().get(k).cloned();
            if let Some(bv) = existing.as_ref().and_then(as_table) {
                let merged = merge_maps(bv, vm);
                out.borrow_mut().insert(k.clone(), Value::Map(merged));
                continue;
            }
        }
        out.borrow_mut().insert(k.clone(), v.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::Metadata;
    use serde_json::json;

    fn chart(name: &str, values: serde_json::Value, deps: Vec<Chart>) -> Chart {
        Chart {
            metadata: Metadata {
                name: name.into(),
                version: "1.0.0".into(),
                api_version: "v2".into(),
                ..Metadata::default()
            },
            values: values.as_object().cloned().unwrap_or_default(),
            dependencies: deps,
            ..Chart::default()
        }
    }

    fn table_of(v: serde_json::Value) -> MapRef {
        match Value::from_json(&v) {
            Value::Map(m) => m,
            _ => unreachable!(),
        }
    }

    fn json_of(m: &MapRef) -> serde_json::Value {
        Value::Map(m.clone()).to_json().unwrap()
    }

    #[test]
    fn user_values_win_null_deletes_and_subchart_defaults_fill_in() {
        let sub = chart(
            "sub",
            json!({"a": 1, "b": {"c": 2, "d": 3}, "global": {"g": "sub"}}),
            vec![],
        );
        let top = chart(
            "top",
            json!({"x": 1, "y": {"z": 1, "w": 2}, "sub": {"a": 10}, "global": {"g": "top", "h": 1}}),
            vec![sub],
        );
        let user = table_of(json!({"x": 5, "y": {"w": null}, "sub": {"b": {"c": null}}}));
        let out = json_of(&coalesce_values(&top, Some(&user), false).unwrap());
        assert_eq!(out["x"], json!(5.0));
        assert_eq!(out["y"], json!({"z": 1.0}));
        assert_eq!(out["sub"]["a"], json!(10.0));
        assert_eq!(out["sub"]["b"], json!({"d": 3.0}));
        // The parent's globals are copied into the subchart and win there.
        assert_eq!(out["sub"]["global"], json!({"g": "top", "h": 1.0}));
        // The caller's values are not modified.
        assert_eq!(json_of(&user)["y"], json!({"w": null}));
    }

    #[test]
    fn merge_keeps_nulls() {
        let top = chart("top", json!({"a": {"b": 1}}), vec![]);
        let user = table_of(json!({"a": {"b": null}}));
        let out = json_of(&coalesce_values(&top, Some(&user), true).unwrap());
        assert_eq!(out["a"], json!({"b": null}));
    }

    #[test]
    fn conditions_tags_and_aliases_decide_the_dependencies() {
        let mut top = chart(
            "top",
            json!({"one": {"enabled": false}, "tags": {"front": false}}),
            vec![
                chart("one", json!({}), vec![]),
                chart("two", json!({}), vec![]),
                chart("three", json!({}), vec![]),
            ],
        );
        top.metadata.dependencies = vec![
            Dependency {
                name: "one".into(),
                condition: "one.enabled".into(),
                ..Dependency::default()
            },
            Dependency {
                name: "two".into(),
                version: "1.0.0".into(),
                tags: vec!["front".into()],
                alias: "deux".into(),
                ..Dependency::default()
            },
            Dependency {
                name: "three".into(),
                tags: vec!["front".into()],
                condition: "drei.on".into(),
                alias: "drei".into(),
                version: "1.x".into(),
                ..Dependency::default()
            },
        ];
        let user = table_of(json!({"drei": {"on": true}}));
        process_dependencies(&mut top, &user).unwrap();
        let names: Vec<&str> = top.dependencies.iter().map(Chart::name).collect();
        // one: condition false; two: tag false; three: condition true overrides the tag.
        assert_eq!(names, vec!["drei"]);
        assert_eq!(top.metadata.dependencies.len(), 1);
        assert_eq!(top.metadata.dependencies[0].name, "drei");
    }

    #[test]
    fn version_mismatch_is_not_the_dependency() {
        let mut top = chart("top", json!({}), vec![chart("sub", json!({}), vec![])]);
        top.metadata.dependencies = vec![Dependency {
            name: "sub".into(),
            version: "2.x".into(),
            alias: "other".into(),
            ..Dependency::default()
        }];
        process_dependencies(&mut top, &new_table()).unwrap();
        // Not matched: kept under its own name, the alias finds nothing.
        let names: Vec<&str> = top.dependencies.iter().map(Chart::name).collect();
        assert_eq!(names, vec!["sub"]);
    }

    #[test]
    fn import_values_in_both_forms() {
        let sub = chart(
            "sub",
            json!({"exports": {"data": {"port": 80}}, "inner": {"deep": {"k": "v"}}}),
            vec![],
        );
        let mut top = chart("top", json!({"port": 1}), vec![sub]);
        top.metadata.dependencies = vec![Dependency {
            name: "sub".into(),
            import_values: vec![
                json!("data"),
                json!({"child": "inner.deep", "parent": "imported"}),
            ],
            ..Dependency::default()
        }];
        process_dependencies(&mut top, &new_table()).unwrap();
        // The parent's own value wins over the imported one.
        assert_eq!(top.values["port"], json!(1.0));
        assert_eq!(top.values["imported"], json!({"k": "v"}));
        assert_eq!(
            top.metadata.dependencies[0].import_values[0],
            json!({"child": "exports.data", "parent": "."})
        );
    }

    #[test]
    fn merge_maps_overrides_leaves_and_merges_tables() {
        let a = table_of(json!({"a": {"b": 1, "c": 2}, "d": [1]}));
        let b = table_of(json!({"a": {"b": 3}, "d": "x"}));
        assert_eq!(
            json_of(&merge_maps(&a, &b)),
            json!({"a": {"b": 3.0, "c": 2.0}, "d": "x"})
        );
    }
}
