//! Targets as deployers see them: resolution of `secretRef`s (`targetresolver`) and Landscaper's
//! `ValidateTarget` (`pkg/deployer/lib/target_validation.go`). Pure functions, no store access.

use std::collections::BTreeMap;

use landscaper_deployers::SecondaryTarget;
use landscaper_store::model::{Secret, Target, kubeconfig_text};
use serde_json::{Map, Value};

use super::contract::TargetLookup;

/// What reading a Target object by name (and its Secret) found in the store.
#[derive(Debug, Clone, PartialEq)]
pub enum TargetRead {
    NotFound,
    /// The Target object does not decode: `target <ns>/<name>: <error>`.
    Unreadable(String),
    /// Its Secret does not decode: `secret <ns>/<name>: <error>`.
    SecretUnreadable(String),
    /// Its Secret is missing or lacks the content (the cause only, e.g. `secrets "s" not found`).
    Unresolvable(String),
    Found(Box<ResolvedTarget>),
}

impl TargetRead {
    /// As the item's `spec.target` (`namespace`/`name`).
    pub fn into_lookup(self, namespace: &str, name: &str) -> TargetLookup {
        match self {
            TargetRead::NotFound => TargetLookup::NotFound,
            TargetRead::Unreadable(m) | TargetRead::SecretUnreadable(m) => {
                TargetLookup::Unresolvable(m)
            }
            TargetRead::Unresolvable(e) => TargetLookup::Unresolvable(format!(
                "unable to resolve target {namespace}/{name}: {e}"
            )),
            TargetRead::Found(t) => TargetLookup::Found(t),
        }
    }

    /// As a secondary target (`targetName`); `None` when there is no such Target. A resolved
    /// Target is validated as `spec.target` is: an unusable kubeconfig is a configuration
    /// problem.
    pub fn into_secondary(self) -> Option<SecondaryTarget> {
        Some(match self {
            TargetRead::NotFound => return None,
            TargetRead::Unreadable(m) => SecondaryTarget::Unreadable(m),
            TargetRead::SecretUnreadable(m) | TargetRead::Unresolvable(m) => {
                SecondaryTarget::Unresolvable(m)
            }
            TargetRead::Found(t) => match validate_target(Some(t.as_ref())) {
                Ok(()) => SecondaryTarget::Resolved(Box::new(t.target)),
                Err(e) => SecondaryTarget::Invalid(e),
            },
        })
    }
}

/// A Target with its configuration resolved (Landscaper's `ResolvedTarget`): `spec.config`
/// holds the content, read from the referenced Secret for `secretRef` targets.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedTarget {
    pub target: Target,
    /// Set when the content from a Secret is not YAML/JSON; validation reports it.
    pub parse_error: Option<String>,
}

impl ResolvedTarget {
    /// A target with an inline configuration.
    pub fn inline(target: Target) -> ResolvedTarget {
        ResolvedTarget {
            target,
            parse_error: None,
        }
    }

    /// A `secretRef` target resolved with its Secret (`SecretRefResolver.Resolve`): with a
    /// `key` the entry is the content; without one the whole Secret, each value read as YAML.
    pub fn from_secret(mut target: Target, secret: &Secret) -> Result<ResolvedTarget, String> {
        let reference = target.spec.secret_ref.take().unwrap_or_default();
        let data = secret.decoded_data();
        let secret_name = format!("{}/{}", secret.metadata.namespace(), secret.metadata.name());
        let (config, parse_error) = match reference.key.as_deref().filter(|k| !k.is_empty()) {
            Some(key) => {
                let bytes = data
                    .get(key)
                    .ok_or_else(|| format!("key {key} in secret {secret_name} does not exist"))?;
                match parse_content(&String::from_utf8_lossy(bytes)) {
                    Ok(v) => (v, None),
                    Err(e) => (None, Some(e)),
                }
            }
            None => {
                let mut map = Map::new();
                for (key, bytes) in &data {
                    let value = parse_content(&String::from_utf8_lossy(bytes)).map_err(|e| {
                        format!("unable to convert secret data to raw message map: {e}")
                    })?;
                    map.insert(key.clone(), value.unwrap_or(Value::Null));
                }
                (Some(Value::Object(map)), None)
            }
        };
        target.spec.config = config;
        Ok(ResolvedTarget {
            target,
            parse_error,
        })
    }
}

