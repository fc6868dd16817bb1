//! End-to-end (issue 18): the guided tour's chapters that use component references and need no
//! Flux, through the real daemon against the Kubernetes test server. Each chapter's
//! `local-repo/` component versions are pushed to a real registry (Debian's `docker-registry` on
//! loopback) as the real tour publishes them: the blueprint directories packed as gzip tars
//! (`application/vnd.gardener.landscaper.blueprint.v1+tar+gzip`) and stored as local blobs. The
//! chapter's `installation/*.yaml.tpl` are applied with only the namespace, the registry base URL
//! and the kubeconfig substituted; the test asserts what the chapter's README says happens.
//!
//! All chapters share one registry, one test server and one daemon; each chapter lives in its
//! own namespace (the chapters all name their Context `landscaper-examples` and their Target
//! `my-cluster`). `components/helm-chart` is `components.rs`.
//!
//! Needs `/usr/bin/docker-registry` and the OCM acceptance data; without them the test prints a
//! SKIP line and passes.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use landscaper_components::registry::push_component_version;
use landscaper_components::{Components, ComponentsConfig, RepositoryContext};
use landscaper_e2e::cluster::Cluster;
use landscaper_e2e::{Daemon, eventually};
use landscaper_sources::http::HyperTransport;
use landscaper_sources::testing::DockerRegistry;
use serde_json::Value;

const BLUEPRINT_MEDIA_TYPE: &str = "application/vnd.gardener.landscaper.blueprint.v1+tar+gzip";

fn tour() -> Option<PathBuf> {
    let dir = std::env::var_os("OCM_ACCEPTANCE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/work/shared/acceptance/ocm"))
        .join("guided-tour");
    dir.join("subinstallations/component-references/local-repo")
        .is_dir()
        .then_some(dir)
}

/// A directory's files (relative paths, sorted) as a gzip tar, as `ocm` packs a `dir` input.
fn pack_dir(dir: &Path) -> Vec<u8> {
    fn walk(root: &Path, dir: &Path, files: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, files);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                files.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut files = BTreeMap::new();
    walk(dir, dir, &mut files);
    assert!(!files.is_empty(), "{} is empty", dir.display());
    let tar = landscaper_components::archive::tar_files(&files);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&tar).unwrap();
    gz.finish().unwrap()
}

/// One `local-repo/component-descriptor-*.yaml` as it is stored in a registry: every local
/// blob naming a directory under `blobs/` packed, its `localReference` the packed digest.
fn registry_form(local_repo: &Path, file: &Path) -> (Vec<u8>, Vec<(String, Vec<u8>)>) {
    let text = std::fs::read_to_string(file).unwrap();
    let mut descriptor: Value =
        serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let mut blobs = Vec::new();
    if let Some(resources) = descriptor["component"]["resources"].as_array_mut() {
        for resource in resources {
            let access = &mut resource["access"];
            if access["type"] != "localBlob" {
                continue;
            }
            let name = access["localReference"].as_str().unwrap().to_string();
            let media_type = access["mediaType"]
                .as_str()
                .unwrap_or(BLUEPRINT_MEDIA_TYPE)
                .to_string();
            let packed = pack_dir(&local_repo.join("blobs").join(&name));
            access["localReference"] =
                Value::String(landscaper_sources::archive::sha256_digest(&packed));
            blobs.push((media_type, packed));
        }
    }
    (serde_json::to_vec(&descriptor).unwrap(), blobs)
}

/// Pushes every component version of a chapter's `local-repo/` with the project's client.
fn push_local_repo(local_repo: &Path, cache: &Path, port: u16) {
    let ctx = RepositoryContext::parse(
        &serde_json::json!({"type": "OCIRegistry", "baseUrl": format!("127.0.0.1:{port}")}),
    )
    .unwrap();
    let mut config = ComponentsConfig::new(Arc::new(HyperTransport::new()));
    config.cache = Some(Arc::new(
        landscaper_sources::ChartCache::open(cache, 64 << 20).unwrap(),
    ));
    let pusher = Components::new(config);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut pushed = 0;
    for entry in std::fs::read_dir(local_repo).unwrap() {
        let file = entry.unwrap().path();
        let is_descriptor = file
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("component-descriptor") && n.ends_with(".yaml"));
        if !is_descriptor {
            continue;
        }
        let (descriptor, blobs) = registry_form(local_repo, &file);
        runtime
            .block_on(push_component_version(&pusher, &ctx, &descriptor, &blobs))
            .unwrap_or_else(|e| panic!("pushing {}: {e}", file.display()));
        pushed += 1;
    }
    assert!(pushed > 0, "no descriptor in {}", local_repo.display());
}

/// A chapter's `installation/*.yaml.tpl`, only namespace, registry base URL and kubeconfig
/// substituted, written into the manifests folder under `<namespace>-<file>.yaml`.
fn apply_chapter(
    daemon: &Daemon,
    cluster: &Cluster,
    chapter: &Path,
    namespace: &str,
    base_url: &str,
) {
    let dir = chapter.join("installation");
    let mut written = 0;
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let Some(name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".yaml.tpl"))
        else {
            continue;
        };
        let mut tpl = std::fs::read_to_string(&path).unwrap();
        if !tpl.ends_with('\n') {
            tpl.push('\n');
        }
        let text = cluster
            .render_template(&tpl)
            .replace("${namespace}", namespace)
            .replace("${repoBaseUrl}", base_url);
        assert!(
            !text.contains("${"),
            "{}: unsubstituted variable",
            path.display()
        );
        daemon.write(&format!("{namespace}-{name}.yaml"), &text);
        written += 1;
    }
    assert!(written > 0, "no templates in {}", dir.display());
}

