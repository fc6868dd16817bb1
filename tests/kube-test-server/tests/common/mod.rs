//! Helpers for the conformance tests: finding the real clients and running them.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use kube_test_server::TestServer;

/// `$ENV`, then `<repo>/bin/<name>`, then PATH.
pub fn find_tool(name: &str, env: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env).map(PathBuf::from)
        && p.is_file()
    {
        return Some(p);
    }
    let repo_bin = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../bin")
        .join(name);
    if repo_bin.is_file() {
        return Some(repo_bin);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// A client binary bound to one server (its own kubeconfig, caches and home).
pub struct Client {
    pub bin: PathBuf,
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
}

impl Client {
    /// None (after printing SKIP) when the tool is missing.
    pub fn new(server: &TestServer, name: &str, env: &str) -> Option<Client> {
        let Some(bin) = find_tool(name, env) else {
            println!("SKIP: {name} not found (set {env} or put it in <repo>/bin)");
            return None;
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
        Some(Client {
            bin,
            dir,
            kubeconfig,
        })
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.bin);
        let home = self.dir.path();
        cmd.args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", home)
            .env("HELM_CACHE_HOME", home.join("helm-cache"))
            .env("HELM_CONFIG_HOME", home.join("helm-config"))
            .env("HELM_DATA_HOME", home.join("helm-data"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    pub fn run_with_input(&self, args: &[&str], input: &str) -> Output {
        let mut child = self.command(args).spawn().expect("spawn client");
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(input.as_bytes()).expect("stdin");
        }
        child.wait_with_output().expect("wait client")
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.run_with_input(args, "")
    }

    /// Runs and asserts success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        self.ok_with_input(args, "")
    }

    pub fn ok_with_input(&self, args: &[&str], input: &str) -> String {
        let out = self.run_with_input(args, input);
        assert!(
            out.status.success(),
            "{} {args:?} failed:\nstdout: {}\nstderr: {}",
            self.bin.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs and asserts failure; returns stderr.
    pub fn fails(&self, args: &[&str], input: &str) -> String {
        let out = self.run_with_input(args, input);
        assert!(
            !out.status.success(),
            "{args:?} should have failed; stdout: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

pub fn kubectl(server: &TestServer) -> Option<Client> {
    Client::new(server, "kubectl", "KUBECTL")
}

pub fn helm(server: &TestServer) -> Option<Client> {
    Client::new(server, "helm", "HELM")
}

/// Polls `check` for up to `secs` seconds.
pub fn eventually(secs: u64, mut check: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    check()
}
