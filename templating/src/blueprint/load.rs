//! Loading a blueprint: reading `blueprint.yaml`, Landscaper's defaulting and validation
//! (`apis/core/v1alpha1/defaults.go`, `apis/core/validation/blueprint.go`), compiling the
//! import and export schemas, and reading the executions' templates once.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use landscaper_model::names::is_dns1123_label;
use serde_json::Value;

use super::fs::{BLUEPRINT_FILE_NAME, BlueprintFs, FsError};
use super::model::{
    BLUEPRINT_KIND, BlueprintDocument, DEFAULT_JSON_SCHEMA_VERSION, ExportDefinition,
    INSTALLATION_TEMPLATE_KIND, ImportDefinition, ImportType, InstallationTemplate,
    LANDSCAPER_API_VERSION, LANDSCAPER_DOMAIN, TemplateExecutor, TemplateType,
};
use super::yaml::{Locator, PathSegment, display_path, parse_yaml};
use crate::gotemplate::Template;
use crate::schema::{CompiledSchema, ReferenceContext};

/// One problem of a blueprint, located by file, field path and (when known) line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlueprintIssue {
    /// File in the blueprint filesystem (`blueprint.yaml`, a subinstallation file, ...).
    pub file: String,
    /// Field path in that file, e.g. `imports[0].schema`; empty for the file as a whole.
    pub field: String,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

impl fmt::Display for BlueprintIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
            if let Some(c) = self.column {
                write!(f, ":{c}")?;
            }
        }
        f.write_str(": ")?;
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        f.write_str(&self.message)
    }
}

/// A blueprint that cannot be used: every problem found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlueprintError {
    pub issues: Vec<BlueprintIssue>,
}

impl BlueprintError {
    pub(crate) fn single(file: &str, field: &str, message: impl Into<String>) -> BlueprintError {
        BlueprintError {
            issues: vec![BlueprintIssue {
                file: file.to_string(),
                field: field.to_string(),
                line: None,
                column: None,
                message: message.into(),
            }],
        }
    }
}

impl fmt::Display for BlueprintError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.issues.as_slice() {
            [] => f.write_str("invalid blueprint"),
            [one] => write!(f, "invalid blueprint: {one}"),
            many => {
                write!(f, "invalid blueprint ({} problems):", many.len())?;
                for i in many {
                    write!(f, "\n  {i}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for BlueprintError {}

impl From<FsError> for BlueprintError {
    fn from(e: FsError) -> Self {
        let path = match &e {
            FsError::Escapes { path }
            | FsError::NotFound { path }
            | FsError::IsDirectory { path }
            | FsError::Invalid { path, .. }
            | FsError::Io { path, .. } => path.clone(),
        };
        let message = e.to_string();
        let message = message
            .strip_prefix(&format!("{path}: "))
            .unwrap_or(&message)
            .to_string();
        BlueprintError::single(
            if path.is_empty() {
                "<filesystem>"
            } else {
                &path
            },
            "",
            message,
        )
    }
}

/// The kind of an execution list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExecutionKind {
    Import,
    Deploy,
    Export,
    Subinstallation,
}

impl ExecutionKind {
    /// The blueprint field holding the list.
    pub fn field(self) -> &'static str {
        match self {
            ExecutionKind::Import => "importExecutions",
            ExecutionKind::Deploy => "deployExecutions",
            ExecutionKind::Export => "exportExecutions",
            ExecutionKind::Subinstallation => "subinstallationExecutions",
        }
    }

    /// As Landscaper names it in messages (`deploy execution`).
    pub fn label(self) -> &'static str {
        match self {
            ExecutionKind::Import => "import execution",
            ExecutionKind::Deploy => "deploy execution",
            ExecutionKind::Export => "export execution",
            ExecutionKind::Subinstallation => "subinstallation execution",
        }
    }

    /// Prefix of the state key (`deploy<name>`, `export<name>`); import executions keep no state.
    pub fn state_prefix(self) -> Option<&'static str> {
        match self {
            ExecutionKind::Import => None,
            ExecutionKind::Deploy | ExecutionKind::Subinstallation => Some("deploy"),
            ExecutionKind::Export => Some("export"),
        }
    }
}

/// An execution ready to run: its engine and template source, read once at load.
#[derive(Debug, Clone)]
pub struct PreparedExecution {
    pub name: String,
    pub engine: TemplateType,
    /// The `file` the template came from (normalised), or `None` for an inline template.
    pub file: Option<String>,
    pub source: ExecutionSource,
}

/// The template of an execution.
#[derive(Debug, Clone)]
pub enum ExecutionSource {
    /// Template text (GoTemplate; Spiff from a file or a string).
    Text(Arc<str>),
    /// A Spiff template given inline as YAML.
    Document(Arc<Value>),
}

