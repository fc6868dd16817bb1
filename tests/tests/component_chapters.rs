//! End-to-end (issue 18): the guided tour's chapters that reach their blueprints through
//! component references and need no Flux (`import-export/import-parameters`,
//! `import-export/import-data-mappings`, `import-export/export-parameters` (the test server's
//! token controller fills the service-account token the blueprint exports),
//! `subinstallations/component-references`, `subinstallations/export-import`,
//! `subinstallations/subinst-templates`, `templating/components`, `target-maps/01`–`04`,
//! `kustomize/02-podinfo` up to the Flux objects it creates (Flux itself does not run here);
//! `components/helm-chart` is `components.rs`) through the real
//! daemon, with the chapters' Installation YAML unchanged except the registry base URL, the
//! namespace and the kubeconfig:
//! 1. from a real registry (Debian's `docker-registry` on loopback), each chapter's
//!    `local-repo/` component versions pushed with the project's own client, the blueprint
//!    directories packed as the real tour does (gzip tar, `localBlob`), the echo-server chart
//!    pushed with the real `helm push` and kept as an `ociArtifact`;
//! 2. air-gapped: no registry, a fresh data folder and only a Common Transport Format archive
//!    (written by `files::CtfWriter`) of the same component versions and the chart in the
//!    manifests folder (once as a directory, once as a `.tgz`), beside a truncated CTF that
//!    is reported by name and harms nothing.
//!
//! Each chapter runs in its own namespace against its own test cluster (the chapters share
//! object names). Needs `/usr/bin/docker-registry` and the OCM acceptance data; without them
//! the test prints a SKIP line and passes.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use landscaper_components::files::CtfWriter;
use landscaper_components::registry::push_component_version;
use landscaper_components::{Components, ComponentsConfig, RepositoryContext};
use landscaper_e2e::cluster::Cluster;
use landscaper_e2e::{Daemon, eventually};
use landscaper_sources::http::HyperTransport;
use landscaper_sources::testing::DockerRegistry;
use serde_json::Value;

/// The colors the tour renders `target-maps/*/component/installation/target.yaml.tpl` with.
const COLORS: [&str; 5] = ["blue", "green", "yellow", "orange", "red"];

const PUBLISHED_CHART: &str = "europe-docker.pkg.dev/sap-gcp-cp-k8s-stable-hub/landscaper-examples/examples/charts/guided-tour/echo-server:1.0.0";

const BLUEPRINT_MEDIA_TYPE: &str = "application/vnd.gardener.landscaper.blueprint.v1+tar+gzip";

/// A chapter, the namespace it runs in, its root Installation and the ConfigMaps its README
/// says end up in the target cluster's namespace `example`.
struct Chapter {
    dir: &'static str,
    namespace: &'static str,
    installation: &'static str,
    config_maps: &'static [&'static str],
    /// The exported DataObject and its value, where the chapter exports one.
    export: Option<(&'static str, &'static [&'static str])>,
    /// templating/components: the images of the transitively referenced components that the
    /// ConfigMap `templating-components` lists (`.components.components`, by label).
    images: &'static [&'static str],
    /// target-maps: ConfigMaps `<prefix>-<color>` for the colors of the Installation's target
    /// map (red, green, blue), each holding that color's entry of the DataObject `config`.
    colored: &'static [&'static str],
    /// import-export: the helm release `(name, text)` the chart deploys into `example` (the
    /// chart an `ociArtifact` of the component, the image from `getResource .cd`).
    release: Option<(&'static str, &'static str)>,
    /// export-parameters: the DataObject that receives the service-account token (a JWT, the
    /// deploy item's export `b64dec`oded by the export execution).
    token_export: Option<&'static str>,
    /// kustomize: the Flux `GitRepository` the blueprint creates, with the `url` and `ref.tag`
    /// it reads from the component's `gitHub` resource (`getResource .cd`). The test cluster
    /// gets Flux's CRDs and `flux-system`; no Flux runs, so the chapter ends where Landscaper's
    /// part ends.
    flux_source: Option<(&'static str, &'static str)>,
}

