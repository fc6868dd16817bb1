//! The CLI's client commands (`get`, `describe`) and their output formats.

use std::io::Write;

use anyhow::{Context, bail};
use landscaper_store::Kind;
use serde_json::Value;

use crate::cli::{DescribeArgs, GetArgs, OutputFormat};
use crate::client::Client;

const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

/// Resolves what a user typed (`inst`, `installations`, `Installation`,
/// `installations.landscaper.gardener.cloud`) to a kind.
pub fn resolve_kind(resource: &str) -> Option<Kind> {
    let lower = resource.to_ascii_lowercase();
    let (name, group) = match lower.split_once('.') {
        Some((name, group)) => (name.to_string(), Some(group.to_string())),
        None => (lower, None),
    };
    Kind::ALL.into_iter().find(|k| {
        group.as_deref().is_none_or(|g| g == k.group())
            && (k.plural() == name
                || k.singular() == name
                || k.as_str().eq_ignore_ascii_case(&name)
                || k.short_names().contains(&name.as_str()))
    })
}

/// The API path of a kind's collection or of one object.
pub fn api_path(kind: Kind, namespace: Option<&str>, name: Option<&str>) -> String {
    let mut path = if kind.group().is_empty() {
        format!("/api/{}", kind.version())
    } else {
        format!("/apis/{}/{}", kind.group(), kind.version())
    };
    if let (true, Some(ns)) = (kind.namespaced(), namespace) {
        path.push_str(&format!("/namespaces/{ns}"));
    }
    path.push('/');
    path.push_str(kind.plural());
    if let Some(name) = name {
        path.push('/');
        path.push_str(name);
    }
    path
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

pub fn get(args: &GetArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let kind = resolve_kind(&args.resource).with_context(|| {
        format!(
            "the server doesn't have a resource type {:?} (known: {})",
            args.resource,
            Kind::ALL.map(|k| k.plural()).join(", ")
        )
    })?;
    if args.name.is_some() && args.all_namespaces {
        bail!("a resource cannot be retrieved by name across all namespaces");
    }
    let client = Client::new(&args.server.server)?;
    let namespace = if args.all_namespaces {
        None
    } else {
        Some(args.namespace.as_deref().unwrap_or("default"))
    };
    let mut path = api_path(kind, namespace, args.name.as_deref());
    if let Some(selector) = &args.selector {
        path.push_str(&format!("?labelSelector={}", percent_encode(selector)));
    }
    match args.output {
        OutputFormat::Table => {
            let table = client.get_json_as(&path, TABLE_ACCEPT)?;
            print_table(&table, args.all_namespaces && kind.namespaced(), out)?;
        }
        OutputFormat::Name => {
            let value = client.get_json(&path)?;
            for item in items(&value) {
                writeln!(
                    out,
                    "{}/{}",
                    kind.singular(),
                    item["metadata"]["name"].as_str().unwrap_or_default()
                )?;
            }
        }
        OutputFormat::Json => {
            let value = client.get_json(&path)?;
            writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
        }
        OutputFormat::Yaml => {
            let value = client.get_json(&path)?;
            write!(out, "{}", to_yaml(&value)?)?;
        }
    }
    Ok(())
}

fn items(value: &Value) -> Vec<&Value> {
    match value.get("items").and_then(Value::as_array) {
        Some(items) => items.iter().collect(),
        None => vec![value],
    }
}

pub fn to_yaml(value: &Value) -> anyhow::Result<String> {
    serde_saphyr::to_string(value).context("rendering YAML")
}

/// Prints a `meta.k8s.io/v1` Table like kubectl does; falls back to names and ages when the
/// server answered with plain objects.
pub fn print_table(
    table: &Value,
    with_namespace: bool,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let mut header: Vec<String> = Vec::new();
    let mut rows: Vec<Vec<String>> = Vec::new();
    if table["kind"] == "Table" {
        let columns: Vec<(usize, String)> = table["columnDefinitions"]
            .as_array()
            .map(|cols| {
                cols.iter()
                    .enumerate()
                    .filter(|(_, c)| c["priority"].as_i64().unwrap_or(0) == 0)
                    .map(|(i, c)| (i, c["name"].as_str().unwrap_or("").to_ascii_uppercase()))
                    .collect()
            })
            .unwrap_or_default();
        if with_namespace {
            header.push("NAMESPACE".into());
        }
        header.extend(columns.iter().map(|(_, n)| n.clone()));
        for row in table["rows"].as_array().into_iter().flatten() {
            let mut cells = Vec::new();
            if with_namespace {
                cells.push(
                    row["object"]["metadata"]["namespace"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                );
            }
            for (i, _) in &columns {
                cells.push(cell_text(&row["cells"][*i]));
            }
            rows.push(cells);
        }
    } else {
        if with_namespace {
            header.push("NAMESPACE".into());
        }
        header.push("NAME".into());
        for item in items(table) {
            let mut cells = Vec::new();
            if with_namespace {
                cells.push(item["metadata"]["namespace"].as_str().unwrap_or("").into());
            }
            cells.push(item["metadata"]["name"].as_str().unwrap_or("").into());
            rows.push(cells);
        }
    }
    if rows.is_empty() {
        writeln!(out, "No resources found.")?;
        return Ok(());
    }
    write_columns(&header, &rows, out)
}

fn cell_text(cell: &Value) -> String {
    match cell {
        Value::Null => "<none>".into(),
        Value::String(s) if s.is_empty() => "<none>".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn write_columns(
    header: &[String],
    rows: &[Vec<String>],
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                s.push_str(cell);
            } else {
                s.push_str(&format!("{cell:<width$}   ", width = widths[i]));
            }
        }
        s
    };
    writeln!(out, "{}", line(header))?;
    for row in rows {
        writeln!(out, "{}", line(row))?;
    }
    Ok(())
}

pub fn describe(args: &DescribeArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let kind = resolve_kind(&args.resource).with_context(|| {
        format!(
            "the server doesn't have a resource type {:?}",
            args.resource
        )
    })?;
    let client = Client::new(&args.server.server)?;
    let namespace = args.namespace.as_deref().unwrap_or("default");
    let object = client.get_json(&api_path(kind, Some(namespace), Some(&args.name)))?;
    write!(out, "{}", to_yaml(&object)?)?;
    let ns = if kind.namespaced() { namespace } else { "" };
    let history = client.get_json(&format!(
        "/appliance/v1/history?kind={}&namespace={}&name={}&limit={}",
        kind.as_str(),
        percent_encode(ns),
        percent_encode(&args.name),
        args.history
    ))?;
    writeln!(out, "\nHistory (newest first):")?;
    let entries = history["items"].as_array().cloned().unwrap_or_default();
    if entries.is_empty() {
        writeln!(out, "  <none>")?;
        return Ok(());
    }
    let header: Vec<String> = [
        "REVISION",
        "TIME",
        "CHANGE",
        "GENERATION",
        "PHASE",
        "MESSAGE",
    ]
    .map(String::from)
    .to_vec();
    let rows: Vec<Vec<String>> = entries
        .iter()
        .map(|e| {
            let phase = match (e["previousPhase"].as_str(), e["phase"].as_str()) {
                (Some(from), Some(to)) if from != to => format!("{from} -> {to}"),
                (_, Some(to)) => to.to_string(),
                _ => String::new(),
            };
            vec![
                e["revision"].to_string(),
                e["time"].as_str().unwrap_or("").into(),
                e["changeType"].as_str().unwrap_or("").into(),
                e["generation"]
                    .as_i64()
                    .map(|g| g.to_string())
                    .unwrap_or_default(),
                phase,
                e["message"].as_str().unwrap_or("").into(),
            ]
        })
        .collect();
    write_columns(&header, &rows, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resolves_every_spelling_of_a_kind() {
        for spelling in [
            "inst",
            "installation",
            "installations",
            "Installation",
            "installations.landscaper.gardener.cloud",
        ] {
            assert_eq!(
                resolve_kind(spelling),
                Some(Kind::Installation),
                "{spelling}"
            );
        }
        assert_eq!(resolve_kind("cm"), Some(Kind::ConfigMap));
        assert_eq!(resolve_kind("manifestfiles"), Some(Kind::ManifestFile));
        assert_eq!(resolve_kind("pods"), None);
        assert_eq!(resolve_kind("installations.example.com"), None);
    }

    #[test]
    fn builds_kubernetes_paths() {
        assert_eq!(
            api_path(Kind::Installation, Some("ns"), Some("a")),
            "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/ns/installations/a"
        );
        assert_eq!(api_path(Kind::Secret, None, None), "/api/v1/secrets");
        assert_eq!(
            api_path(Kind::ManifestFile, Some("ignored"), None),
            "/apis/appliance.landscaper-appliance.io/v1alpha1/manifestfiles"
        );
    }

    #[test]
    fn prints_tables_like_kubectl() {
        let table = json!({"kind": "Table", "columnDefinitions": [
            {"name": "Name", "priority": 0}, {"name": "Phase", "priority": 0}, {"name": "Hidden", "priority": 1}],
            "rows": [{"cells": ["root-1", "Succeeded", "x"], "object": {"metadata": {"namespace": "ns"}}},
                     {"cells": ["r2", null, "y"], "object": {"metadata": {"namespace": "other"}}}]});
        let mut out = Vec::new();
        print_table(&table, true, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "NAMESPACE   NAME     PHASE\nns          root-1   Succeeded\nother       r2       <none>\n"
        );
        let mut out = Vec::new();
        print_table(
            &json!({"kind": "Table", "columnDefinitions": [], "rows": []}),
            false,
            &mut out,
        )
        .unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "No resources found.\n");
    }

    #[test]
    fn encodes_selectors_for_urls() {
        assert_eq!(percent_encode("a=b,c in (x)"), "a%3Db%2Cc%20in%20%28x%29");
    }
}
