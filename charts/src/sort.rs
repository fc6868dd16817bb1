//! Splitting rendered templates into manifests and hooks and sorting them in Helm's install
//! order (`pkg/releaseutil/{manifest,manifest_sorter,kind_sorter}.go`).

use std::collections::BTreeMap;

use landscaper_templating::gotemplate::Value;
use landscaper_templating::gotemplate::funcs::yaml;

use crate::ChartError;

/// `releaseutil.InstallOrder`.
pub const INSTALL_ORDER: &[&str] = &[
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
];

pub const HOOK_ANNOTATION: &str = "helm.sh/hook";
const HOOK_EVENTS: &[&str] = &[
    "pre-install",
    "post-install",
    "pre-delete",
    "post-delete",
    "pre-upgrade",
    "post-upgrade",
    "pre-rollback",
    "post-rollback",
    "test",
    "test-success",
];

/// One manifest (a YAML document of a rendered template).
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// The template path (`CHART/templates/x.yaml`).
    pub path: String,
    pub content: String,
    pub kind: String,
    pub name: String,
    /// For hooks: the events (`pre-install`, `test`...); empty for plain manifests.
    pub events: Vec<String>,
    /// `helm.sh/hook-weight`.
    pub weight: i64,
}

impl Manifest {
    pub fn is_test_hook(&self) -> bool {
        self.events
            .iter()
            .any(|e| e == "test" || e == "test-success")
    }
}

/// Go's `\s` (ASCII whitespace without `\v`).
fn is_go_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0c | b'\r' | b' ')
}

/// The pieces of `text` between the matches of Helm's separator `(?:^|\s*\n)---\s*`, found
/// the way the regular expression's leftmost search finds them: a `---` at the very start or
/// right after a newline, the match starting where the whitespace before that newline starts
/// (not before the previous match's end) and taking the whitespace after it. Hand-written:
/// compiling the expression cost a short `render chart` more than splitting every document.
fn split_on_separators(text: &str) -> Vec<&str> {
    let b = text.as_bytes();
    let mut pieces = Vec::new();
    let (mut piece_start, mut search) = (0, 0);
    let mut from = 0;
    while let Some(found) = text[from..].find("---") {
        let dashes = from + found;
        let at_start = dashes == 0;
        if !at_start && (dashes - 1 < search || b[dashes - 1] != b'\n') {
            from = dashes + 1;
            continue;
        }
        let mut start = if at_start { 0 } else { dashes - 1 };
        while start > search && is_go_space(b[start - 1]) {
            start -= 1;
        }
        let mut end = dashes + 3;
        while end < b.len() && is_go_space(b[end]) {
            end += 1;
        }
        pieces.push(&text[piece_start..start]);
        piece_start = end;
        search = end;
        from = end;
    }
    pieces.push(&text[piece_start..]);
    pieces
}

/// `SplitManifests`: the documents of a stream, trimmed, empty ones dropped, in order.
pub fn split_manifests(text: &str) -> Vec<String> {
    split_on_separators(text.trim())
        .into_iter()
        .filter(|d| !d.is_empty())
        .map(|d| d.trim().to_string())
        .collect()
}

struct Head {
    kind: String,
    name: String,
    annotations: Option<BTreeMap<String, String>>,
}

fn string_field(m: &BTreeMap<String, Value>, key: &str, path: &str) -> Result<String, String> {
    match m.get(key) {
        None | Some(Value::Nil) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.to_string()),
        Some(other) => Err(format!(
            "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go struct field {path} of type string",
            landscaper_templating::gotemplate::funcs::json::kind_word(other)
        )),
    }
}

