//! Kubernetes name and label syntax (`k8s.io/apimachinery/pkg/util/validation`), with the API
//! server's messages. Each function returns the list of problems; empty means valid.

pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;

const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case \
alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. \
'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case \
alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character \
(e.g. 'example.com', regex used for validation is \
'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

const QUALIFIED_NAME_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' \
or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  \
or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

const QUALIFIED_NAME_WITH_PREFIX_MSG: &str = "a qualified name must consist of alphanumeric \
characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. \
'MyName',  or 'my.name',  or '123-abc', regex used for validation is \
'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. \
'example.com/MyName')";

const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric \
characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. \
'MyValue',  or 'my_value',  or '12345', regex used for validation is \
'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

const CONFIG_KEY_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', \
'_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is \
'[-._a-zA-Z0-9]+')";

/// Characters the API server draws `generateName` suffixes from
/// (`k8s.io/apimachinery/pkg/util/rand`: no vowels, no look-alikes).
pub const GENERATE_NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
/// Length of the random suffix the API server appends to a `generateName`.
pub const GENERATE_NAME_SUFFIX_LENGTH: usize = 5;

/// A random `generateName` suffix: [`GENERATE_NAME_SUFFIX_LENGTH`] characters of
/// [`GENERATE_NAME_ALPHABET`].
pub fn random_name_suffix() -> String {
    uuid::Uuid::new_v4().as_bytes()[..GENERATE_NAME_SUFFIX_LENGTH]
        .iter()
        .map(|b| GENERATE_NAME_ALPHABET[usize::from(*b) % GENERATE_NAME_ALPHABET.len()] as char)
        .collect()
}

/// `must be no more than N characters`.
pub fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && is_lower_alnum(b[0])
        && is_lower_alnum(b[b.len() - 1])
        && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
}

/// RFC 1123 label: at most 63 of `[a-z0-9-]`, alphanumeric at both ends.
pub fn is_dns1123_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(s) {
        errs.push(DNS1123_LABEL_MSG.to_owned());
    }
    errs
}

/// RFC 1123 subdomain: dot-separated labels, at most 253 characters.
pub fn is_dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !s.split('.').all(matches_dns1123_label) {
        errs.push(DNS1123_SUBDOMAIN_MSG.to_owned());
    }
    errs
}

fn matches_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// Label and annotation keys: `[prefix/]name`, prefix a DNS subdomain, name at most 63.
pub fn is_qualified_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = s.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_owned());
            } else {
                errs.extend(
                    is_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            name
        }
        _ => {
            errs.push(QUALIFIED_NAME_WITH_PREFIX_MSG.to_owned());
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_owned());
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errs.push(format!(
            "name part {}",
            max_len_error(QUALIFIED_NAME_MAX_LENGTH)
        ));
    }
    if !name.is_empty() && !matches_qualified_name_part(name) {
        errs.push(QUALIFIED_NAME_MSG.to_owned());
    }
    errs
}

/// Label values: empty, or at most 63 of `[A-Za-z0-9-_.]`, alphanumeric at both ends.
pub fn is_valid_label_value(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !s.is_empty() && !matches_qualified_name_part(s) {
        errs.push(LABEL_VALUE_MSG.to_owned());
    }
    errs
}

