//! The CLI's client commands (`get`, `describe`, `tree`; the writes `reconcile`, `interrupt`,
//! `delete`) and their output formats.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use landscaper_store::model::constants::{
    ENCOMPASSED_BY_LABEL, EXECUTION_MANAGED_BY_LABEL, OPERATION_ANNOTATION, OPERATION_INTERRUPT,
    OPERATION_RECONCILE,
};
use landscaper_store::model::shared::is_waiting_json;
use landscaper_store::{Kind, ObjectKey};
use serde_json::{Value, json};

use crate::cli::{
    DeleteArgs, DescribeArgs, GetArgs, InterruptArgs, OperationArgs, OutputFormat, TreeArgs,
    TreeOutputFormat, WriteArgs,
};
use crate::commands::client::Client;
use crate::commands::jsonpath::Template;
use crate::config::DEFAULT_DATA_DIR;
use crate::daemon::api::ApiToken;

/// Environment variable holding the API token itself.
pub use crate::daemon::api::token::TOKEN_ENV;
/// Environment variable naming the token file (`--token-file`).
const TOKEN_FILE_ENV: &str = "LANDSCAPER_APPLIANCE_TOKEN_FILE";
/// Environment variable naming the data folder (as for `serve`).
const DATA_ENV: &str = "LANDSCAPER_APPLIANCE_DATA";

const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

/// Resolves what a user typed (`inst`, `installations`, `Installation`,
/// `installations.landscaper.gardener.cloud`) to a kind.
pub fn resolve_kind(resource: &str) -> Option<Kind> {
    let lower = resource.to_ascii_lowercase();
    let (name, group) = match lower.split_once('.') {
        Some((name, group)) => (name.to_string(), Some(group.to_string())),
        None => (lower, None),
    };
    Kind::ALL.into_iter().find(|k| {
        group.as_deref().is_none_or(|g| g == k.group())
            && (k.plural() == name
                || k.singular() == name
                || k.as_str().eq_ignore_ascii_case(&name)
                || k.short_names().contains(&name.as_str()))
    })
}

/// The API path of a kind's collection or of one object.
pub fn api_path(kind: Kind, namespace: Option<&str>, name: Option<&str>) -> String {
    let mut path = if kind.group().is_empty() {
        format!("/api/{}", kind.version())
    } else {
        format!("/apis/{}/{}", kind.group(), kind.version())
    };
    if let (true, Some(ns)) = (kind.namespaced(), namespace) {
        path.push_str(&format!("/namespaces/{ns}"));
    }
    path.push('/');
    path.push_str(kind.plural());
    if let Some(name) = name {
        path.push('/');
        path.push_str(name);
    }
    path
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// What one `get` asks for: a kind and names (none: every object of the kind).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetRequest {
    pub kind: Kind,
    pub names: Vec<String>,
}

fn unknown_kind(resource: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "the server doesn't have a resource type {resource:?} (known: {})",
        Kind::ALL.map(|k| k.plural()).join(", ")
    )
}

/// kubectl's argument forms: `TYPE[,TYPE…] [NAME…]`, or `TYPE/NAME…` (then every argument has
/// that form). Kinds keep the order they were first named in; names of one kind are grouped.
pub fn get_requests(resource: &str, names: &[String]) -> anyhow::Result<Vec<GetRequest>> {
    let mut requests: Vec<GetRequest> = Vec::new();
    if resource.contains('/') {
        for arg in std::iter::once(resource).chain(names.iter().map(String::as_str)) {
            let Some((kind, name)) = arg.split_once('/') else {
                bail!(
                    "there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'get inst/a inst/b' instead of 'get inst/a b'): {arg:?} has no TYPE/"
                );
            };
            if name.is_empty() || name.contains('/') {
                bail!("{arg:?} is not of the form TYPE/NAME");
            }
            let kind = resolve_kind(kind).ok_or_else(|| unknown_kind(kind))?;
            match requests.iter_mut().find(|r| r.kind == kind) {
                Some(request) => request.names.push(name.to_string()),
                None => requests.push(GetRequest {
                    kind,
                    names: vec![name.to_string()],
                }),
            }
        }
        return Ok(requests);
    }
    for part in resource.split(',') {
        let kind = resolve_kind(part.trim()).ok_or_else(|| unknown_kind(part))?;
        if !requests.iter().any(|r| r.kind == kind) {
            requests.push(GetRequest {
                kind,
                names: names.to_vec(),
            });
        }
    }
    Ok(requests)
}

pub fn get(args: &GetArgs, out: &mut impl Write, err: &mut impl Write) -> anyhow::Result<()> {
    let requests = get_requests(&args.resource, &args.names)?;
    let named = requests.iter().any(|r| !r.names.is_empty());
    if named && args.all_namespaces {
        bail!("a resource cannot be retrieved by name across all namespaces");
    }
    if args.watch && requests.len() != 1 {
        bail!(
            "watch is only supported on individual resources and resource collections, but {} resource types were given",
            requests.len()
        );
    }
    let template = match &args.output {
        OutputFormat::JsonPath(text) => Some(Template::parse(text)?),
        _ => None,
    };
    let client = cli_client(&args.server.server)?;
    let namespace = if args.all_namespaces {
        None
    } else {
        Some(args.namespace.as_deref().unwrap_or("default"))
    };
    let selector = args
        .selector
        .as_ref()
        .map(|s| format!("labelSelector={}", percent_encode(s)));
    let query = |extra: &[&str]| -> String {
        let params: Vec<&str> = selector
            .iter()
            .map(String::as_str)
            .chain(extra.iter().copied())
            .collect();
        if params.is_empty() {
            String::new()
        } else {
            format!("?{}", params.join("&"))
        }
    };
    if args.watch {
        return watch(
            args,
            &requests[0],
            &client,
            namespace,
            &query(&["watch=true"]),
            template.as_ref(),
            out,
        );
    }
    match &args.output {
        OutputFormat::Table | OutputFormat::Wide => {
            let wide = args.output == OutputFormat::Wide;
            let with_kind = requests.len() > 1;
            let mut printed = false;
            for request in &requests {
                let kind = request.kind;
                let include = if row_details(kind).is_some() {
                    &["includeObject=Object"][..]
                } else {
                    &[]
                };
                let tables: Vec<Value> = if request.names.is_empty() {
                    vec![client.get_json_as(
                        &(api_path(kind, namespace, None) + &query(include)),
                        TABLE_ACCEPT,
                    )?]
                } else {
                    request
                        .names
                        .iter()
                        .map(|name| {
                            client.get_json_as(
                                &(api_path(kind, namespace, Some(name)) + &query(include)),
                                TABLE_ACCEPT,
                            )
                        })
                        .collect::<Result<_, _>>()?
                };
                let mut table = TableText::default();
                for t in &tables {
                    table.add(
                        t,
                        kind,
                        &RowOptions {
                            with_namespace: args.all_namespaces && kind.namespaced(),
                            wide,
                            kind_prefix: with_kind.then(|| kind.singular()),
                        },
                    );
                }
                if table.rows.is_empty() {
                    continue;
                }
                if printed {
                    writeln!(out)?;
                }
                table.write(!args.no_headers, out)?;
                printed = true;
            }
            if !printed {
                writeln!(
                    err,
                    "{}",
                    no_resources_hint(&client, &requests, namespace, &query(&[]))
                )?;
            }
        }
        _ => {
            let mut objects = Vec::new();
            let mut lists = Vec::new();
            for request in &requests {
                if request.names.is_empty() {
                    lists.push(
                        client
                            .get_json(&(api_path(request.kind, namespace, None) + &query(&[])))?,
                    );
                } else {
                    for name in &request.names {
                        objects.push(client.get_json(&api_path(
                            request.kind,
                            namespace,
                            Some(name),
                        ))?);
                    }
                }
            }
            // One list or one object as the API answered; several as kubectl's `List`.
            let document = match (lists.len(), objects.len()) {
                (1, 0) => lists.remove(0),
                (0, 1) => objects.remove(0),
                _ => {
                    let mut items = objects;
                    for list in lists {
                        items.extend(list["items"].as_array().cloned().unwrap_or_default());
                    }
                    json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items})
                }
            };
            print_document(&document, &args.output, template.as_ref(), out)?;
            if items(&document).is_empty() && matches!(args.output, OutputFormat::Name) {
                writeln!(
                    err,
                    "{}",
                    no_resources_hint(&client, &requests, namespace, &query(&[]))
                )?;
            }
        }
    }
    Ok(())
}

