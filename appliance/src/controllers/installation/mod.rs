//! The installation controller: Landscaper's reconcile jobs and installation phases
//! (`../seeds/000`, LANDSCAPER-FEATURES §B, §E, §F). Each step commits once; the decisions are
//! the pure functions of [`machine`], the data work is in [`dataflow`].

pub mod auto;
pub mod dataflow;
pub mod machine;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::time::Duration;

use landscaper_store::model::constants::*;
use landscaper_store::model::{
    DependentToTrigger, Execution, Installation, InstallationStatus, ObjectReference, Phase,
    SubInstCache, SubNamePair, from_value,
};
use landscaper_store::{Kind, ObjectKey, Transaction, object};
use serde_json::{Value, json};

use self::dataflow::{name, namespace, parent_name};
use self::machine::{ChildrenProgress, DeletionProgress, OrphanCleanup, PreAction};
use super::ControllerContext;
use super::jobs::{self, WaitIntervals, with_status};
use super::lserror::{LsError, PhaseError};
use super::runtime::{Outcome, ReconcileError, Reconciler};

/// An installation's subinstallations and its execution, as stored and as typed.
type Children = (Vec<(Value, Installation)>, Option<(Value, Execution)>);

pub struct InstallationReconciler {
    context: ControllerContext,
    waits: WaitIntervals,
}

/// What a step asks for: another step at once, or the runtime's outcome.
enum Next {
    Continue,
    /// Another step at once on this changed object, written together with the next commit
    /// (phase changes that write nothing else need no commit of their own).
    Defer(Value),
    Stop(Outcome),
}

impl InstallationReconciler {
    pub fn new(context: ControllerContext) -> InstallationReconciler {
        let waits = WaitIntervals::new(
            context.config.wait_interval_min,
            context.config.wait_interval_max,
        );
        InstallationReconciler { context, waits }
    }

    async fn commit(&self, tx: Transaction) -> Result<(), ReconcileError> {
        if !tx.writes.is_empty() {
            self.context.store.commit(tx).await?;
        }
        Ok(())
    }

    /// The subinstallations and the execution owned by `inst`.
    fn children(&self, value: &Value) -> Result<Children, ReconcileError> {
        let mut subs = Vec::new();
        let mut execution = None;
        for child in self.context.store.children(object::uid(value))? {
            match object::kind_of(&child) {
                Ok(Kind::Installation) => {
                    if let Ok(i) = from_value::<Installation>(&child) {
                        subs.push((child, i));
                    }
                }
                Ok(Kind::Execution) => {
                    if let Ok(e) = from_value::<Execution>(&child) {
                        execution = Some((child, e));
                    }
                }
                _ => {}
            }
        }
        subs.sort_by(|a, b| object::name(&a.0).cmp(object::name(&b.0)));
        Ok((subs, execution))
    }

    async fn step(
        &self,
        value: &Value,
        inst: &Installation,
        dirty: bool,
    ) -> Result<Next, ReconcileError> {
        let now = self.context.now();
        let is_root = parent_name(inst).is_none();
        let status = inst.status.clone().unwrap_or_default();
        match machine::pre_action(inst, is_root) {
            PreAction::AddReconcileAnnotation => {
                let mut v = value.clone();
                jobs::set_annotation(&mut v, OPERATION_ANNOTATION, Some(OPERATION_RECONCILE));
                self.commit(Transaction::new().update(v)).await?;
                Ok(Next::Continue)
            }
            PreAction::AddFinalizer => {
                let mut v = value.clone();
                jobs::add_finalizer(&mut v, LANDSCAPER_FINALIZER);
                Ok(Next::Defer(v))
            }
            PreAction::TriggerDependents(names) => {
                self.trigger_dependents(value, inst, &status, &names)
                    .await?;
                Ok(Next::Continue)
            }
            PreAction::Interrupt => {
                self.interrupt(value).await?;
                Ok(Next::Continue)
            }
            PreAction::RemoveReconcileAnnotation => {
                let mut v = value.clone();
                jobs::set_annotation(&mut v, OPERATION_ANNOTATION, None);
                jobs::set_annotation(&mut v, RECONCILE_REASON_ANNOTATION, None);
                self.commit(Transaction::new().update(v)).await?;
                Ok(Next::Continue)
            }
            PreAction::StartJob => {
                let mut status = status;
                if auto::resets_on_start(inst) {
                    status.automatic_reconcile_status = None;
                }
                let status = machine::start_job(&status, jobs::new_job_id(), &now);
                let mut v = with_status(value.clone(), &status);
                jobs::set_annotation(&mut v, OPERATION_ANNOTATION, None);
                jobs::set_annotation(&mut v, RECONCILE_REASON_ANNOTATION, None);
                self.commit(Transaction::new().update(v)).await?;
                Ok(Next::Continue)
            }
            PreAction::RunPhases => self.run_phase(value, inst, dirty).await,
            PreAction::Idle => {
                let key = ObjectKey::new(Kind::Installation, namespace(inst), name(inst));
                self.waits.forget(&key);
                if dirty {
                    self.commit(Transaction::new().update(value.clone()))
                        .await?;
                    return Ok(Next::Continue);
                }
                match auto::decide(inst, self.context.clock.now()) {
                    auto::Decision::Nothing => Ok(Next::Stop(Outcome::Done)),
                    auto::Decision::Wait(d) => Ok(Next::Stop(Outcome::RequeueAfter(d))),
                    auto::Decision::Update {
                        status: new_auto,
                        annotate,
                    } => {
                        let mut s = status;
                        s.automatic_reconcile_status = new_auto;
                        let mut v = with_status(value.clone(), &s);
                        if annotate {
                            jobs::set_annotation(
                                &mut v,
                                OPERATION_ANNOTATION,
                                Some(OPERATION_RECONCILE),
                            );
                            jobs::set_annotation(
                                &mut v,
                                RECONCILE_REASON_ANNOTATION,
                                Some(RECONCILE_REASON_RETRY),
                            );
                        }
                        self.commit(Transaction::new().update(v)).await?;
                        Ok(Next::Continue)
                    }
                }
            }
        }
    }

