//! The public face of the engine: [`Template`] (Go's `*template.Template` with its associated
//! templates), [`Limits`], [`TemplateError`], file hosts, and [`render`].

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use super::builtins::{self, Rv};
use super::exec::{ExecErr, Scope, Shared, State};
use super::function::{FuncError, FuncMap};
use super::parse::{self, ListNode};
use super::print;
use super::value::Value;
use crate::budget::{self, RenderBudget};

/// What went wrong: Go's message as [`Display`](std::fmt::Display), and its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    pub kind: ErrorKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The text is not a valid template (`template: NAME:LINE: ...`).
    Parse,
    /// Execution failed as Go's would (`template: NAME:LINE:COL: executing ...`).
    Exec,
    /// A safety limit of [`Limits`] was exceeded.
    Limit,
}

impl std::fmt::Display for TemplateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TemplateError {}

impl TemplateError {
    fn parse(message: String) -> Self {
        TemplateError {
            kind: ErrorKind::Parse,
            message,
        }
    }
}

/// Go's `missingkey` option: what a missing map key evaluates to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissingKey {
    /// `missingkey=default`/`invalid`: the invalid value (printed `<no value>`).
    Invalid,
    /// `missingkey=zero`: the zero value of the map's element type; for Go's
    /// `map[string]interface{}` a nil interface (also printed `<no value>`, but `.a.b` on it
    /// fails with `nil pointer evaluating interface {}.b`). Landscaper's and Helm's choice.
    Zero,
    /// `missingkey=error`: `map has no entry for key "x"`.
    Error,
}

/// Execution options and safety limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Nesting of `template`, `include` and `tpl` calls (Go allows 100000).
    pub max_depth: usize,
    /// Steps, wall time, output and value sizes of one execution.
    pub budget: RenderBudget,
    pub missing_key: MissingKey,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_depth: 100,
            budget: RenderBudget::default(),
            missing_key: MissingKey::Zero,
        }
    }
}

impl Limits {
    /// The default limits with this budget.
    pub fn with_budget(budget: RenderBudget) -> Self {
        Limits {
            budget,
            ..Limits::default()
        }
    }
}

/// Files a template may read (`.Files.Get`, Landscaper's `readFile`...).
pub trait FileHost {
    fn read_file(&self, path: &str) -> Result<Vec<u8>, FuncError>;
    /// (name, is_dir) pairs, sorted by name.
    fn read_dir(&self, path: &str) -> Result<Vec<(String, bool)>, FuncError>;
}

/// No files at all.
#[derive(Debug, Clone, Copy, Default)]
pub struct EmptyFiles;

impl FileHost for EmptyFiles {
    fn read_file(&self, path: &str) -> Result<Vec<u8>, FuncError> {
        Err(FuncError::new(format!("open {path}: file does not exist")))
    }

    fn read_dir(&self, path: &str) -> Result<Vec<(String, bool)>, FuncError> {
        Err(FuncError::new(format!("open {path}: file does not exist")))
    }
}

/// Files in memory, by slash-separated relative path (tests, inline blueprints).
#[derive(Debug, Clone, Default)]
pub struct MapFiles {
    pub files: BTreeMap<String, Vec<u8>>,
}

impl MapFiles {
    pub fn new() -> Self {
        MapFiles::default()
    }

    pub fn with(mut self, path: &str, content: impl Into<Vec<u8>>) -> Self {
        self.files.insert(clean_path(path), content.into());
        self
    }
}

fn clean_path(p: &str) -> String {
    p.split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect::<Vec<_>>()
        .join("/")
}

impl FileHost for MapFiles {
    fn read_file(&self, path: &str) -> Result<Vec<u8>, FuncError> {
        self.files
            .get(&clean_path(path))
            .cloned()
            .ok_or_else(|| FuncError::new(format!("open {path}: file does not exist")))
    }

    fn read_dir(&self, path: &str) -> Result<Vec<(String, bool)>, FuncError> {
        let dir = clean_path(path);
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let mut out: BTreeMap<String, bool> = BTreeMap::new();
        for p in self.files.keys() {
            if let Some(rest) = p.strip_prefix(&prefix) {
                match rest.split_once('/') {
                    Some((d, _)) => {
                        out.insert(d.to_string(), true);
                    }
                    None => {
                        out.entry(rest.to_string()).or_insert(false);
                    }
                }
            }
        }
        if out.is_empty() && !dir.is_empty() {
            return Err(FuncError::new(format!("open {path}: file does not exist")));
        }
        Ok(out.into_iter().collect())
    }
}

/// Where a tree's text came from: the name it was parsed under (Go's `ParseName`) and the text,
/// for `NAME:LINE:COL` in execution errors.
pub(crate) struct Source {
    pub parse_name: String,
    pub text: Rc<str>,
}

/// One named template.
pub(crate) struct Tree {
    pub name: String,
    pub root: ListNode,
    pub source: Rc<Source>,
}