impl PreparedExecution {
    /// Where the template lives, for messages: `file deploy.yaml` or `inline template`.
    pub fn location(&self) -> String {
        match &self.file {
            Some(f) => format!("file {f}"),
            None => "inline template".to_string(),
        }
    }
}

/// A loaded and defaulted blueprint with its filesystem. `Send + Sync` and cheap to share
/// (wrap it in an `Arc`); rendering never re-reads `blueprint.yaml` or the templates.
///
/// Loading fails only where Landscaper's decoder fails (YAML, field types, `apiVersion`/`kind`).
/// Everything else is checked as early as possible but reported where Landscaper reports it:
/// a broken schema when that import or export is validated, a broken execution when its list is
/// rendered, a broken static subinstallation when the subinstallations are rendered. The rules
/// of Landscaper's `ValidateBlueprint` (names, duplicates, schema xor targetType, ...), which
/// its controllers never enforce, are [`Blueprint::warnings`]; [`Blueprint::problems`] lists
/// everything for a strict check.
#[derive(Debug, Clone)]
pub struct Blueprint {
    document: BlueprintDocument,
    fs: BlueprintFs,
    import_schemas: BTreeMap<String, Result<CompiledSchema, BlueprintIssue>>,
    export_schemas: BTreeMap<String, Result<CompiledSchema, BlueprintIssue>>,
    executions: BTreeMap<&'static str, Vec<Result<PreparedExecution, ExecutionProblem>>>,
    static_subinstallations: Result<Vec<InstallationTemplate>, BlueprintError>,
    /// Go template syntax errors (also reported, with the template's line, at render time).
    template_issues: Vec<BlueprintIssue>,
    warnings: Vec<BlueprintIssue>,
}

/// An execution that cannot run (unknown type, no template, missing file, syntax error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutionProblem {
    pub name: String,
    pub engine: Option<TemplateType>,
    pub file: Option<String>,
    pub issue: BlueprintIssue,
}

impl Blueprint {
    /// Loads the blueprint at the root of `fs`.
    pub fn from_fs(fs: BlueprintFs) -> Result<Blueprint, BlueprintError> {
        Loader::new(fs).load()
    }

    /// Loads the blueprint at the root of `fs`, resolving `cd://` references of its import
    /// and export schemas with `cd` (a blueprint from a component version).
    pub fn from_fs_with_components(
        fs: BlueprintFs,
        cd: std::sync::Arc<dyn crate::schema::CdSchemas>,
    ) -> Result<Blueprint, BlueprintError> {
        let mut loader = Loader::new(fs);
        loader.cd = Some(cd);
        loader.load()
    }

    /// Loads a blueprint directory from disk.
    pub fn from_dir(dir: &Path) -> Result<Blueprint, BlueprintError> {
        Blueprint::from_fs(BlueprintFs::from_dir(dir)?)
    }

    /// Loads an inline blueprint (a `yamlfs` tree, `spec.blueprint.inline.filesystem`).
    pub fn from_yamlfs(tree: &Value) -> Result<Blueprint, BlueprintError> {
        Blueprint::from_fs(BlueprintFs::from_yamlfs(tree)?)
    }

    /// The document after defaulting (import types inferred, target types prefixed).
    pub fn document(&self) -> &BlueprintDocument {
        &self.document
    }

    pub fn fs(&self) -> &BlueprintFs {
        &self.fs
    }

    /// Unknown fields (dropped, as Landscaper's decoder drops them) and findings of Landscaper's
    /// `ValidateBlueprint` rules, which Landscaper itself does not enforce when it runs a
    /// blueprint.
    pub fn warnings(&self) -> &[BlueprintIssue] {
        &self.warnings
    }

    /// Every problem of the blueprint: the warnings, then what would fail when it is used
    /// (schemas, executions, static subinstallations). Empty for a clean blueprint.
    pub fn problems(&self) -> Vec<BlueprintIssue> {
        let mut out = self.warnings.clone();
        for r in self
            .import_schemas
            .values()
            .chain(self.export_schemas.values())
        {
            if let Err(i) = r {
                out.push(i.clone());
            }
        }
        for list in self.executions.values() {
            for r in list {
                if let Err(p) = r {
                    out.push(p.issue.clone());
                }
            }
        }
        out.extend(self.template_issues.iter().cloned());
        if let Err(e) = &self.static_subinstallations {
            out.extend(e.issues.iter().cloned());
        }
        out
    }