/// Prints a list or object in one of the non-table formats.
fn print_document(
    document: &Value,
    output: &OutputFormat,
    template: Option<&Template>,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    match output {
        OutputFormat::Name => {
            for item in items(document) {
                let kind = item["kind"].as_str().and_then(resolve_kind);
                writeln!(
                    out,
                    "{}/{}",
                    kind.map_or("", |k| k.singular()),
                    item["metadata"]["name"].as_str().unwrap_or_default()
                )?;
            }
        }
        OutputFormat::Json => writeln!(out, "{}", serde_json::to_string_pretty(document)?)?,
        OutputFormat::Yaml => write!(out, "{}", to_yaml(document)?)?,
        OutputFormat::JsonPath(_) => {
            if let Some(template) = template {
                write!(out, "{}", template.render(document)?)?;
            }
        }
        OutputFormat::Table | OutputFormat::Wide => {}
    }
    Ok(())
}

/// `No resources found in namespace x.`, and where objects of the kinds are when they are
/// elsewhere (kubectl says only the first part).
fn no_resources_hint(
    client: &Client,
    requests: &[GetRequest],
    namespace: Option<&str>,
    query: &str,
) -> String {
    let Some(namespace) = namespace.filter(|_| requests.iter().any(|r| r.kind.namespaced())) else {
        return "No resources found".into();
    };
    let mut message = format!("No resources found in namespace {namespace}.");
    for request in requests
        .iter()
        .filter(|r| r.kind.namespaced() && r.names.is_empty())
    {
        let Ok(all) = client.get_json(&(api_path(request.kind, None, None) + query)) else {
            continue;
        };
        let namespaces: Vec<String> = items(&all)
            .iter()
            .filter_map(|o| o["metadata"]["namespace"].as_str().map(str::to_string))
            .collect();
        if let Some(hint) = elsewhere_hint(request.kind, &namespaces) {
            message.push(' ');
            message.push_str(&hint);
        }
    }
    message
}

/// "3 installations exist in namespace demo; use -n demo or -A" from the namespaces of the
/// objects found in all namespaces.
pub fn elsewhere_hint(kind: Kind, namespaces: &[String]) -> Option<String> {
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for ns in namespaces {
        *counts.entry(ns.as_str()).or_default() += 1;
    }
    let total: usize = counts.values().sum();
    let noun = |n: usize| {
        if n == 1 {
            kind.singular()
        } else {
            kind.plural()
        }
    };
    let verb = |n: usize| if n == 1 { "exists" } else { "exist" };
    match counts.len() {
        0 => None,
        1 => {
            let (ns, n) = counts.iter().next()?;
            Some(format!(
                "{n} {} {} in namespace {ns}; use -n {ns} or -A.",
                noun(*n),
                verb(*n)
            ))
        }
        _ => {
            let each: Vec<String> = counts.iter().map(|(ns, n)| format!("{ns}: {n}")).collect();
            Some(format!(
                "{total} {} {} in other namespaces ({}); use -n NAMESPACE or -A.",
                noun(total),
                verb(total),
                each.join(", ")
            ))
        }
    }
}

/// `get -w`: the current objects, then every change as it happens.
fn watch(
    args: &GetArgs,
    request: &GetRequest,
    client: &Client,
    namespace: Option<&str>,
    query: &str,
    template: Option<&Template>,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let kind = request.kind;
    let mut query = query.to_string();
    match request.names.as_slice() {
        [] => {}
        [name] => query.push_str(&format!(
            "&fieldSelector={}",
            percent_encode(&format!("metadata.name={name}"))
        )),
        _ => bail!("watch is only supported on one object or the whole collection"),
    }
    let table = matches!(args.output, OutputFormat::Table | OutputFormat::Wide);
    if table && row_details(kind).is_some() {
        query.push_str("&includeObject=Object");
    }
    let options = RowOptions {
        with_namespace: args.all_namespaces && kind.namespaced(),
        wide: args.output == OutputFormat::Wide,
        kind_prefix: None,
    };
    let mut widths: Option<Vec<usize>> = None;
    let mut columns = Value::Null;
    let accept = if table {
        TABLE_ACCEPT
    } else {
        "application/json"
    };
    let mut result = Ok(());
    client.watch(
        &(api_path(kind, namespace, None) + &query),
        accept,
        |event| {
            let object = &event["object"];
            if event["type"] == "ERROR" {
                result = Err(anyhow::anyhow!(
                    "the watch ended: {}",
                    object["message"].as_str().unwrap_or("error")
                ));
                return Ok(false);
            }
            if event["type"] == "BOOKMARK" {
                return Ok(true);
            }
            let written = if table {
                // The first event's table has the column definitions, later ones only rows.
                let mut t = object.clone();
                if t["columnDefinitions"]
                    .as_array()
                    .is_some_and(|c| !c.is_empty())
                {
                    columns = t["columnDefinitions"].clone();
                } else {
                    t["columnDefinitions"] = columns.clone();
                }
                let mut text = TableText::default();
                text.add(&t, kind, &options);
                let first = widths.is_none();
                let widths = widths.get_or_insert_with(|| {
                    // Room for names and messages that come later.
                    text.widths().into_iter().map(|w| w.max(12)).collect()
                });
                let mut lines = Vec::new();
                if first && !args.no_headers {
                    lines.push(aligned(&text.header, widths));
                }
                lines.extend(text.rows.iter().map(|r| aligned(r, widths)));
                lines
                    .iter()
                    .try_for_each(|l| writeln!(out, "{l}"))
                    .map_err(anyhow::Error::from)
            } else {
                print_document(object, &args.output, template, out)
            };
            // A reader that left (`get -w | head`) ends the watch; main stays quiet about it.
            if let Err(error) = written.and_then(|()| out.flush().map_err(anyhow::Error::from)) {
                result = Err(error);
                return Ok(false);
            }
            Ok(true)
        },
    )?;
    result
}

