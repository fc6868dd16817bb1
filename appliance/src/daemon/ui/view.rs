//! What the status page shows, computed from the stored objects without I/O: phase counts,
//! running jobs with progress, failed objects, manifest files with their errors, transport
//! archives with what they hold, and the
//! installation tree (subinstallations, execution, deploy items).

use std::collections::{BTreeMap, HashMap};

use landscaper_store::model::constants::{
    ENCOMPASSED_BY_LABEL, EXECUTION_DEPENDS_ON_ANNOTATION, EXECUTION_MANAGED_NAME_LABEL,
};
use landscaper_store::object;
use serde::Serialize;
use serde_json::Value;

use crate::daemon::controllers::jobs::is_final_text;
use landscaper_store::object::str_at;

/// The objects the overview is computed from (one consistent read).
#[derive(Debug, Default, Clone)]
pub struct Snapshot {
    pub installations: Vec<Value>,
    pub executions: Vec<Value>,
    pub deploy_items: Vec<Value>,
    pub files: Vec<Value>,
    /// `TransportArchive` objects.
    pub archives: Vec<Value>,
    pub revision: u64,
}

/// One object in a list or the tree.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Row {
    pub kind: &'static str,
    pub namespace: String,
    pub name: String,
    /// `status.phase`, or `-` before the first reconcile.
    pub phase: String,
    /// CSS class for the phase: ok, bad, busy or idle (the phase text is always shown too).
    pub tone: &'static str,
    pub job_id: String,
    /// Whether `jobID` differs from `jobIDFinished`.
    pub running: bool,
    /// The last error's first line (`reason: message`).
    pub last_error: Option<String>,
    /// The rest of a multi-line last error (a template's code excerpt with its `^` marker),
    /// shown as a preformatted block.
    pub last_error_block: Option<String>,
    /// The last error only says the object waits (`JobIDFinished: … is not finished yet`):
    /// shown as waiting, not as an error.
    pub waiting: bool,
    /// `status.phaseTransitionTime` or `lastReconcileTime`, else creation time.
    pub since: String,
    /// Deploy items: `spec.type`.
    pub detail: Option<String>,
    /// `kind/namespace/name`: the element id the live updates use.
    pub key: String,
    /// `status.conditions` (workflow conditions of issue 19), in their order.
    pub conditions: Vec<ConditionView>,
    /// Deploy items: the name in the Execution (`execution.landscaper.gardener.cloud/name`).
    pub template: Option<String>,
    /// Deploy items: the names they depend on (`execution.landscaper.gardener.cloud/dependsOn`).
    pub depends_on: Vec<String>,
    /// `status.transitionTimes.triggerTime` (else `initTime`): when the current job reached it.
    pub started: Option<String>,
    /// `status.transitionTimes.finishedTime`.
    pub finished: Option<String>,
}

/// One entry of `status.conditions`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ConditionView {
    pub r#type: String,
    pub status: String,
    /// `ok` for `True`, `bad` for `False`/`Unknown`.
    pub tone: &'static str,
    pub reason: String,
    pub message: String,
    pub since: String,
}