    /// Every import definition, conditional ones included, depth first.
    pub fn all_imports(&self) -> Vec<&ImportDefinition> {
        fn walk<'a>(defs: &'a [ImportDefinition], out: &mut Vec<&'a ImportDefinition>) {
            for d in defs {
                out.push(d);
                walk(&d.conditional_imports, out);
            }
        }
        let mut out = Vec::new();
        walk(&self.document.imports, &mut out);
        out
    }

    /// The import definition of that name (conditional imports included).
    pub fn import(&self, name: &str) -> Option<&ImportDefinition> {
        self.all_imports().into_iter().find(|d| d.name == name)
    }

    pub fn export(&self, name: &str) -> Option<&ExportDefinition> {
        self.document.exports.iter().find(|d| d.name == name)
    }

    /// The compiled schema of a data import (`None`: the import has no schema).
    pub fn import_schema(&self, name: &str) -> Option<Result<&CompiledSchema, &BlueprintIssue>> {
        self.import_schemas.get(name).map(Result::as_ref)
    }

    /// The compiled schema of a data export (`None`: the export has no schema).
    pub fn export_schema(&self, name: &str) -> Option<Result<&CompiledSchema, &BlueprintIssue>> {
        self.export_schemas.get(name).map(Result::as_ref)
    }

    /// The executions of one list, in order; an execution that cannot run is an `Err`.
    pub fn executions(
        &self,
        kind: ExecutionKind,
    ) -> &[Result<PreparedExecution, ExecutionProblem>] {
        self.executions
            .get(kind.field())
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// The static `subinstallations` (inline ones and `file:` ones, read and validated), or why
    /// they cannot be used.
    pub fn static_subinstallations(&self) -> Result<&[InstallationTemplate], &BlueprintError> {
        self.static_subinstallations.as_deref()
    }
}

struct Loader {
    fs: BlueprintFs,
    /// Resolves `cd://` schema references (blueprints from component versions).
    cd: Option<std::sync::Arc<dyn crate::schema::CdSchemas>>,
    text: String,
    locator: Option<Locator>,
    /// Problems that make the blueprint unusable (decoding).
    issues: Vec<BlueprintIssue>,
    /// Findings of `ValidateBlueprint` and unknown fields.
    warnings: Vec<BlueprintIssue>,
    template_issues: Vec<BlueprintIssue>,
}

type Path_ = Vec<PathSegment>;

fn key(k: &str) -> PathSegment {
    PathSegment::Key(k.to_string())
}

fn idx(i: usize) -> PathSegment {
    PathSegment::Index(i)
}

fn child(p: &[PathSegment], seg: PathSegment) -> Path_ {
    let mut v = p.to_vec();
    v.push(seg);
    v
}

impl Loader {
    fn new(fs: BlueprintFs) -> Loader {
        Loader {
            fs,
            cd: None,
            text: String::new(),
            locator: None,
            issues: Vec::new(),
            warnings: Vec::new(),
            template_issues: Vec::new(),
        }
    }

    fn located(&self, path: &[PathSegment], message: impl Into<String>) -> BlueprintIssue {
        let pos = self.locator.as_ref().and_then(|l| l.locate(path));
        BlueprintIssue {
            file: BLUEPRINT_FILE_NAME.to_string(),
            field: display_path(path),
            line: pos.map(|p| p.0),
            column: pos.map(|p| p.1),
            message: message.into(),
        }
    }

    fn issue(&mut self, path: &[PathSegment], message: impl Into<String>) {
        let i = self.located(path, message);
        self.issues.push(i);
    }

    fn lint(&mut self, path: &[PathSegment], message: impl Into<String>) {
        let i = self.located(path, message);
        self.warnings.push(i);
    }

    /// The appliance's workflow block of the subinstallation template at `path` (issue 19):
    /// its conditions must compile and its fields fit a subinstallation; the issue names the
    /// subinstallation and the condition's field.
    fn workflow_issue(
        &self,
        path: &[PathSegment],
        name: &str,
        ext: Option<&landscaper_model::WorkflowExtension>,
    ) -> Option<BlueprintIssue> {
        let (field, message) = landscaper_workflow::conditions::check_block(
            landscaper_model::ExtensionPlace::InstallationTemplate,
            ext,
        )
        .err()?;
        let mut at = child(path, key(landscaper_model::workflow::APPLIANCE_FIELD));
        at.extend(field.split('.').filter(|f| !f.is_empty()).map(key));
        Some(self.located(
            &at,
            format!("invalid workflow condition of subinstallation {name:?}: {message}"),
        ))
    }

    fn fail(self) -> BlueprintError {
        BlueprintError {
            issues: self.issues,
        }
    }

