//! The resources the API serves, what discovery says about them, and how URLs name them.

use landscaper_store::Kind;
use landscaper_store::model::kind::{APPLIANCE_GROUP, LANDSCAPER_GROUP, V1ALPHA1};

/// A served resource: a stored kind, the namespaces derived from the stored objects, or the
/// core/v1 Events derived from the store's history (see [`super::events`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    Kind(Kind),
    Namespaces,
    Events,
}

/// A served API group and its single version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupVersion {
    /// Empty for the core group.
    pub group: &'static str,
    pub version: &'static str,
}

impl GroupVersion {
    pub const CORE: GroupVersion = GroupVersion {
        group: "",
        version: "v1",
    };

    /// `group/version`, or `v1` for the core group.
    pub fn api_version(self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The resources served in this group version, in discovery order.
    pub fn resources(self) -> Vec<Resource> {
        let mut resources: Vec<Resource> = Kind::ALL
            .into_iter()
            .filter(|k| k.group() == self.group && k.version() == self.version)
            .map(Resource::Kind)
            .collect();
        if self == GroupVersion::CORE {
            resources.push(Resource::Namespaces);
            resources.push(Resource::Events);
        }
        resources.sort_by_key(|r| r.plural());
        resources
    }
}

/// The named API groups (`/apis`), in discovery order.
pub const GROUPS: [GroupVersion; 2] = [
    GroupVersion {
        group: LANDSCAPER_GROUP,
        version: V1ALPHA1,
    },
    GroupVersion {
        group: APPLIANCE_GROUP,
        version: V1ALPHA1,
    },
];

/// The served group version named by URL segments, if any.
pub fn group_version(group: &str, version: &str) -> Option<GroupVersion> {
    if group.is_empty() {
        return (version == "v1").then_some(GroupVersion::CORE);
    }
    GROUPS
        .into_iter()
        .find(|gv| gv.group == group && gv.version == version)
}

impl Resource {
    pub fn plural(self) -> &'static str {
        match self {
            Resource::Kind(k) => k.plural(),
            Resource::Namespaces => "namespaces",
            Resource::Events => "events",
        }
    }

    pub fn singular(self) -> &'static str {
        match self {
            Resource::Kind(k) => k.singular(),
            Resource::Namespaces => "namespace",
            Resource::Events => "event",
        }
    }

    pub fn kind_name(self) -> &'static str {
        match self {
            Resource::Kind(k) => k.as_str(),
            Resource::Namespaces => "Namespace",
            Resource::Events => "Event",
        }
    }

    pub fn group(self) -> &'static str {
        match self {
            Resource::Kind(k) => k.group(),
            Resource::Namespaces | Resource::Events => "",
        }
    }

    pub fn group_version(self) -> GroupVersion {
        match self {
            Resource::Kind(k) => {
                group_version(k.group(), k.version()).unwrap_or(GroupVersion::CORE)
            }
            Resource::Namespaces | Resource::Events => GroupVersion::CORE,
        }
    }

    pub fn namespaced(self) -> bool {
        match self {
            Resource::Kind(k) => k.namespaced(),
            Resource::Namespaces => false,
            Resource::Events => true,
        }
    }

    pub fn short_names(self) -> &'static [&'static str] {
        match self {
            Resource::Kind(k) => k.short_names(),
            Resource::Namespaces => &["ns"],
            Resource::Events => &["ev"],
        }
    }

    /// Categories for `kubectl get CATEGORY`: `kubectl get landscaper -A` lists every
    /// Landscaper object and ingested file. (Landscaper's CRDs declare none; this is an
    /// appliance addition.)
    pub fn categories(self) -> &'static [&'static str] {
        match self {
            Resource::Kind(k) if k.group() != "" => &["landscaper"],
            _ => &[],
        }
    }

    pub fn verbs(self) -> &'static [&'static str] {
        match self {
            Resource::Kind(Kind::ManifestFile | Kind::TransportArchive) => {
                &["delete", "get", "list", "patch", "watch"]
            }
            Resource::Kind(_) => &[
                "create", "delete", "get", "list", "patch", "update", "watch",
            ],
            Resource::Namespaces | Resource::Events => &["get", "list"],
        }
    }

    /// Whether `.../NAME/status` is served (the CRDs with a status subresource).
    pub fn has_status_subresource(self) -> bool {
        matches!(
            self,
            Resource::Kind(Kind::Installation | Kind::Execution | Kind::DeployItem)
        )
    }
}

/// What a resource URL (below `/api/v1` or `/apis/GROUP/VERSION`) addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// All objects of a resource, in one namespace or (for `None`) all.
    Collection {
        resource: Resource,
        namespace: Option<String>,
    },
    /// One object; `namespace` is `None` for cluster-scoped resources. `status` marks the
    /// `status` subresource, which reads the whole object as on kube-apiserver.
    Object {
        resource: Resource,
        namespace: Option<String>,
        name: String,
        status: bool,
    },
}

