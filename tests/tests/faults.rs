//! Faults and bad input against the real binary (the short CI versions of the reliability
//! campaign; `scripts/reliability.sh` runs the long ones):
//!
//! - `bad_input_changes_nothing_else_and_never_stops_the_daemon`: a folder of broken files
//!   (YAML and JSON syntax, invalid objects, hostile templates and values, junk bytes, a large
//!   file) beside good ones, one at a time. The daemon stays up, its peak memory stays under
//!   300 MB for each of them, every bad file is reported on its ManifestFile or its object,
//!   and the good installations succeed.
//! - `a_full_disk_heals_without_a_restart`: the data folder on a small tmpfs is filled while the
//!   daemon runs: `/readyz` reports the store as not writable, nothing acknowledged is lost,
//!   and once space is freed the store reopens by itself and the folder's new file is applied.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use landscaper_e2e::{Daemon, eventually};
use serde_json::Value;

const FILES: &str = "/apis/appliance.landscaper-appliance.io/v1alpha1/manifestfiles";
const INSTALLATIONS: &str =
    "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/faults/installations";

/// An installation with one mock deploy item rendered by `template` (a Go template body placed
/// under `deployItems:`), or a Spiff blueprint when `spiff` is set.
fn installation(name: &str, engine: &str, template: &str) -> String {
    let body = template
        .lines()
        .map(|l| format!("                {l}"))
        .collect::<Vec<_>>()
        .join("\n");
    format!(
        r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: {name}
  namespace: faults
  annotations:
    landscaper.gardener.cloud/operation: reconcile
spec:
  blueprint:
    inline:
      filesystem:
        blueprint.yaml: |
          apiVersion: landscaper.gardener.cloud/v1alpha1
          kind: Blueprint
          jsonSchemaVersion: https://json-schema.org/draft/2019-09/schema
          deployExecutions:
            - name: default
              type: {engine}
              template: |
{body}
"#
    )
}

fn good_installation(name: &str) -> String {
    installation(
        name,
        "GoTemplate",
        "deployItems:\n- name: item\n  type: landscaper.gardener.cloud/mock\n  config:\n    apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1\n    kind: ProviderConfiguration",
    )
}

