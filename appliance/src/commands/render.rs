//! `render`: offline rendering of a blueprint, exactly as the controllers would render it.
//!
//! * `render DIR|INSTALLATION.yaml --imports FILE [--imports-from PATH] [--export-values FILE]`:
//!   loads the blueprint (a directory, or the inline blueprint of an Installation manifest),
//!   builds and validates the imports, renders the deploy executions and subinstallations (and
//!   the export executions when deploy item exports are given) and prints one document:
//!   `deployItems`, `subinstallations`, `exports`, `state`.
//! * `render template --engine gotemplate|spiff FILE --values FILE`: one template.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use landscaper_store::model::{Installation, from_value};
use landscaper_store::{Kind, MemoryObjects};
use landscaper_templating::blueprint::{
    Bindings, Blueprint, BlueprintFs, ExportBindings, ImportType, construct_imports,
    evaluate_import_data_mappings, normalize_path, parse_yaml, render_deploy_executions,
    render_export_executions, render_import_executions, render_subinstallations,
};
use landscaper_templating::gotemplate::funcs::{Components, landscaper_template_funcs};
use landscaper_templating::gotemplate::{FileHost, FuncError, Limits, Template, Value as GoValue};
use landscaper_templating::spiff::{self, SpiffOptions};
use serde_json::{Map, Value, json};

use crate::cli::{RenderArgs, RenderEngine, RenderOutputFormat, RenderTemplateArgs};
use crate::daemon::controllers::installation::dataflow;
use crate::daemon::ingest::{is_manifest_name, parse_manifest, scan};

const DEFAULT_NAMESPACE: &str = "default";