    /// Successors recorded at the end of the last job: roots get the reconcile annotation,
    /// subinstallations a reconcile event.
    async fn trigger_dependents(
        &self,
        value: &Value,
        inst: &Installation,
        status: &InstallationStatus,
        names: &[String],
    ) -> Result<(), ReconcileError> {
        let mut tx = Transaction::new();
        let mut wake = Vec::new();
        for n in names {
            let key = ObjectKey::new(Kind::Installation, namespace(inst), n);
            let Some(mut sibling) = self.context.store.get(&key)? else {
                continue;
            };
            let sibling_inst: Installation = match from_value(&sibling) {
                Ok(i) => i,
                Err(_) => continue,
            };
            if parent_name(&sibling_inst).is_none() {
                if !machine::has_operation(&sibling_inst, OPERATION_RECONCILE) {
                    jobs::set_annotation(
                        &mut sibling,
                        OPERATION_ANNOTATION,
                        Some(OPERATION_RECONCILE),
                    );
                    tx = tx.update(sibling);
                }
            } else {
                wake.push(key);
            }
        }
        let mut s = status.clone();
        s.dependents_to_trigger = None;
        tx = tx.update(with_status(value.clone(), &s));
        self.commit(tx).await?;
        if let Some(queues) = self.context.queues() {
            for key in wake {
                queues.installations.add(key);
            }
        }
        Ok(())
    }

    /// The interrupt annotation moves from the installation to its execution and
    /// subinstallations.
    async fn interrupt(&self, value: &Value) -> Result<(), ReconcileError> {
        let mut v = value.clone();
        jobs::set_annotation(&mut v, OPERATION_ANNOTATION, None);
        let mut tx = Transaction::new().update(v);
        let (subs, execution) = self.children(value)?;
        for (mut child, _) in subs {
            jobs::set_annotation(&mut child, OPERATION_ANNOTATION, Some(OPERATION_INTERRUPT));
            tx = tx.update(child);
        }
        if let Some((mut e, _)) = execution {
            jobs::set_annotation(&mut e, OPERATION_ANNOTATION, Some(OPERATION_INTERRUPT));
            tx = tx.update(e);
        }
        self.commit(tx).await
    }

    /// Writes `status` with `phase` (and on a final install phase the dependents to trigger).
    async fn finish_step(
        &self,
        value: &Value,
        inst: &Installation,
        status: &InstallationStatus,
        phase: Phase,
        error: Option<&LsError>,
        extra: Transaction,
    ) -> Result<(), ReconcileError> {
        let now = self.context.now();
        let mut s = machine::set_phase(status, phase, error, &now);
        if jobs::is_finished(s.job_id.as_deref(), s.job_id_finished.as_deref())
            && !machine::is_deleting(inst)
        {
            let dependents = self.dependents(inst)?;
            s.dependents_to_trigger = (!dependents.is_empty()).then_some(dependents);
        }
        let mut tx = extra;
        tx.writes.push(landscaper_store::Write::Update(with_status(
            value.clone(),
            &s,
        )));
        self.commit(tx).await
    }

    /// Siblings that import an export of `inst`.
    fn dependents(&self, inst: &Installation) -> Result<Vec<DependentToTrigger>, ReconcileError> {
        if inst
            .spec
            .optimization
            .as_ref()
            .and_then(|o| o.has_no_sibling_exports)
            == Some(true)
            || (inst.spec.data_exports().is_empty() && inst.spec.target_exports().is_empty())
        {
            return Ok(Vec::new());
        }
        let siblings = dataflow::importers_of_exports(&self.context.store, inst)
            .map_err(|e| ReconcileError::Transient(e.error().to_string()))?;
        Ok(siblings
            .iter()
            .filter(|s| dataflow::is_successor(inst, s))
            .map(|s| DependentToTrigger {
                name: name(s).to_string(),
            })
            .collect())
    }

    /// Records a phase error: a normal one keeps the phase and waits, a fatal one ends the
    /// flow.
    async fn on_error(
        &self,
        value: &Value,
        inst: &Installation,
        status: &InstallationStatus,
        error: PhaseError,
        dirty: bool,
    ) -> Result<Next, ReconcileError> {
        let current = status.phase.clone().unwrap_or(Phase::Init);
        let error = match error {
            PhaseError::Normal(e) if machine::gives_up_for_deletion(inst, &current) => {
                PhaseError::Fatal(e)
            }
            other => other,
        };
        match error {
            PhaseError::Normal(e) => {
                let key = ObjectKey::new(Kind::Installation, namespace(inst), name(inst));
                let wait = self.waits.next(&key, current.as_str());
                let now = self.context.now();
                let s = machine::set_phase(status, current, Some(&e), &now);
                if dirty || Some(&s) != inst.status.as_ref() {
                    self.commit(Transaction::new().update(with_status(value.clone(), &s)))
                        .await?;
                }
                Ok(Next::Stop(Outcome::RequeueAfter(wait)))
            }
            PhaseError::Fatal(e) => {
                // As in Landscaper, an install phase fails with `Failed` also while the
                // installation is being deleted, so that the deletion job can start after it.
                let failed = if jobs::is_deletion_phase(Some(&current)) {
                    Phase::DeleteFailed
                } else {
                    Phase::Failed
                };
                tracing::info!(installation = %format!("{}/{}", namespace(inst), name(inst)), error = %e, "installation failed");
                self.finish_step(value, inst, status, failed, Some(&e), Transaction::new())
                    .await?;
                Ok(Next::Continue)
            }
        }
    }

