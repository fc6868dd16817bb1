//! The CLI's client commands (`get`, `describe`, `tree`; the writes `reconcile`, `interrupt`,
//! `delete`) and their output formats.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use landscaper_store::Kind;
use landscaper_store::model::constants::{
    ENCOMPASSED_BY_LABEL, EXECUTION_MANAGED_BY_LABEL, OPERATION_ANNOTATION, OPERATION_INTERRUPT,
    OPERATION_RECONCILE,
};
use landscaper_store::model::shared::is_waiting_json;
use serde_json::{Value, json};

use crate::cli::{
    DeleteArgs, DescribeArgs, GetArgs, InterruptArgs, OperationArgs, OutputFormat, TreeArgs,
    TreeOutputFormat, WriteArgs,
};
use crate::commands::client::Client;
use crate::config::DEFAULT_DATA_DIR;
use crate::daemon::api::ApiToken;

/// Environment variable holding the API token itself.
pub use crate::daemon::api::token::TOKEN_ENV;
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

pub fn get(args: &GetArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let kind = resolve_kind(&args.resource).with_context(|| {
        format!(
            "the server doesn't have a resource type {:?} (known: {})",
            args.resource,
            Kind::ALL.map(|k| k.plural()).join(", ")
        )
    })?;
    if args.name.is_some() && args.all_namespaces {
        bail!("a resource cannot be retrieved by name across all namespaces");
    }
    let client = cli_client(&args.server.server)?;
    let namespace = if args.all_namespaces {
        None
    } else {
        Some(args.namespace.as_deref().unwrap_or("default"))
    };
    let mut path = api_path(kind, namespace, args.name.as_deref());
    if let Some(selector) = &args.selector {
        path.push_str(&format!("?labelSelector={}", percent_encode(selector)));
    }
    match args.output {
        OutputFormat::Table => {
            let table = client.get_json_as(&path, TABLE_ACCEPT)?;
            print_table(&table, args.all_namespaces && kind.namespaced(), out)?;
        }
        OutputFormat::Name => {
            let value = client.get_json(&path)?;
            for item in items(&value) {
                writeln!(
                    out,
                    "{}/{}",
                    kind.singular(),
                    item["metadata"]["name"].as_str().unwrap_or_default()
                )?;
            }
        }
        OutputFormat::Json => {
            let value = client.get_json(&path)?;
            writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
        }
        OutputFormat::Yaml => {
            let value = client.get_json(&path)?;
            write!(out, "{}", to_yaml(&value)?)?;
        }
    }
    Ok(())
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

/// Prints a `meta.k8s.io/v1` Table like kubectl does; falls back to names and ages when the
/// server answered with plain objects.
pub fn print_table(
    table: &Value,
    with_namespace: bool,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let mut header: Vec<String> = Vec::new();
    let mut rows: Vec<Vec<String>> = Vec::new();
    if table["kind"] == "Table" {
        let columns: Vec<(usize, String)> = table["columnDefinitions"]
            .as_array()
            .map(|cols| {
                cols.iter()
                    .enumerate()
                    .filter(|(_, c)| c["priority"].as_i64().unwrap_or(0) == 0)
                    .map(|(i, c)| (i, c["name"].as_str().unwrap_or("").to_ascii_uppercase()))
                    .collect()
            })
            .unwrap_or_default();
        if with_namespace {
            header.push("NAMESPACE".into());
        }
        header.extend(columns.iter().map(|(_, n)| n.clone()));
        for row in table["rows"].as_array().into_iter().flatten() {
            let mut cells = Vec::new();
            if with_namespace {
                cells.push(
                    row["object"]["metadata"]["namespace"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                );
            }
            for (i, _) in &columns {
                cells.push(cell_text(&row["cells"][*i]));
            }
            rows.push(cells);
        }
    } else {
        if with_namespace {
            header.push("NAMESPACE".into());
        }
        header.push("NAME".into());
        for item in items(table) {
            let mut cells = Vec::new();
            if with_namespace {
                cells.push(item["metadata"]["namespace"].as_str().unwrap_or("").into());
            }
            cells.push(item["metadata"]["name"].as_str().unwrap_or("").into());
            rows.push(cells);
        }
    }
    if rows.is_empty() {
        writeln!(out, "No resources found.")?;
        return Ok(());
    }
    write_columns(&header, &rows, out)
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
    let first_line = |cell: &str| {
        cell.split('\n')
            .next()
            .unwrap_or_default()
            .trim_end()
            .to_string()
    };
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(first_line(cell).chars().count());
            }
        }
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let cell = first_line(cell);
            if i + 1 == cells.len() {
                s.push_str(&cell);
            } else {
                s.push_str(&format!("{cell:<width$}   ", width = widths[i]));
            }
        }
        s.trim_end().to_string()
    };
    writeln!(out, "{}", line(header))?;
    for row in rows {
        writeln!(out, "{}", line(row))?;
        for cell in row {
            for rest in cell.trim_end().split('\n').skip(1) {
                writeln!(out, "{}", format!("{BLOCK_INDENT}{rest}").trim_end())?;
            }
        }
    }
    Ok(())
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