    fn load(mut self) -> Result<Blueprint, BlueprintError> {
        let bytes = match self.fs.read(BLUEPRINT_FILE_NAME) {
            Ok(b) => b.to_vec(),
            Err(_) => {
                return Err(BlueprintError::single(
                    BLUEPRINT_FILE_NAME,
                    "",
                    "the blueprint filesystem has no blueprint.yaml at its root",
                ));
            }
        };
        self.text = String::from_utf8_lossy(&bytes).into_owned();
        let value = match parse_yaml(&self.text) {
            Ok(v) => v,
            Err(e) => {
                return Err(BlueprintError {
                    issues: vec![BlueprintIssue {
                        file: BLUEPRINT_FILE_NAME.to_string(),
                        field: String::new(),
                        line: e.line,
                        column: None,
                        message: format!("unable to decode blueprint: {}", e.message),
                    }],
                });
            }
        };
        self.locator = Some(Locator::new(&self.text));
        if !value.is_object() {
            self.issue(
                &[],
                format!(
                    "unable to decode blueprint: expected a map, found {}",
                    super::fs::json_kind(&value)
                ),
            );
            return Err(self.fail());
        }
        let mut unknown = Vec::new();
        let mut document: BlueprintDocument = {
            let mut ignored = |p: serde_ignored::Path<'_>| unknown.push(ignored_segments(&p));
            let de = serde_ignored::Deserializer::new(value, &mut ignored);
            match serde_path_to_error::deserialize(de) {
                Ok(d) => d,
                Err(e) => {
                    let path = path_of(e.path());
                    let msg = e.inner().to_string();
                    self.issue(&path, format!("unable to decode blueprint: {msg}"));
                    return Err(self.fail());
                }
            }
        };
        if document.api_version != LANDSCAPER_API_VERSION {
            self.issue(
                &[key("apiVersion")],
                format!(
                    "must be {LANDSCAPER_API_VERSION:?}, found {:?}",
                    document.api_version
                ),
            );
        }
        if document.kind != BLUEPRINT_KIND {
            self.issue(
                &[key("kind")],
                format!("must be {BLUEPRINT_KIND:?}, found {:?}", document.kind),
            );
        }
        for path in unknown {
            self.lint(&path, "unknown field (ignored)");
        }
        default_blueprint(&mut document);

        let mut names = BTreeSet::new();
        self.validate_imports(&[key("imports")], &document.imports, &mut names);
        self.validate_exports(&document.exports);
        let import_schemas = self.compile_import_schemas(&document);
        let export_schemas = self.compile_export_schemas(&document);
        let mut executions = BTreeMap::new();
        for (kind, list) in [
            (ExecutionKind::Import, &document.import_executions),
            (ExecutionKind::Deploy, &document.deploy_executions),
            (ExecutionKind::Export, &document.export_executions),
            (
                ExecutionKind::Subinstallation,
                &document.subinstallation_executions,
            ),
        ] {
            let prepared = self.prepare_executions(kind, list);
            executions.insert(kind.field(), prepared);
        }
        let static_subinstallations = self.load_subinstallations(&document);
        if !self.issues.is_empty() {
            return Err(self.fail());
        }
        Ok(Blueprint {
            document,
            fs: self.fs,
            import_schemas,
            export_schemas,
            executions,
            static_subinstallations,
            template_issues: self.template_issues,
            warnings: self.warnings,
        })
    }

