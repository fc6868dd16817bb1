//! Names of Landscaper's annotations, labels, finalizers, condition types and error codes
//! (`apis/core/v1alpha1/constants.go`, `types_*.go`, `helper/dataobjects.go`).

/// Domain all Landscaper annotations and labels live in.
pub const LANDSCAPER_DOMAIN: &str = "landscaper.gardener.cloud";

/// Finalizer on Installations, Executions and DeployItems.
pub const LANDSCAPER_FINALIZER: &str = "finalizer.landscaper.gardener.cloud";

/// Name of the Context used when `spec.context` is empty.
pub const DEFAULT_CONTEXT_NAME: &str = "default";

/// Key of the `config` entry in export and state Secrets.
pub const DATA_OBJECT_SECRET_DATA_KEY: &str = "config";

// --- operation annotation ---------------------------------------------------------------------

/// Requests an operation; the value is one of the `OPERATION_*` constants.
pub const OPERATION_ANNOTATION: &str = "landscaper.gardener.cloud/operation";
/// Starts a new job on a root Installation.
pub const OPERATION_RECONCILE: &str = "reconcile";
/// Copied from Installation to Execution; no further effect in Landscaper.
pub const OPERATION_FORCE_RECONCILE: &str = "force-reconcile";
/// Stops the running job: unfinished deploy items fail.
pub const OPERATION_INTERRUPT: &str = "interrupt";
/// On a DeployItem only: the deployer starts a job on its own (tests).
pub const OPERATION_TEST_RECONCILE: &str = "test-reconcile";

// --- other annotations -------------------------------------------------------------------------

pub const DELETE_WITHOUT_UNINSTALL_ANNOTATION: &str =
    "landscaper.gardener.cloud/delete-without-uninstall";
pub const DELETE_IGNORE_SUCCESSORS_ANNOTATION: &str =
    "landscaper.gardener.cloud/delete-ignore-successors";
pub const RECONCILE_IF_CHANGED_ANNOTATION: &str = "landscaper.gardener.cloud/reconcile-if-changed";
/// Why a reconcile was requested; [`RECONCILE_REASON_RETRY`] marks automatic retries.
pub const RECONCILE_REASON_ANNOTATION: &str = "landscaper.gardener.cloud/reconcile-reason";
pub const RECONCILE_REASON_RETRY: &str = "retry";
pub const RECONCILE_TIMESTAMP_ANNOTATION: &str = "landscaper.gardener.cloud/reconcile-time";
pub const CACHE_HELM_CHARTS_ANNOTATION: &str = "landscaper.gardener.cloud/cache-helm-charts";
pub const IGNORE_ANNOTATION: &str = "landscaper.gardener.cloud/ignore";
pub const TOUCH_ANNOTATION: &str = "landscaper.gardener.cloud/touch";
pub const KEEP_CHILDREN_ANNOTATION: &str = "landscaper.gardener.cloud/keep-children";
pub const ROTATE_TOKEN_ANNOTATION: &str = "landscaper.gardener.cloud/rotate-token";
pub const DEPLOYER_TYPE_ANNOTATION: &str = "landscaper.gardener.cloud/deployer-type";
pub const DEPLOYER_TARGET_NAME_ANNOTATION: &str = "landscaper.gardener.cloud/deployer-target-name";
/// Value of [`DEPLOYER_TARGET_NAME_ANNOTATION`] for deploy items without a target.
pub const NO_TARGET_NAME_VALUE: &str = ".noTargetName";
/// Internal: remembers the cluster of a target for `skipUninstallIfClusterRemoved`.
pub const CLUSTER_NAME_ANNOTATION: &str = "landscaper.gardener.cloud/clustername";
pub const CONTINUOUS_RECONCILE_ACTIVE_ANNOTATION: &str =
    "continuousreconcile.extensions.landscaper.gardener.cloud/active";
pub const CONTAINER_FORCE_CLEANUP_ANNOTATION: &str =
    "container.deployer.landscaper.gardener.cloud/force-cleanup";

// --- installation labels and annotations -------------------------------------------------------

