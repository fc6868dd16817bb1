//! Landscaper's GoTemplate functions (`gotemplate/funcs.go: LandscaperTplFuncMap` and the
//! `include` of `gotemplate.go`), over component descriptors given as values.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::OnceLock;

use regex::Regex;

use super::super::function::{Arity, FuncError, FuncMap, GoType};
use super::super::value::{Elem, Value};
use super::args::{self, s};
use super::dicts::deep_copy;
use super::{helm, yaml};

/// Landscaper's `recursionMaxNums` for `include`.
pub const LANDSCAPER_INCLUDE_MAX: usize = 100;

/// The component data Landscaper's functions work on.
#[derive(Clone, Default)]
pub struct Components {
    /// The installation's component descriptor (`.cd`), or nil.
    pub cd: Value,
    /// All resolved component descriptors: a v2 `ComponentDescriptorList` map
    /// (`{meta, components: […]}`) or a plain list of descriptors.
    pub list: Value,
    /// `getResourceKey` and `getResourceContent` read resources through it.
    pub resources: crate::resources::Resources,
}

/// The functions that need cluster access; they fail in the appliance.
pub const UNSUPPORTED: &[&str] = &[
    "getShootAdminKubeconfig",
    "getShootAdminKubeconfigWithExpirationTimestamp",
    "getServiceAccountKubeconfig",
    "getServiceAccountKubeconfigWithExpirationTimestamp",
    "getOidcKubeconfig",
];

