//! The installation controller: Landscaper's reconcile jobs and installation phases
//! (`../seeds/000`, LANDSCAPER-FEATURES §B, §E, §F). [`InstallationReconciler`] loads a
//! [`View`] of everything a step reads (what [`machine::plan`] asks for: children, siblings,
//! the Init and Completing inputs with the rendered templates), the pure [`machine::step`]
//! decides, and all writes of a step commit in one transaction. The data work (scopes, sibling
//! graph, import resolution, exports, blueprint source) is in [`dataflow`].

pub mod auto;
pub mod dataflow;
pub mod machine;
#[cfg(test)]
mod sequences;
#[cfg(test)]
mod tests;
pub mod workflow;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use landscaper_store::model::constants::*;
use landscaper_store::model::{Execution, Installation, from_value};
use landscaper_store::{Kind, ObjectKey, ObjectSource, Transaction, object};
use serde_json::Value;

use self::dataflow::{name, namespace};
use self::machine::{Children, CompletingView, Failure, InitView, Needs, Next, Now, View};
use super::ControllerContext;
use super::jobs::{self, WaitIntervals};
use super::lserror::{LsError, PhaseError};
use super::runtime::{Outcome, ReconcileError, Reconciler};
use crate::components::ComponentResolver;

pub struct InstallationReconciler {
    context: ControllerContext,
    waits: WaitIntervals,
}

impl InstallationReconciler {
    pub fn new(context: ControllerContext) -> InstallationReconciler {
        let waits = WaitIntervals::new(
            context.config.wait_interval_min,
            context.config.wait_interval_max,
        );
        InstallationReconciler { context, waits }
    }
}

/// Reads what the next step of `inst` needs.
pub async fn load_view<S>(
    source: &S,
    manifests_dir: Option<&std::path::Path>,
    components: Option<&Arc<ComponentResolver>>,
    value: &Value,
    inst: &Installation,
) -> Result<View, ReconcileError>
where
    S: ObjectSource + Clone + Send + Sync + 'static,
{
    let store = source;
    let plan = machine::plan(inst);
    let mut view = View::default();
    if plan.importers {
        view.importers = Some(dataflow::importers_of_exports(store, inst));
    }
    match &plan.needs {
        Needs::Nothing | Needs::Completing => {}
        Needs::Dependents(names) => {
            for n in names {
                let key = ObjectKey::new(Kind::Installation, namespace(inst), n);
                view.dependents.push((n.clone(), store.get(&key)?));
            }
        }
        Needs::Children => {
            view.children = Some(Ok(children(store, value)?));
        }
        Needs::Init | Needs::InitDelete => {
            view.children = Some(children(store, value).map_err(|e| e.to_string()));
        }
    }
    match plan.needs {
        Needs::Init => {
            let owns_execution = match &view.children {
                Some(Ok(c)) => c.execution.is_some(),
                _ => true,
            };
            view.init = Some(
                load_init(
                    source,
                    manifests_dir,
                    components,
                    value,
                    inst,
                    owns_execution,
                )
                .await,
            )
        }
        Needs::Completing => {
            view.completing =
                Some(load_completing(source, manifests_dir, components, value, inst).await)
        }
        Needs::InitDelete => {
            if let Some(Ok(importers)) = &view.importers {
                for sibling in importers {
                    if dataflow::is_successor(inst, sibling) && machine::is_deleting(sibling) {
                        view.deletion_closures.insert(
                            name(sibling).to_string(),
                            dataflow::deleting_successor_closure(store, sibling),
                        );
                    }
                }
            }
        }
        _ => {}
    }
    Ok(view)
}

