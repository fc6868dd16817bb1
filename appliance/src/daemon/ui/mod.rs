//! The status page: server-rendered HTML (minijinja, templates embedded in the binary, no
//! external assets) that reads without JavaScript, and a small inline script that refreshes
//! the page body when the store's change feed reports a change (server-sent events on
//! `/ui/events`; no polling).
//!
//! - `/`: counts by phase, failed objects, running jobs with progress, the manifest folder with
//!   every file's error, and the installation tree.
//! - `/ui/installations/{namespace}/{name}`: one installation with its subobjects, exports
//!   (DataObject values; Target kubeconfigs and values copied from Secrets redacted), the history of phase transitions of it,
//!   its execution and deploy items, and the reconcile and interrupt actions.
//! - `POST /ui/actions`: the actions, authorised by the API token entered in the form.
//!
//! `?fragment=1` answers only the body (what the live refresh swaps in).

pub mod view;

use std::convert::Infallible;
use std::sync::OnceLock;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use futures_util::{Stream, StreamExt};
use landscaper_store::model::constants::{
    DATA_OBJECT_SOURCE_LABEL, DATA_OBJECT_SOURCE_TYPE_EXPORT, DATA_OBJECT_SOURCE_TYPE_LABEL,
    ENCOMPASSED_BY_LABEL, INSTALLATION_PREFIX, OPERATION_ANNOTATION, OPERATION_INTERRUPT,
    OPERATION_RECONCILE,
};
use landscaper_store::{Kind, LabelSelector, ObjectKey, Store, StoreError, object};
use minijinja::Environment;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_stream::wrappers::BroadcastStream;

use crate::daemon::api::ApiState;
use crate::daemon::api::objects::present;
use view::{InstallationNode, Snapshot};

const SECURITY_HEADERS: [(&str, &str); 3] = [
    // Inline style and script only: nothing is loaded from anywhere else.
    (
        "content-security-policy",
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "same-origin"),
];

pub fn routes(state: ApiState) -> Router {
    Router::new()
        .route("/", get(overview))
        .route("/ui", get(|| async { Redirect::to("/") }))
        .route("/ui/installations/{namespace}/{name}", get(installation))
        .route("/ui/events", get(events))
        .route("/ui/actions", post(action))
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
            (
                "installation.html",
                include_str!("templates/installation.html"),
            ),
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

/// Renders `template` with `context`, inside the page frame unless only the fragment is
/// wanted.
fn render_page(title: &str, template: &str, context: minijinja::Value, fragment: bool) -> Response {
    let env = templates();
    let main = match env
        .get_template(template)
        .and_then(|t| t.render(context.clone()))
    {
        Ok(main) => main,
        Err(e) => {
            tracing::error!(template, error = %e, "rendering the status page failed");
            return html(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("<p>rendering {template} failed; see the daemon log</p>"),
            );
        }
    };
    if fragment {
        return html(StatusCode::OK, main);
    }
    let revision = context
        .get_attr("revision")
        .ok()
        .filter(|v| !v.is_undefined())
        .unwrap_or_else(|| minijinja::Value::from(0));
    let page = env.get_template("page.html").and_then(|t| {
        t.render(minijinja::context! {
            title => title,
            revision => revision,
            main => minijinja::Value::from_safe_string(main),
        })
    });
    match page {
        Ok(page) => html(StatusCode::OK, page),
        Err(e) => {
            tracing::error!(error = %e, "rendering the page frame failed");
            html(
                StatusCode::INTERNAL_SERVER_ERROR,
                "<p>rendering the page failed; see the daemon log</p>".into(),
            )
        }
    }
}

fn flash(query: &PageQuery) -> (Option<String>, &'static str) {
    match (&query.done, &query.failed) {
        (_, Some(f)) => (Some(f.clone()), "bad"),
        (Some(d), None) => (Some(d.clone()), "ok"),
        _ => (None, ""),
    }
}

fn read_snapshot(store: &Store) -> Result<Snapshot, StoreError> {
    let all = LabelSelector::default();
    let revision = store.revision();
    Ok(Snapshot {
        installations: store.list(Kind::Installation, None, &all)?.items,
        executions: store.list(Kind::Execution, None, &all)?.items,
        deploy_items: store.list(Kind::DeployItem, None, &all)?.items,
        files: store.list(Kind::ManifestFile, None, &all)?.items,
        archives: store.list(Kind::TransportArchive, None, &all)?.items,
        revision,
    })
}

fn store_failure(e: impl std::fmt::Display) -> Response {
    tracing::error!(error = %e, "status page: reading the store failed");
    html(
        StatusCode::SERVICE_UNAVAILABLE,
        "<p>The store could not be read; see the daemon log.</p>".into(),
    )
}

async fn overview(State(state): State<ApiState>, Query(query): Query<PageQuery>) -> Response {
    let store = state.store.clone();
    let snapshot = match tokio::task::spawn_blocking(move || read_snapshot(&store)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return store_failure(e),
        Err(e) => return store_failure(e),
    };
    let o = view::overview(&snapshot);
    let (flash, flash_tone) = flash(&query);
    render_page(
        "Overview",
        "overview.html",
        minijinja::context! {
            o => to_value(&o),
            revision => o.revision,
            flash => flash,
            flash_tone => flash_tone,
        },
        query.fragment.is_some(),
    )
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

fn find_node<'a>(nodes: &'a [InstallationNode], key: &str) -> Option<&'a InstallationNode> {
    for n in nodes {
        if n.row.key == key {
            return Some(n);
        }
        if let Some(found) = find_node(&n.children, key) {
            return Some(found);
        }
    }
    None
}

