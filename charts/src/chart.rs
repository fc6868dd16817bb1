//! A loaded Helm chart (`pkg/chart` and `pkg/chart/loader` of Helm 3): its metadata, default
//! values, schema, templates, other files and dependencies, loaded from a directory (with
//! `.helmignore`) or a `.tgz` archive, subcharts from `charts/` (directories and archives).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use landscaper_templating::gotemplate::funcs::yaml;
use serde_json::Value as Json;

use crate::ChartError;
use crate::ignore::Rules;

/// Helm's limits for archives (`MaxDecompressedChartSize`, `MaxDecompressedFileSize`).
pub const MAX_CHART_BYTES: u64 = 100 * 1024 * 1024;
pub const MAX_FILE_BYTES: u64 = 5 * 1024 * 1024;
/// Nesting of subcharts (a guard against hostile archives; Helm has none).
const MAX_CHART_DEPTH: usize = 32;

/// One file of a chart: its slash-separated path relative to the chart root.
#[derive(Debug, Clone)]
pub struct File {
    pub name: String,
    pub data: Arc<[u8]>,
}

/// `Chart.yaml` `maintainers` entry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Maintainer {
    pub name: String,
    pub email: String,
    pub url: String,
}

/// A dependency of `Chart.yaml` (or `requirements.yaml` for apiVersion v1).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Dependency {
    pub name: String,
    pub version: String,
    pub repository: String,
    pub condition: String,
    pub tags: Vec<String>,
    pub enabled: bool,
    /// `import-values`: strings (exports) or `{child, parent}` maps, as written.
    pub import_values: Vec<Json>,
    pub alias: String,
}

/// `Chart.yaml`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metadata {
    pub name: String,
    pub home: String,
    pub sources: Vec<String>,
    pub version: String,
    pub description: String,
    pub keywords: Vec<String>,
    pub maintainers: Vec<Maintainer>,
    pub icon: String,
    pub api_version: String,
    pub condition: String,
    pub tags: String,
    pub app_version: String,
    pub deprecated: bool,
    pub annotations: BTreeMap<String, String>,
    pub kube_version: String,
    pub dependencies: Vec<Dependency>,
    pub chart_type: String,
}

/// A chart with its dependencies.
#[derive(Debug, Clone, Default)]
pub struct Chart {
    pub metadata: Metadata,
    /// `values.yaml` (a JSON object; numbers are float64 as Helm reads them).
    pub values: serde_json::Map<String, Json>,
    pub schema: Option<Arc<[u8]>>,
    /// Files under `templates/`, in load order.
    pub templates: Vec<File>,
    /// Every other file (what `.Files` sees), in load order.
    pub files: Vec<File>,
    pub dependencies: Vec<Chart>,
    /// `Chart.lock` (or `requirements.lock`) as JSON (Helm's `chart.Lock`: `generated`,
    /// `digest`, `dependencies`); `None` without one (or when it is `null`).
    pub lock: Option<Json>,
}

impl Chart {
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    pub fn is_library(&self) -> bool {
        self.metadata.chart_type.eq_ignore_ascii_case("library")
    }

    /// `crds/` files of this chart and its dependencies, with their output path
    /// (`CRDObjects`): (path, content).
    pub fn crd_objects(&self, full_path: &str) -> Vec<(String, Arc<[u8]>)> {
        let mut out = Vec::new();
        for f in &self.files {
            if f.name.starts_with("crds/") && has_manifest_extension(&f.name) {
                out.push((format!("{full_path}/{}", f.name), Arc::clone(&f.data)));
            }
        }
        for d in &self.dependencies {
            out.extend(d.crd_objects(&format!("{full_path}/charts/{}", d.name())));
        }
        out
    }
}

fn has_manifest_extension(name: &str) -> bool {
    let ext = match name.rsplit_once('/').map_or(name, |(_, b)| b).rfind('.') {
        Some(i) => &name.rsplit_once('/').map_or(name, |(_, b)| b)[i..],
        None => "",
    };
    [".yaml", ".yml", ".json"]
        .iter()
        .any(|e| ext.eq_ignore_ascii_case(e))
}

