//! Component descriptors: v2 and `ocm.software/v3alpha1` (FORMATS.md §5), converted to v2 as
//! Landscaper does.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::context::get_ci;
use crate::{ComponentError, RepositoryContext};

/// Descriptors are small; this bounds parsing.
pub const MAX_DESCRIPTOR_BYTES: usize = 4 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaVersion {
    V2,
    V3Alpha1,
}

impl SchemaVersion {
    /// `v2`, `ocm.software/v3alpha1` and `ocm.gardener.cloud/v3alpha1`.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim() {
            "v2" => Some(SchemaVersion::V2),
            "ocm.software/v3alpha1" | "ocm.gardener.cloud/v3alpha1" => {
                Some(SchemaVersion::V3Alpha1)
            }
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SchemaVersion::V2 => "v2",
            SchemaVersion::V3Alpha1 => "ocm.software/v3alpha1",
        }
    }
}

/// One component version as found in a repository.
#[derive(Debug, Clone)]
pub struct ComponentVersion {
    pub name: String,
    pub version: String,
    pub schema_version: SchemaVersion,
    /// The descriptor as stored.
    pub original: Value,
    /// Converted to v2 (Landscaper's model).
    pub v2: Value,
    /// Where it was found.
    pub repository_context: RepositoryContext,
    /// OCI/CTF: the manifest's digest (for the cache).
    pub manifest_digest: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ComponentReference {
    pub name: String,
    pub component_name: String,
    pub version: String,
    pub extra_identity: BTreeMap<String, String>,
}

/// Parses YAML (or JSON) into a JSON value, bounded.
pub(crate) fn parse_yaml(bytes: &[u8], origin: &str) -> Result<Value, ComponentError> {
    if bytes.len() > MAX_DESCRIPTOR_BYTES {
        return Err(ComponentError::invalid(
            origin,
            format!("larger than {MAX_DESCRIPTOR_BYTES} bytes"),
        ));
    }
    let text =
        std::str::from_utf8(bytes).map_err(|_| ComponentError::invalid(origin, "not UTF-8"))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let options = serde_saphyr::options! {
        with_snippet: false,
        budget: serde_saphyr::budget! {
            max_documents: 1,
            max_nodes: 1_000_000,
        },
    };
    serde_saphyr::from_str_with_options::<Value>(text, options)
        .map_err(|e| ComponentError::invalid(origin, format!("not YAML/JSON: {e}")))
}

fn str_field<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    get_ci(v, key).and_then(Value::as_str)
}

fn list_or_empty(v: Option<&Value>, origin: &str, what: &str) -> Result<Value, ComponentError> {
    match v {
        None | Some(Value::Null) => Ok(Value::Array(Vec::new())),
        Some(Value::Array(a)) => Ok(Value::Array(a.clone())),
        Some(other) => Err(ComponentError::invalid(
            origin,
            format!("{what} must be a list, got {}", type_name(other)),
        )),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "object",
    }
}

/// The schema of a descriptor value.
fn schema_of(value: &Value, origin: &str) -> Result<SchemaVersion, ComponentError> {
    if let Some(api) = str_field(value, "apiVersion") {
        return SchemaVersion::parse(api)
            .ok_or_else(|| ComponentError::invalid(origin, format!("unknown apiVersion {api:?}")));
    }
    let meta = get_ci(value, "meta");
    match meta.and_then(|m| str_field(m, "schemaVersion")) {
        Some(s) => SchemaVersion::parse(s)
            .filter(|s| *s == SchemaVersion::V2)
            .ok_or_else(|| {
                ComponentError::invalid(origin, format!("unknown meta.schemaVersion {s:?}"))
            }),
        None => Err(ComponentError::invalid(
            origin,
            "neither meta.schemaVersion nor apiVersion is set",
        )),
    }
}

