//! The seam between templates and a component repository: `getResourceKey` and
//! `getResourceContent` (Landscaper's `gotemplate/funcs.go` and `spiff/funcs.go`) need a
//! resource's key or bytes while a template runs. Renders run synchronously (on blocking
//! workers in the appliance), so the reader is synchronous; the appliance's implementation
//! blocks on its async component source. Without a reader both functions fail, naming the
//! missing component descriptor.

use std::fmt;
use std::sync::Arc;

use base64::Engine as _;

/// A resource's bytes as its access delivers them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceContent {
    pub media_type: String,
    pub bytes: Vec<u8>,
}

/// Looks resources up from the installation's component version. `reference` is what the
/// template passed: a `cd://` URI (`cd://componentReferences/<ref>/resources/<name>`) or a
/// YAML relative resource reference (`{resource: {name}, referencePath: [{name}]}`).
pub trait ResourceReader: Send + Sync {
    /// `getResourceKey`: base64 of the YAML global resource identity.
    fn resource_key(&self, reference: &str) -> Result<String, String>;
    /// `getResourceContent`: the resource's bytes and media type.
    fn resource_content(&self, reference: &str) -> Result<ResourceContent, String>;
}

/// The reader of a render, if the installation has a component version (cheap to clone).
#[derive(Clone, Default)]
pub struct Resources(pub Option<Arc<dyn ResourceReader>>);

impl Resources {
    pub fn new(reader: Arc<dyn ResourceReader>) -> Resources {
        Resources(Some(reader))
    }

    /// `getResourceKey reference`.
    pub fn key(&self, function: &str, reference: &str) -> Result<String, String> {
        self.reader(function)?.resource_key(reference)
    }

    /// `getResourceContent reference`: the bytes as text, base64-encoded when the media type is
    /// `application/octet-stream` (Landscaper's `getResourceContentGoFunc`).
    pub fn content(&self, function: &str, reference: &str) -> Result<String, String> {
        let content = self.reader(function)?.resource_content(reference)?;
        Ok(content_text(&content))
    }

    fn reader(&self, function: &str) -> Result<&dyn ResourceReader, String> {
        self.0.as_deref().ok_or_else(|| {
            format!("{function}: unable to resolve the resource as no component version is defined (spec.componentDescriptor)")
        })
    }
}

/// The text `getResourceContent` returns for `content`.
pub fn content_text(content: &ResourceContent) -> String {
    let base = content
        .media_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim();
    if base.eq_ignore_ascii_case("application/octet-stream") {
        base64::engine::general_purpose::STANDARD.encode(&content.bytes)
    } else {
        String::from_utf8_lossy(&content.bytes).into_owned()
    }
}

impl fmt::Debug for Resources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Resources(reader)"
        } else {
            "Resources(none)"
        })
    }
}

/// Equal when both have no reader or share the same one.
impl PartialEq for Resources {
    fn eq(&self, other: &Resources) -> bool {
        match (&self.0, &other.0) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A reader over fixed resources: `cd://resources/<name>` only.
    pub(crate) struct FakeReader(pub Vec<(String, ResourceContent)>);

    impl FakeReader {
        fn find(&self, reference: &str) -> Result<&ResourceContent, String> {
            let name = reference
                .strip_prefix("cd://resources/")
                .ok_or_else(|| format!("unsupported reference {reference}"))?;
            self.0
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, c)| c)
                .ok_or_else(|| format!("resource {name} not found"))
        }
    }

    impl ResourceReader for FakeReader {
        fn resource_key(&self, reference: &str) -> Result<String, String> {
            self.find(reference)?;
            Ok(format!("key-of-{}", &reference["cd://resources/".len()..]))
        }
        fn resource_content(&self, reference: &str) -> Result<ResourceContent, String> {
            self.find(reference).cloned()
        }
    }

    pub(crate) fn fake() -> Resources {
        Resources::new(Arc::new(FakeReader(vec![
            (
                "myconfig".into(),
                ResourceContent {
                    media_type: "application/yaml".into(),
                    bytes: b"type: yaml-config\n".to_vec(),
                },
            ),
            (
                "blob".into(),
                ResourceContent {
                    media_type: "application/octet-stream".into(),
                    bytes: vec![0, 1, 2, 255],
                },
            ),
        ])))
    }

    #[test]
    fn content_is_text_or_base64_by_media_type() {
        let r = fake();
        assert_eq!(
            r.content("getResourceContent", "cd://resources/myconfig")
                .unwrap(),
            "type: yaml-config\n"
        );
        assert_eq!(
            r.content("getResourceContent", "cd://resources/blob")
                .unwrap(),
            "AAEC/w=="
        );
    }

    #[test]
    fn without_reader_the_functions_fail() {
        let err = Resources::default()
            .key("getResourceKey", "cd://resources/x")
            .unwrap_err();
        assert!(err.contains("no component version"), "{err}");
    }

    #[test]
    fn equality_is_by_reader_identity() {
        let a = fake();
        assert_eq!(a, a.clone());
        assert_ne!(a, fake());
        assert_eq!(Resources::default(), Resources::default());
    }
}
