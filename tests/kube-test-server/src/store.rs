//! The in-memory object store: Kubernetes write semantics (create, update, patch, delete with
//! finalizers and garbage collection), the global resourceVersion and the event history
//! watches replay.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use crate::error::{ApiError, Cause};
use crate::object::{self, meta_mut};
use crate::patching::{self, PatchKind};
use crate::resources::{Registry, ResourceType};
use crate::selectors::{FieldSelector, LabelSelector};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, as watches see it.
#[derive(Debug, Clone)]
pub struct Event {
    pub rv: u64,
    pub kind: EventType,
    pub group: String,
    pub plural: String,
    pub namespace: String,
    /// The new state (the last state for deletions).
    pub object: Value,
    /// The state before a modification (lets selector watches turn it into ADDED/DELETED).
    pub old: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    pub group: String,
    pub plural: String,
    pub namespace: String,
    pub name: String,
}

impl Key {
    pub fn new(rt: &ResourceType, namespace: &str, name: &str) -> Self {
        Key {
            group: rt.group.clone(),
            plural: rt.plural.clone(),
            namespace: if rt.namespaced {
                namespace.to_string()
            } else {
                String::new()
            },
            name: name.to_string(),
        }
    }
}

/// Who writes, and whether for real.
#[derive(Debug, Clone)]
pub struct WriteCtx {
    pub manager: String,
    pub dry_run: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Propagation {
    #[default]
    Background,
    Foreground,
    Orphan,
}

#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    pub propagation: Option<Propagation>,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
    pub dry_run: bool,
}

/// What a delete did.
#[derive(Debug, Clone)]
pub struct DeleteOutcome {
    pub object: Value,
    /// Removed now (false: finalizers or a terminating namespace keep it for a while).
    pub removed: bool,
}

/// The objects and the position a watch starts from.
pub struct WatchSnapshot {
    /// Current objects (for a watch without resourceVersion).
    pub initial: Vec<Value>,
    /// Events after the requested resourceVersion.
    pub replay: Vec<Arc<Event>>,
    pub rv: u64,
    pub receiver: broadcast::Receiver<Arc<Event>>,
}

struct Inner {
    registry: Registry,
    objects: BTreeMap<Key, Value>,
    rv: u64,
    history: VecDeque<Arc<Event>>,
    history_capacity: usize,
    /// Events up to this resourceVersion are gone from the history.
    compacted: u64,
    /// Uids of removed objects: their dependents are garbage.
    deleted_uids: HashSet<String>,
    next_cluster_ip: u32,
}

pub struct Store {
    inner: Mutex<Inner>,
    events: broadcast::Sender<Arc<Event>>,
    generated: AtomicU64,
}

const DEFAULT_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];
const FOREGROUND: &str = "foregroundDeletion";
const ORPHAN: &str = "orphan";

fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label)
}

