//! Runs the README's quick start and first installation as written, with the real binary, in a
//! fresh folder: the command blocks marked `<!-- readme-test: daemon -->` (started and left
//! running) and `<!-- readme-test: run -->` (run with bash, in order, in the same folder), and
//! checks that what a block marked `<!-- readme-test: expect -->` shows is what the command
//! before it prints (retried for up to 30 s: jobs take a moment).
//!
//! What the test changes, and only this: `cargo run --release -p landscaper-appliance --` and
//! `landscaper-appliance` run the binary of this build; the daemon gets `--listen` on a free
//! port, and the CLI finds it through `LANDSCAPER_APPLIANCE_SERVER` (explicit
//! `127.0.0.1:8080` URLs are rewritten to the port); `kubectl` is the harness's kubectl (lines
//! with kubectl are left out when there is none). `export` lines of earlier blocks apply to the
//! later ones, as in one terminal.
//!
//! An expected line matches an output line when its words appear in it in order (so a column
//! added later does not break the README); words that change from run to run match any value of
//! their shape: ages (`12s`, `3m4s`), job IDs (`4f9c7a61/4f9c7a61`) and generated name suffixes
//! (`hello-hello-x7k2p`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use landscaper_e2e::{binary, eventually, free_port, kubectl};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Block {
    Daemon(String),
    Run(String),
    Expect(String),
}

/// The marked blocks of `text`, in order.
fn marked_blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(kind) = line
            .trim()
            .strip_prefix("<!-- readme-test: ")
            .and_then(|r| r.strip_suffix(" -->"))
        else {
            continue;
        };
        let fence = lines.next().unwrap_or_default();
        assert!(
            fence.starts_with("```"),
            "a fenced block must follow {line:?}"
        );
        let body: Vec<&str> = lines
            .by_ref()
            .take_while(|l| !l.starts_with("```"))
            .collect();
        let body = body.join("\n") + "\n";
        blocks.push(match kind {
            "daemon" => Block::Daemon(body),
            "run" => Block::Run(body),
            "expect" => Block::Expect(body),
            other => panic!("unknown readme-test marker {other:?}"),
        });
    }
    blocks
}

fn volatile_match(expected: &str, actual: &str) -> bool {
    let age = regex::Regex::new(r"^\d+[smhd](\d+[smh])?$").unwrap();
    let job = regex::Regex::new(r"^[0-9a-f]{8}/[0-9a-f]{8}$").unwrap();
    let suffixed = regex::Regex::new(r"^(.*-)[a-z0-9]{5}$").unwrap();
    if expected == actual
        || (age.is_match(expected) && age.is_match(actual))
        || (job.is_match(expected) && job.is_match(actual))
    {
        return true;
    }
    match (suffixed.captures(expected), suffixed.captures(actual)) {
        (Some(e), Some(a)) => e[1] == a[1],
        _ => false,
    }
}

/// Whether the words of `expected` appear in `line` in order.
fn line_matches(expected: &str, line: &str) -> bool {
    let mut words = line.split_whitespace();
    expected
        .split_whitespace()
        .all(|e| words.by_ref().any(|a| volatile_match(e, a)))
}

