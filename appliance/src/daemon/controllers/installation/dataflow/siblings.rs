//! The sibling graph: which installations of a scope import or export what another one
//! exports or imports (predecessors, successors, duplicate exporters, cycles).

use landscaper_store::model::{Installation, from_value};
use landscaper_store::{FlowDirection, FlowKind, FlowRef, Kind, ObjectKey, ObjectSource};
use landscaper_templating::blueprint::find_cycle;
use std::collections::BTreeSet;

use super::*;
use crate::daemon::controllers::lserror::PhaseError;

/// Names (in the parent scope) of the DataObjects and Targets an installation imports.
pub fn imported_refs(inst: &Installation) -> (Vec<String>, Vec<String>) {
    let data = inst
        .spec
        .data_imports()
        .iter()
        .filter_map(|i| i.data_ref.clone())
        .collect();
    let mut targets = Vec::new();
    for t in inst.spec.target_imports() {
        if let Some(x) = &t.target {
            targets.push(x.clone());
        }
        targets.extend(t.targets.iter().flatten().cloned());
        targets.extend(t.target_map.iter().flat_map(|m| m.values().cloned()));
        if let Some(x) = &t.target_list_ref {
            targets.push(x.clone());
        }
        if let Some(x) = &t.target_map_ref {
            targets.push(x.clone());
        }
    }
    (data, targets)
}

/// The DataObject and Target references the installation exports.
pub fn exported_refs(inst: &Installation) -> (Vec<String>, Vec<String>) {
    (
        inst.spec
            .data_exports()
            .iter()
            .map(|e| e.data_ref.clone())
            .collect(),
        inst.spec
            .target_exports()
            .iter()
            .map(|e| e.target.clone())
            .collect(),
    )
}

/// Whether `successor` imports something `inst` exports (Landscaper's `IsSuccessor`).
pub fn is_successor(inst: &Installation, successor: &Installation) -> bool {
    let (data, targets) = imported_refs(successor);
    inst.spec
        .data_exports()
        .iter()
        .any(|e| data.contains(&e.data_ref))
        || inst
            .spec
            .target_exports()
            .iter()
            .any(|e| targets.contains(&e.target))
}

/// The exports of `inst` that a sibling exports too, as Landscaper's `fetchPredecessors` words
/// it (`None` when there are none). Siblings being deleted are left out: they give up their
/// exports.
pub fn duplicate_exports(inst: &Installation, siblings: &[Installation]) -> Option<String> {
    let others = |same: &dyn Fn(&Installation) -> bool| -> Vec<String> {
        let mut names: Vec<String> = siblings
            .iter()
            .filter(|s| name(s) != name(inst) && s.metadata.deletion_timestamp.is_none())
            .filter(|s| same(s))
            .map(|s| name(s).to_string())
            .collect();
        if !names.is_empty() {
            names.push(name(inst).to_string());
            names.sort();
        }
        names
    };
    let mut data = Vec::new();
    for e in inst.spec.data_exports() {
        let by = others(&|s| {
            s.spec
                .data_exports()
                .iter()
                .any(|o| o.data_ref == e.data_ref)
        });
        if !by.is_empty() {
            data.push(format!(
                "\n    '{}' is exported by [{}]",
                e.data_ref,
                by.join(", ")
            ));
        }
    }
    let mut targets = Vec::new();
    for e in inst.spec.target_exports() {
        let by = others(&|s| s.spec.target_exports().iter().any(|o| o.target == e.target));
        if !by.is_empty() {
            targets.push(format!(
                "\n    '{}' is exported by [{}]",
                e.target,
                by.join(", ")
            ));
        }
    }
    if data.is_empty() && targets.is_empty() {
        return None;
    }
    let mut msg =
        String::from("the following exports are exported by multiple nested installations:");
    if !data.is_empty() {
        msg.push_str("\n  data exports:");
        msg.push_str(&data.concat());
    }
    if !targets.is_empty() {
        msg.push_str("\n  target exports:");
        msg.push_str(&targets.concat());
    }
    Some(msg)
}

/// A cycle of predecessors reachable from `inst` among its siblings (by name, the first name
/// repeated at the end), as Landscaper's `FetchPredecessors` rejects it.
pub fn predecessor_cycle(inst: &Installation, siblings: &[Installation]) -> Option<Vec<String>> {
    let all: Vec<&Installation> = std::iter::once(inst).chain(siblings.iter()).collect();
    let predecessors: Vec<std::collections::BTreeSet<usize>> = all
        .iter()
        .map(|i| {
            all.iter()
                .enumerate()
                .filter(|(_, p)| name(p) != name(i) && is_successor(p, i))
                .map(|(n, _)| n)
                .collect()
        })
        .collect();
    // Only cycles this installation is part of or waits on matter: search from it alone.
    find_cycle(&predecessors, [0])
        .map(|c| c.into_iter().map(|n| name(all[n]).to_string()).collect())
}

