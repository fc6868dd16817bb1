//! The appliance's workflow extension (issue 19): the Java Operator SDK's workflow conditions and
//! policies for deploy items and (sub)installations. Not a Landscaper field: a full Landscaper
//! drops it, and without it every object behaves exactly as in Landscaper.
//!
//! Where it is written:
//! * deploy item templates (a blueprint's `deployExecutions` output items and an Execution's
//!   `spec.deployItems[]`): a field [`APPLIANCE_FIELD`] beside `dependsOn`;
//! * subinstallation templates (`InstallationTemplate`): the same field;
//! * Installations and Executions as objects: the annotation [`WORKFLOW_ANNOTATION`] holding the
//!   block as YAML, because their CRDs' schemas are closed (no
//!   `x-kubernetes-preserve-unknown-fields` on `spec`) and kubectl's strict field validation
//!   would reject an unknown `spec` field.
//!
//! The conditions are CEL expression strings; they are compiled and evaluated by the
//! `landscaper-workflow` crate, which also holds the planner that applies them.

use serde::{Deserialize, Serialize};

use crate::meta::ObjectMeta;
use crate::validate::ModelError;

/// Name of the extension field on deploy item and subinstallation templates.
pub const APPLIANCE_FIELD: &str = "appliance";
/// Annotation holding the extension block (YAML) on Installations and Executions.
pub const WORKFLOW_ANNOTATION: &str = "landscaper-appliance.io/workflow";

/// The extension block. Every field is optional; an absent (or empty) block means Landscaper's
/// behaviour exactly.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkflowExtension {
    /// Must hold before the dependent is reconciled; when false it is not created, or deleted
    /// together with everything depending on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconcile_precondition: Option<String>,
    /// The dependent counts as ready only when this holds (besides its own readiness).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_postcondition: Option<String>,
    /// A deleted dependent counts as gone only when this holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_postcondition: Option<String>,
    /// When false the dependent is neither reconciled nor deleted; its dependents are deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activation_condition: Option<ActivationCondition>,
    /// Per Execution / Installation: what a failed dependent does to the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_policy: Option<FailurePolicy>,
    /// Per Execution / Installation: at most this many dependents in progress at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<u32>,
}

/// An activation condition: a CEL expression, or the built-in CRD check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum ActivationCondition {
    Expression(String),
    CrdPresent(CrdPresent),
}

/// `{crdPresent: <plural>.<group>}`: active when that CustomResourceDefinition exists on the
/// dependent's target cluster (JOSDK's `CRDPresentActivationCondition`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CrdPresent {
    pub crd_present: String,
}

/// What a failing dependent does to the rest of the workflow.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub enum FailurePolicy {
    /// Landscaper's behaviour: after the first failure nothing new is started; what runs drains.
    #[default]
    FailFast,
    /// JOSDK's "as complete as possible": dependents not depending on a failed one still run;
    /// the workflow fails with an error listing each failed dependent.
    ContinueIndependent,
}

/// Which object carries a block: the policies only mean something on Executions and
/// Installations (which have dependents of their own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtensionPlace {
    DeployItemTemplate,
    InstallationTemplate,
    Installation,
    Execution,
}

impl WorkflowExtension {
    /// No field set: Landscaper's behaviour.
    pub fn is_empty(&self) -> bool {
        self == &WorkflowExtension::default()
    }

    pub fn failure_policy(&self) -> FailurePolicy {
        self.failure_policy.unwrap_or_default()
    }