/// The v2 provider string of a v3 provider object (`{name}` → name; with labels → JSON
/// `{"name":…,"labels":…}` in the field order Go's encoder writes).
fn provider_to_v2(provider: &Value) -> Value {
    match provider {
        Value::Object(map) => {
            let name = map
                .get("name")
                .cloned()
                .unwrap_or(Value::String(String::new()));
            match map
                .get("labels")
                .filter(|l| l.as_array().is_some_and(|a| !a.is_empty()))
            {
                Some(labels) => Value::String(format!(
                    "{{\"name\":{},\"labels\":{}}}",
                    serde_json::to_string(&name).unwrap_or_default(),
                    serde_json::to_string(labels).unwrap_or_default()
                )),
                None => name,
            }
        }
        other => other.clone(),
    }
}

/// The v3 provider object of a v2 provider string.
fn provider_to_v3(provider: &Value) -> Value {
    if let Value::String(s) = provider {
        if s.trim_start().starts_with('{')
            && let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(s)
        {
            return v;
        }
        return json!({"name": s});
    }
    provider.clone()
}

fn v2_provider_name(provider: &Value) -> String {
    match provider_to_v3(provider) {
        Value::Object(m) => m
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        _ => String::new(),
    }
}

/// v3alpha1 → v2 (Landscaper's model). Missing lists become empty lists.
pub fn v3_to_v2(v3: &Value, origin: &str) -> Result<Value, ComponentError> {
    let metadata = get_ci(v3, "metadata")
        .filter(|m| m.is_object())
        .ok_or_else(|| ComponentError::invalid(origin, "metadata is missing"))?;
    let spec = get_ci(v3, "spec").cloned().unwrap_or(json!({}));
    let mut component = Map::new();
    for key in ["name", "version"] {
        if let Some(v) = get_ci(metadata, key) {
            component.insert(key.into(), v.clone());
        }
    }
    component.insert(
        "repositoryContexts".into(),
        list_or_empty(
            get_ci(v3, "repositoryContexts"),
            origin,
            "repositoryContexts",
        )?,
    );
    if let Some(p) = get_ci(metadata, "provider") {
        component.insert("provider".into(), provider_to_v2(p));
    }
    if let Some(l) = get_ci(metadata, "labels") {
        component.insert("labels".into(), l.clone());
    }
    if let Some(t) = get_ci(metadata, "creationTime") {
        component.insert("creationTime".into(), t.clone());
    }
    component.insert(
        "sources".into(),
        list_or_empty(get_ci(&spec, "sources"), origin, "spec.sources")?,
    );
    component.insert(
        "componentReferences".into(),
        list_or_empty(get_ci(&spec, "references"), origin, "spec.references")?,
    );
    component.insert(
        "resources".into(),
        list_or_empty(get_ci(&spec, "resources"), origin, "spec.resources")?,
    );
    let mut out = Map::new();
    out.insert("meta".into(), json!({"schemaVersion": "v2"}));
    out.insert("component".into(), Value::Object(component));
    if let Some(s) = get_ci(v3, "signatures") {
        out.insert("signatures".into(), s.clone());
    }
    if let Some(s) = get_ci(v3, "nestedDigests") {
        out.insert("nestedDigests".into(), s.clone());
    }
    Ok(Value::Object(out))
}

/// v2 normalised: missing lists become empty lists.
fn normalize_v2(v2: &Value, origin: &str) -> Result<Value, ComponentError> {
    let component = get_ci(v2, "component")
        .filter(|c| c.is_object())
        .ok_or_else(|| ComponentError::invalid(origin, "component is missing"))?;
    let mut c = component.as_object().cloned().unwrap_or_default();
    for key in [
        "repositoryContexts",
        "sources",
        "componentReferences",
        "resources",
    ] {
        let value = list_or_empty(get_ci(component, key), origin, &format!("component.{key}"))?;
        c.retain(|k, _| !k.eq_ignore_ascii_case(key));
        c.insert(key.to_string(), value);
    }
    // Landscaper re-encodes through OCM's internal model: a JSON provider string comes back
    // canonical (`{"name":…,"labels":…}`), a plain one unchanged.
    if let Some(p) = c.get("provider").cloned() {
        c.insert("provider".into(), provider_to_v2(&provider_to_v3(&p)));
    }
    let mut out = v2.as_object().cloned().unwrap_or_default();
    out.insert("meta".into(), json!({"schemaVersion": "v2"}));
    out.insert("component".into(), Value::Object(c));
    Ok(Value::Object(out))
}

