//! Pictures for the status page, drawn server-side as inline SVG (no script, no external
//! assets): a layered graph (deploy-item DAG of an execution, data flow between sibling
//! installations), the installation tree, and a timeline of the current and last job.
//! Pure functions from view data to SVG text; every text is XML-escaped.

use std::collections::HashMap;
use std::fmt::Write as _;

use jiff::Timestamp;
use serde::Serialize;

use super::view::{InstallationNode, Row};

const NODE_W: usize = 190;
const NODE_H: usize = 34;
const COL_GAP: usize = 70;
const ROW_GAP: usize = 14;
/// Graphs with more nodes are not drawn (the page lists them instead).
pub const MAX_NODES: usize = 300;

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn short(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// A node of a layered graph.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphNode {
    pub label: String,
    pub phase: String,
    pub tone: &'static str,
    pub href: Option<String>,
    /// Drawn with a thicker border (the object the page is about).
    pub current: bool,
}

/// An edge `from → to` (indices into the nodes) with an optional label.
#[derive(Debug, Clone, PartialEq)]
pub struct Edge {
    pub from: usize,
    pub to: usize,
    pub label: String,
}

/// The layer of each node: the longest path from a node without predecessors (cycles are
/// broken by ignoring the edges that close them).
pub fn layers(n: usize, edges: &[Edge]) -> Vec<usize> {
    let mut layer = vec![0usize; n];
    // Bellman-Ford style relaxation, at most n rounds: a cycle cannot push a layer past n.
    for _ in 0..n {
        let mut changed = false;
        for e in edges {
            if e.from < n && e.to < n && e.from != e.to && layer[e.to] < layer[e.from] + 1 {
                if layer[e.from] + 1 >= n {
                    continue;
                }
                layer[e.to] = layer[e.from] + 1;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    layer
}

/// A layered left-to-right drawing; `title` is the accessible name.
pub fn layered_svg(title: &str, nodes: &[GraphNode], edges: &[Edge]) -> String {
    if nodes.is_empty() || nodes.len() > MAX_NODES {
        return String::new();
    }
    let layer = layers(nodes.len(), edges);
    let mut slot = vec![0usize; nodes.len()];
    let mut per_layer: HashMap<usize, usize> = HashMap::new();
    for (i, l) in layer.iter().enumerate() {
        let c = per_layer.entry(*l).or_default();
        slot[i] = *c;
        *c += 1;
    }
    let cols = layer.iter().max().map_or(1, |m| m + 1);
    let rows = per_layer.values().max().copied().unwrap_or(1);
    let width = cols * (NODE_W + COL_GAP) - COL_GAP + 20;
    // Edges that skip a layer arc below the nodes (else they would run through them).
    let longest_skip = edges
        .iter()
        .filter(|e| e.from < nodes.len() && e.to < nodes.len())
        .map(|e| layer[e.to].saturating_sub(layer[e.from]))
        .max()
        .unwrap_or(0);
    let below = if longest_skip > 1 {
        14 * longest_skip + 10
    } else {
        0
    };
    let height = rows * (NODE_H + ROW_GAP) - ROW_GAP + 20 + below;
    let bottom = rows * (NODE_H + ROW_GAP) - ROW_GAP + 10;
    let pos = |i: usize| {
        (
            10 + layer[i] * (NODE_W + COL_GAP),
            10 + slot[i] * (NODE_H + ROW_GAP),
        )
    };
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="graph" role="img" aria-label="{t}" width="{width}" height="{height}" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg"><title>{t}</title><defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="edge-head"/></marker></defs>"#,
        t = esc(title)
    );
    for e in edges
        .iter()
        .filter(|e| e.from < nodes.len() && e.to < nodes.len() && e.from != e.to)
    {
        let (x1, y1) = pos(e.from);
        let (x2, y2) = pos(e.to);
        let (sx, sy) = (x1 + NODE_W, y1 + NODE_H / 2);
        let (tx, ty) = (x2, y2 + NODE_H / 2);
        let mid = (sx + tx) / 2;
        let skip = layer[e.to].saturating_sub(layer[e.from]);
        let d = if skip > 1 {
            // Down from the source's bottom, along below the nodes, up into the target.
            let (bx, by) = (x1 + NODE_W / 2, y1 + NODE_H);
            let (ex, ey) = (x2 + NODE_W / 2, y2 + NODE_H);
            let low = bottom + 14 * skip;
            format!("M{bx},{by} C{bx},{low} {ex},{low} {ex},{ey}")
        } else {
            format!("M{sx},{sy} C{mid},{sy} {mid},{ty} {tx},{ty}")
        };
        let _ = write!(
            svg,
            r#"<path class="edge" d="{d}" marker-end="url(#arrow)"><title>{}</title></path>"#,
            esc(&e.label)
        );
        if !e.label.is_empty() {
            let _ = write!(
                svg,
                r#"<text class="edge-label" x="{}" y="{}">{}</text>"#,
                mid.saturating_sub(30),
                (sy + ty) / 2 - 3,
                esc(&short(&e.label, 16))
            );
        }
    }
    for (i, n) in nodes.iter().enumerate() {
        let (x, y) = pos(i);
        let label = format!("{} · {}", short(&n.label, 18), n.phase);
        let node = format!(
            r#"<g class="node {tone}{cur}" data-node="{l}"><title>{l}: {p}</title><rect x="{x}" y="{y}" width="{NODE_W}" height="{NODE_H}" rx="6"/><text x="{tx}" y="{ty}">{text}</text></g>"#,
            tone = n.tone,
            cur = if n.current { " current" } else { "" },
            l = esc(&n.label),
            p = esc(&n.phase),
            tx = x + 8,
            ty = y + NODE_H / 2 + 5,
            text = esc(&label),
        );
        match &n.href {
            Some(h) => {
                let _ = write!(svg, r#"<a href="{}">{node}</a>"#, esc(h));
            }
            None => svg.push_str(&node),
        }
    }
    svg.push_str("</svg>");
    svg
}

/// The deploy items of an execution as a DAG (edges from `dependsOn`).
pub fn deploy_item_dag(items: &[Row]) -> String {
    let names: Vec<String> = items
        .iter()
        .map(|r| r.template.clone().unwrap_or_else(|| r.name.clone()))
        .collect();
    let index: HashMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let nodes: Vec<GraphNode> = items
        .iter()
        .zip(&names)
        .map(|(r, n)| GraphNode {
            label: n.clone(),
            phase: r.phase.clone(),
            tone: r.tone,
            href: None,
            current: false,
        })
        .collect();
    let edges: Vec<Edge> = items
        .iter()
        .enumerate()
        .flat_map(|(to, r)| {
            r.depends_on
                .iter()
                .filter_map(|d| index.get(d.as_str()).copied())
                .map(move |from| Edge {
                    from,
                    to,
                    label: String::new(),
                })
        })
        .collect();
    layered_svg("deploy items and their dependencies", &nodes, &edges)
}

/// What one installation imports and exports (data object and target names).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Flow {
    pub row: Option<Row>,
    pub imports: Vec<String>,
    pub exports: Vec<String>,
}

/// The names an Installation's spec imports and exports (`dataRef`, `target`).
pub fn flow_of(o: &serde_json::Value) -> (Vec<String>, Vec<String>) {
    let names = |section: &str| -> Vec<String> {
        let mut out = Vec::new();
        for (list, field) in [("data", "dataRef"), ("targets", "target")] {
            for e in o["spec"][section][list].as_array().into_iter().flatten() {
                if let Some(n) = e[field].as_str().filter(|n| !n.is_empty()) {
                    out.push(n.trim_start_matches('#').to_string());
                }
            }
        }
        out
    };
    (names("imports"), names("exports"))
}

/// The data flow between sibling installations: an edge from the exporter of a name to each
/// of its importers.
pub fn data_flow(title: &str, siblings: &[Flow], current: &str) -> String {
    let mut exporters: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, s) in siblings.iter().enumerate() {
        for e in &s.exports {
            exporters.entry(e.as_str()).or_default().push(i);
        }
    }
    let mut edges = Vec::new();
    for (to, s) in siblings.iter().enumerate() {
        for imp in &s.imports {
            for &from in exporters.get(imp.as_str()).into_iter().flatten() {
                edges.push(Edge {
                    from,
                    to,
                    label: imp.clone(),
                });
            }
        }
    }
    let nodes: Vec<GraphNode> = siblings
        .iter()
        .filter_map(|s| s.row.as_ref())
        .map(|r| GraphNode {
            label: r.name.clone(),
            phase: r.phase.clone(),
            tone: r.tone,
            href: Some(format!("/ui/installations/{}/{}", r.namespace, r.name)),
            current: r.key == current,
        })
        .collect();
    if nodes.len() != siblings.len() {
        return String::new();
    }
    layered_svg(title, &nodes, &edges)
}

/// The installation tree below `root` (installations only), `current` highlighted.
pub fn tree_svg(root: &InstallationNode, current: &str) -> String {
    fn walk(
        n: &InstallationNode,
        depth: usize,
        out: &mut Vec<(usize, Option<usize>, Row)>,
        parent: Option<usize>,
    ) {
        if out.len() >= MAX_NODES {
            return;
        }
        let me = out.len();
        out.push((depth, parent, n.row.clone()));
        for c in &n.children {
            walk(c, depth + 1, out, Some(me));
        }
    }
    let mut rows = Vec::new();
    walk(root, 0, &mut rows, None);
    let line_h = 30;
    let indent = 28;
    let max_depth = rows.iter().map(|r| r.0).max().unwrap_or(0);
    let width = max_depth * indent + NODE_W + 30;
    let height = rows.len() * line_h + 10;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="graph" role="img" aria-label="installation tree" width="{width}" height="{height}" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg"><title>installation tree</title>"#
    );
    for (i, (depth, parent, _)) in rows.iter().enumerate() {
        if let Some(p) = parent {
            let px = 10 + rows[*p].0 * indent + 10;
            let py = 5 + *p * line_h + 24;
            let y = 5 + i * line_h + 12;
            let x = 10 + depth * indent;
            let _ = write!(svg, r#"<path class="edge" d="M{px},{py} V{y} H{x}"/>"#);
        }
    }
    for (i, (depth, _, r)) in rows.iter().enumerate() {
        let (x, y) = (10 + depth * indent, 5 + i * line_h);
        let _ = write!(
            svg,
            r#"<a href="/ui/installations/{ns}/{n}"><g class="node {tone}{cur}" data-node="{n}"><title>{n}: {p}</title><rect x="{x}" y="{y}" width="{NODE_W}" height="24" rx="5"/><text x="{tx}" y="{ty}">{text}</text></g></a>"#,
            ns = esc(&r.namespace),
            n = esc(&r.name),
            tone = r.tone,
            cur = if r.key == current { " current" } else { "" },
            p = esc(&r.phase),
            tx = x + 7,
            ty = y + 17,
            text = esc(&format!("{} · {}", short(&r.name, 18), r.phase)),
        );
    }
    svg.push_str("</svg>");
    svg
}

/// One bar of the timeline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Span {
    pub label: String,
    /// `current` or `last` job.
    pub job: &'static str,
    pub tone: &'static str,
    pub start: String,
    /// `None`: still running.
    pub end: Option<String>,
}

