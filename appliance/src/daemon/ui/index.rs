//! The overview's list of installations, kept per store revision: filters (namespace, phase,
//! free text) and paging over a flat list, so that a page costs the same at 10 installations
//! and at 10,000. Pure: built from a [`Snapshot`], no I/O.

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;

use landscaper_store::{ChangeType, Kind, object};
use serde_json::Value;

use super::view::{self, ExecutionNode, InstallationNode, Overview, Row, Snapshot};

/// At most this many root causes, running jobs and files with errors are listed on the
/// overview; the totals are always shown.
pub const SUMMARY_LIMIT: usize = 50;
/// Installations per page unless the query asks for another size (at most [`MAX_PAGE_SIZE`]).
pub const PAGE_SIZE: usize = 50;
pub const MAX_PAGE_SIZE: usize = 200;

/// One installation of the list, with its execution and deploy items.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Entry {
    pub row: Row,
    /// The names of its ancestors, root first.
    pub path: Vec<String>,
    pub execution: Option<Row>,
    pub items: Vec<Row>,
    pub children: usize,
    /// The keys this entry shows, space-separated (the page's live updates match changes
    /// against them).
    pub keys: String,
    /// Lower-case text the free-text filter searches.
    #[serde(skip)]
    search: String,
}

/// The overview and the flat list, for one store revision.
#[derive(Debug, Clone, Default)]
pub struct Index {
    pub overview: Overview,
    pub entries: Vec<Entry>,
    /// Installation key → position in `entries`.
    by_key: HashMap<String, usize>,
    /// Execution key → the key of the installation that owns it.
    execution_owner: HashMap<String, String>,
    pub namespaces: Vec<String>,
    /// Installation phases present, for the phase filter.
    pub phases: Vec<String>,
}

/// What the list shows: query parameters `ns`, `phase`, `q`, `page`, `size`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Filter {
    pub namespace: String,
    pub phase: String,
    pub text: String,
}

impl Filter {
    fn matches(&self, e: &Entry, lowered: &str) -> bool {
        (self.namespace.is_empty() || e.row.namespace == self.namespace)
            && (self.phase.is_empty()
                || e.row.phase == self.phase
                || (self.phase == "running" && e.row.running))
            && (lowered.is_empty() || e.search.contains(lowered))
    }
}

/// One page of the filtered list.
#[derive(Debug, Clone, Serialize)]
pub struct Page<'a> {
    pub entries: Vec<&'a Entry>,
    /// How many entries match the filter.
    pub matched: usize,
    pub total: usize,
    /// 1-based.
    pub page: usize,
    pub pages: usize,
    pub size: usize,
    pub first: usize,
    pub last: usize,
}

impl Entry {
    /// Recomputes `keys` and `search` from the rows.
    fn describe(&mut self) {
        let mut keys = self.row.key.clone();
        let mut search = format!(
            "{}/{} {}",
            self.row.namespace,
            self.row.name,
            self.path.join("/")
        );
        for r in self.execution.iter().chain(self.items.iter()) {
            keys.push(' ');
            keys.push_str(&r.key);
            search.push(' ');
            search.push_str(&r.name);
        }
        for r in std::iter::once(&self.row)
            .chain(self.execution.iter())
            .chain(self.items.iter())
        {
            if let Some(e) = &r.last_error {
                search.push(' ');
                search.push_str(e);
            }
        }
        self.keys = keys;
        self.search = search.to_lowercase();
    }
}

fn flatten(nodes: &[InstallationNode], path: &mut Vec<String>, out: &mut Vec<Entry>) {
    for n in nodes {
        let (execution, items) = match &n.execution {
            Some(ExecutionNode { row, items }) => (Some(row.clone()), items.clone()),
            None => (None, Vec::new()),
        };
        let mut entry = Entry {
            row: n.row.clone(),
            path: path.clone(),
            execution,
            items,
            children: n.children.len(),
            keys: String::new(),
            search: String::new(),
        };
        entry.describe();
        out.push(entry);
        path.push(n.row.name.clone());
        flatten(&n.children, path, out);
        path.pop();
    }
}