const CHAPTERS: &[Chapter] = &[
    Chapter {
        dir: "import-export/import-parameters",
        namespace: "cu-import-parameters",
        installation: "echo-server",
        config_maps: &[],
        export: None,
        images: &[],
        colored: &[],
        release: Some(("echo", "Hello, Landscaper!")),
        token_export: None,
        flux_source: None,
    },
    // No component of its own: it installs import-parameters' `echo-server:2.2.0`.
    Chapter {
        dir: "import-export/import-data-mappings",
        namespace: "cu-import-data-mappings",
        installation: "echo-server",
        config_maps: &[],
        export: None,
        images: &[],
        colored: &[],
        release: Some(("echo", "hello")),
        token_export: None,
        flux_source: None,
    },
    Chapter {
        dir: "import-export/export-parameters",
        namespace: "cu-export-parameters",
        installation: "export-token",
        config_maps: &[],
        export: None,
        images: &[],
        colored: &[],
        release: None,
        token_export: Some("my-token"),
        flux_source: None,
    },
    Chapter {
        dir: "kustomize/02-podinfo",
        namespace: "cu-kustomize-podinfo",
        installation: "podinfo",
        config_maps: &[],
        export: None,
        images: &[],
        colored: &[],
        release: None,
        token_export: None,
        flux_source: Some(("https://github.com/stefanprodan/podinfo", "6.7.0")),
    },
    Chapter {
        dir: "subinstallations/component-references",
        namespace: "cu-component-references",
        installation: "component-references",
        config_maps: &[
            "example-configmap",
            "example-configmap-x",
            "example-configmap-x-x",
        ],
        export: Some((
            "do-configmap-names",
            &[
                "example-configmap",
                "example-configmap-x",
                "example-configmap-x-x",
            ],
        )),
        images: &[],
        colored: &[],
        release: None,
        token_export: None,
        flux_source: None,
    },
    Chapter {
        dir: "subinstallations/export-import",
        namespace: "cu-export-import",
        installation: "export-import",
        config_maps: &[
            "example-configmap",
            "example-configmap-x",
            "example-configmap-x-x",
        ],
        export: Some((
            "do-configmap-names",
            &[
                "example-configmap",
                "example-configmap-x",
                "example-configmap-x-x",
            ],
        )),
        images: &[],
        colored: &[],
        release: None,
        token_export: None,
        flux_source: None,
    },
    Chapter {
        dir: "subinstallations/subinst-templates",
        namespace: "cu-subinst-templates",
        installation: "subinst-templates",
        config_maps: &["cm-0", "cm-1", "cm-2"],
        export: None,
        images: &[],
        colored: &[],
        release: None,
        token_export: None,
        flux_source: None,
    },
    Chapter {
        dir: "templating/components",
        namespace: "cu-templating-components",
        installation: "templating-components",
        config_maps: &[],
        export: None,
        images: &[
            "images/image-a",
            "images/image-b",
            "images/image-c",
            "images/image-d",
        ],
        colored: &[],
        release: None,
        token_export: None,
        flux_source: None,
    },
    target_maps(
        "target-maps/01-multiple-deploy-items",
        "cu-tm-01",
        "multiple-items",
        &["multiple-items"],
    ),
    target_maps(
        "target-maps/02-targetmap-ref",
        "cu-tm-02",
        "targetmap-ref",
        &["targetmapref"],
    ),
    target_maps(
        "target-maps/03-multiple-subinst",
        "cu-tm-03",
        "multiple-subinst",
        &["multiple-subinst"],
    ),
    // Three levels of `cd://resources/…`; the innermost deploys plain ConfigMaps per color.
    Chapter {
        dir: "target-maps/04-forward-map",
        namespace: "cu-tm-04",
        installation: "forward-map",
        config_maps: &[
            "compose-map-exec-red",
            "compose-map-exec-green",
            "compose-map-exec-blue",
        ],
        export: None,
        images: &[],
        colored: &[],
        release: None,
        token_export: None,
        flux_source: None,
    },
];

const fn target_maps(
    dir: &'static str,
    namespace: &'static str,
    installation: &'static str,
    colored: &'static [&'static str],
) -> Chapter {
    Chapter {
        dir,
        namespace,
        installation,
        config_maps: &[],
        export: None,
        images: &[],
        colored,
        release: None,
        token_export: None,
        flux_source: None,
    }
}

fn helm() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("HELM") {
        return Some(PathBuf::from(path));
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("helm"))
            .find(|p| p.is_file())
    })
}

