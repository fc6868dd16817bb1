//! Landscaper's functions for Spiff executions (`spiff/funcs.go: LandscaperSpiffFuncs`):
//! `getResource`, `getComponent`, `parseOCIRef`, `ociRefRepo` and `ociRefVersion`, with the
//! GoTemplate versions' logic (`gotemplate::funcs::landscaper`) and spiff's argument handling
//! and messages. The functions that need OCM or cluster access are registered too, and fail.
//!
//! Differences to the GoTemplate versions, as in Landscaper: there is no `getResources`,
//! `getRepositoryContext`, `toYaml` or `readFile`; `getResource` and `getComponent` search a
//! component descriptor given as first argument even when the installation has none; the
//! OCI reference functions take exactly one argument (more: `Too many arguments for
//! parseOCIReference. Expected 1 reference.`, whichever of the three is called). Where
//! Landscaper's function panics (no argument, a wrong argument type, an invalid reference), or
//! takes a `null` descriptor argument for a selector key, the call fails with a message instead.

use std::sync::Arc;

use serde_json::Value;

use super::SpiffFunctions;
use crate::gotemplate::funcs::landscaper::{
    UNSUPPORTED, parse_oci_ref, resolve_component, resolve_resources,
};

/// The blueprint annotation that selects the schema version of the component descriptors
/// `getComponent` returns (`common.OCM_SCHEMA_VERSION`).
pub const OCM_SCHEMA_VERSION_ANNOTATION: &str = "ocmSchemaVersion";

/// Landscaper's Spiff functions over the installation's component descriptor `cd` (`null`
/// without one) and the resolved descriptors `components` (a v2 `ComponentDescriptorList` or a
/// list), for a blueprint with the given `ocmSchemaVersion` annotation.
pub fn landscaper_functions(
    cd: &Value,
    components: &Value,
    ocm_schema_version: Option<&str>,
) -> SpiffFunctions {
    // `common.DetermineOCMSchemaVersion`: the annotation, else the component version's own
    // (always a valid one), else none ("": `getComponent` fails with `unknown schema version`).
    let ocm_schema_version: Option<String> = match ocm_schema_version.filter(|v| !v.is_empty()) {
        Some(v) => Some(v.to_string()),
        None if cd.is_null() => Some(String::new()),
        None => None,
    };
    let mut f = SpiffFunctions::default();
    let cd = Arc::new(cd.clone());
    let list = Arc::new(components.clone());

    let c = cd.clone();
    f.register("getResource", move |args| {
        let found = resolve_resources(&*c, args)?;
        Ok(found.into_iter().next().unwrap_or(Value::Null))
    });
    let c = cd.clone();
    f.register("getComponent", move |args| {
        resolve_component(&*c, &*list, ocm_schema_version.as_deref(), args)
    });
    f.register("parseOCIRef", |args| {
        let [repo, version] = oci_ref(args)?;
        Ok(Value::Array(vec![
            Value::String(repo),
            Value::String(version),
        ]))
    });
    f.register("ociRefRepo", |args| {
        let [repo, _] = oci_ref(args)?;
        Ok(Value::String(repo))
    });
    f.register("ociRefVersion", |args| {
        let [_, version] = oci_ref(args)?;
        Ok(Value::String(version))
    });
    register_resource_functions(&mut f, crate::resources::Resources::default());
    for &name in UNSUPPORTED {
        f.register(name, move |_| {
            Err(format!(
                "{name} is not supported in the appliance (it needs cluster access)"
            ))
        });
    }
    f
}

/// Registers `getResourceKey` and `getResourceContent` over `resources` (replacing earlier
/// registrations): one string argument, a `cd://` URI or a relative resource reference.
pub fn register_resource_functions(f: &mut SpiffFunctions, resources: crate::resources::Resources) {
    for name in ["getResourceKey", "getResourceContent"] {
        let r = resources.clone();
        f.register(name, move |args| {
            let [arg] = args else {
                return Err(format!(
                    "{name}: expected 1 argument (a resource reference)"
                ));
            };
            let Some(reference) = arg.as_str() else {
                return Err(format!("{name}: invalid argument: string expected"));
            };
            if name == "getResourceKey" {
                r.key(name, reference).map(Value::String)
            } else {
                r.content(name, reference).map(Value::String)
            }
        });
    }
}

/// The argument handling of Landscaper's `parseOCIReference`, `getOCIReferenceRepository` and
/// `getOCIReferenceVersion`, then `template.ParseOCIReference`.
fn oci_ref(args: &[Value]) -> Result<[String; 2], String> {
    if args.len() > 1 {
        return Err("Too many arguments for parseOCIReference. Expected 1 reference.".into());
    }
    let Some(arg) = args.first() else {
        return Err("Too few arguments for parseOCIReference. Expected 1 reference.".into());
    };
    let Some(reference) = arg.as_str() else {
        return Err("Invalid argument: string expected".into());
    };
    parse_oci_ref(reference).map_err(|e| e.message)
}
