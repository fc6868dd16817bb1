//! Helm's `lookup` against the deploy item's target while a chart renders (Helm's
//! `engine.RenderWithClient`, which Landscaper's manifest mode uses): the object as a map, a
//! list object (`items`) when the name is empty, nothing when there is no such object or kind;
//! any other failure fails the render.
//!
//! The template engine is synchronous and runs on a thread of its own: each lookup blocks that
//! thread on the async [`ClusterClient`] through the runtime's [`Handle`]. Bounded: at most
//! [`MAX_LOOKUPS`] distinct lookups per render (repeated ones are answered from memory), each
//! answered within [`LOOKUP_TIMEOUT`].

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::runtime::Handle;

use crate::kubernetes::{ClusterClient, ClusterError, ObjectRef};

/// Distinct lookups one render may make.
pub const MAX_LOOKUPS: usize = 1000;
/// How long one lookup may take.
pub const LOOKUP_TIMEOUT: Duration = Duration::from_secs(30);

type Key = (String, String, String, String);
type Answer = Result<Option<Map<String, Value>>, String>;

/// See the module documentation.
pub struct ClusterLookup {
    client: Arc<dyn ClusterClient>,
    runtime: Handle,
    /// The group versions discovery found (`None`: unknown), to tell a group version that is
    /// not served (an error, as in Helm) from a kind it does not serve (not found).
    group_versions: Option<BTreeSet<String>>,
    answers: Mutex<HashMap<Key, Answer>>,
    transient: AtomicBool,
}

impl ClusterLookup {
    /// `discovery` as [`ClusterClient::served_resources`] gave it (empty: unknown).
    pub fn new(
        client: Arc<dyn ClusterClient>,
        runtime: Handle,
        discovery: &[(String, Vec<String>)],
    ) -> ClusterLookup {
        ClusterLookup {
            client,
            runtime,
            group_versions: (!discovery.is_empty())
                .then(|| discovery.iter().map(|(gv, _)| gv.clone()).collect()),
            answers: Mutex::new(HashMap::new()),
            transient: AtomicBool::new(false),
        }
    }

    /// Whether a lookup failed in a way retrying can mend (cluster unreachable, overloaded,
    /// no answer in time).
    pub fn failed_transiently(&self) -> bool {
        self.transient.load(Ordering::Relaxed)
    }

    fn fail(&self, what: &str, e: &ClusterError) -> String {
        if is_transient(e) {
            self.transient.store(true, Ordering::Relaxed);
        }
        format!("{what}: {e}")
    }

    async fn ask(&self, api_version: &str, kind: &str, namespace: &str, name: &str) -> Answer {
        let reference = ObjectRef::new(api_version, kind, namespace, name);
        let info = match self.client.resolve(api_version, kind).await {
            Ok(info) => info,
            Err(ClusterError::NoMatch { .. }) => {
                return match &self.group_versions {
                    Some(served) if !served.contains(api_version) => Err(format!(
                        "unable to get apiresource from unstructured: {}: the server could not find the requested resource",
                        reference.gvk_string()
                    )),
                    _ => Ok(None),
                };
            }
            Err(e) => {
                return Err(self.fail(
                    &format!(
                        "unable to get apiresource from unstructured: {}",
                        reference.gvk_string()
                    ),
                    &e,
                ));
            }
        };
        if !name.is_empty() {
            if info.namespaced && namespace.is_empty() {
                // Helm asks the cluster-wide path of a namespaced resource: not found.
                return Ok(None);
            }
            let reference = ObjectRef::new(
                api_version,
                kind,
                if info.namespaced { namespace } else { "" },
                name,
            );
            return match self.client.get(&reference).await {
                Ok(Some(Value::Object(object))) => Ok(Some(object)),
                Ok(_) | Err(ClusterError::NotFound(_) | ClusterError::NoMatch { .. }) => Ok(None),
                Err(e) => Err(self.fail(&reference.to_string(), &e)),
            };
        }
        let scope = (info.namespaced && !namespace.is_empty()).then_some(namespace);
        match self
            .client
            .list(api_version, kind, scope, &BTreeMap::new())
            .await
        {
            Ok(items) => Ok(Some(list_object(api_version, kind, items))),
            Err(ClusterError::NotFound(_) | ClusterError::NoMatch { .. }) => Ok(None),
            Err(e) => Err(self.fail(&format!("listing {kind} ({api_version})"), &e)),
        }
    }
}

