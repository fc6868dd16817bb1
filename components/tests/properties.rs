//! Property tests: name mappings, tag conversion, cd:// URIs, resource keys, v2 ↔ v3alpha1.

use landscaper_components::descriptor::{v2_to_v3, v3_to_v2};
use landscaper_components::ocm::{
    component_repository, is_relaxed_semver, tag_to_version, version_to_tag,
};
use landscaper_components::uri::{CdUri, parse_resource_key, resource_key};
use landscaper_components::{ComponentVersion, NameMapping, RepositoryContext, RepositoryKind};
use proptest::prelude::*;
use serde_json::json;

fn component_name() -> impl Strategy<Value = String> {
    (
        "[a-z][a-z0-9-]{0,10}\\.[a-z]{2,4}",
        proptest::collection::vec("[a-z][a-z0-9_-]{0,8}", 1..4),
    )
        .prop_map(|(host, path)| format!("{host}/{}", path.join("/")))
}

fn version() -> impl Strategy<Value = String> {
    (
        any::<bool>(),
        0u32..100,
        proptest::option::of(0u32..100),
        proptest::option::of(0u32..100),
        proptest::option::of("[a-z0-9]{1,6}(\\.[a-z0-9]{1,4}){0,2}"),
        proptest::option::of("[a-z0-9]{1,6}(\\.[a-z0-9]{1,4}){0,2}"),
    )
        .prop_map(|(v, major, minor, patch, pre, build)| {
            let mut s = format!("{}{major}", if v { "v" } else { "" });
            if let Some(m) = minor {
                s.push_str(&format!(".{m}"));
                if let Some(p) = patch {
                    s.push_str(&format!(".{p}"));
                }
            }
            if let Some(p) = pre {
                s.push_str(&format!("-{p}"));
            }
            if let Some(b) = build {
                s.push_str(&format!("+{b}"));
            }
            s
        })
}

fn ctx() -> RepositoryContext {
    RepositoryContext::for_file(RepositoryKind::Local {
        file_path: "./".into(),
    })
}

fn label() -> impl Strategy<Value = serde_json::Value> {
    ("[a-z]{1,6}", "[a-z0-9]{0,6}").prop_map(|(n, v)| json!({"name": n, "value": v}))
}

fn descriptor() -> impl Strategy<Value = serde_json::Value> {
    (
        component_name(),
        version(),
        "[a-z]{1,8}",
        proptest::collection::vec(label(), 0..2),
        proptest::collection::vec(("[a-z][a-z0-9-]{0,8}", "[a-z/.]{1,12}"), 0..4),
        proptest::collection::vec(("[a-z][a-z0-9-]{0,8}", component_name(), version()), 0..3),
    )
        .prop_map(|(name, version, provider, labels, resources, refs)| {
            let mut component = json!({
                "name": name, "version": version, "provider": provider,
                "repositoryContexts": [{"type": "OCIRegistry", "baseUrl": "example.com"}],
                "sources": [],
                "resources": resources.iter().map(|(n, t)| json!({"name": n, "type": t, "version": "1.0.0",
                    "relation": "local", "access": {"type": "localBlob", "localReference": n}})).collect::<Vec<_>>(),
                "componentReferences": refs.iter().map(|(n, c, v)| json!({"name": n, "componentName": c, "version": v}))
                    .collect::<Vec<_>>(),
            });
            if !labels.is_empty() {
                component["labels"] = json!(labels);
            }
            json!({"meta": {"schemaVersion": "v2"}, "component": component})
        })
}

proptest! {
    #[test]
    fn url_path_mapping_is_prefix_and_name(sub in proptest::option::of("[a-z]{1,5}(/[a-z]{1,5}){0,2}"), name in component_name()) {
        let repo = component_repository(sub.as_deref(), NameMapping::UrlPath, &name);
        let expected = match &sub {
            Some(s) => format!("{s}/component-descriptors/{name}"),
            None => format!("component-descriptors/{name}"),
        };
        prop_assert_eq!(repo, expected);
    }

    #[test]
    fn sha256_mapping_is_hex_and_injective(a in component_name(), b in component_name()) {
        let ra = component_repository(None, NameMapping::Sha256Digest, &a);
        let rb = component_repository(None, NameMapping::Sha256Digest, &b);
        prop_assert_eq!(ra.len(), 64);
        prop_assert!(ra.bytes().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        prop_assert_eq!(a == b, ra == rb);
    }

    #[test]
    fn tags_round_trip(v in version()) {
        prop_assert!(is_relaxed_semver(&v), "{}", v);
        let tag = version_to_tag(&v).expect("semver");
        prop_assert!(!tag.contains('+'));
        prop_assert!(tag.len() <= 128 && tag.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_')));
        prop_assert_eq!(tag_to_version(&tag), v);
    }

    #[test]
    fn cd_uris_print_and_parse(refs in proptest::collection::vec("[a-zA-Z0-9._-]{1,12}", 0..4), res in "[a-zA-Z0-9._-]{1,12}") {
        let uri = CdUri { references: refs, resource: res };
        prop_assert_eq!(CdUri::parse(&uri.to_string()).expect("parses"), uri);
    }

    #[test]
    fn cd_uri_parsing_never_panics(s in "\\PC{0,80}") {
        let _ = CdUri::parse(&s);
        let _ = CdUri::parse(&format!("cd://{s}"));
        let _ = parse_resource_key(&s);
    }

    #[test]
    fn v2_v3_round_trip(d in descriptor()) {
        let cv = ComponentVersion::from_value(d.clone(), "prop", ctx()).expect("valid");
        let v3 = v2_to_v3(&cv.v2);
        let back = v3_to_v2(&v3, "prop").expect("converts back");
        prop_assert_eq!(&back, &cv.v2);
        let parsed = ComponentVersion::from_value(v3, "prop", ctx()).expect("v3 valid");
        prop_assert_eq!(&parsed.v2, &cv.v2);
        prop_assert_eq!(parsed.references(), cv.references());
        let key = resource_key(&cv, "res");
        let id = parse_resource_key(&key).expect("key decodes");
        prop_assert_eq!(id.component.name, cv.name.clone());
        prop_assert_eq!(id.component.version, cv.version.clone());
    }

    #[test]
    fn descriptor_parsing_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = ComponentVersion::parse(&bytes, "prop", ctx());
        let _ = landscaper_components::ocm::parse_oci_document(&bytes);
        let _ = landscaper_components::ocm::parse_artifact_index(&bytes);
    }
}
