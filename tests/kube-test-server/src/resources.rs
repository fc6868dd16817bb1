//! The type registry: built-in resources and those that CustomResourceDefinitions add.

use serde_json::Value;

/// An extra `kubectl get` column from a CRD's `additionalPrinterColumns`.
#[derive(Debug, Clone, PartialEq)]
pub struct PrinterColumn {
    pub name: String,
    pub type_: String,
    pub json_path: String,
    pub description: String,
    pub priority: i64,
}

/// One served resource of one group/version.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceType {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub singular: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub status_subresource: bool,
    /// Whether writes track `metadata.generation` (objects with a spec).
    pub has_generation: bool,
    /// The CRD that defines it (custom resources only).
    pub crd: Option<String>,
    pub printer_columns: Vec<PrinterColumn>,
}

impl ResourceType {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    pub fn is_custom(&self) -> bool {
        self.crd.is_some()
    }

    pub fn verbs(&self) -> Vec<&'static str> {
        let mut verbs = vec!["create", "delete"];
        if self.namespaced {
            verbs.push("deletecollection");
        }
        verbs.extend(["get", "list", "patch", "update", "watch"]);
        verbs
    }

    /// Whether the URL path `/api/v1/...` or `/apis/<group>/<version>/...` prefixes it.
    pub fn base_path(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        }
    }
}

struct Builtin {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    short: &'static [&'static str],
    status: bool,
    generation: bool,
}

#[allow(clippy::too_many_arguments)] // a table row, read positionally
const fn b(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    short: &'static [&'static str],
    status: bool,
    generation: bool,
) -> Builtin {
    Builtin {
        group,
        version,
        kind,
        plural,
        namespaced,
        short,
        status,
        generation,
    }
}

const BUILTINS: &[Builtin] = &[
    b(
        "",
        "v1",
        "Namespace",
        "namespaces",
        false,
        &["ns"],
        true,
        false,
    ),
    b(
        "",
        "v1",
        "ConfigMap",
        "configmaps",
        true,
        &["cm"],
        false,
        false,
    ),
    b("", "v1", "Secret", "secrets", true, &[], false, false),
    b("", "v1", "Service", "services", true, &["svc"], true, false),
    b(
        "",
        "v1",
        "ServiceAccount",
        "serviceaccounts",
        true,
        &["sa"],
        false,
        false,
    ),
    b("", "v1", "Pod", "pods", true, &["po"], true, true),
    b("", "v1", "Event", "events", true, &["ev"], false, false),
    b(
        "",
        "v1",
        "Endpoints",
        "endpoints",
        true,
        &["ep"],
        false,
        false,
    ),
    b(
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        true,
        &["pvc"],
        true,
        false,
    ),
    b(
        "",
        "v1",
        "PersistentVolume",
        "persistentvolumes",
        false,
        &["pv"],
        true,
        false,
    ),
    b("", "v1", "Node", "nodes", false, &["no"], true, false),
    b(
        "apps",
        "v1",
        "Deployment",
        "deployments",
        true,
        &["deploy"],
        true,
        true,
    ),
    b(
        "apps",
        "v1",
        "StatefulSet",
        "statefulsets",
        true,
        &["sts"],
        true,
        true,
    ),
    b(
        "apps",
        "v1",
        "DaemonSet",
        "daemonsets",
        true,
        &["ds"],
        true,
        true,
    ),
    b(
        "apps",
        "v1",
        "ReplicaSet",
        "replicasets",
        true,
        &["rs"],
        true,
        true,
    ),
    b("batch", "v1", "Job", "jobs", true, &[], true, true),
    b(
        "batch",
        "v1",
        "CronJob",
        "cronjobs",
        true,
        &["cj"],
        true,
        true,
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        "roles",
        true,
        &[],
        false,
        false,
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
        true,
        &[],
        false,
        false,
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        false,
        &[],
        false,
        false,
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
        &[],
        false,
        false,
    ),
    b(
        "networking.k8s.io",
        "v1",
        "Ingress",
        "ingresses",
        true,
        &["ing"],
        true,
        true,
    ),
    b(
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        "networkpolicies",
        true,
        &["netpol"],
        false,
        true,
    ),
    b(
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        true,
        &["pdb"],
        true,
        true,
    ),
    b(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
        &["crd", "crds"],
        true,
        true,
    ),
];

fn builtin_types() -> Vec<ResourceType> {
    BUILTINS
        .iter()
        .map(|b| ResourceType {
            group: b.group.to_string(),
            version: b.version.to_string(),
            kind: b.kind.to_string(),
            plural: b.plural.to_string(),
            singular: b.kind.to_ascii_lowercase(),
            namespaced: b.namespaced,
            short_names: b.short.iter().map(|s| s.to_string()).collect(),
            categories: if matches!(
                b.plural,
                "pods"
                    | "services"
                    | "deployments"
                    | "statefulsets"
                    | "daemonsets"
                    | "replicasets"
                    | "jobs"
                    | "cronjobs"
            ) {
                vec!["all".to_string()]
            } else {
                Vec::new()
            },
            status_subresource: b.status,
            has_generation: b.generation,
            crd: None,
            printer_columns: Vec::new(),
        })
        .collect()
}

/// A group with its served versions, in discovery order.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub name: String,
    pub versions: Vec<String>,
}

/// All served resources; CRDs add and remove entries at runtime.
#[derive(Debug, Clone)]
pub struct Registry {
    types: Vec<ResourceType>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            types: builtin_types(),
        }
    }
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

impl Registry {
    pub fn all(&self) -> &[ResourceType] {
        &self.types
    }

