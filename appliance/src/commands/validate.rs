//! `validate PATH...`: checks manifest files offline, exactly as the ingest would read them.

use std::io::Write;
use std::path::Path;

use landscaper_store::Kind;
use landscaper_templating::blueprint::Blueprint;

use crate::daemon::ingest::{ManifestObject, is_manifest_name, parse_manifest, scan};

/// What a validation run found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    pub files: usize,
    pub objects: usize,
    pub errors: usize,
    pub warnings: usize,
}

/// Validates files and folders (folders are walked like the manifests folder, `.skip` markers
/// honoured), printing every error and warning and a summary.
pub fn run(paths: &[impl AsRef<Path>], out: &mut impl Write) -> anyhow::Result<Report> {
    let mut report = Report::default();
    for path in paths {
        let path = path.as_ref();
        if path.is_dir() {
            let walk = match scan::walk(path) {
                Ok(walk) => walk,
                Err(e) => {
                    writeln!(out, "{}: cannot read folder: {e}", path.display())?;
                    report.errors += 1;
                    continue;
                }
            };
            for warning in &walk.warnings {
                writeln!(out, "{}: warning: {warning}", path.display())?;
                report.warnings += 1;
            }
            for found in &walk.files {
                let shown = path.join(&found.rel);
                if found.skipped {
                    writeln!(
                        out,
                        "{}: skipped (a .skip marker disables it)",
                        shown.display()
                    )?;
                    continue;
                }
                check_file(&found.abs, &shown.display().to_string(), &mut report, out)?;
            }
        } else {
            let shown = path.display().to_string();
            let name = path.file_name().map(|n| n.to_string_lossy().to_string());
            if !name.as_deref().is_some_and(is_manifest_name) {
                writeln!(
                    out,
                    "{shown}: warning: the ingest ignores this file (only *.yaml, *.yml and *.json that are not hidden or editor temp files are read)"
                )?;
                report.warnings += 1;
            }
            check_file(path, &shown, &mut report, out)?;
        }
    }
    writeln!(
        out,
        "{} file(s), {} object(s), {} error(s), {} warning(s)",
        report.files, report.objects, report.errors, report.warnings
    )?;
    Ok(report)
}

fn check_file(
    path: &Path,
    shown: &str,
    report: &mut Report,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    report.files += 1;
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) => {
            writeln!(out, "{shown}: cannot read: {e}")?;
            report.errors += 1;
            return Ok(());
        }
    };
    match parse_manifest(shown, &bytes) {
        Ok(parsed) => {
            report.objects += parsed.objects.len();
            for warning in &parsed.warnings {
                writeln!(out, "{warning}")?;
                report.warnings += 1;
            }
            for object in &parsed.objects {
                for (error, line) in inline_blueprint_findings(object) {
                    let what = if error { "" } else { "warning: " };
                    writeln!(
                        out,
                        "{shown}:{}: document {}: {what}{line}",
                        object.line, object.document
                    )?;
                    if error {
                        report.errors += 1;
                    } else {
                        report.warnings += 1;
                    }
                }
            }
        }
        Err(error) => {
            writeln!(out, "{error}")?;
            report.errors += 1;
        }
    }
    Ok(())
}

/// What is wrong with an Installation's inline blueprint (`spec.blueprint.inline.filesystem`),
/// loaded as the controller loads it: (is it an error, the finding with the Installation, the
/// field and the blueprint's file, line and field). Problems that make the blueprint unusable
/// (it does not load, a schema or an execution is broken) are errors; unknown fields and
/// Landscaper's `ValidateBlueprint` findings, which Landscaper does not enforce, are warnings.
pub fn inline_blueprint_findings(object: &ManifestObject) -> Vec<(bool, String)> {
    if object.key.kind != Kind::Installation {
        return Vec::new();
    }
    let Some(tree) = object.object.pointer("/spec/blueprint/inline/filesystem") else {
        return Vec::new();
    };
    let prefix = format!(
        "Installation {}/{}: spec.blueprint.inline.filesystem",
        object.key.namespace, object.key.name
    );
    match Blueprint::from_yamlfs(tree) {
        Err(error) => error
            .issues
            .iter()
            .map(|issue| (true, format!("{prefix}: invalid blueprint: {issue}")))
            .collect(),
        Ok(blueprint) => {
            let warnings = blueprint.warnings();
            let mut findings: Vec<(bool, String)> = warnings
                .iter()
                .map(|issue| (false, format!("{prefix}: {issue}")))
                .collect();
            findings.extend(
                blueprint
                    .problems()
                    .into_iter()
                    .filter(|issue| !warnings.contains(issue))
                    .map(|issue| (true, format!("{prefix}: invalid blueprint: {issue}"))),
            );
            findings
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: DataObject\nmetadata:\n  name: a\ndata: 1\n";

    #[test]
    fn reports_errors_with_file_document_and_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("good.yaml"), GOOD).unwrap();
        std::fs::write(
            dir.path().join("bad.yaml"),
            format!("{GOOD}---\napiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Target\nmetadata:\n  name: t\nspec:\n  type: [1]\n"),
        )
        .unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not a manifest").unwrap();
        let mut out = Vec::new();
        let report = run(&[dir.path()], &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(report.files, 2, "{text}");
        assert_eq!(report.errors, 1, "{text}");
        assert_eq!(report.objects, 1, "{text}");
        let line = text.lines().find(|l| l.contains("bad.yaml")).unwrap();
        assert!(
            line.contains("document 1") && line.contains("spec.type"),
            "{line}"
        );
    }

    #[test]
    fn rejects_invalid_inline_blueprints() {
        let installation = |blueprint: &str| {
            let indented: String = blueprint
                .lines()
                .map(|l| format!("          {l}\n"))
                .collect();
            format!(
                "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Installation\nmetadata:\n  name: inst\n  namespace: ns\nspec:\n  blueprint:\n    inline:\n      filesystem:\n        blueprint.yaml: |\n{indented}"
            )
        };
        let dir = tempfile::tempdir().unwrap();
        let good = installation(
            "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Blueprint\nimports:\n- name: a\n  type: data\n  schema: {type: string}\n",
        );
        std::fs::write(dir.path().join("good.yaml"), &good).unwrap();
        let mut out = Vec::new();
        let report = run(&[dir.path()], &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(report.errors, 0, "{text}");

        let bad = installation(
            "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Blueprint\nimports: {this: is not a list}\n",
        );
        std::fs::write(dir.path().join("bad.yaml"), format!("{GOOD}---\n{bad}")).unwrap();
        let mut out = Vec::new();
        let report = run(&[dir.path()], &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(report.errors, 1, "{text}");
        let line = text.lines().find(|l| l.contains("bad.yaml")).unwrap();
        assert!(
            line.contains("bad.yaml:7: document 1: Installation ns/inst: spec.blueprint.inline.filesystem: invalid blueprint: blueprint.yaml")
                && line.contains("imports"),
            "{line}"
        );
    }

    #[test]
    fn single_files_and_unreadable_paths() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("one.yml");
        std::fs::write(&good, GOOD).unwrap();
        let mut out = Vec::new();
        let report = run(
            &[good.as_path(), dir.path().join("missing.yaml").as_path()],
            &mut out,
        )
        .unwrap();
        assert_eq!((report.files, report.objects, report.errors), (2, 1, 1));
    }
}