/// Reads what Helm's `SimpleHead` reads of a document.
fn parse_head(doc: &str) -> Result<Head, String> {
    let v = yaml::unmarshal_keys(doc, &["apiVersion", "kind", "metadata"])?;
    let mut head = Head {
        kind: String::new(),
        name: String::new(),
        annotations: None,
    };
    let m = match &v {
        Value::Nil => return Ok(head),
        Value::Map(m) => m.borrow(),
        other => {
            return Err(format!(
                "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type releaseutil.SimpleHead",
                landscaper_templating::gotemplate::funcs::json::kind_word(other)
            ));
        }
    };
    string_field(&m, "apiVersion", "SimpleHead.apiVersion")?;
    head.kind = string_field(&m, "kind", "SimpleHead.kind")?;
    match m.get("metadata") {
        None | Some(Value::Nil) => {}
        Some(Value::Map(md)) => {
            let md = md.borrow();
            head.name = string_field(&md, "name", "SimpleHead.metadata.name")?;
            match md.get("annotations") {
                None | Some(Value::Nil) => {}
                Some(Value::Map(a)) => {
                    let mut out = BTreeMap::new();
                    for (k, v) in a.borrow().iter() {
                        let mut one = BTreeMap::new();
                        one.insert(k.clone(), v.clone());
                        out.insert(
                            k.clone(),
                            string_field(&one, k, "SimpleHead.metadata.annotations")?,
                        );
                    }
                    head.annotations = Some(out);
                }
                Some(other) => {
                    return Err(format!(
                        "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go struct field .metadata.annotations of type map[string]string",
                        landscaper_templating::gotemplate::funcs::json::kind_word(other)
                    ));
                }
            }
        }
        Some(other) => {
            return Err(format!(
                "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go struct field SimpleHead.metadata of type struct {{ Name string \"json:\\\"name\\\"\"; Annotations map[string]string \"json:\\\"annotations\\\"\" }}",
                landscaper_templating::gotemplate::funcs::json::kind_word(other)
            ));
        }
    }
    Ok(head)
}

/// `SortManifests`: (hooks, manifests), each sorted by kind in install order (stable).
/// Unknown hook events drop the document, as Helm does.
pub fn sort_manifests(
    files: &BTreeMap<String, String>,
) -> Result<(Vec<Manifest>, Vec<Manifest>), ChartError> {
    let mut classified = Vec::new();
    for (path, content) in files {
        classified.push(classify_file(path, content)?);
    }
    Ok(sort_classified(classified))
}

/// The documents of one rendered template as [`sort_manifests`] sees them, before sorting:
/// hooks and plain manifests in file order (`Manifest::events` empty for plain ones; a hook
/// always has events). The error names the template of the first bad document.
pub fn classify_file(path: &str, content: &str) -> Result<Vec<Manifest>, ChartError> {
    let base = path.rsplit('/').next().unwrap_or(path);
    if base.starts_with('_') || content.trim().is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for doc in split_manifests(content) {
        let head = parse_head(&doc)
            .map_err(|e| ChartError::Render(format!("YAML parse error on {path}: {e}")))?;
        let hook_types = head
            .annotations
            .as_ref()
            .filter(|a| !a.is_empty())
            .and_then(|a| a.get(HOOK_ANNOTATION).cloned());
        let Some(hook_types) = hook_types else {
            out.push(Manifest {
                path: path.to_string(),
                content: doc,
                kind: head.kind,
                name: head.name,
                events: Vec::new(),
                weight: 0,
            });
            continue;
        };
        let mut events = Vec::new();
        let mut unknown = false;
        for t in hook_types.split(',') {
            let t = t.trim().to_lowercase();
            if !HOOK_EVENTS.contains(&t.as_str()) {
                unknown = true;
                break;
            }
            events.push(if t == "test-success" {
                "test".into()
            } else {
                t
            });
        }
        // (`split` yields at least one word, so a kept hook has events.)
        if unknown {
            continue;
        }
        let weight = head
            .annotations
            .as_ref()
            .and_then(|a| a.get("helm.sh/hook-weight"))
            .and_then(|w| w.parse::<i64>().ok())
            .unwrap_or(0);
        out.push(Manifest {
            path: path.to_string(),
            content: doc,
            kind: head.kind,
            name: head.name,
            events,
            weight,
        });
    }
    Ok(out)
}