    async fn run_phase(
        &self,
        value: &Value,
        inst: &Installation,
        dirty: bool,
    ) -> Result<Next, ReconcileError> {
        let now = self.context.now();
        if let Some(s) = machine::enter_job(inst, &now) {
            return Ok(Next::Defer(with_status(value.clone(), &s)));
        }
        let status = inst.status.clone().unwrap_or_default();
        if machine::skips_init_for_deletion(inst) {
            let s = machine::set_phase(&status, Phase::InitDelete, None, &now);
            return Ok(Next::Defer(with_status(value.clone(), &s)));
        }
        let job_id = status.job_id.clone().unwrap_or_default();
        let phase = status.phase.clone().unwrap_or(Phase::Init);
        let result: Result<(Phase, Transaction, InstallationStatus), PhaseError> = match phase {
            Phase::Init => self.phase_init(value, inst, &status, &job_id).await,
            Phase::CleanupOrphaned => {
                let (subs, _) = self.children(value)?;
                let deleting: Vec<Installation> = subs
                    .into_iter()
                    .filter(|(_, s)| s.metadata.deletion_timestamp.is_some())
                    .map(|(_, s)| s)
                    .collect();
                match machine::cleanup_orphaned(&job_id, &deleting) {
                    OrphanCleanup::AllGone => {
                        let mut s = status.clone();
                        if let Some(c) = s.sub_inst_cache.as_mut() {
                            c.orphaned_subs = None;
                        }
                        Ok((Phase::ObjectsCreated, Transaction::new(), s))
                    }
                    OrphanCleanup::AllFailed => Err(PhaseError::Fatal(LsError::new(
                        "handlePhaseCleanupOrphaned",
                        "AllOrphanedSubinstallationsFailed",
                        "all orphaned subinstallations failed",
                    ))),
                    OrphanCleanup::Pending { trigger } => {
                        let tx = self.pass_job_id(value, &trigger, false, &job_id, &now)?;
                        self.commit(tx).await?;
                        Err(PhaseError::Normal(LsError::new(
                            "handlePhaseCleanupOrphaned",
                            "OrphanedSubinstsStillDeleting",
                            "some orphaned subinstallations are still deleting",
                        )))
                    }
                }
            }
            Phase::ObjectsCreated | Phase::TriggerDelete => {
                let (subs, _) = self.children(value)?;
                let names: Vec<String> = subs
                    .iter()
                    .map(|(v, _)| object::name(v).to_string())
                    .collect();
                let tx = self.pass_job_id(value, &names, true, &job_id, &now)?;
                let mut s = status.clone();
                if phase == Phase::ObjectsCreated {
                    // Every subinstallation exists now, also those created in Init.
                    let active: Vec<SubNamePair> = subs
                        .iter()
                        .filter(|(_, i)| i.metadata.deletion_timestamp.is_none())
                        .map(|(v, i)| SubNamePair {
                            spec_name: machine::annotation(i, SUBINSTALLATION_NAME_ANNOTATION)
                                .unwrap_or_default()
                                .to_string(),
                            object_name: object::name(v).to_string(),
                        })
                        .collect();
                    let cache = s.sub_inst_cache.get_or_insert_with(SubInstCache::default);
                    cache.active_subs = (!active.is_empty()).then_some(active);
                }
                let mut times = s.transition_times.clone().unwrap_or_default();
                times.wait_time = Some(now.clone());
                s.transition_times = Some(times);
                let next = if phase == Phase::ObjectsCreated {
                    Phase::Progressing
                } else {
                    Phase::Deleting
                };
                Ok((next, tx, s))
            }
            Phase::Progressing => {
                let (subs, execution) = self.children(value)?;
                let subs: Vec<Installation> = subs.into_iter().map(|(_, s)| s).collect();
                match machine::progressing(&subs, execution.as_ref().map(|(_, e)| e)) {
                    ChildrenProgress::Waiting(e) => Err(PhaseError::Normal(e)),
                    ChildrenProgress::AllSucceeded => {
                        Ok((Phase::Completing, Transaction::new(), status.clone()))
                    }
                    ChildrenProgress::Failed(e) => {
                        self.finish_step(
                            value,
                            inst,
                            &status,
                            Phase::Failed,
                            Some(&e),
                            Transaction::new(),
                        )
                        .await?;
                        return Ok(Next::Continue);
                    }
                }
            }
            Phase::Completing => self.phase_completing(value, inst, &status, &job_id).await,
            Phase::InitDelete => self.phase_init_delete(value, inst, &status, &job_id),
            Phase::Deleting => {
                let (subs, execution) = self.children(value)?;
                let subs: Vec<Installation> = subs.into_iter().map(|(_, s)| s).collect();
                match machine::deleting(&job_id, &subs, execution.as_ref().map(|(_, e)| e)) {
                    DeletionProgress::AllGone => {
                        let mut v = value.clone();
                        jobs::remove_finalizer(&mut v, LANDSCAPER_FINALIZER);
                        self.commit(Transaction::new().update(v)).await?;
                        return Ok(Next::Stop(Outcome::Done));
                    }
                    DeletionProgress::Stuck => {
                        let e = LsError::new(
                            "handleReconcilePhase",
                            "UndeletedSubobjects",
                            "not all sub objects were deleted",
                        )
                        .with_code(ERR_FOR_INFO_ONLY);
                        self.finish_step(
                            value,
                            inst,
                            &status,
                            Phase::DeleteFailed,
                            Some(&e),
                            Transaction::new(),
                        )
                        .await?;
                        return Ok(Next::Continue);
                    }
                    DeletionProgress::Pending => Err(PhaseError::Normal(
                        LsError::new(
                            "handleReconcilePhase",
                            "PendingSubobjects",
                            "deletion of some sub objects pending",
                        )
                        .with_code(ERR_FOR_INFO_ONLY),
                    )),
                }
            }
            Phase::Succeeded | Phase::Failed | Phase::DeleteFailed | Phase::Other(_) => {
                // enter_job handles final phases; an unknown phase restarts the job.
                let mut s = status.clone();
                s.phase = None;
                self.commit(Transaction::new().update(with_status(value.clone(), &s)))
                    .await?;
                return Ok(Next::Continue);
            }
        };
        match result {
            Ok((next, tx, s)) => {
                let key = ObjectKey::new(Kind::Installation, namespace(inst), name(inst));
                self.waits.forget(&key);
                if tx.writes.is_empty() && !jobs::is_final(Some(&next)) {
                    let s = machine::set_phase(&s, next, None, &now);
                    return Ok(Next::Defer(with_status(value.clone(), &s)));
                }
                self.finish_step(value, inst, &s, next, None, tx).await?;
                Ok(Next::Continue)
            }
            Err(e) => self.on_error(value, inst, &status, e, dirty).await,
        }
    }

