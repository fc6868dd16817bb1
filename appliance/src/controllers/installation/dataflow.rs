//! An installation's data: its blueprint, its import values read from its scope, the imports
//! hash, the rendered subobjects (Execution spec, subinstallation templates) and its exports.
//! Reading is done here; the phase handlers decide what to write.

use std::collections::{BTreeMap, BTreeSet};

use landscaper_store::model::constants::*;
use landscaper_store::model::names::generate_data_object_name;
use landscaper_store::model::{ConfigMap, Installation, Secret, from_value};
use landscaper_store::{
    FlowDirection, FlowKind, FlowRef, Kind, LabelSelector, ObjectKey, Store, object,
};
use landscaper_templating::blueprint::{
    Bindings, Blueprint, ExportBindings, ImportType, InstallationTemplate, construct_imports,
    evaluate_import_data_mappings, find_cycle, parse_yaml, render_deploy_executions,
    render_export_executions, render_import_executions, render_subinstallations,
    resolve_deploy_items,
};
use landscaper_templating::spiff::{self, SpiffOptions};
use serde_json::{Map, Value, json};
use sha2::Digest as _;

use crate::controllers::lserror::{LsError, PhaseError};

/// The scope an installation lives in: `""` for roots, `Inst.<parent>` for subinstallations.
pub fn parent_scope(inst: &Installation) -> String {
    match parent_name(inst) {
        Some(p) => format!("{INSTALLATION_PREFIX}{p}"),
        None => String::new(),
    }
}

/// The scope an installation creates for its children and imports: `Inst.<name>`.
pub fn own_scope(inst: &Installation) -> String {
    format!(
        "{INSTALLATION_PREFIX}{}",
        inst.metadata.name.as_deref().unwrap_or_default()
    )
}

/// The parent installation's name (label `landscaper.gardener.cloud/encompassed-by`).
pub fn parent_name(inst: &Installation) -> Option<&str> {
    inst.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(ENCOMPASSED_BY_LABEL))
        .map(String::as_str)
        .filter(|s| !s.is_empty())
}

pub fn name(inst: &Installation) -> &str {
    inst.metadata.name.as_deref().unwrap_or_default()
}

pub fn namespace(inst: &Installation) -> &str {
    inst.metadata.namespace.as_deref().unwrap_or("default")
}

fn fatal(op: &str, reason: &str, message: impl Into<String>) -> PhaseError {
    PhaseError::Fatal(LsError::new(op, reason, message))
}

fn normal(op: &str, reason: &str, message: impl Into<String>) -> PhaseError {
    PhaseError::Normal(LsError::new(op, reason, message))
}

fn store_error(op: &str, e: landscaper_store::StoreError) -> PhaseError {
    normal(op, "Store", e.to_string())
}

/// The prefix of `spec.blueprint.ref.resourceName` that names a blueprint directory in the
/// manifests folder (an appliance extension for edge users without a component registry).
pub const LOCAL_BLUEPRINT_PREFIX: &str = "local://";

/// The installation's blueprint: inline (`spec.blueprint.inline.filesystem`), or a directory of
/// the manifests folder (`spec.blueprint.ref.resourceName: local://<path>`).
pub fn load_blueprint(
    inst: &Installation,
    manifests_dir: Option<&std::path::Path>,
) -> Result<Blueprint, PhaseError> {
    const OP: &str = "InitPrerequisites";
    let Some(fs) = inst
        .spec
        .blueprint
        .inline
        .as_ref()
        .and_then(|i| i.filesystem.as_ref())
    else {
        let reference = inst
            .spec
            .blueprint
            .reference
            .as_ref()
            .and_then(|r| r.resource_name.as_deref());
        if let Some(path) = reference.and_then(|r| r.strip_prefix(LOCAL_BLUEPRINT_PREFIX)) {
            return load_local_blueprint(path, manifests_dir);
        }
        if reference.is_some() {
            return Err(fatal(
                OP,
                "ResolveBlueprint",
                format!(
                    "blueprint references (spec.blueprint.ref) need a component registry, which the appliance does not have: use spec.blueprint.inline.filesystem, or resourceName: {LOCAL_BLUEPRINT_PREFIX}<directory in the manifests folder>"
                ),
            ));
        }
        return Err(fatal(
            OP,
            "ResolveBlueprint",
            "spec.blueprint: neither inline nor ref is given",
        ));
    };
    Blueprint::from_yamlfs(fs).map_err(|e| {
        fatal(
            OP,
            "ResolveBlueprint",
            format!("unable to read the inline blueprint: {e}"),
        )
    })
}

/// A blueprint directory inside the manifests folder; paths that leave it are refused.
fn load_local_blueprint(
    path: &str,
    manifests_dir: Option<&std::path::Path>,
) -> Result<Blueprint, PhaseError> {
    const OP: &str = "InitPrerequisites";
    let Some(root) = manifests_dir else {
        return Err(fatal(
            OP,
            "ResolveBlueprint",
            "local blueprints need the manifests folder",
        ));
    };
    let relative = std::path::Path::new(path);
    if relative.is_absolute()
        || relative
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(fatal(
            OP,
            "ResolveBlueprint",
            format!(
                "spec.blueprint.ref.resourceName: {LOCAL_BLUEPRINT_PREFIX}{path}: the path must be relative to the manifests folder and stay inside it"
            ),
        ));
    }
    let dir = root.join(relative);
    // A normal error: the directory may appear with the next copy into the folder.
    if !dir.join("blueprint.yaml").is_file() {
        return Err(normal(
            OP,
            "ResolveBlueprint",
            format!(
                "spec.blueprint.ref.resourceName: {LOCAL_BLUEPRINT_PREFIX}{path}: no blueprint.yaml in {}",
                dir.display()
            ),
        ));
    }
    Blueprint::from_dir(&dir).map_err(|e| {
        fatal(
            OP,
            "ResolveBlueprint",
            format!("unable to read the blueprint {LOCAL_BLUEPRINT_PREFIX}{path}: {e}"),
        )
    })
}

/// Names (in the parent scope) of the DataObjects and Targets an installation imports.
pub fn imported_refs(inst: &Installation) -> (Vec<String>, Vec<String>) {
    let data = inst
        .spec
        .data_imports()
        .iter()
        .filter_map(|i| i.data_ref.clone())
        .collect();
    let mut targets = Vec::new();
    for t in inst.spec.target_imports() {
        if let Some(x) = &t.target {
            targets.push(x.clone());
        }
        targets.extend(t.targets.iter().flatten().cloned());
        targets.extend(t.target_map.iter().flat_map(|m| m.values().cloned()));
        if let Some(x) = &t.target_list_ref {
            targets.push(x.clone());
        }
        if let Some(x) = &t.target_map_ref {
            targets.push(x.clone());
        }
    }
    (data, targets)
}

/// The DataObject and Target references the installation exports.
pub fn exported_refs(inst: &Installation) -> (Vec<String>, Vec<String>) {
    (
        inst.spec
            .data_exports()
            .iter()
            .map(|e| e.data_ref.clone())
            .collect(),
        inst.spec
            .target_exports()
            .iter()
            .map(|e| e.target.clone())
            .collect(),
    )
}

/// Whether `successor` imports something `inst` exports (Landscaper's `IsSuccessor`).
pub fn is_successor(inst: &Installation, successor: &Installation) -> bool {
    let (data, targets) = imported_refs(successor);
    inst.spec
        .data_exports()
        .iter()
        .any(|e| data.contains(&e.data_ref))
        || inst
            .spec
            .target_exports()
            .iter()
            .any(|e| targets.contains(&e.target))
}

