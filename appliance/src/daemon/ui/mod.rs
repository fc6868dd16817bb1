//! The status page: server-rendered HTML (minijinja, templates embedded in the binary, no
//! external assets) that reads without JavaScript, and a small inline script that keeps the
//! open page current from the store's change feed (server-sent events on `/ui/events`; no
//! polling): it fetches only the rows whose objects changed (`/ui/rows`), the summary, and the
//! list only when installations come or go.
//!
//! - `/`: counts by phase, each failure once at its root cause with the path to it, running
//!   jobs, manifest files with errors, transport archives, and the installations as a list
//!   filtered by namespace, phase and text (`?ns=&phase=&q=`) and paged (`&page=&size=`).
//!   The list is computed once per store revision from a cache that applies the change feed
//!   ([`cache`]), so a page costs about the same at 10 and at 10,000 installations.
//! - `/ui/installations/{namespace}/{name}`: one installation: pictures of its tree, the data
//!   flow between it and its siblings, the deploy-item DAG of its execution and a timeline of
//!   the current and last job ([`graph`]); the manifest file and line that define it, its
//!   spec and imports (secrets redacted unless signed in), conditions, exports, history and
//!   the reconcile and interrupt actions.
//! - `/ui/files?path=`: a manifest file with line numbers (signed-in readers only).
//! - `POST /ui/actions`: the actions, authorised by the session cookie or the API token
//!   entered in the form. `POST /ui/login-links` (token or Unix socket; what
//!   `landscaper-appliance ui` calls) makes a one-time link to `/ui/login?code=`, which sets
//!   the session cookie ([`session`]).
//!
//! `?fragment=1` answers only the body (`fragment=summary`, `fragment=list`: one section).

pub mod cache;
pub mod graph;
pub mod index;
pub mod session;
pub mod view;

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Instant;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Extension, Form, Json, Router};
use futures_util::{Stream, StreamExt};
use landscaper_store::model::constants::{
    DATA_OBJECT_SOURCE_LABEL, DATA_OBJECT_SOURCE_TYPE_EXPORT, DATA_OBJECT_SOURCE_TYPE_LABEL,
    ENCOMPASSED_BY_LABEL, INSTALLATION_PREFIX, OPERATION_ANNOTATION, OPERATION_INTERRUPT,
    OPERATION_RECONCILE,
};
use landscaper_store::{ChangeType, Kind, LabelSelector, ObjectKey, Store, StoreError, object};
use minijinja::Environment;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_stream::wrappers::BroadcastStream;

use crate::daemon::api::ApiState;
use crate::daemon::api::objects::present_as;
use crate::daemon::api::token::{Caller, TrustedConnection};
use index::{Filter, Index};
use view::{InstallationNode, Snapshot};

/// What the status page keeps between requests.
#[derive(Debug, Default)]
pub struct UiState {
    pub cache: cache::Cache,
    pub sessions: session::Sessions,
    manifests_dir: OnceLock<PathBuf>,
}

impl UiState {
    /// The manifests folder, for the links to the file and line that define an object.
    pub fn set_manifests_dir(&self, dir: PathBuf) {
        let _ = self.manifests_dir.set(dir);
    }
}

const SECURITY_HEADERS: [(&str, &str); 3] = [
    // Inline style and script only: nothing is loaded from anywhere else.
    (
        "content-security-policy",
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "same-origin"),
];

/// Where `landscaper-appliance ui` asks for a login link.
pub const LOGIN_LINKS_PATH: &str = "/ui/login-links";

pub fn routes(state: ApiState) -> Router {
    Router::new()
        .route("/", get(overview))
        .route("/ui", get(|| async { Redirect::to("/") }))
        .route("/ui/rows", get(rows))
        .route("/ui/installations/{namespace}/{name}", get(installation))
        .route("/ui/files", get(file))
        .route("/ui/events", get(events))
        .route("/ui/actions", post(action))
        .route(LOGIN_LINKS_PATH, post(login_link))
        .route("/ui/login", get(login))
        .route("/ui/logout", post(logout))
        .with_state(state)
}

fn templates() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        for (name, source) in [
            ("page.html", include_str!("templates/page.html")),
            ("macros.html", include_str!("templates/macros.html")),
            ("overview.html", include_str!("templates/overview.html")),
            ("summary.html", include_str!("templates/summary.html")),
            ("list.html", include_str!("templates/list.html")),
            ("rows.html", include_str!("templates/rows.html")),
            (
                "installation.html",
                include_str!("templates/installation.html"),
            ),
            ("file.html", include_str!("templates/file.html")),
        ] {
            // The templates are part of the binary; the unit tests render every one.
            if let Err(e) = env.add_template(name, source) {
                tracing::error!(template = name, error = %e, "status page template does not parse");
            }
        }
        env
    })
}

#[derive(Debug, Default, Deserialize)]
pub struct PageQuery {
    fragment: Option<String>,
    /// A message to show after an action (set by the redirect that follows it).
    done: Option<String>,
    failed: Option<String>,
    #[serde(default)]
    ns: String,
    #[serde(default)]
    phase: String,
    #[serde(default)]
    q: String,
    page: Option<usize>,
    size: Option<usize>,
}

fn to_value<T: Serialize>(x: T) -> minijinja::Value {
    minijinja::Value::from(minijinja::value::Serde(x))
}