/// The other installations of `inst`'s scope (same namespace and parent) that import or
/// export (`direction`) any of the given DataObject and Target references, found through the
/// store's data-flow index and read fresh from the store. Scanning every sibling instead made
/// n root installations cost n² reads.
pub fn siblings_by_flow(
    store: &(impl ObjectSource + ?Sized),
    inst: &Installation,
    direction: FlowDirection,
    data: &[String],
    targets: &[String],
) -> Result<Vec<Installation>, PhaseError> {
    const OP: &str = "FetchSiblings";
    let (ns, parent) = (namespace(inst), parent_name(inst));
    let mut names = BTreeSet::new();
    let refs = data
        .iter()
        .map(|r| (FlowKind::Data, r))
        .chain(targets.iter().map(|r| (FlowKind::Target, r)));
    for (kind, reference) in refs {
        let flow = FlowRef {
            direction,
            kind,
            reference,
        };
        names.extend(
            store
                .installations_by_flow(ns, parent, flow)
                .map_err(|e| store_error(OP, e))?,
        );
    }
    names.remove(name(inst));
    let mut out = Vec::new();
    for n in names {
        let Some(value) = store
            .get(&ObjectKey::new(Kind::Installation, ns, &n))
            .map_err(|e| store_error(OP, e))?
        else {
            continue;
        };
        if let Ok(sibling) = from_value::<Installation>(&value)
            && parent_name(&sibling) == parent
        {
            out.push(sibling);
        }
    }
    Ok(out)
}

/// Siblings that export something `inst` imports: its candidate predecessors.
pub fn exporters_of_imports(
    store: &(impl ObjectSource + ?Sized),
    inst: &Installation,
) -> Result<Vec<Installation>, PhaseError> {
    let (data, targets) = imported_refs(inst);
    siblings_by_flow(store, inst, FlowDirection::Export, &data, &targets)
}

/// Siblings that import something `inst` exports: its candidate successors.
pub fn importers_of_exports(
    store: &(impl ObjectSource + ?Sized),
    inst: &Installation,
) -> Result<Vec<Installation>, PhaseError> {
    let (data, targets) = exported_refs(inst);
    siblings_by_flow(store, inst, FlowDirection::Import, &data, &targets)
}

/// Siblings that export something `inst` exports too.
pub fn exporters_of_exports(
    store: &(impl ObjectSource + ?Sized),
    inst: &Installation,
) -> Result<Vec<Installation>, PhaseError> {
    let (data, targets) = exported_refs(inst);
    siblings_by_flow(store, inst, FlowDirection::Export, &data, &targets)
}

/// The siblings `inst` transitively waits for (predecessors, their predecessors, ...): all
/// a predecessor cycle through or ahead of `inst` can consist of.
pub fn predecessor_closure(
    store: &(impl ObjectSource + ?Sized),
    inst: &Installation,
) -> Result<Vec<Installation>, PhaseError> {
    let mut seen = BTreeSet::from([name(inst).to_string()]);
    let mut out: Vec<Installation> = Vec::new();
    let mut next = 0;
    let mut frontier = exporters_of_imports(store, inst)?;
    loop {
        for candidate in frontier {
            if seen.insert(name(&candidate).to_string()) {
                out.push(candidate);
            }
        }
        let Some(current) = out.get(next) else {
            return Ok(out);
        };
        next += 1;
        frontier = exporters_of_imports(store, current)?;
    }
}

/// The siblings being deleted that `from` transitively waits for during its own deletion
/// (successors importing its exports, their successors, ...), stopping at siblings that are
/// not being deleted: all a deletion wait cycle through `from` can consist of.
pub fn deleting_successor_closure(
    store: &(impl ObjectSource + ?Sized),
    from: &Installation,
) -> Result<Vec<Installation>, PhaseError> {
    let mut seen = BTreeSet::from([name(from).to_string()]);
    let mut out: Vec<Installation> = Vec::new();
    let mut next = 0;
    let mut frontier = importers_of_exports(store, from)?;
    loop {
        for candidate in frontier {
            if candidate.metadata.deletion_timestamp.is_some()
                && seen.insert(name(&candidate).to_string())
            {
                out.push(candidate);
            }
        }
        let Some(current) = out.get(next) else {
            return Ok(out);
        };
        next += 1;
        frontier = importers_of_exports(store, current)?;
    }
}