    /// The resource named `plural` in `group`/`version`.
    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceType> {
        self.types
            .iter()
            .find(|t| t.group == group && t.version == version && t.plural == plural)
    }

    /// By `apiVersion` and a kind, plural, singular or short name (case-insensitive).
    pub fn lookup(&self, api_version: &str, name: &str) -> Option<&ResourceType> {
        let (group, version) = split_api_version(api_version);
        self.types.iter().find(|t| {
            t.group == group
                && t.version == version
                && (t.kind.eq_ignore_ascii_case(name)
                    || t.plural.eq_ignore_ascii_case(name)
                    || t.singular.eq_ignore_ascii_case(name)
                    || t.short_names.iter().any(|s| s.eq_ignore_ascii_case(name)))
        })
    }

    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<&ResourceType> {
        let (group, version) = split_api_version(api_version);
        self.types
            .iter()
            .find(|t| t.group == group && t.version == version && t.kind == kind)
    }

    /// Every version of a resource (a CRD may serve several over the same storage).
    pub fn versions_of(&self, group: &str, plural: &str) -> Vec<&ResourceType> {
        self.types
            .iter()
            .filter(|t| t.group == group && t.plural == plural)
            .collect()
    }

    pub fn in_group_version(&self, group: &str, version: &str) -> Vec<&ResourceType> {
        self.types
            .iter()
            .filter(|t| t.group == group && t.version == version)
            .collect()
    }

    /// Named groups (not the core group) in registration order.
    pub fn groups(&self) -> Vec<Group> {
        let mut groups: Vec<Group> = Vec::new();
        for t in self.types.iter().filter(|t| !t.group.is_empty()) {
            match groups.iter_mut().find(|g| g.name == t.group) {
                Some(g) => {
                    if !g.versions.contains(&t.version) {
                        g.versions.push(t.version.clone());
                    }
                }
                None => groups.push(Group {
                    name: t.group.clone(),
                    versions: vec![t.version.clone()],
                }),
            }
        }
        groups
    }

    /// Validates the names part of a CRD and (re)registers its served versions.
    pub fn apply_crd(&mut self, crd: &Value) -> Result<(), String> {
        let name = str_at(crd, "/metadata/name");
        let group = str_at(crd, "/spec/group");
        let plural = str_at(crd, "/spec/names/plural");
        let kind = str_at(crd, "/spec/names/kind");
        let scope = str_at(crd, "/spec/scope");
        if group.is_empty() || plural.is_empty() || kind.is_empty() {
            return Err("spec.group, spec.names.plural and spec.names.kind are required".into());
        }
        if name != format!("{plural}.{group}") {
            return Err(format!(
                "metadata.name: Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"
            ));
        }
        if self
            .types
            .iter()
            .any(|t| t.crd.is_none() && t.group == group && t.plural == plural)
        {
            return Err(format!("{plural}.{group} is a built-in resource"));
        }
        let singular = match str_at(crd, "/spec/names/singular") {
            "" => kind.to_ascii_lowercase(),
            s => s.to_string(),
        };
        let strings = |pointer: &str| -> Vec<String> {
            crd.pointer(pointer)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        let short_names = strings("/spec/names/shortNames");
        let categories = strings("/spec/names/categories");
        let versions = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut added = Vec::new();
        for v in &versions {
            if v.get("served").and_then(Value::as_bool) == Some(false) {
                continue;
            }
            let version = str_at(v, "/name");
            if version.is_empty() {
                continue;
            }
            let printer_columns = v
                .get("additionalPrinterColumns")
                .and_then(Value::as_array)
                .map(|cols| {
                    cols.iter()
                        .map(|c| PrinterColumn {
                            name: str_at(c, "/name").to_string(),
                            type_: str_at(c, "/type").to_string(),
                            json_path: str_at(c, "/jsonPath").to_string(),
                            description: str_at(c, "/description").to_string(),
                            priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                        })
                        .collect()
                })
                .unwrap_or_default();
            added.push(ResourceType {
                group: group.to_string(),
                version: version.to_string(),
                kind: kind.to_string(),
                plural: plural.to_string(),
                singular: singular.clone(),
                namespaced: scope != "Cluster",
                short_names: short_names.clone(),
                categories: categories.clone(),
                status_subresource: v.pointer("/subresources/status").is_some(),
                has_generation: true,
                crd: Some(name.to_string()),
                printer_columns,
            });
        }
        self.remove_crd(name);
        self.types.extend(added);
        Ok(())
    }

    pub fn remove_crd(&mut self, name: &str) {
        self.types.retain(|t| t.crd.as_deref() != Some(name));
    }
}

/// `apps/v1` → (`apps`, `v1`); `v1` → (``, `v1`).
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn registers_and_removes_crds() {
        let mut r = Registry::default();
        assert!(r.lookup("apps/v1", "deploy").is_some());
        assert!(r.lookup("v1", "ConfigMap").is_some());
        let crd = json!({
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wg"]},
                "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}},
                             {"name": "v2", "served": false}]}
        });
        r.apply_crd(&crd).unwrap();
        let t = r.lookup("example.com/v1", "wg").unwrap();
        assert!(t.status_subresource && t.namespaced);
        assert!(r.find("example.com", "v2", "widgets").is_none());
        assert!(r.groups().iter().any(|g| g.name == "example.com"));
        r.remove_crd("widgets.example.com");
        assert!(r.lookup("example.com/v1", "widgets").is_none());
        assert!(
            r.apply_crd(&json!({"metadata": {"name": "x"}, "spec": {}}))
                .is_err()
        );
    }
}