/// Loads a chart from a directory or a `.tgz` file (Helm's `loader.Load`).
pub fn load(path: &Path) -> Result<Chart, ChartError> {
    let meta = std::fs::metadata(path).map_err(|e| ChartError::Load {
        chart: path.display().to_string(),
        message: e.to_string(),
    })?;
    if meta.is_dir() {
        load_dir(path)
    } else {
        let data = std::fs::read(path).map_err(|e| ChartError::Load {
            chart: path.display().to_string(),
            message: e.to_string(),
        })?;
        if !data.starts_with(b"\x1f\x8b") {
            return Err(ChartError::Load {
                chart: path.display().to_string(),
                message: format!(
                    "file '{}' does not appear to be a gzipped archive",
                    path.display()
                ),
            });
        }
        load_archive(&data)
    }
}

/// Loads a chart directory: files not ignored by its `.helmignore` (Helm's `LoadDir`).
/// Symbolic links are followed as long as they stay inside the directory.
pub fn load_dir(dir: &Path) -> Result<Chart, ChartError> {
    let err = |message: String| ChartError::Load {
        chart: dir.display().to_string(),
        message,
    };
    let top = dir
        .canonicalize()
        .map_err(|e| err(format!("{}: {e}", dir.display())))?;
    let mut rules = match std::fs::read(top.join(".helmignore")) {
        Ok(text) => Rules::parse(&String::from_utf8_lossy(&text)).map_err(err)?,
        Err(_) => Rules::default(),
    };
    rules.add_defaults();
    let mut files = Vec::new();
    let mut total = 0u64;
    walk(&top, &top, "", &rules, &mut files, &mut total, 0).map_err(err)?;
    load_files(files, 0)
}

fn walk(
    top: &Path,
    dir: &Path,
    prefix: &str,
    rules: &Rules,
    out: &mut Vec<File>,
    total: &mut u64,
    depth: usize,
) -> Result<(), String> {
    if depth > 64 {
        return Err(format!("{prefix}: directories nested too deeply"));
    }
    // `dir` is canonical (the chart's top or a canonical subdirectory), so only symbolic links
    // need resolving; resolving every entry cost a readlink per path component.
    let mut entries: Vec<(String, PathBuf, bool)> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| {
            let is_link = e.file_type().map_or(true, |t| t.is_symlink());
            (
                e.file_name().to_string_lossy().into_owned(),
                e.path(),
                is_link,
            )
        })
        .collect();
    entries.sort();
    for (name, path, is_link) in entries {
        let rel = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        let real = if is_link {
            path.canonicalize().map_err(|e| format!("{rel}: {e}"))?
        } else {
            path
        };
        if !real.starts_with(top) {
            return Err(format!("{rel}: links outside the chart directory"));
        }
        let meta = std::fs::metadata(&real).map_err(|e| format!("{rel}: {e}"))?;
        if meta.is_dir() {
            if rules.ignore(&rel, true) {
                continue;
            }
            walk(top, &real, &rel, rules, out, total, depth + 1)?;
            continue;
        }
        if rules.ignore(&rel, false) {
            continue;
        }
        if !meta.is_file() {
            return Err(format!(
                "cannot load irregular file {rel} as it has file mode type bits set"
            ));
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(format!(
                "chart file \"{name}\" is larger than the maximum file size {MAX_FILE_BYTES}"
            ));
        }
        *total += meta.len();
        if *total > MAX_CHART_BYTES {
            return Err(format!(
                "chart is larger than the maximum size {MAX_CHART_BYTES}"
            ));
        }
        let data = read_file(&real, meta.len()).map_err(|e| format!("error reading {rel}: {e}"))?;
        out.push(File { name: rel, data });
    }
    Ok(())
}