fn html(status: StatusCode, body: String) -> Response {
    let mut response = (status, Html(body)).into_response();
    let headers = response.headers_mut();
    for (name, value) in SECURITY_HEADERS {
        headers.insert(name, HeaderValue::from_static(value));
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn render(template: &str, context: minijinja::Value) -> Result<String, Response> {
    templates()
        .get_template(template)
        .and_then(|t| t.render(context))
        .map_err(|e| {
            tracing::error!(template, error = %e, "rendering the status page failed");
            html(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("<p>rendering {template} failed; see the daemon log</p>"),
            )
        })
}

/// Renders `template` with `context`, inside the page frame unless only the fragment is
/// wanted.
fn render_page(
    title: &str,
    template: &str,
    context: minijinja::Value,
    fragment: bool,
    signed_in: bool,
) -> Response {
    let main = match render(template, context.clone()) {
        Ok(main) => main,
        Err(response) => return response,
    };
    if fragment {
        return html(StatusCode::OK, main);
    }
    let attr = |name: &str| {
        context
            .get_attr(name)
            .ok()
            .filter(|v| !v.is_undefined())
            .unwrap_or_else(|| minijinja::Value::from(""))
    };
    let page = render(
        "page.html",
        minijinja::context! {
            title => title,
            revision => attr("revision"),
            page_kind => attr("page_kind"),
            watched => attr("watched"),
            signed_in => signed_in,
            main => minijinja::Value::from_safe_string(main),
        },
    );
    match page {
        Ok(page) => html(StatusCode::OK, page),
        Err(response) => response,
    }
}

fn flash(query: &PageQuery) -> (Option<String>, &'static str) {
    match (&query.done, &query.failed) {
        (_, Some(f)) => (Some(f.clone()), "bad"),
        (Some(d), None) => (Some(d.clone()), "ok"),
        _ => (None, ""),
    }
}

fn store_failure(e: impl std::fmt::Display) -> Response {
    tracing::error!(error = %e, "status page: reading the store failed");
    html(
        StatusCode::SERVICE_UNAVAILABLE,
        "<p>The store could not be read; see the daemon log.</p>".into(),
    )
}

/// Whether the request may act and see secrets: the Unix socket, the API token, or a valid
/// session cookie.
fn signed_in(state: &ApiState, headers: &HeaderMap, trusted: bool) -> bool {
    Caller::new(headers, trusted).is_authorised(state.token.as_ref()) || has_session(state, headers)
}

fn has_session(state: &ApiState, headers: &HeaderMap) -> bool {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(session::cookie_value)
        .any(|s| state.ui.sessions.is_valid(s, Instant::now()))
}

async fn current(
    state: &ApiState,
) -> Result<(std::sync::Arc<Snapshot>, std::sync::Arc<Index>), Response> {
    let ui = state.ui.clone();
    let store = state.store.clone();
    match tokio::task::spawn_blocking(move || ui.cache.current(&store)).await {
        Ok(Ok(found)) => Ok(found),
        Ok(Err(e)) => Err(store_failure(e)),
        Err(e) => Err(store_failure(e)),
    }
}

/// The overview's context: summary, filter choices and the page of the list.
pub fn overview_context(index: &Index, query: &PageQuery) -> minijinja::Value {
    let filter = Filter {
        namespace: query.ns.clone(),
        phase: query.phase.clone(),
        text: query.q.clone(),
    };
    let page = index.page(
        &filter,
        query.page.unwrap_or(1),
        query.size.unwrap_or(index::PAGE_SIZE),
    );
    let o = &index.overview;
    let limit = index::SUMMARY_LIMIT;
    let files_with_errors: Vec<&view::FileRow> =
        o.files.iter().filter(|f| f.error.is_some()).collect();
    let (flash, flash_tone) = flash(query);
    // The query string of the page without `page` (the pager adds its own).
    let mut base = Vec::new();
    for (k, v) in [
        ("ns", &filter.namespace),
        ("phase", &filter.phase),
        ("q", &filter.text),
    ] {
        if !v.is_empty() {
            base.push(format!("{k}={}", percent_encode(v)));
        }
    }
    if page.size != index::PAGE_SIZE {
        base.push(format!("size={}", page.size));
    }
    minijinja::context! {
        page_kind => "overview",
        revision => o.revision,
        counts => to_value(&o.counts),
        causes => to_value(o.causes.iter().take(limit).collect::<Vec<_>>()),
        causes_total => o.causes.len(),
        running => to_value(o.running.iter().take(limit).collect::<Vec<_>>()),
        running_total => o.running.len(),
        files_total => o.files.len(),
        files_applied => o.files.iter().filter(|f| f.error.is_none()).count(),
        file_errors => to_value(files_with_errors.iter().take(limit).collect::<Vec<_>>()),
        file_errors_total => files_with_errors.len(),
        archives => to_value(&o.archives),
        namespaces => to_value(&index.namespaces),
        phases => to_value(&index.phases),
        filter => to_value(&filter),
        list => to_value(&page),
        base => base.join("&"),
        flash => flash,
        flash_tone => flash_tone,
    }
}

async fn overview(
    State(state): State<ApiState>,
    trusted: Option<Extension<TrustedConnection>>,
    headers: HeaderMap,
    Query(query): Query<PageQuery>,
) -> Response {
    let (_, index) = match current(&state).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let context = overview_context(&index, &query);
    let template = match query.fragment.as_deref() {
        Some("summary") => "summary.html",
        Some("list") => "list.html",
        _ => "overview.html",
    };
    render_page(
        "Overview",
        template,
        context,
        query.fragment.is_some(),
        signed_in(&state, &headers, trusted.is_some()),
    )
}

#[derive(Debug, Deserialize)]
pub struct RowsQuery {
    #[serde(default)]
    keys: String,
}

/// The list rows of the installations named in `keys` (comma-separated `Installation/ns/name`),
/// for the live update of an open overview.
async fn rows(State(state): State<ApiState>, Query(query): Query<RowsQuery>) -> Response {
    let (_, index) = match current(&state).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let entries: Vec<&index::Entry> = query
        .keys
        .split(',')
        .take(index::MAX_PAGE_SIZE)
        .filter_map(|k| index.entry(k.trim()))
        .collect();
    match render(
        "rows.html",
        minijinja::context! { entries => to_value(&entries), revision => index.overview.revision },
    ) {
        Ok(body) => html(StatusCode::OK, body),
        Err(response) => response,
    }
}
/// One entry of the history table.
#[derive(Debug, Serialize)]
struct HistoryRow {
    time: String,
    revision: u64,
    kind: &'static str,
    name: String,
    change: &'static str,
    phase: Option<String>,
    tone: &'static str,
    previous_phase: Option<String>,
    previous_tone: &'static str,
    /// The message's first line; the rest (a code excerpt) is `block`.
    message: Option<String>,
    block: Option<String>,
    /// The message only says the object waits (not an error).
    waiting: bool,
}

#[derive(Debug, Serialize)]
struct ExportView {
    kind: &'static str,
    name: String,
    key: Option<String>,
    value: String,
}

/// The DataObjects and Targets the installation exported (Landscaper labels them with
/// `data.landscaper.gardener.cloud/source: Inst.<name>` and `sourceType: export`).
fn exports_of(
    store: &Store,
    namespace: &str,
    name: &str,
    reveal: bool,
) -> Result<Vec<ExportView>, StoreError> {
    let selector = LabelSelector::parse(&format!(
        "{DATA_OBJECT_SOURCE_LABEL}={INSTALLATION_PREFIX}{name},{DATA_OBJECT_SOURCE_TYPE_LABEL}={DATA_OBJECT_SOURCE_TYPE_EXPORT}"
    ))
    .unwrap_or_default();
    let key_label = landscaper_store::model::constants::DATA_OBJECT_KEY_LABEL;
    let mut out = Vec::new();
    for (kind, label) in [(Kind::DataObject, "DataObject"), (Kind::Target, "Target")] {
        for o in store.list(kind, Some(namespace), &selector)?.items {
            let key = object::labels(&o).get(key_label).cloned();
            // As the API shows it: kubeconfigs and Secret copies redacted unless signed in.
            let o = present_as(kind, o, reveal);
            let value = if kind == Kind::Target {
                o.get("spec").cloned().unwrap_or(Value::Null)
            } else {
                o.get("data").cloned().unwrap_or(Value::Null)
            };
            out.push(ExportView {
                kind: label,
                name: object::name(&o).to_string(),
                key,
                value: serde_json::to_string_pretty(&value).unwrap_or_default(),
            });
        }
    }
    out.sort_by(|a, b| (&a.key, &a.name).cmp(&(&b.key, &b.name)));
    Ok(out)
}

/// The history of the installation, its execution and deploy items, newest first.
fn history_of(store: &Store, node: &InstallationNode) -> Result<Vec<HistoryRow>, StoreError> {
    let mut keys = vec![ObjectKey::new(
        Kind::Installation,
        &node.row.namespace,
        &node.row.name,
    )];
    if let Some(e) = &node.execution {
        keys.push(ObjectKey::new(
            Kind::Execution,
            &e.row.namespace,
            &e.row.name,
        ));
        keys.extend(
            e.items
                .iter()
                .map(|i| ObjectKey::new(Kind::DeployItem, &i.namespace, &i.name)),
        );
    }
    let mut rows = Vec::new();
    for key in keys {
        for h in store.history(&key, 50)? {
            if !(h.is_phase_transition() || h.change_type != ChangeType::Modified) {
                continue;
            }
            rows.push(HistoryRow {
                time: h.time.clone(),
                revision: h.revision,
                kind: h.key.kind.as_str(),
                name: h.key.name.clone(),
                change: match h.change_type {
                    ChangeType::Added => "created",
                    ChangeType::Modified => "changed",
                    ChangeType::Deleted => "deleted",
                },
                tone: view::tone(h.phase.as_deref().unwrap_or_default()),
                previous_tone: view::tone(h.previous_phase.as_deref().unwrap_or_default()),
                phase: h.phase.clone(),
                previous_phase: h.previous_phase.clone(),
                message: h.message.as_deref().map(|m| view::split_block(m).0),
                block: h.message.as_deref().and_then(|m| view::split_block(m).1),
                waiting: h.waiting,
            });
        }
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.revision));
    Ok(rows)
}

/// The timeline's spans: the installation, its execution, items and direct children, each
/// with its current job (`transitionTimes`) and its last one (from the history).
fn timeline(node: &InstallationNode, history: &[HistoryRow]) -> Vec<graph::Span> {
    let mut objects: Vec<&view::Row> = vec![&node.row];
    if let Some(e) = &node.execution {
        objects.push(&e.row);
        objects.extend(e.items.iter());
    }
    objects.extend(node.children.iter().map(|c| &c.row));
    let mut spans = Vec::new();
    for r in objects {
        let label = format!("{} {}", r.kind, r.template.as_deref().unwrap_or(&r.name));
        // Oldest first, phases only.
        let phases: Vec<(String, String)> = history
            .iter()
            .rev()
            .filter(|h| h.kind == r.kind && h.name == r.name)
            .filter_map(|h| Some((h.time.clone(), h.phase.clone()?)))
            .collect();
        if let Some(start) = &r.started {
            spans.push(graph::Span {
                label: label.clone(),
                job: "current",
                tone: r.tone,
                start: start.clone(),
                end: if r.running { None } else { r.finished.clone() },
            });
        }
        if let Some((start, end, phase)) = graph::last_job(&phases, r.started.as_deref()) {
            spans.push(graph::Span {
                label,
                job: "last",
                tone: view::tone(&phase),
                start,
                end: Some(end),
            });
        }
    }
    spans
}

/// The manifest file that defines `kind namespace/name` and the 1-based line of its document.
fn defined_in(
    snapshot: &Snapshot,
    dir: Option<&PathBuf>,
    kind: &str,
    namespace: &str,
    name: &str,
) -> Option<(String, usize)> {
    let file = snapshot.files.iter().find(|f| {
        f["status"]["objects"].as_array().is_some_and(|objects| {
            objects.iter().any(|o| {
                o["kind"] == kind
                    && o["name"] == name
                    && o["namespace"].as_str().unwrap_or_default() == namespace
            })
        })
    })?;
    let path = object::str_at(file, "/spec/path").to_string();
    let line = dir
        .and_then(|d| std::fs::read_to_string(d.join(&path)).ok())
        .and_then(|text| document_line(&text, kind, name))
        .unwrap_or(1);
    Some((path, line))
}

/// The line of the `kind:` of the YAML document that defines `kind`/`name` (the file is split
/// at `---` lines as the ingest does).
pub fn document_line(text: &str, kind: &str, name: &str) -> Option<usize> {
    let mut kind_line = None;
    let mut found_name = false;
    let want_kind = format!("kind: {kind}");
    let want_name = format!("name: {name}");
    for (i, line) in text.lines().enumerate() {
        let no = i + 1;
        if line.starts_with("---") {
            if let (Some(k), true) = (kind_line, found_name) {
                return Some(k);
            }
            kind_line = None;
            found_name = false;
            continue;
        }
        let trimmed = line.trim_end();
        if trimmed == want_kind {
            kind_line = Some(no);
        }
        let t = trimmed.trim_start();
        if t == want_name || t == format!("name: \"{name}\"") || t == format!("name: '{name}'") {
            found_name = true;
        }
    }
    match (kind_line, found_name) {
        (Some(k), true) => Some(k),
        _ => None,
    }
}

/// The installation's spec as YAML, as the API shows it (redacted unless signed in).
fn spec_yaml(o: &Value, reveal: bool) -> String {
    let o = present_as(Kind::Installation, o.clone(), reveal);
    serde_saphyr::to_string(&o["spec"]).unwrap_or_default()
}

/// The values the installation imported (DataObjects labelled as its imports), redacted
/// unless signed in.
fn imports_of(
    store: &Store,
    namespace: &str,
    name: &str,
    reveal: bool,
) -> Result<Vec<ExportView>, StoreError> {
    let selector = LabelSelector::parse(&format!(
        "{DATA_OBJECT_SOURCE_LABEL}={INSTALLATION_PREFIX}{name},{DATA_OBJECT_SOURCE_TYPE_LABEL}={}",
        landscaper_store::model::constants::DATA_OBJECT_SOURCE_TYPE_IMPORT
    ))
    .unwrap_or_default();
    let key_label = landscaper_store::model::constants::DATA_OBJECT_KEY_LABEL;
    let mut out = Vec::new();
    for o in store
        .list(Kind::DataObject, Some(namespace), &selector)?
        .items
    {
        let key = object::labels(&o).get(key_label).cloned();
        let o = present_as(Kind::DataObject, o, reveal);
        out.push(ExportView {
            kind: "DataObject",
            name: object::name(&o).to_string(),
            key,
            value: serde_json::to_string_pretty(o.get("data").unwrap_or(&Value::Null))
                .unwrap_or_default(),
        });
    }
    out.sort_by(|a, b| (&a.key, &a.name).cmp(&(&b.key, &b.name)));
    Ok(out)
}

async fn installation(
    State(state): State<ApiState>,
    trusted: Option<Extension<TrustedConnection>>,
    headers: HeaderMap,
    Path((namespace, name)): Path<(String, String)>,
    Query(query): Query<PageQuery>,
) -> Response {
    let (snapshot, index) = match current(&state).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let reveal = signed_in(&state, &headers, trusted.is_some());
    let key = format!("Installation/{namespace}/{name}");
    let Some(node) = index.node(&key).cloned() else {
        return html(
            StatusCode::NOT_FOUND,
            format!(
                "<p>No installation {}/{} (<a href=\"/\">overview</a>).</p>",
                escape(&namespace),
                escape(&name)
            ),
        );
    };
    let path = index
        .entry(&key)
        .map(|e| e.path.clone())
        .unwrap_or_default();
    let store = state.store.clone();
    let (ns, n) = (namespace.clone(), name.clone());
    let node_for_read = node.clone();
    let read = tokio::task::spawn_blocking(move || {
        let exports = exports_of(&store, &ns, &n, reveal)?;
        let imports = imports_of(&store, &ns, &n, reveal)?;
        let history = history_of(&store, &node_for_read)?;
        Ok::<_, StoreError>((exports, imports, history))
    })
    .await;
    let (exports, imports, mut history) = match read {
        Ok(Ok(found)) => found,
        Ok(Err(e)) => return store_failure(e),
        Err(e) => return store_failure(e),
    };
    let find = |ns: &str, n: &str| {
        snapshot
            .installations
            .binary_search_by(|o| (object::namespace(o), object::name(o)).cmp(&(ns, n)))
            .ok()
            .map(|i| &snapshot.installations[i])
    };
    let object = find(&namespace, &name);
    let owner = object.map(|i| {
        let key = ObjectKey::new(Kind::Installation, &namespace, &name);
        crate::daemon::api::write::owner_among(&snapshot.files, &key, i).describe()
    });
    // Pictures: the tree of its root, the data flow among it and its siblings (or its
    // children when it has some), the deploy-item DAG, the timeline.
    let root_key = path
        .first()
        .map(|r| format!("Installation/{namespace}/{r}"))
        .unwrap_or_else(|| key.clone());
    let tree = index
        .node(&root_key)
        .map(|root| graph::tree_svg(root, &key))
        .unwrap_or_default();
    let flows = |nodes: &[InstallationNode]| -> Vec<graph::Flow> {
        nodes
            .iter()
            .map(|c| {
                let (imports, exports) = find(&c.row.namespace, &c.row.name)
                    .map(graph::flow_of)
                    .unwrap_or_default();
                graph::Flow {
                    row: Some(c.row.clone()),
                    imports,
                    exports,
                }
            })
            .collect()
    };
    let siblings_flow = match path.last() {
        Some(parent) => index
            .node(&format!("Installation/{namespace}/{parent}"))
            .map(|p| {
                graph::data_flow(
                    &format!("data flow among the subinstallations of {parent}"),
                    &flows(&p.children),
                    &key,
                )
            })
            .unwrap_or_default(),
        None => String::new(),
    };
    let children_flow = if node.children.is_empty() {
        String::new()
    } else {
        graph::data_flow(
            &format!("data flow among the subinstallations of {name}"),
            &flows(&node.children),
            "",
        )
    };
    let dag = node
        .execution
        .as_ref()
        .map(|e| graph::deploy_item_dag(&e.items))
        .unwrap_or_default();
    let spans = timeline(&node, &history);
    let timeline_svg = graph::timeline_svg(&spans, jiff::Timestamp::now());
    history.truncate(200);
    let defined = defined_in(
        &snapshot,
        state.ui.manifests_dir.get(),
        "Installation",
        &namespace,
        &name,
    );
    let mut watched: Vec<String> = vec![node.row.key.clone()];
    if let Some(e) = &node.execution {
        watched.push(e.row.key.clone());
        watched.extend(e.items.iter().map(|i| i.key.clone()));
    }
    watched.extend(node.children.iter().map(|c| c.row.key.clone()));
    let (flash, flash_tone) = flash(&query);
    render_page(
        &format!("Installation {namespace}/{name}"),
        "installation.html",
        minijinja::context! {
            page_kind => "installation",
            watched => watched.join(" "),
            node => to_value(&node),
            path => path,
            owner => owner,
            exports => to_value(&exports),
            imports => to_value(&imports),
            spec => object.map(|o| spec_yaml(o, reveal)).unwrap_or_default(),
            history => to_value(&history),
            revision => snapshot.revision,
            tree_svg => minijinja::Value::from_safe_string(tree),
            siblings_svg => minijinja::Value::from_safe_string(siblings_flow),
            children_svg => minijinja::Value::from_safe_string(children_flow),
            dag_svg => minijinja::Value::from_safe_string(dag),
            timeline_svg => minijinja::Value::from_safe_string(timeline_svg),
            defined_path => defined.as_ref().map(|d| d.0.clone()),
            defined_line => defined.as_ref().map(|d| d.1),
            signed_in => reveal,
            flash => flash,
            flash_tone => flash_tone,
        },
        query.fragment.is_some(),
        reveal,
    )
}

#[derive(Debug, Deserialize)]
pub struct FileQuery {
    path: String,
}

/// One manifest file with line numbers (`#L12` anchors); signed-in readers only (manifests
/// may hold Secrets).
async fn file(
    State(state): State<ApiState>,
    trusted: Option<Extension<TrustedConnection>>,
    headers: HeaderMap,
    Query(query): Query<FileQuery>,
) -> Response {
    if !signed_in(&state, &headers, trusted.is_some()) {
        return html(
            StatusCode::FORBIDDEN,
            format!(
                "<p>Showing <code>{}</code> needs a signed-in page: run <code>landscaper-appliance ui</code> on the host and open the link it prints. <a href=\"/\">Overview</a></p>",
                escape(&query.path)
            ),
        );
    }
    let Some(dir) = state.ui.manifests_dir.get() else {
        return html(
            StatusCode::NOT_FOUND,
            "<p>No manifests folder is known.</p>".into(),
        );
    };
    // Only files the ingest recorded: no path outside the folder can be asked for.
    let (snapshot, _) = match current(&state).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    if !snapshot
        .files
        .iter()
        .any(|f| object::str_at(f, "/spec/path") == query.path)
    {
        return html(
            StatusCode::NOT_FOUND,
            format!(
                "<p>No manifest file <code>{}</code>.</p>",
                escape(&query.path)
            ),
        );
    }
    let text = match tokio::fs::read_to_string(dir.join(&query.path)).await {
        Ok(text) => text,
        Err(e) => {
            return html(
                StatusCode::NOT_FOUND,
                format!(
                    "<p>reading <code>{}</code>: {}</p>",
                    escape(&query.path),
                    escape(&e.to_string())
                ),
            );
        }
    };
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    render_page(
        &format!("File {}", query.path),
        "file.html",
        minijinja::context! { path => query.path, lines => lines, revision => snapshot.revision },
        false,
        true,
    )
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The key of what an object belongs to on the page: a DeployItem's Execution, an Execution's
/// Installation, a subinstallation's parent.
fn owner_key(kind: Kind, namespace: &str, o: &Value) -> Option<String> {
    let owner_kind = match kind {
        Kind::DeployItem => "Execution",
        Kind::Execution => "Installation",
        Kind::Installation => {
            let parent = o
                .pointer("/metadata/labels")
                .and_then(|l| l.get(ENCOMPASSED_BY_LABEL))
                .and_then(Value::as_str)?;
            return Some(format!("Installation/{namespace}/{parent}"));
        }
        _ => return None,
    };
    o.pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r["kind"] == owner_kind)
        .and_then(|r| r["name"].as_str())
        .map(|n| format!("{owner_kind}/{namespace}/{n}"))
}

/// `change` events for every committed change to the objects the page shows; `data` holds
/// the revision and, per change, the key, the type (ADDED, MODIFIED, DELETED) and the key of
/// its owner.
async fn events(
    State(state): State<ApiState>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let hello = futures_util::stream::once(async {
        Ok(Event::default()
            .event("hello")
            .data(json!({"status": "connected"}).to_string()))
    });
    let changes = BroadcastStream::new(state.store.subscribe()).filter_map(move |received| {
        let event = match received {
            Ok(set) => {
                let changes: Vec<Value> = set
                    .changes
                    .iter()
                    .filter(|c| cache::shown(c.key.kind) || matches!(c.key.kind, Kind::DataObject | Kind::Target))
                    .map(|c| {
                        json!({
                            // As the page's element keys: `Kind/namespace/name`.
                            "key": format!("{}/{}/{}", c.key.kind.as_str(), c.key.namespace, c.key.name),
                            "type": match c.change_type {
                                ChangeType::Added => "ADDED",
                                ChangeType::Modified => "MODIFIED",
                                ChangeType::Deleted => "DELETED",
                            },
                            "owner": owner_key(c.key.kind, &c.key.namespace, &c.object),
                        })
                    })
                    .collect();
                (!changes.is_empty()).then(|| {
                    Event::default()
                        .event("change")
                        .id(set.revision.to_string())
                        .data(json!({"revision": set.revision, "changes": changes}).to_string())
                })
            }
            // Missed changes: the page refreshes what it shows.
            Err(_) => Some(
                Event::default()
                    .event("change")
                    .data(json!({"lagged": true}).to_string()),
            ),
        };
        std::future::ready(event.map(Ok))
    });
    let stream = hello
        .chain(changes)
        .take_until(state.shutdown.clone().cancelled_owned());
    Sse::new(stream).keep_alive(KeepAlive::default())
}

#[derive(Debug, Deserialize)]
pub struct ActionForm {
    namespace: String,
    name: String,
    operation: String,
    #[serde(default)]
    token: String,
    #[serde(default)]
    confirm: Option<String>,
}

fn back_to(namespace: &str, name: &str, key: &str, message: &str) -> Response {
    let mut url = format!("/ui/installations/{namespace}/{name}?{key}=");
    url.push_str(&percent_encode(message));
    Redirect::to(&url).into_response()
}

fn percent_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Reconcile or interrupt an installation: sets `landscaper.gardener.cloud/operation`, as
/// `kubectl annotate` through the API does. Needs the session cookie or the API token.
async fn action(
    State(state): State<ApiState>,
    headers: HeaderMap,
    Form(form): Form<ActionForm>,
) -> Response {
    let by_token = state
        .token
        .as_ref()
        .is_some_and(|t| !form.token.is_empty() && t.matches(form.token.trim()));
    if !(by_token || has_session(&state, &headers)) {
        return html(
            StatusCode::FORBIDDEN,
            "<p>Forbidden: the token is missing or not valid (it is in the <code>api-token</code> file of the data folder), and this browser is not signed in (<code>landscaper-appliance ui</code> on the host prints a login link). <a href=\"javascript:history.back()\">Back</a></p>".into(),
        );
    }
    let operation = match form.operation.as_str() {
        OPERATION_RECONCILE => OPERATION_RECONCILE,
        OPERATION_INTERRUPT => {
            if form.confirm.as_deref() != Some("yes") {
                return back_to(
                    &form.namespace,
                    &form.name,
                    "failed",
                    "interrupt needs the confirmation box ticked",
                );
            }
            OPERATION_INTERRUPT
        }
        other => {
            return html(
                StatusCode::BAD_REQUEST,
                format!("<p>unknown operation {:?}</p>", escape(other)),
            );
        }
    };
    let store = state.store.clone();
    let key = ObjectKey::new(Kind::Installation, &form.namespace, &form.name);
    // The same optimistic metadata patch as `kubectl annotate` through the API.
    let patch = json!({"metadata": {"annotations": {OPERATION_ANNOTATION: operation}}});
    let result = tokio::task::spawn_blocking(move || {
        crate::daemon::api::write::patch_object(&store, &key, &patch, false).map_err(|e| e.message)
    })
    .await;
    match result {
        Ok(Ok(_)) => {
            tracing::info!(installation = %format!("{}/{}", form.namespace, form.name), operation, "operation requested on the status page");
            back_to(
                &form.namespace,
                &form.name,
                "done",
                &format!("{operation} requested"),
            )
        }
        Ok(Err(e)) => back_to(&form.namespace, &form.name, "failed", &e),
        Err(e) => back_to(&form.namespace, &form.name, "failed", &e.to_string()),
    }
}

/// `POST /ui/login-links`: a one-time login link for the status page, for callers with the
/// token or on the Unix socket (`landscaper-appliance ui`). Answers `{"path": "/ui/login?code=…",
/// "expiresInSeconds": 120}`.
async fn login_link(
    State(state): State<ApiState>,
    trusted: Option<Extension<TrustedConnection>>,
    headers: HeaderMap,
) -> Response {
    if !Caller::new(&headers, trusted.is_some()).is_authorised(state.token.as_ref()) {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Unauthorized", "code": 401,
                "message": "a login link needs the API token (the api-token file of the data folder) or the daemon's Unix socket"})),
        )
            .into_response();
    }
    match state.ui.sessions.new_code(Instant::now()) {
        Some(code) => {
            tracing::info!("status page login link issued");
            Json(json!({"path": format!("/ui/login?code={code}"), "expiresInSeconds": session::CODE_TTL.as_secs()}))
                .into_response()
        }
        None => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(
                json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 500,
                "message": "the OS random generator failed"}),
            ),
        )
            .into_response(),
    }
}