/// The bad files: name → content. Each must end up reported, none may stop the daemon.
fn bad_files() -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut text =
        |name: &str, content: String| files.push((name.to_string(), content.into_bytes()));
    // Syntax.
    text(
        "syntax-unclosed.yaml",
        "kind: Installation\nmetadata: {name: \"x\n".into(),
    );
    text(
        "syntax-tabs.yaml",
        "kind: Target\n\tmetadata:\n\t\tname: t\n".into(),
    );
    text(
        "syntax-json.json",
        "{\"kind\": \"Target\", \"metadata\": {\"name\": \"t\"".into(),
    );
    text(
        "syntax-dup-keys.yaml",
        "apiVersion: v1\nkind: ConfigMap\nkind: Secret\nmetadata: {name: d, namespace: faults}\n"
            .into(),
    );
    text(
        "syntax-alias-bomb.yaml",
        "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: [*g,*g,*g,*g,*g,*g,*g,*g,*g,*g]\n".into(),
    );
    text(
        "syntax-deep.yaml",
        format!("{}x{}", "[".repeat(5000), "]".repeat(5000)),
    );
    // Objects that are not valid.
    text(
        "object-no-kind.yaml",
        "apiVersion: v1\nmetadata: {name: n}\n".into(),
    );
    text(
        "object-unknown-kind.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: faults}\n".into(),
    );
    text("object-bad-name.yaml", "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: DataObject\nmetadata: {name: \"Bad Name!\", namespace: faults}\ndata: 1\n".into());
    text("object-bad-labels.yaml", "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: DataObject\nmetadata: {name: l, namespace: faults, labels: {\"bad key!\": \"x\"}}\ndata: 1\n".into());
    text("object-secret-data-string.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: faults}\ndata: TOPSECRETVALUE\n".into());
    text("object-secret-data-number.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: s2, namespace: faults}\nstringData: {a: {b: TOPSECRETVALUE}}\n".into());
    text("object-bad-duration.yaml", "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Installation\nmetadata: {name: d, namespace: faults}\nspec:\n  automaticReconcile: {succeededReconcile: {interval: 5 fortnights}}\n  blueprint: {inline: {filesystem: {blueprint.yaml: 'kind: Blueprint'}}}\n".into());
    text(
        "object-huge-number.yaml",
        format!(
            "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: DataObject\nmetadata: {{name: big, namespace: faults}}\ndata: 1{}\n",
            "0".repeat(5000)
        ),
    );
    // Hostile templates: each installation must fail with a template error, never hurt the
    // daemon.
    text(
        "template-until.yaml",
        installation("t-until", "GoTemplate", "{{ until 100000000 | len }}"),
    );
    text(
        "template-loop.yaml",
        installation(
            "t-loop",
            "GoTemplate",
            "{{ range until 100000 }}{{ range until 100000 }}x{{ end }}{{ end }}",
        ),
    );
    text(
        "template-recursion.yaml",
        installation(
            "t-recursion",
            "GoTemplate",
            "{{ define \"a\" }}{{ template \"a\" . }}{{ end }}{{ template \"a\" . }}",
        ),
    );
    text(
        "template-output.yaml",
        installation(
            "t-output",
            "GoTemplate",
            "{{ range until 5000 }}{{ repeat 100000 \"x\" }}{{ end }}",
        ),
    );
    text(
        "template-printf.yaml",
        installation("t-printf", "GoTemplate", "{{ printf \"%99999999999d\" 1 }}"),
    );
    text(
        "spiff-format.yaml",
        installation(
            "s-format",
            "Spiff",
            "deployItems: (( format(\"%99999999999999999999d\", 1) ))",
        ),
    );
    text(
        "spiff-width.yaml",
        installation(
            "s-width",
            "Spiff",
            "deployItems: (( format(\"%*d\", -99999999, 1) ))",
        ),
    );
    text(
        "template-syntax.yaml",
        installation("t-syntax", "GoTemplate", "{{ if }}"),
    );
    // Junk bytes and a large file.
    files.push((
        "junk.yaml".into(),
        (0..4096u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect(),
    ));
    files.push(("large.yaml".into(), {
        let mut v = b"# large\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: large, namespace: faults}\ndata:\n  k: \"".to_vec();
        v.extend(std::iter::repeat_n(b'a', 64 * 1024 * 1024));
        v.extend_from_slice(b"\"\n");
        v
    }));
    files
}

/// Peak resident memory of a process in MiB (`VmHWM`).
fn peak_rss_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb / 1024)
        .unwrap_or(0)
}

/// Resets a process's peak resident memory (`VmHWM`) to its current size (Linux 4.0+, own
/// processes); without it the peaks are cumulative, which only overstates them.
fn reset_peak_rss(pid: u32) {
    let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
}

fn file_status(daemon: &Daemon, path: &str) -> Option<Value> {
    let list = daemon.get_json(FILES)?;
    list["items"]
        .as_array()?
        .iter()
        .find(|f| f["spec"]["path"] == path)
        .map(|f| f["status"].clone())
}