/// Landscaper's additional functions (without sprig), `include` included.
pub fn landscaper(components: Components) -> FuncMap {
    let mut m = FuncMap::new();
    let comps = Rc::new(components);

    let included: Rc<RefCell<HashMap<String, usize>>> = Rc::default();
    m.insert("include", Arity::Exact(2), move |ctx, a| {
        let name = args::string(&a[0])?;
        {
            let mut map = included.borrow_mut();
            let n = map.entry(name.to_string()).or_insert(0);
            if *n > LANDSCAPER_INCLUDE_MAX {
                return Err(FuncError::new(format!(
                    "rendering template has a nested reference name: {name}: unable to execute template"
                )));
            }
            *n += 1;
        }
        let result = ctx
            .read_file(&name)
            .map_err(|e| FuncError::new(format!("unable to read include file {}: {e}", crate::gofmt::quote(&name))))
            .and_then(|data| {
                let text = String::from_utf8_lossy(&data).into_owned();
                ctx.execute_isolated(&text, a[1].clone())
            });
        if let Some(n) = included.borrow_mut().get_mut(&*name) {
            *n -= 1;
        }
        Ok(s(result?))
    });
    m.insert("readFile", Arity::Exact(1), |ctx, a| {
        let path = args::string(&a[0])?;
        let data = ctx.read_file(&path)?;
        Ok(Value::Bytes(Rc::from(data)))
    });
    m.insert("readDir", Arity::Exact(1), |ctx, a| {
        let path = args::string(&a[0])?;
        let entries = ctx.read_dir(&path)?;
        Ok(Value::list(
            entries
                .into_iter()
                .map(|(name, is_dir)| {
                    let mut fi = BTreeMap::new();
                    fi.insert("Name".to_string(), s(name));
                    fi.insert("IsDir".to_string(), Value::Bool(is_dir));
                    Value::map(fi)
                })
                .collect(),
        ))
    });
    m.insert("toYaml", Arity::Exact(1), |_, a| {
        Ok(s(helm::to_yaml(&a[0])))
    });
    m.insert("fromYaml", Arity::Exact(1), |_, a| {
        yaml::unmarshal(&args::string(&a[0])?).map_err(FuncError::new)
    });
    m.insert("parseOCIRef", Arity::Exact(1), |_, a| {
        // Go: [2]string; a []string is the closest the value model has.
        let [repo, version] = parse_oci_ref(&args::string(&a[0])?)?;
        Ok(Value::string_list([repo, version]))
    });
    m.insert("ociRefRepo", Arity::Exact(1), |_, a| {
        Ok(s(parse_oci_ref(&args::string(&a[0])?)?[0].clone()))
    });
    m.insert("ociRefVersion", Arity::Exact(1), |_, a| {
        Ok(s(parse_oci_ref(&args::string(&a[0])?)?[1].clone()))
    });
    let c = comps.clone();
    m.insert("getResource", Arity::AtLeast(0), move |_, a| {
        if matches!(c.cd, Value::Nil) {
            return Err(FuncError::new(NO_CD_RESOURCE));
        }
        let found = resolve_resources(&c.cd, a).map_err(FuncError::new)?;
        Ok(deep_copy(&found[0]))
    });
    let c = comps.clone();
    m.insert("getResources", Arity::AtLeast(0), move |_, a| {
        if matches!(c.cd, Value::Nil) {
            return Err(FuncError::new(NO_CD_RESOURCE));
        }
        let found = resolve_resources(&c.cd, a).map_err(FuncError::new)?;
        // Go: []map[string]interface{}.
        Ok(Value::typed_list(
            Elem::Map,
            found.iter().map(deep_copy).collect(),
        ))
    });
    let c = comps.clone();
    m.insert("getComponent", Arity::AtLeast(0), move |_, a| {
        if matches!(c.cd, Value::Nil) {
            return Err(FuncError::new(NO_CD_COMPONENT));
        }
        // The component version's own schema version (the blueprint's `ocmSchemaVersion`
        // annotation is not known here), which is always a valid one.
        let cd = resolve_component(&c.cd, &c.list, None, a).map_err(FuncError::new)?;
        Ok(deep_copy(&cd))
    });
    m.insert("getRepositoryContext", Arity::Exact(1), |_, a| {
        let cd = match &a[0] {
            Value::Nil => {
                return Err(FuncError::new(
                    "Unable to get effective component descriptor as no ComponentDescriptor is defined.",
                ));
            }
            Value::Map(_) => a[0].clone(),
            _ => return Err(FuncError::new("invalid component descriptor")),
        };
        if schema_version(&cd).is_err() {
            return Ok(Value::empty_map());
        }
        let ctxs = cd
            .get("component")
            .and_then(|c| c.get("repositoryContexts"))
            .unwrap_or(Value::Nil);
        Ok(match ctxs {
            Value::List(l) => match l.last() {
                Some(Value::Map(m)) => deep_copy(&Value::Map(m.clone())),
                _ => Value::empty_map(),
            },
            _ => Value::empty_map(),
        })
    });
    let c = comps.clone();
    m.insert("getResourceKey", Arity::Exact(1), move |_, a| {
        let reference = args::string(&a[0])?;
        c.resources
            .key("getResourceKey", &reference)
            .map(s)
            .map_err(FuncError::new)
    });
    let c = comps.clone();
    m.insert("getResourceContent", Arity::Exact(1), move |_, a| {
        let reference = args::string(&a[0])?;
        c.resources
            .content("getResourceContent", &reference)
            .map(s)
            .map_err(FuncError::new)
    });
    for &name in UNSUPPORTED {
        m.insert(name, Arity::AtLeast(0), move |_, _| {
            Err(FuncError::new(format!(
                "{name} is not supported in the appliance (it needs cluster access)"
            )))
        });
    }
    for &(name, params) in PARAMS {
        m.set_params(name, params);
    }
    m
}

/// The Go parameter types of Landscaper's functions with typed parameters (the others take
/// `interface{}` or `...interface{}`).
const PARAMS: &[(&str, &[GoType])] = &[
    ("include", &[GoType::String, GoType::Any]),
    ("readFile", &[GoType::String]),
    ("readDir", &[GoType::String]),
    ("fromYaml", &[GoType::String]),
    ("parseOCIRef", &[GoType::String]),
    ("ociRefRepo", &[GoType::String]),
    ("ociRefVersion", &[GoType::String]),
    ("getResourceKey", &[GoType::String]),
    ("getResourceContent", &[GoType::String]),
];

/// The message of `getResource` and `getResources` without a component descriptor.
pub(crate) const NO_CD_RESOURCE: &str =
    "Unable to search for a resource as no ComponentDescriptor is defined.";
