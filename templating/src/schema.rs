//! JSON schema validation of import and export values, as Landscaper does it
//! (`pkg/landscaper/jsonschema/{reference,validate}.go`).
//!
//! Before compiling, the schema tree is walked and Landscaper's own references are inlined:
//!
//! * `local://<name>[#/frag]`: the blueprint's `localTypes[name]` (no path allowed);
//! * `blueprint://<path>[#/frag]`: a JSON (or YAML) file of the blueprint filesystem, relative
//!   to the blueprint root.
//!
//! Inlined content is resolved recursively; a reference that is (directly or indirectly) part
//! of its own expansion is a cycle and an error. As in Landscaper, the map holding the `$ref`
//! is replaced by the referenced schema, and other references (`#/definitions/x`, `http://…`)
//! are left to the validator. Resolving in advance also sidesteps the validator crate's URI
//! normalisation (it lower-cases authorities such as `local://MyType`). `cd://` references need
//! component descriptors from a registry and are reported as unsupported.
//!
//! The validator is the `jsonschema` crate. Like Landscaper's gojsonschema, a schema is
//! validated as draft-04, -06 or -07 when its `$schema` says so and as draft-07 otherwise, and
//! `format` is asserted.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use jsonschema::{Draft, Validator};
use serde_json::{Map, Value};

/// Where `blueprint://` references read their files.
pub trait SchemaFiles {
    /// The content of a file, by path relative to the blueprint root.
    fn read_schema_file(&self, path: &str) -> Result<Vec<u8>, String>;
}

impl SchemaFiles for crate::blueprint::BlueprintFs {
    fn read_schema_file(&self, path: &str) -> Result<Vec<u8>, String> {
        self.read(path)
            .map(<[u8]>::to_vec)
            .map_err(|e| e.to_string())
    }
}

/// `cd://` references (FORMATS.md §10): JSON schema resources of component versions.
pub trait CdSchemas: Send + Sync {
    /// The schema the `cd://` URI `uri` (without fragment) names, looked up from the component
    /// version `scope` (`""`: the installation's), and the scope the references inside it are
    /// resolved from (the component version that owns the resource).
    fn cd_schema(&self, scope: &str, uri: &str) -> Result<(Value, String), String>;
}

/// What references may point at.
#[derive(Clone, Copy)]
pub struct ReferenceContext<'a> {
    /// The blueprint's `localTypes`.
    pub local_types: &'a BTreeMap<String, Value>,
    /// The blueprint filesystem (`None`: `blueprint://` references fail).
    pub files: Option<&'a dyn SchemaFiles>,
    /// Component schemas (`None`: `cd://` references fail).
    pub cd: Option<&'a dyn CdSchemas>,
}

impl<'a> ReferenceContext<'a> {
    pub fn new(
        local_types: &'a BTreeMap<String, Value>,
        files: Option<&'a dyn SchemaFiles>,
    ) -> Self {
        ReferenceContext {
            local_types,
            files,
            cd: None,
        }
    }

    /// The same context resolving `cd://` references with `cd`.
    pub fn with_cd(mut self, cd: Option<&'a dyn CdSchemas>) -> Self {
        self.cd = cd;
        self
    }
}

impl fmt::Debug for ReferenceContext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReferenceContext")
            .field("local_types", &self.local_types.keys().collect::<Vec<_>>())
            .field("files", &self.files.is_some())
            .finish()
    }
}

/// A schema that could not be resolved or compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// A `$ref` could not be resolved; `at` is the JSON pointer of the `$ref` in the schema.
    #[error("error resolving reference at {at}: {message}")]
    Reference { at: String, message: String },
    /// The (resolved) schema is not a valid JSON schema.
    #[error("invalid schema: {message}")]
    Invalid { message: String },
}

/// One way a value does not match its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON pointer of the failing value (empty for the value itself).
    pub instance_path: String,
    /// JSON pointer of the failing keyword in the (resolved) schema.
    pub schema_path: String,
    /// What is wrong, e.g. `"x" is not of type "integer"`.
    pub message: String,
}