/// Checks a name like kube's per-kind validation: namespaces are DNS labels, RBAC objects path
/// segments, everything else DNS subdomains.
fn name_problem(rt: &ResourceType, name: &str) -> Option<String> {
    if rt.plural == "namespaces" {
        return (!is_dns_label(name)).then(|| {
            format!(
                "Invalid value: {name:?}: a lowercase RFC 1123 label must consist of lower case \
                 alphanumeric characters or '-', and must start and end with an alphanumeric \
                 character (e.g. 'my-name',  or '123-abc', regex used for validation is \
                 '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            )
        });
    }
    if rt.group == "rbac.authorization.k8s.io" {
        return (name == "." || name == ".." || name.contains('/') || name.contains('%'))
            .then(|| format!("Invalid value: {name:?}: may not contain '/' or '%'"));
    }
    (!is_dns_subdomain(name)).then(|| {
        format!(
            "Invalid value: {name:?}: a lowercase RFC 1123 subdomain must consist of lower case \
             alphanumeric characters, '-' or '.', and must start and end with an alphanumeric \
             character (e.g. 'example.com', regex used for validation is \
             '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        )
    })
}

fn lock(m: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    // A panic elsewhere must not wedge the server: the data is still usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Sets `apiVersion`/`kind` for the version the client asked for (CRD versions share storage).
pub fn present(rt: &ResourceType, mut obj: Value) -> Value {
    if let Some(m) = obj.as_object_mut() {
        m.insert("apiVersion".into(), json!(rt.api_version()));
        m.insert("kind".into(), json!(rt.kind));
    }
    obj
}

impl Store {
    pub fn new(history_capacity: usize) -> Self {
        let (events, _) = broadcast::channel(8192);
        let store = Store {
            inner: Mutex::new(Inner {
                registry: Registry::default(),
                objects: BTreeMap::new(),
                rv: 0,
                history: VecDeque::new(),
                history_capacity: history_capacity.max(1),
                compacted: 0,
                deleted_uids: HashSet::new(),
                next_cluster_ip: 1,
            }),
            events,
            generated: AtomicU64::new(0),
        };
        let ctx = WriteCtx {
            manager: "kube-apiserver".into(),
            dry_run: false,
        };
        for ns in DEFAULT_NAMESPACES {
            let namespace =
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            let rt = store.resolve("", "v1", "namespaces");
            if let Some(rt) = rt {
                // Cannot fail: the names are valid and the store is empty.
                let _ = store.create(&rt, "", namespace, &ctx);
            }
        }
        store
    }

    pub fn registry(&self) -> Registry {
        lock(&self.inner).registry.clone()
    }

    pub fn resolve(&self, group: &str, version: &str, plural: &str) -> Option<ResourceType> {
        lock(&self.inner)
            .registry
            .find(group, version, plural)
            .cloned()
    }

    pub fn lookup(&self, api_version: &str, name: &str) -> Option<ResourceType> {
        lock(&self.inner)
            .registry
            .lookup(api_version, name)
            .cloned()
    }

    pub fn current_rv(&self) -> u64 {
        lock(&self.inner).rv
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.events.subscribe()
    }

    /// Drops the event history: watches from any earlier resourceVersion get 410 Gone.
    pub fn compact(&self) {
        let mut inner = lock(&self.inner);
        inner.history.clear();
        inner.compacted = inner.rv;
    }

    pub fn get(&self, rt: &ResourceType, namespace: &str, name: &str) -> Result<Value, ApiError> {
        let inner = lock(&self.inner);
        inner
            .objects
            .get(&Key::new(rt, namespace, name))
            .cloned()
            .map(|o| present(rt, o))
            .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))
    }

    pub fn list(
        &self,
        rt: &ResourceType,
        namespace: Option<&str>,
        labels: &LabelSelector,
        fields: &FieldSelector,
    ) -> (Vec<Value>, u64) {
        let inner = lock(&self.inner);
        (inner.list(rt, namespace, labels, fields), inner.rv)
    }

    /// Every object of a resource (all namespaces), for the simulated controllers.
    pub fn all_of(&self, group: &str, plural: &str) -> Vec<Value> {
        let inner = lock(&self.inner);
        inner
            .objects
            .iter()
            .filter(|(k, _)| k.group == group && k.plural == plural)
            .map(|(_, v)| v.clone())
            .collect()
    }

    pub fn watch_snapshot(
        &self,
        rt: &ResourceType,
        namespace: Option<&str>,
        after: Option<u64>,
    ) -> Result<WatchSnapshot, ApiError> {
        let inner = lock(&self.inner);
        // Subscribing under the lock: no event can slip between snapshot and stream.
        let receiver = self.events.subscribe();
        match after {
            None => Ok(WatchSnapshot {
                initial: inner.list(
                    rt,
                    namespace,
                    &LabelSelector::everything(),
                    &FieldSelector::default(),
                ),
                replay: Vec::new(),
                rv: inner.rv,
                receiver,
            }),
            Some(rv) => {
                if rv < inner.compacted {
                    return Err(ApiError::gone(format!(
                        "too old resource version: {rv} ({})",
                        inner.compacted + 1
                    )));
                }
                Ok(WatchSnapshot {
                    initial: Vec::new(),
                    replay: inner
                        .history
                        .iter()
                        .filter(|e| e.rv > rv)
                        .cloned()
                        .collect(),
                    rv: inner.rv,
                    receiver,
                })
            }
        }
    }

    pub fn create(
        &self,
        rt: &ResourceType,
        namespace: &str,
        body: Value,
        ctx: &WriteCtx,
    ) -> Result<Value, ApiError> {
        let mut inner = lock(&self.inner);
        let mut obj = self.prepare_create(&inner, rt, namespace, body)?;
        obj = patching::track_update(None, &obj, &ctx.manager, None, &object::now());
        let created = self.insert_new(&mut inner, rt, obj, ctx)?;
        Ok(present(rt, created))
    }

    /// Validation and server-set fields of a create; the result still lacks managedFields.
    fn prepare_create(
        &self,
        inner: &Inner,
        rt: &ResourceType,
        namespace: &str,
        mut obj: Value,
    ) -> Result<Value, ApiError> {
        if !obj.is_object() {
            return Err(ApiError::bad_request(
                "the request body must be a JSON or YAML object",
            ));
        }
        check_type(rt, &obj)?;
        if let Some(m) = obj.as_object_mut() {
            m.insert("apiVersion".into(), json!(rt.api_version()));
            m.insert("kind".into(), json!(rt.kind));
        }
        let meta = meta_mut(&mut obj);
        let body_ns = meta
            .get("namespace")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if rt.namespaced {
            if !body_ns.is_empty() && body_ns != namespace {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            meta.insert("namespace".into(), json!(namespace));
        } else {
            meta.remove("namespace");
        }
        if meta
            .get("resourceVersion")
            .and_then(Value::as_str)
            .is_some_and(|rv| !rv.is_empty())
        {
            return Err(ApiError::bad_request(
                "resourceVersion should not be set on objects to be created",
            ));
        }
        let mut name = meta
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if name.is_empty() {
            let prefix = meta
                .get("generateName")
                .and_then(Value::as_str)
                .unwrap_or("");
            if prefix.is_empty() {
                return Err(ApiError::invalid(
                    &rt.group,
                    &rt.kind,
                    "",
                    vec![Cause::new(
                        "FieldValueRequired",
                        "Required value: name or generateName is required",
                        "metadata.name",
                    )],
                ));
            }
            name = format!("{prefix}{}", self.random_suffix());
            meta.insert("name".into(), json!(name));
        }
        if let Some(problem) = name_problem(rt, &name) {
            return Err(ApiError::invalid(
                &rt.group,
                &rt.kind,
                &name,
                vec![Cause::new("FieldValueInvalid", problem, "metadata.name")],
            ));
        }
        for field in ["labels", "annotations"] {
            if let Some(v) = meta.get(field)
                && !v.is_null()
                && !v
                    .as_object()
                    .is_some_and(|m| m.values().all(Value::is_string))
            {
                return Err(ApiError::bad_request(format!(
                    "metadata.{field} must be a map of strings"
                )));
            }
        }
        meta.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
        meta.insert("creationTimestamp".into(), json!(object::now()));
        meta.remove("deletionTimestamp");
        meta.remove("deletionGracePeriodSeconds");
        meta.remove("selfLink");
        meta.remove("managedFields");
        if rt.has_generation {
            meta.insert("generation".into(), json!(1));
        } else {
            meta.remove("generation");
        }
        if rt.namespaced {
            match inner.objects.get(&Key {
                group: String::new(),
                plural: "namespaces".into(),
                namespace: String::new(),
                name: namespace.to_string(),
            }) {
                None => return Err(ApiError::not_found("", "namespaces", namespace)),
                Some(ns) if object::is_deleting(ns) => {
                    return Err(ApiError::forbidden(format!(
                        "{} \"{name}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
                        crate::error::qualified(&rt.group, &rt.plural)
                    )));
                }
                Some(_) => {}
            }
        }
        if rt.status_subresource
            && let Some(m) = obj.as_object_mut()
        {
            m.remove("status");
        }
        Ok(obj)
    }

    fn random_suffix(&self) -> String {
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        let mut n = uuid::Uuid::new_v4().as_u128()
            ^ u128::from(self.generated.fetch_add(1, Ordering::Relaxed));
        let mut s = String::new();
        for _ in 0..5 {
            s.push(char::from(ALPHABET[(n % ALPHABET.len() as u128) as usize]));
            n /= ALPHABET.len() as u128;
        }
        s
    }

    /// Defaults, the AlreadyExists check and the commit of a new object.
    fn insert_new(
        &self,
        inner: &mut Inner,
        rt: &ResourceType,
        mut obj: Value,
        ctx: &WriteCtx,
    ) -> Result<Value, ApiError> {
        let key = Key::new(rt, object::namespace(&obj), object::name(&obj));
        if inner.objects.contains_key(&key) {
            return Err(ApiError::already_exists(&rt.group, &rt.plural, &key.name));
        }
        inner.apply_defaults(rt, &mut obj)?;
        if ctx.dry_run {
            return Ok(obj);
        }
        if rt.group == "apiextensions.k8s.io" && rt.plural == "customresourcedefinitions" {
            inner.registry.apply_crd(&obj).map_err(|m| {
                ApiError::invalid(
                    &rt.group,
                    &rt.kind,
                    &key.name,
                    vec![Cause::new("FieldValueInvalid", m, "spec")],
                )
            })?;
        }
        Ok(self.commit(inner, key, obj, EventType::Added, None))
    }

    /// Stores `obj` under a new resourceVersion and records the event.
    fn commit(
        &self,
        inner: &mut Inner,
        key: Key,
        mut obj: Value,
        kind: EventType,
        old: Option<Value>,
    ) -> Value {
        if key.group.is_empty() && key.plural == "secrets" {
            merge_string_data(&mut obj);
        }
        inner.rv += 1;
        let rv = inner.rv;
        meta_mut(&mut obj).insert("resourceVersion".into(), json!(rv.to_string()));
        let event = Arc::new(Event {
            rv,
            kind,
            group: key.group.clone(),
            plural: key.plural.clone(),
            namespace: key.namespace.clone(),
            object: obj.clone(),
            old,
        });
        if kind == EventType::Deleted {
            inner.objects.remove(&key);
            inner.deleted_uids.insert(object::uid(&obj).to_string());
        } else {
            inner.objects.insert(key, obj.clone());
        }
        inner.history.push_back(event.clone());
        while inner.history.len() > inner.history_capacity {
            if let Some(e) = inner.history.pop_front() {
                inner.compacted = e.rv;
            }
        }
        // No receivers is fine: nobody watches.
        let _ = self.events.send(event);
        obj
    }

    pub fn update(
        &self,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        body: Value,
        status: bool,
        ctx: &WriteCtx,
    ) -> Result<Value, ApiError> {
        let mut inner = lock(&self.inner);
        let key = Key::new(rt, namespace, name);
        let existing = inner
            .objects
            .get(&key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
        if !body.is_object() {
            return Err(ApiError::bad_request(
                "the request body must be a JSON or YAML object",
            ));
        }
        check_type(rt, &body)?;
        let body_name = object::name(&body);
        if body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        let body_rv = object::resource_version(&body);
        if !body_rv.is_empty() && body_rv != object::resource_version(&existing) {
            return Err(ApiError::conflict(&rt.group, &rt.plural, name));
        }
        let subresource = status.then_some("status");
        let updated = self.update_existing(
            &mut inner,
            rt,
            key,
            existing,
            body,
            subresource,
            Some(&ctx.manager),
            ctx.dry_run,
        )?;
        Ok(present(rt, updated))
    }

    /// The common tail of update and patch: server-owned fields, status rules, generation,
    /// managedFields (when `track` names a manager), finalization and the commit.
    #[allow(clippy::too_many_arguments)]
    fn update_existing(
        &self,
        inner: &mut Inner,
        rt: &ResourceType,
        key: Key,
        existing: Value,
        body: Value,
        subresource: Option<&str>,
        track: Option<&str>,
        dry_run: bool,
    ) -> Result<Value, ApiError> {
        let mut new = if subresource == Some("status") {
            // A status write changes status only.
            let mut new = existing.clone();
            if let Some(m) = new.as_object_mut() {
                match body.get("status") {
                    Some(s) => m.insert("status".into(), s.clone()),
                    None => m.remove("status"),
                };
            }
            new
        } else {
            let mut new = body;
            if rt.status_subresource
                && let Some(m) = new.as_object_mut()
            {
                match existing.get("status") {
                    Some(s) => m.insert("status".into(), s.clone()),
                    None => m.remove("status"),
                };
            }
            new
        };
        if let Some(m) = new.as_object_mut() {
            m.insert("apiVersion".into(), json!(rt.api_version()));
            m.insert("kind".into(), json!(rt.kind));
        }
        let body_ns = object::namespace(&new).to_string();
        if rt.namespaced && !body_ns.is_empty() && body_ns != key.namespace {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        if object::name(&new) != key.name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({})",
                object::name(&new),
                key.name
            )));
        }
        // Server-owned metadata survives any write.
        let old_meta = existing
            .get("metadata")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let meta = meta_mut(&mut new);
        for field in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "namespace",
        ] {
            match old_meta.get(field) {
                Some(v) => meta.insert(field.into(), v.clone()),
                None => meta.remove(field),
            };
        }
        meta.remove("selfLink");
        if meta.get("managedFields").is_none()
            && let Some(mf) = old_meta.get("managedFields")
        {
            meta.insert("managedFields".into(), mf.clone());
        }
        if let Some(problem) = labels_problem(meta) {
            return Err(ApiError::bad_request(problem));
        }
        if rt.has_generation && object::spec_part(&new) != object::spec_part(&existing) {
            let generation = object::generation(&existing) + 1;
            meta_mut(&mut new).insert("generation".into(), json!(generation));
        }
        if object::is_deleting(&existing) {
            // Finalizers may only go away while an object is being deleted.
            let added: Vec<String> = object::finalizers(&new)
                .into_iter()
                .filter(|f| !object::finalizers(&existing).contains(f))
                .collect();
            if !added.is_empty() && rt.plural != "namespaces" {
                return Err(ApiError::forbidden(format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers {added:?}"
                )));
            }
        }
        if rt.group == "apiextensions.k8s.io" && rt.plural == "customresourcedefinitions" {
            let mut probe = inner.registry.clone();
            probe.apply_crd(&new).map_err(|m| {
                ApiError::invalid(
                    &rt.group,
                    &rt.kind,
                    &key.name,
                    vec![Cause::new("FieldValueInvalid", m, "spec")],
                )
            })?;
        }
        if let Some(manager) = track {
            new =
                patching::track_update(Some(&existing), &new, manager, subresource, &object::now());
        }
        meta_mut(&mut new).insert(
            "resourceVersion".into(),
            existing
                .pointer("/metadata/resourceVersion")
                .cloned()
                .unwrap_or(Value::Null),
        );
        if object::same_content(&new, &existing) || dry_run {
            // kube skips writes that change nothing: no new resourceVersion, no event.
            return Ok(if dry_run { new } else { existing });
        }
        if rt.group == "apiextensions.k8s.io" && rt.plural == "customresourcedefinitions" {
            let _ = inner.registry.apply_crd(&new);
        }
        if object::is_deleting(&new) && object::finalizers(&new).is_empty() {
            let removed = self.remove(inner, key, new);
            self.collect_garbage(inner);
            return Ok(removed);
        }
        Ok(self.commit(inner, key, new, EventType::Modified, Some(existing)))
    }

    #[allow(clippy::too_many_arguments)]
    pub fn patch(
        &self,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        kind: PatchKind,
        body: &Value,
        status: bool,
        force: bool,
        ctx: &WriteCtx,
    ) -> Result<(Value, bool), ApiError> {
        let mut inner = lock(&self.inner);
        let key = Key::new(rt, namespace, name);
        let existing = inner.objects.get(&key).cloned();
        let subresource = status.then_some("status");
        if kind == PatchKind::Apply {
            if !body.is_object() {
                return Err(ApiError::bad_request(
                    "the apply configuration must be an object",
                ));
            }
            check_type(rt, body)?;
            let applied_name = object::name(body);
            if applied_name != name {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({applied_name}) does not match the name on the URL ({name})"
                )));
            }
            let body_ns = object::namespace(body);
            if rt.namespaced && !body_ns.is_empty() && body_ns != namespace {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            let now = object::now();
            match existing {
                None => {
                    if status {
                        return Err(ApiError::not_found(&rt.group, &rt.plural, name));
                    }
                    let mut applied = body.clone();
                    if let Some(m) = applied.get_mut("metadata").and_then(Value::as_object_mut) {
                        m.remove("resourceVersion");
                    }
                    let prepared = self.prepare_create(&inner, rt, namespace, applied.clone())?;
                    let result =
                        patching::server_side_apply(None, &prepared, &ctx.manager, force, &now)
                            .map_err(|e| e.into_api_error(&rt.group, &rt.plural, &rt.kind, name))?;
                    let created = self.insert_new(&mut inner, rt, result, ctx)?;
                    return Ok((present(rt, created), true));
                }
                Some(existing) => {
                    let body_rv = object::resource_version(body);
                    if !body_rv.is_empty() && body_rv != object::resource_version(&existing) {
                        return Err(ApiError::conflict(&rt.group, &rt.plural, name));
                    }
                    let result = patching::server_side_apply(
                        Some(&existing),
                        body,
                        &ctx.manager,
                        force,
                        &now,
                    )
                    .map_err(|e| e.into_api_error(&rt.group, &rt.plural, &rt.kind, name))?;
                    let updated = self.update_existing(
                        &mut inner,
                        rt,
                        key,
                        existing,
                        result,
                        subresource,
                        None,
                        ctx.dry_run,
                    )?;
                    return Ok((present(rt, updated), false));
                }
            }
        }
        let existing = existing.ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
        let patched = patching::patch(kind, &existing, body)
            .map_err(|e| e.into_api_error(&rt.group, &rt.plural, &rt.kind, name))?;
        if !patched.is_object() {
            return Err(ApiError::bad_request(
                "the patch did not result in an object",
            ));
        }
        if object::resource_version(&patched) != object::resource_version(&existing) {
            return Err(ApiError::conflict(&rt.group, &rt.plural, name));
        }
        if object::uid(&patched) != object::uid(&existing) {
            return Err(ApiError::conflict_message(
                &rt.group,
                &rt.plural,
                name,
                format!(
                    "Operation cannot be fulfilled on {} \"{name}\": Precondition failed: UID in precondition: {}, UID in object meta: {}",
                    crate::error::qualified(&rt.group, &rt.plural),
                    object::uid(&patched),
                    object::uid(&existing)
                ),
            ));
        }
        let updated = self.update_existing(
            &mut inner,
            rt,
            key,
            existing,
            patched,
            subresource,
            Some(&ctx.manager),
            ctx.dry_run,
        )?;
        Ok((present(rt, updated), false))
    }

    pub fn delete(
        &self,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        let mut inner = lock(&self.inner);
        let key = Key::new(rt, namespace, name);
        let outcome = self.delete_locked(&mut inner, rt, key, opts)?;
        if !opts.dry_run {
            self.collect_garbage(&mut inner);
        }
        Ok(DeleteOutcome {
            object: present(rt, outcome.object),
            removed: outcome.removed,
        })
    }

    fn delete_locked(
        &self,
        inner: &mut Inner,
        rt: &ResourceType,
        key: Key,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        let existing = inner
            .objects
            .get(&key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, &key.name))?;
        if let Some(uid) = &opts.precondition_uid
            && uid != object::uid(&existing)
        {
            return Err(ApiError::conflict_message(
                &rt.group,
                &rt.plural,
                &key.name,
                format!(
                    "Operation cannot be fulfilled on {} \"{}\": Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    crate::error::qualified(&rt.group, &rt.plural),
                    key.name,
                    object::uid(&existing)
                ),
            ));
        }
        if let Some(rv) = &opts.precondition_rv
            && rv != object::resource_version(&existing)
        {
            return Err(ApiError::conflict_message(
                &rt.group,
                &rt.plural,
                &key.name,
                format!(
                    "Operation cannot be fulfilled on {} \"{}\": Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                    crate::error::qualified(&rt.group, &rt.plural),
                    key.name,
                    object::resource_version(&existing)
                ),
            ));
        }
        if opts.dry_run {
            return Ok(DeleteOutcome {
                removed: object::finalizers(&existing).is_empty() && rt.plural != "namespaces",
                object: existing,
            });
        }
        let mut pending = existing.clone();
        let was_deleting = object::is_deleting(&existing);
        if !was_deleting {
            let meta = meta_mut(&mut pending);
            meta.insert("deletionTimestamp".into(), json!(object::now()));
            meta.insert("deletionGracePeriodSeconds".into(), json!(0));
        }
        if rt.group.is_empty() && rt.plural == "namespaces" {
            // The namespace controller (simulate.rs) empties and then removes it.
            if let Some(m) = pending.as_object_mut() {
                m.insert("status".into(), json!({"phase": "Terminating"}));
            }
            if was_deleting {
                return Ok(DeleteOutcome {
                    object: existing,
                    removed: false,
                });
            }
            let object = self.commit(inner, key, pending, EventType::Modified, Some(existing));
            return Ok(DeleteOutcome {
                object,
                removed: false,
            });
        }
        let propagation = opts.propagation.unwrap_or_default();
        let uid = object::uid(&existing).to_string();
        match propagation {
            Propagation::Orphan => {
                self.orphan_dependents(inner, &uid);
            }
            Propagation::Foreground => {
                if inner.has_dependents(&uid) {
                    add_finalizer(&mut pending, FOREGROUND);
                    let object =
                        self.commit(inner, key, pending, EventType::Modified, Some(existing));
                    self.delete_dependents(inner, &uid);
                    return Ok(DeleteOutcome {
                        object,
                        removed: false,
                    });
                }
            }
            Propagation::Background => {}
        }
        if !object::finalizers(&pending).is_empty() {
            if was_deleting {
                return Ok(DeleteOutcome {
                    object: existing,
                    removed: false,
                });
            }
            let object = self.commit(inner, key, pending, EventType::Modified, Some(existing));
            return Ok(DeleteOutcome {
                object,
                removed: false,
            });
        }
        let object = self.remove(inner, key, existing);
        Ok(DeleteOutcome {
            object,
            removed: true,
        })
    }

    /// Removes an object for good (a DELETED event), and what depends on its existence.
    fn remove(&self, inner: &mut Inner, key: Key, last: Value) -> Value {
        let is_crd =
            key.group == "apiextensions.k8s.io" && key.plural == "customresourcedefinitions";
        let removed = self.commit(inner, key.clone(), last.clone(), EventType::Deleted, None);
        if is_crd {
            // The CRD's objects go with it, then its endpoints.
            let group = object::str_at(&last, "/spec/group").to_string();
            let plural = object::str_at(&last, "/spec/names/plural").to_string();
            let keys: Vec<Key> = inner
                .objects
                .keys()
                .filter(|k| k.group == group && k.plural == plural)
                .cloned()
                .collect();
            for k in keys {
                if let Some(obj) = inner.objects.get(&k).cloned() {
                    self.commit(inner, k, obj, EventType::Deleted, None);
                }
            }
            inner.registry.remove_crd(&key.name);
        }
        removed
    }

    fn orphan_dependents(&self, inner: &mut Inner, uid: &str) {
        let dependents: Vec<(Key, Value)> = inner
            .objects
            .iter()
            .filter(|(_, v)| object::owner_uids(v).iter().any(|u| u == uid))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (key, old) in dependents {
            let mut new = old.clone();
            if let Some(refs) = new
                .pointer_mut("/metadata/ownerReferences")
                .and_then(Value::as_array_mut)
            {
                refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid));
                if refs.is_empty()
                    && let Some(m) = new.get_mut("metadata").and_then(Value::as_object_mut)
                {
                    m.remove("ownerReferences");
                }
            }
            self.commit(inner, key, new, EventType::Modified, Some(old));
        }
    }

    fn delete_dependents(&self, inner: &mut Inner, uid: &str) {
        let dependents: Vec<Key> = inner
            .objects
            .iter()
            .filter(|(_, v)| object::owner_uids(v).iter().any(|u| u == uid))
            .map(|(k, _)| k.clone())
            .collect();
        for key in dependents {
            let Some(rt) = inner
                .registry
                .versions_of(&key.group, &key.plural)
                .first()
                .map(|r| (*r).clone())
            else {
                continue;
            };
            let _ = self.delete_locked(
                inner,
                &rt,
                key,
                &DeleteOptions {
                    propagation: Some(Propagation::Foreground),
                    ..Default::default()
                },
            );
        }
    }

    /// The garbage collector, run to a fixpoint after deletions: removes objects whose owners
    /// are all gone, and finishes foreground deletions whose dependents are gone.
    fn collect_garbage(&self, inner: &mut Inner) {
        loop {
            let mut changed = false;
            let orphans: Vec<Key> = inner
                .objects
                .iter()
                .filter(|(_, v)| {
                    let owners = object::owner_uids(v);
                    !owners.is_empty()
                        && !object::is_deleting(v)
                        && owners.iter().all(|u| inner.deleted_uids.contains(u))
                })
                .map(|(k, _)| k.clone())
                .collect();
            for key in orphans {
                if let Some(rt) = inner
                    .registry
                    .versions_of(&key.group, &key.plural)
                    .first()
                    .map(|r| (*r).clone())
                {
                    let _ = self.delete_locked(inner, &rt, key, &DeleteOptions::default());
                    changed = true;
                }
            }
            let finished: Vec<(Key, Value)> = inner
                .objects
                .iter()
                .filter(|(_, v)| {
                    object::is_deleting(v)
                        && object::finalizers(v)
                            .iter()
                            .any(|f| f == FOREGROUND || f == ORPHAN)
                        && !inner.has_dependents(object::uid(v))
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            for (key, old) in finished {
                let mut new = old.clone();
                if let Some(f) = new
                    .pointer_mut("/metadata/finalizers")
                    .and_then(Value::as_array_mut)
                {
                    f.retain(|f| f != FOREGROUND && f != ORPHAN);
                }
                if object::finalizers(&new).is_empty() {
                    self.remove(inner, key, new);
                } else {
                    self.commit(inner, key, new, EventType::Modified, Some(old));
                }
                changed = true;
            }
            if !changed {
                break;
            }
        }
    }

    pub fn delete_collection(
        &self,
        rt: &ResourceType,
        namespace: Option<&str>,
        labels: &LabelSelector,
        fields: &FieldSelector,
        opts: &DeleteOptions,
    ) -> Result<Vec<Value>, ApiError> {
        let mut inner = lock(&self.inner);
        let targets = inner.list(rt, namespace, labels, fields);
        let mut deleted = Vec::new();
        for obj in targets {
            let key = Key::new(rt, object::namespace(&obj), object::name(&obj));
            match self.delete_locked(&mut inner, rt, key, opts) {
                Ok(outcome) => deleted.push(present(rt, outcome.object)),
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        if !opts.dry_run {
            self.collect_garbage(&mut inner);
        }
        Ok(deleted)
    }

    /// A controller's write: `change` edits the object (usually its status) and says whether
    /// it changed anything. Returns the new object when written.
    pub fn controller_update(
        &self,
        group: &str,
        plural: &str,
        namespace: &str,
        name: &str,
        manager: &str,
        change: impl FnOnce(&mut Value) -> bool,
    ) -> Option<Value> {
        let mut inner = lock(&self.inner);
        let rt = inner
            .registry
            .versions_of(group, plural)
            .first()
            .map(|r| (*r).clone())?;
        let key = Key::new(&rt, namespace, name);
        let existing = inner.objects.get(&key).cloned()?;
        let mut new = existing.clone();
        if !change(&mut new) || new == existing {
            return None;
        }
        let subresource = (rt.status_subresource
            && object::spec_part(&new) == object::spec_part(&existing))
        .then_some("status");
        let new =
            patching::track_update(Some(&existing), &new, manager, subresource, &object::now());
        if object::is_deleting(&new) && object::finalizers(&new).is_empty() {
            let removed = self.remove(&mut inner, key, new);
            self.collect_garbage(&mut inner);
            return Some(removed);
        }
        Some(self.commit(&mut inner, key, new, EventType::Modified, Some(existing)))
    }

    /// One step of the namespace controller: deletes what is left in a terminating namespace
    /// and removes the namespace once empty. Returns true when the namespace is gone.
    pub fn finalize_namespace(&self, name: &str) -> bool {
        let mut inner = lock(&self.inner);
        let ns_key = Key {
            group: String::new(),
            plural: "namespaces".into(),
            namespace: String::new(),
            name: name.to_string(),
        };
        let Some(ns) = inner.objects.get(&ns_key).cloned() else {
            return true;
        };
        if !object::is_deleting(&ns) {
            return false;
        }
        let contents: Vec<(Key, Value)> = inner
            .objects
            .iter()
            .filter(|(k, _)| k.namespace == name)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (key, obj) in &contents {
            if object::is_deleting(obj) {
                continue;
            }
            if let Some(rt) = inner
                .registry
                .versions_of(&key.group, &key.plural)
                .first()
                .map(|r| (*r).clone())
            {
                let _ = self.delete_locked(&mut inner, &rt, key.clone(), &DeleteOptions::default());
            }
        }
        self.collect_garbage(&mut inner);
        if inner.objects.keys().any(|k| k.namespace == name) {
            return false;
        }
        self.remove(&mut inner, ns_key, ns);
        true
    }
}

fn labels_problem(meta: &Map<String, Value>) -> Option<String> {
    for field in ["labels", "annotations"] {
        if let Some(v) = meta.get(field)
            && !v.is_null()
            && !v
                .as_object()
                .is_some_and(|m| m.values().all(Value::is_string))
        {
            return Some(format!("metadata.{field} must be a map of strings"));
        }
    }
    None
}

fn add_finalizer(obj: &mut Value, finalizer: &str) {
    let meta = meta_mut(obj);
    let list = meta
        .entry("finalizers")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Some(a) = list.as_array_mut() {
        if !a.iter().any(|f| f.as_str() == Some(finalizer)) {
            a.push(json!(finalizer));
        }
    } else {
        *list = json!([finalizer]);
    }
}

/// `apiVersion` and `kind` in a body, when given, must name the resource of the URL.
fn check_type(rt: &ResourceType, body: &Value) -> Result<(), ApiError> {
    let api_version = body.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if !api_version.is_empty() && api_version != rt.api_version() {
        let (group, _) = crate::resources::split_api_version(api_version);
        if group != rt.group {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({api_version}) does not match the expected API version ({})",
                rt.api_version()
            )));
        }
    }
    let kind = body.get("kind").and_then(Value::as_str).unwrap_or("");
    if !kind.is_empty() && kind != rt.kind {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({kind}) does not match the expected kind ({})",
            rt.kind
        )));
    }
    Ok(())
}