    fn validate_imports(
        &mut self,
        path: &[PathSegment],
        defs: &[ImportDefinition],
        names: &mut BTreeSet<String>,
    ) {
        for (i, def) in defs.iter().enumerate() {
            let p = child(path, idx(i));
            if def.name.is_empty() {
                self.lint(&child(&p, key("name")), "name must not be empty");
            } else if !names.insert(def.name.clone()) {
                self.lint(&p, format!("duplicate import name {:?}", def.name));
            }
            let label = import_label(def);
            if def.r#type.is_empty() {
                match (def.schema.is_some(), def.target_type.is_empty()) {
                    (false, true) => {
                        self.lint(
                            &p,
                            format!("{label}: either schema or targetType must not be empty"),
                        );
                    }
                    (true, false) => self.lint(
                        &p,
                        format!("{label}: either schema or targetType must be specified, not both"),
                    ),
                    _ => {}
                }
            } else {
                match def.import_type() {
                    Some(t) => self.check_type_config(
                        &p,
                        &label,
                        t,
                        def.schema.is_some(),
                        !def.target_type.is_empty(),
                    ),
                    None => self.lint(
                        &child(&p, key("type")),
                        format!(
                            "{label}: unsupported value {:?}: supported values: \"data\", \"target\", \"targetList\", \"targetMap\"",
                            def.r#type
                        ),
                    ),
                }
            }
            if !def.conditional_imports.is_empty() && def.is_required() {
                self.lint(
                    &p,
                    format!("{label}: conditional imports on required import"),
                );
            }
            if def.default_value().is_some() && def.import_type() != Some(ImportType::Data) {
                // Landscaper ignores it; say so.
                self.lint(
                    &child(&p, key("default")),
                    format!("{label}: only data imports can have a default value"),
                );
            }
            self.validate_imports(&child(&p, key("imports")), &def.conditional_imports, names);
        }
    }

    fn check_type_config(
        &mut self,
        p: &[PathSegment],
        label: &str,
        t: ImportType,
        has_schema: bool,
        has_target_type: bool,
    ) {
        let (want_schema, expected) = match t {
            ImportType::Data => (true, "Schema"),
            _ => (false, "TargetType"),
        };
        if want_schema {
            if !has_schema {
                self.lint(p, format!("{label}: Schema must not be empty for type {t}"));
            }
            if has_target_type {
                self.lint(
                    p,
                    format!(
                        "{label}: unexpected config 'TargetType', only [{expected}] should be set"
                    ),
                );
            }
        } else {
            if !has_target_type {
                self.lint(
                    p,
                    format!("{label}: TargetType must not be empty for type {t}"),
                );
            }
            if has_schema {
                self.lint(
                    p,
                    format!("{label}: unexpected config 'Schema', only [{expected}] should be set"),
                );
            }
        }
    }

    fn validate_exports(&mut self, defs: &[ExportDefinition]) {
        let mut names = BTreeSet::new();
        for (i, def) in defs.iter().enumerate() {
            let p = vec![key("exports"), idx(i)];
            let label = format!("export {:?}", def.name);
            if def.name.is_empty() {
                self.lint(&child(&p, key("name")), "name must not be empty");
            } else if !names.insert(def.name.clone()) {
                self.lint(&p, format!("duplicated export name {:?}", def.name));
            }
            if def.r#type.is_empty() {
                match (def.schema.is_some(), def.target_type.is_empty()) {
                    (false, true) => self.lint(
                        &p,
                        format!("{label}: exactly one of [Schema, TargetType] must be set (currently set: none)"),
                    ),
                    (true, false) => self.lint(
                        &p,
                        format!("{label}: exactly one of [Schema, TargetType] must be set (currently set: [Schema, TargetType])"),
                    ),
                    _ => {}
                }
            } else {
                match def.export_type() {
                    Some(t) => self.check_type_config(
                        &p,
                        &label,
                        t,
                        def.schema.is_some(),
                        !def.target_type.is_empty(),
                    ),
                    None => self.lint(
                        &child(&p, key("type")),
                        format!(
                            "{label}: unsupported value {:?}: supported values: \"data\", \"target\"",
                            def.r#type
                        ),
                    ),
                }
            }
        }
    }

    fn compile_import_schemas(
        &mut self,
        document: &BlueprintDocument,
    ) -> BTreeMap<String, Result<CompiledSchema, BlueprintIssue>> {
        let mut out = BTreeMap::new();
        // Depth first, in document order, so that problems are reported top to bottom.
        fn collect<'d>(
            defs: &'d [ImportDefinition],
            path: &[PathSegment],
            out: &mut Vec<(Path_, &'d ImportDefinition)>,
        ) {
            for (i, d) in defs.iter().enumerate() {
                let p = child(path, idx(i));
                out.push((p.clone(), d));
                collect(&d.conditional_imports, &child(&p, key("imports")), out);
            }
        }
        let mut all = Vec::new();
        collect(&document.imports, &[key("imports")], &mut all);
        for (p, def) in all {
            let Some(schema) = &def.schema else { continue };
            let ctx = ReferenceContext::new(&document.local_types, Some(&self.fs))
                .with_cd(self.cd.as_deref());
            let compiled = CompiledSchema::compile(schema, &ctx).map_err(|e| {
                self.located(
                    &child(&p, key("schema")),
                    format!("{}: {e}", import_label(def)),
                )
            });
            out.insert(def.name.clone(), compiled);
        }
        out
    }

    fn compile_export_schemas(
        &mut self,
        document: &BlueprintDocument,
    ) -> BTreeMap<String, Result<CompiledSchema, BlueprintIssue>> {
        let mut out = BTreeMap::new();
        for (i, def) in document.exports.iter().enumerate() {
            let Some(schema) = &def.schema else { continue };
            let ctx = ReferenceContext::new(&document.local_types, Some(&self.fs))
                .with_cd(self.cd.as_deref());
            let compiled = CompiledSchema::compile(schema, &ctx).map_err(|e| {
                self.located(
                    &[key("exports"), idx(i), key("schema")],
                    format!("export {:?}: {e}", def.name),
                )
            });
            out.insert(def.name.clone(), compiled);
        }
        out
    }

    fn prepare_executions(
        &mut self,
        kind: ExecutionKind,
        list: &[TemplateExecutor],
    ) -> Vec<Result<PreparedExecution, ExecutionProblem>> {
        let mut names = BTreeSet::new();
        let mut out = Vec::new();
        for (i, exec) in list.iter().enumerate() {
            let p = vec![key(kind.field()), idx(i)];
            if exec.name.is_empty() {
                self.lint(&child(&p, key("name")), "name must be defined");
            } else if !names.insert(exec.name.clone()) {
                self.lint(&p, format!("duplicated executor name {:?}", exec.name));
            }
            let prepared = self.prepare_execution(&p, exec).map_err(|b| *b);
            if let Ok(e) = &prepared
                && e.engine == TemplateType::GoTemplate
                && let ExecutionSource::Text(text) = &e.source
                && let Err(err) = super::render::with_parse_funcs(|funcs| {
                    Template::parse(super::render::TEMPLATE_NAME, text, funcs)
                })
            {
                let field = if e.file.is_some() { "file" } else { "template" };
                let issue = self.located(
                    &child(&p, key(field)),
                    format!("{} {:?} ({}): {err}", kind.label(), e.name, e.location()),
                );
                self.template_issues.push(issue);
            }
            out.push(prepared);
        }
        out
    }

    fn prepare_execution(
        &self,
        p: &[PathSegment],
        exec: &TemplateExecutor,
    ) -> Result<PreparedExecution, Box<ExecutionProblem>> {
        let engine = exec.template_type();
        let problem = |field: &str, file: Option<String>, message: String| {
            Box::new(ExecutionProblem {
                name: exec.name.clone(),
                engine,
                file,
                issue: self.located(&child(p, key(field)), message),
            })
        };
        let Some(engine) = engine else {
            return Err(problem(
                "type",
                None,
                format!(
                    "unknown template type {:?} (supported: GoTemplate, Spiff)",
                    exec.r#type
                ),
            ));
        };
        let template = exec.template.as_ref().filter(|t| !t.is_null());
        let (file, source) = match (template, exec.file.is_empty()) {
            (Some(t), _) => {
                let src = match (engine, t) {
                    (_, Value::String(s)) => ExecutionSource::Text(Arc::from(s.as_str())),
                    (TemplateType::Spiff, other) => {
                        ExecutionSource::Document(Arc::new(other.clone()))
                    }
                    (TemplateType::GoTemplate, other) => {
                        return Err(problem(
                            "template",
                            None,
                            format!(
                                "a GoTemplate template must be a string, found {}",
                                super::fs::json_kind(other)
                            ),
                        ));
                    }
                };
                (None, src)
            }
            (None, false) => {
                let file = super::fs::normalize_path(&exec.file).ok();
                match self.fs.read_string(&exec.file) {
                    Ok(text) => (file, ExecutionSource::Text(Arc::from(text))),
                    Err(e) => return Err(problem("file", file, e.to_string())),
                }
            }
            (None, true) => {
                return Err(problem(
                    "template",
                    None,
                    "no template found (set template or file)".to_string(),
                ));
            }
        };
        Ok(PreparedExecution {
            name: exec.name.clone(),
            engine,
            file,
            source,
        })
    }

    fn load_subinstallations(
        &mut self,
        document: &BlueprintDocument,
    ) -> Result<Vec<InstallationTemplate>, BlueprintError> {
        let mut out = Vec::new();
        let mut issues = Vec::new();
        for (i, sub) in document.subinstallations.iter().enumerate() {
            let p = vec![key("subinstallations"), idx(i)];
            match (&sub.template, sub.file.is_empty()) {
                (Some(t), _) => {
                    if !sub.file.is_empty() {
                        self.lint(
                            &p,
                            "exactly one of [File, InstallationTemplate] must be set (currently set: [File, InstallationTemplate])",
                        );
                    }
                    for (field, msg) in validate_installation_template(t) {
                        let mut fp = p.clone();
                        fp.extend(field);
                        issues.push(self.located(&fp, msg));
                    }
                    if let Some(issue) = self.workflow_issue(&p, &t.name, t.appliance.as_ref()) {
                        issues.push(issue);
                    }
                    out.push(t.clone());
                }
                (None, true) => issues.push(self.located(
                    &p,
                    format!(
                        "neither a inline installation template nor a file is defined in index {i}"
                    ),
                )),
                (None, false) => match load_installation_template_file(&self.fs, &sub.file) {
                    Ok(mut t) => {
                        if t.appliance.is_none() {
                            t.appliance = sub.appliance.clone();
                        }
                        if let Some(mut issue) =
                            self.workflow_issue(&p, &t.name, t.appliance.as_ref())
                        {
                            if sub.appliance.is_none() {
                                // The block is the file's own.
                                issue.file = sub.file.clone();
                                issue.field = issue
                                    .field
                                    .split_once(".appliance")
                                    .map(|(_, f)| format!("appliance{f}"))
                                    .unwrap_or(issue.field);
                                issue.line = None;
                                issue.column = None;
                            }
                            issues.push(issue);
                        }
                        out.push(t)
                    }
                    Err(e) => {
                        for mut issue in e.issues {
                            issue.message = format!(
                                "{}: {}",
                                display_path(&child(&p, key("file"))),
                                issue.message
                            );
                            issues.push(issue);
                        }
                    }
                },
            }
        }
        if issues.is_empty() {
            Ok(out)
        } else {
            Err(BlueprintError { issues })
        }
    }
}

