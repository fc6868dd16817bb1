//! The Execution controller: creates, triggers and deletes the deploy items of an Execution
//! and collects their exports (Landscaper's `docs/technical/execution_controller.md`).
//!
//! [`ExecutionReconciler`] loads the Execution, the deploy items it manages and, in
//! `Completing`, their exports; the pure [`machine::step`] decides; all writes of a step
//! commit in one transaction.

pub mod machine;
pub mod targets;

use std::collections::BTreeMap;

use landscaper_store::model::constants::{
    DATA_OBJECT_SECRET_DATA_KEY, EXECUTION_MANAGED_BY_LABEL, LANDSCAPER_FINALIZER,
};
use landscaper_store::model::names::random_name_suffix;
use landscaper_store::model::{
    DataObject, DeployItem, Execution, Phase, Resource, Secret, from_value,
};
use landscaper_store::selector::Requirement;
use landscaper_store::{Kind, LabelSelector, ObjectKey, ObjectSource, Transaction};
use serde_json::Value;

use self::machine::{Next, View};
use super::ControllerContext;
use super::jobs::WaitIntervals;
use super::runtime::{Outcome, ReconcileError, Reconciler};

pub struct ExecutionReconciler {
    context: ControllerContext,
    waits: WaitIntervals,
    /// Reads objects and CRDs from deploy items' targets for the workflow conditions.
    targets: std::sync::Arc<dyn targets::TargetReader>,
}

impl ExecutionReconciler {
    pub fn new(context: ControllerContext) -> ExecutionReconciler {
        let waits = WaitIntervals::new(
            context.config.wait_interval_min,
            context.config.wait_interval_max,
        );
        ExecutionReconciler {
            context,
            waits,
            targets: std::sync::Arc::new(targets::ClusterTargetReader::default()),
        }
    }

    /// The reconciler with another reader of targets (tests).
    pub fn with_target_reader(
        mut self,
        reader: std::sync::Arc<dyn targets::TargetReader>,
    ) -> ExecutionReconciler {
        self.targets = reader;
        self
    }

    /// The deploy items, exports and export DataObject the machine needs for `execution`, read
    /// from `source` (one consistent snapshot per step, as the installation controller reads).
    fn load_view(
        &self,
        source: &impl ObjectSource,
        execution: &Execution,
    ) -> Result<View, ReconcileError> {
        let namespace = execution.metadata.namespace();
        let selector = LabelSelector {
            requirements: vec![Requirement::Equals(
                EXECUTION_MANAGED_BY_LABEL.to_string(),
                execution.metadata.name().to_string(),
            )],
        };
        let deploy_items = source
            .list(Kind::DeployItem, Some(namespace), &selector)?
            .iter()
            .map(parse::<DeployItem>)
            .collect::<Result<Vec<_>, _>>()?;
        let phase = execution.status.as_ref().and_then(|s| s.phase.as_ref());
        let mut exports = BTreeMap::new();
        // The workflow conditions see the items' exports (`self.exports`) in every phase.
        let with_workflow = machine::workflow::has_block(execution);
        if phase == Some(&Phase::Completing) || with_workflow {
            for di in &deploy_items {
                let export_ref = di.status.as_ref().and_then(|s| s.export_reference.as_ref());
                if let Some(export_ref) = export_ref {
                    exports.insert(di.name().to_string(), self.read_export(source, export_ref)?);
                }
            }
        }
        let mut export_object = None;
        if phase == Some(&Phase::Completing) {
            let key = ObjectKey::new(
                Kind::DataObject,
                namespace,
                machine::export_data_object_name(execution.metadata.name()),
            );
            export_object = source
                .get(&key)?
                .map(|v| parse::<DataObject>(&v))
                .transpose()?;
        }
        Ok(View {
            deploy_items,
            exports,
            export_object,
            workflow: None,
        })
    }

    /// A deploy item's export: the Secret's `config` entry as JSON (or YAML, as Landscaper
    /// reads it); `null` when the entry is missing. Problems with the data are the machine's
    /// to report; store failures are errors of the reconcile.
    fn read_export(
        &self,
        source: &impl ObjectSource,
        export_ref: &landscaper_store::model::ObjectReference,
    ) -> Result<Result<Value, String>, ReconcileError> {
        let key = ObjectKey::new(Kind::Secret, &export_ref.namespace, &export_ref.name);
        let Some(value) = source.get(&key)? else {
            return Ok(Err(format!("secrets \"{}\" not found", export_ref.name)));
        };
        let secret: Secret = parse(&value)?;
        let data = secret.decoded_data();
        let Some(bytes) = data.get(DATA_OBJECT_SECRET_DATA_KEY) else {
            return Ok(Ok(Value::Null));
        };
        Ok(parse_export(bytes))
    }
}