/// A file's content without a UTF-8 byte order mark, read straight into its shared buffer
/// (`len` is the size the walk saw; a file that changed size since is read again as a whole).
fn read_file(path: &Path, len: u64) -> std::io::Result<Arc<[u8]>> {
    let mut f = std::fs::File::open(path)?;
    let Ok(len) = usize::try_from(len) else {
        return Ok(strip_bom(std::fs::read(path)?).into());
    };
    let mut data: Arc<[u8]> = std::iter::repeat_n(0u8, len).collect();
    let buf = Arc::get_mut(&mut data).ok_or_else(|| std::io::Error::other("shared buffer"))?;
    let mut rest = [0u8; 1];
    if f.read_exact(buf).is_err() || f.read(&mut rest)? != 0 {
        return Ok(strip_bom(std::fs::read(path)?).into());
    }
    if data.starts_with(&[0xEF, 0xBB, 0xBF]) {
        return Ok(Arc::from(&data[3..]));
    }
    Ok(data)
}

fn strip_bom(mut data: Vec<u8>) -> Vec<u8> {
    if data.starts_with(&[0xEF, 0xBB, 0xBF]) {
        data.drain(..3);
    }
    data
}

/// Loads a gzipped tar archive of a chart (Helm's `LoadArchive`): the first path element of
/// every entry is the chart's directory and is dropped.
pub fn load_archive(data: &[u8]) -> Result<Chart, ChartError> {
    load_archive_at(data, 0)
}

fn load_archive_at(data: &[u8], depth: usize) -> Result<Chart, ChartError> {
    let files = archive_files(data).map_err(|message| ChartError::Load {
        chart: "archive".into(),
        message,
    })?;
    load_files(files, depth)
}

fn archive_files(data: &[u8]) -> Result<Vec<File>, String> {
    let gz = flate2::read::GzDecoder::new(data);
    let mut archive = tar::Archive::new(gz);
    let mut files = Vec::new();
    let mut remaining = MAX_CHART_BYTES;
    for entry in archive.entries().map_err(|e| e.to_string())? {
        let mut entry = entry.map_err(|e| e.to_string())?;
        let kind = entry.header().entry_type();
        if kind.is_dir() || kind.is_pax_global_extensions() || kind.is_pax_local_extensions() {
            continue;
        }
        let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let delim = if raw.contains('\\') { '\\' } else { '/' };
        let parts: Vec<&str> = raw.split(delim).collect();
        let joined = parts[1..].join("/");
        if joined.starts_with('/') {
            return Err("chart illegally contains absolute paths".into());
        }
        let name = clean(&joined);
        if name == "." {
            return Err(format!(
                "chart illegally contains content outside the base directory: \"{raw}\""
            ));
        }
        if name.starts_with("..") {
            return Err("chart illegally references parent directory".into());
        }
        if name.len() >= 3 && name.as_bytes()[1] == b':' && name.as_bytes()[2] == b'/' {
            return Err("chart contains illegally named files".into());
        }
        if parts[0] == "Chart.yaml" {
            return Err("chart yaml not in base directory".into());
        }
        if !kind.is_file() && kind != tar::EntryType::Continuous {
            continue;
        }
        let size = entry.header().size().map_err(|e| e.to_string())?;
        if size > remaining {
            return Err(format!(
                "decompressed chart is larger than the maximum file size {MAX_CHART_BYTES}"
            ));
        }
        if size > MAX_FILE_BYTES {
            return Err(format!(
                "decompressed chart file \"{raw}\" is larger than the maximum file size {MAX_FILE_BYTES}"
            ));
        }
        let mut buf = Vec::with_capacity(size as usize);
        (&mut entry)
            .take(remaining)
            .read_to_end(&mut buf)
            .map_err(|e| e.to_string())?;
        remaining = remaining.saturating_sub(buf.len() as u64);
        if (buf.len() as u64) < size || remaining == 0 {
            return Err(format!(
                "decompressed chart is larger than the maximum file size {MAX_CHART_BYTES}"
            ));
        }
        files.push(File {
            name,
            data: strip_bom(buf).into(),
        });
    }
    if files.is_empty() {
        return Err("no files in chart archive".into());
    }
    Ok(files)
}

