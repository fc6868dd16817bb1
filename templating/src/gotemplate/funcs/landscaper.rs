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
}

/// The functions that need clusters or OCM access; they fail in the appliance.
pub const UNSUPPORTED: &[&str] = &[
    "getResourceKey",
    "getResourceContent",
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
            .map_err(|e| FuncError::new(format!("unable to read include file {}: {e}", super::gofmt::quote(&name))))
            .and_then(|data| {
                let text = String::from_utf8_lossy(&data).into_owned();
                ctx.execute_text(&text, a[1].clone())
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
            return Err(FuncError::new(
                "Unable to search for a resource as no ComponentDescriptor is defined.",
            ));
        }
        let found = resolve(&c.cd, a, "resources")?;
        Ok(deep_copy(&found[0]))
    });
    let c = comps.clone();
    m.insert("getResources", Arity::AtLeast(0), move |_, a| {
        if matches!(c.cd, Value::Nil) {
            return Err(FuncError::new(
                "Unable to search for a resource as no ComponentDescriptor is defined.",
            ));
        }
        let found = resolve(&c.cd, a, "resources")?;
        // Go: []map[string]interface{}.
        Ok(Value::typed_list(
            Elem::Map,
            found.iter().map(deep_copy).collect(),
        ))
    });
    let c = comps.clone();
    m.insert("getComponent", Arity::AtLeast(0), move |_, a| {
        if matches!(c.cd, Value::Nil) {
            return Err(FuncError::new(
                "Unable to search for a component as no ComponentDescriptor is defined.",
            ));
        }
        let refs = resolve(&c.cd, a, "componentReferences")?;
        let r = &refs[0];
        let field = |k: &str| match r {
            Value::Map(m) => match m.borrow().get(k) {
                Some(Value::String(v)) => v.to_string(),
                _ => String::new(),
            },
            _ => String::new(),
        };
        let (cname, version) = (field("componentName"), field("version"));
        for cd in component_list(&c.list) {
            if cd_field(&cd, "name") == cname && cd_field(&cd, "version") == version {
                return Ok(deep_copy(&cd));
            }
        }
        Err(FuncError::new(format!(
            "unable to resolve component {}:{}",
            field("name"),
            version
        )))
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
        let ctxs = component(&cd)
            .and_then(|c| c.borrow().get("repositoryContexts").cloned())
            .unwrap_or(Value::Nil);
        Ok(match ctxs {
            Value::List(l) => match l.last() {
                Some(Value::Map(m)) => deep_copy(&Value::Map(m.clone())),
                _ => Value::empty_map(),
            },
            _ => Value::empty_map(),
        })
    });
    for &name in UNSUPPORTED {
        m.insert(name, Arity::AtLeast(0), move |_, _| {
            Err(FuncError::new(format!(
                "{name} is not supported in the appliance (it needs OCM or cluster access)"
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
];

fn component(cd: &Value) -> Option<super::super::value::MapRef> {
    let Value::Map(m) = cd else { return None };
    match m.borrow().get("component") {
        Some(Value::Map(c)) => Some(c.clone()),
        _ => None,
    }
}

fn cd_field(cd: &Value, key: &str) -> String {
    component(cd)
        .and_then(|c| match c.borrow().get(key) {
            Some(Value::String(v)) => Some(v.to_string()),
            _ => None,
        })
        .unwrap_or_default()
}

fn component_list(list: &Value) -> Vec<Value> {
    match list {
        Value::List(l) => l.to_vec(),
        Value::Map(m) => match m.borrow().get("components") {
            Some(Value::List(l)) => l.to_vec(),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// `common.GetSchemaVersionFromMapCd`.
fn schema_version(cd: &Value) -> Result<String, FuncError> {
    if let Value::Map(m) = cd {
        let m = m.borrow();
        if let Some(Value::String(v)) = m.get("apiVersion") {
            return Ok(v.to_string());
        }
        if let Some(Value::Map(meta)) = m.get("meta")
            && let Some(Value::String(v)) = meta.borrow().get("schemaVersion")
        {
            return Ok(v.to_string());
        }
    }
    Err(FuncError::new(
        "unable to determine component descriptor schema version",
    ))
}

/// `ResolveResources`/`ResolveComponents`: an optional descriptor first, then key/value pairs
/// selecting by identity (`name` plus `extraIdentity`); no match is `NotFound`.
fn resolve(default_cd: &Value, args: &[Value], field: &str) -> Result<Vec<Value>, FuncError> {
    if args.len() < 2 {
        return Err(FuncError::new("at least 2 arguments are expected"));
    }
    let (cd, pairs) = match &args[0] {
        Value::Map(_) => {
            let v = schema_version(&args[0])?;
            if v != "v2" {
                if v == "ocm.software/v3alpha1" {
                    return Err(FuncError::new(
                        "component descriptors of schema version ocm.software/v3alpha1 are not supported in the appliance",
                    ));
                }
                return Err(FuncError::new("unknown schema version"));
            }
            (args[0].clone(), &args[1..])
        }
        _ => (default_cd.clone(), args),
    };
    if pairs.len() % 2 != 0 {
        return Err(FuncError::new("odd number of key value pairs"));
    }
    let mut selector = Vec::new();
    for (i, pair) in pairs.chunks(2).enumerate() {
        let key = match &pair[0] {
            Value::String(k) => k.to_string(),
            _ => {
                return Err(FuncError::new(format!(
                    "expect argument {} to be a string",
                    i * 2
                )));
            }
        };
        let value = match &pair[1] {
            Value::String(v) => v.to_string(),
            _ => {
                return Err(FuncError::new(format!(
                    "expect argument {} to be a string",
                    i * 2 + 1
                )));
            }
        };
        selector.push((key, value));
    }
    let items = component(&cd)
        .and_then(|c| c.borrow().get(field).cloned())
        .unwrap_or(Value::Nil);
    let Value::List(items) = items else {
        return Err(FuncError::new("NotFound"));
    };
    let found: Vec<Value> = items
        .iter()
        .filter(|item| {
            let identity = identity(item);
            selector
                .iter()
                .all(|(k, v)| identity.get(k).is_some_and(|x| x == v))
        })
        .cloned()
        .collect();
    if found.is_empty() {
        return Err(FuncError::new("NotFound"));
    }
    Ok(found)
}

fn identity(item: &Value) -> BTreeMap<String, String> {
    let mut id = BTreeMap::new();
    let Value::Map(m) = item else { return id };
    let m = m.borrow();
    if let Some(Value::Map(extra)) = m.get("extraIdentity") {
        for (k, v) in extra.borrow().iter() {
            if let Value::String(v) = v {
                id.insert(k.clone(), v.to_string());
            }
        }
    }
    if let Some(Value::String(n)) = m.get("name") {
        id.insert("name".to_string(), n.to_string());
    }
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