    /// Sets this job's ID on the named subinstallations (and on the execution when
    /// `execution` is set); Landscaper's `ObjectsCreated`/`TriggerDelete`.
    fn pass_job_id(
        &self,
        value: &Value,
        names: &[String],
        execution: bool,
        job_id: &str,
        now: &str,
    ) -> Result<Transaction, ReconcileError> {
        let (subs, exec) = self.children(value)?;
        let mut tx = Transaction::new();
        let trigger = |mut v: Value| -> Option<Value> {
            let status = v.get("status").cloned().unwrap_or(json!({}));
            if status.get("jobID").and_then(Value::as_str) == Some(job_id) {
                return None;
            }
            let mut status = status.as_object().cloned().unwrap_or_default();
            status.insert("jobID".into(), json!(job_id));
            status.insert("transitionTimes".into(), json!({"triggerTime": now}));
            v["status"] = Value::Object(status);
            Some(v)
        };
        for (v, _) in subs {
            if names.iter().any(|n| n == object::name(&v))
                && let Some(u) = trigger(v)
            {
                tx = tx.update(u);
            }
        }
        if execution
            && let Some((v, _)) = exec
            && let Some(u) = trigger(v)
        {
            tx = tx.update(u);
        }
        Ok(tx)
    }

    /// `Init`: blueprint, predecessors, imports and their hash, import objects, subobjects.
    async fn phase_init(
        &self,
        value: &Value,
        inst: &Installation,
        status: &InstallationStatus,
        job_id: &str,
    ) -> Result<(Phase, Transaction, InstallationStatus), PhaseError> {
        const OP: &str = "handlePhaseInit";
        let store = &self.context.store;
        let ns = namespace(inst);
        let mut tx = Transaction::new();
        // (a) own exports of earlier jobs go.
        for kind in [Kind::DataObject, Kind::Target] {
            let selector =
                dataflow::label_equals(DATA_OBJECT_SOURCE_LABEL, &dataflow::own_scope(inst));
            let list = store.list(kind, Some(ns), &selector).map_err(|e| {
                PhaseError::Normal(LsError::new(OP, "CleanupExports", e.to_string()))
            })?;
            for o in list.items {
                if object::labels(&o)
                    .get(DATA_OBJECT_SOURCE_TYPE_LABEL)
                    .map(String::as_str)
                    == Some(DATA_OBJECT_SOURCE_TYPE_EXPORT)
                {
                    tx = tx.delete(ObjectKey::new(kind, ns, object::name(&o)), None);
                }
            }
        }
        // (b) context, blueprint.
        self.check_context(inst)?;
        let blueprint = dataflow::load_blueprint(inst, self.context.manifests_dir.as_deref())?;
        // (c) predecessors; no sibling exports the same object.
        self.check_duplicate_exports(inst)?;
        let predecessors = self.check_predecessors(inst)?;
        // (d), (e) imports.
        let values = dataflow::read_import_values(store, inst)?;
        let hash = dataflow::imports_hash(&values);
        // The templates (import executions and mappings, deploy and subinstallation
        // executions) of (e), (g) and (h), rendered off the async workers.
        let (bindings, rendered) = {
            let (inst, blueprint) = (inst.clone(), blueprint.clone());
            render_off_async_workers(OP, move || {
                let bindings = dataflow::construct_blueprint_imports(&inst, &blueprint, &values)?;
                let rendered = dataflow::render_subobjects(&inst, &blueprint, &bindings)?;
                Ok((bindings, rendered))
            })
            .await?
        };
        // (f) imports into the own scope (marked when they may hold Secret values).
        let from_secret = dataflow::imports_from_secrets(store, inst)?;
        for o in dataflow::import_objects(inst, value, &blueprint, &bindings, job_id, from_secret) {
            if let Some(w) = upsert(store, o)? {
                tx.writes.push(w);
            }
        }
        // (g), (h) subinstallations and execution.
        let (subs, execution) = self
            .children(value)
            .map_err(|e| PhaseError::Normal(LsError::new(OP, "ListSubobjects", e.to_string())))?;
        let mut cache = SubInstCache::default();
        let mut active = Vec::new();
        let mut orphaned = Vec::new();
        let mut existing: BTreeMap<String, Value> = BTreeMap::new();
        for (v, s) in subs {
            let template_name = s
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(SUBINSTALLATION_NAME_ANNOTATION))
                .cloned()
                .unwrap_or_default();
            if s.metadata.deletion_timestamp.is_some() {
                continue;
            }
            if rendered
                .subinstallations
                .iter()
                .any(|t| t.name == template_name)
                && !existing.contains_key(&template_name)
            {
                existing.insert(template_name, v);
            } else {
                // orphaned: deleted without waiting for its successors.
                let mut o = v.clone();
                jobs::set_annotation(&mut o, DELETE_IGNORE_SUCCESSORS_ANNOTATION, Some("true"));
                orphaned.push(object::name(&v).to_string());
                tx = tx.update(o).delete(
                    ObjectKey::new(Kind::Installation, ns, object::name(&v)),
                    None,
                );
            }
        }
        for template in &rendered.subinstallations {
            let sub = subinstallation_object(
                inst,
                value,
                template,
                existing.get(&template.name),
                from_secret,
            )
            .map_err(|m| PhaseError::Fatal(LsError::new(OP, "EnsureSubinstallations", m)))?;
            match existing.get(&template.name) {
                Some(current) => {
                    active.push(SubNamePair {
                        spec_name: template.name.clone(),
                        object_name: object::name(current).to_string(),
                    });
                    if &sub != current {
                        tx = tx.update(sub);
                    }
                }
                None => {
                    // The name comes from generateName; the cache is completed in the next
                    // phase, once the object exists.
                    tx = tx.create(sub);
                }
            }
        }
        cache.active_subs = (!active.is_empty()).then_some(active);
        cache.orphaned_subs = (!orphaned.is_empty()).then_some(orphaned);
        let mut s = status.clone();
        s.sub_inst_cache = Some(cache);
        let wants_execution = !rendered.deploy_items.is_empty() || execution.is_some();
        if wants_execution {
            let exec = execution_object(
                inst,
                value,
                &rendered.deploy_items,
                execution.as_ref().map(|(v, _)| v),
                from_secret,
            );
            match &execution {
                Some((current, _))
                    if current.get("spec") == exec.get("spec")
                        && object::annotations(current).get(FROM_SECRET_ANNOTATION)
                            == object::annotations(&exec).get(FROM_SECRET_ANNOTATION) => {}
                Some(_) => tx = tx.update(exec),
                None => {
                    let key = ObjectKey::new(Kind::Execution, ns, name(inst));
                    if store
                        .get(&key)
                        .map_err(|e| {
                            PhaseError::Normal(LsError::new(OP, "GetExecution", e.to_string()))
                        })?
                        .is_some()
                    {
                        // Not among the children: someone else's, e.g. written into the
                        // manifests folder. Creating it would fail (AlreadyExists) each time.
                        tracing::warn!(installation = %format!("{ns}/{}", name(inst)), execution = %key, "the installation's execution name is taken by an execution it does not own");
                        return Err(PhaseError::Normal(LsError::new(
                            OP,
                            "CreateOrUpdateExecution",
                            format!(
                                "execution {ns}/{} exists and is not owned by this installation: remove it or rename one of them",
                                name(inst)
                            ),
                        )));
                    }
                    tx = tx.create(exec)
                }
            }
            s.execution_reference = Some(ObjectReference {
                name: name(inst).to_string(),
                namespace: ns.to_string(),
            });
        }
        // (i) predecessors and imports unchanged meanwhile.
        if self.check_predecessors(inst)? != predecessors {
            return Err(PhaseError::Normal(LsError::new(
                OP,
                "comparePredecessorMaps",
                "some predecessor was changed during fetching the import data",
            )));
        }
        s.imports_hash = Some(hash);
        Ok((Phase::CleanupOrphaned, tx, s))
    }

    /// Landscaper's `GetExternalContext`: the Context named in `spec.context` must exist
    /// (fatal otherwise, as in Landscaper; the deploy items would need it).
    fn check_context(&self, inst: &Installation) -> Result<(), PhaseError> {
        let Some(context) = machine::required_context(inst) else {
            return Ok(());
        };
        let key = ObjectKey::new(Kind::Context, namespace(inst), context);
        match self.context.store.get(&key) {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err(PhaseError::Fatal(machine::missing_context_error(context))),
            Err(e) => Err(PhaseError::Normal(LsError::new(
                "InitPrerequisites",
                "CalculateContext",
                e.to_string(),
            ))),
        }
    }

    /// Two siblings exporting the same DataObject or Target would overwrite each other's
    /// values: a fatal error for both, before any work is done.
    fn check_duplicate_exports(&self, inst: &Installation) -> Result<(), PhaseError> {
        let (data, targets) = (inst.spec.data_exports(), inst.spec.target_exports());
        let no_sibling_exports = inst
            .spec
            .optimization
            .as_ref()
            .and_then(|o| o.has_no_sibling_exports)
            == Some(true);
        if no_sibling_exports || (data.is_empty() && targets.is_empty()) {
            return Ok(());
        }
        let siblings = dataflow::exporters_of_exports(&self.context.store, inst)?;
        match dataflow::duplicate_exports(inst, &siblings) {
            Some(message) => Err(PhaseError::Fatal(LsError::new(
                "init",
                "FetchPredecessors",
                message,
            ))),
            None => Ok(()),
        }
    }

    /// Landscaper's predecessor checks: every sibling whose exports this installation imports
    /// must have finished (else wait) and succeeded (else fail). Returns their job IDs.
    fn check_predecessors(
        &self,
        inst: &Installation,
    ) -> Result<BTreeMap<String, String>, PhaseError> {
        const OP: &str = "init";
        let mut out = BTreeMap::new();
        if inst
            .spec
            .optimization
            .as_ref()
            .and_then(|o| o.has_no_sibling_imports)
            == Some(true)
        {
            return Ok(out);
        }
        // Nothing imported, no predecessors: spares listing the siblings.
        let (data, targets) = dataflow::imported_refs(inst);
        if data.is_empty() && targets.is_empty() {
            return Ok(out);
        }
        let is_root = parent_name(inst).is_none();
        let siblings = dataflow::predecessor_closure(&self.context.store, inst)?;
        if let Some(cycle) = dataflow::predecessor_cycle(inst, &siblings) {
            return Err(PhaseError::Fatal(LsError::new(
                OP,
                "FetchPredecessors",
                format!(
                    "the subinstallations have a cycle: {}",
                    cycle.join(landscaper_templating::blueprint::DEPENDS_ON)
                ),
            )));
        }
        for sibling in siblings {
            if !dataflow::is_successor(&sibling, inst) {
                continue;
            }
            let st = sibling.status.clone().unwrap_or_default();
            if !jobs::is_finished(st.job_id.as_deref(), st.job_id_finished.as_deref())
                || (is_root && machine::has_operation(&sibling, OPERATION_RECONCILE))
            {
                return Err(PhaseError::Normal(LsError::new(
                    OP,
                    "AllPredecessorsFinished",
                    format!("predecessor {} is not finished", name(&sibling)),
                )));
            }
            if st.phase != Some(Phase::Succeeded) {
                return Err(PhaseError::Fatal(LsError::new(
                    OP,
                    "AllPredecessorsSucceeded",
                    format!(
                        "predecessor {} is not succeeded (phase {})",
                        name(&sibling),
                        st.phase.as_ref().map(Phase::as_str).unwrap_or("none")
                    ),
                )));
            }
            out.insert(name(&sibling).to_string(), st.job_id.unwrap_or_default());
        }
        Ok(out)
    }

    /// `Completing`: context cleanup, unchanged imports and spec, exports written.
    async fn phase_completing(
        &self,
        value: &Value,
        inst: &Installation,
        status: &InstallationStatus,
        job_id: &str,
    ) -> Result<(Phase, Transaction, InstallationStatus), PhaseError> {
        const OP: &str = "handlePhaseCompleting";
        let store = &self.context.store;
        let ns = namespace(inst);
        let mut tx = Transaction::new();
        // (a) objects of older jobs in the own scope go.
        for kind in [Kind::DataObject, Kind::Target] {
            let selector =
                dataflow::label_equals(DATA_OBJECT_CONTEXT_LABEL, &dataflow::own_scope(inst));
            let list = store.list(kind, Some(ns), &selector).map_err(|e| {
                PhaseError::Normal(LsError::new(OP, "CleanupContext", e.to_string()))
            })?;
            for o in list.items {
                let labels = object::labels(&o);
                if labels.get(DATA_OBJECT_CONTEXT_LABEL).map(String::as_str)
                    != Some(&dataflow::own_scope(inst))
                {
                    continue;
                }
                if labels
                    .get(DATA_OBJECT_JOB_ID_LABEL)
                    .is_some_and(|j| j != job_id)
                {
                    tx = tx.delete(ObjectKey::new(kind, ns, object::name(&o)), None);
                }
            }
        }
        // (b) imports and spec unchanged.
        let blueprint = dataflow::load_blueprint(inst, self.context.manifests_dir.as_deref())?;
        let values = dataflow::read_import_values(store, inst)?;
        if Some(dataflow::imports_hash(&values)) != status.imports_hash {
            return Err(PhaseError::Fatal(LsError::new(
                OP,
                "CheckImportsHash",
                "imports have changed",
            )));
        }
        if inst.metadata.generation.unwrap_or(0) != status.observed_generation {
            return Err(PhaseError::Fatal(
                LsError::new(
                    OP,
                    "CheckObservedGeneration",
                    "installation spec has been changed",
                )
                .with_code(ERR_FOR_INFO_ONLY),
            ));
        }
        // (c), (d) exports: the templates rendered off the async workers.
        let exports = {
            let (store, inst, blueprint) = (store.clone(), inst.clone(), blueprint.clone());
            render_off_async_workers(OP, move || {
                let bindings = dataflow::construct_blueprint_imports(&inst, &blueprint, &values)?;
                dataflow::construct_exports(&store, &inst, &blueprint, &bindings)
            })
            .await?
        };
        // Export templates may copy imported Secret values: the exports are marked then.
        let from_secret = dataflow::imports_from_secrets(store, inst)?;
        for o in dataflow::export_objects(inst, value, &exports, job_id, from_secret)? {
            let key = ObjectKey::new(
                object::kind_of(&o).map_err(|e| {
                    PhaseError::Fatal(LsError::new(OP, "CreateOrUpdateExports", e.to_string()))
                })?,
                ns,
                object::name(&o),
            );
            if let Some(current) = store.get(&key).map_err(|e| {
                PhaseError::Normal(LsError::new(OP, "CreateOrUpdateExports", e.to_string()))
            })? {
                let owner = object::owner_uids(&current);
                if !owner.is_empty() && !owner.iter().any(|u| u == object::uid(value)) {
                    return Err(PhaseError::Fatal(LsError::new(
                        OP,
                        "CreateOrUpdateExports",
                        format!("{key} is exported by another installation"),
                    )));
                }
            }
            if let Some(w) = upsert(store, o)? {
                tx.writes.push(w);
            }
        }
        Ok((Phase::Succeeded, tx, status.clone()))
    }

    /// Landscaper's `checkIfSiblingImports`: a sibling that imports an export of `inst` and
    /// still exists blocks the deletion (a normal error), or fails it when its own deletion
    /// failed. A successor that is being deleted and itself waits (through siblings being
    /// deleted) for `inst` is ignored: those installations would otherwise wait for each
    /// other forever. A cycle among siblings can never install (Init fails it), so there is
    /// no order of teardown to keep; a successor outside the cycle still blocks.
    fn check_successors(&self, inst: &Installation) -> Result<(), PhaseError> {
        const OP: &str = "CheckSuccessorSibling";
        for sibling in dataflow::importers_of_exports(&self.context.store, inst)? {
            if !dataflow::is_successor(inst, &sibling) {
                continue;
            }
            if machine::is_deleting(&sibling) {
                let waits_for =
                    dataflow::deleting_successor_closure(&self.context.store, &sibling)?;
                if machine::in_deletion_cycle(inst, &sibling, &waits_for) {
                    continue;
                }
            }
            let st = sibling.status.clone().unwrap_or_default();
            if st.phase == Some(Phase::DeleteFailed)
                && jobs::is_finished(st.job_id.as_deref(), st.job_id_finished.as_deref())
                && sibling.metadata.deletion_timestamp.is_some()
            {
                return Err(PhaseError::Fatal(
                    LsError::new(
                        OP,
                        "SiblingDeleteError",
                        format!("deletion of a sibling failed: {}", name(&sibling)),
                    )
                    .with_code(ERR_FOR_INFO_ONLY),
                ));
            }
            return Err(PhaseError::Normal(
                LsError::new(
                    OP,
                    "SiblingImport",
                    format!(
                        "a sibling still imports some of the exports: {}",
                        name(&sibling)
                    ),
                )
                .with_code(ERR_FOR_INFO_ONLY),
            ));
        }
        Ok(())
    }

    /// `InitDelete`: successors first (unless ignored), then the children are deleted.
    fn phase_init_delete(
        &self,
        value: &Value,
        inst: &Installation,
        status: &InstallationStatus,
        job_id: &str,
    ) -> Result<(Phase, Transaction, InstallationStatus), PhaseError> {
        const OP: &str = "handleDeletionPhaseInit";
        let ignore = machine::annotation(inst, DELETE_IGNORE_SUCCESSORS_ANNOTATION) == Some("true")
            || inst
                .spec
                .optimization
                .as_ref()
                .and_then(|o| o.has_no_sibling_exports)
                == Some(true);
        if !ignore {
            self.check_successors(inst)?;
        }
        let without_uninstall =
            machine::annotation(inst, DELETE_WITHOUT_UNINSTALL_ANNOTATION) == Some("true");
        let (subs, execution) = self
            .children(value)
            .map_err(|e| PhaseError::Normal(LsError::new(OP, "ListSubobjects", e.to_string())))?;
        let ns = namespace(inst);
        let mut tx = Transaction::new();
        let mut handle = |mut v: Value, kind: Kind| {
            if without_uninstall {
                jobs::set_annotation(&mut v, DELETE_WITHOUT_UNINSTALL_ANNOTATION, Some("true"));
                tx.writes.push(landscaper_store::Write::Update(v.clone()));
            }
            if object::deletion_timestamp(&v).is_none() {
                tx.writes.push(landscaper_store::Write::Delete {
                    key: ObjectKey::new(kind, ns, object::name(&v)),
                    resource_version: None,
                });
            }
        };
        for (v, _) in subs {
            handle(v, Kind::Installation);
        }
        if let Some((v, _)) = execution {
            handle(v, Kind::Execution);
        }
        let _ = job_id;
        Ok((Phase::TriggerDelete, tx, status.clone()))
    }
}