/// `UnstructuredList.UnstructuredContent()`: the list's type, metadata and items.
fn list_object(api_version: &str, kind: &str, items: Vec<Value>) -> Map<String, Value> {
    let list = json!({
        "apiVersion": api_version,
        "kind": format!("{kind}List"),
        "metadata": {},
        "items": items,
    });
    match list {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn is_transient(e: &ClusterError) -> bool {
    match e {
        ClusterError::Unreachable(_) => true,
        ClusterError::Api { code, .. } => *code == 0 || *code == 429 || *code >= 500,
        _ => false,
    }
}

impl landscaper_charts::Lookup for ClusterLookup {
    fn lookup(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Map<String, Value>>, String> {
        let key = (
            api_version.to_string(),
            kind.to_string(),
            namespace.to_string(),
            name.to_string(),
        );
        {
            let answers = self
                .answers
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(answer) = answers.get(&key) {
                return answer.clone();
            }
            if answers.len() >= MAX_LOOKUPS {
                return Err(format!(
                    "more than {MAX_LOOKUPS} different lookups in one render"
                ));
            }
        }
        let answer = self
            .runtime
            // The timer is made inside the runtime's context.
            .block_on(async {
                tokio::time::timeout(LOOKUP_TIMEOUT, self.ask(api_version, kind, namespace, name))
                    .await
            })
            .unwrap_or_else(|_| {
                self.transient.store(true, Ordering::Relaxed);
                Err(format!(
                    "{}: no answer within {LOOKUP_TIMEOUT:?}",
                    ObjectRef::new(api_version, kind, namespace, name)
                ))
            });
        self.answers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(key, answer.clone());
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kubernetes::FakeCluster;
    use landscaper_charts::Lookup as _;

    fn lookup_on(fake: Arc<FakeCluster>, discovery: &[(String, Vec<String>)]) -> ClusterLookup {
        ClusterLookup::new(fake, Handle::current(), discovery)
    }

    /// Runs `f` on a plain thread (as the renderer does) while the runtime keeps running.
    async fn off_runtime<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.await.expect("the thread answers")
    }

    #[tokio::test]
    async fn objects_lists_and_absent_ones() {
        let fake = Arc::new(FakeCluster::new());
        fake.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cfg", "namespace": "ns"}, "data": {"k": "v"}}));
        fake.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}));
        let discovery = vec![
            ("v1".to_string(), vec!["ConfigMap".to_string()]),
            ("apps/v1".to_string(), vec!["Deployment".to_string()]),
        ];
        let lookup = Arc::new(lookup_on(fake.clone(), &discovery));
        let l = lookup.clone();
        let (object, in_ns_only, list, missing, unknown_kind, unknown_gv, cluster_scoped) =
            off_runtime(move || {
                (
                    l.lookup("v1", "ConfigMap", "ns", "cfg"),
                    l.lookup("v1", "ConfigMap", "", "cfg"),
                    l.lookup("v1", "ConfigMap", "", ""),
                    l.lookup("v1", "ConfigMap", "ns", "nope"),
                    l.lookup("apps/v1", "Gadget", "ns", "x"),
                    l.lookup("nope.example.com/v1", "Gadget", "ns", "x"),
                    l.lookup("v1", "Namespace", "ignored", "ns"),
                )
            })
            .await;
        let object = object.unwrap().expect("found");
        assert_eq!(object["data"]["k"], "v");
        assert_eq!(in_ns_only, Ok(None), "namespaced kind without a namespace");
        let list = list.unwrap().expect("a list");
        assert_eq!(list["kind"], "ConfigMapList");
        assert_eq!(list["items"].as_array().map(Vec::len), Some(1));
        assert_eq!(missing, Ok(None));
        assert_eq!(unknown_kind, Ok(None));
        let err = unknown_gv.unwrap_err();
        assert!(err.contains("nope.example.com/v1, Kind=Gadget"), "{err}");
        assert_eq!(
            cluster_scoped.unwrap().expect("found")["metadata"]["name"],
            "ns"
        );
        assert!(!lookup.failed_transiently());

        // Down: an error that retrying can mend; answers seen before stay as they were.
        fake.set_unreachable(true);
        let l = lookup.clone();
        let (again, down) = off_runtime(move || {
            (
                l.lookup("v1", "ConfigMap", "ns", "cfg"),
                l.lookup("v1", "ConfigMap", "ns", "other"),
            )
        })
        .await;
        assert!(again.unwrap().is_some());
        assert!(down.is_err());
        assert!(lookup.failed_transiently());
    }

    #[tokio::test]
    async fn lookups_are_bounded() {
        let fake = Arc::new(FakeCluster::new());
        let lookup = Arc::new(lookup_on(fake, &[]));
        let l = lookup.clone();
        let (last, repeated) = off_runtime(move || {
            for i in 0..MAX_LOOKUPS {
                assert_eq!(
                    l.lookup("v1", "ConfigMap", "ns", &format!("n{i}")),
                    Ok(None)
                );
            }
            (
                l.lookup("v1", "ConfigMap", "ns", "one-more"),
                l.lookup("v1", "ConfigMap", "ns", "n0"),
            )
        })
        .await;
        assert!(last.unwrap_err().contains("more than 1000"));
        assert_eq!(
            repeated,
            Ok(None),
            "a repeated lookup is answered from memory"
        );
    }
}