/// v2 → v3alpha1 (the shape templates see with `ocmSchemaVersion: ocm.software/v3alpha1`).
pub fn v2_to_v3(v2: &Value) -> Value {
    let empty = json!({});
    let component = get_ci(v2, "component").unwrap_or(&empty);
    let mut metadata = Map::new();
    for key in ["name", "version"] {
        if let Some(v) = get_ci(component, key) {
            metadata.insert(key.into(), v.clone());
        }
    }
    if let Some(p) = get_ci(component, "provider") {
        metadata.insert("provider".into(), provider_to_v3(p));
    }
    if let Some(l) = get_ci(component, "labels") {
        metadata.insert("labels".into(), l.clone());
    }
    if let Some(t) = get_ci(component, "creationTime") {
        metadata.insert("creationTime".into(), t.clone());
    }
    let mut spec = Map::new();
    for (from, to) in [
        ("resources", "resources"),
        ("sources", "sources"),
        ("componentReferences", "references"),
    ] {
        if let Some(v) =
            get_ci(component, from).filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
        {
            spec.insert(to.into(), v.clone());
        }
    }
    let mut out = Map::new();
    out.insert("apiVersion".into(), json!("ocm.software/v3alpha1"));
    out.insert("kind".into(), json!("ComponentVersion"));
    out.insert("metadata".into(), Value::Object(metadata));
    if let Some(r) = get_ci(component, "repositoryContexts") {
        out.insert("repositoryContexts".into(), r.clone());
    }
    out.insert("spec".into(), Value::Object(spec));
    if let Some(s) = get_ci(v2, "signatures") {
        out.insert("signatures".into(), s.clone());
    }
    if let Some(s) = get_ci(v2, "nestedDigests") {
        out.insert("nestedDigests".into(), s.clone());
    }
    Value::Object(out)
}

/// Validation Landscaper applies beyond parsing (JSON schema essentials + Go validation).
fn validate_v2(v2: &Value, origin: &str, schema: SchemaVersion) -> Result<(), ComponentError> {
    let c = &v2["component"];
    for key in ["name", "version"] {
        match c.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => {}
            _ => {
                return Err(ComponentError::invalid(
                    origin,
                    format!("component {key} is missing or not a string"),
                ));
            }
        }
    }
    let provider = c.get("provider").map(v2_provider_name).unwrap_or_default();
    if provider.trim().is_empty() {
        let field = match schema {
            SchemaVersion::V2 => "component.provider",
            SchemaVersion::V3Alpha1 => "metadata.provider.name",
        };
        return Err(ComponentError::invalid(
            origin,
            format!("{field} is required"),
        ));
    }
    for (list, label) in [("resources", "resource"), ("sources", "source")] {
        for (i, entry) in c[list].as_array().into_iter().flatten().enumerate() {
            let ok = entry
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty())
                && entry
                    .get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| !t.is_empty());
            if !ok {
                return Err(ComponentError::invalid(
                    origin,
                    format!("{label} {i}: name and type are required"),
                ));
            }
            if let Some(access) = entry.get("access")
                && !access.is_null()
                && str_field(access, "type").is_none()
            {
                return Err(ComponentError::invalid(
                    origin,
                    format!("{label} {i}: access has no type"),
                ));
            }
        }
    }
    for (i, r) in c["componentReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        for key in ["name", "componentName", "version"] {
            if r.get(key).and_then(Value::as_str).is_none_or(str::is_empty) {
                return Err(ComponentError::invalid(
                    origin,
                    format!("component reference {i}: {key} is required"),
                ));
            }
        }
    }
    if c["repositoryContexts"]
        .as_array()
        .is_none_or(|a| a.is_empty())
    {
        return Err(ComponentError::invalid(
            origin,
            "repository context is required",
        ));
    }
    Ok(())
}

impl ComponentVersion {
    /// YAML or JSON, v2 or v3alpha1, with Landscaper's validation (provider,
    /// repositoryContexts, ...).
    pub fn parse(
        bytes: &[u8],
        origin: &str,
        found_in: RepositoryContext,
    ) -> Result<Self, ComponentError> {
        let value = parse_yaml(bytes, origin)?;
        Self::from_value(value, origin, found_in)
    }