/// Runs template rendering (blueprints are untrusted input) on the blocking pool, so that a
/// slow template does not stall the other reconciles, the API or the change feed.
async fn render_off_async_workers<T: Send + 'static>(
    op: &str,
    render: impl FnOnce() -> Result<T, PhaseError> + Send + 'static,
) -> Result<T, PhaseError> {
    super::runtime::off_async_workers(render)
        .await
        .unwrap_or_else(|| {
            Err(PhaseError::Normal(LsError::new(
                op,
                "Render",
                "rendering was cancelled: the controllers are stopping",
            )))
        })
}

/// A create of `desired`, or an unconditional update when it exists (keeping the stored
/// object's status); `None` when the stored object equals it already.
fn upsert(
    store: &landscaper_store::Store,
    desired: Value,
) -> Result<Option<landscaper_store::Write>, PhaseError> {
    let key = object::key_of(&desired).map_err(|e| {
        PhaseError::Fatal(LsError::new(
            "CreateOrUpdate",
            "InvalidObject",
            e.to_string(),
        ))
    })?;
    let current = store
        .get(&key)
        .map_err(|e| PhaseError::Normal(LsError::new("CreateOrUpdate", "Store", e.to_string())))?;
    Ok(match current {
        None => Some(landscaper_store::Write::Create(desired)),
        Some(current) => {
            let mut merged = current.clone();
            for (k, v) in desired.as_object().into_iter().flatten() {
                if k == "metadata" {
                    let meta = object::metadata_mut(&mut merged);
                    for (mk, mv) in v.as_object().into_iter().flatten() {
                        meta.insert(mk.clone(), mv.clone());
                    }
                } else {
                    merged[k] = v.clone();
                }
            }
            if merged == current {
                None
            } else {
                object::metadata_mut(&mut merged).remove("resourceVersion");
                Some(landscaper_store::Write::Update(merged))
            }
        }
    })
}

