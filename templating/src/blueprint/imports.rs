//! Import values as a blueprint sees them (`pkg/landscaper/installations/imports/constructor.go`):
//! `importDataMappings` evaluated with Spiff, then every import definition checked in order
//! (required, default, schema, target type), conditional imports only under a satisfied parent.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

use super::load::Blueprint;
use super::model::{ImportDefinition, ImportType};
use crate::schema::format_violations;
use crate::spiff::{self, SpiffOptions};

/// An import that is missing or does not fit its definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportError {
    /// The import's name.
    pub import: String,
    pub kind: ImportErrorKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportErrorKind {
    /// A required import has no value.
    NotSatisfied,
    /// The value does not match the schema or target type.
    Invalid,
    /// An import data mapping failed.
    Mapping,
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "import {:?}: {}", self.import, self.message)
    }
}

impl std::error::Error for ImportError {}

/// Evaluates `importDataMappings`: each value is a Spiff template over the installation's
/// imports (by installation import name), without custom functions or files.
pub fn evaluate_import_data_mappings(
    mappings: &BTreeMap<String, Value>,
    installation_imports: &Map<String, Value>,
) -> Result<Map<String, Value>, ImportError> {
    let options = SpiffOptions {
        stack_size: 0,
        ..SpiffOptions::default()
    };
    let mut out = Map::new();
    for (name, template) in mappings {
        let value =
            spiff::evaluate(template, &[], installation_imports, &options).map_err(|e| {
                ImportError {
                    import: name.clone(),
                    kind: ImportErrorKind::Mapping,
                    message: format!("unable to template import mapping: {e}"),
                }
            })?;
        out.insert(name.clone(), value);
    }
    Ok(out)
}

/// Builds `.imports` from the values given for the blueprint's imports (`provided`, by
/// blueprint import name: data values, Target objects, lists and maps of Target objects) and the
/// results of the import data mappings (`mapped`, which win over `provided` for data imports).
/// Values for names the blueprint does not import are ignored.
pub fn construct_imports(
    blueprint: &Blueprint,
    provided: &Map<String, Value>,
    mapped: &Map<String, Value>,
) -> Result<Map<String, Value>, ImportError> {
    let mut out = Map::new();
    construct(
        blueprint,
        &blueprint.document().imports,
        provided,
        mapped,
        &mut out,
    )?;
    Ok(out)
}

fn construct(
    blueprint: &Blueprint,
    defs: &[ImportDefinition],
    provided: &Map<String, Value>,
    mapped: &Map<String, Value>,
    out: &mut Map<String, Value>,
) -> Result<(), ImportError> {
    for def in defs {
        let err = |kind, message: String| ImportError {
            import: def.name.clone(),
            kind,
            message,
        };
        let not_satisfied = |t: ImportType| {
            err(
                ImportErrorKind::NotSatisfied,
                format!(
                    "blueprint defines import {:?} of type {t}, which is not satisfied",
                    def.name
                ),
            )
        };
        let Some(t) = def.import_type() else {
            return Err(err(
                ImportErrorKind::Invalid,
                format!("unknown import type '{}'", def.r#type),
            ));
        };
        match t {
            ImportType::Data => {
                let value = mapped.get(&def.name).or_else(|| provided.get(&def.name));
                let value = match (value, def.is_required(), def.default_value()) {
                    (Some(v), _, _) => v.clone(),
                    (None, false, Some(d)) => d.clone(),
                    (None, false, None) => continue,
                    (None, true, _) => return Err(not_satisfied(t)),
                };
                let schema = match blueprint.import_schema(&def.name) {
                    Some(Ok(s)) => s,
                    Some(Err(issue)) => {
                        return Err(err(
                            ImportErrorKind::Invalid,
                            format!("validator creation failed: {issue}"),
                        ));
                    }
                    None => {
                        return Err(err(
                            ImportErrorKind::Invalid,
                            "no schema defined".to_string(),
                        ));
                    }
                };
                if let Err(v) = schema.validate(&value) {
                    return Err(err(ImportErrorKind::Invalid, format_violations(&v)));
                }
                out.insert(def.name.clone(), value);
                construct(blueprint, &def.conditional_imports, provided, mapped, out)?;
            }
            ImportType::Target | ImportType::TargetList | ImportType::TargetMap => {
                let Some(value) = provided.get(&def.name) else {
                    if def.is_required() {
                        return Err(not_satisfied(t));
                    }
                    continue;
                };
                let check = |target: &Value, what: &str| -> Result<(), ImportError> {
                    match target.pointer("/spec/type").and_then(Value::as_str) {
                        None => Err(err(
                            ImportErrorKind::Invalid,
                            format!(
                                "{what}does not match the expected target template schema (no spec.type)"
                            ),
                        )),
                        Some(ty) if ty != def.target_type => Err(err(
                            ImportErrorKind::Invalid,
                            format!("{what}type is {ty} but expected {}", def.target_type),
                        )),
                        Some(_) => Ok(()),
                    }
                };
                match (t, value) {
                    (ImportType::Target, v) => check(v, "imported target ")?,
                    (ImportType::TargetList, Value::Array(items)) => {
                        for (i, v) in items.iter().enumerate() {
                            check(
                                v,
                                &format!("element at position {i} of the imported targetlist: "),
                            )?;
                        }
                    }
                    (ImportType::TargetMap, Value::Object(items)) => {
                        for (k, v) in items {
                            check(
                                v,
                                &format!("element at position {k} of the imported targetmap: "),
                            )?;
                        }
                    }
                    (ImportType::TargetList, _) => {
                        return Err(err(
                            ImportErrorKind::Invalid,
                            "targetlist import is not a list".to_string(),
                        ));
                    }
                    _ => {
                        return Err(err(
                            ImportErrorKind::Invalid,
                            "targetmap import is not a map".to_string(),
                        ));
                    }
                }
                out.insert(def.name.clone(), value.clone());
            }
        }
    }
    Ok(())
}

/// Validates one data import value against its schema (e.g. after an import execution), with
/// the same message as [`construct_imports`].
pub fn validate_import(
    blueprint: &Blueprint,
    name: &str,
    value: &Value,
) -> Result<(), ImportError> {
    let err = |kind, message: String| ImportError {
        import: name.to_string(),
        kind,
        message,
    };
    let schema = match blueprint.import_schema(name) {
        Some(Ok(s)) => s,
        Some(Err(issue)) => {
            return Err(err(
                ImportErrorKind::Invalid,
                format!("validator creation failed: {issue}"),
            ));
        }
        None => {
            return Err(err(
                ImportErrorKind::Invalid,
                "not a data import with a schema".to_string(),
            ));
        }
    };
    schema
        .validate(value)
        .map_err(|v| err(ImportErrorKind::Invalid, format_violations(&v)))
}