/// The exports of `inst` that a sibling exports too, as Landscaper's `fetchPredecessors` words
/// it (`None` when there are none). Siblings being deleted are left out: they give up their
/// exports.
pub fn duplicate_exports(inst: &Installation, siblings: &[Installation]) -> Option<String> {
    let others = |same: &dyn Fn(&Installation) -> bool| -> Vec<String> {
        let mut names: Vec<String> = siblings
            .iter()
            .filter(|s| name(s) != name(inst) && s.metadata.deletion_timestamp.is_none())
            .filter(|s| same(s))
            .map(|s| name(s).to_string())
            .collect();
        if !names.is_empty() {
            names.push(name(inst).to_string());
            names.sort();
        }
        names
    };
    let mut data = Vec::new();
    for e in inst.spec.data_exports() {
        let by = others(&|s| {
            s.spec
                .data_exports()
                .iter()
                .any(|o| o.data_ref == e.data_ref)
        });
        if !by.is_empty() {
            data.push(format!(
                "\n    '{}' is exported by [{}]",
                e.data_ref,
                by.join(", ")
            ));
        }
    }
    let mut targets = Vec::new();
    for e in inst.spec.target_exports() {
        let by = others(&|s| s.spec.target_exports().iter().any(|o| o.target == e.target));
        if !by.is_empty() {
            targets.push(format!(
                "\n    '{}' is exported by [{}]",
                e.target,
                by.join(", ")
            ));
        }
    }
    if data.is_empty() && targets.is_empty() {
        return None;
    }
    let mut msg =
        String::from("the following exports are exported by multiple nested installations:");
    if !data.is_empty() {
        msg.push_str("\n  data exports:");
        msg.push_str(&data.concat());
    }
    if !targets.is_empty() {
        msg.push_str("\n  target exports:");
        msg.push_str(&targets.concat());
    }
    Some(msg)
}

/// A cycle of predecessors reachable from `inst` among its siblings (by name, the first name
/// repeated at the end), as Landscaper's `FetchPredecessors` rejects it.
pub fn predecessor_cycle(inst: &Installation, siblings: &[Installation]) -> Option<Vec<String>> {
    let all: Vec<&Installation> = std::iter::once(inst).chain(siblings.iter()).collect();
    let predecessors: Vec<std::collections::BTreeSet<usize>> = all
        .iter()
        .map(|i| {
            all.iter()
                .enumerate()
                .filter(|(_, p)| name(p) != name(i) && is_successor(p, i))
                .map(|(n, _)| n)
                .collect()
        })
        .collect();
    // Only cycles this installation is part of or waits on matter: search from it alone.
    find_cycle(&predecessors, [0])
        .map(|c| c.into_iter().map(|n| name(all[n]).to_string()).collect())
}

/// The other installations of `inst`'s scope (same namespace and parent) that import or
/// export (`direction`) any of the given DataObject and Target references, found through the
/// store's data-flow index and read fresh from the store. Scanning every sibling instead made
/// n root installations cost n² reads.
pub fn siblings_by_flow(
    store: &Store,
    inst: &Installation,
    direction: FlowDirection,
    data: &[String],
    targets: &[String],
) -> Result<Vec<Installation>, PhaseError> {
    const OP: &str = "FetchSiblings";
    let (ns, parent) = (namespace(inst), parent_name(inst));
    let mut names = BTreeSet::new();
    let refs = data
        .iter()
        .map(|r| (FlowKind::Data, r))
        .chain(targets.iter().map(|r| (FlowKind::Target, r)));
    for (kind, reference) in refs {
        let flow = FlowRef {
            direction,
            kind,
            reference,
        };
        names.extend(
            store
                .installations_by_flow(ns, parent, flow)
                .map_err(|e| store_error(OP, e))?,
        );
    }
    names.remove(name(inst));
    let mut out = Vec::new();
    for n in names {
        let Some(value) = store
            .get(&ObjectKey::new(Kind::Installation, ns, &n))
            .map_err(|e| store_error(OP, e))?
        else {
            continue;
        };
        if let Ok(sibling) = from_value::<Installation>(&value)
            && parent_name(&sibling) == parent
        {
            out.push(sibling);
        }
    }
    Ok(out)
}

/// Siblings that export something `inst` imports: its candidate predecessors.
pub fn exporters_of_imports(
    store: &Store,
    inst: &Installation,
) -> Result<Vec<Installation>, PhaseError> {
    let (data, targets) = imported_refs(inst);
    siblings_by_flow(store, inst, FlowDirection::Export, &data, &targets)
}

/// Siblings that import something `inst` exports: its candidate successors.
pub fn importers_of_exports(
    store: &Store,
    inst: &Installation,
) -> Result<Vec<Installation>, PhaseError> {
    let (data, targets) = exported_refs(inst);
    siblings_by_flow(store, inst, FlowDirection::Import, &data, &targets)
}

/// Siblings that export something `inst` exports too.
pub fn exporters_of_exports(
    store: &Store,
    inst: &Installation,
) -> Result<Vec<Installation>, PhaseError> {
    let (data, targets) = exported_refs(inst);
    siblings_by_flow(store, inst, FlowDirection::Export, &data, &targets)
}

/// The siblings `inst` transitively waits for (predecessors, their predecessors, ...): all
/// a predecessor cycle through or ahead of `inst` can consist of.
pub fn predecessor_closure(
    store: &Store,
    inst: &Installation,
) -> Result<Vec<Installation>, PhaseError> {
    let mut seen = BTreeSet::from([name(inst).to_string()]);
    let mut out: Vec<Installation> = Vec::new();
    let mut next = 0;
    let mut frontier = exporters_of_imports(store, inst)?;
    loop {
        for candidate in frontier {
            if seen.insert(name(&candidate).to_string()) {
                out.push(candidate);
            }
        }
        let Some(current) = out.get(next) else {
            return Ok(out);
        };
        next += 1;
        frontier = exporters_of_imports(store, current)?;
    }
}

/// The siblings being deleted that `from` transitively waits for during its own deletion
/// (successors importing its exports, their successors, ...), stopping at siblings that are
/// not being deleted: all a deletion wait cycle through `from` can consist of.
pub fn deleting_successor_closure(
    store: &Store,
    from: &Installation,
) -> Result<Vec<Installation>, PhaseError> {
    let mut seen = BTreeSet::from([name(from).to_string()]);
    let mut out: Vec<Installation> = Vec::new();
    let mut next = 0;
    let mut frontier = importers_of_exports(store, from)?;
    loop {
        for candidate in frontier {
            if candidate.metadata.deletion_timestamp.is_some()
                && seen.insert(name(&candidate).to_string())
            {
                out.push(candidate);
            }
        }
        let Some(current) = out.get(next) else {
            return Ok(out);
        };
        next += 1;
        frontier = importers_of_exports(store, current)?;
    }
}

