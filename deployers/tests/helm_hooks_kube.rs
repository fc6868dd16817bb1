//! Helm hooks (`helm::hooks::run_hooks`) through the real kube client against the in-memory
//! API server, whose simulated job controller completes or fails hook Jobs.

use std::collections::BTreeMap;
use std::time::Duration;

use kube_test_server::{ServerConfig, TestServer};
use landscaper_deployers::helm::hooks::{
    Hook, HookError, HookEvent, HookOptions, HookPhase, hooks_from_manifests, run_hooks,
};
use landscaper_deployers::kubernetes::KubeClusterClient;

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

fn job(name: &str, event: &str, weight: i64, extra_annotations: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  annotations:\n    helm.sh/hook: {event}\n    helm.sh/hook-weight: \"{weight}\"\n{extra_annotations}spec:\n  backoffLimit: 0\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: c\n        image: busybox\n"
    )
}

fn hooks(docs: &[String]) -> Vec<Hook> {
    let files: BTreeMap<String, String> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| (format!("demo/templates/hook{i}.yaml"), d.clone()))
        .collect();
    let (manifests, _) = landscaper_charts::sort::sort_manifests(&files).unwrap();
    hooks_from_manifests(&manifests).unwrap()
}

fn options() -> HookOptions {
    HookOptions {
        namespace: "default".into(),
        timeout: Duration::from_secs(20),
        poll_interval: Duration::from_millis(20),
    }
}

/// Where the first request about the Job `name` (its delete-before-create or its first read)
/// comes in the server's log.
fn first_request(server: &TestServer, name: &str) -> usize {
    server
        .requests()
        .iter()
        .position(|r| r.path.ends_with(&format!("/jobs/{name}")))
        .unwrap_or_else(|| panic!("no request for Job {name}"))
}

#[test]
fn hook_jobs_run_in_weight_order_and_delete_policies_apply() {
    block_on(async {
        let server = TestServer::start(ServerConfig::default()).await.unwrap();
        let client = KubeClusterClient::from_kubeconfig(&server.kubeconfig())
            .await
            .unwrap();
        let mut hooks = hooks(&[
            job(
                "late",
                "pre-install",
                10,
                "    helm.sh/hook-delete-policy: hook-failed\n",
            ),
            job(
                "early",
                "pre-install",
                -10,
                "    helm.sh/hook-delete-policy: hook-succeeded\n",
            ),
            job("middle", "pre-install", 0, ""),
        ]);
        run_hooks(&client, HookEvent::PreInstall, &mut hooks, &options())
            .await
            .unwrap();
        let (early, middle, late) = (
            first_request(&server, "early"),
            first_request(&server, "middle"),
            first_request(&server, "late"),
        );
        assert!(early < middle && middle < late, "{early} {middle} {late}");
        assert!(
            server.get("batch/v1", "Job", "default", "early").is_none(),
            "hook-succeeded deletes"
        );
        let late = server
            .get("batch/v1", "Job", "default", "late")
            .expect("hook-failed keeps on success");
        assert_eq!(late["status"]["succeeded"], 1);
        assert!(server.get("batch/v1", "Job", "default", "middle").is_some());
        assert!(
            hooks
                .iter()
                .all(|h| h.last_run.phase == HookPhase::Succeeded)
        );

        // Running again: before-hook-creation (the default) replaces the Job left by the first
        // run; a hook with only hook-failed conflicts with its leftover, as with Helm.
        let uid =
            server.get("batch/v1", "Job", "default", "middle").unwrap()["metadata"]["uid"].clone();
        let err = run_hooks(&client, HookEvent::PreInstall, &mut hooks, &options())
            .await
            .unwrap_err();
        assert!(
            matches!(&err, HookError::Create { object, .. } if object == "Job default/late"),
            "{err}"
        );
        assert!(err.to_string().contains("already exists"), "{err}");
        let again = server
            .get("batch/v1", "Job", "default", "middle")
            .expect("recreated");
        assert_ne!(again["metadata"]["uid"], uid);
    });
}

#[test]
fn a_failing_hook_job_is_a_clear_error() {
    block_on(async {
        let server = TestServer::start(ServerConfig::default()).await.unwrap();
        let client = KubeClusterClient::from_kubeconfig(&server.kubeconfig())
            .await
            .unwrap();
        let mut hooks = hooks(&[
            job(
                "ok",
                "post-upgrade",
                0,
                "    helm.sh/hook-delete-policy: hook-succeeded\n",
            ),
            job(
                "broken",
                "post-upgrade",
                1,
                "    kube-test-server/outcome: Fail\n",
            ),
            job("after", "post-upgrade", 2, ""),
        ]);
        let err = run_hooks(&client, HookEvent::PostUpgrade, &mut hooks, &options())
            .await
            .unwrap_err();
        assert!(matches!(err, HookError::Failed { .. }), "{err}");
        let message = err.to_string();
        assert!(
            message.contains("post-upgrade")
                && message.contains("demo/templates/hook1.yaml")
                && message.contains("Job default/broken")
                && message.contains("BackoffLimitExceeded"),
            "{message}"
        );
        // The failed Job stays for inspection (no hook-failed policy); the succeeded one with
        // hook-succeeded is cleaned up; later hooks never ran.
        assert!(server.get("batch/v1", "Job", "default", "broken").is_some());
        assert!(server.get("batch/v1", "Job", "default", "ok").is_none());
        assert!(server.get("batch/v1", "Job", "default", "after").is_none());
        let phase = |n: &str| hooks.iter().find(|h| h.name == n).unwrap().last_run.phase;
        assert_eq!(
            (phase("ok"), phase("broken"), phase("after")),
            (HookPhase::Succeeded, HookPhase::Failed, HookPhase::None)
        );
    });
}
