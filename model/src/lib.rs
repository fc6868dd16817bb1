//! Typed Landscaper objects with exactly Landscaper's JSON shapes, plus core ConfigMap/Secret and
//! the appliance's own `ManifestFile` and `TransportArchive` kinds.
//!
//! The store keeps objects as JSON values; these types are the schema those values must satisfy
//! (see [`validate_object`]) and the typed view controllers work with (see [`Resource`]).
//!
//! Field conventions, chosen so that a manifest survives parse and re-serialisation unchanged:
//! * Optional fields are `Option`s, skipped when `None`: absent stays absent, and an explicitly
//!   empty map or list stays present.
//! * Free-form fields (`config`, `data`, blueprint `filesystem`, mappings, ...) are
//!   `serde_json::Value`; an explicit `null` there is kept.
//! * Names Landscaper requires to be non-empty (import/export names, reference names, `type`)
//!   are plain `String`s skipped when empty, so a missing one is reported by validation with
//!   Landscaper's message rather than by the decoder.
//! * Status fields Go always writes (`observedGeneration`, condition texts) are always written.
//! * Timestamps are RFC 3339 strings, durations keep their text ([`Duration`]).

pub mod constants;
pub mod context;
pub mod core;
pub mod cron;
pub mod dataobject;
pub mod deployitem;
pub mod duration;
pub mod errors;
pub mod execution;
pub mod installation;
pub mod kind;
pub mod manifestfile;
pub mod meta;
pub mod names;
pub mod resource;
pub mod semver;
pub mod shared;
pub mod target;
pub mod transportarchive;
pub mod validate;
pub mod workflow;
pub mod write_path;

pub use self::core::{ConfigMap, Secret};
pub use context::{Context, VerificationSignature};
pub use dataobject::DataObject;
pub use deployitem::{DeployItem, DeployItemSpec, DeployItemStatus, DeployerInformation};
pub use duration::Duration;
pub use execution::{
    DeployItemCache, DeployItemTemplate, DiNamePair, Execution, ExecutionSpec, ExecutionStatus,
};
pub use installation::{
    AutomaticReconcile, AutomaticReconcileStatus, BlueprintDefinition,
    ComponentDescriptorDefinition, ComponentDescriptorReference, DataExport, DataImport,
    DependentToTrigger, FailedReconcile, InlineBlueprint, Installation, InstallationExports,
    InstallationImports, InstallationSpec, InstallationStatus, Optimization,
    RemoteBlueprintReference, SubInstCache, SubNamePair, SucceededReconcile, TargetExport,
    TargetImport, Verification,
};
pub use kind::{APPLIANCE_GROUP, Kind, LANDSCAPER_GROUP, V1ALPHA1};
pub use manifestfile::{
    ManifestError, ManifestFile, ManifestFileSpec, ManifestFileStatus, ManifestObjectReference,
};
pub use meta::{ObjectMeta, OwnerReference};
pub use resource::{Resource, from_value, to_value};
pub use shared::{
    Condition, Error, LocalConfigMapReference, LocalObjectReference, LocalSecretReference,
    ObjectReference, OnDeleteConfig, Phase, SecretReference, TransitionTimes, TypedObjectReference,
};
pub use target::{Target, TargetSpec, kubeconfig_text};
pub use transportarchive::{
    ArchivedComponentVersion, TRANSPORT_ARCHIVE_FAILED, TRANSPORT_ARCHIVE_READY, TransportArchive,
    TransportArchiveSpec, TransportArchiveStatus,
};
pub use validate::{ModelError, ValidatedObject, validate_object};
pub use workflow::{
    ActivationCondition, CrdPresent, ExtensionPlace, FailurePolicy, WorkflowExtension,
};
pub use write_path::prepare_for_storage;