impl Inner {
    fn list(
        &self,
        rt: &ResourceType,
        namespace: Option<&str>,
        labels: &LabelSelector,
        fields: &FieldSelector,
    ) -> Vec<Value> {
        self.objects
            .iter()
            .filter(|(k, _)| k.group == rt.group && k.plural == rt.plural)
            .filter(|(k, _)| namespace.is_none_or(|ns| !rt.namespaced || k.namespace == ns))
            .filter(|(_, v)| labels.matches(v) && fields.matches(v))
            .map(|(_, v)| present(rt, v.clone()))
            .collect()
    }

    fn has_dependents(&self, uid: &str) -> bool {
        !uid.is_empty()
            && self
                .objects
                .values()
                .any(|v| object::owner_uids(v).iter().any(|u| u == uid))
    }

    /// What kube's defaulting and admission add on create.
    fn apply_defaults(&mut self, rt: &ResourceType, obj: &mut Value) -> Result<(), ApiError> {
        let Some(m) = obj.as_object_mut() else {
            return Ok(());
        };
        match (rt.group.as_str(), rt.plural.as_str()) {
            ("", "namespaces") => {
                m.insert("spec".into(), json!({"finalizers": ["kubernetes"]}));
                m.insert("status".into(), json!({"phase": "Active"}));
                let name = object::name(obj).to_string();
                let labels = meta_mut(obj).entry("labels").or_insert_with(|| json!({}));
                if let Some(l) = labels.as_object_mut() {
                    l.insert("kubernetes.io/metadata.name".into(), json!(name));
                }
            }
            ("", "secrets")
                if m.get("type")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty) =>
            {
                m.insert("type".into(), json!("Opaque"));
            }
            ("", "services") => {
                let spec = m.entry("spec").or_insert_with(|| json!({}));
                if let Some(spec) = spec.as_object_mut() {
                    let type_ = spec
                        .entry("type")
                        .or_insert_with(|| json!("ClusterIP"))
                        .as_str()
                        .unwrap_or("")
                        .to_string();
                    if type_ != "ExternalName" && !spec.contains_key("clusterIP") {
                        let n = self.next_cluster_ip;
                        self.next_cluster_ip += 1;
                        let ip = format!("10.96.{}.{}", (n / 250) % 250, n % 250 + 1);
                        spec.insert("clusterIP".into(), json!(ip));
                        spec.insert("clusterIPs".into(), json!([ip]));
                    }
                    spec.entry("sessionAffinity")
                        .or_insert_with(|| json!("None"));
                }
            }
            ("apps", plural @ ("deployments" | "statefulsets" | "replicasets" | "daemonsets")) => {
                let spec = m.entry("spec").or_insert_with(|| json!({}));
                if let Some(spec) = spec.as_object_mut() {
                    if plural != "daemonsets" {
                        spec.entry("replicas").or_insert_with(|| json!(1));
                    }
                    // What the apps/v1 defaulting of kube-apiserver adds.
                    match plural {
                        "deployments" => {
                            default_strategy(
                                spec,
                                "strategy",
                                &[("maxUnavailable", json!("25%")), ("maxSurge", json!("25%"))],
                            );
                            spec.entry("revisionHistoryLimit")
                                .or_insert_with(|| json!(10));
                            spec.entry("progressDeadlineSeconds")
                                .or_insert_with(|| json!(600));
                        }
                        "statefulsets" => {
                            default_strategy(spec, "updateStrategy", &[("partition", json!(0))]);
                            spec.entry("podManagementPolicy")
                                .or_insert_with(|| json!("OrderedReady"));
                            spec.entry("revisionHistoryLimit")
                                .or_insert_with(|| json!(10));
                        }
                        "daemonsets" => {
                            default_strategy(
                                spec,
                                "updateStrategy",
                                &[("maxUnavailable", json!(1)), ("maxSurge", json!(0))],
                            );
                            spec.entry("revisionHistoryLimit")
                                .or_insert_with(|| json!(10));
                        }
                        _ => {}
                    }
                }
            }
            ("apiextensions.k8s.io", "customresourcedefinitions") => {
                let names = m
                    .get("spec")
                    .and_then(|s| s.get("names"))
                    .cloned()
                    .unwrap_or(json!({}));
                let versions: Vec<Value> = m
                    .get("spec")
                    .and_then(|s| s.get("versions"))
                    .and_then(Value::as_array)
                    .map(|vs| {
                        vs.iter()
                            .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                            .filter_map(|v| v.get("name").cloned())
                            .collect()
                    })
                    .unwrap_or_default();
                let now = object::now();
                m.insert(
                    "status".into(),
                    json!({
                        "acceptedNames": names,
                        "storedVersions": versions,
                        "conditions": [
                            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                             "message": "no conflicts found", "lastTransitionTime": now},
                            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                             "message": "the initial names have been accepted", "lastTransitionTime": now},
                        ],
                    }),
                );
            }
            _ => {}
        }
        Ok(())
    }
}