impl Index {
    pub fn build(snapshot: &Snapshot) -> Index {
        let overview = view::overview(snapshot);
        let mut entries = Vec::with_capacity(snapshot.installations.len());
        flatten(&overview.roots, &mut Vec::new(), &mut entries);
        entries
            .sort_by(|a, b| (&a.row.namespace, &a.row.name).cmp(&(&b.row.namespace, &b.row.name)));
        let by_key = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.row.key.clone(), i))
            .collect();
        let execution_owner = entries
            .iter()
            .filter_map(|e| Some((e.execution.as_ref()?.key.clone(), e.row.key.clone())))
            .collect();
        let namespaces: BTreeSet<&str> = entries.iter().map(|e| e.row.namespace.as_str()).collect();
        let mut index = Index {
            namespaces: namespaces.into_iter().map(str::to_string).collect(),
            phases: Vec::new(),
            overview,
            entries,
            by_key,
            execution_owner,
        };
        index.collect_phases();
        index
    }

    fn collect_phases(&mut self) {
        let phases: BTreeSet<&str> = self.entries.iter().map(|e| e.row.phase.as_str()).collect();
        self.phases = phases.into_iter().map(str::to_string).collect();
    }

    /// The tree node of the entry at `at`, found along the entry's path.
    fn node_mut(&mut self, at: usize) -> Option<&mut InstallationNode> {
        let entry = &self.entries[at];
        let mut nodes = &mut self.overview.roots;
        for name in &entry.path {
            let step = nodes
                .iter_mut()
                .find(|n| &n.row.name == name && n.row.namespace == entry.row.namespace)?;
            nodes = &mut step.children;
        }
        nodes.iter_mut().find(|n| n.row.key == entry.row.key)
    }

    /// Applies changes of existing objects in place (`snapshot` already holds them): their
    /// rows in the list and the tree, then the summary. `false` when a change alters the
    /// structure (an object added or deleted, a new owner or parent, an object outside the
    /// tree): the caller builds the index anew. Keeps a change at 10,000 installations cheap.
    pub fn apply<'a>(
        &mut self,
        snapshot: &Snapshot,
        changes: impl IntoIterator<Item = (Kind, ChangeType, &'a Value)>,
    ) -> bool {
        let mut touched = BTreeSet::new();
        for (kind, change_type, o) in changes {
            if !matches!(
                kind,
                Kind::Installation | Kind::Execution | Kind::DeployItem
            ) {
                continue;
            }
            if change_type != ChangeType::Modified {
                return false;
            }
            let ns = object::namespace(o);
            let (at, fresh) = match kind {
                Kind::Installation => {
                    let Some(&at) = self
                        .by_key
                        .get(&format!("Installation/{ns}/{}", object::name(o)))
                    else {
                        return false;
                    };
                    if view::parent(o) != self.entries[at].path.last().map(String::as_str) {
                        return false;
                    }
                    (at, view::row("Installation", o))
                }
                Kind::Execution => {
                    let Some(inst) = view::owner(o, "Installation") else {
                        return false;
                    };
                    let Some(&at) = self.by_key.get(&format!("Installation/{ns}/{inst}")) else {
                        return false;
                    };
                    (at, view::row("Execution", o))
                }
                _ => {
                    let Some(exec) = view::owner(o, "Execution") else {
                        return false;
                    };
                    let Some(&at) = self
                        .execution_owner
                        .get(&format!("Execution/{ns}/{exec}"))
                        .and_then(|inst| self.by_key.get(inst))
                    else {
                        return false;
                    };
                    (at, view::row("DeployItem", o))
                }
            };
            let entry = &mut self.entries[at];
            let slot = match kind {
                Kind::Installation => Some(&mut entry.row),
                Kind::Execution => entry.execution.as_mut().filter(|e| e.key == fresh.key),
                _ => entry.items.iter_mut().find(|i| i.key == fresh.key),
            };
            let Some(slot) = slot else {
                return false;
            };
            *slot = fresh.clone();
            let Some(node) = self.node_mut(at) else {
                return false;
            };
            let slot = match kind {
                Kind::Installation => Some(&mut node.row),
                Kind::Execution => node
                    .execution
                    .as_mut()
                    .map(|e| &mut e.row)
                    .filter(|e| e.key == fresh.key),
                _ => node
                    .execution
                    .as_mut()
                    .and_then(|e| e.items.iter_mut().find(|i| i.key == fresh.key)),
            };
            let Some(slot) = slot else {
                return false;
            };
            *slot = fresh;
            touched.insert(at);
        }
        for at in touched {
            self.entries[at].describe();
        }
        self.overview.summarise(snapshot);
        self.collect_phases();
        true
    }

    pub fn entry(&self, key: &str) -> Option<&Entry> {
        self.by_key.get(key).map(|&i| &self.entries[i])
    }

    /// The `page`th (1-based, clamped) page of `size` entries matching `filter`.
    pub fn page(&self, filter: &Filter, page: usize, size: usize) -> Page<'_> {
        let size = size.clamp(1, MAX_PAGE_SIZE);
        let lowered = filter.text.trim().to_lowercase();
        let matching: Vec<&Entry> = self
            .entries
            .iter()
            .filter(|e| filter.matches(e, &lowered))
            .collect();
        let matched = matching.len();
        let pages = matched.div_ceil(size).max(1);
        let page = page.clamp(1, pages);
        let start = (page - 1) * size;
        let entries: Vec<&Entry> = matching.into_iter().skip(start).take(size).collect();
        Page {
            first: if entries.is_empty() { 0 } else { start + 1 },
            last: start + entries.len(),
            entries,
            matched,
            total: self.entries.len(),
            page,
            pages,
            size,
        }
    }

    /// The installation node of `key` in the tree.
    pub fn node(&self, key: &str) -> Option<&InstallationNode> {
        fn find<'a>(nodes: &'a [InstallationNode], key: &str) -> Option<&'a InstallationNode> {
            nodes.iter().find_map(|n| {
                (n.row.key == key)
                    .then_some(n)
                    .or_else(|| find(&n.children, key))
            })
        }
        let entry = self.entry(key)?;
        // Walk down the entry's path instead of searching the whole tree.
        let mut nodes = &self.overview.roots;
        for name in &entry.path {
            let step = nodes
                .iter()
                .find(|n| &n.row.name == name && n.row.namespace == entry.row.namespace)?;
            nodes = &step.children;
        }
        nodes
            .iter()
            .find(|n| n.row.key == key)
            .or_else(|| find(&self.overview.roots, key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn inst(ns: &str, name: &str, parent: Option<&str>, phase: &str, error: Option<&str>) -> Value {
        let labels = match parent {
            Some(p) => json!({"landscaper.gardener.cloud/encompassed-by": p}),
            None => json!({}),
        };
        let mut o = json!({"metadata": {"name": name, "namespace": ns, "labels": labels},
            "status": {"phase": phase}});
        if let Some(e) = error {
            o["status"]["lastError"] = json!({"reason": "R", "message": e});
        }
        o
    }

    fn many() -> Snapshot {
        let mut installations = Vec::new();
        for i in 0..120 {
            let ns = if i % 2 == 0 { "even" } else { "odd" };
            let phase = if i % 10 == 0 { "Failed" } else { "Succeeded" };
            let error = (i % 10 == 0).then_some("connection refused");
            installations.push(inst(ns, &format!("inst-{i:03}"), None, phase, error));
        }
        installations.push(inst("even", "child", Some("inst-000"), "Succeeded", None));
        Snapshot {
            installations,
            ..Snapshot::default()
        }
    }

    #[test]
    fn filters_and_pages_the_flat_list() {
        let index = Index::build(&many());
        assert_eq!(index.entries.len(), 121);
        assert_eq!(index.namespaces, ["even", "odd"]);
        assert_eq!(index.phases, ["Failed", "Succeeded"]);
        let all = index.page(&Filter::default(), 1, 50);
        assert_eq!(
            (all.matched, all.pages, all.first, all.last),
            (121, 3, 1, 50)
        );
        let last = index.page(&Filter::default(), 9, 50);
        assert_eq!((last.page, last.first, last.last), (3, 101, 121));
        let failed = Filter {
            phase: "Failed".into(),
            ..Filter::default()
        };
        let p = index.page(&failed, 1, 50);
        assert_eq!(p.matched, 12);
        assert!(p.entries.iter().all(|e| e.row.phase == "Failed"));
        let odd_failed = Filter {
            namespace: "odd".into(),
            ..failed.clone()
        };
        // inst-i fails when i % 10 == 0, which is always even.
        assert_eq!(index.page(&odd_failed, 1, 50).matched, 0);
        let text = Filter {
            text: "  REFUSED ".into(),
            ..Filter::default()
        };
        assert_eq!(index.page(&text, 1, 50).matched, 12);
        let by_parent = Filter {
            text: "inst-000/".into(),
            ..Filter::default()
        };
        // The child is found by its parent's name in its path.
        let found = index.page(&by_parent, 1, 50);
        assert_eq!(found.matched, 0, "path is joined without a trailing slash");
        let child = index.page(
            &Filter {
                text: "even/child inst-000".into(),
                ..Filter::default()
            },
            1,
            50,
        );
        assert_eq!(child.matched, 1);
        assert_eq!(child.entries[0].path, ["inst-000"]);
        assert_eq!(
            index
                .node("Installation/even/child")
                .map(|n| n.row.name.as_str()),
            Some("child")
        );
        assert!(index.entry("Installation/even/nothing").is_none());
    }

    fn tree() -> Snapshot {
        let owned = |kind: &str, name: &str, owner_kind: &str, owner: &str, phase: &str| {
            json!({"kind": kind, "metadata": {"name": name, "namespace": "ns",
                "ownerReferences": [{"kind": owner_kind, "name": owner}]},
                "status": {"phase": phase}})
        };
        Snapshot {
            installations: vec![
                inst("ns", "child", Some("root"), "Succeeded", None),
                inst("ns", "root", None, "Succeeded", None),
            ],
            executions: vec![owned(
                "Execution",
                "child",
                "Installation",
                "child",
                "Succeeded",
            )],
            deploy_items: vec![owned(
                "DeployItem",
                "child-a",
                "Execution",
                "child",
                "Succeeded",
            )],
            ..Snapshot::default()
        }
    }

    #[test]
    fn changes_applied_in_place_equal_a_new_build() {
        let mut snapshot = tree();
        let mut index = Index::build(&snapshot);
        assert!(index.overview.causes.is_empty());
        // The item fails, then its execution and both installations.
        let mut item = snapshot.deploy_items[0].clone();
        item["status"] = json!({"phase": "Failed", "lastError": {"message": "refused"}});
        snapshot.deploy_items[0] = item.clone();
        let mut child = snapshot.installations[0].clone();
        child["status"]["phase"] = json!("Failed");
        snapshot.installations[0] = child.clone();
        snapshot.revision = 2;
        assert!(index.apply(
            &snapshot,
            [
                (Kind::DeployItem, ChangeType::Modified, &item),
                (Kind::Installation, ChangeType::Modified, &child),
            ]
        ));
        let rebuilt = Index::build(&snapshot);
        assert_eq!(index.entries, rebuilt.entries);
        assert_eq!(index.overview, rebuilt.overview);
        assert_eq!(index.phases, rebuilt.phases);
        assert_eq!(
            index.overview.causes.len(),
            1,
            "the item, not the installation"
        );
        assert_eq!(index.overview.causes[0].row.key, "DeployItem/ns/child-a");
        let paths: Vec<&str> = index.overview.causes[0]
            .path
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        assert_eq!(paths, ["root", "child", "child"]);
        assert!(
            index
                .entry("Installation/ns/child")
                .unwrap()
                .search
                .contains("refused")
        );
        // Structure changes ask for a new build.
        let moved = inst("ns", "child", None, "Failed", None);
        assert!(!index.apply(
            &snapshot,
            [(Kind::Installation, ChangeType::Modified, &moved)]
        ));
        let added = inst("ns", "new", None, "Init", None);
        assert!(!index.apply(&snapshot, [(Kind::Installation, ChangeType::Added, &added)]));
    }
}
