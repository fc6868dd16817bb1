//! The kinds of object the appliance stores, with their API coordinates.

use std::fmt;

use serde::{Deserialize, Serialize};

/// API group of Landscaper's own kinds.
pub const LANDSCAPER_GROUP: &str = "landscaper.gardener.cloud";
/// API group of the appliance's own kinds (ingested files). Owned by this project, never sent to
/// a full Landscaper.
pub const APPLIANCE_GROUP: &str = "appliance.landscaper-appliance.io";
/// Version served for both groups.
pub const V1ALPHA1: &str = "v1alpha1";

/// Every kind the store holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Kind {
    Installation,
    Execution,
    DeployItem,
    DataObject,
    Target,
    Context,
    ConfigMap,
    Secret,
    ManifestFile,
    TransportArchive,
}

impl Kind {
    /// All kinds, in a stable order (used by discovery and listings).
    pub const ALL: [Kind; 10] = [
        Kind::Installation,
        Kind::Execution,
        Kind::DeployItem,
        Kind::DataObject,
        Kind::Target,
        Kind::Context,
        Kind::ConfigMap,
        Kind::Secret,
        Kind::ManifestFile,
        Kind::TransportArchive,
    ];

    /// The `kind` field value.
    pub const fn as_str(self) -> &'static str {
        match self {
            Kind::Installation => "Installation",
            Kind::Execution => "Execution",
            Kind::DeployItem => "DeployItem",
            Kind::DataObject => "DataObject",
            Kind::Target => "Target",
            Kind::Context => "Context",
            Kind::ConfigMap => "ConfigMap",
            Kind::Secret => "Secret",
            Kind::ManifestFile => "ManifestFile",
            Kind::TransportArchive => "TransportArchive",
        }
    }

    /// API group; the empty string is the core group.
    pub const fn group(self) -> &'static str {
        match self {
            Kind::ConfigMap | Kind::Secret => "",
            Kind::ManifestFile | Kind::TransportArchive => APPLIANCE_GROUP,
            _ => LANDSCAPER_GROUP,
        }
    }

    pub const fn version(self) -> &'static str {
        match self {
            Kind::ConfigMap | Kind::Secret => "v1",
            _ => V1ALPHA1,
        }
    }

    /// The `apiVersion` field value (`group/version`, or `v1` for the core group).
    pub const fn api_version(self) -> &'static str {
        match self {
            Kind::ConfigMap | Kind::Secret => "v1",
            Kind::ManifestFile | Kind::TransportArchive => {
                "appliance.landscaper-appliance.io/v1alpha1"
            }
            _ => "landscaper.gardener.cloud/v1alpha1",
        }
    }

    /// Lower-case plural resource name used in URLs.
    pub const fn plural(self) -> &'static str {
        match self {
            Kind::Installation => "installations",
            Kind::Execution => "executions",
            Kind::DeployItem => "deployitems",
            Kind::DataObject => "dataobjects",
            Kind::Target => "targets",
            Kind::Context => "contexts",
            Kind::ConfigMap => "configmaps",
            Kind::Secret => "secrets",
            Kind::ManifestFile => "manifestfiles",
            Kind::TransportArchive => "transportarchives",
        }
    }

    /// Lower-case singular resource name.
    pub const fn singular(self) -> &'static str {
        match self {
            Kind::Installation => "installation",
            Kind::Execution => "execution",
            Kind::DeployItem => "deployitem",
            Kind::DataObject => "dataobject",
            Kind::Target => "target",
            Kind::Context => "context",
            Kind::ConfigMap => "configmap",
            Kind::Secret => "secret",
            Kind::ManifestFile => "manifestfile",
            Kind::TransportArchive => "transportarchive",
        }
    }

    /// Short names as Landscaper's CRDs (and Kubernetes for core kinds) declare them.
    pub const fn short_names(self) -> &'static [&'static str] {
        match self {
            Kind::Installation => &["inst"],
            Kind::Execution => &["exec"],
            Kind::DeployItem => &["di"],
            Kind::DataObject => &["dobj", "do"],
            Kind::Target => &["tgt", "tg"],
            Kind::Context => &["ctx"],
            Kind::ConfigMap => &["cm"],
            Kind::Secret => &[],
            Kind::ManifestFile => &["mf"],
            Kind::TransportArchive => &["ta"],
        }
    }

    /// Whether objects of this kind live in a namespace. Ingested files are cluster-scoped.
    pub const fn namespaced(self) -> bool {
        !matches!(self, Kind::ManifestFile | Kind::TransportArchive)
    }

    /// Whether this kind carries `metadata.generation` (bumped on changes outside metadata and
    /// status). Core ConfigMaps and Secrets do not, as on a Kubernetes API server.
    pub const fn has_generation(self) -> bool {
        !matches!(self, Kind::ConfigMap | Kind::Secret)
    }

    /// Resolves `apiVersion` and `kind` fields as written in a manifest.
    pub fn from_type_meta(api_version: &str, kind: &str) -> Option<Kind> {
        Kind::ALL
            .into_iter()
            .find(|k| k.as_str() == kind && k.api_version() == api_version)
    }

    /// Resolves a URL resource segment (plural, singular or short name) within a group.
    pub fn from_resource(group: &str, resource: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| {
            k.group() == group
                && (k.plural() == resource
                    || k.singular() == resource
                    || k.short_names().contains(&resource))
        })
    }

    /// Resolves a `Kind` name alone (e.g. `Installation`).
    pub fn from_kind_name(kind: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == kind)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_meta_round_trips_for_every_kind() {
        for kind in Kind::ALL {
            assert_eq!(
                Kind::from_type_meta(kind.api_version(), kind.as_str()),
                Some(kind)
            );
            assert_eq!(Kind::from_resource(kind.group(), kind.plural()), Some(kind));
        }
        assert_eq!(Kind::from_type_meta("v1", "Installation"), None);
        assert_eq!(
            Kind::from_resource("landscaper.gardener.cloud", "inst"),
            Some(Kind::Installation)
        );
        assert_eq!(Kind::from_resource("", "installations"), None);
        assert_eq!(
            Kind::from_resource("appliance.landscaper-appliance.io", "ta"),
            Some(Kind::TransportArchive)
        );
        assert!(!Kind::TransportArchive.namespaced());
    }
}