/// The object's `status.conditions`.
pub fn conditions(o: &Value) -> Vec<ConditionView> {
    o["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let status = str_at(c, "/status").to_string();
            ConditionView {
                r#type: str_at(c, "/type").to_string(),
                tone: if status == "True" { "ok" } else { "bad" },
                status,
                reason: str_at(c, "/reason").to_string(),
                message: str_at(c, "/message").to_string(),
                since: str_at(c, "/lastTransitionTime").to_string(),
            }
        })
        .collect()
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ExecutionNode {
    pub row: Row,
    pub items: Vec<Row>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct InstallationNode {
    pub row: Row,
    pub execution: Option<ExecutionNode>,
    pub children: Vec<InstallationNode>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PhaseCount {
    pub phase: String,
    pub tone: &'static str,
    pub count: usize,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct KindCounts {
    pub kind: &'static str,
    pub total: usize,
    pub phases: Vec<PhaseCount>,
}

/// An installation whose job is running, with the share of its subobjects that finished.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RunningJob {
    pub row: Row,
    pub finished: usize,
    pub total: usize,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FileRow {
    pub path: String,
    pub phase: String,
    pub tone: &'static str,
    /// `document N, line L: field: message`.
    pub error: Option<String>,
    pub warnings: Vec<String>,
    pub objects: usize,
}

/// One transport archive of the manifests folder (issue 18).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ArchiveRow {
    pub path: String,
    pub phase: String,
    pub tone: &'static str,
    /// `CommonTransportFormat tgz, 1234 bytes`.
    pub detail: String,
    /// `name:version (N resources)`.
    pub components: Vec<String>,
    pub error: Option<String>,
}

fn archive_row(a: &Value) -> ArchiveRow {
    let status = &a["status"];
    let phase = str_at(status, "/phase");
    let mut detail: Vec<String> = ["/type", "/format"]
        .into_iter()
        .map(|p| str_at(status, p))
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    if let Some(size) = status["size"].as_u64() {
        detail.push(format!("{size} bytes"));
    }
    ArchiveRow {
        path: str_at(a, "/spec/path").to_string(),
        phase: if phase.is_empty() { "-" } else { phase }.to_string(),
        tone: match phase {
            "Ready" => "ok",
            "Failed" => "bad",
            _ => "idle",
        },
        detail: detail.join(" "),
        components: status["componentVersions"]
            .as_array()
            .map(|cvs| {
                cvs.iter()
                    .map(|cv| {
                        format!(
                            "{}:{} ({} resources)",
                            str_at(cv, "/name"),
                            str_at(cv, "/version"),
                            cv["resources"].as_u64().unwrap_or(0)
                        )
                    })
                    .collect()
            })
            .unwrap_or_default(),
        error: status["lastError"].as_str().map(str::to_string),
    }
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Overview {
    pub counts: Vec<KindCounts>,
    pub running: Vec<RunningJob>,
    /// Each failure once, at its root cause (an object that failed while nothing below it
    /// did), with the path from its root installation.
    pub causes: Vec<Cause>,
    pub files: Vec<FileRow>,
    pub archives: Vec<ArchiveRow>,
    pub roots: Vec<InstallationNode>,
    pub revision: u64,
    /// Failures outside the tree (computed with the tree).
    #[serde(skip)]
    pub orphans: Vec<Cause>,
}

/// The tone of a phase: `ok` (Succeeded), `bad` (Failed, DeleteFailed), `idle` (none) or
/// `busy` (any other, i.e. a job at work).
pub fn tone(phase: &str) -> &'static str {
    match phase {
        "Succeeded" | "Applied" => "ok",
        "Failed" | "DeleteFailed" | "Error" => "bad",
        "" | "-" | "Skipped" => "idle",
        _ => "busy",
    }
}

/// A message's first line and the rest, when there is more (a template error's code excerpt
/// with its `^` marker), to be shown as a block that keeps its lines and columns.
pub fn split_block(message: &str) -> (String, Option<String>) {
    let message = message.trim_end();
    match message.split_once('\n') {
        Some((line, rest)) => (line.to_string(), Some(rest.to_string())),
        None => (message.to_string(), None),
    }
}

pub fn row(kind: &'static str, o: &Value) -> Row {
    let status = &o["status"];
    let phase = str_at(status, "/phase");
    let job_id = str_at(status, "/jobID").to_string();
    let running = !job_id.is_empty() && job_id != str_at(status, "/jobIDFinished");
    let last_error = status.get("lastError").filter(|e| !e.is_null()).map(|e| {
        let reason = str_at(e, "/reason");
        let message = str_at(e, "/message");
        if reason.is_empty() {
            message.to_string()
        } else {
            format!("{reason}: {message}")
        }
    });
    let (last_error, last_error_block) = match last_error {
        Some(text) => {
            let (line, block) = split_block(&text);
            (Some(line), block)
        }
        None => (None, None),
    };
    let waiting = status
        .get("lastError")
        .is_some_and(landscaper_store::model::shared::is_waiting_json);
    let since = [
        "/phaseTransitionTime",
        "/lastReconcileTime",
        "/transitionTimes/finishedTime",
    ]
    .iter()
    .map(|p| str_at(status, p))
    .find(|s| !s.is_empty())
    .unwrap_or_else(|| str_at(o, "/metadata/creationTimestamp"))
    .to_string();
    let (namespace, name) = (
        object::namespace(o).to_string(),
        object::name(o).to_string(),
    );
    Row {
        kind,
        key: format!("{kind}/{namespace}/{name}"),
        namespace,
        name,
        phase: if phase.is_empty() { "-" } else { phase }.to_string(),
        tone: tone(phase),
        job_id,
        running,
        last_error,
        last_error_block,
        waiting,
        since,
        detail: (kind == "DeployItem")
            .then(|| str_at(o, "/spec/type").to_string())
            .filter(|t| !t.is_empty()),
        conditions: conditions(o),
        template: (kind == "DeployItem")
            .then(|| meta_str(o, "labels", EXECUTION_MANAGED_NAME_LABEL))
            .flatten()
            .map(str::to_string),
        depends_on: meta_str(o, "annotations", EXECUTION_DEPENDS_ON_ANNOTATION)
            .map(|d| {
                d.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        started: ["/transitionTimes/triggerTime", "/transitionTimes/initTime"]
            .iter()
            .map(|p| str_at(status, p))
            .find(|s| !s.is_empty())
            .map(str::to_string),
        finished: Some(str_at(status, "/transitionTimes/finishedTime"))
            .filter(|s| !s.is_empty())
            .map(str::to_string),
    }
}

/// `metadata.<map>.<key>` without building the map.
fn meta_str<'a>(o: &'a Value, map: &str, key: &str) -> Option<&'a str> {
    o.get("metadata")?.get(map)?.get(key)?.as_str()
}

/// The name of the owner of `kind` in the object's ownerReferences.
pub fn owner(o: &Value, kind: &str) -> Option<String> {
    o.pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r["kind"] == kind)
        .and_then(|r| r["name"].as_str())
        .map(str::to_string)
}

pub fn parent(o: &Value) -> Option<&str> {
    o.pointer("/metadata/labels")
        .and_then(|l| l.get(ENCOMPASSED_BY_LABEL))
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
}

fn counts(kind: &'static str, objects: &[Value]) -> KindCounts {
    let mut by_phase: BTreeMap<&str, usize> = BTreeMap::new();
    for o in objects {
        let p = str_at(o, "/status/phase");
        *by_phase
            .entry(if p.is_empty() { "-" } else { p })
            .or_default() += 1;
    }
    KindCounts {
        kind,
        total: objects.len(),
        phases: by_phase
            .into_iter()
            .map(|(phase, count)| PhaseCount {
                tone: tone(phase),
                phase: phase.to_string(),
                count,
            })
            .collect(),
    }
}

fn file_row(f: &Value) -> FileRow {
    let status = &f["status"];
    let error = status.get("lastError").filter(|e| !e.is_null()).map(|e| {
        let mut place = Vec::new();
        if let Some(d) = e["document"].as_u64() {
            place.push(format!("document {d}"));
        }
        if let Some(l) = e["line"].as_u64() {
            match e["column"].as_u64() {
                Some(c) => place.push(format!("line {l}, column {c}")),
                None => place.push(format!("line {l}")),
            }
        }
        if let Some(field) = e["field"].as_str() {
            place.push(field.to_string());
        }
        let message = str_at(e, "/message");
        if place.is_empty() {
            message.to_string()
        } else {
            format!("{}: {message}", place.join(", "))
        }
    });
    let phase = str_at(status, "/phase");
    FileRow {
        path: str_at(f, "/spec/path").to_string(),
        phase: if phase.is_empty() { "-" } else { phase }.to_string(),
        tone: tone(phase),
        error,
        warnings: status["warnings"]
            .as_array()
            .map(|w| {
                w.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        objects: status["objects"].as_array().map(Vec::len).unwrap_or(0),
    }
}

/// Builds the overview. Failed objects and files with errors come first; the tree and the
/// lists are sorted by namespace and name.
pub fn overview(snapshot: &Snapshot) -> Overview {
    // (namespace, owner name) -> children
    let mut items_by_execution: HashMap<(String, String), Vec<Row>> = HashMap::new();
    for di in &snapshot.deploy_items {
        if let Some(exec) = owner(di, "Execution") {
            items_by_execution
                .entry((object::namespace(di).to_string(), exec))
                .or_default()
                .push(row("DeployItem", di));
        }
    }
    let mut execution_of: HashMap<(String, String), ExecutionNode> = HashMap::new();
    for ex in &snapshot.executions {
        let ns = object::namespace(ex).to_string();
        let mut items = items_by_execution
            .remove(&(ns.clone(), object::name(ex).to_string()))
            .unwrap_or_default();
        items.sort_by(|a, b| a.name.cmp(&b.name));
        if let Some(inst) = owner(ex, "Installation") {
            execution_of.insert(
                (ns, inst),
                ExecutionNode {
                    row: row("Execution", ex),
                    items,
                },
            );
        }
    }
    let mut children_of: HashMap<(String, String), Vec<&Value>> = HashMap::new();
    let mut roots = Vec::new();
    for inst in &snapshot.installations {
        match parent(inst) {
            Some(p) => children_of
                .entry((object::namespace(inst).to_string(), p.to_string()))
                .or_default()
                .push(inst),
            None => roots.push(inst),
        }
    }
    fn node(
        inst: &Value,
        children_of: &HashMap<(String, String), Vec<&Value>>,
        execution_of: &mut HashMap<(String, String), ExecutionNode>,
        depth: usize,
    ) -> InstallationNode {
        let key = (
            object::namespace(inst).to_string(),
            object::name(inst).to_string(),
        );
        let mut children: Vec<InstallationNode> = if depth < 32 {
            children_of
                .get(&key)
                .map(|c| {
                    c.iter()
                        .map(|c| node(c, children_of, execution_of, depth + 1))
                        .collect()
                })
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        children.sort_by(|a, b| a.row.name.cmp(&b.row.name));
        InstallationNode {
            row: row("Installation", inst),
            execution: execution_of.remove(&key),
            children,
        }
    }
    let mut tree: Vec<InstallationNode> = roots
        .iter()
        .map(|r| node(r, &children_of, &mut execution_of, 0))
        .collect();
    tree.sort_by(|a, b| (&a.row.namespace, &a.row.name).cmp(&(&b.row.namespace, &b.row.name)));

    let orphans = orphan_causes(&tree, snapshot);
    let mut o = Overview {
        roots: tree,
        orphans,
        ..Overview::default()
    };
    o.summarise(snapshot);
    o
}

impl Overview {
    /// Recomputes what derives from the tree and the lists (counts, root causes, running jobs,
    /// files, archives) after the tree's rows changed.
    pub fn summarise(&mut self, snapshot: &Snapshot) {
        self.running = running_jobs(&self.roots);
        let mut causes = Vec::new();
        for node in &self.roots {
            root_causes(node, &mut Vec::new(), &mut causes);
        }
        // Objects outside the tree (standalone Executions and their items, installations
        // whose parent is gone).
        causes.extend(self.orphans.iter().cloned());
        self.causes = causes;
        let mut files: Vec<FileRow> = snapshot.files.iter().map(file_row).collect();
        files.sort_by(|a, b| (a.error.is_none(), &a.path).cmp(&(b.error.is_none(), &b.path)));
        self.files = files;
        let mut archives: Vec<ArchiveRow> = snapshot.archives.iter().map(archive_row).collect();
        archives.sort_by(|a, b| (a.error.is_none(), &a.path).cmp(&(b.error.is_none(), &b.path)));
        self.archives = archives;
        self.counts = vec![
            counts("Installation", &snapshot.installations),
            counts("Execution", &snapshot.executions),
            counts("DeployItem", &snapshot.deploy_items),
        ];
        self.revision = snapshot.revision;
    }
}

/// One step of the path to a root cause.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PathStep {
    pub kind: &'static str,
    pub namespace: String,
    pub name: String,
}

impl PathStep {
    fn of(r: &Row) -> PathStep {
        PathStep {
            kind: r.kind,
            namespace: r.namespace.clone(),
            name: r.name.clone(),
        }
    }
}

/// A failure at its root cause.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Cause {
    pub row: Row,
    /// From the root installation down to the cause's owner.
    pub path: Vec<PathStep>,
}

/// Adds the root causes below `node` (and `node` itself when it failed while nothing below
/// it did); whether anything in the subtree failed.
fn root_causes(node: &InstallationNode, path: &mut Vec<PathStep>, out: &mut Vec<Cause>) -> bool {
    let mut below = false;
    path.push(PathStep::of(&node.row));
    if let Some(e) = &node.execution {
        path.push(PathStep::of(&e.row));
        for item in e.items.iter().filter(|i| i.tone == "bad") {
            out.push(Cause {
                row: item.clone(),
                path: path.clone(),
            });
            below = true;
        }
        path.pop();
        if e.row.tone == "bad" && !below {
            out.push(Cause {
                row: e.row.clone(),
                path: path.clone(),
            });
            below = true;
        }
    }
    for c in &node.children {
        below |= root_causes(c, path, out);
    }
    path.pop();
    if node.row.tone == "bad" && !below {
        out.push(Cause {
            row: node.row.clone(),
            path: path.clone(),
        });
        return true;
    }
    below || node.row.tone == "bad"
}

fn tree_keys<'a>(nodes: &'a [InstallationNode], keys: &mut std::collections::HashSet<&'a str>) {
    for n in nodes {
        keys.insert(&n.row.key);
        if let Some(e) = &n.execution {
            keys.insert(&e.row.key);
            keys.extend(e.items.iter().map(|i| i.key.as_str()));
        }
        tree_keys(&n.children, keys);
    }
}

/// Failed objects the tree does not hold: an item is the cause, its Execution only when none
/// of its items failed.
fn orphan_causes(tree: &[InstallationNode], snapshot: &Snapshot) -> Vec<Cause> {
    let mut in_tree = std::collections::HashSet::new();
    tree_keys(tree, &mut in_tree);
    let mut out = Vec::new();
    let mut executions_with_failed_items = std::collections::HashSet::new();
    for di in &snapshot.deploy_items {
        let r = row("DeployItem", di);
        if r.tone != "bad" || in_tree.contains(r.key.as_str()) {
            continue;
        }
        let path = match owner(di, "Execution") {
            Some(exec) => {
                executions_with_failed_items.insert((r.namespace.clone(), exec.clone()));
                vec![PathStep {
                    kind: "Execution",
                    namespace: r.namespace.clone(),
                    name: exec,
                }]
            }
            None => Vec::new(),
        };
        out.push(Cause { row: r, path });
    }
    for o in snapshot
        .executions
        .iter()
        .map(|o| row("Execution", o))
        .chain(
            snapshot
                .installations
                .iter()
                .map(|o| row("Installation", o)),
        )
    {
        if o.tone == "bad"
            && !in_tree.contains(o.key.as_str())
            && (o.kind != "Execution"
                || !executions_with_failed_items.contains(&(o.namespace.clone(), o.name.clone())))
        {
            out.push(Cause {
                row: o,
                path: Vec::new(),
            });
        }
    }
    out
}

/// Installations with a running job anywhere in the tree, with progress over their direct
/// subobjects (subinstallations and deploy items of the execution).
fn running_jobs(tree: &[InstallationNode]) -> Vec<RunningJob> {
    let mut out = Vec::new();
    let mut stack: Vec<&InstallationNode> = tree.iter().collect();
    while let Some(n) = stack.pop() {
        if n.row.running {
            let subobjects: Vec<&Row> = n
                .children
                .iter()
                .map(|c| &c.row)
                .chain(n.execution.iter().flat_map(|e| e.items.iter()))
                .collect();
            let finished = subobjects
                .iter()
                .filter(|r| !r.running && is_final_text(&r.phase))
                .count();
            out.push(RunningJob {
                row: n.row.clone(),
                finished,
                total: subobjects.len(),
            });
        }
        stack.extend(n.children.iter());
    }
    out.sort_by(|a, b| (&a.row.namespace, &a.row.name).cmp(&(&b.row.namespace, &b.row.name)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn multi_line_errors_keep_their_block_and_waiting_is_no_error() {
        let failed = row(
            "Installation",
            &json!({"metadata": {"name": "a", "namespace": "n"}, "status": {"phase": "Failed",
                "lastError": {"operation": "Op", "reason": "ReconcileExecution",
                    "message": "template: x:7:20: nil pointer\n7:   x: {{ .a }}\n         ^\n"}}}),
        );
        assert_eq!(
            failed.last_error.as_deref(),
            Some("ReconcileExecution: template: x:7:20: nil pointer")
        );
        assert_eq!(
            failed.last_error_block.as_deref(),
            Some("7:   x: {{ .a }}\n         ^")
        );
        assert!(!failed.waiting);
        let waiting = row(
            "Installation",
            &json!({"metadata": {"name": "b", "namespace": "n"}, "status": {"phase": "Progressing",
                "lastError": {"operation": "handlePhaseProgressing", "reason": "JobIDFinished",
                    "message": "execution n / b is not finished yet",
                    "codes": ["ERR_UNFINISHED", "ERR_FOR_INFO_ONLY", "ERR_NO_RETRY"]}}}),
        );
        assert!(waiting.waiting);
        assert_eq!(waiting.last_error_block, None);
    }

    fn inst(name: &str, parent: Option<&str>, phase: &str, job: &str, finished: &str) -> Value {
        let mut labels = serde_json::Map::new();
        if let Some(p) = parent {
            labels.insert(ENCOMPASSED_BY_LABEL.into(), json!(p));
        }
        json!({"kind": "Installation", "metadata": {"name": name, "namespace": "ns", "labels": labels},
            "status": {"phase": phase, "jobID": job, "jobIDFinished": finished}})
    }

    fn owned(kind: &str, name: &str, owner_kind: &str, owner: &str, phase: &str) -> Value {
        json!({"kind": kind, "metadata": {"name": name, "namespace": "ns",
            "ownerReferences": [{"kind": owner_kind, "name": owner}]},
            "spec": {"type": "landscaper.gardener.cloud/mock"},
            "status": {"phase": phase, "jobID": "j1", "jobIDFinished": if phase == "Succeeded" {"j1"} else {""}}})
    }

    #[test]
    fn the_tree_nests_subinstallations_executions_and_deploy_items() {
        let snapshot = Snapshot {
            installations: vec![
                inst("root", None, "Progressing", "j1", "j0"),
                inst("child", Some("root"), "Succeeded", "j1", "j1"),
                inst("other", None, "Failed", "j2", "j2"),
            ],
            executions: vec![owned(
                "Execution",
                "root-exec",
                "Installation",
                "root",
                "Progressing",
            )],
            deploy_items: vec![
                owned("DeployItem", "b", "Execution", "root-exec", "Succeeded"),
                owned("DeployItem", "a", "Execution", "root-exec", "Progressing"),
            ],
            files: vec![
                json!({"spec": {"path": "ok.yaml"}, "status": {"phase": "Applied", "objects": [{}, {}]}}),
                json!({"spec": {"path": "bad.yaml"}, "status": {"phase": "Error",
                    "lastError": {"document": 1, "line": 7, "column": 3, "field": "spec.imports", "message": "boom"}}}),
            ],
            archives: vec![
                json!({"spec": {"path": "m.tgz"}, "status": {"phase": "Ready", "type": "CommonTransportFormat",
                    "format": "tgz", "size": 12, "componentVersions": [{"name": "x.io/a", "version": "1.0.0", "resources": 2}]}}),
                json!({"spec": {"path": "cut.tar"}, "status": {"phase": "Failed", "format": "tar", "lastError": "truncated"}}),
            ],
            revision: 9,
        };
        let o = overview(&snapshot);
        assert_eq!(o.archives[0].path, "cut.tar");
        assert_eq!(o.archives[0].tone, "bad");
        assert_eq!(o.archives[0].error.as_deref(), Some("truncated"));
        assert_eq!(o.archives[1].detail, "CommonTransportFormat tgz 12 bytes");
        assert_eq!(o.archives[1].components, ["x.io/a:1.0.0 (2 resources)"]);
        assert_eq!(o.archives[1].tone, "ok");
        assert_eq!(o.roots.len(), 2);
        let root = &o.roots[1];
        assert_eq!(root.row.name, "root");
        assert_eq!(root.children[0].row.name, "child");
        let exec = root.execution.as_ref().unwrap();
        let names: Vec<&str> = exec.items.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(
            exec.items[0].detail.as_deref(),
            Some("landscaper.gardener.cloud/mock")
        );
        // Progress: child and item b finished, item a not.
        assert_eq!(o.running.len(), 1);
        assert_eq!((o.running[0].finished, o.running[0].total), (2, 3));
        assert_eq!(o.causes.len(), 1);
        assert_eq!(o.causes[0].row.key, "Installation/ns/other");
        assert_eq!(o.files[0].path, "bad.yaml");
        assert_eq!(
            o.files[0].error.as_deref(),
            Some("document 1, line 7, column 3, spec.imports: boom")
        );
        assert_eq!(o.files[1].objects, 2);
        let inst_counts = &o.counts[0];
        assert_eq!(inst_counts.total, 3);
        assert!(
            inst_counts
                .phases
                .iter()
                .any(|p| p.phase == "Failed" && p.count == 1 && p.tone == "bad")
        );
    }

    #[test]
    fn tones_carry_every_phase() {
        assert_eq!(tone("Succeeded"), "ok");
        assert_eq!(tone("DeleteFailed"), "bad");
        assert_eq!(tone("Init"), "busy");
        assert_eq!(tone(""), "idle");
    }
}