fn import_label(def: &ImportDefinition) -> String {
    format!("import {:?}", def.name)
}

fn ignored_segments(p: &serde_ignored::Path<'_>) -> Path_ {
    use serde_ignored::Path as P;
    match p {
        P::Root => Vec::new(),
        P::Seq { parent, index } => child(&ignored_segments(parent), idx(*index)),
        P::Map { parent, key: k } => child(&ignored_segments(parent), key(k)),
        P::Some { parent } | P::NewtypeStruct { parent } | P::NewtypeVariant { parent } => {
            ignored_segments(parent)
        }
    }
}

pub(crate) fn path_of(p: &serde_path_to_error::Path) -> Path_ {
    use serde_path_to_error::Segment;
    p.iter()
        .filter_map(|s| match s {
            Segment::Seq { index } => Some(idx(*index)),
            Segment::Map { key: k } => Some(key(k)),
            Segment::Enum { variant } => Some(key(variant)),
            Segment::Unknown => None,
        })
        .collect()
}

/// Landscaper's `SetDefaults_Blueprint`.
pub fn default_blueprint(doc: &mut BlueprintDocument) {
    if doc.json_schema_version.is_empty() {
        doc.json_schema_version = DEFAULT_JSON_SCHEMA_VERSION.to_string();
    }
    fn imports(defs: &mut [ImportDefinition]) {
        for d in defs {
            if d.required.is_none() {
                d.required = Some(true);
            }
            imports(&mut d.conditional_imports);
            if d.schema.is_some() && !d.target_type.is_empty() {
                continue;
            }
            if d.r#type.is_empty() {
                if d.schema.is_some() {
                    d.r#type = "data".to_string();
                } else if !d.target_type.is_empty() {
                    d.r#type = "target".to_string();
                }
            }
            if matches!(d.r#type.as_str(), "target" | "targetList")
                && !d.target_type.is_empty()
                && !d.target_type.contains('/')
            {
                d.target_type = format!("{LANDSCAPER_DOMAIN}/{}", d.target_type);
            }
        }
    }
    imports(&mut doc.imports);
    for e in &mut doc.exports {
        if e.schema.is_some() && !e.target_type.is_empty() {
            continue;
        }
        if e.r#type.is_empty() {
            if e.schema.is_some() {
                e.r#type = "data".to_string();
            } else if !e.target_type.is_empty() {
                e.r#type = "target".to_string();
            }
        }
        if e.r#type == "target" && !e.target_type.is_empty() && !e.target_type.contains('/') {
            e.target_type = format!("{LANDSCAPER_DOMAIN}/{}", e.target_type);
        }
    }
}