/// Packages the tour's echo-server chart and pushes it with the real helm; its reference and
/// the packaged bytes.
fn push_chart(helm: &Path, tour: &Path, work: &Path, port: u16) -> (String, Vec<u8>) {
    let home = work.join("helm");
    let run = |args: &[&str]| {
        let output = std::process::Command::new(helm)
            .args(args)
            .env("HELM_CONFIG_HOME", home.join("config"))
            .env("HELM_CACHE_HOME", home.join("cache"))
            .env("HELM_DATA_HOME", home.join("data"))
            .env("HELM_REGISTRY_CONFIG", home.join("registry.json"))
            .output()
            .expect("helm runs");
        assert!(
            output.status.success(),
            "helm {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    let packages = work.join("packages");
    let chart = tour.join("components/helm-chart/chart/echo-server");
    run(&[
        "package",
        chart.to_str().unwrap(),
        "-d",
        packages.to_str().unwrap(),
    ]);
    let tgz = packages.join("echo-server-1.0.0.tgz");
    run(&[
        "push",
        tgz.to_str().unwrap(),
        &format!("oci://127.0.0.1:{port}/charts/guided-tour"),
        "--plain-http",
    ]);
    (
        format!("127.0.0.1:{port}/charts/guided-tour/echo-server:1.0.0"),
        std::fs::read(&tgz).unwrap(),
    )
}

fn tour() -> Option<PathBuf> {
    let dir = std::env::var_os("OCM_ACCEPTANCE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/work/shared/acceptance/ocm"))
        .join("guided-tour");
    dir.join("subinstallations/component-references")
        .is_dir()
        .then_some(dir)
}

/// A directory packed as the tour's `ocm add componentversions` packs a blueprint input
/// (`type: dir`, `compress: true`): a gzip tar of its files.
fn blueprint_tgz(dir: &Path) -> Vec<u8> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        assert!(
            path.is_file(),
            "{}: blueprint directories are flat",
            path.display()
        );
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        files.insert(name, std::fs::read(&path).unwrap());
    }
    let tar = landscaper_components::archive::tar_files(&files);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&tar).unwrap();
    gz.finish().unwrap()
}

/// One component version of a chapter's `local-repo/`: the descriptor as published (each
/// `localReference: <dir>` replaced by the packed blob's digest) and its local blobs.
struct Published {
    descriptor: String,
    blobs: Vec<(String, Vec<u8>)>,
}

fn published(chapter: &Path, chart_ref: &str) -> Vec<Published> {
    let repo = chapter.join("local-repo");
    if !repo.is_dir() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut descriptors: Vec<PathBuf> = std::fs::read_dir(&repo)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    descriptors.sort();
    for path in descriptors {
        let mut descriptor = std::fs::read_to_string(&path)
            .unwrap()
            .replace(PUBLISHED_CHART, chart_ref);
        let mut blobs = Vec::new();
        for entry in std::fs::read_dir(repo.join("blobs")).unwrap() {
            let dir = entry.unwrap().path();
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            let from = format!("localReference: {name}\n");
            if descriptor.contains(&from) {
                let tgz = blueprint_tgz(&dir);
                let digest = format!("sha256:{}", hex_sha256(&tgz));
                descriptor = descriptor.replace(&from, &format!("localReference: {digest}\n"));
                blobs.push((BLUEPRINT_MEDIA_TYPE.to_string(), tgz));
            }
        }
        out.push(Published { descriptor, blobs });
    }
    out
}

fn hex_sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn push_all(versions: &[Published], work: &Path, port: u16) {
    let ctx = RepositoryContext::parse(
        &serde_json::json!({"type": "OCIRegistry", "baseUrl": format!("127.0.0.1:{port}")}),
    )
    .unwrap();
    let mut config = ComponentsConfig::new(Arc::new(HyperTransport::new()));
    config.cache = Some(Arc::new(
        landscaper_sources::ChartCache::open(work.join("push-cache"), 64 << 20).unwrap(),
    ));
    let pusher = Components::new(config);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for v in versions {
        rt.block_on(push_component_version(
            &pusher,
            &ctx,
            v.descriptor.as_bytes(),
            &v.blobs,
        ))
        .expect("component version pushed");
    }
}