/// `render PATH ...`: prints the rendered document to `out`, warnings to `warn`.
pub fn run(args: &RenderArgs, out: &mut impl Write, warn: &mut impl Write) -> anyhow::Result<()> {
    let Some(path) = &args.path else {
        bail!(
            "render needs a blueprint directory or an Installation manifest (or `render template ...`)"
        );
    };
    let source = load_source(path, args.name.as_deref())?;
    let namespace = source
        .installation
        .as_ref()
        .and_then(|i| i.metadata.namespace.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| DEFAULT_NAMESPACE.to_string());

    if source.installation.is_none() && args.imports_from.is_some() {
        writeln!(
            warn,
            "warning: --imports-from is used with an Installation manifest only (a blueprint directory takes --imports)"
        )?;
    }
    // Objects that installation imports may refer to.
    let mut objects = source.objects.clone();
    if let Some(from) = &args.imports_from {
        for o in read_objects(from)? {
            objects.insert(o)?;
        }
    }
    let given = match &args.imports {
        Some(file) => {
            let Value::Object(given) = read_value_file(file)? else {
                bail!(
                    "{}: imports must be a map of import name to value",
                    file.display()
                );
            };
            given
        }
        None => Map::new(),
    };
    let mut installation_values = Map::new();
    if let Some(inst) = &source.installation {
        installation_values = resolve_installation_imports(inst, &objects, &given)
            .with_context(|| format!("{}: resolving the installation's imports", source.origin))?;
    }
    installation_values.extend(given);
    // A blueprint from a component version (spec.componentDescriptor.ref), resolved as the
    // controllers resolve it; the runtime stays alive for getResourceContent while rendering.
    let mut resolved_components = None;
    let _runtime;
    let resolved_blueprint;
    let bp = match (&source.blueprint, &source.installation) {
        (Some(bp), _) => bp,
        (None, Some(inst)) => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .context("starting the runtime for component resolution")?;
            let (blueprint, components) =
                resolve_component_blueprint(&runtime, args, inst, &objects).with_context(|| {
                    format!("{}: resolving the component version", source.origin)
                })?;
            resolved_components = components;
            resolved_blueprint = blueprint;
            _runtime = runtime;
            &resolved_blueprint
        }
        (None, None) => bail!("{}: no blueprint", source.origin),
    };
    for w in bp.warnings() {
        writeln!(warn, "warning: {}: {w}", source.origin)?;
    }
    // Targets given as their spec become Target objects.
    for def in bp.all_imports() {
        if let (Some(t), Some(v)) = (def.import_type(), installation_values.get_mut(&def.name)) {
            normalize_target_value(t, &def.name, v, &namespace);
        }
    }
    let mapped = match source
        .installation
        .as_ref()
        .and_then(|i| i.spec.import_data_mappings.as_ref())
    {
        Some(m) if !m.is_empty() => evaluate_import_data_mappings(m, &installation_values)
            .with_context(|| format!("{}: spec.importDataMappings", source.origin))?,
        _ => Map::new(),
    };
    let imports = construct_imports(bp, &installation_values, &mapped)
        .with_context(|| format!("{}: invalid imports", source.origin))?;

    let mut bindings = match &source.installation {
        Some(inst) => dataflow::installation_bindings(inst, imports),
        None => Bindings::with_imports(imports),
    };
    if let Some(c) = &resolved_components {
        c.bind(&mut bindings);
    }
    // Import executions add bindings to the imports, or fail the import validation.
    let import_executions = render_import_executions(bp, &bindings)
        .with_context(|| format!("{}: rendering failed", source.origin))?;
    for (k, v) in import_executions.bindings {
        bindings.imports.insert(k, v);
    }
    if !import_executions.errors.is_empty() {
        bail!(
            "{}: import validation failed: {}",
            source.origin,
            import_executions.errors.join(", ")
        );
    }
    if let Some(file) = &args.state {
        let Value::Object(state) = read_value_file(file)? else {
            bail!(
                "{}: state must be a map of state key (deploy<execution>, export<execution>) to state",
                file.display()
            );
        };
        bindings.state = state.into_iter().collect();
    }

    let deploy = render_deploy_executions(bp, &bindings)
        .with_context(|| format!("{}: rendering failed", source.origin))?;
    let subinstallations = render_subinstallations(bp, &bindings)
        .with_context(|| format!("{}: rendering failed", source.origin))?;
    let mut state: BTreeMap<String, Value> = deploy.state.clone();
    state.extend(subinstallations.state.clone());

    let mut doc = Map::new();
    doc.insert(
        "deployItems".into(),
        serde_json::to_value(&deploy.deploy_items).context("serialising deploy items")?,
    );
    doc.insert(
        "subinstallations".into(),
        serde_json::to_value(&subinstallations.subinstallations)
            .context("serialising subinstallations")?,
    );
    if let Some(file) = &args.export_values {
        let given = read_value_file(file)?;
        let Value::Object(given) = given else {
            bail!(
                "{}: export values must be a map with deployitems, dataobjects and targets",
                file.display()
            );
        };
        let part = |k: &str| -> anyhow::Result<Option<Map<String, Value>>> {
            match given.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Object(m)) => Ok(Some(m.clone())),
                Some(_) => bail!("{}: {k} must be a map", file.display()),
            }
        };
        // The installation's own imports are published into its context too.
        let mut data_objects = Map::new();
        let mut targets = Map::new();
        for def in bp.all_imports() {
            if let Some(v) = bindings.imports.get(&def.name) {
                match def.import_type() {
                    Some(ImportType::Data) => {
                        data_objects.insert(def.name.clone(), v.clone());
                    }
                    Some(ImportType::Target) => {
                        targets.insert(def.name.clone(), v.clone());
                    }
                    _ => {}
                }
            }
        }
        data_objects.extend(part("dataobjects")?.unwrap_or_default());
        targets.extend(part("targets")?.unwrap_or_default());
        let export_bindings = ExportBindings {
            base: bindings.clone(),
            deploy_items: part("deployitems")?,
            data_objects,
            targets,
        };
        let exports = render_export_executions(bp, &export_bindings)
            .with_context(|| format!("{}: rendering failed", source.origin))?;
        for d in &exports.dropped {
            writeln!(
                warn,
                "warning: {}: export {d:?} is not defined by the blueprint (dropped)",
                source.origin
            )?;
        }
        state.extend(exports.state);
        doc.insert("exports".into(), Value::Object(exports.exports));
    }
    if !state.is_empty() {
        doc.insert("state".into(), Value::Object(state.into_iter().collect()));
    }
    write_document(out, &Value::Object(doc), args.output)
}