/// A set of named templates, as Go's `*template.Template` with its associated templates: the
/// text parsed first, every `{{define}}`/`{{block}}` in it, and whatever [`Template::add`]
/// adds. Parse once, execute many times.
pub struct Template {
    name: String,
    trees: HashMap<String, Rc<Tree>>,
    funcs: FuncMap,
}

impl std::fmt::Debug for Template {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.trees.keys().collect();
        names.sort();
        f.debug_struct("Template")
            .field("name", &self.name)
            .field("templates", &names)
            .finish()
    }
}

impl Template {
    /// Go's `template.New(name).Funcs(funcs).Parse(text)`. Function names are checked against
    /// `funcs` and the builtins, as Go does at parse time.
    pub fn parse(name: &str, text: &str, funcs: &FuncMap) -> Result<Template, TemplateError> {
        let mut t = Template {
            name: name.to_string(),
            trees: HashMap::new(),
            funcs: funcs.clone(),
        };
        t.add(name, text)?;
        Ok(t)
    }

    /// Go's `t.New(name).Parse(text)`: parses more text into the set (as Helm does per file).
    /// Later definitions replace earlier ones, except that an empty one never replaces.
    pub fn add(&mut self, name: &str, text: &str) -> Result<(), TemplateError> {
        self.add_shared(name, Rc::from(text))
    }

    /// [`Template::add`] with text the caller already holds shared (kept, not copied).
    pub fn add_shared(&mut self, name: &str, text: Rc<str>) -> Result<(), TemplateError> {
        let funcs = &self.funcs;
        let has = |n: &str| funcs.contains(n) || builtins::builtin_kind(n).is_some();
        let parsed = parse::parse(name, &text, &has).map_err(TemplateError::parse)?;
        let source = Rc::new(Source {
            parse_name: name.to_string(),
            text,
        });
        for (tname, root) in parsed {
            if parse::is_empty_list(&root) && self.trees.contains_key(&tname) {
                continue;
            }
            self.trees.insert(
                tname.clone(),
                Rc::new(Tree {
                    name: tname,
                    root,
                    source: Rc::clone(&source),
                }),
            );
        }
        Ok(())
    }

    /// The set's name (the name given to [`Template::parse`]).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether a template of that name is defined.
    pub fn has(&self, name: &str) -> bool {
        self.trees.contains_key(name)
    }

    /// Names of all templates in the set, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.trees.keys().cloned().collect();
        v.sort();
        v
    }

    /// Go's `t.ExecuteTemplate(w, name, data)`.
    pub fn execute(
        &self,
        name: &str,
        data: &Value,
        funcs: &FuncMap,
        files: &dyn FileHost,
        limits: &Limits,
    ) -> Result<String, TemplateError> {
        let Some(tree) = self.trees.get(name) else {
            return Err(TemplateError {
                kind: ErrorKind::Exec,
                message: format!(
                    "template: no template {} associated with template {}",
                    print::quote(name),
                    print::quote(&self.name)
                ),
            });
        };
        let _budget = budget::enter(&limits.budget);
        let mut shared = Shared {
            limits: *limits,
            files,
            steps: 0,
            limit_error: None,
            root_name: self.name.clone(),
            nesting: 0,
        };
        let scope = Scope {
            trees: &self.trees,
            parent: None,
        };
        let state = State::new(
            &scope,
            funcs,
            tree,
            Rv::concrete(data.clone()),
            0,
            &mut shared,
        );
        let r = state.run();
        if let Some(e) = budget::exceeded() {
            // Also when the function that hit it returned a value or its error was caught.
            return Err(TemplateError {
                kind: ErrorKind::Limit,
                message: shared
                    .limit_error
                    .take()
                    .unwrap_or_else(|| format!("template: {}: {e}", tree.name)),
            });
        }
        match r {
            Ok(s) => Ok(s),
            Err(e) => {
                if let Some(m) = shared.limit_error.take() {
                    return Err(TemplateError {
                        kind: ErrorKind::Limit,
                        message: m,
                    });
                }
                Err(match e {
                    ExecErr::Exec(m) => TemplateError {
                        kind: ErrorKind::Exec,
                        message: m,
                    },
                    ExecErr::Limit(m) => TemplateError {
                        kind: ErrorKind::Limit,
                        message: m,
                    },
                })
            }
        }
    }
}

/// Parses and executes `text` once, with JSON data (decoded as Go's `encoding/json` does),
/// no files and default limits.
pub fn render(
    name: &str,
    text: &str,
    data: &serde_json::Value,
    funcs: &FuncMap,
) -> Result<String, TemplateError> {
    let t = Template::parse(name, text, funcs)?;
    t.execute(
        name,
        &Value::from_json(data),
        funcs,
        &EmptyFiles,
        &Limits::default(),
    )
}