impl fmt::Display for Violation {
    /// `/spec/count: "x" is not of type "integer"` (`(root)` for the value itself).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.instance_path.is_empty() {
            "(root)"
        } else {
            &self.instance_path
        };
        write!(f, "{at}: {}", self.message)
    }
}

/// Formats violations as one line each: `/a: message (schema path /properties/a/type)`.
pub fn format_violations(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(|v| format!("{v} (schema path {})", display_pointer(&v.schema_path)))
        .collect::<Vec<_>>()
        .join("; ")
}

fn display_pointer(p: &str) -> &str {
    if p.is_empty() { "/" } else { p }
}

/// A resolved and compiled schema; validate many values with it. Cheap to clone, `Send` and
/// `Sync`.
#[derive(Clone)]
pub struct CompiledSchema {
    validator: Arc<Validator>,
    resolved: Arc<Value>,
}

impl fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledSchema")
            .field("draft", &self.validator.draft())
            .field("schema", &self.resolved)
            .finish()
    }
}

impl CompiledSchema {
    /// Resolves Landscaper's references in `schema` and compiles it.
    pub fn compile(schema: &Value, ctx: &ReferenceContext<'_>) -> Result<Self, SchemaError> {
        let resolved = resolve_references(schema, ctx)?;
        Self::compile_resolved(resolved)
    }

    /// Compiles a schema whose Landscaper references are already resolved.
    pub fn compile_resolved(mut resolved: Value) -> Result<Self, SchemaError> {
        let declared = Draft::Draft7.detect(&resolved);
        let draft = match declared {
            Draft::Draft4 | Draft::Draft6 | Draft::Draft7 => declared,
            _ => {
                // gojsonschema knows drafts 4, 6 and 7 only; anything else (2019-09, custom
                // meta-schemas, none) is validated with draft-07 keywords.
                if let Value::Object(m) = &mut resolved {
                    m.remove("$schema");
                }
                Draft::Draft7
            }
        };
        let validator = jsonschema::options()
            .with_draft(draft)
            .should_validate_formats(true)
            .with_retriever(NoRemoteReferences)
            .build(&resolved)
            .map_err(|e| SchemaError::Invalid {
                message: compile_message(&e),
            })?;
        Ok(CompiledSchema {
            validator: Arc::new(validator),
            resolved: Arc::new(resolved),
        })
    }

    /// The schema after reference resolution.
    pub fn resolved(&self) -> &Value {
        &self.resolved
    }

    /// Checks a value; all violations, in the validator's order.
    pub fn validate(&self, value: &Value) -> Result<(), Vec<Violation>> {
        let violations: Vec<Violation> = self
            .validator
            .iter_errors(value)
            .map(|e| Violation {
                instance_path: e.instance_path().as_str().to_string(),
                schema_path: e.schema_path().as_str().to_string(),
                message: e.to_string(),
            })
            .collect();
        if violations.is_empty() {
            Ok(())
        } else {
            Err(violations)
        }
    }

    pub fn is_valid(&self, value: &Value) -> bool {
        self.validator.is_valid(value)
    }
}

fn compile_message(e: &jsonschema::ValidationError<'_>) -> String {
    let at = e.instance_path().as_str();
    if at.is_empty() {
        e.to_string()
    } else {
        format!("{at}: {e}")
    }
}

/// Refuses to fetch: every reference the validator cannot find in the schema itself.
struct NoRemoteReferences;

impl jsonschema::Retrieve for NoRemoteReferences {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!(
            "cannot load {uri}: only local://, blueprint:// and references within the schema are supported (no network access)"
        )
        .into())
    }
}

/// Validates one value against a schema (resolve, compile, validate).
pub fn validate(
    schema: &Value,
    value: &Value,
    ctx: &ReferenceContext<'_>,
) -> Result<Result<(), Vec<Violation>>, SchemaError> {
    Ok(CompiledSchema::compile(schema, ctx)?.validate(value))
}