/// The message of `getComponent` without a component descriptor.
pub(crate) const NO_CD_COMPONENT: &str =
    "Unable to search for a component as no ComponentDescriptor is defined.";

/// The data Landscaper's component functions read: Go template values (GoTemplate) or JSON
/// (Spiff). The functions below implement Landscaper's `template/helper.go` once for both.
pub(crate) trait CdData: Clone {
    fn is_nil(&self) -> bool;
    fn is_map(&self) -> bool;
    /// The entry of a map.
    fn get(&self, key: &str) -> Option<Self>;
    /// A string's text.
    fn text(&self) -> Option<String>;
    /// A list's elements.
    fn items(&self) -> Option<Vec<Self>>;
    /// The entries of a map whose values are strings.
    fn string_entries(&self) -> Vec<(String, String)>;
}

impl CdData for Value {
    fn is_nil(&self) -> bool {
        matches!(self, Value::Nil)
    }
    fn is_map(&self) -> bool {
        matches!(self, Value::Map(_))
    }
    fn get(&self, key: &str) -> Option<Self> {
        match self {
            Value::Map(m) => m.borrow().get(key).cloned(),
            _ => None,
        }
    }
    fn text(&self) -> Option<String> {
        match self {
            Value::String(s) => Some(s.to_string()),
            _ => None,
        }
    }
    fn items(&self) -> Option<Vec<Self>> {
        match self {
            Value::List(l) => Some(l.to_vec()),
            _ => None,
        }
    }
    fn string_entries(&self) -> Vec<(String, String)> {
        match self {
            Value::Map(m) => m
                .borrow()
                .iter()
                .filter_map(|(k, v)| v.text().map(|v| (k.clone(), v)))
                .collect(),
            _ => Vec::new(),
        }
    }
}