/// Reads the values of the installation's imports from its scope: data imports from
/// DataObjects (and, at the root, ConfigMaps and Secrets), target imports from Targets.
/// Missing objects are a fatal error, as in Landscaper's `ImportsSatisfied`.
pub fn read_import_values(
    store: &Store,
    inst: &Installation,
) -> Result<Map<String, Value>, PhaseError> {
    const OP: &str = "ImportsSatisfied";
    let ns = namespace(inst);
    let scope = parent_scope(inst);
    let is_root = parent_name(inst).is_none();
    let get = |kind: Kind, n: &str| -> Result<Option<Value>, PhaseError> {
        store
            .get(&ObjectKey::new(kind, ns, n))
            .map_err(|e| store_error(OP, e))
    };
    let mut out = Map::new();
    for imp in inst.spec.data_imports() {
        let missing = |what: String| {
            fatal(
                OP,
                "ImportsSatisfied",
                format!("import {:?}: {what} not found", imp.name),
            )
        };
        if let Some(r) = &imp.data_ref {
            let object_name = generate_data_object_name(&scope, r);
            let Some(o) = get(Kind::DataObject, &object_name)? else {
                return Err(missing(format!("DataObject {r:?} ({ns}/{object_name})")));
            };
            out.insert(
                imp.name.clone(),
                o.get("data").cloned().unwrap_or(Value::Null),
            );
        } else if let Some(r) = &imp.secret_ref {
            if !is_root {
                return Err(fatal(
                    OP,
                    "ImportsSatisfied",
                    format!(
                        "import {:?}: secret imports are not allowed in subinstallations",
                        imp.name
                    ),
                ));
            }
            let Some(o) = get(Kind::Secret, &r.name)? else {
                return Err(missing(format!("Secret {ns}/{}", r.name)));
            };
            let secret: Secret =
                from_value(&o).map_err(|e| fatal(OP, "ImportsSatisfied", e.to_string()))?;
            out.insert(
                imp.name.clone(),
                key_values(
                    &secret.decoded_data(),
                    r.key.as_deref(),
                    &imp.name,
                    "Secret",
                    &r.name,
                )
                .map_err(|m| fatal(OP, "ImportsSatisfied", m))?,
            );
        } else if let Some(r) = &imp.config_map_ref {
            if !is_root {
                return Err(fatal(
                    OP,
                    "ImportsSatisfied",
                    format!(
                        "import {:?}: configmap imports are not allowed in subinstallations",
                        imp.name
                    ),
                ));
            }
            let Some(o) = get(Kind::ConfigMap, &r.name)? else {
                return Err(missing(format!("ConfigMap {ns}/{}", r.name)));
            };
            let cm: ConfigMap =
                from_value(&o).map_err(|e| fatal(OP, "ImportsSatisfied", e.to_string()))?;
            out.insert(
                imp.name.clone(),
                key_values(
                    &cm.decoded_data(),
                    r.key.as_deref(),
                    &imp.name,
                    "ConfigMap",
                    &r.name,
                )
                .map_err(|m| fatal(OP, "ImportsSatisfied", m))?,
            );
        }
    }
    let target = |import: &str, r: &str| -> Result<Value, PhaseError> {
        let object_name = generate_data_object_name(&scope, r);
        get(Kind::Target, &object_name)?.ok_or_else(|| {
            fatal(
                OP,
                "ImportsSatisfied",
                format!("import {import:?}: Target {r:?} ({ns}/{object_name}) not found"),
            )
        })
    };
    for imp in inst.spec.target_imports() {
        let value = if let Some(t) = imp.target.as_deref().filter(|s| !s.is_empty()) {
            target(&imp.name, t)?
        } else if let Some(list) = &imp.targets {
            Value::Array(
                list.iter()
                    .map(|t| target(&imp.name, t))
                    .collect::<Result<_, _>>()?,
            )
        } else if let Some(map) = &imp.target_map {
            let mut m = Map::new();
            for (k, t) in map {
                m.insert(k.clone(), target(&imp.name, t)?);
            }
            Value::Object(m)
        } else if let Some(r) = &imp.target_list_ref {
            let mut items = scoped_targets(store, ns, &scope, r, OP)?;
            items.sort_by_key(|t| {
                object::labels(t)
                    .get(DATA_OBJECT_INDEX_LABEL)
                    .and_then(|i| i.parse::<i64>().ok())
                    .unwrap_or(0)
            });
            Value::Array(items)
        } else if let Some(r) = &imp.target_map_ref {
            let mut m = Map::new();
            for t in scoped_targets(store, ns, &scope, r, OP)? {
                let key = object::labels(&t)
                    .get(DATA_OBJECT_TARGET_MAP_KEY_LABEL)
                    .cloned()
                    .unwrap_or_default();
                m.insert(key, t);
            }
            Value::Object(m)
        } else {
            return Err(fatal(
                OP,
                "ImportsSatisfied",
                format!("target import {:?}: no target given", imp.name),
            ));
        };
        out.insert(imp.name.clone(), value);
    }
    Ok(out)
}

/// Targets published in `scope` under the logical name `key` (list and map imports).
fn scoped_targets(
    store: &Store,
    ns: &str,
    scope: &str,
    key: &str,
    op: &str,
) -> Result<Vec<Value>, PhaseError> {
    let selector = label_equals(DATA_OBJECT_KEY_LABEL, key);
    let list = store
        .list(Kind::Target, Some(ns), &selector)
        .map_err(|e| store_error(op, e))?;
    Ok(list
        .items
        .into_iter()
        .filter(|t| {
            object::labels(t)
                .get(DATA_OBJECT_CONTEXT_LABEL)
                .map(String::as_str)
                .unwrap_or_default()
                == scope
        })
        .collect())
}

/// `key=value`; a value that is no valid label value matches everything (callers filter).
pub fn label_equals(key: &str, value: &str) -> LabelSelector {
    LabelSelector::parse(&format!("{key}={value}")).unwrap_or_default()
}

/// The import value of a ConfigMap's or Secret's (decoded) data: one key parsed as YAML, or
/// all keys as a map. Shared with the offline `render` command.
pub fn key_values(
    data: &BTreeMap<String, Vec<u8>>,
    key: Option<&str>,
    import: &str,
    kind: &str,
    name: &str,
) -> Result<Value, String> {
    let parse = |k: &str, bytes: &[u8]| -> Result<Value, String> {
        parse_yaml(&String::from_utf8_lossy(bytes)).map_err(|e| {
            if kind == "Secret" {
                // The parser's message quotes the text: never a Secret's.
                format!("import {import:?}: {kind} {name} key {k}: not valid YAML (the value is not shown)")
            } else {
                format!("import {import:?}: {kind} {name} key {k}: {e}")
            }
        })
    };
    match key.filter(|k| !k.is_empty()) {
        Some(k) => match data.get(k) {
            Some(b) => parse(k, b),
            None => Err(format!("import {import:?}: {kind} {name} has no key {k:?}")),
        },
        None => {
            let mut m = Map::new();
            for (k, b) in data {
                m.insert(k.clone(), parse(k, b)?);
            }
            Ok(Value::Object(m))
        }
    }
}