fn parse<T: Resource>(value: &Value) -> Result<T, ReconcileError> {
    from_value(value).map_err(|source| ReconcileError::ObjectDecode {
        kind: T::KIND,
        namespace: landscaper_store::object::namespace(value).to_string(),
        name: landscaper_store::object::name(value).to_string(),
        source,
    })
}

/// Export data as `yaml.Unmarshal` reads it: JSON, or YAML; empty data is `null`.
fn parse_export(bytes: &[u8]) -> Result<Value, String> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Null);
    }
    if let Ok(value) = serde_json::from_slice::<Value>(bytes) {
        return Ok(value);
    }
    let text = std::str::from_utf8(bytes).map_err(|e| format!("export is not UTF-8: {e}"))?;
    serde_saphyr::from_str_with_options::<Value>(
        text,
        crate::daemon::ingest::manifest::yaml_options(),
    )
    .map_err(|e| format!("error converting YAML to JSON: {e}"))
}

/// `imports` of an owned Execution's workflow conditions: the owning Installation's import
/// values, read as the Installation reads them for its subinstallations' conditions (one place:
/// `installation::dataflow::read_import_values`). `{}` for a standalone Execution; when the
/// imports cannot be read (the Installation reports that itself), `{}` too, so an expression
/// over them fails with the missing key.
fn owner_imports(
    source: &impl ObjectSource,
    owner: Option<&landscaper_store::model::Installation>,
) -> Value {
    let Some(owner) = owner else {
        return Value::Object(Default::default());
    };
    match super::installation::dataflow::read_import_values(source, owner) {
        Ok(values) => Value::Object(values),
        Err(e) => {
            tracing::debug!(installation = %owner.metadata.name(), error = ?e, "imports for workflow conditions not readable");
            Value::Object(Default::default())
        }
    }
}

impl Reconciler for ExecutionReconciler {
    const KIND: Kind = Kind::Execution;

    async fn record_failure(
        &self,
        key: &ObjectKey,
        error: &super::lserror::LsError,
    ) -> Result<(), ReconcileError> {
        super::jobs::record_last_error(&self.context, key, error).await
    }

    async fn reconcile(&self, key: &ObjectKey) -> Result<Outcome, ReconcileError> {
        let Some(value) = self.context.store.get(key)? else {
            self.waits.forget(key);
            return Ok(Outcome::Done);
        };
        let execution: Execution = parse(&value)?;
        let now = self.context.now();
        // A standalone Execution's new job is written together with the step's writes.
        let started = machine::start_standalone_job(&execution, super::jobs::new_job_id, &now);
        let execution = started.clone().unwrap_or(execution);
        // One consistent read of everything the step needs; no read stays open across the
        // commit.
        let snapshot = self.context.store.snapshot()?;
        let mut view = self.load_view(&snapshot, &execution)?;
        let reads = if machine::workflow::has_block(&execution) {
            let owner = match machine::workflow::owner_name(&execution) {
                Some(name) => snapshot
                    .get(&ObjectKey::new(
                        Kind::Installation,
                        execution.metadata.namespace(),
                        name,
                    ))?
                    .map(|v| parse::<landscaper_store::model::Installation>(&v))
                    .transpose()?,
                None => None,
            };
            let imports = owner_imports(&snapshot, owner.as_ref());
            Some((
                targets::target_reads(&snapshot, &execution)?,
                owner,
                imports,
            ))
        } else {
            None
        };
        drop(snapshot);
        if let Some((reads, owner, imports)) = reads {
            let mut inputs = targets::gather(
                self.targets.as_ref(),
                reads,
                imports,
                self.context.config.progressing_timeout,
            )
            .await;
            inputs.owner = owner;
            view.workflow = Some(inputs);
        }
        let mut step = machine::step(&execution, &view, &now, &mut random_name_suffix);
        if step.execution.is_none() {
            step.execution = started;
        }
        let removed = step.execution.as_ref().is_some_and(|e| {
            e.metadata.is_deleting() && e.metadata.finalizers.as_ref().is_none_or(Vec::is_empty)
        });
        let phase = step
            .execution
            .as_ref()
            .unwrap_or(&execution)
            .status
            .as_ref()
            .and_then(|s| s.phase.clone());
        let next = step.next.clone();
        let writes = step.into_writes();
        if !writes.is_empty() {
            self.context.store.commit(Transaction { writes }).await?;
        }
        if removed {
            tracing::info!(%key, finalizer = LANDSCAPER_FINALIZER, "execution deleted");
        }
        match next {
            Next::Idle | Next::Continue => {
                self.waits.forget(key);
                Ok(Outcome::Done)
            }
            Next::Wait => {
                let phase = phase.as_ref().map(Phase::as_str).unwrap_or_default();
                Ok(Outcome::RequeueAfter(self.waits.next(key, phase)))
            }
            Next::Retry(error) => {
                self.waits.forget(key);
                Err(ReconcileError::Step(error))
            }
        }
    }
}

#[cfg(test)]
mod tests;