/// (hooks, manifests) in install order from the files' [`classify_file`] results, in path order.
pub fn sort_classified(files: Vec<Vec<Manifest>>) -> (Vec<Manifest>, Vec<Manifest>) {
    let (mut hooks, mut generic): (Vec<Manifest>, Vec<Manifest>) = files
        .into_iter()
        .flatten()
        .partition(|m| !m.events.is_empty());
    sort_by_kind(&mut hooks);
    sort_by_kind(&mut generic);
    (hooks, generic)
}

/// `lessByKind` with a stable sort.
pub fn sort_by_kind(items: &mut [Manifest]) {
    let rank = |k: &str| INSTALL_ORDER.iter().position(|x| *x == k);
    items.sort_by(|a, b| match (rank(&a.kind), rank(&b.kind)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.kind.cmp(&b.kind),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_split_on_separators() {
        assert_eq!(
            split_manifests("\n---\na: 1\n---   \nb: 2\n\n---\n"),
            vec!["a: 1", "b: 2"]
        );
        assert_eq!(
            split_manifests("a: 1\n--- # c\nb: 2"),
            vec!["a: 1", "# c\nb: 2"]
        );
        // Whitespace around a separator beyond Go's `\s` ends up trimmed all the same.
        assert_eq!(
            split_manifests("a: 1\u{a0}\n---\u{a0}b: 2\n---\n\u{a0}c: 3"),
            vec!["a: 1", "b: 2", "c: 3"]
        );
    }

    proptest::proptest! {
        /// The hand-written split finds what Helm's regular expression finds.
        #[test]
        fn separators_split_as_helms_expression(
            text in "(---|--|-|\n|\r|\t| |\u{0b}|\u{0c}|a|#|\u{a0})*"
        ) {
            let helm = regex::Regex::new(r"(?:^|[\t\n\f\r ]*\n)---[\t\n\f\r ]*").unwrap();
            let expected: Vec<&str> = helm.split(&text).collect();
            proptest::prop_assert_eq!(split_on_separators(&text), expected);
        }
    }

    #[test]
    fn manifests_sort_in_install_order_and_hooks_are_separated() {
        let mut files = BTreeMap::new();
        files.insert(
            "c/templates/a.yaml".to_string(),
            "kind: Deployment\nmetadata:\n  name: d\n---\nkind: Zeta\n---\nkind: Alpha\n---\nkind: Service\n".to_string(),
        );
        files.insert(
            "c/templates/b.yaml".to_string(),
            "kind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook: pre-install,post-upgrade\n    helm.sh/hook-weight: \"-5\"\n---\nkind: Pod\nmetadata:\n  annotations:\n    helm.sh/hook: test\n---\nkind: Pod\nmetadata:\n  annotations:\n    helm.sh/hook: unknown-event\n---\nkind: Namespace\n".to_string(),
        );
        files.insert("c/templates/_h.tpl".to_string(), "kind: Secret".to_string());
        files.insert("c/templates/empty.yaml".to_string(), "  \n".to_string());
        let (hooks, manifests) = sort_manifests(&files).unwrap();
        let kinds: Vec<&str> = manifests.iter().map(|m| m.kind.as_str()).collect();
        assert_eq!(
            kinds,
            ["Namespace", "Service", "Deployment", "Alpha", "Zeta"]
        );
        let hook_kinds: Vec<&str> = hooks.iter().map(|m| m.kind.as_str()).collect();
        assert_eq!(hook_kinds, ["Pod", "Job"]);
        assert!(hooks[0].is_test_hook());
        assert_eq!(hooks[1].weight, -5);
        assert_eq!(hooks[1].events, ["pre-install", "post-upgrade"]);
    }

    #[test]
    fn bad_yaml_names_the_template() {
        let mut files = BTreeMap::new();
        files.insert("c/templates/a.yaml".to_string(), "a: [\n".to_string());
        let e = sort_manifests(&files).unwrap_err();
        assert!(
            e.to_string()
                .contains("YAML parse error on c/templates/a.yaml"),
            "{e}"
        );
        files.insert(
            "c/templates/a.yaml".to_string(),
            "kind: x\nmetadata:\n  annotations:\n    a: 1\n".to_string(),
        );
        assert!(sort_manifests(&files).is_err());
    }
}