impl CdData for serde_json::Value {
    fn is_nil(&self) -> bool {
        self.is_null()
    }
    fn is_map(&self) -> bool {
        self.is_object()
    }
    fn get(&self, key: &str) -> Option<Self> {
        self.as_object().and_then(|m| m.get(key)).cloned()
    }
    fn text(&self) -> Option<String> {
        self.as_str().map(str::to_string)
    }
    fn items(&self) -> Option<Vec<Self>> {
        self.as_array().cloned()
    }
    fn string_entries(&self) -> Vec<(String, String)> {
        self.as_object()
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// `component.<key>` of a descriptor as a string ("" when missing).
fn cd_field<T: CdData>(cd: &T, key: &str) -> String {
    cd.get("component")
        .and_then(|c| c.get(key))
        .and_then(|v| v.text())
        .unwrap_or_default()
}

/// The descriptors of `.components`: a v2 `ComponentDescriptorList` (`{meta, components}`) or
/// a plain list.
fn component_list<T: CdData>(list: &T) -> Vec<T> {
    list.items()
        .or_else(|| list.get("components").and_then(|c| c.items()))
        .unwrap_or_default()
}

/// `common.GetSchemaVersionFromMapCd`.
pub(crate) fn schema_version<T: CdData>(cd: &T) -> Result<String, String> {
    cd.get("apiVersion")
        .and_then(|v| v.text())
        .or_else(|| cd.get("meta").and_then(|m| m.get("schemaVersion")?.text()))
        .ok_or_else(|| "unable to determine component descriptor schema version".to_string())
}

/// `template.ResolveResources`: the resources of a component descriptor selected by identity.
/// `args` is an optional descriptor (a map) followed by key/value pairs selecting on the
/// resource identity (`name` plus `extraIdentity`); without a descriptor argument,
/// `default_cd` is searched. No match is `NotFound`.
pub(crate) fn resolve_resources<T: CdData>(default_cd: &T, args: &[T]) -> Result<Vec<T>, String> {
    resolve(default_cd, args, "resources", NO_CD_RESOURCE)
}

/// `template.ResolveComponents` (first result): the component descriptor, from `list`, of the
/// first component reference of the descriptor selected as in [`resolve_resources`]. Every
/// selected reference must resolve. `ocm_schema_version` is the blueprint's
/// `ocmSchemaVersion` (or `""` without one and without an installation component); `None`
/// stands for the installation component's own version, which is always valid.
pub(crate) fn resolve_component<T: CdData>(
    default_cd: &T,
    list: &T,
    ocm_schema_version: Option<&str>,
    args: &[T],
) -> Result<T, String> {
    let refs = resolve(default_cd, args, "componentReferences", NO_CD_COMPONENT)?;
    let descriptors = component_list(list);
    let mut found = Vec::with_capacity(refs.len());
    for r in &refs {
        let field = |k: &str| r.get(k).and_then(|v| v.text()).unwrap_or_default();
        let (name, version) = (field("componentName"), field("version"));
        let cd = descriptors
            .iter()
            .find(|cd| cd_field(*cd, "name") == name && cd_field(*cd, "version") == version)
            .ok_or_else(|| format!("unable to resolve component {}:{version}", field("name")))?;
        found.push(cd.clone());
    }
    // `ConvertCompDescV2ToMapCd` knows v2 and v3alpha1 (both come out as v2).
    if let Some(v) = ocm_schema_version
        && v != SCHEMA_VERSION_V2
        && v != SCHEMA_VERSION_V3ALPHA1
    {
        return Err("unknown schema version".to_string());
    }
    Ok(found.swap_remove(0))
}

const SCHEMA_VERSION_V2: &str = "v2";
const SCHEMA_VERSION_V3ALPHA1: &str = "ocm.software/v3alpha1";

fn resolve<T: CdData>(
    default_cd: &T,
    args: &[T],
    field: &str,
    no_cd: &str,
) -> Result<Vec<T>, String> {
    if args.len() < 2 {
        return Err("at least 2 arguments are expected".to_string());
    }
    // `getResource(cd, ...)` without a descriptor: Landscaper takes the nil for a key (an odd
    // number of pairs, or a panic); say what is missing instead.
    if args[0].is_nil() && default_cd.is_nil() {
        return Err(no_cd.to_string());
    }
    let (cd, pairs) = if args[0].is_map() {
        // `common.ConvertMapCdToCompDescV2`.
        match schema_version(&args[0])?.as_str() {
            SCHEMA_VERSION_V2 => {}
            SCHEMA_VERSION_V3ALPHA1 => {
                return Err(
                    "component descriptors of schema version ocm.software/v3alpha1 are not supported in the appliance"
                        .to_string(),
                );
            }
            _ => return Err("unknown schema version".to_string()),
        }
        (&args[0], &args[1..])
    } else {
        (default_cd, args)
    };
    if pairs.len() % 2 != 0 {
        return Err("odd number of key value pairs".to_string());
    }
    // A Go map: a repeated key selects by its last value.
    let mut selector = BTreeMap::new();
    for (i, pair) in pairs.chunks(2).enumerate() {
        let key = pair[0]
            .text()
            .ok_or_else(|| format!("expect argument {} to be a string", i * 2))?;
        let value = pair[1]
            .text()
            .ok_or_else(|| format!("expect argument {} to be a string", i * 2 + 1))?;
        selector.insert(key, value);
    }
    if cd.is_nil() {
        return Err(no_cd.to_string());
    }
    let items = cd
        .get("component")
        .and_then(|c| c.get(field))
        .and_then(|l| l.items())
        .unwrap_or_default();
    let found: Vec<T> = items
        .into_iter()
        .filter(|item| {
            let identity = identity(item);
            selector
                .iter()
                .all(|(k, v)| identity.get(k).is_some_and(|x| x == v))
        })
        .collect();
    if found.is_empty() {
        return Err("NotFound".to_string());
    }
    Ok(found)
}

/// An element's identity: its `extraIdentity` and `name`.
fn identity<T: CdData>(item: &T) -> BTreeMap<String, String> {
    let mut id: BTreeMap<String, String> = item
        .get("extraIdentity")
        .map(|e| e.string_entries().into_iter().collect())
        .unwrap_or_default();
    id.insert(
        "name".to_string(),
        item.get("name").and_then(|n| n.text()).unwrap_or_default(),
    );
    id
}

fn oci_regexes() -> &'static (Regex, Regex) {
    static R: OnceLock<(Regex, Regex)> = OnceLock::new();
    R.get_or_init(|| {
        let component = r"[a-z0-9]+(?:(?:[._]|__|[-]*)[a-z0-9]+)*";
        let domain_comp = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
        let domain = format!(r"(?:{domain_comp}(?:\.{domain_comp})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?");
        let name = format!(r"(?:{domain}/)?{component}(?:/{component})*");
        let reference = format!(
            r"^({name})(?::([\w][\w.-]{{0,127}}))?(?:@([A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][0-9a-fA-F]{{32,}}))?$"
        );
        (
            Regex::new(&reference).expect("reference regex"),
            Regex::new(&format!("^{domain}$")).expect("domain regex"),
        )
    })
}

/// `template.ParseOCIReference`: `[repository, tag or digest]`, Docker Hub names shortened
/// back to what was written.
pub fn parse_oci_ref(reference: &str) -> Result<[String; 2], FuncError> {
    let mut r = reference;
    if let Some(i) = r.find("://") {
        r = &r[i + 3..];
    }
    let (re, _) = oci_regexes();
    let caps = re.captures(r).ok_or_else(|| {
        let lower_ok = re.is_match(&r.to_ascii_lowercase());
        FuncError::new(if lower_ok {
            "invalid reference format: repository name must be lowercase"
        } else {
            "invalid reference format"
        })
    })?;
    let name = caps.get(1).map_or("", |m| m.as_str());
    let tag = caps.get(2).map(|m| m.as_str().to_string());
    let digest = caps.get(3).map(|m| m.as_str().to_string());
    if let Some(d) = &digest {
        validate_digest(d)?;
    }
    if reference.split(':').count() < 2 {
        return Err(FuncError::new("invalid reference"));
    }
    let (domain, path) = match name.split_once('/') {
        Some((d, p))
            if d.contains('.')
                || d.contains(':')
                || d == "localhost"
                || d != d.to_ascii_lowercase() =>
        {
            (d.to_string(), p.to_string())
        }
        _ => ("docker.io".to_string(), name.to_string()),
    };
    let path = if domain == "docker.io" && !path.contains('/') {
        format!("library/{path}")
    } else {
        path
    };
    let host = if domain == "docker.io" {
        "index.docker.io".to_string()
    } else {
        domain
    };
    let full = format!("{host}/{path}");
    let repo = full
        .strip_prefix("index.docker.io/library/")
        .or_else(|| full.strip_prefix("index.docker.io/"))
        .map(str::to_string)
        .unwrap_or(full);
    // ParseDockerRef keeps the digest when both are given; a bare name gets "latest".
    let version = match (tag, digest) {
        (_, Some(d)) => d,
        (Some(t), None) => t,
        (None, None) => "latest".to_string(),
    };
    Ok([repo, version])
}

/// go-digest's `Digest.Validate` (`reference.Parse` checks a reference's digest with it), for
/// the algorithms Landscaper links: sha256, sha384, sha512, lowercase hex of their size.
fn validate_digest(d: &str) -> Result<(), FuncError> {
    let (algorithm, encoded) = d.split_once(':').unwrap_or((d, ""));
    let size = match algorithm {
        "sha256" => 32,
        "sha384" => 48,
        "sha512" => 64,
        _ => {
            // `DigestRegexpAnchored` (the encoded part, hex, always fits it).
            let lower = algorithm.split(['.', '+', '_', '-']).all(|c| {
                !c.is_empty()
                    && c.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            });
            return Err(FuncError::new(if lower {
                "unsupported digest algorithm"
            } else {
                "invalid checksum digest format"
            }));
        }
    };
    if encoded.len() != size * 2 {
        return Err(FuncError::new("invalid checksum digest length"));
    }
    if !encoded
        .bytes()
        .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return Err(FuncError::new("invalid checksum digest format"));
    }
    Ok(())
}
