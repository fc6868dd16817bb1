//! Replays the `component_descriptor` fuzz target's seeds (`fuzz/corpus/component_descriptor/`)
//! and minimised crashes (`fuzz/regressions/component_descriptor-*`) in the ordinary test run.

use std::path::Path;

#[test]
fn component_descriptor_corpus() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut files: Vec<_> = std::fs::read_dir(fuzz.join("corpus/component_descriptor"))
        .expect("seeds")
        .flatten()
        .map(|e| e.path())
        .collect();
    if let Ok(dir) = std::fs::read_dir(fuzz.join("regressions")) {
        files.extend(
            dir.flatten()
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .starts_with("component_descriptor-")
                })
                .map(|e| e.path()),
        );
    }
    assert!(files.len() >= 6, "{files:?}");
    let mut accepted = 0;
    for file in files {
        let data = std::fs::read(&file).expect("read");
        landscaper_components::fuzzing::component_descriptor(&data);
        let ctx = landscaper_components::RepositoryContext::for_file(
            landscaper_components::RepositoryKind::Local {
                file_path: "x".into(),
            },
        );
        if landscaper_components::ComponentVersion::parse(&data, "seed", ctx).is_ok() {
            accepted += 1;
        }
    }
    assert_eq!(accepted, 2, "the two descriptor seeds are valid");
}