/// Go's `path.Clean` for relative paths.
fn clean(p: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|s| *s != "..") {
                    out.pop();
                } else {
                    out.push("..");
                }
            }
            s => out.push(s),
        }
    }
    if out.is_empty() {
        ".".into()
    } else {
        out.join("/")
    }
}

fn parse_yaml(what: &str, data: &[u8]) -> Result<Json, String> {
    let text = String::from_utf8_lossy(data);
    let v = yaml::unmarshal(&text).map_err(|e| format!("cannot load {what}: {e}"))?;
    v.to_json().map_err(|e| format!("cannot load {what}: {e}"))
}

/// A lock file as Helm unmarshals it into `chart.Lock`: `null` is no lock, anything but an
/// object (or fields of the wrong type) fails the load as Go's `json.Unmarshal` does.
fn parse_lock(what: &str, data: &[u8]) -> Result<Option<Json>, String> {
    let lock = parse_yaml(what, data)?;
    let wrong = |field: &str, go_type: &str| {
        format!(
            "cannot load {what}: error unmarshaling JSON: json: cannot unmarshal into Go {field} of type {go_type}"
        )
    };
    match &lock {
        Json::Null => return Ok(None),
        Json::Object(m) => {
            match m.get("generated") {
                None | Some(Json::Null | Json::String(_)) => {}
                Some(_) => return Err(wrong("struct field Lock.generated", "time.Time")),
            }
            match m.get("digest") {
                None | Some(Json::Null | Json::String(_)) => {}
                Some(_) => return Err(wrong("struct field Lock.digest", "string")),
            }
            match m.get("dependencies") {
                None | Some(Json::Null) => {}
                Some(Json::Array(deps)) if deps.iter().all(|d| d.is_object() || d.is_null()) => {}
                Some(_) => {
                    return Err(wrong(
                        "struct field Lock.dependencies",
                        "[]*chart.Dependency",
                    ));
                }
            }
        }
        _ => return Err(wrong("value", "chart.Lock")),
    }
    Ok(Some(lock))
}

