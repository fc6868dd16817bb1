//! Conformance with the kube crate: discovery, server-side apply, selectors and watches.

use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use kube::discovery::{ApiResource, Discovery};
use kube::{Client, Config};
use kube_test_server::{ServerConfig, TestServer};
use serde_json::json;

async fn client(server: &TestServer) -> Client {
    let kubeconfig: kube::config::Kubeconfig = serde_json::from_value(
        serde_saphyr::from_str::<serde_json::Value>(&server.kubeconfig()).expect("yaml"),
    )
    .expect("kubeconfig");
    let config = Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("config");
    Client::try_from(config).expect("client")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_lists_builtin_and_crd_groups() {
    let s = TestServer::start(ServerConfig::default().crd(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "gadgets", "kind": "Gadget"},
                 "versions": [{"name": "v1", "served": true, "storage": true}]}
    })))
    .await
    .expect("server");
    let discovery = Discovery::new(client(&s).await)
        .run()
        .await
        .expect("discovery");
    let groups: Vec<String> = discovery.groups().map(|g| g.name().to_string()).collect();
    for g in [
        "",
        "apps",
        "batch",
        "rbac.authorization.k8s.io",
        "apiextensions.k8s.io",
        "example.com",
    ] {
        assert!(groups.iter().any(|x| x == g), "{g} missing from {groups:?}");
    }
    let apps = discovery.get("apps").expect("apps");
    assert!(
        apps.recommended_resources()
            .iter()
            .any(|(r, _)| r.kind == "Deployment")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_and_label_selectors() {
    let s = TestServer::start(ServerConfig::default())
        .await
        .expect("server");
    let c = client(&s).await;
    let ar = ApiResource::erase::<ConfigMap>(&());
    let api: Api<DynamicObject> = Api::namespaced_with(c.clone(), "default", &ar);
    for (name, tier) in [("a", "front"), ("b", "back"), ("c", "db")] {
        let obj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"tier": tier}},
            "data": {"k": "v"}
        }))
        .expect("object");
        api.patch(name, &PatchParams::apply("tests"), &Patch::Apply(&obj))
            .await
            .expect("apply");
    }
    let stored = s.get("v1", "ConfigMap", "default", "a").expect("stored");
    assert_eq!(stored["metadata"]["managedFields"][0]["manager"], "tests");
    assert_eq!(stored["metadata"]["managedFields"][0]["operation"], "Apply");
    let typed: Api<ConfigMap> = Api::default_namespaced(c);
    let names = |list: kube::core::ObjectList<ConfigMap>| {
        let mut n: Vec<String> = list
            .items
            .into_iter()
            .filter_map(|o| o.metadata.name)
            .collect();
        n.sort();
        n
    };
    let list = typed
        .list(&ListParams::default().labels("tier in (front,back)"))
        .await
        .expect("list");
    assert!(
        list.metadata
            .resource_version
            .as_ref()
            .is_some_and(|rv| !rv.is_empty())
    );
    assert_eq!(names(list), ["a", "b"]);
    assert_eq!(
        names(
            typed
                .list(&ListParams::default().labels("tier notin (front),tier"))
                .await
                .expect("list")
        ),
        ["b", "c"]
    );
    assert_eq!(
        names(
            typed
                .list(&ListParams::default().fields("metadata.name=c"))
                .await
                .expect("list")
        ),
        ["c"]
    );
    let err = typed
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "a"}})).expect("cm"),
        )
        .await;
    assert!(
        matches!(err, Err(kube::Error::Api(e)) if e.code == 409 && e.reason == "AlreadyExists")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_sees_added_modified_deleted() {
    let s = TestServer::start(ServerConfig::default())
        .await
        .expect("server");
    let api: Api<ConfigMap> = Api::default_namespaced(client(&s).await);
    let rv = api
        .list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .unwrap_or_default();
    let mut stream = api
        .watch(&WatchParams::default().timeout(10), &rv)
        .await
        .expect("watch")
        .boxed();
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "w"}, "data": {"a": "1"}})).expect("cm");
    api.create(&PostParams::default(), &cm)
        .await
        .expect("create");
    api.patch(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"a": "2"}})),
    )
    .await
    .expect("patch");
    api.delete("w", &DeleteParams::default())
        .await
        .expect("delete");
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let next = tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .expect("event in time");
        match next.expect("stream open").expect("event") {
            WatchEvent::Added(o) => seen.push(("ADDED", o.data.and_then(|d| d.get("a").cloned()))),
            WatchEvent::Modified(o) => {
                seen.push(("MODIFIED", o.data.and_then(|d| d.get("a").cloned())))
            }
            WatchEvent::Deleted(o) => {
                seen.push(("DELETED", o.data.and_then(|d| d.get("a").cloned())))
            }
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => panic!("watch error {e:?}"),
        }
    }
    let one = |s: &str| Some(s.to_string());
    assert_eq!(
        seen,
        [
            ("ADDED", one("1")),
            ("MODIFIED", one("2")),
            ("DELETED", one("2"))
        ]
    );

    // A resourceVersion older than the history gets 410 Gone.
    s.compact_history();
    let mut stale = api
        .watch(&WatchParams::default().timeout(5), &rv)
        .await
        .expect("watch")
        .boxed();
    match stale.next().await {
        Some(Ok(WatchEvent::Error(e))) => assert_eq!(e.code, 410),
        Some(Err(kube::Error::Api(e))) => assert_eq!(e.code, 410),
        other => panic!("expected 410, got {other:?}"),
    }
}