fn items(value: &Value) -> Vec<&Value> {
    match value.get("items").and_then(Value::as_array) {
        Some(items) => items.iter().collect(),
        None => vec![value],
    }
}

pub fn to_yaml(value: &Value) -> anyhow::Result<String> {
    serde_saphyr::to_string(value).context("rendering YAML")
}

/// How table rows are printed.
#[derive(Debug, Clone, Default)]
pub struct RowOptions {
    /// A NAMESPACE column first (`-A`).
    pub with_namespace: bool,
    /// The columns of priority above 0 too (`-o wide`).
    pub wide: bool,
    /// Names as `kind/name` (several kinds in one `get`).
    pub kind_prefix: Option<&'static str>,
}

/// A table as text cells: the header and the rows.
#[derive(Debug, Default)]
pub struct TableText {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl TableText {
    /// Adds the rows of a `meta.k8s.io/v1` Table (or, when the server answered with plain
    /// objects, their names), with the client's columns of `kind` (see [`row_details`]).
    pub fn add(&mut self, table: &Value, kind: Kind, options: &RowOptions) {
        let mut header = Vec::new();
        if options.with_namespace {
            header.push("NAMESPACE".to_string());
        }
        let details = row_details(kind);
        let name_column;
        let rows: Vec<(Vec<String>, &Value)> = if table["kind"] == "Table" {
            let columns: Vec<(usize, String)> = table["columnDefinitions"]
                .as_array()
                .map(|cols| {
                    cols.iter()
                        .enumerate()
                        .filter(|(_, c)| options.wide || c["priority"].as_i64().unwrap_or(0) == 0)
                        .map(|(i, c)| (i, c["name"].as_str().unwrap_or("").to_ascii_uppercase()))
                        .collect()
                })
                .unwrap_or_default();
            name_column = columns.iter().position(|(_, n)| n == "NAME");
            header.extend(columns.iter().map(|(_, n)| n.clone()));
            table["rows"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|row| {
                    let cells = columns
                        .iter()
                        .map(|(i, _)| cell_text(&row["cells"][*i]))
                        .collect();
                    (cells, &row["object"])
                })
                .collect()
        } else {
            name_column = Some(0);
            header.push("NAME".into());
            items(table)
                .into_iter()
                .map(|item| {
                    (
                        vec![item["metadata"]["name"].as_str().unwrap_or("").to_string()],
                        item,
                    )
                })
                .collect()
        };
        if let Some(details) = details {
            header.extend(details.header.iter().map(|h| h.to_string()));
        }
        if self.header.is_empty() {
            self.header = header;
        }
        for (mut cells, object) in rows {
            if let (Some(prefix), Some(i)) = (options.kind_prefix, name_column) {
                cells[i] = format!("{prefix}/{}", cells[i]);
            }
            if let Some(details) = details {
                cells.extend((details.cells)(object, options.wide));
            }
            if options.with_namespace {
                cells.insert(
                    0,
                    object["metadata"]["namespace"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                );
            }
            self.rows.push(cells);
        }
    }

    /// The width of each column: its widest cell (first line) or header.
    pub fn widths(&self) -> Vec<usize> {
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate() {
                if let Some(w) = widths.get_mut(i) {
                    *w = (*w).max(first_line(cell).chars().count());
                }
            }
        }
        widths
    }

    /// The header (when `headers`) and the rows, in columns three spaces apart. A cell of
    /// several lines (a template error with its code excerpt and `^` marker) keeps its first
    /// line in the row; the other lines follow below the row, indented, so the excerpt keeps
    /// its shape.
    pub fn write(&self, headers: bool, out: &mut impl Write) -> anyhow::Result<()> {
        let widths = self.widths();
        if headers {
            writeln!(out, "{}", aligned(&self.header, &widths))?;
        }
        for row in &self.rows {
            writeln!(out, "{}", aligned(row, &widths))?;
            for cell in row {
                for rest in cell.trim_end().split('\n').skip(1) {
                    writeln!(out, "{}", format!("{BLOCK_INDENT}{rest}").trim_end())?;
                }
            }
        }
        Ok(())
    }
}

fn first_line(cell: &str) -> &str {
    cell.split('\n').next().unwrap_or_default().trim_end()
}

/// One line of cells padded to `widths` (the last cell unpadded, trailing spaces trimmed),
/// each cell's first line only.
fn aligned(cells: &[String], widths: &[usize]) -> String {
    let mut s = String::new();
    for (i, cell) in cells.iter().enumerate() {
        let cell = first_line(cell);
        if i + 1 == cells.len() {
            s.push_str(cell);
        } else {
            let width = widths.get(i).copied().unwrap_or(0);
            s.push_str(&format!("{cell:<width$}   "));
        }
    }
    s.trim_end().to_string()
}

/// Columns the CLI adds to the server's table of a kind (computed from the whole object,
/// which the CLI asks for with `includeObject=Object`).
pub struct RowDetails {
    pub header: &'static [&'static str],
    /// The cells of one object; the flag is `-o wide` (messages not shortened).
    pub cells: fn(&Value, bool) -> Vec<String>,
}

/// The CLI's own columns: REASON and MESSAGE on Installations (why one is not Succeeded, as
/// flux's READY/MESSAGE columns say it).
pub fn row_details(kind: Kind) -> Option<&'static RowDetails> {
    const INSTALLATION: RowDetails = RowDetails {
        header: &["REASON", "MESSAGE"],
        cells: |object, wide| {
            let (reason, message) = not_succeeded_because(object);
            vec![
                reason,
                if wide {
                    message
                } else {
                    shorten(&message, MESSAGE_WIDTH)
                },
            ]
        },
    };
    (kind == Kind::Installation).then_some(&INSTALLATION)
}

