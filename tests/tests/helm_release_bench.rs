//! Benchmark of issue 17 (ignored by default; run with `--ignored --nocapture`): 100
//! installations, each one helm deploy item with a 10-object chart as a real Helm release,
//! through the daemon against the Kubernetes test server (time until all Succeeded, the
//! daemon's peak memory), and the same 100 releases with the real `helm upgrade --install` (`HELM`) from
//! a loop, side by side in one run. Both sides wait for the chart's Deployment to roll out:
//! the appliance through Landscaper's readiness checks of the item, `helm upgrade --install --wait`
//! through Helm's waiter (the test server simulates ReplicaSets and Pods, ready 100ms after
//! creation). Helm's waiter polls every 2s after a first immediate check, so each
//! `helm upgrade --install --wait` takes at least ~2s here. `BENCH_RELEASES` sets the count (default
//! 100) for a short smoke run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use landscaper_e2e::Daemon;
use landscaper_e2e::cluster::Cluster;

const DI_PATH: &str = "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/e2e/deployitems";
/// The number of releases per side (`BENCH_RELEASES`, default 100).
fn releases() -> usize {
    std::env::var("BENCH_RELEASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100)
}

/// Ten objects: eight ConfigMaps, a Service, a Deployment.
fn write_chart(dir: &Path) {
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(
        dir.join("Chart.yaml"),
        "apiVersion: v2\nname: ten\nversion: 1.0.0\n",
    )
    .unwrap();
    std::fs::write(dir.join("values.yaml"), "greeting: hello\n").unwrap();
    std::fs::write(
        dir.join("templates/cms.yaml"),
        "{{- range $i := until 8 }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ $.Release.Name }}-cm{{ $i }}\ndata:\n  greeting: {{ $.Values.greeting | quote }}\n{{- end }}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("templates/svc.yaml"),
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}-svc\nspec:\n  selector: {app: {{ .Release.Name }}}\n  ports: [{port: 80}]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("templates/web.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-web\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: {{ .Release.Name }}}}\n  template:\n    metadata: {labels: {app: {{ .Release.Name }}}}\n    spec: {containers: [{name: web, image: nginx}]}\n",
    )
    .unwrap();
}

fn installation(name: &str) -> String {
    format!(
        r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: {name}
  namespace: e2e
  annotations:
    landscaper.gardener.cloud/operation: reconcile
spec:
  imports:
    targets:
      - name: cluster
        target: cluster
  blueprint:
    inline:
      filesystem:
        blueprint.yaml: |
          apiVersion: landscaper.gardener.cloud/v1alpha1
          kind: Blueprint
          jsonSchema: "https://json-schema.org/draft/2019-09/schema"
          imports:
            - name: cluster
              type: target
              targetType: landscaper.gardener.cloud/kubernetes-cluster
          deployExecutions:
            - name: default
              type: GoTemplate
              template: |
                deployItems:
                  - name: item
                    type: landscaper.gardener.cloud/helm
                    target:
                      import: cluster
                    config:
                      apiVersion: helm.deployer.landscaper.gardener.cloud/v1alpha1
                      kind: ProviderConfiguration
                      name: {name}
                      namespace: bench-appliance
                      createNamespace: true
                      chart: {{ref: "local://charts/ten"}}
"#
    )
}

fn peak_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

#[test]
#[ignore = "benchmark: run with --ignored --nocapture"]
fn bench_100_helm_releases_appliance_and_helm() {
    let releases = releases();
    let helm = std::env::var_os("HELM")
        .map(PathBuf::from)
        .filter(|p| p.is_file());
    let cluster = Cluster::start("100ms");
    let daemon = Daemon::start();
    daemon.write("target.yaml", &cluster.target_manifest());
    let chart = daemon.manifests.join("charts/ten");
    write_chart(&chart);

    let start = Instant::now();
    for i in 0..releases {
        daemon.write(&format!("r{i:03}.yaml"), &installation(&format!("r{i:03}")));
    }
    let deadline = Instant::now() + Duration::from_secs(60 + 6 * releases as u64);
    loop {
        let items = daemon.get_json(DI_PATH).unwrap_or_default();
        let items = items["items"].as_array().cloned().unwrap_or_default();
        let pending: Vec<String> = items
            .iter()
            .filter(|d| d["status"]["phase"] != "Succeeded")
            .map(|d| {
                format!(
                    "{} {} {}",
                    d["metadata"]["name"],
                    d["status"]["phase"],
                    d["status"]["lastError"]["message"]
                )
            })
            .collect();
        if items.len() == releases && pending.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not all {releases} items Succeeded ({} items): {pending:#?}",
            items.len()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let appliance = start.elapsed();
    let peak = peak_mib(daemon.child.id());
    let records = cluster
        .get("/api/v1/namespaces/bench-appliance/secrets?labelSelector=owner%3Dhelm")
        .and_then(|l| l["items"].as_array().map(Vec::len))
        .unwrap_or(0);
    assert_eq!(records, releases, "one release record each");
    println!(
        "appliance: {releases} helm releases (10 objects each) Succeeded in {:.2}s, daemon peak RSS {peak:.1} MiB",
        appliance.as_secs_f64()
    );

    let Some(helm) = helm else {
        println!("SKIP helm side: set HELM");
        return;
    };
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("kubeconfig"), cluster.kubeconfig()).unwrap();
    let start = Instant::now();
    for i in 0..releases {
        let name = format!("h{i:03}");
        let status = Command::new(&helm)
            .args([
                "upgrade",
                "--install",
                &name,
                chart.to_str().unwrap(),
                "-n",
                "bench-helm",
                "--create-namespace",
                "--wait",
                "--timeout",
                "60s",
            ])
            .env("KUBECONFIG", home.path().join("kubeconfig"))
            .env("HOME", home.path())
            .env("HELM_CACHE_HOME", home.path().join("cache"))
            .env("HELM_CONFIG_HOME", home.path().join("config"))
            .env("HELM_DATA_HOME", home.path().join("data"))
            .output()
            .unwrap();
        assert!(
            status.status.success(),
            "{}",
            String::from_utf8_lossy(&status.stderr)
        );
    }
    let loop_time = start.elapsed();
    println!(
        "helm upgrade --install --wait loop: {releases} releases in {:.2}s ({:.2}x the appliance's time)",
        loop_time.as_secs_f64(),
        loop_time.as_secs_f64() / appliance.as_secs_f64()
    );
}