/// Reads an InstallationTemplate file of the blueprint (`subinstallations[].file`): strictly by
/// kind (`apiVersion` and `kind` required), then validated.
pub fn load_installation_template_file(
    fs: &BlueprintFs,
    file: &str,
) -> Result<InstallationTemplate, BlueprintError> {
    let text = fs.read_string(file)?;
    let value = parse_yaml(&text).map_err(|e| BlueprintError {
        issues: vec![BlueprintIssue {
            file: file.to_string(),
            field: String::new(),
            line: e.line,
            column: None,
            message: format!("unable to decode installation template: {}", e.message),
        }],
    })?;
    let locator = Locator::new(&text);
    decode_installation_template(value).map_err(|errs| BlueprintError {
        issues: errs
            .into_iter()
            .map(|(path, message)| {
                let pos = locator.locate(&path);
                BlueprintIssue {
                    file: file.to_string(),
                    field: display_path(&path),
                    line: pos.map(|p| p.0),
                    column: pos.map(|p| p.1),
                    message,
                }
            })
            .collect(),
    })
}

/// Decodes a templated or file InstallationTemplate: `apiVersion`/`kind` must name the type,
/// then Landscaper's `ValidateInstallationTemplate` applies. Errors are (field path, message).
pub fn decode_installation_template(
    value: Value,
) -> Result<InstallationTemplate, Vec<(Path_, String)>> {
    let Value::Object(map) = &value else {
        return Err(vec![(
            Vec::new(),
            format!(
                "unable to decode installation template: expected a map, found {}",
                super::fs::json_kind(&value)
            ),
        )]);
    };
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or_default();
    let api = map
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if kind.is_empty() {
        return Err(vec![(
            vec![key("kind")],
            "unable to decode installation template: Object 'Kind' is missing".to_string(),
        )]);
    }
    if kind != INSTALLATION_TEMPLATE_KIND || api != LANDSCAPER_API_VERSION {
        return Err(vec![(
            vec![key("kind")],
            format!(
                "unable to decode installation template: expected kind {INSTALLATION_TEMPLATE_KIND} of {LANDSCAPER_API_VERSION}, found {kind:?} of {api:?}"
            ),
        )]);
    }
    let template: InstallationTemplate = serde_path_to_error::deserialize(value).map_err(|e| {
        vec![(
            path_of(e.path()),
            format!("unable to decode installation template: {}", e.inner()),
        )]
    })?;
    let errs = validate_installation_template(&template);
    if errs.is_empty() {
        Ok(template)
    } else {
        Err(errs)
    }
}