/// `render template --engine ... FILE --values FILE`.
pub fn run_template(
    args: &RenderTemplateArgs,
    out: &mut impl Write,
    warn: &mut impl Write,
) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let values = match &args.values {
        Some(f) => read_value_file(f)?,
        None => Value::Object(Map::new()),
    };
    let files_root = match &args.files {
        Some(d) => d.clone(),
        None => args
            .file
            .parent()
            .map(Path::to_path_buf)
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| PathBuf::from(".")),
    };
    let shown = args.file.display().to_string();
    match args.engine {
        RenderEngine::Gotemplate => {
            let funcs = landscaper_template_funcs(Components {
                cd: GoValue::from_json(values.get("cd").unwrap_or(&Value::Null)),
                list: GoValue::from_json(values.get("components").unwrap_or(&Value::Null)),
                ..Components::default()
            });
            let files = DirFiles::new(&files_root)?;
            let t = Template::parse(&shown, &text, &funcs).map_err(|e| anyhow::anyhow!("{e}"))?;
            let rendered = t
                .execute(
                    &shown,
                    &GoValue::from_json(&values),
                    &funcs,
                    &files,
                    &Limits::default(),
                )
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            if let Some(at) = rendered.find("<no value>") {
                let line = rendered[..at].matches('\n').count() + 1;
                writeln!(
                    warn,
                    "warning: {shown}: output line {line} contains \"<no value>\" (a missing value was printed); Landscaper rejects such deploy, export and subinstallation outputs"
                )?;
            }
            match args.output {
                None => out.write_all(rendered.as_bytes())?,
                Some(format) => {
                    let v = parse_yaml(&rendered)
                        .map_err(|e| anyhow::anyhow!("{shown}: output is not YAML: {e}"))?;
                    write_document(out, &v, format)?;
                }
            }
        }
        RenderEngine::Spiff => {
            let Value::Object(bindings) = values else {
                bail!("values must be a map (its top-level names are the spiff bindings)");
            };
            let fs = BlueprintFs::from_dir(&files_root).with_context(|| {
                format!(
                    "reading {} for spiff's read() (choose another folder with --files)",
                    files_root.display()
                )
            })?;
            let options = SpiffOptions {
                files: fs.to_map(),
                ..SpiffOptions::default()
            };
            let doc = spiff::evaluate_yaml(&text, &[], &bindings, &options)
                .map_err(|e| anyhow::anyhow!("{shown}: {e}"))?;
            match args.output {
                None | Some(RenderOutputFormat::Yaml) => {
                    out.write_all(spiff::to_yaml(&doc).as_bytes())?
                }
                Some(RenderOutputFormat::Json) => {
                    write_document(out, &doc, RenderOutputFormat::Json)?
                }
            }
        }
    }
    Ok(())
}