    /// As [`ComponentVersion::parse`] from an already decoded value.
    pub fn from_value(
        original: Value,
        origin: &str,
        found_in: RepositoryContext,
    ) -> Result<Self, ComponentError> {
        if !original.is_object() {
            return Err(ComponentError::invalid(origin, "not an object"));
        }
        let schema_version = schema_of(&original, origin)?;
        let v2 = match schema_version {
            SchemaVersion::V2 => normalize_v2(&original, origin)?,
            SchemaVersion::V3Alpha1 => v3_to_v2(&original, origin)?,
        };
        validate_v2(&v2, origin, schema_version)?;
        let name = v2["component"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let version = v2["component"]["version"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        Ok(ComponentVersion {
            name,
            version,
            schema_version,
            original,
            v2,
            repository_context: found_in,
            manifest_digest: None,
        })
    }

    /// Adds `context` as the descriptor's repository context when it has none (CTFs and
    /// component archives are "intermediate" repositories: `ocm add components` leaves
    /// `repositoryContexts: []`). Returns the descriptor bytes' value with the context added.
    pub fn with_default_repository_context(mut value: Value, context: &Value) -> Value {
        let target = if get_ci(&value, "apiVersion").is_some() {
            Some(&mut value)
        } else {
            value.get_mut("component")
        };
        if let Some(Value::Object(map)) = target {
            let empty = map
                .get("repositoryContexts")
                .is_none_or(|r| r.as_array().is_none_or(|a| a.is_empty()));
            if empty {
                map.insert("repositoryContexts".into(), json!([context]));
            }
        }
        value
    }

    pub fn identity(&self) -> String {
        format!("{}:{}", self.name, self.version)
    }

    fn resources(&self) -> &[Value] {
        self.v2["component"]["resources"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// Landscaper looks resources up by name only.
    pub fn resource(&self, name: &str) -> Result<&Value, ComponentError> {
        self.resources()
            .iter()
            .find(|r| r.get("name").and_then(Value::as_str) == Some(name))
            .ok_or_else(|| ComponentError::ResourceNotFound {
                component: self.name.clone(),
                version: self.version.clone(),
                resource: name.to_string(),
            })
    }

    pub fn references(&self) -> Vec<ComponentReference> {
        self.v2["component"]["componentReferences"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| ComponentReference {
                name: r["name"].as_str().unwrap_or_default().to_string(),
                component_name: r["componentName"].as_str().unwrap_or_default().to_string(),
                version: r["version"].as_str().unwrap_or_default().to_string(),
                extra_identity: r
                    .get("extraIdentity")
                    .and_then(Value::as_object)
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| {
                                (
                                    k.clone(),
                                    v.as_str()
                                        .map(str::to_string)
                                        .unwrap_or_else(|| v.to_string()),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            })
            .collect()
    }

    /// The descriptor in the schema templates ask for.
    pub fn descriptor_in(&self, schema: SchemaVersion) -> Value {
        match (schema, self.schema_version) {
            (SchemaVersion::V2, _) => self.v2.clone(),
            (SchemaVersion::V3Alpha1, SchemaVersion::V3Alpha1) => self.original.clone(),
            (SchemaVersion::V3Alpha1, SchemaVersion::V2) => v2_to_v3(&self.v2),
        }
    }

    /// The effective repository context: the last entry of `repositoryContexts`.
    pub fn effective_repository_context(&self) -> Option<&Value> {
        self.v2["component"]["repositoryContexts"]
            .as_array()
            .and_then(|a| a.last())
    }

    /// A resource's `access` object and its `type`.
    pub fn resource_access<'s>(
        &'s self,
        resource: &'s Value,
    ) -> Result<(&'s Value, String), ComponentError> {
        let name = resource["name"].as_str().unwrap_or_default();
        let access = resource
            .get("access")
            .filter(|a| a.is_object())
            .ok_or_else(|| ComponentError::Content {
                component: self.name.clone(),
                version: self.version.clone(),
                resource: name.to_string(),
                reason: "the resource has no access".into(),
            })?;
        let ty = str_field(access, "type").unwrap_or_default().to_string();
        Ok((access, ty))
    }
}

/// The access-field lookup, case-insensitive (`filename` loads as `fileName`).
pub fn access_field<'v>(access: &'v Value, key: &str) -> Option<&'v str> {
    str_field(access, key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::RepositoryKind;

    pub(crate) fn local_ctx() -> RepositoryContext {
        RepositoryContext::for_file(RepositoryKind::Local {
            file_path: "./".into(),
        })
    }

    const V2: &str = r#"
meta: {schemaVersion: v2}
component:
  name: example.com/a
  version: 1.0.0
  provider: internal
  repositoryContexts: [{type: ociRegistry, baseUrl: example.com}]
  resources:
  - {name: bp, type: blueprint, version: 1.0.0, relation: local, access: {type: localBlob, localReference: bp}}
  componentReferences:
  - {name: ref, componentName: example.com/b, version: 2.0.0, extraIdentity: {k: v}}
"#;

    const V3: &str = r#"
apiVersion: ocm.software/v3alpha1
kind: ComponentVersion
metadata: {name: example.com/a, version: 1.0.0, provider: {name: internal}}
repositoryContexts: [{type: ociRegistry, baseUrl: example.com}]
spec:
  resources:
  - {name: bp, type: blueprint, version: 1.0.0, relation: local, access: {type: localBlob, localReference: bp}}
  references:
  - {name: ref, componentName: example.com/b, version: 2.0.0, extraIdentity: {k: v}}
"#;

    #[test]
    fn v2_and_v3_are_equal_after_conversion() {
        let a = ComponentVersion::parse(V2.as_bytes(), "v2", local_ctx()).expect("v2");
        let b = ComponentVersion::parse(V3.as_bytes(), "v3", local_ctx()).expect("v3");
        assert_eq!(a.schema_version, SchemaVersion::V2);
        assert_eq!(b.schema_version, SchemaVersion::V3Alpha1);
        assert_eq!(a.v2, b.v2);
        assert_eq!(a.references(), b.references());
        assert_eq!(a.references()[0].extra_identity["k"], "v");
        assert_eq!(a.descriptor_in(SchemaVersion::V3Alpha1), b.original);
        assert_eq!(a.resource("bp").expect("bp")["type"], "blueprint");
        let err = a.resource("nope").expect_err("missing");
        assert!(err.to_string().contains("example.com/a:1.0.0"), "{err}");
    }

    #[test]
    fn invalid_descriptors_are_rejected() {
        for (text, want) in [
            (V2.replace("  provider: internal\n", ""), "provider"),
            (V3.replace(", provider: {name: internal}", ""), "provider"),
            (
                V2.replace(
                    "  repositoryContexts: [{type: ociRegistry, baseUrl: example.com}]\n",
                    "",
                ),
                "repository context",
            ),
            (
                V2.replace("schemaVersion: v2", "schemaVersion: v9"),
                "schemaVersion",
            ),
            ("- a list".to_string(), "object"),
            ("a: [".to_string(), "YAML"),
        ] {
            let err = ComponentVersion::parse(text.as_bytes(), "t", local_ctx()).expect_err(want);
            assert!(err.to_string().contains(want), "{err} / {want}");
        }
    }

    #[test]
    fn provider_with_labels_round_trips() {
        let v3 = json!({"apiVersion": "ocm.software/v3alpha1", "kind": "ComponentVersion",
            "metadata": {"name": "x.io/a", "version": "1", "provider": {"name": "p", "labels": [{"name": "l", "value": 1}]}},
            "repositoryContexts": [{"type": "ociRegistry", "baseUrl": "x.io"}], "spec": {}});
        let v2 = v3_to_v2(&v3, "t").expect("converts");
        assert!(
            v2["component"]["provider"]
                .as_str()
                .expect("string")
                .contains("\"labels\"")
        );
        assert_eq!(
            v2_to_v3(&v2)["metadata"]["provider"],
            v3["metadata"]["provider"]
        );
    }
}