/// Landscaper's `InstallationGenerateNameMaxLength` (53) minus the `-` of generateName.
pub const INSTALLATION_TEMPLATE_NAME_MAX_LENGTH: usize = 52;

/// Landscaper's `ValidateInstallationTemplate`: (field path, message) pairs.
pub fn validate_installation_template(t: &InstallationTemplate) -> Vec<(Path_, String)> {
    let mut errs = Vec::new();
    if t.name.is_empty() {
        errs.push((vec![key("name")], "name must be defined".to_string()));
    } else {
        for msg in is_dns1123_label(&t.name) {
            errs.push((
                vec![key("name")],
                format!("invalid value {:?}: {msg}", t.name),
            ));
        }
        if t.name.len() > INSTALLATION_TEMPLATE_NAME_MAX_LENGTH {
            errs.push((
                vec![key("name")],
                format!(
                    "invalid value {:?}: must be no more than {INSTALLATION_TEMPLATE_NAME_MAX_LENGTH} characters",
                    t.name
                ),
            ));
        }
    }
    if t.blueprint.reference.is_empty() && t.blueprint.filesystem.is_none() {
        errs.push((
            vec![key("blueprint")],
            "a blueprint must be defined".to_string(),
        ));
    }
    let mut names = BTreeSet::new();
    for (i, imp) in t.imports.data.iter().flatten().enumerate() {
        let p = vec![key("imports"), key("data"), idx(i)];
        if imp.data_ref.as_deref().unwrap_or_default().is_empty() {
            errs.push((
                child(&p, key("dataRef")),
                "dataRef must not be empty".to_string(),
            ));
        }
        if imp.secret_ref.is_some() {
            errs.push((
                child(&p, key("secretRef")),
                "secret references are not allowed in a installation template".to_string(),
            ));
        }
        if imp.config_map_ref.is_some() {
            errs.push((
                child(&p, key("configMapRef")),
                "configMap references are not allowed in a installation template".to_string(),
            ));
        }
        if imp.name.is_empty() {
            errs.push((child(&p, key("name")), "name must not be empty".to_string()));
        } else if !names.insert(imp.name.clone()) {
            errs.push((p, format!("duplicate value {:?}", imp.name)));
        }
    }
    for (i, imp) in t.imports.targets.iter().flatten().enumerate() {
        let p = vec![key("imports"), key("targets"), idx(i)];
        if imp.name.is_empty() {
            errs.push((child(&p, key("name")), "name must not be empty".to_string()));
        } else if !names.insert(imp.name.clone()) {
            errs.push((p.clone(), format!("duplicate value {:?}", imp.name)));
        }
        let set: Vec<&str> = [
            (
                "target",
                imp.target.as_deref().is_some_and(|s| !s.is_empty()),
            ),
            ("targets", imp.targets.is_some()),
            (
                "targetListRef",
                imp.target_list_ref
                    .as_deref()
                    .is_some_and(|s| !s.is_empty()),
            ),
            ("targetMap", imp.target_map.is_some()),
            (
                "targetMapRef",
                imp.target_map_ref.as_deref().is_some_and(|s| !s.is_empty()),
            ),
        ]
        .into_iter()
        .filter_map(|(n, s)| s.then_some(n))
        .collect();
        if set.len() != 1 {
            errs.push((
                p,
                format!(
                    "exactly one of [target, targets, targetListRef, targetMap, targetMapRef] must be set (currently set: {})",
                    if set.is_empty() {
                        "none".to_string()
                    } else {
                        format!("[{}]", set.join(", "))
                    }
                ),
            ));
        }
    }
    let mut names = BTreeSet::new();
    for (i, exp) in t.exports.data.iter().flatten().enumerate() {
        let p = vec![key("exports"), key("data"), idx(i)];
        if exp.data_ref.is_empty() {
            errs.push((
                child(&p, key("dataRef")),
                "dataRef must not be empty".to_string(),
            ));
        }
        if exp.name.is_empty() {
            errs.push((child(&p, key("name")), "name must not be empty".to_string()));
        } else if !names.insert(exp.name.clone()) {
            errs.push((p, format!("duplicate value {:?}", exp.name)));
        }
    }
    let mut names = BTreeSet::new();
    for (i, exp) in t.exports.targets.iter().flatten().enumerate() {
        let p = vec![key("exports"), key("targets"), idx(i)];
        if exp.target.is_empty() {
            errs.push((
                child(&p, key("target")),
                "target must not be empty".to_string(),
            ));
        }
        if exp.name.is_empty() {
            errs.push((child(&p, key("name")), "name must not be empty".to_string()));
        } else if !names.insert(exp.name.clone()) {
            errs.push((p, format!("duplicate value {:?}", exp.name)));
        }
    }
    errs
}
