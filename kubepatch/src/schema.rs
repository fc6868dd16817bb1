//! The built-in type table: for the common built-in kinds, which objects are structs or maps,
//! and for each list its strategic-merge-patch strategy and its server-side-apply list type.
//!
//! Kubernetes takes these from the Go struct tags (`patchStrategy`, `patchMergeKey`) and the
//! OpenAPI extensions (`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`,
//! `x-kubernetes-map-type`); the two sometimes differ (container ports merge by `containerPort`
//! but are keyed by `containerPort` and `protocol` for apply), so each list names both.
//!
//! Fields not in the table are [`Node::Untyped`]: objects behave as structs whose every field is
//! declared, lists are atomic (replaced by patches, owned as a whole). Custom resources and
//! built-in kinds missing from the table get the same treatment below their `metadata`.

/// One node of a type.
pub(crate) enum Node {
    /// An object with named fields; fields not listed are untyped.
    Struct(&'static [Field]),
    /// An object with arbitrary keys (labels, data); each entry is owned on its own.
    Map(&'static Node),
    /// A list with its merge strategy and its item type.
    List(ListSpec),
    /// Replaced and owned as a whole (`+structType=atomic`, `+mapType=atomic`, scalars).
    Atomic,
    /// Not described: objects are structs of untyped fields, lists are atomic.
    Untyped,
}

pub(crate) struct Field {
    pub name: &'static str,
    pub node: &'static Node,
    /// A non-pointer Go struct (or a list without `omitempty`): present, at least empty,
    /// whenever its parent is, so that creating it is not a change kube records.
    pub always_present: bool,
    /// `patchStrategy` includes `retainKeys` (Deployment `strategy`, Pod `volumes`): clients
    /// computing a strategic merge patch send `$retainKeys` for this map (for a list: for each
    /// of its items).
    pub retain_keys: bool,
}

pub(crate) struct ListSpec {
    pub strategic: StrategicList,
    pub apply: ApplyList,
    pub item: &'static Node,
}

/// How a strategic merge patch treats a list.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum StrategicList {
    /// The patch's list replaces the live one.
    Replace,
    /// Items (objects) merged by the value of this key.
    MergeByKey(&'static str),
    /// A list of scalars merged as a set (`metadata.finalizers`).
    MergePrimitives,
}

/// How server-side apply identifies list items (`x-kubernetes-list-type`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum ApplyList {
    Atomic,
    /// Scalars identified by value (`v:"value"`).
    Set,
    /// Objects identified by these key fields (`k:{"name":"nginx"}`).
    Map(&'static [KeyField]),
}

#[derive(Debug, PartialEq)]
pub(crate) struct KeyField {
    pub name: &'static str,
    /// A string default from the schema, used when an item omits the key (`protocol: TCP`).
    pub default: Option<&'static str>,
}

/// Where a key lookup in an object leads.
pub(crate) struct Child {
    pub node: &'static Node,
    /// A struct field (owned through its leaves) rather than a map entry (owned itself).
    pub declared: bool,
    pub always_present: bool,
}

impl Node {
    pub(crate) fn child(&'static self, key: &str) -> Child {
        match self {
            Node::Struct(fields) => match fields.iter().find(|f| f.name == key) {
                Some(field) => Child {
                    node: field.node,
                    declared: true,
                    always_present: field.always_present,
                },
                None => untyped_child(),
            },
            Node::Map(element) => Child {
                node: element,
                declared: false,
                always_present: false,
            },
            Node::List(_) | Node::Atomic | Node::Untyped => untyped_child(),
        }
    }

    /// The list spec when this node is a list that is not atomic for apply.
    pub(crate) fn list(&self) -> Option<&ListSpec> {
        match self {
            Node::List(spec) => Some(spec),
            _ => None,
        }
    }
}

fn untyped_child() -> Child {
    Child {
        node: &UNTYPED,
        declared: true,
        always_present: false,
    }
}

const fn field(name: &'static str, node: &'static Node) -> Field {
    Field {
        name,
        node,
        always_present: false,
        retain_keys: false,
    }
}

/// A field whose patch strategy includes `retainKeys`.
const fn retaining(field: Field) -> Field {
    Field {
        retain_keys: true,
        ..field
    }
}

/// A non-pointer struct field.
const fn value_field(name: &'static str, node: &'static Node) -> Field {
    Field {
        name,
        node,
        always_present: true,
        retain_keys: false,
    }
}

const fn key(name: &'static str) -> KeyField {
    KeyField {
        name,
        default: None,
    }
}

const fn list(strategic: StrategicList, apply: ApplyList, item: &'static Node) -> Node {
    Node::List(ListSpec {
        strategic,
        apply,
        item,
    })
}

/// Lists merged by `name` in both patch flavours (containers, volumes, env...).
const fn keyed_by(key_name: &'static str, keys: &'static [KeyField], item: &'static Node) -> Node {
    list(
        StrategicList::MergeByKey(key_name),
        ApplyList::Map(keys),
        item,
    )
}

static UNTYPED: Node = Node::Untyped;
static ATOMIC: Node = Node::Atomic;
static STRING_MAP: Node = Node::Map(&ATOMIC);
static ATOMIC_LIST: Node = list(StrategicList::Replace, ApplyList::Atomic, &UNTYPED);

static NAME_KEY: [KeyField; 1] = [key("name")];
static TYPE_KEY: [KeyField; 1] = [key("type")];

static OBJECT_META: Node = Node::Struct(&[
    field("labels", &STRING_MAP),
    field("annotations", &STRING_MAP),
    field(
        "finalizers",
        &list(StrategicList::MergePrimitives, ApplyList::Set, &ATOMIC),
    ),
    field("ownerReferences", &keyed_by("uid", &[key("uid")], &UNTYPED)),
    field("managedFields", &ATOMIC_LIST),
]);

static CONDITIONS: Node = keyed_by("type", &TYPE_KEY, &UNTYPED);
static STATUS_WITH_CONDITIONS: Node = Node::Struct(&[field("conditions", &CONDITIONS)]);

static RESOURCE_REQUIREMENTS: Node = Node::Struct(&[
    field("limits", &STRING_MAP),
    field("requests", &STRING_MAP),
    field("claims", &keyed_by("name", &NAME_KEY, &UNTYPED)),
]);

static ENV_VAR: Node = Node::Struct(&[field(
    "valueFrom",
    &Node::Struct(&[
        field("configMapKeyRef", &ATOMIC),
        field("secretKeyRef", &ATOMIC),
        field("fieldRef", &ATOMIC),
        field("resourceFieldRef", &ATOMIC),
    ]),
)]);

static CONTAINER: Node = Node::Struct(&[
    field(
        "ports",
        &keyed_by(
            "containerPort",
            &[
                key("containerPort"),
                KeyField {
                    name: "protocol",
                    default: Some("TCP"),
                },
            ],
            &UNTYPED,
        ),
    ),
    field("env", &keyed_by("name", &NAME_KEY, &ENV_VAR)),
    field(
        "volumeMounts",
        &keyed_by("mountPath", &[key("mountPath")], &UNTYPED),
    ),
    field(
        "volumeDevices",
        &keyed_by("devicePath", &[key("devicePath")], &UNTYPED),
    ),
    value_field("resources", &RESOURCE_REQUIREMENTS),
]);

static CONTAINERS: Node = keyed_by("name", &NAME_KEY, &CONTAINER);

static POD_SPEC: Node = Node::Struct(&[
    // `json:"containers"` without omitempty: always serialized, like a non-pointer struct.
    value_field("containers", &CONTAINERS),
    field("initContainers", &CONTAINERS),
    field("ephemeralContainers", &CONTAINERS),
    // `patchStrategy:"merge,retainKeys"`.
    retaining(field("volumes", &keyed_by("name", &NAME_KEY, &UNTYPED))),
    field("imagePullSecrets", &keyed_by("name", &NAME_KEY, &ATOMIC)),
    field("tolerations", &ATOMIC_LIST),
    field("hostAliases", &keyed_by("ip", &[key("ip")], &UNTYPED)),
    field("nodeSelector", &ATOMIC),
    field(
        "affinity",
        &Node::Struct(&[field(
            "nodeAffinity",
            &Node::Struct(&[field(
                "requiredDuringSchedulingIgnoredDuringExecution",
                &ATOMIC,
            )]),
        )]),
    ),
    field(
        "topologySpreadConstraints",
        &keyed_by(
            "topologyKey",
            &[key("topologyKey"), key("whenUnsatisfiable")],
            &Node::Struct(&[field("labelSelector", &ATOMIC)]),
        ),
    ),
    field("schedulingGates", &keyed_by("name", &NAME_KEY, &UNTYPED)),
    field("resourceClaims", &keyed_by("name", &NAME_KEY, &UNTYPED)),
]);

static POD_TEMPLATE_SPEC: Node = Node::Struct(&[
    value_field("metadata", &OBJECT_META),
    value_field("spec", &POD_SPEC),
]);

static POD_STATUS: Node = Node::Struct(&[
    field("conditions", &CONDITIONS),
    field(
        "podIPs",
        &list(StrategicList::MergeByKey("ip"), ApplyList::Atomic, &UNTYPED),
    ),
]);

/// `metadata`, then the kind's own top-level fields.
macro_rules! object {
    ($($field:expr),* $(,)?) => {
        Node::Struct(&[value_field("metadata", &OBJECT_META), $($field),*])
    };
}

/// A workload: `spec` (selector, pod template, strategies) and `status` with conditions.
macro_rules! workload {
    ($($spec_field:expr),* $(,)?) => {
        object![
            value_field(
                "spec",
                &Node::Struct(&[
                    field("selector", &ATOMIC),
                    value_field("template", &POD_TEMPLATE_SPEC),
                    $($spec_field),*
                ]),
            ),
            value_field("status", &STATUS_WITH_CONDITIONS),
        ]
    };
}

static POD: Node = object![
    value_field("spec", &POD_SPEC),
    value_field("status", &POD_STATUS),
];
static POD_TEMPLATE: Node = object![value_field("template", &POD_TEMPLATE_SPEC)];
static REPLICATION_CONTROLLER: Node = object![
    value_field(
        "spec",
        &Node::Struct(&[
            field("selector", &ATOMIC),
            field("template", &POD_TEMPLATE_SPEC)
        ]),
    ),
    value_field("status", &STATUS_WITH_CONDITIONS),
];
static SERVICE_PORT_KEYS: [KeyField; 2] = [
    key("port"),
    KeyField {
        name: "protocol",
        default: Some("TCP"),
    },
];
static SERVICE: Node = object![
    value_field(
        "spec",
        &Node::Struct(&[
            field("ports", &keyed_by("port", &SERVICE_PORT_KEYS, &UNTYPED)),
            field("selector", &ATOMIC),
        ]),
    ),
    value_field(
        "status",
        &Node::Struct(&[
            field("conditions", &CONDITIONS),
            value_field("loadBalancer", &UNTYPED),
        ]),
    ),
];
static CONFIG_MAP: Node = object![field("data", &STRING_MAP), field("binaryData", &STRING_MAP),];
static SECRET: Node = object![field("data", &STRING_MAP), field("stringData", &STRING_MAP),];
static SERVICE_ACCOUNT: Node = object![
    field("secrets", &keyed_by("name", &NAME_KEY, &UNTYPED)),
    field("imagePullSecrets", &keyed_by("name", &NAME_KEY, &ATOMIC)),
];
static NAMESPACE: Node = object![
    value_field("spec", &UNTYPED),
    value_field("status", &STATUS_WITH_CONDITIONS),
];
static PERSISTENT_VOLUME_CLAIM: Node = object![
    value_field(
        "spec",
        &Node::Struct(&[
            field("selector", &ATOMIC),
            value_field("resources", &RESOURCE_REQUIREMENTS),
        ]),
    ),
    value_field("status", &STATUS_WITH_CONDITIONS),
];
// `strategy`: `patchStrategy:"retainKeys"`.
static DEPLOYMENT: Node = workload![retaining(value_field("strategy", &UNTYPED))];
static STATEFUL_SET: Node = workload![
    value_field("updateStrategy", &UNTYPED),
    field("volumeClaimTemplates", &ATOMIC_LIST),
];
static DAEMON_SET: Node = workload![value_field("updateStrategy", &UNTYPED)];
static REPLICA_SET: Node = workload![];
static JOB: Node = workload![];
static JOB_SPEC: Node = Node::Struct(&[
    field("selector", &ATOMIC),
    value_field("template", &POD_TEMPLATE_SPEC),
]);
static CRON_JOB: Node = object![
    value_field(
        "spec",
        &Node::Struct(&[value_field(
            "jobTemplate",
            &Node::Struct(&[
                value_field("metadata", &OBJECT_META),
                value_field("spec", &JOB_SPEC),
            ]),
        )]),
    ),
    value_field("status", &UNTYPED),
];
static ROLE: Node = object![
    field("rules", &ATOMIC_LIST),
    field(
        "aggregationRule",
        &Node::Struct(&[field("clusterRoleSelectors", &ATOMIC_LIST)]),
    ),
];
static ROLE_BINDING: Node = object![field("subjects", &ATOMIC_LIST)];
static POD_DISRUPTION_BUDGET: Node = object![
    value_field("spec", &Node::Struct(&[field("selector", &ATOMIC)])),
    value_field("status", &STATUS_WITH_CONDITIONS),
];
static SPEC_AND_STATUS: Node = object![
    value_field("spec", &UNTYPED),
    value_field("status", &UNTYPED)
];
/// Built-in kinds not in the table, and custom resources.
static METADATA_ONLY: Node = object![];

/// (group, kind) → type. The group is the part of `apiVersion` before `/` ("" for core).
static KINDS: &[(&str, &str, &Node)] = &[
    ("", "Pod", &POD),
    ("", "PodTemplate", &POD_TEMPLATE),
    ("", "ReplicationController", &REPLICATION_CONTROLLER),
    ("", "Service", &SERVICE),
    ("", "ConfigMap", &CONFIG_MAP),
    ("", "Secret", &SECRET),
    ("", "ServiceAccount", &SERVICE_ACCOUNT),
    ("", "Namespace", &NAMESPACE),
    ("", "PersistentVolumeClaim", &PERSISTENT_VOLUME_CLAIM),
    ("apps", "Deployment", &DEPLOYMENT),
    ("apps", "StatefulSet", &STATEFUL_SET),
    ("apps", "DaemonSet", &DAEMON_SET),
    ("apps", "ReplicaSet", &REPLICA_SET),
    ("batch", "Job", &JOB),
    ("batch", "CronJob", &CRON_JOB),
    ("rbac.authorization.k8s.io", "Role", &ROLE),
    ("rbac.authorization.k8s.io", "ClusterRole", &ROLE),
    ("rbac.authorization.k8s.io", "RoleBinding", &ROLE_BINDING),
    (
        "rbac.authorization.k8s.io",
        "ClusterRoleBinding",
        &ROLE_BINDING,
    ),
    ("policy", "PodDisruptionBudget", &POD_DISRUPTION_BUDGET),
    ("networking.k8s.io", "Ingress", &SPEC_AND_STATUS),
    ("networking.k8s.io", "NetworkPolicy", &SPEC_AND_STATUS),
    ("autoscaling", "HorizontalPodAutoscaler", &SPEC_AND_STATUS),
];

/// API groups served by kube-apiserver itself (not custom resources), which accept strategic
/// merge patches.
static BUILT_IN_GROUPS: &[&str] = &[
    "",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "apiregistration.k8s.io",
    "apps",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "events.k8s.io",
    "flowcontrol.apiserver.k8s.io",
    "internal.apiserver.k8s.io",
    "networking.k8s.io",
    "node.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "resource.k8s.io",
    "scheduling.k8s.io",
    "storage.k8s.io",
    "storagemigration.k8s.io",
];

fn group_of(api_version: &str) -> &str {
    match api_version.split_once('/') {
        Some((group, _)) => group,
        None => "",
    }
}

/// Whether kube-apiserver accepts `application/strategic-merge-patch+json` for this type: only
/// built-in kinds; custom resources get 415 Unsupported Media Type.
pub fn supports_strategic_merge(api_version: &str, kind: &str) -> bool {
    !kind.is_empty() && BUILT_IN_GROUPS.contains(&group_of(api_version))
}

/// The type of a whole object of this apiVersion and kind.
pub(crate) fn root_for(api_version: &str, kind: &str) -> &'static Node {
    let group = group_of(api_version);
    KINDS
        .iter()
        .find(|(g, k, _)| *g == group && *k == kind)
        .map_or(&METADATA_ONLY, |(_, _, node)| node)
}

/// How a strategic merge patch treats a list, for clients computing patches (Helm's
/// three-way strategic merge patch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListStrategy {
    /// The patch's list replaces the live one.
    Replace,
    /// Items (objects) merged by the value of this key.
    MergeByKey(&'static str),
    /// A list of scalars merged as a set.
    MergePrimitives,
}

/// A position in the type of a built-in kind (the table of this crate), for walking an object
/// alongside its type.
#[derive(Clone, Copy)]
pub struct TypeNode(&'static Node);

impl TypeNode {
    /// The type of a whole object of this apiVersion and kind.
    pub fn of_kind(api_version: &str, kind: &str) -> TypeNode {
        TypeNode(root_for(api_version, kind))
    }

    /// The type of the value under `key` of an object of this type.
    pub fn child(self, key: &str) -> TypeNode {
        TypeNode(self.0.child(key).node)
    }

    /// Whether the field `key` of this struct has the `retainKeys` patch strategy (for a
    /// map field: the map retains keys; for a list field: each item does).
    pub fn retains_keys(self, key: &str) -> bool {
        match self.0 {
            Node::Struct(fields) => fields.iter().any(|f| f.name == key && f.retain_keys),
            _ => false,
        }
    }

    /// The type of the items when this is a list.
    pub fn item(self) -> TypeNode {
        match self.0 {
            Node::List(spec) => TypeNode(spec.item),
            _ => TypeNode(&UNTYPED),
        }
    }

    /// How a strategic merge patch treats this list (`Replace` for anything not a known list).
    pub fn list_strategy(self) -> ListStrategy {
        match self.0 {
            Node::List(spec) => match spec.strategic {
                StrategicList::Replace => ListStrategy::Replace,
                StrategicList::MergeByKey(key) => ListStrategy::MergeByKey(key),
                StrategicList::MergePrimitives => ListStrategy::MergePrimitives,
            },
            _ => ListStrategy::Replace,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retain_keys_fields_are_those_kube_tags_so() {
        let deployment = TypeNode::of_kind("apps/v1", "Deployment");
        let spec = deployment.child("spec");
        assert!(spec.retains_keys("strategy"));
        assert!(!spec.retains_keys("template"));
        let pod_spec = spec.child("template").child("spec");
        assert!(pod_spec.retains_keys("volumes"));
        assert!(!pod_spec.retains_keys("containers"));
        assert!(!TypeNode::of_kind("v1", "ConfigMap").retains_keys("data"));
    }

    #[test]
    fn strategic_merge_is_for_built_in_groups_only() {
        assert!(supports_strategic_merge("v1", "ConfigMap"));
        assert!(supports_strategic_merge("apps/v1", "Deployment"));
        assert!(supports_strategic_merge(
            "storage.k8s.io/v1",
            "StorageClass"
        ));
        assert!(!supports_strategic_merge("example.com/v1", "Widget"));
        assert!(!supports_strategic_merge(
            "gateway.networking.k8s.io/v1",
            "Gateway"
        ));
    }

    #[test]
    fn pod_template_lists_resolve() {
        let deployment = root_for("apps/v1", "Deployment");
        let spec = deployment
            .child("spec")
            .node
            .child("template")
            .node
            .child("spec")
            .node;
        let containers = spec.child("containers").node.list().unwrap();
        assert_eq!(containers.strategic, StrategicList::MergeByKey("name"));
        let ports = containers.item.child("ports").node.list().unwrap();
        assert_eq!(ports.strategic, StrategicList::MergeByKey("containerPort"));
        assert!(matches!(ports.apply, ApplyList::Map(keys) if keys.len() == 2));
        assert!(matches!(
            deployment.child("spec").node.child("selector").node,
            Node::Atomic
        ));
        assert!(
            deployment
                .child("spec")
                .node
                .child("template")
                .always_present
        );
        let unknown = root_for("example.com/v1", "Widget");
        assert!(matches!(unknown.child("spec").node, Node::Untyped));
        assert!(
            unknown
                .child("metadata")
                .node
                .child("finalizers")
                .node
                .list()
                .is_some()
        );
    }
}
