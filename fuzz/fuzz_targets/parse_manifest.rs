//! `ingest::parse_manifest` on the same bytes as a `.yaml` and as a `.json` file: must never
//! panic, and every line and column it reports (errors, warnings, objects) lies inside the
//! input. Lines are 1-based; a column is 1-based in characters and may point one past the
//! end of its line (end of input, a missing token). YAML breaks lines at `\n`, `\r\n` and a
//! lone `\r`; JSON only at `\n`.
#![no_main]

use landscaper_appliance::daemon::ingest::parse_manifest;
use libfuzzer_sys::fuzz_target;

/// Characters per line of the text the parser sees (BOM stripped, bad UTF-8 as U+FFFD).
fn line_lengths(data: &[u8], yaml: bool) -> Vec<usize> {
    let data = data.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(data);
    let text = String::from_utf8_lossy(data);
    let text = if yaml {
        text.replace("\r\n", "\n").replace('\r', "\n")
    } else {
        text.into_owned()
    };
    text.split('\n').map(|line| line.chars().count()).collect()
}

fn check(what: &str, lines: &[usize], line: Option<usize>, column: Option<usize>, data: &[u8]) {
    let Some(line) = line else {
        assert!(column.is_none(), "{what}: a column without a line");
        return;
    };
    assert!(
        line >= 1 && line <= lines.len(),
        "{what}: line {line} outside the input ({} lines): {:?}",
        lines.len(),
        String::from_utf8_lossy(data)
    );
    if let Some(column) = column {
        let width = lines[line - 1];
        assert!(
            column >= 1 && column <= width + 1,
            "{what}: column {column} outside line {line} ({width} characters): {:?}",
            String::from_utf8_lossy(data)
        );
    }
}

fuzz_target!(|data: &[u8]| {
    for path in ["fuzz.yaml", "fuzz.json"] {
        let lines = line_lengths(data, path.ends_with(".yaml"));
        match parse_manifest(path, data) {
            Ok(parsed) => {
                for object in &parsed.objects {
                    check(&format!("{path}: object {}", object.key), &lines, Some(object.line), None, data);
                    assert!(object.document < parsed.documents, "{path}: document index");
                }
                for warning in &parsed.warnings {
                    check(&format!("{path}: warning {warning}"), &lines, warning.line, warning.column, data);
                }
            }
            Err(error) => {
                check(&format!("{path}: error {error}"), &lines, error.line, error.column, data);
                assert!(error.to_string().starts_with(path));
            }
        }
    }
});