/// YAML (or JSON) text as a value; empty text is no value. The text is a credential (a
/// kubeconfig, a Secret's data): the error gives the position, never the parser's message,
/// which quotes the text (a snippet of the line).
pub fn parse_content(text: &str) -> Result<Option<Value>, String> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    serde_saphyr::from_str_with_options::<Value>(
        text,
        crate::daemon::ingest::manifest::yaml_options(),
    )
    .map(Some)
    .map_err(|e| match e.location() {
        Some(at) => format!(
            "line {} column {}: not valid YAML (the content is not shown)",
            at.line(),
            at.column()
        ),
        None => "not valid YAML (the content is not shown)".to_string(),
    })
}

/// `ValidateTarget`: a target's kubeconfig must load, and may not use client certificate or
/// key files, token files, impersonation, auth providers or exec plugins. `None` (no target)
/// is valid.
pub fn validate_target(target: Option<&ResolvedTarget>) -> Result<(), String> {
    let Some(target) = target else {
        return Ok(());
    };
    if let Some(e) = &target.parse_error {
        return Err(format!("unable to parse target confíguration: {e}"));
    }
    match kubeconfig_text(target.target.spec.config.as_ref()) {
        Some(text) => validate_kubeconfig(&text),
        None => Ok(()),
    }
}

const VALID_FIELDS: &str = "[client-certificate-data client-key-data token username password]";

/// Loads a kubeconfig as client-go's `clientcmd.Load` would (structure and types; unknown
/// fields are ignored) and rejects the credentials Landscaper does not accept in targets.
pub fn validate_kubeconfig(text: &str) -> Result<(), String> {
    if text.is_empty() {
        return Ok(());
    }
    let config = parse_content(text)
        .map_err(|e| format!("error loading config: {e}"))?
        .unwrap_or(Value::Null);
    let config = match config {
        Value::Null => return Ok(()),
        Value::Object(map) => map,
        other => {
            return Err(format!(
                "error loading config: a kubeconfig must be an object, not {}",
                json_type(&other)
            ));
        }
    };
    if let Some(kind) = config.get("kind").and_then(Value::as_str)
        && !kind.is_empty()
        && kind != "Config"
    {
        return Err(format!(
            "error loading config: no kind {kind:?} is registered for a kubeconfig"
        ));
    }
    if let Some(version) = config.get("apiVersion").and_then(Value::as_str)
        && !version.is_empty()
        && version != "v1"
    {
        return Err(format!(
            "error loading config: no version {version:?} is registered for a kubeconfig"
        ));
    }
    for field in ["clusters", "contexts"] {
        named_entries(&config, field, field_inner(field))?;
    }
    // clientcmd keeps users in a map by name: a later entry replaces an earlier one.
    let mut users: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    for (name, user) in named_entries(&config, "users", "user")? {
        users.insert(name, user);
    }
    for (name, user) in &users {
        check_user(name, user)?;
    }
    Ok(())
}

fn field_inner(field: &str) -> &'static str {
    match field {
        "clusters" => "cluster",
        "contexts" => "context",
        _ => "user",
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn type_error(path: &str, expected: &str, got: &Value) -> String {
    format!(
        "error loading config: {path} must be {expected}, not {}",
        json_type(got)
    )
}

/// A `{name, <inner>}` entry of a kubeconfig list.
type NamedEntry = (String, Map<String, Value>);

/// The `{name, <inner>}` entries of a list field (`users`, `clusters`, `contexts`).
fn named_entries(
    config: &Map<String, Value>,
    field: &str,
    inner: &str,
) -> Result<Vec<NamedEntry>, String> {
    let items = match config.get(field) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(type_error(field, "a list", other)),
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let entry = match item {
            Value::Null => continue,
            Value::Object(entry) => entry,
            other => return Err(type_error(&format!("{field}[{i}]"), "an object", other)),
        };
        let name = match entry.get("name") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(type_error(&format!("{field}[{i}].name"), "a string", other));
            }
        };
        let body = match entry.get(inner) {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(body)) => body.clone(),
            Some(other) => {
                return Err(type_error(
                    &format!("{field}[{i}].{inner}"),
                    "an object",
                    other,
                ));
            }
        };
        out.push((name, body));
    }
    Ok(out)
}