fn ctf_of(versions: &[Published]) -> CtfWriter {
    let mut ctf = CtfWriter::new();
    for v in versions {
        ctf.add_component(v.descriptor.as_bytes(), &v.blobs)
            .expect("component version added to the CTF");
    }
    ctf
}

/// The chapter's `installation/*.yaml.tpl`, only namespace, registry URL and kubeconfig
/// substituted.
fn write_chapter(daemon: &Daemon, cluster: &Cluster, tour: &Path, c: &Chapter, base_url: &str) {
    // target-maps chapters keep the tour's extra `component/` level.
    let mut dir = tour.join(c.dir).join("installation");
    if !dir.is_dir() {
        dir = tour.join(c.dir).join("component/installation");
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".yaml.tpl"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no templates in {}", dir.display());
    for file in files {
        let mut tpl = std::fs::read_to_string(&file).unwrap();
        if !tpl.ends_with('\n') {
            tpl.push('\n');
        }
        let text = cluster
            .render_template(&tpl)
            .replace("${namespace}", c.namespace)
            .replace("${repoBaseUrl}", base_url)
            .replace("${targetNamespace}", "example");
        let name = file
            .file_name()
            .unwrap()
            .to_string_lossy()
            .replace(".tpl", "");
        // The tour renders a target template once per color (`cluster-<color>`), the
        // kustomize chapters once per name (`my-cluster`, `my-cluster-2`).
        let colors: &[&str] = if text.contains("${color}") {
            &COLORS
        } else if text.contains("${name}") {
            &["my-cluster", "my-cluster-2"]
        } else {
            &[""]
        };
        for color in colors {
            let text = text.replace("${color}", color).replace("${name}", color);
            assert!(
                !text.contains("${"),
                "{}: unsubstituted variable",
                file.display()
            );
            daemon.write(&format!("{}-{color}{name}", c.namespace), &text);
        }
    }
}

fn installation(daemon: &Daemon, c: &Chapter) -> Option<Value> {
    daemon.get_json(&format!(
        "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/{}/installations/{}",
        c.namespace, c.installation
    ))
}

/// Waits for the chapter's root installation to succeed, then checks what its README says.
fn chapter_succeeded(daemon: &Daemon, cluster: &Cluster, c: &Chapter) {
    eventually(
        Duration::from_secs(90),
        &format!("{} Succeeded", c.installation),
        || {
            let i = installation(daemon, c)?;
            let phase = i["status"]["phase"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            assert!(
                phase != "Failed",
                "{} failed: {}\n{}",
                c.installation,
                i["status"],
                daemon.logs()
            );
            (phase == "Succeeded").then_some(())
        },
    );
    for name in c.config_maps {
        let cm = eventually(
            Duration::from_secs(30),
            &format!("ConfigMap {name}"),
            || cluster.core("example", "configmaps", name),
        );
        assert_eq!(cm["data"]["foo"], "bar", "{}: {cm}", c.dir);
    }
    if let Some((data_object, want)) = c.export {
        let path = format!(
            "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/{}/dataobjects/{data_object}",
            c.namespace
        );
        let d = eventually(Duration::from_secs(30), &path, || daemon.get_json(&path));
        assert_eq!(d["data"], serde_json::json!(want), "{}: {d}", c.dir);
    }
    for prefix in c.colored {
        for (color, cpu) in [("red", "180m"), ("green", "120m"), ("blue", "100m")] {
            let name = format!("{prefix}-{color}");
            let cm = eventually(
                Duration::from_secs(30),
                &format!("ConfigMap {name}"),
                || cluster.core("example", "configmaps", &name),
            );
            assert_eq!(cm["data"]["color"], color, "{}: {cm}", c.dir);
            assert_eq!(cm["data"]["cpu"], cpu, "{}: {cm}", c.dir);
        }
    }
    if let Some((name, text)) = c.release {
        let deployment = eventually(
            Duration::from_secs(30),
            &format!("Deployment {name}"),
            || cluster.grouped("apps/v1", "example", "deployments", name),
        );
        let container = &deployment["spec"]["template"]["spec"]["containers"][0];
        // `getResource .cd "name" "echo-server-image"` rendered the image into the values.
        assert_eq!(
            container["image"], "hashicorp/http-echo:0.2.3",
            "{}: {deployment}",
            c.dir
        );
        assert_eq!(
            container["args"][0],
            format!("-text=\"{text}\""),
            "{}: {deployment}",
            c.dir
        );
    }
    if let Some(data_object) = c.token_export {
        let path = format!(
            "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/{}/dataobjects/{data_object}",
            c.namespace
        );
        let d = eventually(Duration::from_secs(30), &path, || daemon.get_json(&path));
        let token = d["data"].as_str().unwrap_or_default();
        // The secret's `.data.token` is base64 of the JWT; the export execution decoded it.
        assert!(
            token.starts_with("eyJ") && token.split('.').count() == 3,
            "{}: the exported token is a JWT: {d}",
            c.dir
        );
        let secret = cluster
            .core("example", "secrets", "test-secret")
            .expect("the token Secret");
        assert_eq!(
            secret["type"], "kubernetes.io/service-account-token",
            "{}",
            c.dir
        );
    }
    if let Some((url, tag)) = c.flux_source {
        let repository = eventually(Duration::from_secs(30), "GitRepository podinfo", || {
            cluster.grouped(
                "source.toolkit.fluxcd.io/v1",
                "flux-system",
                "gitrepositories",
                "podinfo",
            )
        });
        assert_eq!(repository["spec"]["url"], url, "{}: {repository}", c.dir);
        assert_eq!(
            repository["spec"]["ref"]["tag"], tag,
            "{}: {repository}",
            c.dir
        );
        let kustomization = cluster
            .grouped(
                "kustomize.toolkit.fluxcd.io/v1",
                "flux-system",
                "kustomizations",
                "podinfo",
            )
            .expect("the Kustomization");
        assert_eq!(
            kustomization["spec"]["sourceRef"]["name"], "podinfo",
            "{}",
            c.dir
        );
        // The second target's kubeconfig, for Flux to deploy to.
        let secret = cluster
            .core("flux-system", "secrets", "cluster2")
            .expect("the cluster2 Secret");
        assert!(secret["data"]["kubeconfig"].is_string(), "{}", c.dir);
    }
    if !c.images.is_empty() {
        let cm = eventually(Duration::from_secs(30), "templating-components", || {
            cluster.core("example", "configmaps", "templating-components")
        });
        let content = cm["data"]["content"].as_str().unwrap_or_default();
        for image in c.images {
            assert!(
                content.contains(&format!(
                    "repository: sap-gcp-cp-k8s-stable-hub/landscaper-examples/examples/{image}"
                )),
                "{}: {image} missing: {cm}",
                c.dir
            );
        }
    }
}

fn start_clusters() -> Vec<Cluster> {
    CHAPTERS
        .iter()
        .map(|c| {
            let cluster = Cluster::start("100ms");
            cluster.create_namespace("example");
            if c.flux_source.is_some() {
                install_flux_crds(&cluster);
            }
            cluster
        })
        .collect()
}

/// Flux's `GitRepository` and `Kustomization` kinds (schemas left open) and `flux-system`.
fn install_flux_crds(cluster: &Cluster) {
    cluster.create_namespace("flux-system");
    for (group, kind, plural) in [
        (
            "source.toolkit.fluxcd.io",
            "GitRepository",
            "gitrepositories",
        ),
        (
            "kustomize.toolkit.fluxcd.io",
            "Kustomization",
            "kustomizations",
        ),
    ] {
        let crd = serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.{group}")},
            "spec": {
                "group": group,
                "scope": "Namespaced",
                "names": {
                    "kind": kind,
                    "listKind": format!("{kind}List"),
                    "plural": plural,
                    "singular": kind.to_lowercase(),
                },
                "versions": [{
                    "name": "v1",
                    "served": true,
                    "storage": true,
                    "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": true,
                    }},
                }],
            },
        });
        cluster.create(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd,
        );
    }
}