impl Target {
    pub fn resource(&self) -> Resource {
        match self {
            Target::Collection { resource, .. } | Target::Object { resource, .. } => *resource,
        }
    }
}

/// Parses the path below a group version into a [`Target`]; `None` for paths that name no
/// served resource (404).
pub fn parse_target(gv: GroupVersion, rest: &str) -> Option<Target> {
    let segments: Vec<&str> = rest.trim_end_matches('/').split('/').collect();
    if segments.iter().any(|s| s.is_empty()) {
        return None;
    }
    let resource = |plural: &str| -> Option<Resource> {
        gv.resources().into_iter().find(|r| r.plural() == plural)
    };
    let status = |sub: &str, r: Resource| -> Option<bool> {
        (sub == "status" && r.has_status_subresource()).then_some(true)
    };
    match segments.as_slice() {
        [plural] => Some(Target::Collection {
            resource: resource(plural)?,
            namespace: None,
        }),
        ["namespaces", ns, plural, rest @ ..] => {
            let r = resource(plural)?;
            if !r.namespaced() {
                return None;
            }
            let namespace = Some((*ns).to_string());
            match rest {
                [] => Some(Target::Collection {
                    resource: r,
                    namespace,
                }),
                [name] => Some(Target::Object {
                    resource: r,
                    namespace,
                    name: (*name).to_string(),
                    status: false,
                }),
                [name, sub] => Some(Target::Object {
                    resource: r,
                    namespace,
                    name: (*name).to_string(),
                    status: status(sub, r)?,
                }),
                _ => None,
            }
        }
        [plural, name] => {
            let r = resource(plural)?;
            (!r.namespaced()).then(|| Target::Object {
                resource: r,
                namespace: None,
                name: (*name).to_string(),
                status: false,
            })
        }
        [plural, name, sub] => {
            let r = resource(plural)?;
            (!r.namespaced()).then_some(())?;
            Some(Target::Object {
                resource: r,
                namespace: None,
                name: (*name).to_string(),
                status: status(sub, r)?,
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LS: GroupVersion = GROUPS[0];

    #[test]
    fn parses_collections_and_objects() {
        assert_eq!(
            parse_target(LS, "installations"),
            Some(Target::Collection {
                resource: Resource::Kind(Kind::Installation),
                namespace: None
            })
        );
        assert_eq!(
            parse_target(LS, "namespaces/ns/installations/a"),
            Some(Target::Object {
                resource: Resource::Kind(Kind::Installation),
                namespace: Some("ns".into()),
                name: "a".into(),
                status: false
            })
        );
        assert_eq!(
            parse_target(LS, "namespaces/ns/installations/a/status"),
            Some(Target::Object {
                resource: Resource::Kind(Kind::Installation),
                namespace: Some("ns".into()),
                name: "a".into(),
                status: true
            })
        );
        // Namespaced resources have no cluster-level object URL; short names are no URLs.
        assert_eq!(parse_target(LS, "installations/a"), None);
        assert_eq!(parse_target(LS, "inst"), None);
        assert_eq!(parse_target(LS, "namespaces/ns/targets/a/status"), None);
        assert_eq!(parse_target(LS, "namespaces/ns/configmaps"), None);
        let files = GROUPS[1];
        assert_eq!(
            parse_target(files, "manifestfiles/a.yaml"),
            Some(Target::Object {
                resource: Resource::Kind(Kind::ManifestFile),
                namespace: None,
                name: "a.yaml".into(),
                status: false
            })
        );
        assert_eq!(parse_target(files, "namespaces/x/manifestfiles"), None);
    }

    #[test]
    fn parses_core_namespaces() {
        let core = GroupVersion::CORE;
        assert_eq!(
            parse_target(core, "namespaces"),
            Some(Target::Collection {
                resource: Resource::Namespaces,
                namespace: None
            })
        );
        assert_eq!(
            parse_target(core, "namespaces/default"),
            Some(Target::Object {
                resource: Resource::Namespaces,
                namespace: None,
                name: "default".into(),
                status: false
            })
        );
        assert_eq!(
            parse_target(core, "namespaces/default/secrets/s"),
            Some(Target::Object {
                resource: Resource::Kind(Kind::Secret),
                namespace: Some("default".into()),
                name: "s".into(),
                status: false
            })
        );
        assert_eq!(
            parse_target(core, "events"),
            Some(Target::Collection {
                resource: Resource::Events,
                namespace: None
            })
        );
        assert_eq!(
            parse_target(core, "namespaces/e2e/events/a.0000000000000007"),
            Some(Target::Object {
                resource: Resource::Events,
                namespace: Some("e2e".into()),
                name: "a.0000000000000007".into(),
                status: false
            })
        );
        assert_eq!(parse_target(core, "events/a.0000000000000007"), None);
        assert_eq!(parse_target(core, "namespaces/e2e/events/a/status"), None);
        assert_eq!(parse_target(core, "pods"), None);
        assert_eq!(parse_target(core, "namespaces/default/pods"), None);
    }
}
