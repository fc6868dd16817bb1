//! Check function of the fuzz target `chart` (`fuzz/fuzz_targets/chart.rs`), shared with
//! `tests/fuzz_corpus.rs`, which runs it over the committed corpus and regressions.
//!
//! The input is a chart: a gzipped tar archive when it starts with gzip's magic bytes,
//! otherwise a list of files, each introduced by a line `==> PATH` (the first line of the
//! input starts the first file). A chart that loads is rendered with a small budget; nothing
//! may panic, and the output must stay within the budget.

use std::sync::Arc;
use std::time::Duration;

use landscaper_templating::RenderBudget;
use landscaper_templating::gotemplate::Limits;

use crate::chart::{File, load_archive, load_files};
use crate::engine::{Capabilities, KubeVersion, ReleaseOptions};
use crate::{TemplateOptions, ValueOptions, render_limited, template_output};

fn limits() -> Limits {
    Limits {
        budget: RenderBudget {
            max_steps: 50_000,
            max_output_bytes: 256 << 10,
            max_value_bytes: 256 << 10,
            max_list_items: 10_000,
            max_duration: Duration::from_secs(2),
            max_alloc_bytes: 16 << 20,
        },
        ..Limits::default()
    }
}

/// The files of the `==> PATH` format.
pub fn files_of(data: &[u8]) -> Vec<File> {
    let text = String::from_utf8_lossy(data);
    let mut files: Vec<(String, String)> = Vec::new();
    for line in text.split_inclusive('\n') {
        if let Some(name) = line.strip_prefix("==> ") {
            files.push((name.trim_end().to_string(), String::new()));
        } else if let Some((_, body)) = files.last_mut() {
            body.push_str(line);
        }
    }
    files
        .into_iter()
        .map(|(name, body)| File {
            name,
            data: Arc::from(body.into_bytes()),
        })
        .collect()
}

/// Loads and renders the input; panics only on a defect.
pub fn chart(data: &[u8]) {
    let loaded = if data.starts_with(&[0x1f, 0x8b]) {
        load_archive(data)
    } else {
        load_files(files_of(data), 0)
    };
    let Ok(chart) = loaded else { return };
    let (templates, crd_bytes) = size(&chart);
    let opts = TemplateOptions {
        release: ReleaseOptions {
            name: "fuzz".into(),
            namespace: "ns".into(),
            revision: 1,
            is_install: true,
            is_upgrade: false,
        },
        capabilities: Capabilities::offline(KubeVersion::default(), &[]),
        include_crds: true,
        skip_tests: false,
        show_only: Vec::new(),
        lookup: None,
        skip_schema_validation: false,
    };
    let values = ValueOptions {
        values: vec!["fuzz.enabled=true,list[1]=x".into()],
        ..ValueOptions::default()
    };
    let Ok(user) = values.merge() else {
        panic!("fixed values must parse")
    };
    let limits = limits();
    if let Ok(rendered) = render_limited(chart, &user, &opts, &limits)
        && let Ok(out) = template_output(&rendered, &opts)
    {
        // Each template's output is bounded; the whole is at most their sum, the CRD files
        // and the `# Source:` headers.
        assert!(
            out.len() <= templates * (limits.budget.max_output_bytes + 8192) + 2 * crd_bytes + 4096,
            "output of {} bytes",
            out.len()
        );
    }
}

/// Templates of the chart tree, and the bytes of their files (an upper bound for CRDs).
fn size(c: &crate::Chart) -> (usize, usize) {
    let mut t = c.templates.len();
    let mut b: usize = c
        .files
        .iter()
        .map(|f| f.data.len() + f.name.len() + 32)
        .sum();
    for d in &c.dependencies {
        let (dt, db) = size(d);
        t += dt;
        b += db;
    }
    (t, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_list_format_splits_files() {
        let f = files_of(b"==> Chart.yaml\nname: x\n==> templates/a.yaml\na: 1\n");
        assert_eq!(f.len(), 2);
        assert_eq!(&f[1].data[..], b"a: 1\n");
        chart(b"==> Chart.yaml\nname: x\nversion: 1.0.0\n==> templates/a.yaml\nkind: {{ .Values.fuzz.enabled }}\n");
    }
}