/// The subinstallation object for a template (Landscaper's `createOrUpdateNewInstallation`).
fn subinstallation_object(
    parent: &Installation,
    parent_value: &Value,
    template: &landscaper_templating::blueprint::InstallationTemplate,
    current: Option<&Value>,
    from_secret: bool,
) -> Result<Value, String> {
    let blueprint = if let Some(fs) = &template.blueprint.filesystem {
        json!({"inline": {"filesystem": fs}})
    } else if !template.blueprint.reference.is_empty() {
        return Err(format!(
            "subinstallation {:?}: blueprint.ref {:?} needs a component registry, which the appliance does not have",
            template.name, template.blueprint.reference
        ));
    } else {
        return Err(format!("subinstallation {:?}: no blueprint", template.name));
    };
    let mut spec = serde_json::Map::new();
    if let Some(c) = &parent.spec.context {
        spec.insert("context".into(), json!(c));
    }
    if let Some(cd) = &parent.spec.component_descriptor {
        spec.insert(
            "componentDescriptor".into(),
            serde_json::to_value(cd).unwrap_or_default(),
        );
    }
    spec.insert("blueprint".into(), blueprint);
    let imports = serde_json::to_value(&template.imports).unwrap_or_default();
    if imports.as_object().is_some_and(|m| !m.is_empty()) {
        spec.insert("imports".into(), imports);
    }
    if let Some(m) = &template.import_data_mappings {
        spec.insert(
            "importDataMappings".into(),
            serde_json::to_value(m).unwrap_or_default(),
        );
    }
    let exports = serde_json::to_value(&template.exports).unwrap_or_default();
    if exports.as_object().is_some_and(|m| !m.is_empty()) {
        spec.insert("exports".into(), exports);
    }
    if let Some(m) = &template.export_data_mappings {
        spec.insert(
            "exportDataMappings".into(),
            serde_json::to_value(m).unwrap_or_default(),
        );
    }
    if let Some(o) = &template.optimization {
        spec.insert(
            "optimization".into(),
            serde_json::to_value(o).unwrap_or_default(),
        );
    }
    let mut v = match current {
        Some(c) => c.clone(),
        None => json!({
            "apiVersion": Kind::Installation.api_version(),
            "kind": "Installation",
            "metadata": {
                "generateName": format!("{}-", truncate(&template.name, 52)),
                "namespace": namespace(parent),
                "finalizers": [LANDSCAPER_FINALIZER],
            },
        }),
    };
    let meta = object::metadata_mut(&mut v);
    meta.insert("labels".into(), json!({ENCOMPASSED_BY_LABEL: name(parent)}));
    let mut annotations = serde_json::Map::new();
    // Requests in flight (interrupt, delete-without-uninstall) stay.
    if let Some(cur) = current
        .and_then(|c| c.pointer("/metadata/annotations"))
        .and_then(Value::as_object)
    {
        for k in [OPERATION_ANNOTATION, DELETE_WITHOUT_UNINSTALL_ANNOTATION] {
            if let Some(x) = cur.get(k) {
                annotations.insert(k.into(), x.clone());
            }
        }
    }
    annotations.insert(SUBINSTALLATION_NAME_ANNOTATION.into(), json!(template.name));
    if from_secret {
        // Its data mappings are rendered from the parent's imports, Secret values included.
        annotations.insert(FROM_SECRET_ANNOTATION.into(), json!("true"));
    }
    meta.insert("annotations".into(), Value::Object(annotations));
    meta.insert(
        "ownerReferences".into(),
        json!([jobs::owner_reference(Kind::Installation, parent_value)]),
    );
    v["spec"] = Value::Object(spec);
    Ok(v)
}

fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// The Execution of an installation (Landscaper's `ExecutionOperation.Ensure`).
fn execution_object(
    inst: &Installation,
    inst_value: &Value,
    items: &[landscaper_store::model::DeployItemTemplate],
    current: Option<&Value>,
    from_secret: bool,
) -> Value {
    let mut v = match current {
        Some(c) => c.clone(),
        None => json!({
            "apiVersion": Kind::Execution.api_version(),
            "kind": "Execution",
            "metadata": {
                "name": name(inst),
                "namespace": namespace(inst),
                "finalizers": [LANDSCAPER_FINALIZER],
            },
        }),
    };
    object::metadata_mut(&mut v).insert(
        "ownerReferences".into(),
        json!([jobs::owner_reference(Kind::Installation, inst_value)]),
    );
    // The deploy item configs are rendered from the imports, Secret values included; the
    // execution controller passes the mark on to the deploy items and the export.
    jobs::set_annotation(
        &mut v,
        FROM_SECRET_ANNOTATION,
        from_secret.then_some("true"),
    );
    let mut spec = serde_json::Map::new();
    if let Some(c) = &inst.spec.context {
        spec.insert("context".into(), json!(c));
    }
    spec.insert(
        "deployItems".into(),
        serde_json::to_value(items).unwrap_or_default(),
    );
    v["spec"] = Value::Object(spec);
    v
}