#[derive(Debug, Deserialize)]
pub struct LoginQuery {
    #[serde(default)]
    code: String,
}

/// `GET /ui/login?code=`: spends the code for a session cookie and goes to the overview.
async fn login(State(state): State<ApiState>, Query(query): Query<LoginQuery>) -> Response {
    match state.ui.sessions.redeem(&query.code, Instant::now()) {
        Some(session) => {
            tracing::info!("status page signed in with a login link");
            let mut response = Redirect::to("/").into_response();
            if let Ok(v) = HeaderValue::from_str(&session::set_cookie(&session)) {
                response.headers_mut().insert(header::SET_COOKIE, v);
            }
            response
        }
        None => html(
            StatusCode::FORBIDDEN,
            "<p>This login link is not valid: it was used already or has expired (links last two minutes). Run <code>landscaper-appliance ui</code> again for a new one. <a href=\"/\">Overview</a></p>".into(),
        ),
    }
}

async fn logout(State(state): State<ApiState>, headers: HeaderMap) -> Response {
    for v in headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
    {
        if let Some(s) = session::cookie_value(v) {
            state.ui.sessions.end(s);
        }
    }
    let mut response = Redirect::to("/").into_response();
    if let Ok(v) = HeaderValue::from_str(&session::clear_cookie()) {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detail_context(node: &InstallationNode, signed_in: bool) -> minijinja::Value {
        minijinja::context! {
            node => to_value(node),
            exports => to_value(Vec::<ExportView>::new()),
            imports => to_value(Vec::<ExportView>::new()),
            history => to_value(Vec::<HistoryRow>::new()),
            revision => 1,
            signed_in => signed_in,
            spec => "blueprint: {}",
            timeline_svg => "",
        }
    }

    #[test]
    fn every_template_parses_and_renders() {
        let env = templates();
        for name in [
            "page.html",
            "macros.html",
            "overview.html",
            "summary.html",
            "list.html",
            "rows.html",
            "installation.html",
            "file.html",
        ] {
            assert!(env.get_template(name).is_ok(), "{name}");
        }
        let snapshot = Snapshot {
            installations: vec![
                json!({"metadata": {"name": "a<b", "namespace": "ns"},
                "status": {"phase": "Failed", "jobID": "1", "jobIDFinished": "1",
                    "lastError": {"reason": "R", "message": "<script>alert(1)</script>"}}}),
                json!({"metadata": {"name": "multi", "namespace": "ns"},
                "status": {"phase": "Failed", "lastError": {"reason": "TemplateError",
                    "message": "line 3:\n  {{ .x }\n      ^ unexpected"}}}),
            ],
            archives: vec![
                json!({"spec": {"path": "air/m.tgz"}, "status": {"phase": "Failed",
                "lastError": "<b>truncated</b>"}}),
            ],
            ..Snapshot::default()
        };
        let index = Index::build(&snapshot);
        let out = render(
            "overview.html",
            overview_context(&index, &PageQuery::default()),
        )
        .unwrap();
        assert!(out.contains("a&lt;b"), "{out}");
        assert!(!out.contains("<script>alert"), "escaped: {out}");
        assert!(out.contains("&lt;script&gt;"));
        assert!(out.contains("Transport archives (1)"), "{out}");
        assert!(
            out.contains("m.tgz") && out.contains("&lt;b&gt;truncated"),
            "{out}"
        );
        assert!(out.contains("class=\"phase bad\""));
        // A multi-line error keeps its first line in the text and the excerpt as a block.
        assert!(
            out.contains("last error: TemplateError: line 3:<pre class=\"excerpt\">  {{ .x }\n      ^ unexpected</pre>"),
            "{out}"
        );
        assert!(out.contains("Failures at their root cause (2)"), "{out}");
        let node = index.overview.roots[0].clone();
        let detail = render("installation.html", detail_context(&node, false)).unwrap();
        assert!(detail.contains("name=\"operation\" value=\"interrupt\""));
        assert!(
            detail.contains("name=\"token\""),
            "anonymous readers paste the token"
        );
        assert!(
            !detail.contains("h-conditions"),
            "no conditions, no section"
        );
        let signed = render("installation.html", detail_context(&node, true)).unwrap();
        assert!(
            !signed.contains("name=\"token\""),
            "signed in: no token field"
        );
        assert!(signed.contains("Sign out"));
        let with = Index::build(&Snapshot {
            installations: vec![json!({"metadata": {"name": "root", "namespace": "ns"},
                "status": {"phase": "Succeeded", "conditions": [{"type": "a/ReconcilePrecondition",
                    "status": "False", "reason": "ConditionNotMet",
                    "message": "reconcilePrecondition \"imports.flag\" is <false>",
                    "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})],
            ..Snapshot::default()
        });
        let detail = render(
            "installation.html",
            detail_context(&with.overview.roots[0], false),
        )
        .unwrap();
        assert!(detail.contains("h-conditions"), "{detail}");
        assert!(detail.contains("a&#x2f;ReconcilePrecondition"), "{detail}");
        assert!(detail.contains("ConditionNotMet"), "{detail}");
        assert!(detail.contains("is &lt;false&gt;"), "escaped: {detail}");
        assert!(detail.contains("data-confirm="));
    }

    #[test]
    fn the_overview_pages_and_filters_and_stays_small() {
        let installations: Vec<Value> = (0..10_000)
            .map(|i| {
                json!({"metadata": {"name": format!("inst-{i:05}"), "namespace": format!("team-{}", i % 7)},
                    "status": {"phase": if i % 100 == 0 { "Failed" } else { "Succeeded" },
                        "jobID": "j", "jobIDFinished": "j",
                        "lastError": if i % 100 == 0 { json!({"reason": "R", "message": "boom"}) } else { Value::Null }}})
            })
            .collect();
        let mut sorted = installations;
        sorted.sort_by(|a, b| {
            (object::namespace(a), object::name(a)).cmp(&(object::namespace(b), object::name(b)))
        });
        let index = Index::build(&Snapshot {
            installations: sorted,
            ..Snapshot::default()
        });
        let query = PageQuery {
            phase: "Failed".into(),
            ns: "team-0".into(),
            page: Some(1),
            ..PageQuery::default()
        };
        let out = render("overview.html", overview_context(&index, &query)).unwrap();
        assert!(out.len() < 200_000, "{} bytes", out.len());
        // i % 100 == 0 and i % 7 == 0: i = 0, 700, ..., 9800 → 15.
        assert!(out.contains("Installations (15 of 10000)"), "{out}");
        assert_eq!(out.matches("<tr data-row=").count(), 15);
        let all = render(
            "overview.html",
            overview_context(&index, &PageQuery::default()),
        )
        .unwrap();
        assert!(all.len() < 200_000, "{} bytes", all.len());
        assert_eq!(all.matches("<tr data-row=").count(), index::PAGE_SIZE);
        assert!(all.contains("page 1 of 200"), "paged");
        assert!(all.contains("href=\"/?page=2\""), "{all}");
        assert!(all.contains("Failures at their root cause (100)"));
        assert!(all.contains("50 more"), "the summary is capped");
        let small_pages = PageQuery {
            q: "BOOM".into(),
            ns: "team-0".into(),
            size: Some(5),
            page: Some(2),
            ..PageQuery::default()
        };
        let out = render("list.html", overview_context(&index, &small_pages)).unwrap();
        assert_eq!(out.matches("<tr data-row=").count(), 5);
        assert!(out.contains("6–10 of 15"), "{out}");
        assert!(
            out.contains("href=\"/?ns=team-0&amp;q=BOOM&amp;size=5&amp;page=3\""),
            "the pager keeps the filter: {out}"
        );
    }

    #[test]
    fn a_document_line_is_found_by_kind_and_name() {
        let text = "apiVersion: v1\nkind: Target\nmetadata:\n  name: a\n---\napiVersion: x\nkind: Installation\nmetadata:\n  name: b\n---\nkind: Installation\nmetadata:\n  name: \"c\"\n";
        assert_eq!(document_line(text, "Installation", "b"), Some(7));
        assert_eq!(document_line(text, "Installation", "c"), Some(11));
        assert_eq!(document_line(text, "Installation", "a"), None);
        assert_eq!(document_line(text, "Target", "a"), Some(2));
    }

    #[test]
    fn owners_lead_changes_to_their_rows() {
        let item = json!({"metadata": {"ownerReferences": [{"kind": "Execution", "name": "e"}]}});
        assert_eq!(
            owner_key(Kind::DeployItem, "ns", &item).as_deref(),
            Some("Execution/ns/e")
        );
        let child = json!({"metadata": {"labels": {ENCOMPASSED_BY_LABEL: "root"}}});
        assert_eq!(
            owner_key(Kind::Installation, "ns", &child).as_deref(),
            Some("Installation/ns/root")
        );
        assert_eq!(owner_key(Kind::Installation, "ns", &json!({})), None);
    }

    #[test]
    fn messages_survive_the_redirect() {
        assert_eq!(percent_encode("a b/é"), "a%20b%2F%C3%A9");
    }
}