/// Label on a subinstallation: name of its parent Installation.
pub const ENCOMPASSED_BY_LABEL: &str = "landscaper.gardener.cloud/encompassed-by";
/// Annotation on a subinstallation: name of the template it was made from.
pub const SUBINSTALLATION_NAME_ANNOTATION: &str = "landscaper.gardener.cloud/subinstallation-name";
/// Label on nested inline component descriptors.
pub const INLINE_COMPONENT_DESCRIPTOR_LABEL: &str =
    "landscaper.gardener.cloud/component-descriptor";

// --- execution labels and annotations ----------------------------------------------------------

/// Label on a DeployItem: name of the Execution that manages it.
pub const EXECUTION_MANAGED_BY_LABEL: &str = "execution.landscaper.gardener.cloud/managed-by";
/// Label on a DeployItem: its name in the Execution's `spec.deployItems`.
pub const EXECUTION_MANAGED_NAME_LABEL: &str = "execution.landscaper.gardener.cloud/name";
/// Annotation on a DeployItem: comma-separated names it depends on.
pub const EXECUTION_DEPENDS_ON_ANNOTATION: &str = "execution.landscaper.gardener.cloud/dependsOn";

// --- data objects and targets (scoping) --------------------------------------------------------

pub const DATA_OBJECT_CONTEXT_LABEL: &str = "data.landscaper.gardener.cloud/context";
pub const DATA_OBJECT_KEY_LABEL: &str = "data.landscaper.gardener.cloud/key";
pub const DATA_OBJECT_SOURCE_LABEL: &str = "data.landscaper.gardener.cloud/source";
pub const DATA_OBJECT_SOURCE_TYPE_LABEL: &str = "data.landscaper.gardener.cloud/sourceType";
pub const DATA_OBJECT_INDEX_LABEL: &str = "data.landscaper.gardener.cloud/index";
pub const DATA_OBJECT_TARGET_MAP_KEY_LABEL: &str = "data.landscaper.gardener.cloud/targetmapkey";
pub const DATA_OBJECT_JOB_ID_LABEL: &str = "data.landscaper.gardener.cloud/jobid";
pub const DATA_OBJECT_TYPE_ANNOTATION: &str = "data.landscaper.gardener.cloud/type";
pub const DATA_OBJECT_HASH_ANNOTATION: &str = "data.landscaper.gardener.cloud/hash";
/// Set to `"true"` by the appliance on DataObjects whose `data` may hold values read from a
/// Secret (an installation's imports when one of them is a `secretRef`, or a DataObject so
/// marked): the API and the status page redact their `data` like a Secret's for readers
/// without the token. Not a Landscaper annotation.
pub const FROM_SECRET_ANNOTATION: &str = "appliance.landscaper-appliance.io/from-secret";
/// Values of [`DATA_OBJECT_SOURCE_TYPE_LABEL`].
pub const DATA_OBJECT_SOURCE_TYPE_EXPORT: &str = "export";
pub const DATA_OBJECT_SOURCE_TYPE_IMPORT: &str = "import";
/// Prefix of scope and source values for Installations (`Inst.<name>`).
pub const INSTALLATION_PREFIX: &str = "Inst.";
/// Prefix of scope and source values for Executions (`Exec.<name>`).
pub const EXECUTION_PREFIX: &str = "Exec.";
/// A `dataRef`/`target` starting with this names an object directly, without scoping.
pub const NON_CONTEXTIFIED_PREFIX: &str = "#";
/// Lower-case base32 alphabet of hashed object names (no padding).
pub const BASE32_ENCODE_STD_LOWER_CASE: &str = "abcdefghijklmnopqrstuvwxyz234567";

// --- condition types and statuses --------------------------------------------------------------

pub const CONDITION_TRUE: &str = "True";
pub const CONDITION_FALSE: &str = "False";
pub const CONDITION_UNKNOWN: &str = "Unknown";
pub const CONDITION_PROGRESSING: &str = "Progressing";

pub const CONDITION_ENSURE_SUB_INSTALLATIONS: &str = "EnsureSubInstallations";
pub const CONDITION_RECONCILE_EXECUTION: &str = "ReconcileExecution";
pub const CONDITION_VALIDATE_IMPORTS: &str = "ValidateImports";
pub const CONDITION_CREATE_IMPORTS: &str = "CreateImports";
pub const CONDITION_CREATE_EXPORTS: &str = "CreateExports";
pub const CONDITION_ENSURE_EXECUTIONS: &str = "EnsureExecutions";
pub const CONDITION_VALIDATE_EXPORT: &str = "ValidateExport";
pub const CONDITION_COMPONENT_REFERENCE_OVERWRITE: &str = "ComponentReferenceOverwrite";
pub const CONDITION_RECONCILE_DEPLOY_ITEMS: &str = "ReconcileDeployItems";
pub const CONDITION_DEPLOY_ITEM_VALIDATION: &str = "DeployItemValidation";

