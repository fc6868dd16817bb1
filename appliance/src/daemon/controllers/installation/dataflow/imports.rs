//! Import resolution: an installation's import values read from an [`ObjectSource`], the
//! imports hash, the blueprint's `.imports`, and the objects that publish them into its own scope.

use landscaper_store::model::constants::*;
use landscaper_store::model::names::generate_data_object_name;
use landscaper_store::model::{ConfigMap, Installation, Secret, from_value};
use landscaper_store::{Kind, ObjectKey, ObjectSource, object};
use landscaper_templating::blueprint::{
    Bindings, Blueprint, ImportType, construct_imports, evaluate_import_data_mappings, parse_yaml,
    render_import_executions,
};
use serde_json::{Map, Value, json};
use sha2::Digest as _;
use std::collections::BTreeMap;

/// The reason of an error of the import executions, and the prefix of their validation errors
/// (the machine sets `ValidateImports` from them).
pub const RENDER_IMPORT_EXECUTIONS: &str = "RenderImportExecutions";
pub const IMPORT_VALIDATION_FAILED: &str = "import validation failed: ";

use super::*;
use crate::daemon::controllers::lserror::PhaseError;

/// Reads the values of the installation's imports from its scope: data imports from
/// DataObjects (and, at the root, ConfigMaps and Secrets), target imports from Targets.
/// Missing objects are a fatal error, as in Landscaper's `ImportsSatisfied`.
pub fn read_import_values(
    store: &(impl ObjectSource + ?Sized),
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
    store: &(impl ObjectSource + ?Sized),
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
    components: Option<&crate::components::InstallationComponents>,
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
    if let Some(c) = components {
        c.bind(&mut bindings);
    }
    let executed = render_import_executions(blueprint, &bindings)
        .map_err(|e| fatal(OP, RENDER_IMPORT_EXECUTIONS, e.to_string()))?;
    for (k, v) in executed.bindings {
        bindings.imports.insert(k, v);
    }
    if !executed.errors.is_empty() {
        return Err(fatal(
            OP,
            RENDER_IMPORT_EXECUTIONS,
            format!("{IMPORT_VALIDATION_FAILED}{}", executed.errors.join(", ")),
        ));
    }
    Ok(bindings)
}

/// Whether an installation's import values may hold values read from a Secret: one of its data
/// imports is a `secretRef`, or a `dataRef` to a DataObject marked [`FROM_SECRET_ANNOTATION`]
/// (a parent's import copied from a Secret). Import mappings and executions may mix any
/// import into any value, so then all its import DataObjects are marked.
pub fn imports_from_secrets(
    store: &(impl ObjectSource + ?Sized),
    inst: &Installation,
) -> Result<bool, PhaseError> {
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
    let owner = crate::daemon::controllers::jobs::owner_reference(Kind::Installation, inst_value);
    for def in blueprint.all_imports() {
        let Some(value) = bindings.imports.get(&def.name) else {
            continue;
        };
        match def.import_type() {
            Some(ImportType::Data) => {
                out.push(owned_data_object(
                    generate_data_object_name(&scope, &def.name),
                    ns,
                    labels(&def.name),
                    &owner,
                    value,
                    from_secret,
                ));
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

/// A DataObject owned by an installation (an import copy or an export): Landscaper's hash
/// annotation, the from-secret mark when its value came from a Secret, the owner reference.
pub(crate) fn owned_data_object(
    name: String,
    namespace: &str,
    labels: serde_json::Map<String, Value>,
    owner: &Value,
    value: &Value,
    from_secret: bool,
) -> Value {
    let mut annotations = json!({DATA_OBJECT_HASH_ANNOTATION: content_hash(value)});
    if from_secret {
        annotations[FROM_SECRET_ANNOTATION] = json!("true");
    }
    json!({
        "apiVersion": Kind::DataObject.api_version(),
        "kind": "DataObject",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [owner],
        },
        "data": value,
    })
}
/// SHA-1 hex of the JSON of a value (annotation `data.landscaper.gardener.cloud/hash`).
pub fn content_hash(value: &Value) -> String {
    use sha1::Digest as _;
    let digest = sha1::Sha1::digest(serde_json::to_string(value).unwrap_or_default().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}