/// A stable hash of the import values (and of the spec parts that shape them).
pub fn imports_hash(values: &Map<String, Value>) -> String {
    // serde_json's Map is ordered, so equal values serialise equally.
    let text = serde_json::to_string(values).unwrap_or_default();
    let digest = sha2::Sha256::digest(text.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// What an installation's executions see besides `.imports`: `.blueprint`, and from an inline
/// component descriptor `.cd`, `.components` and `.componentDescriptorDef`. Shared with the
/// offline `render` command.
pub fn installation_bindings(inst: &Installation, imports: Map<String, Value>) -> Bindings {
    let mut bindings = Bindings::with_imports(imports);
    bindings.blueprint_def = serde_json::to_value(&inst.spec.blueprint).ok();
    if let Some(cd) = &inst.spec.component_descriptor {
        bindings.component_descriptor_def = serde_json::to_value(cd).ok();
        if let Some(inline) = &cd.inline {
            bindings.cd = inline.clone();
            bindings.components = json!({"meta": {"schemaVersion": "v2"}, "components": [inline]});
        }
    }
    bindings
}

/// The blueprint's `.imports` built from the import values: data mappings, defaults, schema
/// validation and import executions.
pub fn construct_blueprint_imports(
    inst: &Installation,
    blueprint: &Blueprint,
    values: &Map<String, Value>,
) -> Result<Bindings, PhaseError> {
    const OP: &str = "ConstructImports";
    let mapped = match inst.spec.import_data_mappings.as_ref() {
        Some(m) if !m.is_empty() => evaluate_import_data_mappings(m, values).map_err(|e| {
            fatal(
                OP,
                "ImportDataMappings",
                format!("spec.importDataMappings: {e}"),
            )
        })?,
        _ => Map::new(),
    };
    let imports = construct_imports(blueprint, values, &mapped)
        .map_err(|e| fatal(OP, "ConstructImports", e.to_string()))?;
    let mut bindings = installation_bindings(inst, imports);
    let executed = render_import_executions(blueprint, &bindings)
        .map_err(|e| fatal(OP, "RenderImportExecutions", e.to_string()))?;
    for (k, v) in executed.bindings {
        bindings.imports.insert(k, v);
    }
    if !executed.errors.is_empty() {
        return Err(fatal(
            OP,
            "RenderImportExecutions",
            format!("import validation failed: {}", executed.errors.join(", ")),
        ));
    }
    Ok(bindings)
}

/// Whether an installation's import values may hold values read from a Secret: one of its data
/// imports is a `secretRef`, or a `dataRef` to a DataObject marked [`FROM_SECRET_ANNOTATION`]
/// (a parent's import copied from a Secret). Import mappings and executions may mix any
/// import into any value, so then all its import DataObjects are marked.
pub fn imports_from_secrets(store: &Store, inst: &Installation) -> Result<bool, PhaseError> {
    let scope = parent_scope(inst);
    for imp in inst.spec.data_imports() {
        if imp.secret_ref.is_some() {
            return Ok(true);
        }
        if let Some(r) = &imp.data_ref {
            let key = ObjectKey::new(
                Kind::DataObject,
                namespace(inst),
                generate_data_object_name(&scope, r),
            );
            let marked = store
                .get(&key)
                .map_err(|e| store_error("ImportsSatisfied", e))?
                .is_some_and(|o| {
                    object::annotations(&o)
                        .get(FROM_SECRET_ANNOTATION)
                        .map(String::as_str)
                        == Some("true")
                });
            if marked {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// The DataObjects and Targets that publish the blueprint imports into the installation's own
/// scope, so that its children can import them. With `from_secret` ([`imports_from_secrets`])
/// the DataObjects are marked [`FROM_SECRET_ANNOTATION`], so that readers without the API
/// token see them redacted.
pub fn import_objects(
    inst: &Installation,
    inst_value: &Value,
    blueprint: &Blueprint,
    bindings: &Bindings,
    job_id: &str,
    from_secret: bool,
) -> Vec<Value> {
    let scope = own_scope(inst);
    let ns = namespace(inst);
    let mut out = Vec::new();
    let labels = |key: &str| {
        let mut l = Map::new();
        l.insert(DATA_OBJECT_CONTEXT_LABEL.into(), json!(scope));
        l.insert(DATA_OBJECT_KEY_LABEL.into(), json!(key));
        l.insert(DATA_OBJECT_SOURCE_LABEL.into(), json!(scope));
        l.insert(
            DATA_OBJECT_SOURCE_TYPE_LABEL.into(),
            json!(DATA_OBJECT_SOURCE_TYPE_IMPORT),
        );
        l.insert(DATA_OBJECT_JOB_ID_LABEL.into(), json!(job_id));
        l
    };
    let owner = crate::controllers::jobs::owner_reference(Kind::Installation, inst_value);
    for def in blueprint.all_imports() {
        let Some(value) = bindings.imports.get(&def.name) else {
            continue;
        };
        match def.import_type() {
            Some(ImportType::Data) => {
                let mut annotations = json!({DATA_OBJECT_HASH_ANNOTATION: content_hash(value)});
                if from_secret {
                    annotations[FROM_SECRET_ANNOTATION] = json!("true");
                }
                out.push(json!({
                    "apiVersion": Kind::DataObject.api_version(),
                    "kind": "DataObject",
                    "metadata": {
                        "name": generate_data_object_name(&scope, &def.name),
                        "namespace": ns,
                        "labels": labels(&def.name),
                        "annotations": annotations,
                        "ownerReferences": [owner.clone()],
                    },
                    "data": value,
                }));
            }
            Some(ImportType::Target) => {
                out.push(target_copy(
                    value,
                    &generate_data_object_name(&scope, &def.name),
                    ns,
                    labels(&def.name),
                    &owner,
                ));
            }
            Some(ImportType::TargetList) => {
                for (i, t) in value.as_array().into_iter().flatten().enumerate() {
                    let mut l = labels(&def.name);
                    l.insert(DATA_OBJECT_INDEX_LABEL.into(), json!(i.to_string()));
                    let n = generate_data_object_name(&scope, &format!("{}[{i}]", def.name));
                    out.push(target_copy(t, &n, ns, l, &owner));
                }
            }
            Some(ImportType::TargetMap) => {
                for (k, t) in value.as_object().into_iter().flatten() {
                    let mut l = labels(&def.name);
                    l.insert(DATA_OBJECT_TARGET_MAP_KEY_LABEL.into(), json!(k));
                    let n = generate_data_object_name(&scope, &format!("{}[{k}]", def.name));
                    out.push(target_copy(t, &n, ns, l, &owner));
                }
            }
            None => {}
        }
    }
    out
}

fn target_copy(
    target: &Value,
    name: &str,
    ns: &str,
    labels: Map<String, Value>,
    owner: &Value,
) -> Value {
    json!({
        "apiVersion": Kind::Target.api_version(),
        "kind": "Target",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": labels,
            "ownerReferences": [owner.clone()],
        },
        "spec": target.get("spec").cloned().unwrap_or(json!({})),
    })
}

/// SHA-1 hex of the JSON of a value (annotation `data.landscaper.gardener.cloud/hash`).
pub fn content_hash(value: &Value) -> String {
    use sha1::Digest as _;
    let digest = sha1::Sha1::digest(serde_json::to_string(value).unwrap_or_default().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// What the deploy executions and subinstallation executions rendered.
pub struct RenderedSubobjects {
    pub deploy_items: Vec<landscaper_store::model::DeployItemTemplate>,
    pub subinstallations: Vec<InstallationTemplate>,
}

pub fn render_subobjects(
    inst: &Installation,
    blueprint: &Blueprint,
    bindings: &Bindings,
) -> Result<RenderedSubobjects, PhaseError> {
    const OP: &str = "CreateImportsAndSubobjects";
    let deploy = render_deploy_executions(blueprint, bindings)
        .map_err(|e| fatal(OP, "ReconcileExecution", e.to_string()))?;
    let deploy_items = resolve_deploy_items(
        blueprint,
        &bindings.imports,
        namespace(inst),
        &deploy.deploy_items,
    )
    .map_err(|e| fatal(OP, "ReconcileExecution", e.to_string()))?;
    validate_deploy_item_names(&deploy_items).map_err(|m| fatal(OP, "ReconcileExecution", m))?;
    let subs = render_subinstallations(blueprint, bindings)
        .map_err(|e| fatal(OP, "EnsureSubinstallations", e.to_string()))?;
    Ok(RenderedSubobjects {
        deploy_items,
        subinstallations: subs.subinstallations,
    })
}

/// Landscaper's execution validation: unique names, known `dependsOn` entries, no cycles.
pub fn validate_deploy_item_names(
    items: &[landscaper_store::model::DeployItemTemplate],
) -> Result<(), String> {
    let mut seen = std::collections::BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        if !seen.insert(item.name.as_str()) {
            return Err(format!(
                "deployItems[{i}].name: Duplicate value: {:?}",
                item.name
            ));
        }
    }
    for (i, item) in items.iter().enumerate() {
        for (j, d) in item.depends_on.iter().flatten().enumerate() {
            if !seen.contains(d.as_str()) {
                return Err(format!(
                    "deployItems[{i}].dependsOn[{j}]: Not found: {d:?}: deploy item does not exist"
                ));
            }
        }
    }
    // Kahn's algorithm: whatever cannot be ordered is on a cycle.
    let mut remaining: BTreeMap<&str, Vec<&str>> = items
        .iter()
        .map(|i| {
            (
                i.name.as_str(),
                i.depends_on.iter().flatten().map(String::as_str).collect(),
            )
        })
        .collect();
    loop {
        let ready: Vec<&str> = remaining
            .iter()
            .filter(|(_, deps)| deps.iter().all(|d| !remaining.contains_key(d)))
            .map(|(n, _)| *n)
            .collect();
        if ready.is_empty() {
            break;
        }
        for n in ready {
            remaining.remove(n);
        }
    }
    if !remaining.is_empty() {
        let names: Vec<&str> = remaining.keys().copied().collect();
        return Err(format!(
            "deployItems: Forbidden: cyclic dependencies between deploy items: {}",
            names.join(", ")
        ));
    }
    Ok(())
}

/// The exports of an installation, from its deploy items' exports, the objects in its own
/// scope and its imports, through the export executions and the export data mappings.
pub fn construct_exports(
    store: &Store,
    inst: &Installation,
    blueprint: &Blueprint,
    bindings: &Bindings,
) -> Result<Map<String, Value>, PhaseError> {
    const OP: &str = "ConstructExports";
    let ns = namespace(inst);
    let scope = own_scope(inst);
    // `.deployitems`: the execution's export DataObject.
    let mut deploy_items = None;
    if let Some(exec_ref) = inst
        .status
        .as_ref()
        .and_then(|s| s.execution_reference.as_ref())
    {
        let exec = store
            .get(&ObjectKey::new(Kind::Execution, ns, &exec_ref.name))
            .map_err(|e| store_error(OP, e))?;
        if let Some(r) = exec
            .as_ref()
            .and_then(|e| e.pointer("/status/exportRef/name"))
            .and_then(Value::as_str)
            && let Some(d) = store
                .get(&ObjectKey::new(Kind::DataObject, ns, r))
                .map_err(|e| store_error(OP, e))?
        {
            deploy_items = d.get("data").and_then(Value::as_object).cloned();
        }
    }
    let mut data_objects = Map::new();
    let mut targets = Map::new();
    let in_scope = |kind: Kind| -> Result<Vec<Value>, PhaseError> {
        let selector = label_equals(DATA_OBJECT_CONTEXT_LABEL, &scope);
        store
            .list(kind, Some(ns), &selector)
            .map(|l| l.items)
            .map_err(|e| store_error(OP, e))
    };
    for d in in_scope(Kind::DataObject)? {
        if let Some(key) = object::labels(&d).get(DATA_OBJECT_KEY_LABEL) {
            data_objects.insert(key.clone(), d.get("data").cloned().unwrap_or(Value::Null));
        }
    }
    for t in in_scope(Kind::Target)? {
        let labels = object::labels(&t);
        if labels.contains_key(DATA_OBJECT_INDEX_LABEL)
            || labels.contains_key(DATA_OBJECT_TARGET_MAP_KEY_LABEL)
        {
            continue;
        }
        if let Some(key) = labels.get(DATA_OBJECT_KEY_LABEL) {
            targets.insert(key.clone(), t);
        }
    }
    let export_bindings = ExportBindings {
        base: bindings.clone(),
        deploy_items,
        data_objects,
        targets,
    };
    let rendered = render_export_executions(blueprint, &export_bindings)
        .map_err(|e| fatal(OP, "ExportExecutions", e.to_string()))?;
    let mut exports = rendered.exports;
    if let Some(mappings) = inst
        .spec
        .export_data_mappings
        .as_ref()
        .filter(|m| !m.is_empty())
    {
        let mappings: Map<String, Value> = mappings.clone().into_iter().collect();
        // Every export at the top level and all of them under `exports`, as Landscaper binds them.
        let mut binding = exports.clone();
        binding.insert("exports".into(), Value::Object(exports.clone()));
        let mapped = spiff::evaluate_data_mappings(&mappings, &binding, &SpiffOptions::default())
            .map_err(|(k, e)| {
            fatal(
                OP,
                "ExportDataMappings",
                format!("spec.exportDataMappings.{k}: {e}"),
            )
        })?;
        for (k, v) in mapped {
            exports.insert(k, v);
        }
    }
    Ok(exports)
}

/// The DataObjects and Targets that publish an installation's exports into its parent scope.
pub fn export_objects(
    inst: &Installation,
    inst_value: &Value,
    exports: &Map<String, Value>,
    job_id: &str,
    from_secret: bool,
) -> Result<Vec<Value>, PhaseError> {
    const OP: &str = "CreateOrUpdateExports";
    let scope = parent_scope(inst);
    let ns = namespace(inst);
    let source = own_scope(inst);
    let owner = crate::controllers::jobs::owner_reference(Kind::Installation, inst_value);
    let labels = |key: &str| {
        let mut l = Map::new();
        if !scope.is_empty() {
            l.insert(DATA_OBJECT_CONTEXT_LABEL.into(), json!(scope));
        }
        l.insert(DATA_OBJECT_KEY_LABEL.into(), json!(key));
        l.insert(DATA_OBJECT_SOURCE_LABEL.into(), json!(source));
        l.insert(
            DATA_OBJECT_SOURCE_TYPE_LABEL.into(),
            json!(DATA_OBJECT_SOURCE_TYPE_EXPORT),
        );
        l.insert(DATA_OBJECT_JOB_ID_LABEL.into(), json!(job_id));
        l
    };
    let mut out = Vec::new();
    for e in inst.spec.data_exports() {
        let Some(value) = exports.get(&e.name) else {
            return Err(fatal(
                OP,
                "ExportMissing",
                format!(
                    "export {:?} (dataRef {:?}) has no value: the blueprint's export executions or the exportDataMappings must produce it",
                    e.name, e.data_ref
                ),
            ));
        };
        let mut annotations = json!({DATA_OBJECT_HASH_ANNOTATION: content_hash(value)});
        if from_secret {
            annotations[FROM_SECRET_ANNOTATION] = json!("true");
        }
        out.push(json!({
            "apiVersion": Kind::DataObject.api_version(),
            "kind": "DataObject",
            "metadata": {
                "name": generate_data_object_name(&scope, &e.data_ref),
                "namespace": ns,
                "labels": labels(&e.data_ref),
                "annotations": annotations,
                "ownerReferences": [owner.clone()],
            },
            "data": value,
        }));
    }
    for e in inst.spec.target_exports() {
        let Some(value) = exports.get(&e.name) else {
            return Err(fatal(
                OP,
                "ExportMissing",
                format!(
                    "target export {:?} (target {:?}) has no value",
                    e.name, e.target
                ),
            ));
        };
        // A target template: {type, config | secretRef, labels, annotations}.
        let mut spec = Map::new();
        for k in ["type", "config", "secretRef"] {
            if let Some(v) = value.get(k) {
                spec.insert(k.into(), v.clone());
            }
        }
        let mut l = labels(&e.target);
        if let Some(extra) = value.get("labels").and_then(Value::as_object) {
            for (k, v) in extra {
                l.entry(k.clone()).or_insert(v.clone());
            }
        }
        let mut metadata = json!({
            "name": generate_data_object_name(&scope, &e.target),
            "namespace": ns,
            "labels": l,
            "ownerReferences": [owner.clone()],
        });
        if let Some(a) = value.get("annotations").filter(|a| a.is_object()) {
            metadata["annotations"] = a.clone();
        }
        if from_secret {
            // The template may have written Secret values into the config.
            metadata["annotations"][FROM_SECRET_ANNOTATION] = json!("true");
        }
        out.push(json!({
            "apiVersion": Kind::Target.api_version(),
            "kind": "Target",
            "metadata": metadata,
            "spec": spec,
        }));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use landscaper_store::{StoreOptions, Transaction};

    use super::*;

    fn open_store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let options = StoreOptions {
            durable: false,
            ..StoreOptions::default()
        };
        let store = Store::open(&dir.path().join("store.redb"), options).unwrap();
        (dir, store)
    }

    fn put(store: &Store, objects: Vec<Value>) {
        let tx = objects
            .into_iter()
            .fold(Transaction::new(), Transaction::create);
        store.commit_blocking(tx).unwrap();
    }

    fn installation(name: &str, parent: Option<&str>, spec: Value) -> Installation {
        let mut labels = Map::new();
        if let Some(p) = parent {
            labels.insert(ENCOMPASSED_BY_LABEL.into(), json!(p));
        }
        from_value(&json!({
            "apiVersion": "landscaper.gardener.cloud/v1alpha1",
            "kind": "Installation",
            "metadata": {"name": name, "namespace": "ns", "labels": labels},
            "spec": spec,
        }))
        .unwrap()
    }

    fn data_object(name: &str, labels: Value, data: Value) -> Value {
        json!({
            "apiVersion": "landscaper.gardener.cloud/v1alpha1",
            "kind": "DataObject",
            "metadata": {"name": name, "namespace": "ns", "labels": labels},
            "data": data,
        })
    }

    fn target(name: &str, labels: Value, kubeconfig: &str) -> Value {
        json!({
            "apiVersion": "landscaper.gardener.cloud/v1alpha1",
            "kind": "Target",
            "metadata": {"name": name, "namespace": "ns", "labels": labels},
            "spec": {"type": KUBERNETES_CLUSTER_TARGET_TYPE, "config": {"kubeconfig": kubeconfig}},
        })
    }

    fn kubeconfig_of(t: &Value) -> &str {
        t.pointer("/spec/config/kubeconfig")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    fn fatal_message(r: Result<Map<String, Value>, PhaseError>) -> String {
        match r {
            Err(PhaseError::Fatal(e)) => e.message,
            other => panic!("expected a fatal error, got {other:?}"),
        }
    }

    #[test]
    fn data_imports_read_data_objects_config_maps_and_secrets() {
        let (_dir, store) = open_store();
        use base64::Engine as _;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        put(
            &store,
            vec![
                data_object("plain", json!({}), json!({"a": 1})),
                // A root-context name that is no valid object name is stored under its hash.
                data_object(
                    &generate_data_object_name("", "Not_Valid"),
                    json!({}),
                    json!("hashed"),
                ),
                data_object("global", json!({}), json!([1, 2])),
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "cm", "namespace": "ns"},
                       "data": {"size": "42", "conf": "a: b\nc: [1, 2]"}}),
                json!({"apiVersion": "v1", "kind": "Secret",
                       "metadata": {"name": "sec", "namespace": "ns"},
                       "data": {"password": b64("s3cret"), "port": b64("8080")}}),
            ],
        );
        let inst = installation(
            "root",
            None,
            json!({"imports": {"data": [
                {"name": "plain", "dataRef": "plain"},
                {"name": "hashed", "dataRef": "Not_Valid"},
                {"name": "global", "dataRef": "#global"},
                {"name": "cmKey", "configMapRef": {"name": "cm", "key": "conf"}},
                {"name": "cmAll", "configMapRef": {"name": "cm"}},
                {"name": "secretKey", "secretRef": {"name": "sec", "key": "port"}},
                {"name": "secretAll", "secretRef": {"name": "sec"}},
            ]}}),
        );
        let values = read_import_values(&store, &inst).unwrap();
        assert_eq!(values["plain"], json!({"a": 1}));
        assert_eq!(values["hashed"], json!("hashed"));
        assert_eq!(values["global"], json!([1, 2]));
        // Values are parsed as YAML: objects and numbers, not strings.
        assert_eq!(values["cmKey"], json!({"a": "b", "c": [1, 2]}));
        assert_eq!(
            values["cmAll"],
            json!({"size": 42, "conf": {"a": "b", "c": [1, 2]}})
        );
        assert_eq!(values["secretKey"], json!(8080));
        assert_eq!(
            values["secretAll"],
            json!({"password": "s3cret", "port": 8080})
        );
    }

    #[test]
    fn missing_data_imports_name_the_import_and_the_object() {
        let (_dir, store) = open_store();
        let inst = installation(
            "root",
            None,
            json!({"imports": {"data": [{"name": "db", "dataRef": "Db_Config"}]}}),
        );
        let message = fatal_message(read_import_values(&store, &inst));
        assert!(message.contains("import \"db\""), "{message}");
        assert!(message.contains("Db_Config"), "{message}");
        assert!(
            message.contains(&generate_data_object_name("", "Db_Config")),
            "{message}"
        );

        put(
            &store,
            vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "cm", "namespace": "ns"}, "data": {"a": "1"}})],
        );
        let inst = installation(
            "root",
            None,
            json!({"imports": {"data": [{"name": "x", "configMapRef": {"name": "cm", "key": "b"}}]}}),
        );
        let message = fatal_message(read_import_values(&store, &inst));
        assert!(message.contains("has no key \"b\""), "{message}");
    }

    #[test]
    fn subinstallations_may_not_import_config_maps_or_secrets() {
        let (_dir, store) = open_store();
        for (field, kind) in [("configMapRef", "configmap"), ("secretRef", "secret")] {
            let inst = installation(
                "child",
                Some("parent"),
                json!({"imports": {"data": [{"name": "x", field: {"name": "any"}}]}}),
            );
            let message = fatal_message(read_import_values(&store, &inst));
            assert!(
                message.contains(&format!(
                    "{kind} imports are not allowed in subinstallations"
                )),
                "{message}"
            );
        }
    }

    #[test]
    fn target_imports_of_every_kind() {
        let (_dir, store) = open_store();
        let scope = "Inst.parent";
        let scoped = |reference: &str| generate_data_object_name(scope, reference);
        let in_scope = |key: &str, extra: Value| {
            let mut l = json!({DATA_OBJECT_CONTEXT_LABEL: scope, DATA_OBJECT_KEY_LABEL: key});
            for (k, v) in extra.as_object().unwrap() {
                l[k] = v.clone();
            }
            l
        };
        put(
            &store,
            vec![
                target(&scoped("one"), in_scope("one", json!({})), "kc one"),
                target(&scoped("two"), in_scope("two", json!({})), "kc two"),
                // The parent's targetList import `clusters`, republished in its scope with indexes
                // (out of order on purpose) and its targetMap import `regions` with keys.
                target(
                    &scoped("clusters[1]"),
                    in_scope("clusters", json!({DATA_OBJECT_INDEX_LABEL: "1"})),
                    "kc list 1",
                ),
                target(
                    &scoped("clusters[0]"),
                    in_scope("clusters", json!({DATA_OBJECT_INDEX_LABEL: "0"})),
                    "kc list 0",
                ),
                target(
                    &scoped("regions[eu]"),
                    in_scope("regions", json!({DATA_OBJECT_TARGET_MAP_KEY_LABEL: "eu"})),
                    "kc eu",
                ),
                // Same key in another scope: never seen.
                target(
                    &generate_data_object_name("Inst.other", "clusters[0]"),
                    json!({DATA_OBJECT_CONTEXT_LABEL: "Inst.other", DATA_OBJECT_KEY_LABEL: "clusters",
                           DATA_OBJECT_INDEX_LABEL: "0"}),
                    "other scope",
                ),
                target("global-target", json!({}), "kc global"),
            ],
        );
        let inst = installation(
            "child",
            Some("parent"),
            json!({"imports": {"targets": [
                {"name": "single", "target": "one"},
                {"name": "global", "target": "#global-target"},
                {"name": "list", "targets": ["two", "one"]},
                {"name": "map", "targetMap": {"a": "one", "b": "two"}},
                {"name": "listRef", "targetListRef": "clusters"},
                {"name": "mapRef", "targetMapRef": "regions"},
            ]}}),
        );
        let values = read_import_values(&store, &inst).unwrap();
        assert_eq!(kubeconfig_of(&values["single"]), "kc one");
        assert_eq!(values["single"]["kind"], "Target");
        assert_eq!(kubeconfig_of(&values["global"]), "kc global");
        let list: Vec<&str> = values["list"]
            .as_array()
            .unwrap()
            .iter()
            .map(kubeconfig_of)
            .collect();
        assert_eq!(list, ["kc two", "kc one"]);
        assert_eq!(kubeconfig_of(&values["map"]["a"]), "kc one");
        assert_eq!(kubeconfig_of(&values["map"]["b"]), "kc two");
        let list_ref: Vec<&str> = values["listRef"]
            .as_array()
            .unwrap()
            .iter()
            .map(kubeconfig_of)
            .collect();
        assert_eq!(list_ref, ["kc list 0", "kc list 1"]);
        assert_eq!(
            values["mapRef"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["eu"]
        );
        assert_eq!(kubeconfig_of(&values["mapRef"]["eu"]), "kc eu");

        let missing = installation(
            "child",
            Some("parent"),
            json!({"imports": {"targets": [{"name": "list", "targets": ["one", "three"]}]}}),
        );
        let message = fatal_message(read_import_values(&store, &missing));
        assert!(
            message.contains("import \"list\": Target \"three\""),
            "{message}"
        );
    }

    #[test]
    fn import_objects_republish_imports_with_landscaper_names_and_labels() {
        let inst_value = json!({
            "apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation",
            "metadata": {"name": "root", "namespace": "ns", "uid": "u-1"},
            "spec": {},
        });
        let inst: Installation = from_value(&inst_value).unwrap();
        let blueprint = Blueprint::from_yamlfs(&json!({"blueprint.yaml": "
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Blueprint
imports:
- name: config
  schema: {type: object}
- name: clusters
  type: targetList
  targetType: landscaper.gardener.cloud/kubernetes-cluster
"}))
        .unwrap();
        let t = |kc: &str| target("x", json!({}), kc);
        let bindings = Bindings::with_imports(
            json!({"config": {"a": 1}, "clusters": [t("kc 0"), t("kc 1")]})
                .as_object()
                .unwrap()
                .clone(),
        );
        let objects = import_objects(&inst, &inst_value, &blueprint, &bindings, "job-1", false);
        let named = |n: &str| {
            objects
                .iter()
                .find(|o| object::name(o) == n)
                .unwrap_or_else(|| panic!("no object {n} in {objects:#?}"))
        };
        let config = named(&generate_data_object_name("Inst.root", "config"));
        assert_eq!(config["data"], json!({"a": 1}));
        let labels = object::labels(config);
        assert_eq!(labels[DATA_OBJECT_CONTEXT_LABEL], "Inst.root");
        assert_eq!(labels[DATA_OBJECT_KEY_LABEL], "config");
        assert_eq!(labels[DATA_OBJECT_SOURCE_LABEL], "Inst.root");
        assert_eq!(labels[DATA_OBJECT_SOURCE_TYPE_LABEL], "import");
        assert_eq!(labels[DATA_OBJECT_JOB_ID_LABEL], "job-1");
        let second = named(&generate_data_object_name("Inst.root", "clusters[1]"));
        assert_eq!(kubeconfig_of(second), "kc 1");
        assert_eq!(object::labels(second)[DATA_OBJECT_INDEX_LABEL], "1");
        assert_eq!(object::owner_uids(second), ["u-1"]);
    }

    #[test]
    fn secret_values_that_are_no_yaml_are_not_quoted() {
        let data: BTreeMap<String, Vec<u8>> = [
            ("k".to_string(), b"a: b: SeCrEt".to_vec()),
            ("n".to_string(), b"\"SeCrEt".to_vec()),
            ("o".to_string(), b"a: !!int SeCrEt".to_vec()),
            ("p".to_string(), b"a: *SeCrEt".to_vec()),
            ("q".to_string(), b"a: [SeCrEt".to_vec()),
            ("s".to_string(), b"a:\n  - b\n c: SeCrEt".to_vec()),
        ]
        .into();
        for key in ["k", "n", "o", "p", "q", "s"] {
            let err = key_values(&data, Some(key), "imp", "Secret", "s").unwrap_err();
            assert!(!err.contains("SeCrEt"), "{err}");
            assert!(
                err.contains(&format!("Secret s key {key}: not valid YAML")),
                "{err}"
            );
            // ConfigMaps are no secret: their errors help.
            let err = key_values(&data, Some(key), "imp", "ConfigMap", "c").unwrap_err();
            assert!(err.contains("ConfigMap c key"), "{err}");
            // The parser quotes some of the text (which is why a Secret's error must not).
            if key == "o" {
                assert!(err.contains("SeCrEt"), "{err}");
            }
        }
    }

    #[test]
    fn imports_from_secrets_follow_the_copies() {
        let (_dir, store) = open_store();
        let marked = |name: &str| {
            let mut o = data_object(name, json!({}), json!("s3cret"));
            o["metadata"]["annotations"] = json!({FROM_SECRET_ANNOTATION: "true"});
            o
        };
        // The parent `p` published `pw` (from a Secret) and `cfg` (plain) into its scope.
        put(
            &store,
            vec![
                marked(&generate_data_object_name("Inst.p", "pw")),
                data_object(
                    &generate_data_object_name("Inst.p", "cfg"),
                    json!({}),
                    json!(1),
                ),
            ],
        );
        let root =
            |imports: Value| installation("root", None, json!({"imports": {"data": imports}}));
        let child =
            |imports: Value| installation("c", Some("p"), json!({"imports": {"data": imports}}));
        let from_secret = |inst: &Installation| imports_from_secrets(&store, inst).unwrap();
        assert!(from_secret(&root(
            json!([{"name": "a", "secretRef": {"name": "s"}}])
        )));
        assert!(!from_secret(&root(
            json!([{"name": "a", "configMapRef": {"name": "c"}}])
        )));
        assert!(from_secret(&child(json!([{"name": "a", "dataRef": "pw"}]))));
        assert!(!from_secret(&child(
            json!([{"name": "a", "dataRef": "cfg"}])
        )));
        assert!(!from_secret(&child(
            json!([{"name": "a", "dataRef": "missing"}])
        )));
        assert!(from_secret(&child(json!([
            {"name": "a", "dataRef": "cfg"}, {"name": "b", "dataRef": "pw"}]))));

        // The copies are marked; targets are redacted on their own and stay unmarked.
        let inst_value = json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1",
            "kind": "Installation", "metadata": {"name": "root", "namespace": "ns", "uid": "u"},
            "spec": {}});
        let inst: Installation = from_value(&inst_value).unwrap();
        let blueprint = Blueprint::from_yamlfs(&json!({"blueprint.yaml": "
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Blueprint
imports:
- name: pw
  schema: {type: string}
- name: cluster
  type: target
  targetType: landscaper.gardener.cloud/kubernetes-cluster
"}))
        .unwrap();
        let bindings = Bindings::with_imports(
            json!({"pw": "s3cret", "cluster": target("x", json!({}), "kc")})
                .as_object()
                .unwrap()
                .clone(),
        );
        for flag in [true, false] {
            let objects = import_objects(&inst, &inst_value, &blueprint, &bindings, "j", flag);
            let annotation = |kind: &str| {
                objects
                    .iter()
                    .find(|o| o["kind"] == kind)
                    .map(|o| object::annotations(o).get(FROM_SECRET_ANNOTATION).cloned())
                    .unwrap()
            };
            assert_eq!(annotation("DataObject"), flag.then(|| "true".to_string()));
            assert_eq!(annotation("Target"), None);
        }
    }

    #[test]
    fn duplicate_exports_among_siblings_are_named() {
        let exporter = |name: &str, data: &str, target: &str| {
            installation(
                name,
                None,
                json!({"exports": {"data": [{"name": "d", "dataRef": data}],
                                    "targets": [{"name": "t", "target": target}]}}),
            )
        };
        let a = exporter("a", "shared", "cluster-a");
        let b = exporter("b", "shared", "cluster-b");
        let c = exporter("c", "other", "cluster-a");
        let message = duplicate_exports(&a, &[b.clone(), c.clone()]).unwrap();
        assert_eq!(
            message,
            "the following exports are exported by multiple nested installations:\n  \
             data exports:\n    'shared' is exported by [a, b]\n  \
             target exports:\n    'cluster-a' is exported by [a, c]"
        );
        assert_eq!(duplicate_exports(&b, std::slice::from_ref(&c)), None);
        // A sibling being deleted gives up its exports.
        let mut leaving = b.clone();
        leaving.metadata.deletion_timestamp = Some("2030-01-01T00:00:00Z".into());
        assert_eq!(
            duplicate_exports(&exporter("a", "shared", "x"), &[leaving]),
            None
        );
    }

    #[test]
    fn predecessor_cycles_are_found() {
        let node = |name: &str, imports: &str, exports: &str| {
            installation(
                name,
                Some("p"),
                json!({"imports": {"data": [{"name": "i", "dataRef": imports}]},
                       "exports": {"data": [{"name": "e", "dataRef": exports}]}}),
            )
        };
        let a = node("a", "from-c", "from-a");
        let b = node("b", "from-a", "from-b");
        let c = node("c", "from-b", "from-c");
        let cycle = predecessor_cycle(&a, &[b.clone(), c.clone()]).unwrap();
        assert_eq!(cycle.first(), cycle.last());
        assert_eq!(cycle.len(), 4, "{cycle:?}");
        let free = node("c", "from-b", "unrelated");
        assert_eq!(predecessor_cycle(&a, &[b, free]), None);
    }

    #[test]
    fn sibling_lookups_find_only_the_connected_installations_of_the_scope() {
        let (_dir, store) = open_store();
        let node = |name: &str, parent: Option<&str>, imports: &[&str], exports: &[&str]| {
            let mut labels = Map::new();
            if let Some(p) = parent {
                labels.insert(ENCOMPASSED_BY_LABEL.into(), json!(p));
            }
            json!({
                "apiVersion": "landscaper.gardener.cloud/v1alpha1",
                "kind": "Installation",
                "metadata": {"name": name, "namespace": "ns", "labels": labels},
                "spec": {
                    "imports": {"data": imports.iter().map(|r| json!({"name": r, "dataRef": r})).collect::<Vec<_>>()},
                    "exports": {"data": exports.iter().map(|r| json!({"name": r, "dataRef": r})).collect::<Vec<_>>()},
                },
            })
        };
        // a -> b -> c in a chain, d unrelated, e a second exporter of "from-a", and a
        // subinstallation exporting the same name in another scope.
        put(
            &store,
            vec![
                node("a", None, &[], &["from-a"]),
                node("b", None, &["from-a"], &["from-b"]),
                node("c", None, &["from-b"], &[]),
                node("d", None, &["elsewhere"], &["other"]),
                node("e", None, &[], &["from-a"]),
                node("sub", Some("a"), &["from-b"], &["from-a"]),
            ],
        );
        let get = |n: &str| {
            from_value::<Installation>(
                &store
                    .get(&ObjectKey::new(Kind::Installation, "ns", n))
                    .unwrap()
                    .unwrap(),
            )
            .unwrap()
        };
        let names = |list: Vec<Installation>| -> Vec<String> {
            let mut v: Vec<String> = list.iter().map(|i| name(i).to_string()).collect();
            v.sort();
            v
        };
        let (a, b, c) = (get("a"), get("b"), get("c"));
        assert_eq!(names(exporters_of_imports(&store, &b).unwrap()), ["a", "e"]);
        assert_eq!(names(importers_of_exports(&store, &a).unwrap()), ["b"]);
        assert_eq!(names(exporters_of_exports(&store, &a).unwrap()), ["e"]);
        assert_eq!(
            names(predecessor_closure(&store, &c).unwrap()),
            ["a", "b", "e"]
        );
        assert!(predecessor_closure(&store, &a).unwrap().is_empty());
        // The subinstallation's scope holds only itself.
        assert!(
            exporters_of_exports(&store, &get("sub"))
                .unwrap()
                .is_empty()
        );
        // A cycle is found through the closure alone.
        let mut a_cyclic = node("a", None, &["from-c"], &["from-a"]);
        a_cyclic["metadata"]["resourceVersion"] = json!(
            store
                .get(&ObjectKey::new(Kind::Installation, "ns", "a"))
                .unwrap()
                .unwrap()
                .pointer("/metadata/resourceVersion")
                .cloned()
                .unwrap()
        );
        let mut c_exporting = serde_json::to_value(&c).unwrap();
        c_exporting["spec"]["exports"] = json!({"data": [{"name": "from-c", "dataRef": "from-c"}]});
        store
            .commit_blocking(Transaction::new().update(a_cyclic).update(c_exporting))
            .unwrap();
        let a = get("a");
        let closure = predecessor_closure(&store, &a).unwrap();
        assert_eq!(names(closure.clone()), ["b", "c", "e"]);
        let cycle = predecessor_cycle(&a, &closure).unwrap();
        assert_eq!(cycle.len(), 4, "{cycle:?}");
    }
}