/// Builds a chart from its files (Helm's `LoadFiles`).
pub fn load_files(files: Vec<File>, depth: usize) -> Result<Chart, ChartError> {
    if depth > MAX_CHART_DEPTH {
        return Err(ChartError::Load {
            chart: "archive".into(),
            message: "subcharts nested too deeply".into(),
        });
    }
    let mut c = Chart::default();
    let mut meta_json: Option<serde_json::Map<String, Json>> = None;
    let fail = |message: String| ChartError::Load {
        chart: String::new(),
        message,
    };
    for f in &files {
        if f.name == "Chart.yaml" {
            let v = parse_yaml("Chart.yaml", &f.data).map_err(fail)?;
            let m = meta_json.get_or_insert_with(Default::default);
            if let Json::Object(o) = v {
                m.extend(o);
            } else if !v.is_null() {
                return Err(fail(
                    "cannot load Chart.yaml: error unmarshaling JSON: json: cannot unmarshal into Go value of type chart.Metadata".into(),
                ));
            }
            if m.get("apiVersion")
                .and_then(Json::as_str)
                .unwrap_or("")
                .is_empty()
            {
                m.insert("apiVersion".into(), Json::String("v1".into()));
            }
        }
    }
    let mut subcharts: BTreeMap<String, Vec<File>> = BTreeMap::new();
    let api_v1 = |m: &Option<serde_json::Map<String, Json>>| {
        m.as_ref()
            .and_then(|m| m.get("apiVersion"))
            .and_then(Json::as_str)
            == Some("v1")
    };
    for f in files {
        match f.name.as_str() {
            "Chart.yaml" => {}
            "Chart.lock" | "requirements.lock" => {
                c.lock = parse_lock(&f.name, &f.data).map_err(fail)?;
                if f.name == "requirements.lock" && api_v1(&meta_json) {
                    c.files.push(f);
                }
            }
            "values.yaml" => {
                let v = parse_yaml("values.yaml", &f.data).map_err(fail)?;
                c.values = match v {
                    Json::Object(o) => o,
                    Json::Null => Default::default(),
                    _ => {
                        return Err(fail(
                            "cannot load values.yaml: error unmarshaling JSON: json: cannot unmarshal into Go value of type map[string]interface {}".into(),
                        ));
                    }
                };
            }
            "values.schema.json" => c.schema = Some(f.data),
            "requirements.yaml" => {
                let v = parse_yaml("requirements.yaml", &f.data).map_err(fail)?;
                let m = meta_json.get_or_insert_with(Default::default);
                if let Json::Object(o) = v {
                    m.extend(o);
                }
                if api_v1(&meta_json) {
                    c.files.push(f);
                }
            }
            n if n.starts_with("templates/") => c.templates.push(f),
            n if n.starts_with("charts/") => {
                if n.ends_with(".prov") {
                    c.files.push(f);
                    continue;
                }
                let fname = &n["charts/".len()..];
                let cname = fname.split('/').next().unwrap_or("").to_string();
                let rest = fname.to_string();
                subcharts.entry(cname).or_default().push(File {
                    name: rest,
                    data: f.data,
                });
            }
            _ => c.files.push(f),
        }
    }
    let Some(meta_json) = meta_json else {
        return Err(fail("Chart.yaml file is missing".into()));
    };
    c.metadata =
        metadata_from_json(&meta_json).map_err(|e| fail(format!("cannot load Chart.yaml: {e}")))?;
    validate_metadata(&mut c.metadata).map_err(|e| fail(format!("validation: {e}")))?;
    let chart_name = c.metadata.name.clone();
    for (n, files) in subcharts {
        if n.starts_with('_') || n.starts_with('.') {
            continue;
        }
        let sub = if n.ends_with(".tgz") {
            let Some(file) = files.first() else { continue };
            if file.name != n {
                return Err(ChartError::Load {
                    chart: chart_name.clone(),
                    message: format!(
                        "error unpacking subchart tar in {chart_name}: expected {n}, got {}",
                        file.name
                    ),
                });
            }
            load_archive_at(&file.data, depth + 1)
        } else {
            let inner: Vec<File> = files
                .into_iter()
                .filter_map(|f| {
                    f.name.split_once('/').map(|(_, rest)| File {
                        name: rest.to_string(),
                        data: f.data,
                    })
                })
                .collect();
            load_files(inner, depth + 1)
        };
        let sub = sub.map_err(|e| ChartError::Load {
            chart: chart_name.clone(),
            message: format!(
                "error unpacking subchart {n} in {chart_name}: {}",
                e.message()
            ),
        })?;
        c.dependencies.push(sub);
    }
    Ok(c)
}

fn string_field(m: &serde_json::Map<String, Json>, key: &str, ty: &str) -> Result<String, String> {
    match m.get(key) {
        None | Some(Json::Null) => Ok(String::new()),
        Some(Json::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!(
            "json: cannot unmarshal {} into Go struct field {ty}.{key} of type string",
            json_kind(other)
        )),
    }
}

fn json_kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "bool",
        Json::Number(_) => "number",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

fn string_list(
    m: &serde_json::Map<String, Json>,
    key: &str,
    ty: &str,
) -> Result<Vec<String>, String> {
    match m.get(key) {
        None | Some(Json::Null) => Ok(Vec::new()),
        Some(Json::Array(items)) => items
            .iter()
            .map(|i| match i {
                Json::String(s) => Ok(s.clone()),
                Json::Null => Ok(String::new()),
                other => Err(format!(
                    "json: cannot unmarshal {} into Go struct field {ty}.{key} of type string",
                    json_kind(other)
                )),
            })
            .collect(),
        Some(other) => Err(format!(
            "json: cannot unmarshal {} into Go struct field {ty}.{key} of type []string",
            json_kind(other)
        )),
    }
}

