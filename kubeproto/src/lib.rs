//! Decoding of the protobuf request bodies client-go's typed clients send (`kubectl create
//! configmap|secret|namespace|serviceaccount|deployment`, `kubectl scale`, helm's release
//! Secrets, typed DeleteOptions):
//! the `k8s\0` envelope around `runtime.Unknown`, and the few core types they carry.
//! Responses are always JSON, which those clients accept as well.

use base64::Engine;
use serde_json::{Map, Value, json};

const MAGIC: &[u8] = b"k8s\0";

#[derive(Debug, Clone, Copy)]
enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

fn varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut n: u64 = 0;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*pos)?;
        *pos += 1;
        n |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(n);
        }
    }
    None
}

/// The fields of one message, in order.
fn fields(buf: &[u8]) -> Option<Vec<(u64, Wire<'_>)>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let key = varint(buf, &mut pos)?;
        let wire = match key & 7 {
            0 => Wire::Varint(varint(buf, &mut pos)?),
            1 => {
                pos = pos.checked_add(8)?;
                Wire::Fixed
            }
            2 => {
                let len = usize::try_from(varint(buf, &mut pos)?).ok()?;
                let end = pos.checked_add(len)?;
                let bytes = buf.get(pos..end)?;
                pos = end;
                Wire::Bytes(bytes)
            }
            5 => {
                pos = pos.checked_add(4)?;
                Wire::Fixed
            }
            _ => return None,
        };
        out.push((key >> 3, wire));
    }
    (pos == buf.len()).then_some(out)
}

