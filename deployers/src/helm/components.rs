//! Charts that are resources of OCM component versions (`chart.resourceRef`, the key
//! `getResourceKey` returns): the deployer hands the key and the Context's repository context to
//! a [`ComponentCharts`] (the appliance implements it over its component repositories) and
//! loads the chart `.tgz` it returns, as Landscaper's `getChartFromResourceRef`.

use serde_json::Value;

use super::{SecretData, TEMPLATE_OPERATION};
use crate::{BoxFuture, DeployerError};

/// A chart archive found through a component version.
#[derive(Debug, Clone)]
pub struct ComponentChart {
    /// The chart `.tgz`.
    pub tgz: Vec<u8>,
    /// Where it came from, e.g. `component example.com/app:1.0.0 resource chart`.
    pub origin: String,
    /// Served from the cache (or an archive in the manifests folder) without a registry request.
    pub from_cache: bool,
}

/// Why a chart could not be had from a component version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentChartError {
    /// Names the component, version and resource where known.
    pub message: String,
    /// Whether trying again later may help (registry unreachable, 5xx).
    pub retryable: bool,
}

/// Looks charts up by resource key in component repositories.
pub trait ComponentCharts: Send + Sync {
    /// The chart of the resource `key` (base64 YAML global resource identity) names, with the
    /// Context's `repository_context` (untyped JSON) and its registry pull secrets.
    fn chart_by_resource_key<'a>(
        &'a self,
        key: &'a str,
        repository_context: Option<&'a Value>,
        pull_secrets: &'a [SecretData],
    ) -> BoxFuture<'a, Result<ComponentChart, ComponentChartError>>;
}

/// The deployer's error for `e`: retryable ones are normal errors, the others configuration
/// problems (the item's input must change).
pub(super) fn chart_error(e: ComponentChartError) -> DeployerError {
    let message = format!("chart.resourceRef: {}", e.message);
    if e.retryable {
        DeployerError::new(TEMPLATE_OPERATION, "GetHelmChart", message)
    } else {
        DeployerError::configuration_problem(TEMPLATE_OPERATION, "GetHelmChart", message)
    }
}
