//! Shared helpers of the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use landscaper_components::{Components, ComponentsConfig, RepositoryContext};
use landscaper_sources::http::HyperTransport;

/// The acceptance data (`OCM_ACCEPTANCE` or /work/shared/acceptance/ocm); `None` prints a SKIP
/// line.
pub fn data(test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("OCM_ACCEPTANCE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/work/shared/acceptance/ocm"));
    if dir.join("FORMATS.md").is_file() {
        Some(dir)
    } else {
        eprintln!("SKIP {test}: no OCM acceptance data at {}", dir.display());
        None
    }
}

/// Offline components with `root` as the local root.
pub fn components(root: &std::path::Path) -> Components {
    let mut config = ComponentsConfig::new(Arc::new(HyperTransport::new()));
    config.local_root = Some(root.to_path_buf());
    config.offline = true;
    Components::new(config)
}

pub fn ctx(value: serde_json::Value) -> RepositoryContext {
    RepositoryContext::parse(&value).expect("context parses")
}

pub fn local(path: &str) -> RepositoryContext {
    ctx(serde_json::json!({"type": "local", "filePath": path}))
}

pub fn ctf(path: &str) -> RepositoryContext {
    ctx(
        serde_json::json!({"type": "CommonTransportFormat/v1", "filePath": path, "fileFormat": "directory"}),
    )
}