/// The API token for writes: from `token_file` when given, else the token in `env_token`, else
/// from `<data>/api-token` (`data` defaulting to /var/lib/landscaper-appliance).
pub fn resolve_token(
    token_file: Option<&Path>,
    env_token: Option<&str>,
    data_dir: Option<&Path>,
) -> anyhow::Result<ApiToken> {
    let data = data_dir
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR));
    ApiToken::resolve(token_file, env_token, &data).with_context(|| {
        format!(
            "the API token is needed for writes (run as root or the service user, or set {TOKEN_ENV} or --token-file)"
        )
    })
}

/// The daemon's Unix socket when it is reachable (see [`Client::for_cli`]), else `server`.
fn cli_client(server: &str) -> Result<Client, crate::commands::client::ClientError> {
    let data_dir = std::env::var_os(DATA_ENV).map(PathBuf::from);
    Client::for_cli(server, data_dir.as_deref())
}

/// A client that sends the token of `args` with its writes (over the Unix socket, none is
/// needed).
pub fn write_client(args: &WriteArgs) -> anyhow::Result<Client> {
    let client = cli_client(&args.server.server)?;
    if client.is_unix() {
        return Ok(client);
    }
    let env_token = std::env::var(TOKEN_ENV).ok();
    let data_dir = std::env::var_os(DATA_ENV).map(PathBuf::from);
    let token = resolve_token(
        args.token_file.as_deref(),
        env_token.as_deref(),
        data_dir.as_deref(),
    )?;
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

    #[test]
    fn prints_tables_like_kubectl() {
        let table = json!({"kind": "Table", "columnDefinitions": [
            {"name": "Name", "priority": 0}, {"name": "Phase", "priority": 0}, {"name": "Hidden", "priority": 1}],
            "rows": [{"cells": ["root-1", "Succeeded", "x"], "object": {"metadata": {"namespace": "ns"}}},
                     {"cells": ["r2", null, "y"], "object": {"metadata": {"namespace": "other"}}}]});
        let mut out = Vec::new();
        print_table(&table, true, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "NAMESPACE   NAME     PHASE\nns          root-1   Succeeded\nother       r2       <none>\n"
        );
        let mut out = Vec::new();
        print_table(
            &json!({"kind": "Table", "columnDefinitions": [], "rows": []}),
            false,
            &mut out,
        )
        .unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "No resources found.\n");
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
        let token = |f: Option<&Path>, env: Option<&str>| {
            resolve_token(f, env, Some(dir.path()))
                .map(|t| t.expose().to_string())
                .map_err(|e| format!("{e:#}"))
        };
        assert_eq!(token(Some(&file), Some("env")).unwrap(), "from-file");
        assert_eq!(token(None, Some("env")).unwrap(), "env");
        assert_eq!(token(None, None).unwrap(), "from-data");
        assert_eq!(token(None, Some(" ")).unwrap(), "from-data");
        let missing = token(Some(&dir.path().join("nope")), None).unwrap_err();
        assert!(missing.contains(TOKEN_ENV), "{missing}");
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