fn metadata_from_json(m: &serde_json::Map<String, Json>) -> Result<Metadata, String> {
    const T: &str = "Metadata";
    let mut md = Metadata {
        name: string_field(m, "name", T)?,
        home: string_field(m, "home", T)?,
        sources: string_list(m, "sources", T)?,
        version: string_field(m, "version", T)?,
        description: string_field(m, "description", T)?,
        keywords: string_list(m, "keywords", T)?,
        icon: string_field(m, "icon", T)?,
        api_version: string_field(m, "apiVersion", T)?,
        condition: string_field(m, "condition", T)?,
        tags: string_field(m, "tags", T)?,
        app_version: string_field(m, "appVersion", T)?,
        kube_version: string_field(m, "kubeVersion", T)?,
        chart_type: string_field(m, "type", T)?,
        ..Metadata::default()
    };
    md.deprecated = match m.get("deprecated") {
        None | Some(Json::Null) => false,
        Some(Json::Bool(b)) => *b,
        Some(other) => {
            return Err(format!(
                "json: cannot unmarshal {} into Go struct field Metadata.deprecated of type bool",
                json_kind(other)
            ));
        }
    };
    match m.get("annotations") {
        None | Some(Json::Null) => {}
        Some(Json::Object(a)) => {
            for (k, v) in a {
                match v {
                    Json::String(s) => {
                        md.annotations.insert(k.clone(), s.clone());
                    }
                    Json::Null => {
                        md.annotations.insert(k.clone(), String::new());
                    }
                    other => {
                        return Err(format!(
                            "json: cannot unmarshal {} into Go struct field Metadata.annotations of type string",
                            json_kind(other)
                        ));
                    }
                }
            }
        }
        Some(other) => {
            return Err(format!(
                "json: cannot unmarshal {} into Go struct field Metadata.annotations of type map[string]string",
                json_kind(other)
            ));
        }
    }
    if let Some(Json::Array(ms)) = m.get("maintainers") {
        for mm in ms {
            let Json::Object(mm) = mm else { continue };
            md.maintainers.push(Maintainer {
                name: string_field(mm, "name", "Maintainer")?,
                email: string_field(mm, "email", "Maintainer")?,
                url: string_field(mm, "url", "Maintainer")?,
            });
        }
    }
    match m.get("dependencies") {
        None | Some(Json::Null) => {}
        Some(Json::Array(ds)) => {
            for d in ds {
                let Json::Object(d) = d else {
                    return Err("dependencies must not contain empty or null nodes".into());
                };
                const D: &str = "Dependency";
                md.dependencies.push(Dependency {
                    name: string_field(d, "name", D)?,
                    version: string_field(d, "version", D)?,
                    repository: string_field(d, "repository", D)?,
                    condition: string_field(d, "condition", D)?,
                    tags: string_list(d, "tags", D)?,
                    enabled: matches!(d.get("enabled"), Some(Json::Bool(true))),
                    import_values: match d.get("import-values") {
                        Some(Json::Array(a)) => a.clone(),
                        _ => Vec::new(),
                    },
                    alias: string_field(d, "alias", D)?,
                });
            }
        }
        Some(other) => {
            return Err(format!(
                "json: cannot unmarshal {} into Go struct field Metadata.dependencies of type []*chart.Dependency",
                json_kind(other)
            ));
        }
    }
    Ok(md)
}

/// Helm's `sanitizeString`: whitespace becomes a space, unprintable characters are dropped.
fn sanitize(s: &mut String) {
    if s.chars().all(|c| !c.is_whitespace() || c == ' ') && !s.chars().any(char::is_control) {
        return;
    }
    *s = s
        .chars()
        .filter_map(|c| {
            if c.is_whitespace() {
                Some(' ')
            } else if c.is_control() {
                None
            } else {
                Some(c)
            }
        })
        .collect();
}

