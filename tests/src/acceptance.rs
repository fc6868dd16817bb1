//! Runner for the acceptance scenarios of `../shared/acceptance` (see its README.md): starts
//! the real daemon on a temp folder, makes the watched folder equal to each step's snapshot,
//! waits (by polling the HTTP API) until the step's installations reached their expected state,
//! and checks the rows of the scenario's EXPECTED.md and the oracle files
//! `expected/<variant>.step-N.yaml`.
//!
//! Every row is checked and reported (`PASS`/`FAIL` lines on stdout); [`Scenario::finish`]
//! panics with all failed rows and a dump of the objects' state. A step whose installations
//! do not reach the expected state panics at once (later steps would build on a wrong state).
//!
//! A recorder watches Installations, Executions and DeployItems from the start, so that
//! ordering rows ("deploy-item-2 is triggered only after deploy-item-1 finished", deletion
//! order) are checked on the store's global revisions, not on second-granular timestamps.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::Daemon;

/// The namespace of every Landscaper object of the scenarios.
pub const NS: &str = "cu-example";
pub const OPERATION_ANNOTATION: &str = "landscaper.gardener.cloud/operation";
pub const SUBINST_NAME_ANNOTATION: &str = "landscaper.gardener.cloud/subinstallation-name";
pub const ENCOMPASSED_BY_LABEL: &str = "landscaper.gardener.cloud/encompassed-by";
pub const EXEC_ITEM_LABEL: &str = "execution.landscaper.gardener.cloud/name";
pub const DEPENDS_ON_ANNOTATION: &str = "execution.landscaper.gardener.cloud/dependsOn";
pub const CONTEXT_LABEL: &str = "data.landscaper.gardener.cloud/context";
pub const KEY_LABEL: &str = "data.landscaper.gardener.cloud/key";
pub const TARGET_MAP_KEY_LABEL: &str = "data.landscaper.gardener.cloud/targetmapkey";
pub const INDEX_LABEL: &str = "data.landscaper.gardener.cloud/index";
/// What the API shows instead of a Target's inline kubeconfig (and Secret values).
pub const REDACTED: &str = "<redacted>";

/// The config the scenarios run with: a short pickup timeout (scenario 12).
const DAEMON_CONFIG: &str = "resyncInterval: 60s\nworkers: 4\ndeployItemTimeouts:\n  pickup: 5s\n";
const MANIFEST_FILES: &str = "/apis/appliance.landscaper-appliance.io/v1alpha1/manifestfiles";

/// The resources the runner reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Res {
    Installation,
    Execution,
    DeployItem,
    DataObject,
    Target,
    ConfigMap,
    Secret,
}

impl Res {
    pub fn plural(self) -> &'static str {
        match self {
            Res::Installation => "installations",
            Res::Execution => "executions",
            Res::DeployItem => "deployitems",
            Res::DataObject => "dataobjects",
            Res::Target => "targets",
            Res::ConfigMap => "configmaps",
            Res::Secret => "secrets",
        }
    }

    /// The collection path in namespace [`NS`].
    pub fn path(self) -> String {
        match self {
            Res::ConfigMap | Res::Secret => format!("/api/v1/namespaces/{NS}/{}", self.plural()),
            _ => format!(
                "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/{NS}/{}",
                self.plural()
            ),
        }
    }
}

/// What a step expects of an installation's job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Job {
    /// The installation ran a new job in this step (jobID differs from the one before the step).
    New,
    /// The installation was not reconciled in this step (jobID unchanged).
    Same,
    /// Either.
    Any,
}

/// The state a step waits for, for one root installation.
#[derive(Debug, Clone)]
pub struct Want {
    pub name: String,
    /// `None`: the installation must be gone.
    pub phase: Option<String>,
    pub job: Job,
}

/// `name` reaches `phase` (finished when the phase is final) with the given job expectation
/// and its `operation` annotation consumed.
pub fn want(name: &str, phase: &str, job: Job) -> Want {
    Want {
        name: name.to_string(),
        phase: Some(phase.to_string()),
        job,
    }
}

/// `name` no longer exists.
pub fn gone(name: &str) -> Want {
    Want {
        name: name.to_string(),
        phase: None,
        job: Job::Any,
    }
}

pub fn is_final(phase: &str) -> bool {
    matches!(phase, "Succeeded" | "Failed" | "DeleteFailed")
}

/// Landscaper's `WaitForInstallationToFinish`: a final phase, the generation observed and the
/// job finished.
pub fn finished(obj: &Value) -> bool {
    is_final(str_at(obj, "/status/phase"))
        && obj.pointer("/metadata/generation") == obj.pointer("/status/observedGeneration")
        && obj.pointer("/status/jobID").is_some()
        && obj.pointer("/status/jobID") == obj.pointer("/status/jobIDFinished")
}

pub fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

pub fn name_of(obj: &Value) -> &str {
    str_at(obj, "/metadata/name")
}

pub fn uid_of(obj: &Value) -> &str {
    str_at(obj, "/metadata/uid")
}

pub fn phase_of(obj: &Value) -> &str {
    str_at(obj, "/status/phase")
}

pub fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
}

pub fn label<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.pointer("/metadata/labels")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
}

/// `status.lastError.message` (empty when there is none).
pub fn last_error(obj: &Value) -> &str {
    str_at(obj, "/status/lastError/message")
}

/// Whether `obj` has an owner reference to `kind`/`name`.
pub fn owned_by(obj: &Value, kind: &str, name: &str) -> bool {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| refs.iter().any(|r| r["kind"] == kind && r["name"] == name))
}

fn percent_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A short, one-line JSON rendering for messages.
pub fn short(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(600) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s,
    }
}

/// Parses a YAML file with anchors and aliases into JSON.
pub fn read_yaml(path: &Path) -> Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_saphyr::from_str::<Value>(&text)
        .unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

// ---------------------------------------------------------------------------------------------
// Recorder: watch streams of Installations, Executions and DeployItems.

/// One watch event, in the order of the store's revisions.
#[derive(Debug, Clone)]
pub struct Event {
    pub res: Res,
    /// ADDED, MODIFIED or DELETED.
    pub kind: String,
    pub revision: u64,
    pub object: Value,
}

#[derive(Clone, Default)]
pub struct Recorder {
    events: Arc<Mutex<Vec<Event>>>,
    problems: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    fn start(host_port: &str) -> Recorder {
        let recorder = Recorder::default();
        let (tx, rx) = std::sync::mpsc::channel();
        for res in [Res::Installation, Res::Execution, Res::DeployItem] {
            let recorder = recorder.clone();
            let host_port = host_port.to_string();
            let tx = tx.clone();
            std::thread::spawn(move || recorder.watch(res, &host_port, tx));
        }
        drop(tx);
        for _ in 0..3 {
            rx.recv_timeout(Duration::from_secs(10))
                .expect("watch streams of the recorder started");
        }
        recorder
    }

