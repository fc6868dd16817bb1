//! Landscaper's mock deployer (`landscaper.gardener.cloud/mock`): it deploys nothing and reports
//! what its configuration says: `phase`, `initialPhase`, `providerStatus` and `export`.

use landscaper_model::Phase;
use landscaper_model::constants::MOCK_DEPLOYER_TYPE;
use serde::Deserialize;
use serde_json::Value;

use crate::{BoxFuture, DeleteResult, DeployRequest, Deployer, DeployerError, ReconcileResult};

/// `mock.deployer.landscaper.gardener.cloud/v1alpha1` `ProviderConfiguration`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MockConfiguration {
    #[serde(default)]
    pub api_version: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub phase: Option<Phase>,
    #[serde(default)]
    pub initial_phase: Option<Phase>,
    #[serde(default)]
    pub provider_status: Option<Value>,
    #[serde(default)]
    pub export: Option<Value>,
    /// Validated by Landscaper but without effect.
    #[serde(default)]
    pub continuous_reconcile: Option<Value>,
}

/// The reason of the error a mock item with an invalid provider configuration fails with.
pub const INVALID_CONFIGURATION_REASON: &str = "ProviderConfigurationInvalid";

impl MockConfiguration {
    pub fn parse(config: &Value) -> Result<MockConfiguration, DeployerError> {
        MockConfiguration::deserialize(config).map_err(|e| {
            DeployerError::configuration_problem(
                "reconcile",
                INVALID_CONFIGURATION_REASON,
                format!("invalid mock provider configuration: {e}"),
            )
        })
    }

    /// The phase a reconcile reports: `initialPhase` while the item is new in this job (phase
    /// empty or `Init`), otherwise `Succeeded`; `phase` overrides both.
    pub fn resulting_phase(&self, current: Option<&Phase>) -> Phase {
        let mut phase = match &self.initial_phase {
            Some(initial) => match current {
                None | Some(Phase::Init) => initial.clone(),
                Some(other) => other.clone(),
            },
            None => Phase::Succeeded,
        };
        if let Some(p) = &self.phase {
            phase = p.clone();
        }
        phase
    }
}

#[derive(Debug, Default, Clone, Copy)]
pub struct MockDeployer;

impl Deployer for MockDeployer {
    fn item_type(&self) -> &str {
        MOCK_DEPLOYER_TYPE
    }

    fn reconcile<'a>(
        &'a self,
        request: DeployRequest<'a>,
    ) -> BoxFuture<'a, Result<ReconcileResult, DeployerError>> {
        Box::pin(async move {
            let config = request.item.spec.config.clone().unwrap_or(Value::Null);
            let config = MockConfiguration::parse(&config)?;
            let current = request.item.status.as_ref().and_then(|s| s.phase.as_ref());
            Ok(ReconcileResult {
                phase: Some(config.resulting_phase(current)),
                provider_status: config.provider_status,
                export: config.export,
            })
        })
    }

    fn delete<'a>(
        &'a self,
        _request: DeployRequest<'a>,
    ) -> BoxFuture<'a, Result<DeleteResult, DeployerError>> {
        // The export goes with the item; nothing else was deployed.
        Box::pin(async { Ok(DeleteResult::Deleted) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use landscaper_model::{DeployItem, DeployItemStatus};
    use serde_json::json;

    fn item(config: Value, phase: Option<Phase>) -> DeployItem {
        let mut di = DeployItem::default();
        di.spec.r#type = MOCK_DEPLOYER_TYPE.into();
        di.spec.config = Some(config);
        di.status = Some(DeployItemStatus {
            phase,
            ..Default::default()
        });
        di
    }

    fn run(di: &DeployItem) -> Result<ReconcileResult, DeployerError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(MockDeployer.reconcile(DeployRequest::new(di, None)))
    }

    #[test]
    fn succeeds_by_default_and_copies_status_and_export() {
        let di = item(
            json!({"apiVersion": "mock.deployer.landscaper.gardener.cloud/v1alpha1", "kind": "ProviderConfiguration",
                   "providerStatus": {"kind": "ProviderStatus", "x": 1}, "export": {"a": "b"}}),
            Some(Phase::Init),
        );
        let r = run(&di).unwrap();
        assert_eq!(r.phase, Some(Phase::Succeeded));
        assert_eq!(
            r.provider_status,
            Some(json!({"kind": "ProviderStatus", "x": 1}))
        );
        assert_eq!(r.export, Some(json!({"a": "b"})));
    }

    #[test]
    fn initial_phase_applies_only_while_new_and_phase_overrides() {
        let cfg = json!({"initialPhase": "Progressing"});
        assert_eq!(
            run(&item(cfg.clone(), Some(Phase::Init))).unwrap().phase,
            Some(Phase::Progressing)
        );
        assert_eq!(
            run(&item(cfg.clone(), None)).unwrap().phase,
            Some(Phase::Progressing)
        );
        // Later reconciles keep the phase the item is in.
        assert_eq!(
            run(&item(cfg, Some(Phase::Progressing))).unwrap().phase,
            Some(Phase::Progressing)
        );
        let cfg = json!({"initialPhase": "Progressing", "phase": "Failed"});
        assert_eq!(
            run(&item(cfg, Some(Phase::Init))).unwrap().phase,
            Some(Phase::Failed)
        );
    }

    #[test]
    fn a_broken_configuration_is_a_configuration_problem() {
        let err = run(&item(json!({"phase": 7}), Some(Phase::Init))).unwrap_err();
        assert!(err.is_unrecoverable());
        assert!(
            err.message.contains("invalid mock provider configuration"),
            "{err}"
        );
    }
}