/// `Metadata.Validate`.
fn validate_metadata(md: &mut Metadata) -> Result<(), String> {
    for s in [
        &mut md.name,
        &mut md.description,
        &mut md.home,
        &mut md.icon,
        &mut md.condition,
        &mut md.tags,
        &mut md.app_version,
        &mut md.kube_version,
    ] {
        sanitize(s);
    }
    for s in md.sources.iter_mut().chain(md.keywords.iter_mut()) {
        sanitize(s);
    }
    if md.api_version.is_empty() {
        return Err("chart.metadata.apiVersion is required".into());
    }
    if md.name.is_empty() {
        return Err("chart.metadata.name is required".into());
    }
    if md.name.contains('/') || md.name == "." || md.name == ".." {
        return Err(format!("chart.metadata.name \"{}\" is invalid", md.name));
    }
    if md.version.is_empty() {
        return Err("chart.metadata.version is required".into());
    }
    if crate::semver::parse_version(&md.version).is_none() {
        return Err(format!(
            "chart.metadata.version \"{}\" is invalid",
            md.version
        ));
    }
    if !matches!(md.chart_type.as_str(), "" | "application" | "library") {
        return Err("chart.metadata.type must be application or library".into());
    }
    let mut seen = std::collections::BTreeSet::new();
    for d in &mut md.dependencies {
        for s in [
            &mut d.name,
            &mut d.version,
            &mut d.repository,
            &mut d.condition,
        ] {
            sanitize(s);
        }
        for t in &mut d.tags {
            sanitize(t);
        }
        if !d.alias.is_empty()
            && !d
                .alias
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(format!(
                "dependency \"{}\" has disallowed characters in the alias",
                d.name
            ));
        }
        let key = if d.alias.is_empty() {
            d.name.clone()
        } else {
            d.alias.clone()
        };
        if !seen.insert(key.clone()) {
            return Err(format!(
                "more than one dependency with name or alias \"{key}\""
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, data: &str) -> File {
        File {
            name: name.into(),
            data: data.as_bytes().into(),
        }
    }

    #[test]
    fn the_lock_file_is_loaded_into_the_chart() {
        let lock = "dependencies:\n- name: sub\n  repository: https://charts.example.com\n  version: 1.2.3\ndigest: sha256:abc\ngenerated: \"2024-05-06T07:08:09.5+02:00\"\n";
        let c = load_files(
            vec![
                file("Chart.yaml", "apiVersion: v2\nname: top\nversion: 1.0.0\n"),
                file("Chart.lock", lock),
            ],
            0,
        )
        .unwrap();
        assert_eq!(
            c.lock,
            Some(serde_json::json!({
                "dependencies": [{"name": "sub", "repository": "https://charts.example.com", "version": "1.2.3"}],
                "digest": "sha256:abc",
                "generated": "2024-05-06T07:08:09.5+02:00"
            }))
        );
        assert!(c.files.is_empty(), "Chart.lock is not one of .Files");
        // apiVersion v1: requirements.lock is the lock and stays one of the files.
        let c = load_files(
            vec![
                file("Chart.yaml", "apiVersion: v1\nname: old\nversion: 1.0.0\n"),
                file("requirements.lock", "digest: sha256:def\n"),
            ],
            0,
        )
        .unwrap();
        assert_eq!(c.lock, Some(serde_json::json!({"digest": "sha256:def"})));
        assert_eq!(c.files.len(), 1);
        // An empty lock is none; a malformed one fails the load as in Helm.
        let load = |lock: &str| {
            load_files(
                vec![
                    file("Chart.yaml", "apiVersion: v2\nname: top\nversion: 1.0.0\n"),
                    file("Chart.lock", lock),
                ],
                0,
            )
        };
        assert_eq!(load("").unwrap().lock, None);
        let error = load("digest: [1]\n").unwrap_err().to_string();
        assert!(error.contains("cannot load Chart.lock"), "{error}");
        assert!(load("- a\n").is_err());
    }

    #[test]
    fn symbolic_links_resolve_inside_the_chart_only() {
        let dir = tempfile::tempdir().unwrap();
        let chart = dir.path().join("demo");
        std::fs::create_dir_all(chart.join("templates")).unwrap();
        std::fs::write(
            chart.join("Chart.yaml"),
            "apiVersion: v2\nname: demo\nversion: 1.0.0\n",
        )
        .unwrap();
        std::fs::write(chart.join("shared.yaml"), "kind: ConfigMap\n").unwrap();
        // A link to a file inside the chart is loaded with the link's name.
        std::os::unix::fs::symlink(chart.join("shared.yaml"), chart.join("templates/cm.yaml"))
            .unwrap();
        let loaded = load_dir(&chart).unwrap();
        assert!(
            loaded
                .templates
                .iter()
                .any(|t| t.name == "templates/cm.yaml"),
            "{:?}",
            loaded.templates.iter().map(|t| &t.name).collect::<Vec<_>>()
        );
        // A link that leaves the chart is refused, naming the entry.
        std::fs::write(dir.path().join("secret.txt"), "s").unwrap();
        std::os::unix::fs::symlink(
            dir.path().join("secret.txt"),
            chart.join("templates/leak.yaml"),
        )
        .unwrap();
        let err = load_dir(&chart).unwrap_err().to_string();
        assert!(
            err.contains("templates/leak.yaml: links outside the chart directory"),
            "{err}"
        );
    }

    #[test]
    fn files_are_sorted_into_templates_files_and_subcharts() {
        let c = load_files(
            vec![
                file(
                    "Chart.yaml",
                    "apiVersion: v2\nname: top\nversion: 1.0.0\ndescription: \"a\\nb\"\n",
                ),
                file("values.yaml", "a: 1\n"),
                file("templates/x.yaml", "x"),
                file("files/f.txt", "f"),
                file("charts/sub/Chart.yaml", "name: sub\nversion: 0.1.0\n"),
                file("charts/sub/templates/y.yaml", "y"),
                file("charts/_skip/Chart.yaml", "name: skip\nversion: 0.1.0\n"),
            ],
            0,
        )
        .unwrap();
        assert_eq!(c.metadata.name, "top");
        assert_eq!(c.metadata.description, "a b");
        assert_eq!(c.templates.len(), 1);
        assert_eq!(c.files.len(), 1);
        assert_eq!(c.dependencies.len(), 1);
        assert_eq!(c.dependencies[0].metadata.api_version, "v1");
        assert_eq!(c.dependencies[0].templates[0].name, "templates/y.yaml");
        assert_eq!(c.values["a"], serde_json::json!(1.0));
    }

    #[test]
    fn metadata_errors_are_reported() {
        let e = load_files(vec![file("values.yaml", "a: 1\n")], 0).unwrap_err();
        assert!(e.to_string().contains("Chart.yaml file is missing"), "{e}");
        let e = load_files(vec![file("Chart.yaml", "name: x\nversion: nope\n")], 0).unwrap_err();
        assert!(e.to_string().contains("version \"nope\" is invalid"), "{e}");
        let e = load_files(
            vec![file("Chart.yaml", "name: x\nversion: 1.0.0\ntype: app\n")],
            0,
        )
        .unwrap_err();
        assert!(e.to_string().contains("application or library"), "{e}");
    }

    #[test]
    fn v1_requirements_yaml_gives_dependencies() {
        let c = load_files(
            vec![
                file("Chart.yaml", "name: x\nversion: 1.0.0\n"),
                file(
                    "requirements.yaml",
                    "dependencies:\n- name: a\n  version: 1.x\n  alias: b\n",
                ),
            ],
            0,
        )
        .unwrap();
        assert_eq!(c.metadata.dependencies[0].alias, "b");
        assert_eq!(c.files[0].name, "requirements.yaml");
    }

    #[test]
    fn paths_are_cleaned_like_go() {
        assert_eq!(clean("a/./b//c"), "a/b/c");
        assert_eq!(clean("a/../.."), "..");
        assert_eq!(clean(""), ".");
    }
}