fn string_field(user: &Map<String, Value>, name: &str, field: &str) -> Result<String, String> {
    match user.get(field) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(type_error(
            &format!("users[{name}].user.{field}"),
            "a string",
            other,
        )),
    }
}

fn check_user(name: &str, user: &Map<String, Value>) -> Result<(), String> {
    let unsupported = |what: &str| {
        format!(
            "{what} are not supported in a target kubeconfig (user {name:?}), the valid fields are: {VALID_FIELDS}"
        )
    };
    if !string_field(user, name, "client-certificate")?.is_empty() {
        return Err(unsupported("client certificate files"));
    }
    if !string_field(user, name, "client-key")?.is_empty() {
        return Err(unsupported("client key files"));
    }
    if !string_field(user, name, "tokenFile")?.is_empty() {
        return Err(unsupported("token files"));
    }
    let impersonate = !string_field(user, name, "as")?.is_empty();
    let groups = match user.get("as-groups") {
        None | Some(Value::Null) => false,
        Some(Value::Array(g)) => !g.is_empty(),
        Some(other) => {
            return Err(type_error(
                &format!("users[{name}].user.as-groups"),
                "a list",
                other,
            ));
        }
    };
    if impersonate || groups {
        return Err(format!(
            "impersonation is not supported in a target kubeconfig, the valid fields are: {VALID_FIELDS}"
        ));
    }
    match user.get("auth-provider") {
        None | Some(Value::Null) => {}
        Some(Value::Object(provider)) => match provider.get("config") {
            None | Some(Value::Null) => {}
            Some(Value::Object(config)) if config.is_empty() => {}
            Some(Value::Object(_)) => {
                return Err(unsupported("auth provider configurations"));
            }
            Some(other) => {
                return Err(type_error(
                    &format!("users[{name}].user.auth-provider.config"),
                    "an object",
                    other,
                ));
            }
        },
        Some(other) => {
            return Err(type_error(
                &format!("users[{name}].user.auth-provider"),
                "an object",
                other,
            ));
        }
    }
    if user.get("exec").is_some_and(|e| !e.is_null()) {
        return Err(unsupported("exec configurations"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use landscaper_store::model::{LocalSecretReference, ObjectMeta, TargetSpec};
    use serde_json::json;

    fn kubeconfig(user: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://x.invalid\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\ncurrent-context: c\nusers:\n- name: u\n  user:\n{user}\n"
        )
    }

    fn target(config: Value) -> ResolvedTarget {
        ResolvedTarget::inline(Target {
            spec: TargetSpec {
                r#type: "landscaper.gardener.cloud/kubernetes-cluster".into(),
                config: Some(config),
                secret_ref: None,
            },
            ..Default::default()
        })
    }

    #[test]
    fn accepts_tokens_certificate_data_and_basic_auth() {
        for user in [
            "    token: abc",
            "    client-certificate-data: Zm9v\n    client-key-data: YmFy",
            "    username: a\n    password: b",
            "    auth-provider: {name: oidc}",
            "    exec: null",
        ] {
            let t = target(json!({"kubeconfig": kubeconfig(user)}));
            assert_eq!(validate_target(Some(&t)), Ok(()), "{user}");
        }
        assert_eq!(validate_target(None), Ok(()));
    }

    #[test]
    fn rejects_files_exec_auth_providers_and_impersonation_like_landscaper() {
        let cases = [
            (
                "    tokenFile: /var/run/token",
                "token files are not supported in a target kubeconfig (user \"u\")",
            ),
            (
                "    client-certificate: /c.crt",
                "client certificate files are not supported",
            ),
            (
                "    client-key: /c.key",
                "client key files are not supported",
            ),
            (
                "    as: admin",
                "impersonation is not supported in a target kubeconfig, the valid fields are: [client-certificate-data client-key-data token username password]",
            ),
            ("    as-groups: [g]", "impersonation is not supported"),
            (
                "    auth-provider: {name: gcp, config: {a: b}}",
                "auth provider configurations are not supported",
            ),
            (
                "    exec: {command: aws}",
                "exec configurations are not supported",
            ),
        ];
        for (user, message) in cases {
            let t = target(json!({"kubeconfig": kubeconfig(user)}));
            let err = validate_target(Some(&t)).unwrap_err();
            assert!(err.contains(message), "{user}: {err}");
        }
    }

    #[test]
    fn a_kubeconfig_that_does_not_load_is_rejected() {
        for bad in [
            "users: [",
            "just a string",
            "users: 5",
            "users:\n- name: u\n  user: x",
        ] {
            let t = target(json!({"kubeconfig": bad}));
            assert!(validate_target(Some(&t)).is_err(), "{bad}");
        }
        let t = target(json!({"kubeconfig": "kind: Secret"}));
        assert!(validate_target(Some(&t)).is_err());
    }

    #[test]
    fn the_whole_configuration_counts_as_kubeconfig_without_a_kubeconfig_field() {
        // Landscaper's decoder falls back to reading the whole content as the kubeconfig
        // (`landscaper_store::model::kubeconfig_text`), so a free-form target config is fine,
        // a users list with a token file is not.
        assert_eq!(
            validate_target(Some(&target(json!({"foo": "bar"})))),
            Ok(())
        );
        let t = target(json!({"users": [{"name": "u", "user": {"tokenFile": "/t"}}]}));
        assert!(validate_target(Some(&t)).is_err());
        assert!(validate_target(Some(&target(json!("not a kubeconfig")))).is_err());
    }

    #[test]
    fn later_users_with_the_same_name_replace_earlier_ones() {
        let k = "users:\n- name: u\n  user: {tokenFile: /t}\n- name: u\n  user: {token: x}\n";
        assert_eq!(validate_kubeconfig(k), Ok(()));
    }

    fn secret(data: &[(&str, &str)]) -> Secret {
        let mut s = Secret {
            metadata: ObjectMeta::namespaced("ns", "s"),
            ..Default::default()
        };
        s.string_data = Some(
            data.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        s
    }

    fn secret_target(key: Option<&str>) -> Target {
        Target {
            metadata: ObjectMeta::namespaced("ns", "t"),
            spec: TargetSpec {
                r#type: "landscaper.gardener.cloud/kubernetes-cluster".into(),
                config: None,
                secret_ref: Some(LocalSecretReference {
                    name: "s".into(),
                    key: key.map(str::to_string),
                }),
            },
            ..Default::default()
        }
    }

    #[test]
    fn reads_become_the_primary_lookup_with_the_messages_of_before() {
        assert_eq!(
            TargetRead::NotFound.into_lookup("ns", "t"),
            TargetLookup::NotFound
        );
        assert_eq!(
            TargetRead::Unresolvable("secrets \"s\" not found".into()).into_lookup("ns", "t"),
            TargetLookup::Unresolvable(
                "unable to resolve target ns/t: secrets \"s\" not found".into()
            )
        );
        assert_eq!(
            TargetRead::SecretUnreadable("secret ns/s: bad".into()).into_lookup("ns", "t"),
            TargetLookup::Unresolvable("secret ns/s: bad".into())
        );
        let t = target(json!({"kubeconfig": kubeconfig("    token: abc")}));
        assert_eq!(
            TargetRead::Found(Box::new(t.clone())).into_lookup("ns", "t"),
            TargetLookup::Found(Box::new(t))
        );
    }

    #[test]
    fn reads_become_secondary_targets_validated_like_the_primary_one() {
        assert_eq!(TargetRead::NotFound.into_secondary(), None);
        assert_eq!(
            TargetRead::Unreadable("target ns/t: bad".into()).into_secondary(),
            Some(SecondaryTarget::Unreadable("target ns/t: bad".into()))
        );
        assert_eq!(
            TargetRead::Unresolvable("secrets \"s\" not found".into()).into_secondary(),
            Some(SecondaryTarget::Unresolvable(
                "secrets \"s\" not found".into()
            ))
        );
        let good = target(json!({"kubeconfig": kubeconfig("    token: abc")}));
        assert_eq!(
            TargetRead::Found(Box::new(good.clone())).into_secondary(),
            Some(SecondaryTarget::Resolved(Box::new(good.target)))
        );
        let exec = target(json!({"kubeconfig": kubeconfig("    exec: {command: aws}")}));
        let Some(SecondaryTarget::Invalid(message)) =
            TargetRead::Found(Box::new(exec)).into_secondary()
        else {
            panic!("an exec kubeconfig is invalid");
        };
        assert!(
            message.contains("exec configurations are not supported"),
            "{message}"
        );
        // Secret content that is not YAML fails as it does for spec.target.
        let s = secret(&[("config", "a: [")]);
        let rt = ResolvedTarget::from_secret(secret_target(Some("config")), &s).unwrap();
        let Some(SecondaryTarget::Invalid(message)) =
            TargetRead::Found(Box::new(rt)).into_secondary()
        else {
            panic!("unparsable content is invalid");
        };
        assert!(
            message.starts_with("unable to parse target confíguration"),
            "{message}"
        );
    }

    #[test]
    fn secret_references_resolve_to_the_content() {
        let s = secret(&[("config", "kubeconfig: 'users: []'"), ("other", "x: 1")]);
        let rt = ResolvedTarget::from_secret(secret_target(Some("config")), &s).unwrap();
        assert_eq!(
            rt.target.spec.config,
            Some(json!({"kubeconfig": "users: []"}))
        );
        assert_eq!(rt.target.spec.secret_ref, None);
        assert_eq!(validate_target(Some(&rt)), Ok(()));

        let rt = ResolvedTarget::from_secret(secret_target(None), &s).unwrap();
        assert_eq!(
            rt.target.spec.config,
            Some(json!({"config": {"kubeconfig": "users: []"}, "other": {"x": 1}}))
        );

        let err = ResolvedTarget::from_secret(secret_target(Some("missing")), &s).unwrap_err();
        assert_eq!(err, "key missing in secret ns/s does not exist");

        let s = secret(&[("config", "a: [")]);
        let rt = ResolvedTarget::from_secret(secret_target(Some("config")), &s).unwrap();
        let err = validate_target(Some(&rt)).unwrap_err();
        assert!(
            err.starts_with("unable to parse target confíguration"),
            "{err}"
        );
    }

    #[test]
    fn errors_about_credentials_do_not_quote_them() {
        for text in [
            "users: [{user: {token: SeCrEt}}\n  bad: SeCrEt",
            "a: \"SeCrEt",
            "token: SeCrEt: x",
        ] {
            let err = validate_kubeconfig(text).unwrap_err();
            assert!(!err.contains("SeCrEt"), "{err}");
            assert!(err.contains(": not valid YAML (the content"), "{err}");
            let s = secret(&[("config", text)]);
            let rt = ResolvedTarget::from_secret(secret_target(Some("config")), &s).unwrap();
            let err = validate_target(Some(&rt)).unwrap_err();
            assert!(!err.contains("SeCrEt"), "{err}");
            let err = ResolvedTarget::from_secret(secret_target(None), &s).unwrap_err();
            assert!(!err.contains("SeCrEt"), "{err}");
        }
    }
}