#[test]
fn guided_tour_component_chapters_from_a_registry_then_from_a_ctf() {
    let Some(tour) = tour() else {
        println!("SKIP: OCM acceptance data not present");
        return;
    };
    if !DockerRegistry::available() {
        println!("SKIP: no {}", DockerRegistry::BINARY);
        return;
    }
    let Some(helm) = helm() else {
        println!("SKIP: no helm");
        return;
    };
    let work = tempfile::tempdir().unwrap();

    // 1. From the registry: the chart pushed with the real helm, the component versions with
    // the project's client.
    let mut registry =
        DockerRegistry::start(&work.path().join("storage"), work.path(), "").expect("registry");
    let port = registry.port;
    let (chart_ref, chart_tgz) = push_chart(&helm, &tour, work.path(), port);
    let versions: Vec<Published> = CHAPTERS
        .iter()
        .flat_map(|c| published(&tour.join(c.dir), &chart_ref))
        .collect();
    // import-parameters, export-parameters, kustomize/podinfo, component-references/root+sub,
    // export-import, subinst-templates/root+sub, templating-components root+core+extension,
    // one per target-maps chapter.
    assert_eq!(versions.len(), 15);
    assert_eq!(
        versions.iter().map(|v| v.blobs.len()).sum::<usize>(),
        18,
        "every blueprint directory packed"
    );
    push_all(&versions, work.path(), port);
    let base_url = format!("127.0.0.1:{port}");
    let manifests = work.path().join("manifests");
    std::fs::create_dir_all(&manifests).unwrap();
    let mut daemon = Daemon::start_on(&manifests, &work.path().join("data"));
    let clusters = start_clusters();
    for (c, cluster) in CHAPTERS.iter().zip(&clusters) {
        write_chapter(&daemon, cluster, &tour, c, &base_url);
    }
    for (c, cluster) in CHAPTERS.iter().zip(&clusters) {
        chapter_succeeded(&daemon, cluster, c);
    }
    daemon.terminate();
    registry.stop();
    drop(clusters);

    // 2. Air-gapped: no registry, fresh data folders, only a CTF in the manifests folder
    // (directory and .tgz), beside a truncated one.
    let mut ctf = ctf_of(&versions);
    // The chart stays an `ociArtifact`; the CTF carries it as a plain OCI artifact (as
    // `ocm transfer` without `--copy-resources` of an OCI-hosted chart into a CTF mirror would
    // need), found by its repository path.
    ctf.add_artifact(
        "charts/guided-tour/echo-server",
        "1.0.0",
        (
            "application/vnd.cncf.helm.config.v1+json",
            br#"{"name":"echo-server","version":"1.0.0","apiVersion":"v2"}"#.to_vec(),
        ),
        &[(
            "application/vnd.cncf.helm.chart.content.v1.tar+gzip".into(),
            chart_tgz,
        )],
    );
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&ctf.to_tar()).unwrap();
    let tgz = gz.finish().unwrap();
    for form in ["dir", "tgz"] {
        let manifests = work.path().join(format!("manifests-{form}"));
        std::fs::create_dir_all(&manifests).unwrap();
        if form == "dir" {
            ctf.write_dir(&manifests.join("tour-ctf")).unwrap();
        } else {
            std::fs::write(manifests.join("tour-ctf.tgz"), &tgz).unwrap();
            std::fs::write(manifests.join("broken-ctf.tgz"), &tgz[..tgz.len() / 2]).unwrap();
        }
        let mut daemon = Daemon::start_on(&manifests, &work.path().join(format!("data-{form}")));
        let clusters = start_clusters();
        for (c, cluster) in CHAPTERS.iter().zip(&clusters) {
            write_chapter(&daemon, cluster, &tour, c, &base_url);
        }
        for (c, cluster) in CHAPTERS.iter().zip(&clusters) {
            chapter_succeeded(&daemon, cluster, c);
        }
        if form == "tgz" {
            // The truncated CTF is a `TransportArchive` of its own, Failed with an error
            // naming the archive; the good one beside it served every chapter above.
            let path = "/apis/appliance.landscaper-appliance.io/v1alpha1/transportarchives";
            let broken = eventually(
                Duration::from_secs(20),
                "the broken TransportArchive",
                || {
                    daemon
                        .get_json(path)?
                        .get("items")?
                        .as_array()?
                        .iter()
                        .find(|o| o["spec"]["path"] == "broken-ctf.tgz")
                        .filter(|o| o["status"]["phase"].is_string())
                        .cloned()
                },
            );
            assert_eq!(broken["status"]["phase"], "Failed", "{broken}");
            let error = broken["status"]["lastError"].as_str().unwrap_or_default();
            assert!(error.contains("broken-ctf.tgz"), "{broken}");
        }
        daemon.terminate();
    }
}