/// Inlines `local://` and `blueprint://` references (Landscaper's `ReferenceResolver.Resolve`).
pub fn resolve_references(
    schema: &Value,
    ctx: &ReferenceContext<'_>,
) -> Result<Value, SchemaError> {
    let mut seen = BTreeSet::new();
    resolve(schema, "", ctx, &mut seen, 0, "")
}

const MAX_REFERENCE_DEPTH: usize = 64;

fn resolve(
    data: &Value,
    path: &str,
    ctx: &ReferenceContext<'_>,
    seen: &mut BTreeSet<String>,
    depth: usize,
    scope: &str,
) -> Result<Value, SchemaError> {
    match data {
        Value::Object(map) => {
            if let Some(r) = map.get("$ref") {
                let at = format!("{path}/$ref");
                let Value::String(uri) = r else {
                    return Err(SchemaError::Reference {
                        at,
                        message: format!("invalid reference value: expected string, got {r}"),
                    });
                };
                return resolve_reference(uri, path, &at, ctx, seen, depth, scope);
            }
            let mut out = Map::new();
            for (k, v) in map {
                out.insert(
                    k.clone(),
                    resolve(v, &format!("{path}/{}", escape(k)), ctx, seen, depth, scope)?,
                );
            }
            Ok(Value::Object(out))
        }
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, v) in items.iter().enumerate() {
                out.push(resolve(v, &format!("{path}/{i}"), ctx, seen, depth, scope)?);
            }
            Ok(Value::Array(out))
        }
        other => Ok(other.clone()),
    }
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// `scheme://host/path#fragment` split as Go's `url.Parse` would for these schemes.
struct RefUri<'a> {
    scheme: &'a str,
    host: &'a str,
    path: &'a str,
    fragment: &'a str,
}

fn parse_ref(uri: &str) -> Option<RefUri<'_>> {
    let (scheme, rest) = uri.split_once("://")?;
    if scheme.is_empty()
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    {
        return None;
    }
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    Some(RefUri {
        scheme,
        host,
        path,
        fragment,
    })
}

fn resolve_reference(
    uri: &str,
    path: &str,
    at: &str,
    ctx: &ReferenceContext<'_>,
    seen: &mut BTreeSet<String>,
    depth: usize,
    scope: &str,
) -> Result<Value, SchemaError> {
    let err = |message: String| SchemaError::Reference {
        at: at.to_string(),
        message,
    };
    let Some(parsed) = parse_ref(uri) else {
        return Ok(keep_ref(uri));
    };
    let scheme = parsed.scheme.to_ascii_lowercase();
    if !matches!(scheme.as_str(), "local" | "blueprint" | "cd") {
        return Ok(keep_ref(uri));
    }
    // A cd:// URI names different schemas from different component versions.
    let seen_key = if scheme == "cd" {
        format!("{scope}|{uri}")
    } else {
        uri.to_string()
    };
    if seen.contains(&seen_key) || depth >= MAX_REFERENCE_DEPTH {
        return Err(err(format!(
            "cyclic references detected: reference {uri:?} is part of a cycle"
        )));
    }
    let mut inner_scope = scope.to_string();
    let content = match scheme.as_str() {
        "local" => {
            if !parsed.path.is_empty() {
                return Err(err(
                    "a path is not supported for local resources".to_string()
                ));
            }
            ctx.local_types.get(parsed.host).cloned().ok_or_else(|| {
                err(format!(
                    "type {} is not defined in local types",
                    parsed.host
                ))
            })?
        }
        "blueprint" => {
            let Some(files) = ctx.files else {
                return Err(err(
                    "no filesystem defined to read a local schema".to_string()
                ));
            };
            let file = format!("{}{}", parsed.host, parsed.path);
            let bytes = files
                .read_schema_file(&file)
                .map_err(|e| err(format!("unable to read local schema from {file}: {e}")))?;
            let text = String::from_utf8_lossy(&bytes);
            match serde_json::from_str::<Value>(&text) {
                Ok(v) => v,
                Err(json_err) => crate::blueprint::parse_yaml(&text).map_err(|_| {
                    err(format!(
                        "error unmarshalling {file}: {json_err} (nor is it valid YAML)"
                    ))
                })?,
            }
        }
        _ => {
            let Some(cd) = ctx.cd else {
                return Err(err(format!(
                    "component descriptor references ({uri}) need the installation's component version (spec.componentDescriptor)"
                )));
            };
            let without_fragment = uri.split('#').next().unwrap_or(uri);
            let (schema, owner) = cd.cd_schema(scope, without_fragment).map_err(err)?;
            inner_scope = owner;
            schema
        }
    };
    seen.insert(seen_key.clone());
    let resolved = resolve(&content, path, ctx, seen, depth + 1, &inner_scope);
    seen.remove(&seen_key);
    resolve_fragment(parsed.fragment, resolved?).map_err(err)
}