/// The DataObjects and Targets the installation exported (Landscaper labels them with
/// `data.landscaper.gardener.cloud/source: Inst.<name>` and `sourceType: export`).
fn exports_of(store: &Store, namespace: &str, name: &str) -> Result<Vec<ExportView>, StoreError> {
    let selector = LabelSelector::parse(&format!(
        "{DATA_OBJECT_SOURCE_LABEL}={INSTALLATION_PREFIX}{name},{DATA_OBJECT_SOURCE_TYPE_LABEL}={DATA_OBJECT_SOURCE_TYPE_EXPORT}"
    ))
    .unwrap_or_default();
    let key_label = landscaper_store::model::constants::DATA_OBJECT_KEY_LABEL;
    let mut out = Vec::new();
    for (kind, label) in [(Kind::DataObject, "DataObject"), (Kind::Target, "Target")] {
        for o in store.list(kind, Some(namespace), &selector)?.items {
            let key = object::labels(&o).get(key_label).cloned();
            // As the API shows it to anonymous readers: kubeconfigs and Secret copies redacted.
            let o = present(kind, o);
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
            if !(h.is_phase_transition() || h.change_type != landscaper_store::ChangeType::Modified)
            {
                continue;
            }
            rows.push(HistoryRow {
                time: h.time.clone(),
                revision: h.revision,
                kind: h.key.kind.as_str(),
                name: h.key.name.clone(),
                change: match h.change_type {
                    landscaper_store::ChangeType::Added => "created",
                    landscaper_store::ChangeType::Modified => "changed",
                    landscaper_store::ChangeType::Deleted => "deleted",
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
    rows.truncate(200);
    Ok(rows)
}

async fn installation(
    State(state): State<ApiState>,
    Path((namespace, name)): Path<(String, String)>,
    Query(query): Query<PageQuery>,
) -> Response {
    let store = state.store.clone();
    let (ns, n) = (namespace.clone(), name.clone());
    let read = tokio::task::spawn_blocking(move || {
        let snapshot = read_snapshot(&store)?;
        let overview = view::overview(&snapshot);
        let key = format!("Installation/{ns}/{n}");
        let Some(node) = find_node(&overview.roots, &key).cloned() else {
            return Ok(None);
        };
        let parent = snapshot
            .installations
            .iter()
            .find(|i| object::namespace(i) == ns && object::name(i) == n)
            .and_then(|i| object::labels(i).get(ENCOMPASSED_BY_LABEL).cloned());
        let exports = exports_of(&store, &ns, &n)?;
        let history = history_of(&store, &node)?;
        Ok::<_, StoreError>(Some((node, parent, exports, history, snapshot.revision)))
    })
    .await;
    let (node, parent, exports, history, revision) = match read {
        Ok(Ok(Some(found))) => found,
        Ok(Ok(None)) => {
            return html(
                StatusCode::NOT_FOUND,
                format!(
                    "<p>No installation {}/{} (<a href=\"/\">overview</a>).</p>",
                    escape(&namespace),
                    escape(&name)
                ),
            );
        }
        Ok(Err(e)) => return store_failure(e),
        Err(e) => return store_failure(e),
    };
    let (flash, flash_tone) = flash(&query);
    render_page(
        &format!("Installation {namespace}/{name}"),
        "installation.html",
        minijinja::context! {
            node => to_value(&node),
            parent => parent,
            exports => to_value(&exports),
            history => to_value(&history),
            revision => revision,
            flash => flash,
            flash_tone => flash_tone,
        },
        query.fragment.is_some(),
    )
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `change` events for every committed change to the objects the page shows; `data` holds
/// the revision and the changed keys.
async fn events(
    State(state): State<ApiState>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let shown = |kind: Kind| {
        matches!(
            kind,
            Kind::Installation
                | Kind::Execution
                | Kind::DeployItem
                | Kind::ManifestFile
                | Kind::TransportArchive
                | Kind::DataObject
                | Kind::Target
        )
    };
    let hello = futures_util::stream::once(async {
        Ok(Event::default()
            .event("hello")
            .data(json!({"status": "connected"}).to_string()))
    });
    let changes = BroadcastStream::new(state.store.subscribe()).filter_map(move |received| {
        let event = match received {
            Ok(set) => {
                let keys: Vec<String> = set
                    .changes
                    .iter()
                    .filter(|c| shown(c.key.kind))
                    .map(|c| c.key.to_string())
                    .collect();
                (!keys.is_empty()).then(|| {
                    Event::default()
                        .event("change")
                        .id(set.revision.to_string())
                        .data(json!({"revision": set.revision, "keys": keys}).to_string())
                })
            }
            // Missed changes: the page refreshes everything anyway.
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
/// `kubectl annotate` through the API does. Needs the API token.
async fn action(State(state): State<ApiState>, Form(form): Form<ActionForm>) -> Response {
    let authorised = state
        .token
        .as_ref()
        .is_some_and(|t| !form.token.is_empty() && t.matches(form.token.trim()));
    if !authorised {
        return html(
            StatusCode::FORBIDDEN,
            "<p>Forbidden: the token is missing or not valid (it is in the <code>api-token</code> file of the data folder). <a href=\"javascript:history.back()\">Back</a></p>".into(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_parses_and_renders() {
        let env = templates();
        for name in [
            "page.html",
            "macros.html",
            "overview.html",
            "installation.html",
        ] {
            assert!(env.get_template(name).is_ok(), "{name}");
        }
        let snapshot = Snapshot {
            installations: vec![json!({"metadata": {"name": "a<b", "namespace": "ns"},
                "status": {"phase": "Failed", "jobID": "1", "jobIDFinished": "1",
                    "lastError": {"reason": "R", "message": "<script>alert(1)</script>"}}})],
            archives: vec![
                json!({"spec": {"path": "air/m.tgz"}, "status": {"phase": "Failed",
                "lastError": "<b>truncated</b>"}}),
            ],
            ..Snapshot::default()
        };
        let o = view::overview(&snapshot);
        let out = env
            .get_template("overview.html")
            .unwrap()
            .render(minijinja::context! { o => to_value(&o), revision => 1 })
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
        let node = o.roots[0].clone();
        let detail = env
            .get_template("installation.html")
            .unwrap()
            .render(minijinja::context! {
                node => to_value(&node),
                exports => to_value(Vec::<ExportView>::new()),
                history => to_value(Vec::<HistoryRow>::new()),
                revision => 1,
            })
            .unwrap();
        assert!(detail.contains("name=\"operation\" value=\"interrupt\""));
        assert!(
            !detail.contains("h-conditions"),
            "no conditions, no section"
        );
        let with = view::overview(&Snapshot {
            installations: vec![json!({"metadata": {"name": "root", "namespace": "ns"},
                "status": {"phase": "Succeeded", "conditions": [{"type": "a/ReconcilePrecondition",
                    "status": "False", "reason": "ConditionNotMet",
                    "message": "reconcilePrecondition \"imports.flag\" is <false>",
                    "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})],
            ..Snapshot::default()
        });
        let detail = env
            .get_template("installation.html")
            .unwrap()
            .render(minijinja::context! {
                node => to_value(&with.roots[0]),
                exports => to_value(Vec::<ExportView>::new()),
                history => to_value(Vec::<HistoryRow>::new()),
                revision => 1,
            })
            .unwrap();
        // A template error's excerpt is a preformatted block; waiting is not shown as an error.
        let excerpt = view::overview(&Snapshot {
            installations: vec![
                json!({"metadata": {"name": "t", "namespace": "ns"}, "status": {"phase": "Failed",
                    "lastError": {"reason": "ReconcileExecution",
                        "message": "template: x:7:20: nil pointer\n7:   x: {{ .a }}\n         ^"}}}),
                json!({"metadata": {"name": "w", "namespace": "ns"}, "status": {"phase": "Progressing",
                    "lastError": {"reason": "JobIDFinished", "message": "execution ns / w is not finished yet",
                        "codes": ["ERR_UNFINISHED"]}}}),
            ],
            ..Snapshot::default()
        });
        let out = env
            .get_template("overview.html")
            .unwrap()
            .render(minijinja::context! { o => to_value(&excerpt), revision => 1 })
            .unwrap();
        assert!(
            out.contains("<pre class=\"excerpt\">7:   x: {{ .a }}\n         ^</pre>"),
            "{out}"
        );
        assert!(
            out.contains("<div class=\"waiting\">waiting: JobIDFinished: execution ns &#x2f; w is not finished yet</div>"),
            "{out}"
        );
        assert!(!out.contains("last error: JobIDFinished"), "{out}");
        assert!(detail.contains("h-conditions"), "{detail}");
        assert!(detail.contains("a&#x2f;ReconcilePrecondition"), "{detail}");
        assert!(detail.contains("ConditionNotMet"), "{detail}");
        assert!(detail.contains("is &lt;false&gt;"), "escaped: {detail}");
        assert!(detail.contains("data-confirm="));
    }

    #[test]
    fn messages_survive_the_redirect() {
        assert_eq!(percent_encode("a b/é"), "a%20b%2F%C3%A9");
    }
}