/// ConfigMap and Secret keys: `[-._a-zA-Z0-9]+`, at most 253, not `.`, `..` or `..`-prefixed.
pub fn is_config_map_key(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if s.is_empty()
        || !s
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_'))
    {
        errs.push(CONFIG_KEY_MSG.to_owned());
    }
    if s == "." {
        errs.push("must not be '.'".to_owned());
    } else if s == ".." {
        errs.push("must not be '..'".to_owned());
    } else if s.starts_with("..") {
        errs.push("must not start with '..'".to_owned());
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_name_suffixes_use_the_generate_name_alphabet() {
        let suffixes: Vec<String> = (0..64).map(|_| random_name_suffix()).collect();
        for s in &suffixes {
            assert_eq!(s.len(), GENERATE_NAME_SUFFIX_LENGTH);
            assert!(
                s.bytes().all(|b| GENERATE_NAME_ALPHABET.contains(&b)),
                "{s}"
            );
        }
        // Random, not constant: 64 draws from 27^5 values are not all alike.
        assert!(suffixes.iter().any(|s| s != &suffixes[0]));
    }

    #[test]
    fn dns_names() {
        assert!(is_dns1123_label("my-name").is_empty());
        assert!(is_dns1123_label("a").is_empty());
        assert!(!is_dns1123_label("My-name").is_empty());
        assert!(!is_dns1123_label("a.b").is_empty());
        assert!(!is_dns1123_label("-a").is_empty());
        assert!(!is_dns1123_label(&"a".repeat(64)).is_empty());
        assert!(is_dns1123_subdomain("example.com").is_empty());
        assert!(!is_dns1123_subdomain("example..com").is_empty());
        assert!(!is_dns1123_subdomain("").is_empty());
        assert!(!is_dns1123_subdomain(&"a".repeat(254)).is_empty());
    }

    #[test]
    fn label_syntax() {
        assert!(is_qualified_name("app").is_empty());
        assert!(is_qualified_name("landscaper.gardener.cloud/operation").is_empty());
        assert!(is_qualified_name("a/b/c")[0].starts_with("a qualified name"));
        assert!(is_qualified_name("/b")[0].starts_with("prefix part must be"));
        assert!(is_qualified_name("Ex.com/b")[0].starts_with("prefix part a lowercase"));
        assert!(!is_qualified_name(&"a".repeat(64)).is_empty());
        assert!(is_valid_label_value("").is_empty());
        assert!(is_valid_label_value("Inst.root-1").is_empty());
        assert!(!is_valid_label_value("a b").is_empty());
        assert!(!is_valid_label_value(&"a".repeat(64)).is_empty());
    }

    #[test]
    fn config_keys() {
        assert!(is_config_map_key("key.name").is_empty());
        assert!(is_config_map_key(".dotfile").is_empty());
        assert!(!is_config_map_key("a/b").is_empty());
        assert!(!is_config_map_key("..a").is_empty());
        assert!(!is_config_map_key("").is_empty());
    }
}

/// Landscaper's `GenerateDataObjectName(context, name)`, the name of a DataObject or Target
/// in a scope: a `#` prefix means "exactly this name"; at the root scope a valid DNS
/// subdomain is used as it is; otherwise base32 (lower case, no padding) of
/// SHA-1(`"<context>/<name>"`).
pub fn generate_data_object_name(context: &str, name: &str) -> String {
    if let Some(plain) = name.strip_prefix(super::constants::NON_CONTEXTIFIED_PREFIX) {
        return plain.to_string();
    }
    if context.is_empty() && is_landscaper_subdomain(name) {
        return name.to_string();
    }
    use sha1::Digest as _;
    let digest = sha1::Sha1::digest(format!("{context}/{name}").as_bytes());
    base32_lower_no_padding(&digest)
}

/// Landscaper's name regex `^([a-z0-9]|[a-z0-9][a-z0-9.-]*[a-z0-9])$` (no length limit).
fn is_landscaper_subdomain(s: &str) -> bool {
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let b = s.as_bytes();
    match b {
        [] => false,
        [c] => alnum(*c),
        [first, middle @ .., last] => {
            alnum(*first)
                && alnum(*last)
                && middle.iter().all(|c| alnum(*c) || *c == b'.' || *c == b'-')
        }
    }
}

fn base32_lower_no_padding(bytes: &[u8]) -> String {
    let alphabet = super::constants::BASE32_ENCODE_STD_LOWER_CASE.as_bytes();
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    let mut buffer: u64 = 0;
    let mut bits = 0u32;
    for &byte in bytes {
        buffer = (buffer << 8) | u64::from(byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(alphabet[((buffer >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(alphabet[((buffer << (5 - bits)) & 31) as usize] as char);
    }
    out
}

#[cfg(test)]
mod data_object_name_tests {
    use super::generate_data_object_name;

    #[test]
    fn names_follow_landscaper() {
        assert_eq!(generate_data_object_name("", "my-data"), "my-data");
        assert_eq!(generate_data_object_name("Inst.x", "#global"), "global");
        // Expected values from Python's base64.b32encode(hashlib.sha1(...)).lower().
        assert_eq!(
            generate_data_object_name("", "Not_Valid"),
            "xizneb4gu6rrjgapv6edjp47bsa5xbvk"
        );
        assert_eq!(
            generate_data_object_name("Inst.root", "db"),
            "uy6qfybqipy7vuyunevyrrjktahxdccy"
        );
        assert_eq!(
            generate_data_object_name("Exec.x", ""),
            "unmw6qtw2uy6mwkxmxirr563pxppgajc"
        );
    }
}