    /// The block in the [`WORKFLOW_ANNOTATION`] of an object, `None` without the annotation.
    pub fn from_annotations(meta: &ObjectMeta) -> Result<Option<WorkflowExtension>, ModelError> {
        let Some(text) = meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(WORKFLOW_ANNOTATION))
        else {
            return Ok(None);
        };
        let field = format!("metadata.annotations[{WORKFLOW_ANNOTATION}]");
        if text.trim().is_empty() {
            return Ok(Some(WorkflowExtension::default()));
        }
        serde_saphyr::from_str::<WorkflowExtension>(text)
            .map(Some)
            .map_err(|e| ModelError::new(field, format!("invalid workflow block: {e}")))
    }

    /// Checks the fields that make sense at `place`; `field` names the block in errors
    /// (e.g. `deployItems[2].appliance`). Expressions are checked by the workflow crate.
    pub fn check(&self, place: ExtensionPlace, field: &str) -> Result<(), ModelError> {
        if place == ExtensionPlace::DeployItemTemplate {
            if self.failure_policy.is_some() {
                return Err(ModelError::new(
                    format!("{field}.failurePolicy"),
                    "Forbidden: only on Executions and Installations",
                ));
            }
            if self.max_concurrency.is_some() {
                return Err(ModelError::new(
                    format!("{field}.maxConcurrency"),
                    "Forbidden: only on Executions and Installations",
                ));
            }
        }
        if self.max_concurrency == Some(0) {
            return Err(ModelError::new(
                format!("{field}.maxConcurrency"),
                "Invalid value: 0: must be at least 1",
            ));
        }
        if let Some(ActivationCondition::CrdPresent(c)) = &self.activation_condition {
            let valid = c
                .crd_present
                .split_once('.')
                .is_some_and(|(plural, group)| !plural.is_empty() && group.contains('.'));
            if !valid {
                return Err(ModelError::new(
                    format!("{field}.activationCondition.crdPresent"),
                    format!(
                        "Invalid value: {:?}: must be <plural>.<group>, e.g. servicemonitors.monitoring.coreos.com",
                        c.crd_present
                    ),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::execution::DeployItemTemplate;
    use serde_json::json;

    #[test]
    fn deploy_item_template_block_round_trips_unchanged() {
        let v = json!({
            "name": "monitoring",
            "type": "landscaper.gardener.cloud/kubernetes-manifest",
            "dependsOn": ["app"],
            "appliance": {
                "reconcilePrecondition": "imports.monitoring == true",
                "readyPostcondition": "self.exports.ready",
                "deletePostcondition": "!has(objects.v1.Namespace.cluster.mon)",
                "activationCondition": {"crdPresent": "servicemonitors.monitoring.coreos.com"}
            }
        });
        let t: DeployItemTemplate = serde_json::from_value(v.clone()).unwrap();
        let ext = t.appliance.as_ref().unwrap();
        assert_eq!(
            ext.activation_condition,
            Some(ActivationCondition::CrdPresent(CrdPresent {
                crd_present: "servicemonitors.monitoring.coreos.com".into()
            }))
        );
        assert_eq!(serde_json::to_value(&t).unwrap(), v);
    }

    #[test]
    fn absent_block_stays_absent() {
        let v = json!({"name": "a", "type": "t"});
        let t: DeployItemTemplate = serde_json::from_value(v.clone()).unwrap();
        assert!(t.appliance.is_none());
        assert_eq!(serde_json::to_value(&t).unwrap(), v);
    }

    #[test]
    fn expression_activation_and_policies_decode() {
        let e: WorkflowExtension = serde_json::from_value(json!({
            "activationCondition": "imports.flag",
            "failurePolicy": "ContinueIndependent",
            "maxConcurrency": 2
        }))
        .unwrap();
        assert_eq!(
            e.activation_condition,
            Some(ActivationCondition::Expression("imports.flag".into()))
        );
        assert_eq!(e.failure_policy(), FailurePolicy::ContinueIndependent);
        assert_eq!(
            WorkflowExtension::default().failure_policy(),
            FailurePolicy::FailFast
        );
        assert!(
            serde_json::from_value::<WorkflowExtension>(json!({"failurePolicy": "Sometimes"}))
                .is_err()
        );
        assert!(
            serde_json::from_value::<WorkflowExtension>(json!({"readyPostcondtion": "x"})).is_err()
        );
    }

    #[test]
    fn annotation_holds_yaml() {
        let mut meta = ObjectMeta::default();
        assert_eq!(WorkflowExtension::from_annotations(&meta).unwrap(), None);
        meta.annotations = Some(
            [(
                WORKFLOW_ANNOTATION.to_owned(),
                "failurePolicy: ContinueIndependent\nmaxConcurrency: 3\n".to_owned(),
            )]
            .into(),
        );
        let e = WorkflowExtension::from_annotations(&meta).unwrap().unwrap();
        assert_eq!(e.failure_policy(), FailurePolicy::ContinueIndependent);
        assert_eq!(e.max_concurrency, Some(3));
        meta.annotations = Some(
            [(
                WORKFLOW_ANNOTATION.to_owned(),
                "maxConcurrency: many".to_owned(),
            )]
            .into(),
        );
        let err = WorkflowExtension::from_annotations(&meta).unwrap_err();
        assert!(err.field.contains(WORKFLOW_ANNOTATION), "{err:?}");
    }

    #[test]
    fn check_rejects_misplaced_or_invalid_fields() {
        let policy = WorkflowExtension {
            failure_policy: Some(FailurePolicy::ContinueIndependent),
            ..Default::default()
        };
        assert!(policy.check(ExtensionPlace::Execution, "x").is_ok());
        let err = policy
            .check(
                ExtensionPlace::DeployItemTemplate,
                "deployItems[0].appliance",
            )
            .unwrap_err();
        assert_eq!(err.field, "deployItems[0].appliance.failurePolicy");
        let zero = WorkflowExtension {
            max_concurrency: Some(0),
            ..Default::default()
        };
        assert!(zero.check(ExtensionPlace::Installation, "x").is_err());
        let crd = WorkflowExtension {
            activation_condition: Some(ActivationCondition::CrdPresent(CrdPresent {
                crd_present: "servicemonitors".into(),
            })),
            ..Default::default()
        };
        assert_eq!(
            crd.check(ExtensionPlace::DeployItemTemplate, "a")
                .unwrap_err()
                .field,
            "a.activationCondition.crdPresent"
        );
    }
}