impl Reconciler for InstallationReconciler {
    const KIND: Kind = Kind::Installation;

    async fn record_failure(&self, key: &ObjectKey, error: &LsError) -> Result<(), ReconcileError> {
        super::jobs::record_last_error(&self.context, key, error).await
    }

    async fn reconcile(&self, key: &ObjectKey) -> Result<Outcome, ReconcileError> {
        // Steps that need no waiting follow each other at once, as in Landscaper's
        // fall-through from phase to phase; each commits on its own.
        let mut deferred: Option<Value> = None;
        for _ in 0..24 {
            let dirty = deferred.is_some();
            let value = match deferred.take() {
                Some(v) => v,
                None => match self.context.store.get(key)? {
                    Some(v) => v,
                    None => {
                        self.waits.forget(key);
                        return Ok(Outcome::Done);
                    }
                },
            };
            let inst: Installation = match from_value(&value) {
                Ok(i) => i,
                Err(e) => {
                    tracing::warn!(%key, error = %e, "cannot read the installation");
                    return Ok(Outcome::Done);
                }
            };
            match self.step(&value, &inst, dirty).await? {
                Next::Continue => continue,
                Next::Defer(v) => deferred = Some(v),
                Next::Stop(o) => return Ok(o),
            }
        }
        Ok(Outcome::RequeueAfter(Duration::from_millis(1)))
    }
}
