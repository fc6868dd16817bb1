//! The I/O side of the workflow conditions (issue 19): what the Execution machine's
//! [`WorkflowInputs`] hold is read here, before the pure step runs. For each deploy item
//! template: its Target from the store, then, from the target cluster, the
//! CustomResourceDefinitions present (for `crdPresent`) and the objects its manifests name (for
//! `objects` in expressions). [`TargetReader`] is the seam: [`ClusterTargetReader`] talks to the
//! cluster, tests use an in-memory one.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use landscaper_deployers::BoxFuture;
use landscaper_deployers::applier::{ClientFactory, KubeClientFactory};
use landscaper_deployers::kubernetes::ObjectRef;
use landscaper_deployers::manifest::config::ProviderConfiguration;
use landscaper_store::model::{Execution, Target, from_value};
use landscaper_store::{Kind, ObjectKey, ObjectSource};
use landscaper_workflow::conditions::objects_index;
use serde_json::Value;

use super::machine::{TargetState, WorkflowInputs};
use crate::daemon::controllers::runtime::ReconcileError;

/// Reads what the workflow conditions need from a target cluster.
pub trait TargetReader: Send + Sync {
    /// The CRDs present on the cluster of `target` and those of `objects` that exist there.
    fn read<'a>(
        &'a self,
        target: Option<&'a Target>,
        objects: &'a [ObjectRef],
    ) -> BoxFuture<'a, Result<TargetState, String>>;
}

/// The real reader: the deployers' cluster clients from the Target's kubeconfig.
#[derive(Default)]
pub struct ClusterTargetReader {
    clients: KubeClientFactory,
}

impl TargetReader for ClusterTargetReader {
    fn read<'a>(
        &'a self,
        target: Option<&'a Target>,
        objects: &'a [ObjectRef],
    ) -> BoxFuture<'a, Result<TargetState, String>> {
        Box::pin(async move {
            let client = self
                .clients
                .client(target)
                .await
                .map_err(|e| e.to_string())?;
            let crds = client
                .list(
                    "apiextensions.k8s.io/v1",
                    "CustomResourceDefinition",
                    None,
                    &BTreeMap::new(),
                )
                .await
                .map_err(|e| format!("listing CustomResourceDefinitions: {e}"))?
                .iter()
                .filter_map(|crd| crd.pointer("/metadata/name").and_then(Value::as_str))
                .map(str::to_owned)
                .collect();
            let mut found = Vec::new();
            for object in objects {
                match client.get(object).await {
                    Ok(Some(o)) => found.push(o),
                    Ok(None) => {}
                    // A kind the cluster does not serve (yet): the object does not exist.
                    Err(e) if e.is_not_found() => {}
                    Err(landscaper_deployers::kubernetes::ClusterError::NoMatch { .. }) => {}
                    Err(e) => return Err(format!("reading {object}: {e}")),
                }
            }
            Ok(TargetState {
                objects: objects_index(&found),
                crds,
            })
        })
    }
}

/// What is to be read for one template: its Target (if it names one that exists) and the
/// objects its manifests name.
pub struct TargetRead {
    template: String,
    target: Option<Target>,
    missing_target: Option<String>,
    objects: Vec<ObjectRef>,
}

/// The reads for every template of `execution`, from the store snapshot.
pub fn target_reads(
    source: &impl ObjectSource,
    execution: &Execution,
) -> Result<Vec<TargetRead>, ReconcileError> {
    let mut reads = Vec::new();
    for template in execution.spec.deploy_items() {
        let mut read = TargetRead {
            template: template.name.clone(),
            target: None,
            missing_target: None,
            objects: manifest_objects(template.config.as_ref()),
        };
        if let Some(reference) = template.target.as_ref().filter(|t| !t.name.is_empty()) {
            let namespace = if reference.namespace.is_empty() {
                execution.metadata.namespace()
            } else {
                reference.namespace.as_str()
            };
            let key = ObjectKey::new(Kind::Target, namespace, &reference.name);
            match source.get(&key)? {
                Some(value) => {
                    read.target = Some(from_value(&value).map_err(|source| {
                        ReconcileError::ObjectDecode {
                            kind: Kind::Target,
                            namespace: namespace.to_string(),
                            name: reference.name.clone(),
                            source,
                        }
                    })?);
                }
                None => {
                    read.missing_target =
                        Some(format!("target {namespace}/{} not found", reference.name));
                }
            }
        } else {
            read.missing_target = Some("the deploy item has no target".to_string());
        }
        reads.push(read);
    }
    Ok(reads)
}

/// Reads every target (one read per template) into the machine's inputs.
pub async fn gather(
    reader: &dyn TargetReader,
    reads: Vec<TargetRead>,
    imports: Value,
    ready_timeout: Duration,
) -> WorkflowInputs {
    let mut targets = BTreeMap::new();
    for read in reads {
        let state = match (&read.target, read.missing_target) {
            (Some(target), _) => reader.read(Some(target), &read.objects).await,
            (None, Some(why)) => Err(why),
            (None, None) => Err("no target".to_string()),
        };
        targets.insert(read.template, state);
    }
    WorkflowInputs {
        imports,
        targets,
        ready_timeout: Some(ready_timeout),
        owner: None,
    }
}

/// The objects named by a manifest deployer configuration (`manifests[].manifest`, or raw
/// objects in v1alpha1); nothing for other configurations.
pub fn manifest_objects(config: Option<&Value>) -> Vec<ObjectRef> {
    let Some(config) = config else {
        return Vec::new();
    };
    let Ok(parsed) = ProviderConfiguration::parse(config) else {
        return Vec::new();
    };
    let set: BTreeSet<ObjectRef> = parsed
        .manifests
        .iter()
        .filter_map(|m| m.manifest.as_ref())
        .map(ObjectRef::of)
        .filter(|r| !r.kind.is_empty() && !r.name.is_empty())
        .collect();
    set.into_iter().collect()
}