/// The MESSAGE column is cut to this many characters (not with `-o wide`).
const MESSAGE_WIDTH: usize = 60;

/// Why an Installation is not Succeeded, as (reason, first line of the message): its
/// `lastError`, else the first condition that does not hold; nothing when it is Succeeded.
pub fn not_succeeded_because(object: &Value) -> (String, String) {
    let status = &object["status"];
    if status["phase"] == "Succeeded" {
        return (String::new(), String::new());
    }
    let first_line = |v: &Value| {
        v.as_str()
            .and_then(|m| m.lines().map(str::trim).find(|l| !l.is_empty()))
            .unwrap_or_default()
            .to_string()
    };
    let error = &status["lastError"];
    if error.is_object() {
        return (
            error["reason"].as_str().unwrap_or_default().to_string(),
            first_line(&error["message"]),
        );
    }
    let failing = status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["status"] != "True");
    match failing {
        Some(c) => (
            c["reason"].as_str().unwrap_or_default().to_string(),
            first_line(&c["message"]),
        ),
        None => (String::new(), String::new()),
    }
}

/// `text` cut to `width` characters with `…` when longer.
fn shorten(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

fn cell_text(cell: &Value) -> String {
    match cell {
        Value::Null => "<none>".into(),
        Value::String(s) if s.is_empty() => "<none>".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The indent of the lines of a multi-line cell, printed below its row.
const BLOCK_INDENT: &str = "    ";

/// Writes aligned columns. A cell of several lines (a template error with its code excerpt and
/// `^` marker) keeps its first line in the row; the other lines follow below the row as a block,
/// indented, so the excerpt keeps its shape.
fn write_columns(
    header: &[String],
    rows: &[Vec<String>],
    out: &mut impl Write,
) -> anyhow::Result<()> {
    TableText {
        header: header.to_vec(),
        rows: rows.to_vec(),
    }
    .write(true, out)
}

pub fn describe(args: &DescribeArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let kind = resolve_kind(&args.resource).with_context(|| {
        format!(
            "the server doesn't have a resource type {:?}",
            args.resource
        )
    })?;
    let client = cli_client(&args.server.server)?;
    let namespace = args.namespace.as_deref().unwrap_or("default");
    let object = client.get_json(&api_path(kind, Some(namespace), Some(&args.name)))?;
    write!(out, "{}", to_yaml(&object)?)?;
    // Who owns it: its manifest file, its controller, or the API (issue 20).
    let files = client.get_json(&api_path(Kind::ManifestFile, None, None))?;
    let files = files["items"].as_array().cloned().unwrap_or_default();
    let key = ObjectKey::new(
        kind,
        if kind.namespaced() { namespace } else { "" },
        &args.name,
    );
    let owner = crate::daemon::api::write::owner_among(&files, &key, &object);
    writeln!(out, "\nOwner: {}", owner.describe())?;
    let conditions = condition_rows(&object, jiff::Timestamp::now());
    if !conditions.is_empty() {
        writeln!(out, "\nConditions:")?;
        let header: Vec<String> = ["TYPE", "STATUS", "REASON", "MESSAGE", "AGE"]
            .map(String::from)
            .to_vec();
        write_columns(&header, &conditions, out)?;
    }
    let ns = if kind.namespaced() { namespace } else { "" };
    let history = client.get_json(&format!(
        "/appliance/v1/history?kind={}&namespace={}&name={}&limit={}",
        kind.as_str(),
        percent_encode(ns),
        percent_encode(&args.name),
        args.history
    ))?;
    writeln!(out, "\nHistory (newest first):")?;
    let entries = history["items"].as_array().cloned().unwrap_or_default();
    if entries.is_empty() {
        writeln!(out, "  <none>")?;
        return Ok(());
    }
    let header: Vec<String> = [
        "REVISION",
        "TIME",
        "CHANGE",
        "GENERATION",
        "PHASE",
        "MESSAGE",
    ]
    .map(String::from)
    .to_vec();
    let rows: Vec<Vec<String>> = entries
        .iter()
        .map(|e| {
            let phase = match (e["previousPhase"].as_str(), e["phase"].as_str()) {
                (Some(from), Some(to)) if from != to => format!("{from} -> {to}"),
                (_, Some(to)) => to.to_string(),
                _ => String::new(),
            };
            vec![
                e["revision"].to_string(),
                e["time"].as_str().unwrap_or("").into(),
                e["changeType"].as_str().unwrap_or("").into(),
                e["generation"]
                    .as_i64()
                    .map(|g| g.to_string())
                    .unwrap_or_default(),
                phase,
                history_message(e),
            ]
        })
        .collect();
    write_columns(&header, &rows, out)
}

/// A history entry's message for people: a lastError that only says the object waits
/// (`landscaper_model::shared::is_waiting`) is shown as `waiting: …`, not as an error.
fn history_message(entry: &Value) -> String {
    let message = entry["message"].as_str().unwrap_or_default();
    if entry["waiting"].as_bool() == Some(true) && !message.is_empty() {
        format!("waiting: {message}")
    } else {
        message.to_string()
    }
}

/// The rows of `status.conditions` (Installations, Executions, DeployItems alike): type,
/// status, reason, message and the age of the last transition.
pub fn condition_rows(object: &Value, now: jiff::Timestamp) -> Vec<Vec<String>> {
    let Some(list) = object["status"]["conditions"].as_array() else {
        return Vec::new();
    };
    list.iter()
        .map(|c| {
            let text = |k: &str| c[k].as_str().unwrap_or_default().to_string();
            let age = c["lastTransitionTime"]
                .as_str()
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                .map(|t| crate::daemon::api::table::human_duration(now.as_second() - t.as_second()))
                .unwrap_or_else(|| "<unknown>".into());
            vec![
                text("type"),
                text("status"),
                text("reason"),
                text("message"),
                age,
            ]
        })
        .collect()
}

/// The data folder the CLI looks in for the daemon's socket and token, and why that one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliDataDir {
    pub path: PathBuf,
    pub source: String,
}

/// `$LANDSCAPER_APPLIANCE_DATA`; else the default folder when a daemon's socket is there; else
/// the folder of a running `demo` (see [`crate::commands::demo::running_demo`]) when `server`
/// is the default or the demo's; else the default.
pub fn cli_data_dir(server: &str) -> CliDataDir {
    if let Some(path) = std::env::var_os(DATA_ENV).filter(|p| !p.is_empty()) {
        return CliDataDir {
            path: PathBuf::from(path),
            source: format!("from {DATA_ENV}"),
        };
    }
    let default = PathBuf::from(DEFAULT_DATA_DIR);
    if !default.join(crate::config::SOCKET_FILE_NAME).exists()
        && let Some(demo) = crate::commands::demo::running_demo()
        && (server == crate::cli::DEFAULT_SERVER || server == demo.server)
    {
        return CliDataDir {
            path: demo.data_dir,
            source: format!(
                "the running demo's, announced in {}",
                crate::commands::demo::runtime_file().display()
            ),
        };
    }
    CliDataDir {
        path: default,
        source: format!("the default; {DATA_ENV} is not set and no demo runs"),
    }
}

/// The API token for writes: from `token_file` when given, else the token in `env_token`, else
/// from `<data>/api-token`.
pub fn resolve_token(
    token_file: Option<&Path>,
    env_token: Option<&str>,
    data: &CliDataDir,
) -> anyhow::Result<ApiToken> {
    ApiToken::resolve(token_file, env_token, &data.path).with_context(|| match token_file {
        Some(_) => format!(
            "the API token is needed for writes: the file given with --token-file (or {TOKEN_FILE_ENV}) cannot be used; give the daemon's DATA/api-token, or the token itself in {TOKEN_ENV}"
        ),
        None => format!(
            "the API token is needed for writes: looked in the data folder {} ({}); point at the daemon's data folder with {DATA_ENV}=DIR, or give --token-file PATH or {TOKEN_ENV} (the packaged service's token is readable by root and the service user)",
            data.path.display(),
            data.source
        ),
    })
}

/// The daemon's Unix socket when it is reachable (see [`Client::for_cli`]), else `server`.
fn cli_client(server: &str) -> Result<Client, crate::commands::client::ClientError> {
    Client::for_cli(server, Some(&cli_data_dir(server).path))
}

/// A client that sends the token of `args` with its writes (over the Unix socket, none is
/// needed).
pub fn write_client(args: &WriteArgs) -> anyhow::Result<Client> {
    let data = cli_data_dir(&args.server.server);
    let client = Client::for_cli(&args.server.server, Some(&data.path))?;
    if client.is_unix() {
        return Ok(client);
    }
    let env_token = std::env::var(TOKEN_ENV).ok();
    let token = resolve_token(args.token_file.as_deref(), env_token.as_deref(), &data)?;
    Ok(client.with_token(token.expose()))
}

/// The merge patch that requests an operation.
pub fn operation_patch(operation: &str) -> Value {
    json!({"metadata": {"annotations": {OPERATION_ANNOTATION: operation}}})
}

fn request_operation(
    write: &WriteArgs,
    kind: Kind,
    name: &str,
    operation: &str,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let client = write_client(write)?;
    let namespace = write.namespace.as_deref().unwrap_or("default");
    client.patch_json(
        &api_path(kind, Some(namespace), Some(name)),
        &operation_patch(operation),
    )?;
    writeln!(
        out,
        "{} {namespace}/{name}: {operation} requested",
        kind.as_str()
    )?;
    Ok(())
}

/// `reconcile NAME`: annotates the Installation with `operation: reconcile`.
pub fn reconcile(args: &OperationArgs, out: &mut impl Write) -> anyhow::Result<()> {
    request_operation(
        &args.write,
        Kind::Installation,
        &args.name,
        OPERATION_RECONCILE,
        out,
    )
}

/// `interrupt NAME`: annotates the Installation (or Execution) with `operation: interrupt`.
pub fn interrupt(args: &InterruptArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let kind = if args.execution {
        Kind::Execution
    } else {
        Kind::Installation
    };
    request_operation(&args.write, kind, &args.name, OPERATION_INTERRUPT, out)
}

/// `delete [KIND] NAME`.
pub fn delete(args: &DeleteArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let (kind, name) = match args.args.as_slice() {
        [name] => (Kind::Installation, name.as_str()),
        [resource, name] => (
            resolve_kind(resource).with_context(|| {
                format!(
                    "the server doesn't have a resource type {resource:?} (known: {})",
                    Kind::ALL.map(|k| k.plural()).join(", ")
                )
            })?,
            name.as_str(),
        ),
        _ => bail!("delete takes KIND NAME, or NAME for an Installation"),
    };
    let client = write_client(&args.write)?;
    let namespace = args.write.namespace.as_deref().unwrap_or("default");
    let object = client.delete(&api_path(kind, Some(namespace), Some(name)))?;
    let qualified = crate::daemon::api::status::qualified_resource(kind);
    let qualified = qualified.replacen(kind.plural(), kind.singular(), 1);
    if object["metadata"]["deletionTimestamp"].is_string() {
        let finalizers: Vec<&str> = object["metadata"]["finalizers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        writeln!(
            out,
            "{qualified} \"{name}\" is being deleted (waiting for finalizers: {})",
            finalizers.join(", ")
        )?;
    } else {
        writeln!(out, "{qualified} \"{name}\" deleted")?;
    }
    Ok(())
}

/// One line of `tree`: an Installation, Execution or DeployItem and what it contains.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeNode {
    pub kind: Kind,
    pub name: String,
    pub namespace: String,
    pub phase: Option<String>,
    pub job_id: Option<String>,
    pub job_id_finished: Option<String>,
    /// `status.lastError`, when set.
    pub last_error: Option<Value>,
    /// Its workflow conditions that do not hold ([`condition_notes`]).
    pub condition_notes: Vec<String>,
    pub children: Vec<TreeNode>,
}

impl TreeNode {
    fn of(kind: Kind, object: &Value) -> TreeNode {
        let text = |pointer: &str| {
            object
                .pointer(pointer)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        TreeNode {
            kind,
            name: text("/metadata/name").unwrap_or_default(),
            namespace: text("/metadata/namespace").unwrap_or_default(),
            phase: text("/status/phase"),
            job_id: text("/status/jobID"),
            job_id_finished: text("/status/jobIDFinished"),
            last_error: object
                .pointer("/status/lastError")
                .filter(|e| e.is_object())
                .cloned(),
            condition_notes: condition_notes(object),
            children: Vec::new(),
        }
    }

    pub fn to_json(&self) -> Value {
        json!({
            "kind": self.kind.as_str(),
            "name": self.name,
            "namespace": self.namespace,
            "phase": self.phase,
            "jobID": self.job_id,
            "jobIDFinished": self.job_id_finished,
            "lastError": self.last_error,
            "conditionNotes": self.condition_notes,
            "children": self.children.iter().map(TreeNode::to_json).collect::<Vec<_>>(),
        })
    }
}

/// The object's workflow conditions (`status.conditions` of the types `ReconcilePrecondition`,
/// `ReadyPostcondition`, `DeletePostcondition`, `ActivationCondition`, alone or as
/// `<dependent>/<type>` on the owner) that do not hold, as `tree` marks them, e.g.
/// `a: skipped: precondition not met`.
pub fn condition_notes(object: &Value) -> Vec<String> {
    let Some(list) = object["status"]["conditions"].as_array() else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|c| {
            let ty = c["type"].as_str()?;
            let (dependent, kind) = match ty.rsplit_once('/') {
                Some((d, k)) => (Some(d), k),
                None => (None, ty),
            };
            let what = match (kind, c["status"].as_str()?) {
                (_, "True") => return None,
                ("ReconcilePrecondition", "False") => "skipped: precondition not met",
                ("ActivationCondition", "False") => "inactive: activation condition not met",
                ("ReadyPostcondition", "False") => "waiting: ready postcondition not met",
                ("DeletePostcondition", "False") => "waiting: delete postcondition not met",
                (
                    "ReconcilePrecondition"
                    | "ActivationCondition"
                    | "ReadyPostcondition"
                    | "DeletePostcondition",
                    _,
                ) => "condition error",
                _ => return None,
            };
            Some(match dependent {
                Some(d) => format!("{d}: {what} ({kind})"),
                None => format!("{what} ({kind})"),
            })
        })
        .collect()
}

fn uid(object: &Value) -> &str {
    object["metadata"]["uid"].as_str().unwrap_or_default()
}

fn name_of(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap_or_default()
}

fn owned_by(object: &Value, owner: &Value) -> bool {
    let owner_uid = uid(owner);
    !owner_uid.is_empty()
        && object["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|r| r["uid"].as_str() == Some(owner_uid))
}

fn label<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object["metadata"]["labels"][key].as_str()
}

/// The tree below `root` from the objects of its namespace: the Installation's Execution
/// (`status.executionRef`, else the Execution it owns) with the Execution's DeployItems
/// (label `execution.landscaper.gardener.cloud/managed-by` or owner), then its
/// subinstallations (owner, or label `landscaper.gardener.cloud/encompassed-by`), by name.
pub fn build_tree(
    root: &Value,
    installations: &[Value],
    executions: &[Value],
    deploy_items: &[Value],
) -> TreeNode {
    fn installation(
        inst: &Value,
        all: (&[Value], &[Value], &[Value]),
        seen: &mut HashSet<String>,
    ) -> TreeNode {
        let (installations, executions, deploy_items) = all;
        let mut node = TreeNode::of(Kind::Installation, inst);
        seen.insert(node.name.clone());
        let exec_ref = inst
            .pointer("/status/executionRef/name")
            .and_then(Value::as_str);
        let execution = executions
            .iter()
            .find(|e| Some(name_of(e)) == exec_ref)
            .or_else(|| executions.iter().find(|e| owned_by(e, inst)));
        if let Some(execution) = execution {
            let mut exec_node = TreeNode::of(Kind::Execution, execution);
            let mut items: Vec<&Value> = deploy_items
                .iter()
                .filter(|d| {
                    label(d, EXECUTION_MANAGED_BY_LABEL) == Some(name_of(execution))
                        || owned_by(d, execution)
                })
                .collect();
            items.sort_by_key(|d| name_of(d));
            exec_node.children = items
                .into_iter()
                .map(|d| TreeNode::of(Kind::DeployItem, d))
                .collect();
            node.children.push(exec_node);
        }
        let mut subs: Vec<&Value> = installations
            .iter()
            .filter(|s| {
                !seen.contains(name_of(s))
                    && (owned_by(s, inst) || label(s, ENCOMPASSED_BY_LABEL) == Some(&node.name))
            })
            .collect();
        subs.sort_by_key(|s| name_of(s));
        for sub in subs {
            if !seen.contains(name_of(sub)) {
                node.children.push(installation(sub, all, seen));
            }
        }
        node
    }
    installation(
        root,
        (installations, executions, deploy_items),
        &mut HashSet::new(),
    )
}

fn short(id: Option<&String>) -> &str {
    id.map(|s| s.get(..8).unwrap_or(s)).unwrap_or("-")
}

/// The tree as text: one line per object, indented like `tree`, with aligned columns.
pub fn print_tree(root: &TreeNode, out: &mut impl Write) -> anyhow::Result<()> {
    fn rows(node: &TreeNode, prefix: &str, branch: &str, lines: &mut Vec<[String; 4]>) {
        let reason = node
            .last_error
            .as_ref()
            .and_then(|e| e["reason"].as_str().filter(|r| !r.is_empty()))
            .unwrap_or("");
        // Landscaper records waiting in lastError too; it is no error.
        let error = match &node.last_error {
            Some(e) if !reason.is_empty() && is_waiting_json(e) => format!("waiting ({reason})"),
            _ => reason.to_string(),
        };
        lines.push([
            format!("{prefix}{branch}{}/{}", node.kind.as_str(), node.name),
            node.phase.clone().unwrap_or_else(|| "-".into()),
            format!(
                "{}/{}",
                short(node.job_id.as_ref()),
                short(node.job_id_finished.as_ref())
            ),
            error,
        ]);
        let child_prefix = format!(
            "{prefix}{}",
            match branch {
                "" => "",
                "└── " => "    ",
                _ => "│   ",
            }
        );
        let bar = if node.children.is_empty() {
            "    "
        } else {
            "│   "
        };
        for note in &node.condition_notes {
            lines.push([
                format!("{child_prefix}{bar}! {note}"),
                String::new(),
                String::new(),
                String::new(),
            ]);
        }
        for (i, child) in node.children.iter().enumerate() {
            let last = i + 1 == node.children.len();
            rows(
                child,
                &child_prefix,
                if last { "└── " } else { "├── " },
                lines,
            );
        }
    }
    let mut lines = vec![["NAME", "PHASE", "JOB (ID/FINISHED)", "LAST ERROR"].map(String::from)];
    rows(root, "", "", &mut lines);
    let mut widths = [0usize; 4];
    for line in &lines {
        for (w, cell) in widths.iter_mut().zip(line) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for line in &lines {
        let mut text = String::new();
        for (i, cell) in line.iter().enumerate() {
            text.push_str(cell);
            if i + 1 < line.len() {
                let pad = widths[i] - cell.chars().count() + 3;
                text.extend(std::iter::repeat_n(' ', pad));
            }
        }
        writeln!(out, "{}", text.trim_end())?;
    }
    Ok(())
}

/// `tree NAME`.
pub fn tree(args: &TreeArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let client = cli_client(&args.server.server)?;
    let namespace = args.namespace.as_deref().unwrap_or("default");
    let root = client.get_json(&api_path(
        Kind::Installation,
        Some(namespace),
        Some(&args.name),
    ))?;
    let list = |kind: Kind| -> anyhow::Result<Vec<Value>> {
        let value = client.get_json(&api_path(kind, Some(namespace), None))?;
        Ok(value["items"].as_array().cloned().unwrap_or_default())
    };
    let tree = build_tree(
        &root,
        &list(Kind::Installation)?,
        &list(Kind::Execution)?,
        &list(Kind::DeployItem)?,
    );
    match args.output {
        TreeOutputFormat::Text => print_tree(&tree, out),
        TreeOutputFormat::Json => {
            writeln!(out, "{}", serde_json::to_string_pretty(&tree.to_json())?)?;
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_marks_conditions_that_do_not_hold() {
        let o = json!({"status": {"conditions": [
            {"type": "a/ReconcilePrecondition", "status": "False"},
            {"type": "d/ReconcilePrecondition", "status": "True"},
            {"type": "ActivationCondition", "status": "False"},
            {"type": "m/ReadyPostcondition", "status": "Unknown"},
            {"type": "Other", "status": "False"}
        ]}});
        assert_eq!(
            condition_notes(&o),
            [
                "a: skipped: precondition not met (ReconcilePrecondition)",
                "inactive: activation condition not met (ActivationCondition)",
                "m: condition error (ReadyPostcondition)",
            ]
        );
        let node = TreeNode::of(Kind::Installation, &o);
        let mut out = Vec::new();
        print_tree(&node, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("    ! a: skipped: precondition not met"),
            "{text}"
        );
    }

    #[test]
    fn condition_rows_show_type_status_reason_message_and_age() {
        let o = json!({"status": {"conditions": [{
            "type": "a/ReconcilePrecondition", "status": "False",
            "lastTransitionTime": "2026-01-01T00:00:00Z", "lastUpdateTime": "2026-01-01T00:00:00Z",
            "reason": "ConditionNotMet", "message": "reconcilePrecondition \"imports.flag\" is false"
        }, {"type": "x", "status": "Unknown", "reason": "ConditionError", "message": "m"}]}});
        let now: jiff::Timestamp = "2026-01-01T00:01:30Z".parse().unwrap();
        let rows = condition_rows(&o, now);
        assert_eq!(
            rows[0],
            [
                "a/ReconcilePrecondition",
                "False",
                "ConditionNotMet",
                "reconcilePrecondition \"imports.flag\" is false",
                "90s"
            ]
        );
        assert_eq!(rows[1][4], "<unknown>");
        assert!(condition_rows(&json!({"status": {}}), now).is_empty());
    }

    #[test]
    fn resolves_every_spelling_of_a_kind() {
        for spelling in [
            "inst",
            "installation",
            "installations",
            "Installation",
            "installations.landscaper.gardener.cloud",
        ] {
            assert_eq!(
                resolve_kind(spelling),
                Some(Kind::Installation),
                "{spelling}"
            );
        }
        assert_eq!(resolve_kind("cm"), Some(Kind::ConfigMap));
        assert_eq!(resolve_kind("manifestfiles"), Some(Kind::ManifestFile));
        assert_eq!(resolve_kind("pods"), None);
        assert_eq!(resolve_kind("installations.example.com"), None);
    }

    #[test]
    fn builds_kubernetes_paths() {
        assert_eq!(
            api_path(Kind::Installation, Some("ns"), Some("a")),
            "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/ns/installations/a"
        );
        assert_eq!(api_path(Kind::Secret, None, None), "/api/v1/secrets");
        assert_eq!(
            api_path(Kind::ManifestFile, Some("ignored"), None),
            "/apis/appliance.landscaper-appliance.io/v1alpha1/manifestfiles"
        );
    }

    fn table_text(table: &Value, kind: Kind, options: &RowOptions, headers: bool) -> String {
        let mut text = TableText::default();
        text.add(table, kind, options);
        let mut out = Vec::new();
        text.write(headers, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn prints_tables_like_kubectl() {
        let table = json!({"kind": "Table", "columnDefinitions": [
            {"name": "Name", "priority": 0}, {"name": "Phase", "priority": 0}, {"name": "Hidden", "priority": 1}],
            "rows": [{"cells": ["root-1", "Succeeded", "x"], "object": {"metadata": {"namespace": "ns"}}},
                     {"cells": ["r2", null, "y"], "object": {"metadata": {"namespace": "other"}}}]});
        let all = RowOptions {
            with_namespace: true,
            ..RowOptions::default()
        };
        assert_eq!(
            table_text(&table, Kind::Execution, &all, true),
            "NAMESPACE   NAME     PHASE\nns          root-1   Succeeded\nother       r2       <none>\n"
        );
        // -o wide: the columns of higher priority too; --no-headers; names with their kind.
        let wide = RowOptions {
            wide: true,
            kind_prefix: Some("execution"),
            ..RowOptions::default()
        };
        assert_eq!(
            table_text(&table, Kind::Execution, &wide, false),
            "execution/root-1   Succeeded   x\nexecution/r2       <none>      y\n"
        );
        let mut empty = TableText::default();
        empty.add(
            &json!({"kind": "Table", "columnDefinitions": [], "rows": []}),
            Kind::Execution,
            &RowOptions::default(),
        );
        assert!(empty.rows.is_empty());
    }

    #[test]
    fn installations_show_why_they_are_not_succeeded() {
        let table = json!({"kind": "Table", "columnDefinitions": [{"name": "Name", "priority": 0}],
        "rows": [
            {"cells": ["ok"], "object": {"status": {"phase": "Succeeded", "lastError": {"reason": "Old", "message": "gone"}}}},
            {"cells": ["bad"], "object": {"status": {"phase": "Failed", "lastError": {"reason": "ImportsSatisfied",
                "message": "\nimport \"a\" is not satisfied: the DataObject a does not exist in namespace ns and nothing exports it\n  more"}}}},
            {"cells": ["cond"], "object": {"status": {"phase": "Progressing", "conditions": [
                {"type": "x", "status": "True", "reason": "Fine"},
                {"type": "y", "status": "False", "reason": "ConditionNotMet", "message": "reconcilePrecondition is false"}]}}}
        ]});
        let text = table_text(&table, Kind::Installation, &RowOptions::default(), true);
        assert_eq!(
            text,
            "NAME   REASON             MESSAGE\n\
             ok\n\
             bad    ImportsSatisfied   import \"a\" is not satisfied: the DataObject a does not exis…\n\
             cond   ConditionNotMet    reconcilePrecondition is false\n"
        );
        let wide = table_text(
            &table,
            Kind::Installation,
            &RowOptions {
                wide: true,
                ..RowOptions::default()
            },
            false,
        );
        assert!(
            wide.contains("in namespace ns and nothing exports it\n"),
            "{wide}"
        );
        // Other kinds get no extra columns.
        assert!(row_details(Kind::Execution).is_none());
    }

    #[test]
    fn reads_kubectl_argument_forms() {
        let req = |kind, names: &[&str]| GetRequest {
            kind,
            names: names.iter().map(|n| n.to_string()).collect(),
        };
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            get_requests("inst", &[]).unwrap(),
            [req(Kind::Installation, &[])]
        );
        assert_eq!(
            get_requests("inst,di,installations", &names(&["a"])).unwrap(),
            [
                req(Kind::Installation, &["a"]),
                req(Kind::DeployItem, &["a"])
            ]
        );
        assert_eq!(
            get_requests("inst/a", &names(&["di/x", "installation/b"])).unwrap(),
            [
                req(Kind::Installation, &["a", "b"]),
                req(Kind::DeployItem, &["x"])
            ]
        );
        let mixed = get_requests("inst/a", &names(&["b"]))
            .unwrap_err()
            .to_string();
        assert!(mixed.contains("resource/name form"), "{mixed}");
        assert!(get_requests("inst/", &[]).is_err());
        assert!(
            get_requests("inst,pods", &[])
                .unwrap_err()
                .to_string()
                .contains("\"pods\"")
        );
    }

    #[test]
    fn hints_where_objects_of_a_kind_are() {
        let ns = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(elsewhere_hint(Kind::Installation, &[]), None);
        assert_eq!(
            elsewhere_hint(Kind::Installation, &ns(&["demo", "demo", "demo"])).as_deref(),
            Some("3 installations exist in namespace demo; use -n demo or -A.")
        );
        assert_eq!(
            elsewhere_hint(Kind::Target, &ns(&["demo"])).as_deref(),
            Some("1 target exists in namespace demo; use -n demo or -A.")
        );
        assert_eq!(
            elsewhere_hint(Kind::Installation, &ns(&["b", "a", "b"])).as_deref(),
            Some("3 installations exist in other namespaces (a: 1, b: 2); use -n NAMESPACE or -A.")
        );
    }

    #[test]
    fn builds_and_prints_installation_trees() {
        let root = json!({"metadata": {"name": "root", "namespace": "ns", "uid": "u-root"},
            "status": {"phase": "Progressing", "executionRef": {"name": "root-exec", "namespace": "ns"},
                "jobID": "0123456789abcdef", "jobIDFinished": "fedcba9876543210"}});
        let sub_a = json!({"metadata": {"name": "sub-a", "namespace": "ns", "uid": "u-a",
                "ownerReferences": [{"kind": "Installation", "name": "root", "uid": "u-root"}]},
            "status": {"phase": "Failed", "jobID": "aaaaaaaaaaaa",
                "lastError": {"reason": "ImportsFailed", "message": "m"}}});
        let sub_b = json!({"metadata": {"name": "sub-b", "namespace": "ns", "uid": "u-b",
                "labels": {ENCOMPASSED_BY_LABEL: "root"}}});
        let other = json!({"metadata": {"name": "other", "namespace": "ns", "uid": "u-o"}});
        let exec = json!({"metadata": {"name": "root-exec", "namespace": "ns", "uid": "u-e"},
            "status": {"phase": "Succeeded", "jobID": "12345678xyz", "jobIDFinished": "12345678xyz"}});
        let exec_a = json!({"metadata": {"name": "sub-a", "namespace": "ns", "uid": "u-ea",
            "ownerReferences": [{"uid": "u-a"}]}});
        let di = json!({"metadata": {"name": "di-1", "namespace": "ns",
                "labels": {EXECUTION_MANAGED_BY_LABEL: "root-exec"}},
            "status": {"phase": "Succeeded", "jobID": "12345678xyz", "jobIDFinished": "12345678xyz"}});
        let di_a = json!({"metadata": {"name": "di-a", "namespace": "ns",
            "ownerReferences": [{"uid": "u-ea"}]}});
        let tree = build_tree(
            &root,
            &[root.clone(), sub_b, other, sub_a],
            &[exec, exec_a],
            &[di_a, di],
        );
        let mut out = Vec::new();
        print_tree(&tree, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "\
NAME                          PHASE         JOB (ID/FINISHED)   LAST ERROR
Installation/root             Progressing   01234567/fedcba98
├── Execution/root-exec       Succeeded     12345678/12345678
│   └── DeployItem/di-1       Succeeded     12345678/12345678
├── Installation/sub-a        Failed        aaaaaaaa/-          ImportsFailed
│   └── Execution/sub-a       -             -/-
│       └── DeployItem/di-a   -             -/-
└── Installation/sub-b        -             -/-
"
        );
        let json = tree.to_json();
        assert_eq!(json["children"][1]["lastError"]["reason"], "ImportsFailed");
        assert_eq!(json["children"][0]["children"][0]["kind"], "DeployItem");
        assert_eq!(json["jobID"], "0123456789abcdef");
    }

    #[test]
    fn finds_the_token() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tok");
        std::fs::write(&file, "from-file\n").unwrap();
        std::fs::write(
            dir.path().join(crate::daemon::api::token::TOKEN_FILE_NAME),
            "from-data\n",
        )
        .unwrap();
        let data = CliDataDir {
            path: dir.path().to_path_buf(),
            source: "from a test".into(),
        };
        let token = |f: Option<&Path>, env: Option<&str>| {
            resolve_token(f, env, &data)
                .map(|t| t.expose().to_string())
                .map_err(|e| format!("{e:#}"))
        };
        assert_eq!(token(Some(&file), Some("env")).unwrap(), "from-file");
        assert_eq!(token(None, Some("env")).unwrap(), "env");
        assert_eq!(token(None, None).unwrap(), "from-data");
        assert_eq!(token(None, Some(" ")).unwrap(), "from-data");
        let missing = token(Some(&dir.path().join("nope")), None).unwrap_err();
        assert!(
            missing.contains("--token-file") && missing.contains(TOKEN_ENV),
            "{missing}"
        );
        std::fs::remove_file(dir.path().join(crate::daemon::api::token::TOKEN_FILE_NAME)).unwrap();
        let missing = token(None, None).unwrap_err();
        assert!(
            missing.contains(&format!(
                "looked in the data folder {} (from a test)",
                dir.path().display()
            )) && missing.contains(DATA_ENV)
                && missing.contains(TOKEN_ENV),
            "{missing}"
        );
    }

    #[test]
    fn operations_are_annotation_patches() {
        assert_eq!(
            operation_patch("reconcile"),
            json!({"metadata": {"annotations": {"landscaper.gardener.cloud/operation": "reconcile"}}})
        );
    }

    #[test]
    fn encodes_selectors_for_urls() {
        assert_eq!(percent_encode("a=b,c in (x)"), "a%3Db%2Cc%20in%20%28x%29");
    }
}