#[test]
fn bad_input_changes_nothing_else_and_never_stops_the_daemon() {
    let mut daemon = Daemon::start();
    daemon.write("good.yaml", &good_installation("good-before"));
    eventually(Duration::from_secs(30), "good-before Succeeded", || {
        let o = daemon.get_json(&format!("{INSTALLATIONS}/good-before"))?;
        (o["status"]["phase"] == "Succeeded").then_some(())
    });

    let bad = bad_files();
    // One file at a time, so that the peak memory is each file's own: every syntax or object
    // error is on the file's ManifestFile, every hostile template on its installation (Failed
    // with a lastError), and the daemon answers throughout. Problems are collected so that one
    // run names all of them.
    let mut problems = Vec::new();
    let mut peaks = Vec::new();
    for (name, content) in &bad {
        reset_peak_rss(daemon.child.id());
        std::fs::write(daemon.manifests.join(name), content).unwrap();
        let installation = name
            .strip_prefix("template-")
            .map(|n| format!("t-{}", n.trim_end_matches(".yaml")))
            .or_else(|| {
                name.strip_prefix("spiff-")
                    .map(|n| format!("s-{}", n.trim_end_matches(".yaml")))
            });
        let alive = |daemon: &mut Daemon| {
            if let Ok(Some(status)) = daemon.child.try_wait() {
                panic!("daemon exited with {status} on {name}:\n{}", daemon.logs());
            }
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(90);
        let outcome = loop {
            alive(&mut daemon);
            let found = match &installation {
                Some(inst) => daemon
                    .get_json(&format!("{INSTALLATIONS}/{inst}"))
                    .filter(|o| o["status"]["phase"] == "Failed")
                    .map(|o| o["status"]["lastError"].clone()),
                None => file_status(&daemon, name).and_then(|s| s.get("lastError").cloned()),
            };
            if found.is_some() || std::time::Instant::now() > deadline {
                break found;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let peak = peak_rss_mib(daemon.child.id());
        if peak >= 300 {
            problems.push(format!("{name}: peak memory {peak} MiB"));
        }
        peaks.push(format!("{name}: {peak} MiB"));
        match outcome {
            None => problems.push(format!("{name}: not reported as an error within 90 s")),
            Some(error) => {
                let text = error.to_string();
                if text.contains("TOPSECRETVALUE") {
                    problems.push(format!("{name}: a secret value is quoted: {text}"));
                }
                if error["message"].as_str().unwrap_or_default().is_empty() {
                    problems.push(format!("{name}: empty error {text}"));
                }
            }
        }
    }
    println!("peak RSS per bad file:\n  {}", peaks.join("\n  "));
    assert!(
        problems.is_empty(),
        "bad input problems:\n{}",
        problems.join("\n")
    );
    daemon.write("good-after.yaml", &good_installation("good-after"));
    eventually(Duration::from_secs(60), "good-after Succeeded", || {
        let o = daemon.get_json(&format!("{INSTALLATIONS}/good-after"))?;
        (o["status"]["phase"] == "Succeeded").then_some(())
    });
    let before = daemon
        .get_json(&format!("{INSTALLATIONS}/good-before"))
        .unwrap();
    assert_eq!(before["status"]["phase"], "Succeeded", "{before}");
    // Nothing a reader without a token sees quotes the secret value.
    for path in [FILES, "/api/v1/events", "/"] {
        let (_, body) = daemon.client().get(path, "*/*").unwrap();
        assert!(
            !String::from_utf8_lossy(&body).contains("TOPSECRETVALUE"),
            "{path} shows the secret value"
        );
    }
    assert!(
        daemon.child.try_wait().unwrap().is_none(),
        "the daemon is still running"
    );
    let (status, _) = daemon.terminate();
    assert!(status.success(), "{status}");
}

/// A tmpfs of `size` mounted on a fresh folder; unmounted on drop. `None` without root.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> Option<SmallDisk> {
        let root = Command::new("id")
            .arg("-u")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
            .unwrap_or(false);
        if !root {
            return None;
        }
        let dir = tempfile::tempdir().ok()?;
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        mounted.then_some(SmallDisk { dir })
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

fn fill(dir: &Path) -> PathBuf {
    use std::io::Write;
    let filler = dir.join("filler");
    let mut file = std::fs::File::create(&filler).unwrap();
    let chunk = vec![7u8; 64 * 1024];
    while file.write_all(&chunk).is_ok() {}
    let small = vec![7u8; 512];
    while file.write_all(&small).is_ok() {}
    let _ = file.sync_all();
    filler
}

#[test]
fn a_full_disk_heals_without_a_restart() {
    let Some(disk) = SmallDisk::mount("24m") else {
        println!("SKIP a_full_disk_heals_without_a_restart: needs root and a tmpfs mount");
        return;
    };
    let folders = tempfile::tempdir().unwrap();
    let manifests = folders.path().join("manifests");
    std::fs::create_dir_all(&manifests).unwrap();
    let data = disk.dir.path().join("data");
    let mut daemon = Daemon::start_on(&manifests, &data);
    daemon.write("before.yaml", &good_installation("before"));
    eventually(Duration::from_secs(30), "before Succeeded", || {
        let o = daemon.get_json(&format!("{INSTALLATIONS}/before"))?;
        (o["status"]["phase"] == "Succeeded").then_some(())
    });

    let filler = fill(disk.dir.path());
    // Writes now fail: the new file cannot be applied, and /readyz says why.
    daemon.write("during.yaml", &good_installation("during"));
    let reason = eventually(Duration::from_secs(60), "/readyz reports the store", || {
        // Keep the writer busy so that a commit meets the full disk.
        daemon.write(
            "during.yaml",
            &format!(
                "{}# {:?}\n",
                good_installation("during"),
                std::time::Instant::now()
            ),
        );
        std::thread::sleep(Duration::from_millis(200));
        match daemon.client().get("/readyz", "text/plain") {
            Ok((503, body)) => Some(String::from_utf8_lossy(&body).into_owned()),
            _ => None,
        }
    });
    assert!(
        reason.contains("store takes no writes"),
        "{reason}\n{}",
        daemon.logs()
    );
    assert!(
        daemon.child.try_wait().unwrap().is_none(),
        "the daemon runs on:\n{}",
        daemon.logs()
    );
    let before = daemon.get_json(&format!("{INSTALLATIONS}/before"));
    if let Some(before) = before {
        assert_eq!(before["status"]["phase"], "Succeeded", "{}", daemon.logs());
    }

    // Space again: ready again without a restart, and the new file is applied.
    std::fs::remove_file(&filler).unwrap();
    eventually(Duration::from_secs(30), "/readyz ok again", || {
        matches!(daemon.client().get("/readyz", "text/plain"), Ok((200, _))).then_some(())
    });
    // The file's last revision is applied (not only an earlier one from before the disk
    // filled), and its job has finished.
    let content = std::fs::read(daemon.manifests.join("during.yaml")).unwrap();
    let sha = landscaper_appliance::daemon::ingest::names::sha256_hex(&content);
    eventually(Duration::from_secs(120), "during.yaml applied", || {
        let s = file_status(&daemon, "during.yaml")?;
        (s["sha256"] == sha.as_str()).then_some(())
    });
    eventually(Duration::from_secs(120), "during Succeeded", || {
        let o = daemon.get_json(&format!("{INSTALLATIONS}/during"))?;
        let status = &o["status"];
        (status["phase"] == "Succeeded"
            && status["jobID"] == status["jobIDFinished"]
            && o["metadata"]["annotations"]
                .get("landscaper.gardener.cloud/operation")
                .is_none())
        .then_some(())
    });
    let before = daemon.get_json(&format!("{INSTALLATIONS}/before")).unwrap();
    assert_eq!(
        before["status"]["phase"],
        "Succeeded",
        "{before}\n{}",
        daemon.logs()
    );
    assert!(
        daemon.logs().contains("store file reopened"),
        "{}",
        daemon.logs()
    );
    let (status, _) = daemon.terminate();
    assert!(status.success(), "{status}");
    // And after a restart everything is there.
    let daemon = Daemon::start_on(&manifests, &data);
    for name in ["before", "during"] {
        let o = daemon.get_json(&format!("{INSTALLATIONS}/{name}")).unwrap();
        assert_eq!(o["status"]["phase"], "Succeeded", "{o}");
    }
}
