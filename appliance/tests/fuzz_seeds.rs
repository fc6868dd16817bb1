//! Replays the seeds (and any regressions) of the `http_request` fuzz target through its check,
//! so that the ordinary test run covers it without cargo-fuzz.

use std::path::PathBuf;

use landscaper_appliance::fuzzing::Harness;

fn inputs() -> Vec<PathBuf> {
    let fuzz = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(fuzz.join("corpus/http_request")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("seed-") {
            found.push(path);
        }
    }
    if let Ok(entries) = std::fs::read_dir(fuzz.join("regressions")) {
        for entry in entries {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with("http_request-") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

#[test]
fn http_request_seeds_pass_the_check() {
    let inputs = inputs();
    assert!(inputs.len() >= 20, "seeds missing: {inputs:?}");
    let harness = Harness::new();
    for path in inputs {
        let data = std::fs::read(&path).unwrap();
        harness
            .check(&data)
            .unwrap_or_else(|finding| panic!("{}: {finding}", path.display()));
    }
}

/// The seeds reach what they are named after (so the replay is not vacuous).
#[test]
fn seeds_reach_their_handlers() {
    let harness = Harness::new();
    let fuzz = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/http_request");
    for (seed, status, contains) in [
        ("seed-get-secret", 200, "PHJlZGFjdGVkPg=="),
        ("seed-list-targets", 200, "<redacted>"),
        ("seed-get-target-custom", 200, "<redacted>"),
        ("seed-evil-host", 421, "DNS rebinding"),
        ("seed-host-header", 200, "SecretList"),
        ("seed-patch-labels-bad", 422, "bad key!"),
        ("seed-patch-annotation", 200, "reconcile"),
        ("seed-patch-no-token", 401, "Unauthorized"),
        ("seed-delete-secret-socket", 409, "all.yaml"),
        ("seed-status-page", 200, "<html"),
        ("seed-watch-dataobjects", 200, "ADDED"),
        ("seed-backup-no-token", 401, "Unauthorized"),
    ] {
        let data = std::fs::read(fuzz.join(seed)).unwrap();
        let (got, body) = harness.answer(&data).unwrap();
        assert_eq!(got, status, "{seed}: {body}");
        assert!(body.contains(contains), "{seed}: {body}");
    }
}