fn installation(daemon: &Daemon, namespace: &str, name: &str) -> Option<Value> {
    daemon.get_json(&format!(
        "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/{namespace}/installations/{name}"
    ))
}

fn wait_succeeded(daemon: &Daemon, namespace: &str, name: &str) -> Value {
    eventually(
        Duration::from_secs(90),
        &format!("{namespace}/{name} Succeeded"),
        || {
            let inst = installation(daemon, namespace, name)?;
            let phase = inst["status"]["phase"].as_str().unwrap_or_default();
            assert!(
                phase != "Failed",
                "{namespace}/{name} failed: {}\n{}",
                inst["status"],
                daemon.logs()
            );
            (phase == "Succeeded").then_some(inst)
        },
    )
}

fn data_object(daemon: &Daemon, namespace: &str, name: &str) -> Value {
    eventually(
        Duration::from_secs(30),
        &format!("DataObject {namespace}/{name}"),
        || {
            daemon.get_json(&format!(
                "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/{namespace}/dataobjects/{name}"
            ))
        },
    )
}

/// The subinstallation chapters: the root exports the three ConfigMap names its
/// subinstallations deployed (`do-configmap-names`), each one a ConfigMap on the cluster.
fn configmap_names_exported(daemon: &Daemon, cluster: &Cluster, namespace: &str) {
    let exported = data_object(daemon, namespace, "do-configmap-names");
    let names = exported["data"]
        .as_array()
        .unwrap_or_else(|| panic!("{namespace}: the export is no list: {exported}"));
    assert_eq!(names.len(), 3, "{namespace}: {exported}");
    assert_eq!(names[0], "example-configmap", "{namespace}: {exported}");
    for name in names {
        let name = name.as_str().expect("a name");
        let cm = cluster
            .core("example", "configmaps", name)
            .unwrap_or_else(|| panic!("{namespace}: ConfigMap example/{name} not deployed"));
        assert_eq!(cm["data"]["foo"], "bar", "{cm}");
    }
}

#[test]
fn guided_tour_chapters_with_component_references_from_a_registry() {
    let Some(tour) = tour() else {
        println!("SKIP: OCM acceptance data not present");
        return;
    };
    if !DockerRegistry::available() {
        println!("SKIP: no {}", DockerRegistry::BINARY);
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let registry =
        DockerRegistry::start(&work.path().join("storage"), work.path(), "").expect("registry");
    let port = registry.port;
    let base_url = format!("127.0.0.1:{port}");
    // (chapter, namespace of its objects, root installation)
    let chapters = [
        (
            "subinstallations/component-references",
            "tour-cr",
            "component-references",
        ),
        ("subinstallations/export-import", "tour-ei", "export-import"),
        (
            "subinstallations/subinst-templates",
            "tour-st",
            "subinst-templates",
        ),
        ("templating/components", "tour-tc", "templating-components"),
    ];
    for (chapter, _, _) in &chapters {
        push_local_repo(
            &tour.join(chapter).join("local-repo"),
            &work.path().join("push-cache"),
            port,
        );
    }

    let cluster = Cluster::start("100ms");
    cluster.create_namespace("example");
    let manifests = work.path().join("manifests");
    std::fs::create_dir_all(&manifests).unwrap();
    let daemon = Daemon::start_on(&manifests, &work.path().join("data"));
    for (chapter, namespace, _) in &chapters {
        apply_chapter(&daemon, &cluster, &tour.join(chapter), namespace, &base_url);
    }
    for (_, namespace, root) in &chapters {
        wait_succeeded(&daemon, namespace, root);
    }

    // component-references: the subinstallations' blueprint came from the referenced
    // component (`cd://componentReferences/sub/resources/blueprint-sub`).
    configmap_names_exported(&daemon, &cluster, "tour-cr");
    // export-import: `cd://resources/blueprint-sub` of the same component.
    configmap_names_exported(&daemon, &cluster, "tour-ei");
    // subinst-templates: subinstallations from `subinstallationExecutions`, all succeeded.
    let list = daemon
        .get_json("/apis/landscaper.gardener.cloud/v1alpha1/namespaces/tour-st/installations")
        .expect("installations of tour-st");
    let items = list["items"].as_array().expect("a list");
    assert!(items.len() > 1, "no subinstallations: {list}");
    for item in items {
        assert_eq!(item["status"]["phase"], "Succeeded", "{item}");
    }
    // templating/components: the ConfigMap lists the images of the root's transitively
    // referenced components (`.components.components`), classified by their labels.
    let cm = eventually(Duration::from_secs(30), "templating-components", || {
        cluster.core("example", "configmaps", "templating-components")
    });
    let content = cm["data"]["content"].as_str().expect("content");
    for image in ["image-a", "image-b", "image-c", "image-d"] {
        assert!(
            content.contains(&format!(
                "sap-gcp-cp-k8s-stable-hub/landscaper-examples/examples/images/{image}"
            )),
            "{image} missing: {content}"
        );
    }
}