    /// Follows one watch stream, resuming after the last revision seen when it ends (the
    /// stream ends when the daemon goes away, then the connection fails and the thread ends).
    fn watch(&self, res: Res, host_port: &str, started: std::sync::mpsc::Sender<()>) {
        let mut started = Some(started);
        let mut from = 0u64;
        loop {
            let path = format!(
                "{}?watch=true&resourceVersion={from}&allowWatchBookmarks=true",
                res.path()
            );
            let result = stream_lines(
                host_port,
                &path,
                &mut || {
                    if let Some(tx) = started.take() {
                        let _ = tx.send(());
                    }
                },
                &mut |line| {
                    let Ok(event) = serde_json::from_slice::<Value>(line) else {
                        return;
                    };
                    let kind = event["type"].as_str().unwrap_or_default().to_string();
                    let revision = event
                        .pointer("/object/metadata/resourceVersion")
                        .and_then(Value::as_str)
                        .and_then(|s| s.parse::<u64>().ok())
                        .unwrap_or(0);
                    match kind.as_str() {
                        "ADDED" | "MODIFIED" | "DELETED" => {
                            from = from.max(revision);
                            self.events.lock().unwrap().push(Event {
                                res,
                                kind,
                                revision,
                                object: event["object"].clone(),
                            });
                        }
                        "BOOKMARK" => from = from.max(revision),
                        "ERROR" => self
                            .problems
                            .lock()
                            .unwrap()
                            .push(format!("{res:?} watch: {}", short(&event["object"]))),
                        _ => {}
                    }
                },
            );
            if result.is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The events of one object, by revision.
    pub fn events(&self, res: Res, name: &str) -> Vec<Event> {
        let mut events: Vec<Event> = self
            .events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.res == res && name_of(&e.object) == name)
            .cloned()
            .collect();
        events.sort_by_key(|e| e.revision);
        events
    }

    /// The first revision at which `name` matched `pred`.
    pub fn first(&self, res: Res, name: &str, pred: impl Fn(&Event) -> bool) -> Option<u64> {
        self.events(res, name)
            .into_iter()
            .find(|e| pred(e))
            .map(|e| e.revision)
    }

    /// The revision at which `name` was deleted from the store.
    pub fn deleted(&self, res: Res, name: &str) -> Option<u64> {
        self.first(res, name, |e| e.kind == "DELETED")
    }

    /// The first revision at which `name` carried `status.jobID == job` (was triggered).
    pub fn triggered(&self, res: Res, name: &str, job: &str) -> Option<u64> {
        self.first(res, name, |e| str_at(&e.object, "/status/jobID") == job)
    }

    /// The first revision at which `name` finished `job`.
    pub fn job_finished(&self, res: Res, name: &str, job: &str) -> Option<u64> {
        self.first(res, name, |e| {
            str_at(&e.object, "/status/jobIDFinished") == job
                && is_final(str_at(&e.object, "/status/phase"))
        })
    }

    /// The first revision at which `name`, working on `job`, left phase Init (i.e. got past
    /// its predecessor and import checks). The final phase of the previous job, still shown
    /// right after the new jobID was set, does not count.
    pub fn left_init(&self, res: Res, name: &str, job: &str) -> Option<u64> {
        self.first(res, name, |e| {
            let phase = str_at(&e.object, "/status/phase");
            str_at(&e.object, "/status/jobID") == job
                && !matches!(phase, "" | "Init")
                && !(is_final(phase) && str_at(&e.object, "/status/jobIDFinished") != job)
        })
    }

    pub fn problems(&self) -> Vec<String> {
        self.problems.lock().unwrap().clone()
    }
}

/// GETs `path` and calls `on_line` for every line of the (possibly chunked) body; `on_headers`
/// once the response head is read. Returns when the server closes the stream.
fn stream_lines(
    host_port: &str,
    path: &str,
    on_headers: &mut dyn FnMut(),
    on_line: &mut dyn FnMut(&[u8]),
) -> std::io::Result<()> {
    let mut stream = TcpStream::connect(host_port)?;
    stream.write_all(
        format!(
            "GET {path} HTTP/1.1\r\nHost: {host_port}\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
    )?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    if !line.contains(" 200 ") {
        return Err(std::io::Error::other(format!(
            "watch {path}: {}",
            line.trim()
        )));
    }
    let mut chunked = false;
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let lower = header.to_ascii_lowercase();
        if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
            chunked = true;
        }
    }
    on_headers();
    let mut pending: Vec<u8> = Vec::new();
    let mut deliver = |pending: &mut Vec<u8>, bytes: &[u8]| {
        pending.extend_from_slice(bytes);
        while let Some(pos) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=pos).collect();
            if line.len() > 1 {
                on_line(&line[..line.len() - 1]);
            }
        }
    };
    if chunked {
        loop {
            line.clear();
            if reader.read_line(&mut line)? == 0 {
                return Ok(());
            }
            let size_text = line.trim().split(';').next().unwrap_or("").to_string();
            if size_text.is_empty() {
                continue;
            }
            let size = usize::from_str_radix(&size_text, 16)
                .map_err(|e| std::io::Error::other(format!("chunk size {size_text:?}: {e}")))?;
            if size == 0 {
                return Ok(());
            }
            let mut chunk = vec![0u8; size];
            reader.read_exact(&mut chunk)?;
            deliver(&mut pending, &chunk);
        }
    } else {
        let mut buf = [0u8; 8192];
        loop {
            let n = reader.read(&mut buf)?;
            if n == 0 {
                return Ok(());
            }
            deliver(&mut pending, &buf[..n]);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Scenario

/// One scenario variant running on its own daemon.
pub struct Scenario {
    /// `01`, `02`, ...
    pub id: String,
    pub dir: PathBuf,
    pub variant: String,
    pub daemon: Daemon,
    pub recorder: Recorder,
    /// The target cluster of the `manifest` and `helm` variants.
    pub cluster: Option<crate::cluster::Cluster>,
    _tmp: tempfile::TempDir,
    started: Instant,
    step: usize,
    step_started: Instant,
    /// The store revision before the current step's files were written.
    pub step_revision: u64,
    /// Root installations as they were before the current step's files were written.
    before: HashMap<String, Value>,
    failures: Vec<String>,
    passed: usize,
    timings: Vec<String>,
    /// Root-context DataObject key → value, replacing the oracle's value in
    /// [`Scenario::check_oracle`]: for values only the real cluster knows (a token filled in by
    /// its token controller), where the oracle holds the mock variant's.
    pub oracle_overrides: BTreeMap<String, Value>,
}

impl Scenario {
    /// Starts a daemon for scenario `id` (`"01"`) and `variant`; `None` (after printing a
    /// `SKIP:` line) when the shared acceptance folder or the variant is absent.
    pub fn start(id: &str, variant: &str) -> Option<Scenario> {
        let Some(acceptance) = crate::acceptance_dir() else {
            println!(
                "SKIP: ../shared/acceptance not found beside this checkout (scenario {id} {variant})"
            );
            return None;
        };
        let dir = std::fs::read_dir(&acceptance)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&format!("{id}-")))
            });
        let Some(dir) = dir.filter(|d| d.join(variant).join("step-1").is_dir()) else {
            println!(
                "SKIP: scenario {id} variant {variant} not found in {}",
                acceptance.display()
            );
            return None;
        };
        // Non-mock variants deploy to a cluster: the workspace's Kubernetes test API server,
        // with the namespace `acc-NN` the scenarios expect to exist.
        let cluster = (variant != "mock" && variant != "any").then(|| {
            let cluster = crate::cluster::Cluster::start("100ms");
            cluster.create_namespace(&format!("acc-{id}"));
            cluster
        });
        let tmp = tempfile::tempdir().expect("temp dir");
        let daemon = Daemon::start_with_config(tmp.path(), DAEMON_CONFIG);
        let host_port = daemon.server.trim_start_matches("http://").to_string();
        let recorder = Recorder::start(&host_port);
        println!(
            "[{id}] {} ({variant}) on {}",
            dir.file_name().unwrap().to_string_lossy(),
            daemon.server
        );
        Some(Scenario {
            id: id.to_string(),
            dir,
            variant: variant.to_string(),
            daemon,
            recorder,
            cluster,
            _tmp: tmp,
            started: Instant::now(),
            step: 0,
            step_started: Instant::now(),
            step_revision: 0,
            before: HashMap::new(),
            failures: Vec::new(),
            passed: 0,
            timings: Vec::new(),
            oracle_overrides: BTreeMap::new(),
        })
    }

    pub fn step(&self) -> usize {
        self.step
    }

    fn tag(&self) -> String {
        format!("[{} step {}]", self.id, self.step)
    }

    // --- folder ------------------------------------------------------------------------------

    /// Makes the watched folder equal to `<variant>/step-N` (new files added, changed ones
    /// overwritten atomically, missing ones deleted, unchanged ones left alone) and waits until
    /// the daemon has ingested exactly these file revisions.
    pub fn apply_step(&mut self, n: usize) {
        self.apply_step_rewritten(n, |_, content| content);
    }

    /// Like [`Scenario::apply_step`], with each file's content passed through `rewrite(file
    /// name, content)` first: for a test that changes one line of a shared scenario and says why.
    pub fn apply_step_rewritten(&mut self, n: usize, rewrite: impl Fn(&str, Vec<u8>) -> Vec<u8>) {
        if self.step > 0 {
            self.timings.push(format!(
                "step {} {:.1}s",
                self.step,
                self.step_started.elapsed().as_secs_f64()
            ));
        }
        self.step = n;
        self.step_started = Instant::now();
        self.before = self
            .list(Res::Installation, None)
            .into_iter()
            .map(|i| (name_of(&i).to_string(), i))
            .collect();
        self.step_revision = self
            .read_json(&Res::Installation.path())
            .and_then(|l| {
                l.pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
                    .and_then(|s| s.parse().ok())
            })
            .unwrap_or(0);

        let source = self.dir.join(&self.variant).join(format!("step-{n}"));
        let mut want: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        for entry in std::fs::read_dir(&source)
            .unwrap_or_else(|e| panic!("{}: {e}", source.display()))
            .flatten()
        {
            if entry.file_type().is_ok_and(|t| t.is_file()) {
                let mut name = entry.file_name().to_string_lossy().to_string();
                let mut content = std::fs::read(entry.path()).unwrap();
                // `x.yaml.tpl` holds `${kubeconfig}`: rendered with the cluster's into `x.yaml`.
                if let Some(base) = name.strip_suffix(".tpl") {
                    let cluster = self.cluster.as_ref().unwrap_or_else(|| {
                        panic!("{name}: a template needs the cluster of a non-mock variant")
                    });
                    content = cluster
                        .render_template(&String::from_utf8_lossy(&content))
                        .into_bytes();
                    name = base.to_string();
                }
                let content = rewrite(&name, content);
                want.insert(name, content);
            }
        }
        let manifests = self.daemon.manifests.clone();
        let mut changes = Vec::new();
        for entry in std::fs::read_dir(&manifests).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if !want.contains_key(&name) {
                std::fs::remove_file(entry.path()).unwrap();
                changes.push(format!("-{name}"));
            }
        }
        for (name, content) in &want {
            let path = manifests.join(name);
            match std::fs::read(&path) {
                Ok(existing) if existing == *content => continue,
                Ok(_) => changes.push(format!("~{name}")),
                Err(_) => changes.push(format!("+{name}")),
            }
            // Written beside as a dot file (ignored by the ingest), then renamed: the daemon
            // never sees a half-written file.
            let tmp = manifests.join(format!(".{name}.tmp"));
            std::fs::write(&tmp, content).unwrap();
            std::fs::rename(&tmp, &path).unwrap();
        }
        println!(
            "{} applied {} ({})",
            self.tag(),
            source.display(),
            if changes.is_empty() {
                "no changes".to_string()
            } else {
                changes.join(" ")
            }
        );

        let hashes: BTreeMap<String, String> = want
            .iter()
            .map(|(name, content)| (name.clone(), sha256_hex(content)))
            .collect();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let files = self
                .read_json(MANIFEST_FILES)
                .and_then(|l| l["items"].as_array().cloned())
                .unwrap_or_default();
            let mut state: BTreeMap<String, (String, Value)> = BTreeMap::new();
            for f in &files {
                state.insert(
                    str_at(f, "/spec/path").to_string(),
                    (
                        str_at(f, "/status/observedSha256").to_string(),
                        f.pointer("/status/lastError")
                            .cloned()
                            .unwrap_or(Value::Null),
                    ),
                );
            }
            let ingested = state.len() == hashes.len()
                && hashes
                    .iter()
                    .all(|(name, sha)| state.get(name).is_some_and(|(seen, _)| seen == sha));
            if ingested {
                let errors: Vec<String> = state
                    .iter()
                    .filter(|(_, (_, e))| !e.is_null())
                    .map(|(name, (_, e))| format!("{name}: {}", short(e)))
                    .collect();
                assert!(
                    errors.is_empty(),
                    "{} the daemon rejected files of {}:\n{}",
                    self.tag(),
                    source.display(),
                    errors.join("\n")
                );
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{} files of {} not ingested after 30 s; ManifestFiles: {:?}, want {:?}",
                self.tag(),
                source.display(),
                state,
                hashes
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    // --- reads -------------------------------------------------------------------------------

    pub fn get(&self, res: Res, name: &str) -> Option<Value> {
        // Root-context DataObjects and Targets are named as Landscaper names them: a name that
        // is no valid object name (e.g. `dataExp`) is stored under its hash.
        let name = match res {
            Res::DataObject | Res::Target => {
                landscaper_store::model::names::generate_data_object_name("", name)
            }
            _ => name.to_string(),
        };
        self.read_json(&format!("{}/{name}", res.path()))
    }

    /// Lists `res` in [`NS`], optionally with a label selector.
    pub fn list(&self, res: Res, selector: Option<&str>) -> Vec<Value> {
        let path = match selector {
            Some(s) => format!("{}?labelSelector={}", res.path(), percent_encode(s)),
            None => res.path(),
        };
        self.read_json(&path)
            .and_then(|l| l["items"].as_array().cloned())
            .unwrap_or_default()
    }

    /// A read as an operator makes it (over the Unix socket, authorised like Landscaper's
    /// tests with their kubeconfig): values copied from Secrets are shown, not redacted.
    fn read_json(&self, path: &str) -> Option<Value> {
        landscaper_appliance::commands::client::Client::unix(&self.daemon.data.join("api.sock"))
            .get_json(path)
            .ok()
    }

    pub fn installation(&self, name: &str) -> Option<Value> {
        self.get(Res::Installation, name)
    }

    /// The root installation `name` as it was before the current step.
    pub fn before(&self, name: &str) -> Option<&Value> {
        self.before.get(name)
    }

    /// The Execution of `inst` (`status.executionRef`).
    pub fn execution_of(&self, inst: &Value) -> Option<Value> {
        let name = str_at(inst, "/status/executionRef/name");
        (!name.is_empty())
            .then(|| self.get(Res::Execution, name))
            .flatten()
    }

    /// The deploy items of `inst`: owned by its Execution.
    pub fn deploy_items_of(&self, inst: &Value) -> Vec<Value> {
        let exec = execution_name(inst);
        let mut items: Vec<Value> = self
            .list(Res::DeployItem, None)
            .into_iter()
            .filter(|d| owned_by(d, "Execution", exec))
            .collect();
        items.sort_by(|a, b| item_name(a).cmp(item_name(b)));
        items
    }

    /// The deploy item `item` (label `execution.landscaper.gardener.cloud/name`) of `inst`.
    pub fn deploy_item(&self, inst: &Value, item: &str) -> Option<Value> {
        let exec = execution_name(inst);
        self.list(Res::DeployItem, Some(&format!("{EXEC_ITEM_LABEL}={item}")))
            .into_iter()
            .find(|d| owned_by(d, "Execution", exec))
    }

    /// The subinstallations of the installation object `parent`.
    pub fn subinstallations(&self, parent: &str) -> Vec<Value> {
        let mut subs = self.list(
            Res::Installation,
            Some(&format!("{ENCOMPASSED_BY_LABEL}={parent}")),
        );
        subs.sort_by(|a, b| {
            annotation(a, SUBINST_NAME_ANNOTATION).cmp(&annotation(b, SUBINST_NAME_ANNOTATION))
        });
        subs
    }

    /// The subinstallation of `parent` made from the template `template`.
    pub fn subinstallation(&self, parent: &str, template: &str) -> Option<Value> {
        self.subinstallations(parent)
            .into_iter()
            .find(|s| annotation(s, SUBINST_NAME_ANNOTATION) == Some(template))
    }

    /// A DataObject or Target of a context: the exact name in the root context (`""`), else
    /// by the labels `data.landscaper.gardener.cloud/context` and `/key`.
    pub fn context_object(&self, res: Res, context: &str, key: &str) -> Option<Value> {
        if context.is_empty() {
            return self.get(res, key);
        }
        self.list(
            res,
            Some(&format!("{CONTEXT_LABEL}={context},{KEY_LABEL}={key}")),
        )
        .into_iter()
        .next()
    }

    /// The Target an import reference names in `context`: `name`, or an element `name[key]`
    /// of a target map or list (labels `…/targetmapkey` or `…/index`).
    pub fn context_target(&self, context: &str, reference: &str) -> Option<Value> {
        let Some((name, element)) = reference.strip_suffix(']').and_then(|r| r.split_once('['))
        else {
            return self.context_object(Res::Target, context, reference);
        };
        let mut selector = format!("{KEY_LABEL}={name}");
        if !context.is_empty() {
            selector = format!("{CONTEXT_LABEL}={context},{selector}");
        }
        self.list(Res::Target, Some(&selector))
            .into_iter()
            .find(|t| {
                label(t, TARGET_MAP_KEY_LABEL) == Some(element)
                    || label(t, INDEX_LABEL) == Some(element)
            })
    }

    /// `.data` of the root-context DataObject `name`.
    pub fn data_object(&self, name: &str) -> Option<Value> {
        self.get(Res::DataObject, name).map(|d| d["data"].clone())
    }

    /// The DataObjects of the root context (no or an empty context label), name → data.
    pub fn root_context_data_objects(&self) -> BTreeMap<String, Value> {
        self.list(Res::DataObject, None)
            .into_iter()
            .filter(|d| label(d, CONTEXT_LABEL).unwrap_or("").is_empty())
            .map(|d| {
                // Hashed names stand for their key (see `get`).
                let name = name_of(&d).to_string();
                let name = match label(&d, KEY_LABEL) {
                    Some(key)
                        if landscaper_store::model::names::generate_data_object_name("", key)
                            == name =>
                    {
                        key.to_string()
                    }
                    _ => name,
                };
                (name, d["data"].clone())
            })
            .collect()
    }

    /// The export of deploy item `item` of `inst`, read from its Execution's export DataObject
    /// (the item's own export Secret is redacted by the API).
    pub fn deploy_item_export(&self, inst: &Value, item: &str) -> Option<Value> {
        let exec = self.execution_of(inst)?;
        let name = str_at(&exec, "/status/exportRef/name");
        let data = self.get(Res::DataObject, name)?;
        data["data"].get(item).cloned()
    }

    // --- waiting -----------------------------------------------------------------------------

    /// Waits until every root installation of `wants` reached its expected state. An
    /// installation that stays in a wrong final state for 3 s, or does not get there within
    /// `timeout`, is recorded as a failed row (with the state of the objects printed), and the
    /// step's rows are checked all the same.
    pub fn settle(&mut self, wants: &[Want], timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let mut wrong_since: HashMap<String, Instant> = HashMap::new();
        loop {
            let mut pending = Vec::new();
            let mut stuck = Vec::new();
            for w in wants {
                let current = self.installation(&w.name);
                match self.evaluate(w, current.as_ref()) {
                    Ok(()) => {
                        wrong_since.remove(&w.name);
                    }
                    Err((reason, true))
                        if wrong_since
                            .entry(w.name.clone())
                            .or_insert_with(Instant::now)
                            .elapsed()
                            > Duration::from_secs(3) =>
                    {
                        stuck.push(reason)
                    }
                    Err((reason, wrong_final)) => {
                        if !wrong_final {
                            wrong_since.remove(&w.name);
                        }
                        pending.push(reason);
                    }
                }
            }
            if pending.is_empty() {
                let states = wants
                    .iter()
                    .map(|w| format!("{}={}", w.name, w.phase.as_deref().unwrap_or("gone")))
                    .collect::<Vec<_>>()
                    .join(", ");
                println!(
                    "{} settled after {:.1}s: wanted {states}{}",
                    self.tag(),
                    self.step_started.elapsed().as_secs_f64(),
                    if stuck.is_empty() {
                        ""
                    } else {
                        " (some stuck in a wrong final state)"
                    }
                );
                for reason in stuck {
                    self.check(
                        "expected state of the step",
                        Err(format!("stuck in a wrong final state: {reason}")),
                    );
                }
                return;
            }
            if Instant::now() >= deadline {
                println!(
                    "{} NOT settled after {timeout:?}; state:\n{}",
                    self.tag(),
                    self.dump()
                );
                for reason in stuck {
                    self.check(
                        "expected state of the step",
                        Err(format!("stuck in a wrong final state: {reason}")),
                    );
                }
                for reason in pending {
                    self.check(
                        "expected state of the step",
                        Err(format!("timed out after {timeout:?}: {reason}")),
                    );
                }
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `Err((reason, in a wrong final state))`.
    fn evaluate(&self, w: &Want, current: Option<&Value>) -> Result<(), (String, bool)> {
        let Some(inst) = current else {
            return match w.phase {
                None => Ok(()),
                Some(_) => Err((format!("{}: does not exist", w.name), false)),
            };
        };
        let Some(want_phase) = &w.phase else {
            return Err((
                format!("{}: still exists ({})", w.name, describe_installation(inst)),
                false,
            ));
        };
        let job = str_at(inst, "/status/jobID");
        let job_before = self
            .before
            .get(&w.name)
            .map(|b| str_at(b, "/status/jobID"))
            .unwrap_or("");
        let job_ok = match w.job {
            Job::New => !job.is_empty() && job != job_before,
            Job::Same => job == job_before,
            Job::Any => true,
        };
        let phase = phase_of(inst);
        let operation = annotation(inst, OPERATION_ANNOTATION);
        let done = if is_final(want_phase) {
            finished(inst)
        } else {
            true
        };
        if job_ok && operation.is_none() && phase == want_phase && done {
            return Ok(());
        }
        let mut reason = format!(
            "{}: want phase {want_phase}{}{}, have {}",
            w.name,
            if is_final(want_phase) {
                " (finished)"
            } else {
                ""
            },
            match w.job {
                Job::New => format!(" with a new job (jobID before the step: {job_before:?})"),
                Job::Same => format!(" with the same job {job_before:?}"),
                Job::Any => String::new(),
            },
            describe_installation(inst)
        );
        if let Some(op) = operation {
            reason.push_str(&format!(
                ", annotation {OPERATION_ANNOTATION}={op} not consumed"
            ));
        }
        let wrong_final = finished(inst) && job_ok && operation.is_none() && phase != want_phase;
        Err((reason, wrong_final))
    }

    // --- rows --------------------------------------------------------------------------------

    /// Records one row's result.
    pub fn check(&mut self, row: &str, result: Result<(), String>) {
        match result {
            Ok(()) => {
                self.passed += 1;
                println!("{} PASS {row}", self.tag());
            }
            Err(detail) => {
                println!("{} FAIL {row}: {detail}", self.tag());
                self.failures
                    .push(format!("{} {row}: {detail}", self.tag()));
            }
        }
    }

    /// A row that holds when `ok`; `detail` explains a failure.
    pub fn ok(&mut self, row: &str, ok: bool, detail: impl FnOnce() -> String) {
        let result = if ok { Ok(()) } else { Err(detail()) };
        self.check(row, result);
    }

    /// Like [`ok`](Self::ok), with a detail computed from the scenario (e.g. its
    /// [`dump`](Self::dump)).
    pub fn ok_with(&mut self, row: &str, ok: bool, detail: impl FnOnce(&Scenario) -> String) {
        let result = if ok { Ok(()) } else { Err(detail(self)) };
        self.check(row, result);
    }

    /// A row comparing JSON values.
    pub fn eq(&mut self, row: &str, actual: &Value, expected: &Value) {
        let result = if actual == expected {
            Ok(())
        } else {
            Err(format!("have {}, want {}", short(actual), short(expected)))
        };
        self.check(row, result);
    }

    /// A row about an object that must exist; `f` checks it.
    pub fn with(
        &mut self,
        row: &str,
        obj: Option<&Value>,
        f: impl FnOnce(&Value) -> Result<(), String>,
    ) {
        let result = match obj {
            Some(o) => f(o),
            None => Err("object not found".to_string()),
        };
        self.check(row, result);
    }

    /// Root installation `name` (panics when it is missing: the step settled on it).
    pub fn must(&self, name: &str) -> Value {
        self.installation(name)
            .unwrap_or_else(|| panic!("{} installation {name} vanished", self.tag()))
    }

    /// Rows about an installation's state: phase, generation observed, no lastError for
    /// Succeeded, the operation annotation consumed.
    pub fn check_installation(&mut self, inst: &Value, phase: &str) {
        let n = name_of(inst).to_string();
        self.eq(
            &format!("Installation {n}: phase"),
            &json!(phase_of(inst)),
            &json!(phase),
        );
        self.ok(
            &format!("Installation {n}: observedGeneration == generation"),
            inst.pointer("/metadata/generation") == inst.pointer("/status/observedGeneration"),
            || describe_installation(inst),
        );
        self.ok(
            &format!("Installation {n}: jobIDFinished == jobID"),
            inst.pointer("/status/jobID") == inst.pointer("/status/jobIDFinished"),
            || describe_installation(inst),
        );
        if phase == "Succeeded" {
            self.ok(
                &format!("Installation {n}: no lastError"),
                inst.pointer("/status/lastError").is_none_or(Value::is_null),
                || short(&inst["status"]["lastError"]),
            );
        }
        self.ok(
            &format!("Installation {n}: annotation {OPERATION_ANNOTATION} consumed"),
            annotation(inst, OPERATION_ANNOTATION).is_none(),
            || format!("{:?}", annotation(inst, OPERATION_ANNOTATION)),
        );
    }

    /// Rows: the deploy items of `inst` are exactly `items` (by item name), each in `phase`.
    pub fn check_items(&mut self, inst: &Value, items: &[&str], phase: &str) -> Vec<Value> {
        let n = name_of(inst).to_string();
        let actual = self.deploy_items_of(inst);
        let names: BTreeSet<&str> = actual.iter().map(item_name).collect();
        let want: BTreeSet<&str> = items.iter().copied().collect();
        self.ok(
            &format!("Installation {n}: deploy items exactly {items:?}"),
            names == want,
            || format!("have {names:?}"),
        );
        for item in &actual {
            self.eq(
                &format!("DeployItem {}/{}: phase", n, item_name(item)),
                &json!(phase_of(item)),
                &json!(phase),
            );
        }
        actual
    }

    /// Row: the Execution of `inst` lists exactly `items` (in `status.deployItemRefs`, or, as
    /// current Landscaper records them, in `status.deployItemCache.activeDIs`).
    pub fn check_execution_refs(&mut self, inst: &Value, items: &[&str]) {
        let n = name_of(inst).to_string();
        let exec = self.execution_of(inst);
        self.with(
            &format!(
                "Execution {n}: {} deploy item reference(s) {items:?}",
                items.len()
            ),
            exec.as_ref(),
            |e| {
                let mut names: Vec<String> = Vec::new();
                if let Some(refs) = e
                    .pointer("/status/deployItemRefs")
                    .and_then(Value::as_array)
                {
                    names.extend(
                        refs.iter()
                            .map(|r| r["name"].as_str().unwrap_or("").to_string()),
                    );
                } else if let Some(refs) = e
                    .pointer("/status/deployItemCache/activeDIs")
                    .and_then(Value::as_array)
                {
                    names.extend(
                        refs.iter()
                            .map(|r| r["specName"].as_str().unwrap_or("").to_string()),
                    );
                }
                names.sort();
                let mut want: Vec<String> = items.iter().map(|s| s.to_string()).collect();
                want.sort();
                if names == want {
                    Ok(())
                } else {
                    Err(format!(
                        "have {names:?} (deployItemRefs {}, deployItemCache {})",
                        short(&e["status"]["deployItemRefs"]),
                        short(&e["status"]["deployItemCache"])
                    ))
                }
            },
        );
    }

    /// Row: `inst` has `n` subinstallation references (`status.installationRefs`, or
    /// `status.subInstCache.activeSubs`).
    pub fn check_installation_refs(&mut self, inst: &Value, n: usize) {
        let refs = inst
            .pointer("/status/installationRefs")
            .and_then(Value::as_array)
            .or_else(|| {
                inst.pointer("/status/subInstCache/activeSubs")
                    .and_then(Value::as_array)
            })
            .map_or(0, Vec::len);
        self.ok(
            &format!("Installation {}: {n} installationRefs", name_of(inst)),
            refs == n,
            || {
                format!(
                    "installationRefs {}, subInstCache {}",
                    short(&inst["status"]["installationRefs"]),
                    short(&inst["status"]["subInstCache"])
                )
            },
        );
    }

    /// Row: root DataObject `name` holds `value`.
    pub fn check_data_object(&mut self, name: &str, value: &Value) {
        let actual = self.data_object(name);
        self.with(
            &format!("DataObject {name} == {}", short(value)),
            actual.as_ref(),
            |d| {
                if d == value {
                    Ok(())
                } else {
                    Err(format!("have {}", short(d)))
                }
            },
        );
    }

    /// Row: the DataObject `key` of context `Inst.<parent>` holds `value`.
    pub fn check_context_data_object(&mut self, parent: &str, key: &str, value: &Value) {
        let context = format!("Inst.{parent}");
        let actual = self.context_object(Res::DataObject, &context, key);
        self.with(
            &format!("DataObject {context}/{key} == {}", short(value)),
            actual.as_ref(),
            |d| {
                if d["data"] == *value {
                    Ok(())
                } else {
                    Err(format!("have {} ({})", short(&d["data"]), name_of(d)))
                }
            },
        );
    }

    /// Row: `res` `name` does not exist.
    pub fn check_absent(&mut self, res: Res, name: &str) {
        let actual = self.get(res, name);
        self.ok(
            &format!("{res:?} {name} does not exist"),
            actual.is_none(),
            || format!("exists: {}", short(&actual.clone().unwrap_or_default())),
        );
    }

    /// Row: `a` happened strictly before `b` (store revisions from the recorder).
    pub fn check_before(&mut self, row: &str, a: (&str, Option<u64>), b: (&str, Option<u64>)) {
        let result = match (a.1, b.1) {
            (Some(x), Some(y)) if x < y => Ok(()),
            (Some(x), Some(y)) => Err(format!("{} at revision {x}, {} at revision {y}", a.0, b.0)),
            _ => Err(format!(
                "not observed: {} {:?}, {} {:?}",
                a.0, a.1, b.0, b.1
            )),
        };
        self.check(row, result);
    }

    /// Row: `obj` (`res`) has `phase`.
    pub fn check_phase(&mut self, what: &str, obj: Option<&Value>, phase: &str) {
        self.with(&format!("{what}: phase {phase}"), obj, |o| {
            if phase_of(o) == phase {
                Ok(())
            } else {
                Err(describe_installation(o))
            }
        });
    }

    /// Row: deploy item `item` of `inst` was triggered for the Execution's current job only
    /// after each item of `after` had finished that job (Landscaper's `dependsOn` rule).
    pub fn check_item_order(&mut self, inst: &Value, item: &str, after: &[&str]) {
        let row = format!(
            "DeployItem {}/{item} triggered only after {after:?} finished",
            name_of(inst)
        );
        let Some(exec) = self.execution_of(inst) else {
            self.check(&row, Err("no Execution".into()));
            return;
        };
        let job = str_at(&exec, "/status/jobID").to_string();
        let Some(di) = self.deploy_item(inst, item) else {
            self.check(&row, Err(format!("no deploy item {item}")));
            return;
        };
        let start = self.recorder.triggered(Res::DeployItem, name_of(&di), &job);
        let mut result = Ok(());
        for dep in after {
            let Some(d) = self.deploy_item(inst, dep) else {
                result = Err(format!("no deploy item {dep}"));
                break;
            };
            let done = self
                .recorder
                .job_finished(Res::DeployItem, name_of(&d), &job);
            match (done, start) {
                (Some(done), Some(start)) if done < start => {}
                _ => {
                    result = Err(format!(
                        "job {job}: {dep} finished at revision {done:?}, {item} triggered at revision {start:?}"
                    ));
                    break;
                }
            }
        }
        self.check(&row, result);
    }

    /// Row: installation `inst` (a subinstallation or a root installation) left phase Init
    /// in its current job only after each of `after` had finished its current job.
    pub fn check_started_after(&mut self, row: &str, inst: Option<Value>, after: &[Option<Value>]) {
        let Some(inst) = inst else {
            self.check(row, Err("installation not found".into()));
            return;
        };
        let job = str_at(&inst, "/status/jobID");
        let start = self
            .recorder
            .left_init(Res::Installation, name_of(&inst), job);
        let mut result = Ok(());
        for pred in after {
            let Some(pred) = pred else {
                result = Err("predecessor not found".into());
                break;
            };
            let done = self.recorder.job_finished(
                Res::Installation,
                name_of(pred),
                str_at(pred, "/status/jobID"),
            );
            match (done, start) {
                (Some(done), Some(start)) if done < start => {}
                _ => {
                    result = Err(format!(
                        "{} finished at revision {done:?}, {} left Init at revision {start:?}",
                        name_of(pred),
                        name_of(&inst)
                    ));
                    break;
                }
            }
        }
        self.check(row, result);
    }

    /// Row: the subinstallation `sub` of `parent` started only after the subinstallations
    /// `after` finished.
    pub fn check_sub_order(&mut self, parent: &str, sub: &str, after: &[&str]) {
        let inst = self.subinstallation(parent, sub);
        let preds: Vec<Option<Value>> = after
            .iter()
            .map(|p| self.subinstallation(parent, p))
            .collect();
        self.check_started_after(
            &format!("subinstallation {sub} of {parent} started only after {after:?} finished"),
            inst,
            &preds,
        );
    }

    /// Compares the current state with `expected/<variant>.step-N.yaml` .
    pub fn check_oracle(&mut self, step: usize) {
        let path = self
            .dir
            .join("expected")
            .join(format!("{}.step-{step}.yaml", self.variant));
        if !path.exists() {
            println!("{} no oracle file {}", self.tag(), path.display());
            return;
        }
        let oracle = read_yaml(&path);
        let roots: BTreeMap<String, Value> = self
            .list(Res::Target, None)
            .into_iter()
            .filter(|t| label(t, CONTEXT_LABEL).unwrap_or("").is_empty())
            .map(|t| (name_of(&t).to_string(), t))
            .collect();
        for inst in oracle["installations"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            let name = inst["name"].as_str().unwrap_or("").to_string();
            let actual = self.installation(&name);
            let row = format!("oracle: Installation {name}");
            match actual {
                Some(actual) => self.oracle_installation(&actual, &inst, "", &roots),
                None => self.check(&row, Err("not found".into())),
            }
        }
        let want: Map<String, Value> = oracle["rootContextDataObjects"]
            .as_object()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| {
                let v = self
                    .oracle_overrides
                    .get(&k)
                    .cloned()
                    .unwrap_or_else(|| oracle_value(&v));
                (k, v)
            })
            .collect();
        let actual = self.root_context_data_objects();
        let want: BTreeMap<String, Value> = want.into_iter().collect();
        self.ok(
            "oracle: root-context DataObjects (names and values)",
            actual == want,
            || {
                let mut diff = Vec::new();
                for (k, v) in &want {
                    match actual.get(k) {
                        None => diff.push(format!("missing {k}")),
                        Some(a) if a != v => {
                            diff.push(format!("{k}: have {}, want {}", short(a), short(v)))
                        }
                        _ => {}
                    }
                }
                for k in actual.keys() {
                    if !want.contains_key(k) {
                        diff.push(format!("unexpected {k} = {}", short(&actual[k])));
                    }
                }
                diff.join("; ")
            },
        );
    }

    /// Checks one installation of the oracle against `actual`, whose exports go to `context`.
    fn oracle_installation(
        &mut self,
        actual: &Value,
        oracle: &Value,
        context: &str,
        roots: &BTreeMap<String, Value>,
    ) {
        let label = oracle["name"].as_str().unwrap_or("").to_string();
        let obj_name = name_of(actual).to_string();
        let row = |what: &str| format!("oracle: Installation {label}: {what}");
        let phase = oracle["phase"].as_str().unwrap_or("");
        if phase.starts_with("Unsupported") {
            println!(
                "{} oracle: {label}: {phase} (checked by EXPECTED.md rows)",
                self.tag()
            );
            return;
        }
        // Non-mock oracles only render: phases and values read back from the cluster are
        // EXPECTED.md rows, the rendered deploy items are compared here.
        if !phase.starts_with("Rendered") {
            self.eq(&row("phase"), &json!(phase_of(actual)), &json!(phase));
        }

        // Blueprint imports that are plain references (dataRef, target, targets) and not
        // overridden by importDataMappings: the referenced object holds the oracle's value.
        let mapped: BTreeSet<String> = actual
            .pointer("/spec/importDataMappings")
            .and_then(Value::as_object)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        let imports = oracle["blueprintImports"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        for data in actual
            .pointer("/spec/imports/data")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
        {
            let import = data["name"].as_str().unwrap_or("");
            let (Some(data_ref), Some(want)) = (data["dataRef"].as_str(), imports.get(import))
            else {
                continue;
            };
            if mapped.contains(import) {
                continue;
            }
            let found = self.context_object(Res::DataObject, context, data_ref);
            self.with(
                &row(&format!("import {import} (dataRef {data_ref})")),
                found.as_ref(),
                |d| {
                    if d["data"] == *want {
                        Ok(())
                    } else {
                        Err(format!("have {}, want {}", short(&d["data"]), short(want)))
                    }
                },
            );
        }
        for target in actual
            .pointer("/spec/imports/targets")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
        {
            let import = target["name"].as_str().unwrap_or("");
            let Some(want) = imports.get(import) else {
                continue;
            };
            let refs: Vec<(String, Value)> = if let Some(t) = target["target"].as_str() {
                vec![(t.to_string(), want.clone())]
            } else if let Some(list) = target["targets"].as_array() {
                let wants = want.as_array().cloned().unwrap_or_default();
                if wants.len() != list.len() {
                    self.check(
                        &row(&format!("import {import}: number of targets")),
                        Err(format!(
                            "{} in the spec, {} in the oracle",
                            list.len(),
                            wants.len()
                        )),
                    );
                    continue;
                }
                list.iter()
                    .zip(wants)
                    .map(|(t, w)| (t.as_str().unwrap_or("").to_string(), w))
                    .collect()
            } else {
                continue;
            };
            for (reference, want) in refs {
                let found = self.context_target(context, &reference);
                let expected = roots.get(want["$target"].as_str().unwrap_or(""));
                self.with(
                    &row(&format!("import {import} (target {reference})")),
                    found.as_ref(),
                    |t| same_target(t, expected),
                );
            }
        }

        // Deploy items.
        let items = self.deploy_items_of(actual);
        let oracle_items = oracle["deployItems"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let have: BTreeSet<String> = items.iter().map(|i| item_name(i).to_string()).collect();
        let want: BTreeSet<String> = oracle_items
            .iter()
            .map(|i| i["name"].as_str().unwrap_or("").to_string())
            .collect();
        self.ok(&row("deploy item names"), have == want, || {
            format!("have {have:?}, want {want:?}")
        });
        for oi in &oracle_items {
            let item = oi["name"].as_str().unwrap_or("");
            let Some(di) = items.iter().find(|d| item_name(d) == item) else {
                continue;
            };
            let irow = |what: &str| format!("oracle: DeployItem {label}/{item}: {what}");
            self.eq(&irow("spec.type"), &di["spec"]["type"], &oi["type"]);
            let rendered_only = oi["phase"]
                .as_str()
                .is_some_and(|p| p.starts_with("Rendered"));
            if !rendered_only {
                self.eq(&irow("phase"), &json!(phase_of(di)), &oi["phase"]);
            }
            self.eq(&irow("spec.config"), &di["spec"]["config"], &oi["config"]);
            if !rendered_only {
                self.eq(
                    &irow("status.providerStatus"),
                    di.pointer("/status/providerStatus").unwrap_or(&Value::Null),
                    oi.get("providerStatus").unwrap_or(&Value::Null),
                );
            }
            if let Some(timeout) = oi.get("timeout") {
                self.eq(&irow("spec.timeout"), &di["spec"]["timeout"], timeout);
            }
            let depends: BTreeSet<String> = annotation(di, DEPENDS_ON_ANNOTATION)
                .unwrap_or("")
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            let want_depends: BTreeSet<String> = oi["dependsOn"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|s| s.as_str().unwrap_or("").to_string())
                        .collect()
                })
                .unwrap_or_default();
            self.ok(&irow("dependsOn"), depends == want_depends, || {
                format!(
                    "annotation {:?}, want {want_depends:?}",
                    annotation(di, DEPENDS_ON_ANNOTATION)
                )
            });
            if let Some(export) = oi.get("export").filter(|_| !rendered_only) {
                let actual_export = self.deploy_item_export(actual, item);
                self.eq(
                    &irow("export"),
                    actual_export.as_ref().unwrap_or(&Value::Null),
                    export,
                );
            }
            if let Some(target) = oi.get("target") {
                let import = target["import"].as_str().unwrap_or("");
                let mut want = imports.get(import).cloned().unwrap_or(Value::Null);
                if let Some(key) = target.get("key").and_then(Value::as_str) {
                    want = want.get(key).cloned().unwrap_or(Value::Null);
                }
                let want_name = want["$target"].as_str().unwrap_or("").to_string();
                let actual_name = str_at(di, "/spec/target/name").to_string();
                let found = self.get(Res::Target, &actual_name);
                let expected = roots.get(&want_name);
                let is_root = context.is_empty() && !want_name.is_empty();
                self.with(
                    &irow(&format!(
                        "spec.target ({actual_name}) is Target {want_name}"
                    )),
                    found.as_ref(),
                    |t| {
                        if is_root && actual_name != want_name {
                            return Err(format!(
                                "spec.target.name {actual_name}, want {want_name}"
                            ));
                        }
                        same_target(t, expected)
                    },
                );
            } else {
                self.ok(
                    &irow("no spec.target"),
                    di.pointer("/spec/target").is_none_or(Value::is_null),
                    || short(&di["spec"]["target"]),
                );
            }
        }

        // Exports into the parent's context.
        for (key, value) in oracle["exportedDataObjects"]
            .as_object()
            .cloned()
            .unwrap_or_default()
        {
            let value = match self.oracle_overrides.get(&key) {
                Some(v) if context.is_empty() => v.clone(),
                _ => oracle_value(&value),
            };
            let found = self.context_object(Res::DataObject, context, &key);
            self.with(
                &row(&format!(
                    "exported DataObject {key} (context {:?})",
                    context
                )),
                found.as_ref(),
                |d| {
                    if d["data"] == value {
                        Ok(())
                    } else {
                        Err(format!(
                            "have {}, want {}",
                            short(&d["data"]),
                            short(&value)
                        ))
                    }
                },
            );
        }
        for (key, spec) in oracle["exportedTargets"]
            .as_object()
            .cloned()
            .unwrap_or_default()
        {
            let found = self.context_object(Res::Target, context, &key);
            let expected = json!({"spec": spec});
            self.with(
                &row(&format!("exported Target {key} (context {:?})", context)),
                found.as_ref(),
                |t| same_target(t, Some(&expected)),
            );
        }

        // Subinstallations.
        let subs = self.subinstallations(&obj_name);
        let oracle_subs = oracle["subinstallations"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if oracle.get("subinstallations").is_some() || phase == "Succeeded" {
            let have: BTreeSet<String> = subs
                .iter()
                .map(|s| {
                    annotation(s, SUBINST_NAME_ANNOTATION)
                        .unwrap_or("")
                        .to_string()
                })
                .collect();
            let want: BTreeSet<String> = oracle_subs
                .iter()
                .map(|s| s["name"].as_str().unwrap_or("").to_string())
                .collect();
            self.ok(&row("subinstallation names"), have == want, || {
                format!("have {have:?}, want {want:?}")
            });
        }
        let sub_context = format!("Inst.{obj_name}");
        for os in &oracle_subs {
            let template = os["name"].as_str().unwrap_or("");
            match subs
                .iter()
                .find(|s| annotation(s, SUBINST_NAME_ANNOTATION) == Some(template))
            {
                Some(sub) => self.oracle_installation(sub, os, &sub_context, roots),
                None => self.check(
                    &row(&format!("subinstallation {template}")),
                    Err("not found".into()),
                ),
            }
        }
    }

    // --- reporting ---------------------------------------------------------------------------

    /// One line per installation (with subinstallations), execution and deploy item: phase,
    /// generations, jobs, lastError.
    pub fn dump(&self) -> String {
        let mut out = String::new();
        for inst in self.list(Res::Installation, None) {
            out.push_str(&format!(
                "  Installation {}\n",
                describe_installation(&inst)
            ));
        }
        for exec in self.list(Res::Execution, None) {
            out.push_str(&format!("  Execution {}\n", describe_installation(&exec)));
        }
        for di in self.list(Res::DeployItem, None) {
            out.push_str(&format!(
                "  DeployItem {} [{}] {}\n",
                item_name(&di),
                str_at(&di, "/spec/type"),
                describe_installation(&di)
            ));
        }
        let dos: Vec<String> = self
            .list(Res::DataObject, None)
            .iter()
            .map(|d| {
                let context = label(d, CONTEXT_LABEL).unwrap_or("");
                let key = label(d, KEY_LABEL).unwrap_or("");
                if context.is_empty() {
                    format!("{}={}", name_of(d), short(&d["data"]))
                } else {
                    format!("{context}/{key}={}", short(&d["data"]))
                }
            })
            .collect();
        out.push_str(&format!("  DataObjects: {}\n", dos.join(", ")));
        let targets: Vec<String> = self
            .list(Res::Target, None)
            .iter()
            .map(|t| match label(t, CONTEXT_LABEL).unwrap_or("") {
                "" => name_of(t).to_string(),
                c => format!("{c}/{}", label(t, KEY_LABEL).unwrap_or("")),
            })
            .collect();
        out.push_str(&format!("  Targets: {}\n", targets.join(", ")));
        for p in self.recorder.problems() {
            out.push_str(&format!("  recorder: {p}\n"));
        }
        out
    }

    /// The daemon's last warnings and errors.
    pub fn log_problems(&self) -> String {
        let logs = self.daemon.logs();
        let lines: Vec<&str> = logs
            .lines()
            .filter(|l| l.contains("WARN") || l.contains("ERROR"))
            .collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// Ends the scenario: prints the timing and panics with every failed row.
    pub fn finish(mut self) {
        self.timings.push(format!(
            "step {} {:.1}s",
            self.step,
            self.step_started.elapsed().as_secs_f64()
        ));
        println!(
            "[{}] done in {:.1}s ({}); {} rows passed, {} failed",
            self.id,
            self.started.elapsed().as_secs_f64(),
            self.timings.join(", "),
            self.passed,
            self.failures.len()
        );
        if !self.failures.is_empty() {
            let logs = self.log_problems();
            panic!(
                "scenario {}: {} row(s) failed:\n  {}\n\ncurrent state:\n{}{}",
                self.id,
                self.failures.len(),
                self.failures.join("\n  "),
                self.dump(),
                if logs.is_empty() {
                    String::new()
                } else {
                    format!("daemon warnings and errors (last 30):\n{logs}\n")
                }
            );
        }
    }
}

/// The name of the Execution of `inst`: `status.executionRef.name`, else (an Execution being
/// named like its installation) the installation's name.
pub fn execution_name(inst: &Value) -> &str {
    match str_at(inst, "/status/executionRef/name") {
        "" => name_of(inst),
        name => name,
    }
}

/// The item name of a deploy item (label `execution.landscaper.gardener.cloud/name`).
pub fn item_name(di: &Value) -> &str {
    label(di, EXEC_ITEM_LABEL).unwrap_or_else(|| name_of(di))
}

/// `name: phase, generation g/observed o, jobID j/finished f, lastError ...`.
pub fn describe_installation(obj: &Value) -> String {
    let short_id = |p: &str| {
        let s = str_at(obj, p);
        s.get(..8).unwrap_or(s).to_string()
    };
    let mut s = format!(
        "{}: phase {:?}, generation {}/observed {}, jobID {:?}/finished {:?}",
        name_of(obj),
        phase_of(obj),
        obj.pointer("/metadata/generation").unwrap_or(&Value::Null),
        obj.pointer("/status/observedGeneration")
            .unwrap_or(&Value::Null),
        short_id("/status/jobID"),
        short_id("/status/jobIDFinished"),
    );
    if obj.pointer("/metadata/deletionTimestamp").is_some() {
        s.push_str(", deleting");
    }
    if let Some(op) = annotation(obj, OPERATION_ANNOTATION) {
        s.push_str(&format!(", operation={op}"));
    }
    if let Some(e) = obj.pointer("/status/lastError").filter(|e| !e.is_null()) {
        s.push_str(&format!(
            ", lastError {{operation: {:?}, reason: {:?}, codes: {}, message: {:?}}}",
            str_at(e, "/operation"),
            str_at(e, "/reason"),
            e.get("codes").map(short).unwrap_or_default(),
            str_at(e, "/message")
        ));
    }
    s
}

/// Whether Target `actual` has the spec of `expected` (an object with `spec`). The API
/// redacts inline kubeconfigs, so a redacted kubeconfig matches any string.
pub fn same_target(actual: &Value, expected: Option<&Value>) -> Result<(), String> {
    let Some(expected) = expected else {
        return Err("the expected Target is unknown".into());
    };
    let mut want = expected["spec"].clone();
    let have = actual["spec"].clone();
    if have.pointer("/config/kubeconfig").and_then(Value::as_str) == Some(REDACTED)
        && want
            .pointer("/config/kubeconfig")
            .is_some_and(Value::is_string)
        && let Some(k) = want.pointer_mut("/config/kubeconfig")
    {
        *k = json!(REDACTED);
    }
    if have == want {
        Ok(())
    } else {
        Err(format!(
            "{} has spec {}, want {}",
            name_of(actual),
            short(&have),
            short(&want)
        ))
    }
}

/// The data of the first manifest in a mock deploy item's `status.providerStatus`.
pub fn first_manifest(di: &Value) -> Value {
    di.pointer("/status/providerStatus/manifests/0")
        .cloned()
        .unwrap_or(Value::Null)
}

/// Sends a JSON merge patch (what `kubectl annotate` sends) with the daemon's bearer token
/// (`<data>/api-token`, when present); returns the status code and the whole response.
pub fn patch(daemon: &Daemon, path: &str, body: &Value) -> std::io::Result<(u16, String)> {
    let host_port = daemon.server.trim_start_matches("http://");
    let authorization = std::fs::read_to_string(daemon.data.join("api-token"))
        .map(|t| format!("Authorization: Bearer {}\r\n", t.trim()))
        .unwrap_or_default();
    let mut stream = TcpStream::connect(host_port)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let body = body.to_string();
    stream.write_all(
        format!(
            "PATCH {path} HTTP/1.1\r\nHost: {host_port}\r\n{authorization}Content-Type: application/merge-patch+json\r\nAccept: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let code = response
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Ok((code, response))
}

/// Non-mock oracles mark values the deployer reads back from the cluster as
/// `(from mock variant) <JSON>`: the value the real deployer must produce.
fn oracle_value(v: &Value) -> Value {
    match v
        .as_str()
        .and_then(|s| s.strip_prefix("(from mock variant) "))
    {
        Some(rest) => serde_json::from_str(rest).unwrap_or_else(|_| Value::String(rest.into())),
        None => v.clone(),
    }
}