/// The previous job's span of an object from its phase history (`(time, phase)`, oldest
/// first), before `current_start`: from the first non-final phase after a final one (or the
/// start) to the final phase that ended it.
pub fn last_job(
    history: &[(String, String)],
    current_start: Option<&str>,
) -> Option<(String, String, String)> {
    let before: Vec<&(String, String)> = history
        .iter()
        .filter(|(t, _)| current_start.is_none_or(|c| t.as_str() < c))
        .collect();
    let end = before
        .iter()
        .rposition(|(_, p)| crate::daemon::controllers::jobs::is_final_text(p))?;
    let mut start = end;
    while start > 0 && !crate::daemon::controllers::jobs::is_final_text(&before[start - 1].1) {
        start -= 1;
    }
    if start == end {
        return None;
    }
    Some((
        before[start].0.clone(),
        before[end].0.clone(),
        before[end].1.clone(),
    ))
}

/// The timeline of spans, `now` as the end of the running ones.
pub fn timeline_svg(spans: &[Span], now: Timestamp) -> String {
    let parse = |s: &str| s.parse::<Timestamp>().ok();
    let bars: Vec<(&Span, Timestamp, Timestamp)> = spans
        .iter()
        .filter_map(|s| {
            let start = parse(&s.start)?;
            let end = s.end.as_deref().and_then(parse).unwrap_or(now).max(start);
            Some((s, start, end))
        })
        .collect();
    if bars.is_empty() {
        return String::new();
    }
    let t0 = bars.iter().map(|b| b.1).min().unwrap_or(now);
    let t1 = bars.iter().map(|b| b.2).max().unwrap_or(now);
    let total = (t1.as_millisecond() - t0.as_millisecond()).max(1) as f64;
    let (label_w, plot_w, line_h) = (300usize, 560usize, 24usize);
    let width = label_w + plot_w + 20;
    let height = bars.len() * line_h + 40;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="graph timeline" role="img" aria-label="timeline of the current and last job" width="{width}" height="{height}" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg"><title>timeline of the current and last job</title>"#
    );
    for (i, (s, start, end)) in bars.iter().enumerate() {
        let y = 10 + i * line_h;
        let x = label_w as f64
            + (start.as_millisecond() - t0.as_millisecond()) as f64 / total * plot_w as f64;
        let w = ((end.as_millisecond() - start.as_millisecond()) as f64 / total * plot_w as f64)
            .max(3.0);
        let secs = (end.as_millisecond() - start.as_millisecond()) as f64 / 1000.0;
        let running = if s.end.is_none() { ", running" } else { "" };
        let _ = write!(
            svg,
            r#"<g class="bar {tone} {job}" data-span="{label}|{job}"><title>{label} ({job} job): {start} → {end} ({secs:.1} s{running})</title><text x="0" y="{ty}">{short}</text><rect x="{x:.1}" y="{y}" width="{w:.1}" height="16" rx="3"/></g>"#,
            tone = s.tone,
            job = s.job,
            label = esc(&s.label),
            start = esc(&s.start),
            end = esc(s.end.as_deref().unwrap_or("now")),
            ty = y + 13,
            short = esc(&format!("{} ({})", short(&s.label, 30), s.job)),
        );
    }
    let _ = write!(
        svg,
        r#"<text class="axis" x="{label_w}" y="{y}">{a}</text><text class="axis" x="{end}" y="{y}" text-anchor="end">+{d:.1} s</text>"#,
        y = height - 8,
        a = esc(&t0.to_string()),
        end = label_w + plot_w,
        d = total / 1000.0
    );
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(label: &str) -> GraphNode {
        GraphNode {
            label: label.into(),
            phase: "Succeeded".into(),
            tone: "ok",
            href: None,
            current: false,
        }
    }

    fn edge(from: usize, to: usize) -> Edge {
        Edge {
            from,
            to,
            label: String::new(),
        }
    }

    #[test]
    fn layers_follow_the_longest_path_and_survive_cycles() {
        // a → b → d, a → c → d, c → e; d depends on the longer path.
        let edges = [
            edge(0, 1),
            edge(1, 3),
            edge(0, 2),
            edge(2, 3),
            edge(2, 4),
            edge(1, 2),
        ];
        assert_eq!(layers(5, &edges), [0, 1, 2, 3, 3]);
        let cycle = [edge(0, 1), edge(1, 0)];
        let l = layers(2, &cycle);
        assert!(l.iter().all(|&x| x < 2), "{l:?}");
    }

    #[test]
    fn the_svg_escapes_labels_and_draws_every_node_and_edge() {
        let svg = layered_svg("t<", &[node("a<b"), node("c")], &[edge(0, 1)]);
        assert!(svg.contains("a&lt;b"), "{svg}");
        assert!(!svg.contains("a<b"));
        assert_eq!(svg.matches("<g class=\"node").count(), 2);
        assert_eq!(svg.matches("class=\"edge\"").count(), 1);
        assert!(layered_svg("t", &[], &[]).is_empty());
    }

    #[test]
    fn data_flow_links_exporters_to_importers() {
        let row = |n: &str| {
            super::super::view::row(
                "Installation",
                &serde_json::json!({"metadata": {"namespace": "ns", "name": n}, "status": {"phase": "Succeeded"}}),
            )
        };
        let flows = [
            Flow {
                row: Some(row("db")),
                imports: vec![],
                exports: vec!["db-url".into()],
            },
            Flow {
                row: Some(row("app")),
                imports: vec!["db-url".into(), "cluster".into()],
                exports: vec![],
            },
        ];
        let svg = data_flow("flow", &flows, "Installation/ns/app");
        assert_eq!(svg.matches("class=\"edge\"").count(), 1, "{svg}");
        assert!(svg.contains("db-url"));
        assert!(svg.contains("node ok current"), "{svg}");
        let o = serde_json::json!({"spec": {"imports": {"data": [{"name": "x", "dataRef": "d"}], "targets": [{"name": "t", "target": "#cluster"}]},
            "exports": {"data": [{"name": "y", "dataRef": "out"}]}}});
        assert_eq!(
            flow_of(&o),
            (
                vec!["d".to_string(), "cluster".into()],
                vec!["out".to_string()]
            )
        );
    }

    #[test]
    fn the_last_job_is_found_before_the_current_one() {
        let h = |t: &str, p: &str| (t.to_string(), p.to_string());
        let history = [
            h("2026-01-01T00:00:00Z", "Init"),
            h("2026-01-01T00:00:05Z", "Progressing"),
            h("2026-01-01T00:00:09Z", "Succeeded"),
            h("2026-01-01T00:01:00Z", "Init"),
            h("2026-01-01T00:01:02Z", "Failed"),
            h("2026-01-01T00:02:00Z", "Init"),
        ];
        assert_eq!(
            last_job(&history, Some("2026-01-01T00:02:00Z")),
            Some((
                "2026-01-01T00:01:00Z".into(),
                "2026-01-01T00:01:02Z".into(),
                "Failed".into()
            ))
        );
        assert_eq!(
            last_job(&history[..3], None),
            Some((
                "2026-01-01T00:00:00Z".into(),
                "2026-01-01T00:00:09Z".into(),
                "Succeeded".into()
            ))
        );
        assert_eq!(last_job(&history[..1], None), None);
        let spans = [
            Span {
                label: "Installation a".into(),
                job: "current",
                tone: "busy",
                start: "2026-01-01T00:02:00Z".into(),
                end: None,
            },
            Span {
                label: "Installation a".into(),
                job: "last",
                tone: "bad",
                start: "2026-01-01T00:01:00Z".into(),
                end: Some("2026-01-01T00:01:02Z".into()),
            },
        ];
        let svg = timeline_svg(&spans, "2026-01-01T00:03:00Z".parse().unwrap());
        assert_eq!(svg.matches("<g class=\"bar").count(), 2, "{svg}");
        assert!(svg.contains("running"));
        assert!(svg.contains("+120.0 s"), "{svg}");
    }
}
