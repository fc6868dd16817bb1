//! `cd://` URIs (FORMATS.md §9) and `getResourceKey`'s keys (§8).

use std::collections::BTreeMap;

use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::{ComponentError, ComponentVersion};

/// Landscaper's limit on a `cd://` URI.
pub const MAX_URI_LENGTH: usize = 2083;

/// `cd://componentReferences/<ref>/…/resources/<name>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CdUri {
    pub references: Vec<String>,
    pub resource: String,
}

impl CdUri {
    pub fn parse(s: &str) -> Result<Self, ComponentError> {
        let err = |reason: &str| ComponentError::InvalidUri {
            uri: s.chars().take(200).collect(),
            reason: reason.to_string(),
        };
        if s.len() > MAX_URI_LENGTH {
            return Err(err("longer than 2083 characters"));
        }
        let rest = s
            .strip_prefix("cd://")
            .ok_or_else(|| err("the scheme must be cd://"))?;
        let parts: Vec<&str> = rest.split('/').collect();
        if !parts.len().is_multiple_of(2) {
            return Err(err("expected keyword/value pairs"));
        }
        let mut references = Vec::new();
        let mut resource = None;
        for pair in parts.chunks(2) {
            let (keyword, value) = (pair[0], pair[1]);
            if value.is_empty() {
                return Err(err(&format!("{keyword} without a value")));
            }
            if resource.is_some() {
                return Err(err("resources must be the last element"));
            }
            match keyword {
                "componentReferences" => references.push(value.to_string()),
                "resources" => resource = Some(value.to_string()),
                other => return Err(err(&format!("unknown keyword {other:?}"))),
            }
        }
        let resource = resource.ok_or_else(|| err("no resources/<name> element"))?;
        Ok(CdUri {
            references,
            resource,
        })
    }
}

impl std::fmt::Display for CdUri {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("cd://")?;
        for r in &self.references {
            write!(f, "componentReferences/{r}/")?;
        }
        write!(f, "resources/{}", self.resource)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComponentIdentity {
    pub name: String,
    pub version: String,
}

/// Landscaper's `GlobalResourceIdentity`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobalResourceIdentity {
    pub component: ComponentIdentity,
    pub resource: BTreeMap<String, String>,
}

/// A YAML scalar as Go's YAML encoder writes it: plain when unambiguous, else double-quoted.
fn yaml_scalar(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'/' | b'-' | b'_'))
        && !s.starts_with(['-', '.'])
        && s.parse::<f64>().is_err()
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "y" | "n" | "~"
        );
    if plain {
        s.to_string()
    } else {
        serde_json::to_string(s).unwrap_or_default()
    }
}

/// `base64(YAML({component: {name, version}, resource: {name}}))`.
pub fn resource_key(component: &ComponentVersion, resource_name: &str) -> String {
    let text = format!(
        "component:\n  name: {}\n  version: {}\nresource:\n  name: {}\n",
        yaml_scalar(&component.name),
        yaml_scalar(&component.version),
        yaml_scalar(resource_name)
    );
    base64::engine::general_purpose::STANDARD.encode(text)
}

pub fn parse_resource_key(key: &str) -> Result<GlobalResourceIdentity, ComponentError> {
    let err = |reason: String| ComponentError::InvalidUri {
        uri: key.chars().take(200).collect(),
        reason,
    };
    let key = key.trim();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(key)
        .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(key))
        .map_err(|_| err("resource key is not base64".into()))?;
    let value =
        crate::descriptor::parse_yaml(&bytes, "resource key").map_err(|e| err(e.to_string()))?;
    let id: GlobalResourceIdentity =
        serde_json::from_value(value).map_err(|e| err(format!("resource key: {e}")))?;
    if id.component.name.is_empty()
        || id.component.version.is_empty()
        || !id.resource.contains_key("name")
    {
        return Err(err(
            "resource key needs component name, version and resource name".into(),
        ));
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_parse_and_print() {
        let u = CdUri::parse("cd://componentReferences/leaf-reference/resources/mychart")
            .expect("parses");
        assert_eq!(u.references, vec!["leaf-reference"]);
        assert_eq!(u.resource, "mychart");
        assert_eq!(
            u.to_string(),
            "cd://componentReferences/leaf-reference/resources/mychart"
        );
        assert_eq!(
            CdUri::parse("cd://resources/x")
                .expect("ok")
                .references
                .len(),
            0
        );
        for bad in [
            "cd://",
            "cd://resources",
            "cd://resources/",
            "cd://resources/a/componentReferences/b",
            "cd://componentReferences/a",
            "cd://other/a/resources/b",
            "blueprint://x",
        ] {
            assert!(CdUri::parse(bad).is_err(), "{bad}");
        }
        assert!(CdUri::parse(&format!("cd://resources/{}", "a".repeat(2100))).is_err());
    }
}