/// A Secret's `stringData` is write-only: the API server stores it base64-encoded in `data`
/// (overriding keys of the same name) and never returns it.
fn merge_string_data(secret: &mut Value) {
    use base64::Engine as _;
    let Some(m) = secret.as_object_mut() else {
        return;
    };
    let Some(Value::Object(string_data)) = m.remove("stringData") else {
        return;
    };
    let data = m.entry("data").or_insert_with(|| json!({}));
    if !data.is_object() {
        *data = json!({});
    }
    if let Some(data) = data.as_object_mut() {
        for (k, v) in string_data {
            let text = match v {
                Value::String(s) => s,
                other => other.to_string(),
            };
            data.insert(
                k,
                json!(base64::engine::general_purpose::STANDARD.encode(text)),
            );
        }
    }
}

/// apps/v1 defaulting of a workload's (update) strategy, field by field as kube-apiserver's
/// `SetDefaults_Deployment|StatefulSet|DaemonSet`: `type` RollingUpdate when unset, and for
/// RollingUpdate the `rollingUpdate` settings that are missing.
fn default_strategy(
    spec: &mut serde_json::Map<String, Value>,
    field: &str,
    rolling: &[(&str, Value)],
) {
    let strategy = spec.entry(field).or_insert_with(|| json!({}));
    let Some(strategy) = strategy.as_object_mut() else {
        return;
    };
    let type_ = strategy
        .entry("type")
        .or_insert_with(|| json!("RollingUpdate"));
    if type_.as_str() != Some("RollingUpdate") {
        return;
    }
    let settings = strategy.entry("rollingUpdate").or_insert_with(|| json!({}));
    if let Some(settings) = settings.as_object_mut() {
        for (key, value) in rolling {
            settings
                .entry(key.to_string())
                .or_insert_with(|| value.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> WriteCtx {
        WriteCtx {
            manager: "test".into(),
            dry_run: false,
        }
    }

    fn cm_type(store: &Store) -> ResourceType {
        store.resolve("", "v1", "configmaps").expect("configmaps")
    }

    #[test]
    fn secret_string_data_is_stored_base64_in_data() {
        let store = Store::new(100);
        let rt = store.resolve("", "v1", "secrets").expect("secrets");
        let created = store
            .create(
                &rt,
                "default",
                json!({"metadata": {"name": "s"}, "data": {"a": "eA==", "b": "eA=="},
                       "stringData": {"b": "hello"}}),
                &ctx(),
            )
            .unwrap();
        assert_eq!(created["data"], json!({"a": "eA==", "b": "aGVsbG8="}));
        assert!(created.get("stringData").is_none());
        let mut changed = created.clone();
        changed["stringData"] = json!({"c": "x"});
        let updated = store
            .update(&rt, "default", "s", changed, false, &ctx())
            .unwrap();
        assert_eq!(updated["data"]["c"], "eA==");
        assert!(updated.get("stringData").is_none());
    }

    #[test]
    fn create_get_update_conflict() {
        let store = Store::new(100);
        let rt = cm_type(&store);
        let created = store
            .create(
                &rt,
                "default",
                json!({"metadata": {"name": "a"}, "data": {"k": "v"}}),
                &ctx(),
            )
            .unwrap();
        assert_eq!(object::namespace(&created), "default");
        let err = store
            .create(&rt, "default", json!({"metadata": {"name": "a"}}), &ctx())
            .unwrap_err();
        assert_eq!((err.code, err.reason), (409, "AlreadyExists"));
        let mut stale = created.clone();
        stale["data"]["k"] = json!("w");
        store
            .update(&rt, "default", "a", stale.clone(), false, &ctx())
            .unwrap();
        let err = store
            .update(&rt, "default", "a", stale, false, &ctx())
            .unwrap_err();
        assert_eq!(err.reason, "Conflict");
        assert!(err.message.contains("the object has been modified"));
        let err = store
            .create(&rt, "nope", json!({"metadata": {"name": "a"}}), &ctx())
            .unwrap_err();
        assert_eq!(err.message, "namespaces \"nope\" not found");
        let err = store
            .create(&rt, "default", json!({"metadata": {}}), &ctx())
            .unwrap_err();
        assert_eq!(err.code, 422);
    }

    #[test]
    fn finalizers_and_garbage_collection() {
        let store = Store::new(100);
        let rt = cm_type(&store);
        let owner = store
            .create(
                &rt,
                "default",
                json!({"metadata": {"name": "owner", "finalizers": ["x/y"]}}),
                &ctx(),
            )
            .unwrap();
        store
            .create(
                &rt,
                "default",
                json!({"metadata": {"name": "dep", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": object::uid(&owner)}]}}),
                &ctx(),
            )
            .unwrap();
        let out = store
            .delete(&rt, "default", "owner", &DeleteOptions::default())
            .unwrap();
        assert!(!out.removed);
        assert!(object::is_deleting(&out.object));
        assert!(store.get(&rt, "default", "dep").is_ok());
        let mut released = store.get(&rt, "default", "owner").unwrap();
        released["metadata"]["finalizers"] = json!([]);
        store
            .update(&rt, "default", "owner", released, false, &ctx())
            .unwrap();
        assert!(store.get(&rt, "default", "owner").is_err());
        assert!(
            store.get(&rt, "default", "dep").is_err(),
            "dependent collected"
        );
    }

    #[test]
    fn history_compaction_gives_gone() {
        let store = Store::new(2);
        let rt = cm_type(&store);
        for i in 0..5 {
            store
                .create(
                    &rt,
                    "default",
                    json!({"metadata": {"name": format!("c{i}")}}),
                    &ctx(),
                )
                .unwrap();
        }
        assert!(store.watch_snapshot(&rt, None, Some(1)).is_err());
        let rv = store.current_rv();
        assert!(store.watch_snapshot(&rt, None, Some(rv - 1)).is_ok());
    }
}