// Reasons and messages of those conditions, as Landscaper writes them (installations'
// `executions/operation.go` and `operation.go`, the mock deployer's `getConfig`).
pub const REASON_EXECUTION_DEPLOYED: &str = "ExecutionDeployed";
pub const MESSAGE_EXECUTION_DEPLOYED: &str = "Deployed execution item";
pub const REASON_CREATE_OR_UPDATE_EXECUTION: &str = "CreateOrUpdateExecution";
pub const MESSAGE_CREATE_OR_UPDATE_EXECUTION: &str = "Unable to create or update execution";
pub const REASON_TEMPLATING_FAILED: &str = "TemplatingFailed";
pub const MESSAGE_TEMPLATING_FAILED: &str = "Unable to template executions";
pub const REASON_DATA_OBJECTS_CREATED: &str = "DataObjectsCreated";
pub const MESSAGE_DATA_OBJECTS_CREATED: &str = "DataObjects successfully created";
pub const REASON_CREATE_DATA_OBJECTS: &str = "CreateDataObjects";
pub const REASON_CREATE_TARGETS: &str = "CreateTargets";
pub const REASON_SUCCESSFUL_VALIDATION: &str = "SuccessfullValidation";
pub const MESSAGE_SUCCESSFUL_VALIDATION: &str = "Successfully validated configuration";
pub const REASON_FAILED_UNMARSHAL: &str = "FailedUnmarshal";

// --- error codes -------------------------------------------------------------------------------

pub const ERR_UNAUTHORIZED: &str = "ERR_UNAUTHORIZED";
pub const ERR_CLEANUP: &str = "ERR_CLEANUP";
pub const ERR_CONFIGURATION_PROBLEM: &str = "ERR_CONFIGURATION_PROBLEM";
pub const ERR_INTERNAL_PROBLEM: &str = "ERR_INTERNAL_PROBLEM";
pub const ERR_TIMEOUT: &str = "ERR_TIMEOUT";
pub const ERR_CYCLIC_DEPENDENCIES: &str = "ERR_CYCLIC_DEPENDENCIES";
pub const ERR_WEBHOOK: &str = "ERR_WEBHOOK";
pub const ERR_UNFINISHED: &str = "ERR_UNFINISHED";
pub const ERR_FOR_INFO_ONLY: &str = "ERR_FOR_INFO_ONLY";
pub const ERR_NO_RETRY: &str = "ERR_NO_RETRY";

/// Codes that make an error fatal (`Failed`/`DeleteFailed`) instead of retried.
pub const UNRECOVERABLE_ERROR_CODES: [&str; 5] = [
    ERR_CONFIGURATION_PROBLEM,
    ERR_INTERNAL_PROBLEM,
    ERR_TIMEOUT,
    ERR_UNAUTHORIZED,
    ERR_CYCLIC_DEPENDENCIES,
];

// --- well-known operations and reasons in `lastError` ------------------------------------------

pub const PICKUP_TIMEOUT_REASON: &str = "PickupTimeout";
pub const PICKUP_TIMEOUT_OPERATION: &str = "WaitingForPickup";
pub const PROGRESSING_TIMEOUT_REASON: &str = "ProgressingTimeout";
pub const INTERRUPT_OPERATION: &str = "InterruptOperation";

// --- types -------------------------------------------------------------------------------------

/// Target type of Kubernetes clusters.
pub const KUBERNETES_CLUSTER_TARGET_TYPE: &str = "landscaper.gardener.cloud/kubernetes-cluster";
pub const MOCK_DEPLOYER_TYPE: &str = "landscaper.gardener.cloud/mock";
pub const MANIFEST_DEPLOYER_TYPE: &str = "landscaper.gardener.cloud/kubernetes-manifest";
pub const HELM_DEPLOYER_TYPE: &str = "landscaper.gardener.cloud/helm";
pub const CONTAINER_DEPLOYER_TYPE: &str = "landscaper.gardener.cloud/container";