fn keep_ref(uri: &str) -> Value {
    let mut m = Map::new();
    m.insert("$ref".to_string(), Value::String(uri.to_string()));
    Value::Object(m)
}

/// Landscaper's `resolveFragment`: `/`-separated map keys (no JSON pointer escapes).
fn resolve_fragment(fragment: &str, data: Value) -> Result<Value, String> {
    let f = fragment.trim_start_matches('/').trim_end_matches('/');
    if f.is_empty() {
        return Ok(data);
    }
    let mut current = &data;
    let mut walked = String::new();
    for seg in f.split('/') {
        let Value::Object(m) = current else {
            return Err(format!(
                "unable to resolve fragment {fragment}: element at {:?} is no object",
                walked
            ));
        };
        current = m.get(seg).ok_or_else(|| {
            format!(
                "error resolving fragment {fragment}: element at {walked:?} doesn't have a field {seg:?}"
            )
        })?;
        walked.push('.');
        walked.push_str(seg);
    }
    Ok(current.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx(local: &BTreeMap<String, Value>) -> ReferenceContext<'_> {
        ReferenceContext::new(local, None)
    }

    #[test]
    fn local_types_are_inlined_recursively() {
        let local: BTreeMap<String, Value> = [
            (
                "a".to_string(),
                json!({"type": "object", "properties": {"b": {"$ref": "local://B"}}}),
            ),
            ("B".to_string(), json!({"type": "integer"})),
        ]
        .into();
        let r = resolve_references(&json!({"$ref": "local://a"}), &ctx(&local)).unwrap();
        assert_eq!(
            r,
            json!({"type": "object", "properties": {"b": {"type": "integer"}}})
        );
        let frag =
            resolve_references(&json!({"$ref": "local://a#/properties/b"}), &ctx(&local)).unwrap();
        assert_eq!(frag, json!({"type": "integer"}));
    }

    #[test]
    fn cycles_and_unknown_types_are_errors() {
        let local: BTreeMap<String, Value> = [
            ("a".to_string(), json!({"items": {"$ref": "local://b"}})),
            ("b".to_string(), json!({"items": {"$ref": "local://a"}})),
        ]
        .into();
        let e = resolve_references(&json!({"$ref": "local://a"}), &ctx(&local)).unwrap_err();
        assert!(e.to_string().contains("cycl"), "{e}");
        let e = resolve_references(
            &json!({"properties": {"x": {"$ref": "local://nope"}}}),
            &ctx(&local),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "error resolving reference at /properties/x/$ref: type nope is not defined in local types"
        );
    }

    #[test]
    fn other_references_are_left_alone() {
        let local = BTreeMap::new();
        let s = json!({"definitions": {"x": {"type": "string"}}, "properties": {"a": {"$ref": "#/definitions/x"}}});
        let c = CompiledSchema::compile(&s, &ctx(&local)).unwrap();
        assert!(c.is_valid(&json!({"a": "s"})));
        let v = c.validate(&json!({"a": 1})).unwrap_err();
        assert_eq!(v[0].instance_path, "/a");
        assert_eq!(v[0].to_string(), r#"/a: 1 is not of type "string""#);
    }

    #[test]
    fn drafts_and_formats_follow_gojsonschema() {
        let local = BTreeMap::new();
        // 2019-09 is not known to gojsonschema: draft-07 keywords, formats asserted.
        let c = CompiledSchema::compile(
            &json!({"$schema": "https://json-schema.org/draft/2019-09/schema", "type": "string", "format": "ipv4"}),
            &ctx(&local),
        )
        .unwrap();
        assert!(c.is_valid(&json!("10.0.0.1")));
        assert!(!c.is_valid(&json!("nope")));
        // Draft-04: exclusiveMaximum is a boolean.
        let c = CompiledSchema::compile(
            &json!({"$schema": "http://json-schema.org/draft-04/schema#", "maximum": 3, "exclusiveMaximum": true}),
            &ctx(&local),
        )
        .unwrap();
        assert!(!c.is_valid(&json!(3)));
        assert!(CompiledSchema::compile(&json!({"type": "nope"}), &ctx(&local)).is_err());
        // Integers given as floats (as Go decodes JSON) are integers.
        let c = CompiledSchema::compile(&json!({"type": "integer"}), &ctx(&local)).unwrap();
        assert!(c.is_valid(&json!(3.0)));
    }

    #[test]
    fn remote_references_are_refused() {
        let local = BTreeMap::new();
        let e = CompiledSchema::compile(
            &json!({"$ref": "https://example.invalid/s.json"}),
            &ctx(&local),
        )
        .unwrap_err();
        assert!(e.to_string().contains("no network"), "{e}");
        let e = resolve_references(
            &json!({"$ref": "cd://componentReferences/x/resources/y"}),
            &ctx(&local),
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("need the installation's component version"),
            "{e}"
        );
    }

    /// Component schemas by (scope, uri): root → ref-1 (`resourcesschema`, referring
    /// `cd://componentReferences/ref-2/resources/memoryschema` relative to ref-1) → ref-2.
    struct Chain;

    impl CdSchemas for Chain {
        fn cd_schema(&self, scope: &str, uri: &str) -> Result<(Value, String), String> {
            match (scope, uri) {
                ("", "cd://componentReferences/ref-1/resources/resourcesschema") => Ok((
                    json!({"type": "object", "properties": {"memory": {"$ref": "cd://componentReferences/ref-2/resources/memoryschema"}}}),
                    "ref-1".into(),
                )),
                ("ref-1", "cd://componentReferences/ref-2/resources/memoryschema") => {
                    Ok((json!({"type": "string"}), "ref-2".into()))
                }
                ("", "cd://resources/loop") | ("loop", "cd://resources/loop") => {
                    Ok((json!({"$ref": "cd://resources/loop"}), "loop".into()))
                }
                _ => Err(format!("{uri} not found from {scope:?}")),
            }
        }
    }

    #[test]
    fn cd_references_resolve_relative_to_the_owning_component() {
        let local = BTreeMap::new();
        let ctx = ReferenceContext::new(&local, None).with_cd(Some(&Chain));
        let r = resolve_references(
            &json!({"$ref": "cd://componentReferences/ref-1/resources/resourcesschema"}),
            &ctx,
        )
        .unwrap();
        assert_eq!(
            r,
            json!({"type": "object", "properties": {"memory": {"type": "string"}}})
        );
        // Relative to the installation's component, ref-2 is not reachable.
        let e = resolve_references(
            &json!({"$ref": "cd://componentReferences/ref-2/resources/memoryschema"}),
            &ctx,
        )
        .unwrap_err();
        assert!(e.to_string().contains("not found"), "{e}");
        let e = resolve_references(&json!({"$ref": "cd://resources/loop"}), &ctx).unwrap_err();
        assert!(e.to_string().contains("cycle"), "{e}");
    }
}