/// The expected lines `output` lacks.
fn missing_lines<'a>(expected: &'a str, output: &str) -> Vec<&'a str> {
    expected
        .lines()
        .filter(|e| !e.trim().is_empty())
        .filter(|e| !output.lines().any(|l| line_matches(e, l)))
        .collect()
}

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn rewrite(block: &str, port: u16, kubectl: Option<&Path>) -> String {
    block
        .lines()
        .filter(|l| kubectl.is_some() || !l.trim_start().starts_with("kubectl "))
        .map(|l| {
            let l = l
                .replace(
                    "cargo run --release -p landscaper-appliance --",
                    "landscaper-appliance",
                )
                .replace("127.0.0.1:8080", &format!("127.0.0.1:{port}"));
            match (kubectl, l.strip_prefix("kubectl ")) {
                (Some(k), Some(rest)) => format!("{} {rest}", k.display()),
                _ => l,
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn readme_quick_start_and_first_installation_run_as_written() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .expect("README.md");
    let blocks = marked_blocks(&readme);
    assert!(
        blocks.iter().filter(|b| matches!(b, Block::Run(_))).count() >= 5
            && blocks.iter().any(|b| matches!(b, Block::Daemon(_))),
        "the README's marked blocks are missing: {blocks:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(binary(), bin.join("landscaper-appliance")).unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let port = free_port();
    let server = format!("http://127.0.0.1:{port}");
    let kubectl: Option<PathBuf> = kubectl();
    let log = dir.path().join("daemon.log");
    let bash = |script: &str| {
        let mut c = Command::new("bash");
        c.arg("-ec")
            .arg(script)
            .current_dir(&work)
            .env("PATH", &path)
            .env("LANDSCAPER_APPLIANCE_SERVER", &server)
            .env_remove("LANDSCAPER_APPLIANCE_DATA")
            .env_remove("LANDSCAPER_APPLIANCE_TOKEN");
        c
    };
    let mut daemon = None;
    let mut exports = String::new();
    let mut i = 0;
    while i < blocks.len() {
        match &blocks[i] {
            Block::Daemon(body) => {
                let script = format!(
                    "exec {} --listen 127.0.0.1:{port}",
                    rewrite(body, port, None).trim()
                );
                let child = bash(&script)
                    .stdout(std::fs::File::create(dir.path().join("daemon.out")).unwrap())
                    .stderr(std::fs::File::create(&log).unwrap())
                    .spawn()
                    .expect("start the demo");
                daemon = Some(Running(child));
                let client = landscaper_appliance::commands::client::Client::new(&server).unwrap();
                eventually(Duration::from_secs(60), "the demo to be ready", || {
                    matches!(client.get("/readyz", "text/plain"), Ok((200, _))).then_some(())
                });
            }
            Block::Run(body) => {
                let script = format!("{exports}{}", rewrite(body, port, kubectl.as_deref()));
                let expect = match blocks.get(i + 1) {
                    Some(Block::Expect(e)) => {
                        i += 1;
                        Some(e.clone())
                    }
                    _ => None,
                };
                let deadline = Instant::now() + Duration::from_secs(30);
                loop {
                    let out = bash(&script).output().expect("run a README block");
                    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
                    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
                    let missing = match &expect {
                        Some(e) if out.status.success() => missing_lines(e, &stdout),
                        _ => Vec::new(),
                    };
                    if out.status.success() && missing.is_empty() {
                        break;
                    }
                    assert!(
                        Instant::now() < deadline,
                        "README block\n{script}\nfailed ({}) or lacks {missing:?}:\n{stdout}\n{stderr}\ndaemon log:\n{}",
                        out.status,
                        std::fs::read_to_string(&log).unwrap_or_default()
                    );
                    std::thread::sleep(Duration::from_millis(300));
                }
                for line in body.lines().filter(|l| l.starts_with("export ")) {
                    exports.push_str(line);
                    exports.push('\n');
                }
            }
            Block::Expect(_) => panic!("an expect block must follow a run block"),
        }
        i += 1;
    }
    assert!(daemon.is_some());
    // What the quick start says the terminal shows: finished jobs at INFO, with stable keys.
    let logs = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        logs.lines().any(|l| l.contains(" INFO ")
            && l.contains("job succeeded")
            && l.contains("object=demo/hello")),
        "{logs}"
    );
}

#[test]
fn expected_lines_match_by_words_in_order_with_volatile_words() {
    let out = "NAMESPACE   NAME    PHASE       EXECUTION   REASON   AGE\n\
               demo        hello   Succeeded   hello       <none>   3m12s\n\
               └── DeployItem/hello-hello-q8zt2   Succeeded   0123abcd/0123abcd\n";
    assert!(missing_lines("demo  hello  Succeeded  hello  12s", out).is_empty());
    assert!(
        missing_lines(
            "└── DeployItem/hello-hello-x7k2p  Succeeded  4f9c7a61/4f9c7a61",
            out
        )
        .is_empty()
    );
    assert_eq!(
        missing_lines("demo  hello  Failed", out),
        ["demo  hello  Failed"]
    );
    assert_eq!(missing_lines("demo  other  Succeeded", out).len(), 1);
    assert_eq!(
        marked_blocks(
            "x\n<!-- readme-test: run -->\n```sh\na\nb\n```\n<!-- readme-test: expect -->\n```text\nc\n```\n"
        ),
        [Block::Run("a\nb\n".into()), Block::Expect("c\n".into())]
    );
}