/// `Init`'s inputs in its order, up to the first read or check that fails.
async fn load_init<S>(
    source: &S,
    manifests_dir: Option<&std::path::Path>,
    components: Option<&Arc<ComponentResolver>>,
    value: &Value,
    inst: &Installation,
    owns_execution: bool,
) -> InitView
where
    S: ObjectSource + Clone + Send + Sync + 'static,
{
    const OP: &str = "handlePhaseInit";
    let store = source;
    let ns = namespace(inst);
    let mut v = InitView::default();
    let scope = dataflow::own_scope(inst);
    let own = list_both(
        store,
        ns,
        &dataflow::label_equals(DATA_OBJECT_SOURCE_LABEL, &scope),
    )
    .map_err(|e| PhaseError::Normal(LsError::new(OP, "CleanupExports", e.to_string())));
    if !keep(&mut v.own_exports, own) {
        return v;
    }
    let context = match machine::required_context(inst) {
        None => Ok(true),
        Some(c) => store
            .get(&ObjectKey::new(Kind::Context, ns, c))
            .map(|o| o.is_some())
            .map_err(|e| {
                PhaseError::Normal(LsError::new(
                    "InitPrerequisites",
                    "CalculateContext",
                    e.to_string(),
                ))
            }),
    };
    let context = context.and_then(|exists| machine::check_context(inst, exists).map(|_| exists));
    if !keep(&mut v.context_exists, context) {
        return v;
    }
    let blueprint = dataflow::resolve_blueprint(store, inst, manifests_dir, components)
        .await
        .map(|(blueprint, resolved)| {
            v.components = resolved;
            blueprint
        });
    if !keep(&mut v.blueprint, blueprint) {
        return v;
    }
    if machine::needs_duplicate_check(inst) {
        let exporters = dataflow::exporters_of_exports(store, inst).and_then(|s| {
            machine::check_duplicate_exports(inst, &s)?;
            Ok(s)
        });
        if !keep(&mut v.exporters, exporters) {
            return v;
        }
    }
    if machine::needs_predecessor_check(inst) {
        let predecessors = dataflow::predecessor_closure(store, inst).and_then(|s| {
            machine::check_predecessors(inst, &s)?;
            Ok(s)
        });
        if !keep(&mut v.predecessors, predecessors) {
            return v;
        }
    }
    let values = dataflow::read_import_values(store, inst);
    let Some(values) = kept(&mut v.values, values) else {
        return v;
    };
    let Some(Ok(blueprint)) = &v.blueprint else {
        return v;
    };
    let rendered = {
        let (inst, blueprint) = (inst.clone(), blueprint.clone());
        let components = v.components.clone();
        render_off_async_workers(OP, move || {
            let bindings = dataflow::construct_blueprint_imports(
                &inst,
                &blueprint,
                &values,
                components.as_ref(),
            )?;
            let mut rendered = dataflow::render_subobjects(&inst, &blueprint, &bindings)?;
            dataflow::resolve_component_blueprints(&mut rendered, components.as_ref())?;
            Ok((bindings, rendered))
        })
        .await
    };
    if !keep(&mut v.rendered, rendered) {
        return v;
    }
    let from_secret = dataflow::imports_from_secrets(store, inst);
    let Some(from_secret) = kept(&mut v.from_secret, from_secret) else {
        return v;
    };
    let (Some(Ok(blueprint)), Some(Ok((bindings, _)))) = (&v.blueprint, &v.rendered) else {
        return v;
    };
    let job_id = job_id(inst);
    let objects = dataflow::import_objects(inst, value, blueprint, bindings, &job_id, from_secret);
    let current = read_keys(store, &machine::import_object_keys(&objects))
        .map_err(|e| PhaseError::Normal(LsError::new("CreateOrUpdate", "Store", e.to_string())));
    if !keep(&mut v.current, current) {
        return v;
    }
    if !owns_execution {
        let key = ObjectKey::new(Kind::Execution, ns, name(inst));
        let taken = store
            .get(&key)
            .map(|o| o.is_some())
            .map_err(|e| PhaseError::Normal(LsError::new(OP, "GetExecution", e.to_string())));
        if !keep(&mut v.execution_taken, taken) {
            return v;
        }
    }
    if machine::needs_predecessor_check(inst) {
        v.predecessors_after = Some(dataflow::predecessor_closure(store, inst));
    }
    v
}

/// `Completing`'s inputs in its order, up to the first read or check that fails.
async fn load_completing<S>(
    source: &S,
    manifests_dir: Option<&std::path::Path>,
    components: Option<&Arc<ComponentResolver>>,
    value: &Value,
    inst: &Installation,
) -> CompletingView
where
    S: ObjectSource + Clone + Send + Sync + 'static,
{
    const OP: &str = "handlePhaseCompleting";
    let store = source;
    let ns = namespace(inst);
    let mut v = CompletingView::default();
    let scope = dataflow::own_scope(inst);
    let objects = list_both(
        store,
        ns,
        &dataflow::label_equals(DATA_OBJECT_CONTEXT_LABEL, &scope),
    )
    .map_err(|e| PhaseError::Normal(LsError::new(OP, "CleanupContext", e.to_string())));
    if !keep(&mut v.context_objects, objects) {
        return v;
    }
    let blueprint = dataflow::resolve_blueprint(store, inst, manifests_dir, components)
        .await
        .map(|(blueprint, resolved)| {
            v.components = resolved;
            blueprint
        });
    let Some(blueprint) = kept(&mut v.blueprint, blueprint) else {
        return v;
    };
    let values = dataflow::read_import_values(store, inst).and_then(|values| {
        let status = inst.status.clone().unwrap_or_default();
        machine::check_unchanged(inst, &status, &values)?;
        Ok(values)
    });
    let Some(values) = kept(&mut v.values, values) else {
        return v;
    };
    let exports = {
        let (store, inst) = (store.clone(), inst.clone());
        let components = v.components.clone();
        render_off_async_workers(OP, move || {
            let bindings = dataflow::construct_blueprint_imports(
                &inst,
                &blueprint,
                &values,
                components.as_ref(),
            )?;
            dataflow::construct_exports(&store, &inst, &blueprint, &bindings)
        })
        .await
    };
    let Some(exports) = kept(&mut v.exports, exports) else {
        return v;
    };
    let from_secret = dataflow::imports_from_secrets(store, inst);
    let Some(from_secret) = kept(&mut v.from_secret, from_secret) else {
        return v;
    };
    let objects = match dataflow::export_objects(inst, value, &exports, &job_id(inst), from_secret)
    {
        Ok(o) => o,
        // The step reports it.
        Err(_) => return v,
    };
    let current = read_keys(store, &machine::import_object_keys(&objects))
        .map_err(|e| PhaseError::Normal(LsError::new(OP, "CreateOrUpdateExports", e.to_string())));
    v.current = Some(current);
    v
}

