//! The deployers of one appliance, by the deploy item type they serve.

use std::collections::BTreeMap;
use std::sync::Arc;

use landscaper_store::model::Target;

use crate::{Deployer, ManifestDeployer, MockDeployer};

/// Two deployers claim the same deploy item type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("two deployers serve the deploy item type {0:?}")]
pub struct DuplicateItemType(pub String);

/// The deployers by deploy item type (`landscaper.gardener.cloud/mock`, ...). Built once when
/// the daemon starts ([`DeployerRegistry::builtin`]); the deploy-item dispatcher asks it which
/// deployer serves an item. A type without a deployer is left to Landscaper's pickup timeout.
#[derive(Clone, Default)]
pub struct DeployerRegistry {
    deployers: BTreeMap<String, Arc<dyn Deployer>>,
}

impl std::fmt::Debug for DeployerRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.deployers.keys()).finish()
    }
}

impl DeployerRegistry {
    /// A registry without deployers.
    pub fn new() -> DeployerRegistry {
        DeployerRegistry::default()
    }

    /// The built-in deployers: mock and kubernetes-manifest.
    pub fn builtin() -> DeployerRegistry {
        let mut registry = DeployerRegistry::new();
        let builtin: [Arc<dyn Deployer>; 2] =
            [Arc::new(MockDeployer), Arc::new(ManifestDeployer::new())];
        for deployer in builtin {
            // The built-in types differ.
            let _ = registry.register(deployer);
        }
        registry
    }

    /// Adds `deployer` for its [`Deployer::item_type`]; refused when the type has one already.
    pub fn register(&mut self, deployer: Arc<dyn Deployer>) -> Result<(), DuplicateItemType> {
        let item_type = deployer.item_type().to_string();
        if self.deployers.contains_key(&item_type) {
            return Err(DuplicateItemType(item_type));
        }
        self.deployers.insert(item_type, deployer);
        Ok(())
    }

    /// The deployer serving `item_type`.
    pub fn get(&self, item_type: &str) -> Option<&Arc<dyn Deployer>> {
        self.deployers.get(item_type)
    }

    /// Whether a deployer serves `item_type`.
    pub fn contains_key(&self, item_type: &str) -> bool {
        self.deployers.contains_key(item_type)
    }

    /// The deployer responsible for an item of `item_type` with this (resolved) Target: the one
    /// serving the type, if it accepts the Target's type ([`Deployer::accepted_target_types`]).
    pub fn responsible(
        &self,
        item_type: &str,
        target: Option<&Target>,
    ) -> Option<&Arc<dyn Deployer>> {
        self.get(item_type)
            .filter(|d| d.accepted_target_types().accepts(target))
    }

    /// The served deploy item types, sorted.
    pub fn item_types(&self) -> impl Iterator<Item = &str> {
        self.deployers.keys().map(String::as_str)
    }
}

impl FromIterator<Arc<dyn Deployer>> for DeployerRegistry {
    /// A registry of `deployers`; a later deployer for the same type replaces an earlier one.
    fn from_iter<I: IntoIterator<Item = Arc<dyn Deployer>>>(deployers: I) -> DeployerRegistry {
        DeployerRegistry {
            deployers: deployers
                .into_iter()
                .map(|d| (d.item_type().to_string(), d))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ReconcileResult;
    use crate::{AcceptedTargetTypes, BoxFuture, DeleteResult, DeployRequest, DeployerError};
    use landscaper_store::model::constants::{MANIFEST_DEPLOYER_TYPE, MOCK_DEPLOYER_TYPE};

    struct OnlyFoo;

    impl Deployer for OnlyFoo {
        fn item_type(&self) -> &str {
            "example.com/foo"
        }

        fn accepted_target_types(&self) -> AcceptedTargetTypes {
            AcceptedTargetTypes::Only(&["example.com/foo-target"])
        }

        fn reconcile<'a>(
            &'a self,
            _request: DeployRequest<'a>,
        ) -> BoxFuture<'a, Result<ReconcileResult, DeployerError>> {
            Box::pin(async { Ok(ReconcileResult::default()) })
        }

        fn delete<'a>(
            &'a self,
            _request: DeployRequest<'a>,
        ) -> BoxFuture<'a, Result<DeleteResult, DeployerError>> {
            Box::pin(async { Ok(DeleteResult::Deleted) })
        }
    }

    fn target(target_type: &str) -> Target {
        let mut t = Target::default();
        t.spec.r#type = target_type.into();
        t
    }

    #[test]
    fn builtin_serves_mock_and_manifest_and_names_them_as_landscaper() {
        let registry = DeployerRegistry::builtin();
        assert_eq!(
            registry.item_types().collect::<Vec<_>>(),
            vec![MANIFEST_DEPLOYER_TYPE, MOCK_DEPLOYER_TYPE]
        );
        assert_eq!(
            registry.get(MANIFEST_DEPLOYER_TYPE).unwrap().name(),
            "manifest.deployer.landscaper.gardener.cloud"
        );
        assert_eq!(
            registry.get(MOCK_DEPLOYER_TYPE).unwrap().name(),
            "mock.deployer.landscaper.gardener.cloud"
        );
        assert!(registry.get("landscaper.gardener.cloud/helm").is_none());
        // Landscaper's deployers check no target type.
        let other = target("example.com/anything");
        assert!(
            registry
                .responsible(MANIFEST_DEPLOYER_TYPE, Some(&other))
                .is_some()
        );
        assert!(
            registry
                .responsible(MOCK_DEPLOYER_TYPE, Some(&other))
                .is_some()
        );
    }

    #[test]
    fn a_type_is_served_once_and_target_types_narrow_responsibility() {
        let mut registry = DeployerRegistry::new();
        registry.register(Arc::new(OnlyFoo)).unwrap();
        assert_eq!(
            registry.register(Arc::new(OnlyFoo)),
            Err(DuplicateItemType("example.com/foo".into()))
        );
        let foo = target("example.com/foo-target");
        let bar = target("example.com/bar-target");
        assert!(
            registry
                .responsible("example.com/foo", Some(&foo))
                .is_some()
        );
        assert!(
            registry
                .responsible("example.com/foo", Some(&bar))
                .is_none()
        );
        assert!(registry.responsible("example.com/foo", None).is_some());
        assert!(registry.responsible("example.com/other", None).is_none());
    }
}