#[derive(Clone, Copy)]
enum Ty {
    Str,
    Int,
    /// An optional (pointer) integer: zero is a value, not an absent field.
    Int0,
    /// `intstr.IntOrString`.
    IntOrStr,
    Bool,
    Time,
    Msg(&'static [Field]),
    MapStr,
    MapBytes,
    RepStr,
    RepMsg(&'static [Field]),
}

type Field = (u64, &'static str, Ty);

const TIME: Ty = Ty::Time;
const OWNER_REFERENCE: &[Field] = &[
    (1, "kind", Ty::Str),
    (3, "name", Ty::Str),
    (4, "uid", Ty::Str),
    (5, "apiVersion", Ty::Str),
    (6, "controller", Ty::Bool),
    (7, "blockOwnerDeletion", Ty::Bool),
];
const OBJECT_META: &[Field] = &[
    (1, "name", Ty::Str),
    (2, "generateName", Ty::Str),
    (3, "namespace", Ty::Str),
    (5, "uid", Ty::Str),
    (6, "resourceVersion", Ty::Str),
    (7, "generation", Ty::Int),
    (8, "creationTimestamp", TIME),
    (9, "deletionTimestamp", TIME),
    (10, "deletionGracePeriodSeconds", Ty::Int),
    (11, "labels", Ty::MapStr),
    (12, "annotations", Ty::MapStr),
    (13, "ownerReferences", Ty::RepMsg(OWNER_REFERENCE)),
    (14, "finalizers", Ty::RepStr),
];
const CONFIG_MAP: &[Field] = &[
    (1, "metadata", Ty::Msg(OBJECT_META)),
    (2, "data", Ty::MapStr),
    (3, "binaryData", Ty::MapBytes),
    (4, "immutable", Ty::Bool),
];
const SECRET: &[Field] = &[
    (1, "metadata", Ty::Msg(OBJECT_META)),
    (2, "data", Ty::MapBytes),
    (3, "type", Ty::Str),
    (4, "stringData", Ty::MapStr),
    (5, "immutable", Ty::Bool),
];
const NAMESPACE_SPEC: &[Field] = &[(1, "finalizers", Ty::RepStr)];
const NAMESPACE_STATUS: &[Field] = &[(1, "phase", Ty::Str)];
const NAMESPACE: &[Field] = &[
    (1, "metadata", Ty::Msg(OBJECT_META)),
    (2, "spec", Ty::Msg(NAMESPACE_SPEC)),
    (3, "status", Ty::Msg(NAMESPACE_STATUS)),
];
const OBJECT_REFERENCE: &[Field] = &[
    (1, "kind", Ty::Str),
    (2, "namespace", Ty::Str),
    (3, "name", Ty::Str),
    (4, "uid", Ty::Str),
    (5, "apiVersion", Ty::Str),
    (6, "resourceVersion", Ty::Str),
    (7, "fieldPath", Ty::Str),
];
const LOCAL_OBJECT_REFERENCE: &[Field] = &[(1, "name", Ty::Str)];
const SERVICE_ACCOUNT: &[Field] = &[
    (1, "metadata", Ty::Msg(OBJECT_META)),
    (2, "secrets", Ty::RepMsg(OBJECT_REFERENCE)),
    (3, "imagePullSecrets", Ty::RepMsg(LOCAL_OBJECT_REFERENCE)),
    (4, "automountServiceAccountToken", Ty::Bool),
];
const LABEL_SELECTOR_REQUIREMENT: &[Field] = &[
    (1, "key", Ty::Str),
    (2, "operator", Ty::Str),
    (3, "values", Ty::RepStr),
];
const LABEL_SELECTOR: &[Field] = &[
    (1, "matchLabels", Ty::MapStr),
    (
        2,
        "matchExpressions",
        Ty::RepMsg(LABEL_SELECTOR_REQUIREMENT),
    ),
];
const CONTAINER_PORT: &[Field] = &[
    (1, "name", Ty::Str),
    (2, "hostPort", Ty::Int),
    (3, "containerPort", Ty::Int),
    (4, "protocol", Ty::Str),
    (5, "hostIP", Ty::Str),
];
const ENV_VAR: &[Field] = &[(1, "name", Ty::Str), (2, "value", Ty::Str)];
const RESOURCE_REQUIREMENTS: &[Field] = &[];
const CONTAINER: &[Field] = &[
    (1, "name", Ty::Str),
    (2, "image", Ty::Str),
    (3, "command", Ty::RepStr),
    (4, "args", Ty::RepStr),
    (5, "workingDir", Ty::Str),
    (6, "ports", Ty::RepMsg(CONTAINER_PORT)),
    (7, "env", Ty::RepMsg(ENV_VAR)),
    (8, "resources", Ty::Msg(RESOURCE_REQUIREMENTS)),
    (13, "terminationMessagePath", Ty::Str),
    (14, "imagePullPolicy", Ty::Str),
    (16, "stdin", Ty::Bool),
    (17, "stdinOnce", Ty::Bool),
    (18, "tty", Ty::Bool),
    (20, "terminationMessagePolicy", Ty::Str),
];
const POD_SPEC: &[Field] = &[
    (2, "containers", Ty::RepMsg(CONTAINER)),
    (3, "restartPolicy", Ty::Str),
    (4, "terminationGracePeriodSeconds", Ty::Int0),
    (5, "activeDeadlineSeconds", Ty::Int0),
    (6, "dnsPolicy", Ty::Str),
    (7, "nodeSelector", Ty::MapStr),
    (8, "serviceAccountName", Ty::Str),
    (9, "serviceAccount", Ty::Str),
    (10, "nodeName", Ty::Str),
    (11, "hostNetwork", Ty::Bool),
    (15, "imagePullSecrets", Ty::RepMsg(LOCAL_OBJECT_REFERENCE)),
    (16, "hostname", Ty::Str),
    (17, "subdomain", Ty::Str),
    (19, "schedulerName", Ty::Str),
    (20, "initContainers", Ty::RepMsg(CONTAINER)),
    (21, "automountServiceAccountToken", Ty::Bool),
    (24, "priorityClassName", Ty::Str),
];
const POD_TEMPLATE_SPEC: &[Field] = &[
    (1, "metadata", Ty::Msg(OBJECT_META)),
    (2, "spec", Ty::Msg(POD_SPEC)),
];
const ROLLING_UPDATE_DEPLOYMENT: &[Field] = &[
    (1, "maxUnavailable", Ty::IntOrStr),
    (2, "maxSurge", Ty::IntOrStr),
];
const DEPLOYMENT_STRATEGY: &[Field] = &[
    (1, "type", Ty::Str),
    (2, "rollingUpdate", Ty::Msg(ROLLING_UPDATE_DEPLOYMENT)),
];
const DEPLOYMENT_SPEC: &[Field] = &[
    (1, "replicas", Ty::Int0),
    (2, "selector", Ty::Msg(LABEL_SELECTOR)),
    (3, "template", Ty::Msg(POD_TEMPLATE_SPEC)),
    (4, "strategy", Ty::Msg(DEPLOYMENT_STRATEGY)),
    (5, "minReadySeconds", Ty::Int),
    (6, "revisionHistoryLimit", Ty::Int0),
    (7, "paused", Ty::Bool),
    (9, "progressDeadlineSeconds", Ty::Int0),
];
/// The status a client sends is ignored by the server (no status subresource write).
const NO_FIELDS: &[Field] = &[];
const DEPLOYMENT: &[Field] = &[
    (1, "metadata", Ty::Msg(OBJECT_META)),
    (2, "spec", Ty::Msg(DEPLOYMENT_SPEC)),
    (3, "status", Ty::Msg(NO_FIELDS)),
];
const SCALE_SPEC: &[Field] = &[(1, "replicas", Ty::Int0)];
const SCALE: &[Field] = &[
    (1, "metadata", Ty::Msg(OBJECT_META)),
    (2, "spec", Ty::Msg(SCALE_SPEC)),
];
const PRECONDITIONS: &[Field] = &[(1, "uid", Ty::Str), (2, "resourceVersion", Ty::Str)];
const DELETE_OPTIONS: &[Field] = &[
    (1, "gracePeriodSeconds", Ty::Int),
    (2, "preconditions", Ty::Msg(PRECONDITIONS)),
    (3, "orphanDependents", Ty::Bool),
    (4, "propagationPolicy", Ty::Str),
    (5, "dryRun", Ty::RepStr),
];

fn utf8(b: &[u8]) -> Option<String> {
    String::from_utf8(b.to_vec()).ok()
}

fn map_entry(b: &[u8], bytes_values: bool) -> Option<(String, Value)> {
    let mut key = String::new();
    let mut value = Value::String(String::new());
    for (n, w) in fields(b)? {
        match (n, w) {
            (1, Wire::Bytes(k)) => key = utf8(k)?,
            (2, Wire::Bytes(v)) if bytes_values => {
                value = json!(base64::engine::general_purpose::STANDARD.encode(v));
            }
            (2, Wire::Bytes(v)) => value = json!(utf8(v)?),
            _ => {}
        }
    }
    Some((key, value))
}

/// `intstr.IntOrString`: type 0 is `intVal`, type 1 `strVal`.
fn int_or_string(b: &[u8]) -> Option<Value> {
    let (mut is_string, mut int, mut text) = (false, 0i64, String::new());
    for (n, w) in fields(b)? {
        match (n, w) {
            (1, Wire::Varint(t)) => is_string = t == 1,
            (2, Wire::Varint(v)) => int = i64::from(v as i32),
            (3, Wire::Bytes(s)) => text = utf8(s)?,
            _ => {}
        }
    }
    Some(if is_string { json!(text) } else { json!(int) })
}

/// Some(None) for the zero time.
fn time(b: &[u8]) -> Option<Option<Value>> {
    let mut seconds = 0i64;
    for (n, w) in fields(b)? {
        if let (1, Wire::Varint(v)) = (n, w) {
            seconds = v as i64;
        }
    }
    if seconds == 0 {
        return Some(None);
    }
    let ts = jiff::Timestamp::from_second(seconds).ok()?;
    Some(Some(json!(ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())))
}

fn message(buf: &[u8], schema: &[Field]) -> Option<Value> {
    let mut out = Map::new();
    for (n, wire) in fields(buf)? {
        let Some((_, name, ty)) = schema.iter().find(|(num, _, _)| *num == n) else {
            continue;
        };
        let name = name.to_string();
        match (ty, wire) {
            // Go's proto2 encoding writes empty non-pointer fields; JSON would omit them.
            (Ty::Str, Wire::Bytes([])) => {}
            (Ty::Int | Ty::Bool, Wire::Varint(0)) => {}
            (Ty::Str, Wire::Bytes(b)) => {
                out.insert(name, json!(utf8(b)?));
            }
            (Ty::Int | Ty::Int0, Wire::Varint(v)) => {
                out.insert(name, json!(v as i64));
            }
            (Ty::IntOrStr, Wire::Bytes(b)) => {
                out.insert(name, int_or_string(b)?);
            }
            (Ty::Bool, Wire::Varint(v)) => {
                out.insert(name, json!(v != 0));
            }
            (Ty::Time, Wire::Bytes(b)) => {
                if let Some(t) = time(b)? {
                    out.insert(name, t);
                }
            }
            (Ty::Msg(s), Wire::Bytes(b)) => {
                out.insert(name, message(b, s)?);
            }
            (Ty::MapStr | Ty::MapBytes, Wire::Bytes(b)) => {
                let (k, v) = map_entry(b, matches!(ty, Ty::MapBytes))?;
                if let Some(m) = out.entry(name).or_insert_with(|| json!({})).as_object_mut() {
                    m.insert(k, v);
                }
            }
            (Ty::RepStr, Wire::Bytes(b)) => {
                if let Some(a) = out.entry(name).or_insert_with(|| json!([])).as_array_mut() {
                    a.push(json!(utf8(b)?));
                }
            }
            (Ty::RepMsg(s), Wire::Bytes(b)) => {
                let item = message(b, s)?;
                if let Some(a) = out.entry(name).or_insert_with(|| json!([])).as_array_mut() {
                    a.push(item);
                }
            }
            _ => {}
        }
    }
    Some(Value::Object(out))
}

/// Whether a body is a Kubernetes protobuf envelope.
pub fn is_envelope(body: &[u8]) -> bool {
    body.starts_with(MAGIC)
}

/// Decodes an envelope into JSON; None for a malformed body or a type this server cannot read.
pub fn decode(body: &[u8]) -> Option<Value> {
    let unknown = body.strip_prefix(MAGIC)?;
    let mut api_version = String::new();
    let mut kind = String::new();
    let mut raw: &[u8] = &[];
    for (n, w) in fields(unknown)? {
        match (n, w) {
            (1, Wire::Bytes(tm)) => {
                for (m, v) in fields(tm)? {
                    match (m, v) {
                        (1, Wire::Bytes(s)) => api_version = utf8(s)?,
                        (2, Wire::Bytes(s)) => kind = utf8(s)?,
                        _ => {}
                    }
                }
            }
            (2, Wire::Bytes(r)) => raw = r,
            _ => {}
        }
    }
    let schema = match (api_version.as_str(), kind.as_str()) {
        ("v1", "ConfigMap") => CONFIG_MAP,
        ("v1", "Secret") => SECRET,
        ("v1", "Namespace") => NAMESPACE,
        ("v1", "ServiceAccount") => SERVICE_ACCOUNT,
        ("apps/v1", "Deployment") => DEPLOYMENT,
        ("autoscaling/v1", "Scale") => SCALE,
        (_, "DeleteOptions") => DELETE_OPTIONS,
        _ => return None,
    };
    let mut value = message(raw, schema)?;
    if let Some(m) = value.as_object_mut() {
        m.insert("apiVersion".into(), json!(api_version));
        m.insert("kind".into(), json!(kind));
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(n: u64, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![((n << 3) | 2) as u8, payload.len() as u8];
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn decodes_a_secret() {
        let meta = [
            field(1, b"s1"),
            field(11, &[field(1, b"owner"), field(2, b"helm")].concat()),
        ]
        .concat();
        let secret = [
            field(1, &meta),
            field(2, &[field(1, b"release"), field(2, b"\x00\x01")].concat()),
            field(3, b"helm.sh/release.v1"),
        ]
        .concat();
        let type_meta = [field(1, b"v1"), field(2, b"Secret")].concat();
        let body = [MAGIC.to_vec(), field(1, &type_meta), field(2, &secret)].concat();
        let v = decode(&body).unwrap();
        assert_eq!(v["metadata"]["name"], "s1");
        assert_eq!(v["metadata"]["labels"]["owner"], "helm");
        assert_eq!(v["data"]["release"], "AAE=");
        assert_eq!(v["type"], "helm.sh/release.v1");
        assert!(decode(b"k8s\0\xff").is_none());
    }

    fn varint_field(n: u64, v: u64) -> Vec<u8> {
        vec![(n << 3) as u8, v as u8]
    }

    #[test]
    fn decodes_a_deployment_as_kubectl_create_sends_it() {
        let labels = [field(1, b"app"), field(2, b"web")].concat();
        let meta = [field(1, b"web"), field(11, &labels)].concat();
        let container = [field(1, b"nginx"), field(2, b"nginx:1"), field(8, &[])].concat();
        let pod_spec = field(2, &container);
        let template = [field(1, &field(11, &labels)), field(2, &pod_spec)].concat();
        let surge = [varint_field(1, 1), varint_field(2, 0), field(3, b"25%")].concat();
        let unavailable = [varint_field(1, 0), varint_field(2, 2), field(3, b"")].concat();
        let strategy = [
            field(1, b"RollingUpdate"),
            field(2, &[field(1, &unavailable), field(2, &surge)].concat()),
        ]
        .concat();
        let spec = [
            varint_field(1, 0),
            field(2, &field(1, &labels)),
            field(3, &template),
            field(4, &strategy),
            varint_field(5, 0),
        ]
        .concat();
        let deployment = [field(1, &meta), field(2, &spec), field(3, &[])].concat();
        let type_meta = [field(1, b"apps/v1"), field(2, b"Deployment")].concat();
        let body = [MAGIC.to_vec(), field(1, &type_meta), field(2, &deployment)].concat();
        let v = decode(&body).unwrap();
        assert_eq!(v["kind"], "Deployment");
        assert_eq!(v["spec"]["replicas"], 0, "an explicit zero replicas stays");
        assert!(v["spec"].get("minReadySeconds").is_none());
        assert_eq!(v["spec"]["selector"]["matchLabels"]["app"], "web");
        assert_eq!(v["spec"]["template"]["metadata"]["labels"]["app"], "web");
        assert_eq!(
            v["spec"]["template"]["spec"]["containers"][0]["image"],
            "nginx:1"
        );
        assert_eq!(
            v["spec"]["template"]["spec"]["containers"][0]["resources"],
            json!({})
        );
        assert_eq!(v["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        assert_eq!(v["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], 2);
    }
}