/// Stores `result` into `field`; whether the loading goes on.
fn keep<T>(field: &mut Option<Result<T, PhaseError>>, result: Result<T, PhaseError>) -> bool {
    let ok = result.is_ok();
    *field = Some(result);
    ok
}

/// Stores `result` into `field` and returns a copy of the value when it is one.
fn kept<T: Clone>(
    field: &mut Option<Result<T, PhaseError>>,
    result: Result<T, PhaseError>,
) -> Option<T> {
    let value = result.as_ref().ok().cloned();
    *field = Some(result);
    value
}

fn job_id(inst: &Installation) -> String {
    inst.status
        .as_ref()
        .and_then(|s| s.job_id.clone())
        .unwrap_or_default()
}

/// The DataObjects and Targets of a namespace that match `selector`.
fn list_both(
    source: &(impl ObjectSource + ?Sized),
    ns: &str,
    selector: &landscaper_store::LabelSelector,
) -> Result<Vec<Value>, landscaper_store::StoreError> {
    let mut out = source.list(Kind::DataObject, Some(ns), selector)?;
    out.extend(source.list(Kind::Target, Some(ns), selector)?);
    Ok(out)
}

/// The stored objects under `keys`.
fn read_keys(
    source: &(impl ObjectSource + ?Sized),
    keys: &[ObjectKey],
) -> Result<BTreeMap<ObjectKey, Value>, landscaper_store::StoreError> {
    let mut out = BTreeMap::new();
    for key in keys {
        if let Some(o) = source.get(key)? {
            out.insert(key.clone(), o);
        }
    }
    Ok(out)
}

/// The subinstallations (sorted by name) and the execution owned by the installation `value`.
pub fn children(
    source: &(impl ObjectSource + ?Sized),
    value: &Value,
) -> Result<Children, landscaper_store::StoreError> {
    let mut out = Children::default();
    for child in source.children(object::uid(value))? {
        match object::kind_of(&child) {
            Ok(Kind::Installation) => {
                if let Ok(i) = from_value::<Installation>(&child) {
                    out.subs.push((child, i));
                }
            }
            Ok(Kind::Execution) => {
                if let Ok(e) = from_value::<Execution>(&child) {
                    out.execution = Some((child, e));
                }
            }
            _ => {}
        }
    }
    out.subs
        .sort_by(|a, b| object::name(&a.0).cmp(object::name(&b.0)));
    Ok(out)
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

impl From<Failure> for ReconcileError {
    fn from(failure: Failure) -> Self {
        match failure {
            Failure::IncompleteView(what) => ReconcileError::IncompleteView(what),
            Failure::Read(error) => ReconcileError::Step(error),
        }
    }
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
                        if let Some(c) = &self.context.components {
                            c.unpin(&dataflow::pin_owner_of(&key.namespace, &key.name));
                        }
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
            // One consistent read of everything the step needs.
            let snapshot = self.context.store.snapshot()?;
            let view = load_view(
                &snapshot,
                self.context.manifests_dir.as_deref(),
                self.context.components.as_ref(),
                &value,
                &inst,
            )
            .await?;
            // No read stays open across the commit.
            drop(snapshot);
            let instant = self.context.clock.now();
            let now = Now {
                time: landscaper_store::clock::format_time(instant),
                instant,
                new_job_id: jobs::new_job_id(),
                ready_timeout: Some(self.context.config.progressing_timeout),
            };
            let step = machine::step(&value, &inst, dirty, &view, &now);
            if step.forget_waits {
                self.waits.forget(key);
            }
            // A wait interval grows per normal error of a phase, committed or not.
            let retry = match &step.next {
                Next::Retry(phase) => Some(self.waits.next(key, phase)),
                _ => None,
            };
            if !step.writes.is_empty() {
                let mut tx = Transaction::new();
                tx.writes = step.writes;
                self.context.store.commit(tx).await?;
            }
            if let Some(queues) = self.context.queues() {
                for key in step.wake {
                    queues.installations.add(key);
                }
            }
            match step.next {
                Next::Continue => continue,
                Next::Defer(v) => deferred = Some(v),
                Next::Done => return Ok(Outcome::Done),
                Next::RequeueAfter(d) => return Ok(Outcome::RequeueAfter(d)),
                Next::Retry(_) => {
                    return Ok(Outcome::RequeueAfter(
                        retry.unwrap_or(Duration::from_millis(1)),
                    ));
                }
                // Such a step writes nothing.
                Next::Fail(failure) => return Err(failure.into()),
            }
        }
        Ok(Outcome::RequeueAfter(Duration::from_millis(1)))
    }
}