fn write_document(
    out: &mut impl Write,
    doc: &Value,
    format: RenderOutputFormat,
) -> anyhow::Result<()> {
    match format {
        RenderOutputFormat::Yaml => {
            let text =
                landscaper_templating::gotemplate::funcs::yaml::marshal(&GoValue::from_json(doc))
                    .map_err(|e| anyhow::anyhow!("cannot write YAML: {e}"))?;
            out.write_all(text.as_bytes())?;
        }
        RenderOutputFormat::Json => {
            serde_json::to_writer_pretty(&mut *out, &sorted(doc))?;
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}

/// Keys sorted at every level (independent of serde_json's map implementation).
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let b: BTreeMap<&String, Value> = m.iter().map(|(k, v)| (k, sorted(v))).collect();
            Value::Object(b.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// What `render` works on.
struct Source {
    /// `None`: the Installation's blueprint comes from its component version.
    blueprint: Option<Blueprint>,
    installation: Option<Installation>,
    /// Other objects of the Installation's file (DataObjects, Targets, ...).
    objects: MemoryObjects,
    /// The path for messages.
    origin: String,
}

fn load_source(path: &Path, pick: Option<&str>) -> anyhow::Result<Source> {
    let origin = path.display().to_string();
    if path.is_dir() {
        if let Some(name) = pick {
            bail!(
                "{origin} is a blueprint directory: --name {name} picks an Installation of a manifest file"
            );
        }
        let blueprint = Blueprint::from_dir(path).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
        return Ok(Source {
            blueprint: Some(blueprint),
            installation: None,
            objects: MemoryObjects::new(),
            origin,
        });
    }
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {origin}"))?;
    let parsed = parse_manifest(&origin, &bytes).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut installations = Vec::new();
    let mut objects = MemoryObjects::new();
    for o in parsed.objects {
        if o.key.kind == Kind::Installation {
            installations.push(o);
        } else {
            objects.insert(o.object)?;
        }
    }
    let names: Vec<&str> = installations.iter().map(|o| o.key.name.as_str()).collect();
    let index = pick_installation(&names, pick).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
    let o = installations.swap_remove(index);
    let inst: Installation = from_value(&o.object).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
    let name = &o.key.name;
    let by_component = inst
        .spec
        .component_descriptor
        .as_ref()
        .is_some_and(|c| c.reference.is_some());
    if by_component {
        return Ok(Source {
            blueprint: None,
            installation: Some(inst),
            objects,
            origin: format!("{origin} (Installation {name})"),
        });
    }
    let Some(tree) = inst
        .spec
        .blueprint
        .inline
        .as_ref()
        .and_then(|i| i.filesystem.as_ref())
    else {
        bail!(
            "{origin}: Installation {name}: spec.blueprint.ref needs spec.componentDescriptor.ref (or use spec.blueprint.inline.filesystem)"
        );
    };
    let blueprint = Blueprint::from_yamlfs(tree).map_err(|e| {
        anyhow::anyhow!("{origin}: Installation {name}: spec.blueprint.inline.filesystem: {e}")
    })?;
    Ok(Source {
        blueprint: Some(blueprint),
        installation: Some(inst),
        objects,
        origin: format!("{origin} (Installation {name})"),
    })
}

/// Which of a file's Installations (by name, in file order) `render` works on: the one named
/// `pick`, else the only one.
pub fn pick_installation(names: &[&str], pick: Option<&str>) -> Result<usize, String> {
    let listed = names.join(", ");
    match (pick, names.len()) {
        (Some(name), _) => names.iter().position(|n| *n == name).ok_or_else(|| {
            if names.is_empty() {
                format!("no Installation {name:?} in this file (it has none)")
            } else {
                format!("no Installation {name:?} in this file (it has: {listed})")
            }
        }),
        (None, 1) => Ok(0),
        (None, 0) => Err(
            "no Installation in this file (give a blueprint directory or an Installation manifest)"
                .into(),
        ),
        (None, n) => Err(format!(
            "{n} Installations in this file ({listed}); choose one with --name NAME"
        )),
    }
}

/// The blueprint and component versions of an Installation with `spec.componentDescriptor.ref`,
/// resolved as the daemon does: the archives of `--archives` (default: the `--imports-from`
/// folder) first, then the repository context; `--offline`: cache and archives only.
fn resolve_component_blueprint(
    runtime: &tokio::runtime::Runtime,
    args: &RenderArgs,
    inst: &Installation,
    objects: &MemoryObjects,
) -> anyhow::Result<(Blueprint, Option<crate::components::InstallationComponents>)> {
    let folder = args
        .archives
        .clone()
        .or_else(|| args.imports_from.clone().filter(|p| p.is_dir()));
    let data_dir = args
        .data
        .clone()
        .unwrap_or_else(|| PathBuf::from(crate::config::DEFAULT_DATA_DIR));
    let root = folder.clone().unwrap_or_else(|| PathBuf::from("."));
    let (components, resolver) = crate::components::build(
        crate::components::open_cache(&data_dir),
        &root,
        args.offline,
    );
    if let Some(folder) = &folder {
        let walk = scan::walk(folder)
            .with_context(|| format!("reading the archives folder {}", folder.display()))?;
        components.set_archives(walk.archives);
    }
    let _guard = runtime.enter();
    runtime
        .block_on(dataflow::resolve_blueprint(
            objects,
            inst,
            folder.as_deref(),
            Some(&resolver),
        ))
        .map_err(|e| anyhow::anyhow!("{}", e.error().message))
}

/// DataObjects, Targets, ConfigMaps, Secrets and Contexts (repository contexts) of a manifest
/// file or folder.
fn read_objects(path: &Path) -> anyhow::Result<Vec<Value>> {
    let mut files = Vec::new();
    if path.is_dir() {
        let walk = scan::walk(path).with_context(|| format!("cannot read {}", path.display()))?;
        for f in walk.files {
            if !f.skipped {
                files.push((f.abs.clone(), path.join(&f.rel).display().to_string()));
            }
        }
    } else {
        files.push((path.to_path_buf(), path.display().to_string()));
    }
    let mut out = Vec::new();
    for (abs, shown) in files {
        let name = abs.file_name().map(|n| n.to_string_lossy().to_string());
        if path.is_dir() && !name.as_deref().is_some_and(is_manifest_name) {
            continue;
        }
        let bytes = std::fs::read(&abs).with_context(|| format!("cannot read {shown}"))?;
        let parsed = parse_manifest(&shown, &bytes).map_err(|e| anyhow::anyhow!("{e}"))?;
        for o in parsed.objects {
            if matches!(
                o.key.kind,
                Kind::DataObject | Kind::Target | Kind::ConfigMap | Kind::Secret | Kind::Context
            ) {
                out.push(o.object);
            }
        }
    }
    Ok(out)
}

/// Values of an installation's imports, by installation import name, resolved from `objects`
/// exactly as the installation controller resolves them from the store
/// ([`dataflow::read_import_values`]): an import whose object is missing fails. Imports named
/// in `given` (the `--imports` file) are not resolved: their values replace them.
fn resolve_installation_imports(
    inst: &Installation,
    objects: &MemoryObjects,
    given: &Map<String, Value>,
) -> anyhow::Result<Map<String, Value>> {
    let mut inst = inst.clone();
    if let Some(imports) = inst.spec.imports.as_mut() {
        if let Some(data) = imports.data.as_mut() {
            data.retain(|i| !given.contains_key(&i.name));
        }
        if let Some(targets) = imports.targets.as_mut() {
            targets.retain(|i| !given.contains_key(&i.name));
        }
    }
    dataflow::read_import_values(objects, &inst).map_err(|e| anyhow::anyhow!("{}", e.error()))
}

/// A target import given as a Target's `spec` (or a list/map of them) becomes a Target object
/// named after the import.
fn normalize_target_value(t: ImportType, import: &str, v: &mut Value, namespace: &str) {
    let wrap = |v: &mut Value, name: String| {
        if v.get("spec").is_none() && v.get("type").is_some() {
            let spec = v.take();
            *v = json!({
                "apiVersion": "landscaper.gardener.cloud/v1alpha1",
                "kind": "Target",
                "metadata": {"name": name, "namespace": namespace},
                "spec": spec,
            });
        }
    };
    match (t, v) {
        (ImportType::Target, v) => wrap(v, import.to_string()),
        (ImportType::TargetList, Value::Array(items)) => {
            for (i, item) in items.iter_mut().enumerate() {
                wrap(item, format!("{import}-{i}"));
            }
        }
        (ImportType::TargetMap, Value::Object(items)) => {
            for (k, item) in items.iter_mut() {
                wrap(item, format!("{import}-{k}"));
            }
        }
        _ => {}
    }
}

/// A YAML or JSON file with one document.
fn read_value_file(path: &Path) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse_yaml(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// Files of a folder for a single template's `include`/`readFile`/`readDir`, never outside it.
struct DirFiles {
    root: PathBuf,
}

impl DirFiles {
    fn new(root: &Path) -> anyhow::Result<DirFiles> {
        Ok(DirFiles {
            root: root
                .canonicalize()
                .with_context(|| format!("cannot read {}", root.display()))?,
        })
    }

    fn resolve(&self, path: &str) -> Result<PathBuf, FuncError> {
        let rel = normalize_path(path).map_err(|e| FuncError::new(format!("open {path}: {e}")))?;
        let full = self.root.join(rel);
        let real = full
            .canonicalize()
            .map_err(|_| FuncError::new(format!("open {path}: file does not exist")))?;
        if !real.starts_with(&self.root) {
            return Err(FuncError::new(format!(
                "open {path}: path leaves the template folder"
            )));
        }
        Ok(real)
    }
}

impl FileHost for DirFiles {
    fn read_file(&self, path: &str) -> Result<Vec<u8>, FuncError> {
        let p = self.resolve(path)?;
        std::fs::read(&p).map_err(|e| FuncError::new(format!("read {path}: {e}")))
    }

    fn read_dir(&self, path: &str) -> Result<Vec<(String, bool)>, FuncError> {
        let p = self.resolve(path)?;
        let mut out: Vec<(String, bool)> = std::fs::read_dir(&p)
            .map_err(|e| FuncError::new(format!("open {path}: {e}")))?
            .filter_map(Result::ok)
            .map(|e| {
                let is_dir = e.path().is_dir();
                (e.file_name().to_string_lossy().into_owned(), is_dir)
            })
            .collect();
        out.sort();
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_installation_to_render() {
        assert_eq!(pick_installation(&["a"], None), Ok(0));
        assert_eq!(pick_installation(&["a", "b"], Some("b")), Ok(1));
        assert_eq!(
            pick_installation(&["a", "b"], None),
            Err("2 Installations in this file (a, b); choose one with --name NAME".into())
        );
        assert_eq!(
            pick_installation(&["a", "b"], Some("c")),
            Err("no Installation \"c\" in this file (it has: a, b)".into())
        );
        assert!(pick_installation(&[], None).is_err());
        assert!(pick_installation(&[], Some("a")).is_err());
    }
}
