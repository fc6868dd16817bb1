//! Offline repositories on the acceptance data (README.md "Expected results").

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::{components, ctf, data, local};
use landscaper_components::content::{blueprint_files, helm_chart_tgz, json_schema};
use landscaper_components::uri::{CdUri, parse_resource_key, resource_key};
use landscaper_components::{
    Artifact, ComponentError, ComponentSource, Components, Overwrites, SchemaVersion,
    resolve_transitive, resolve_uri,
};

const CNUDIE: &str = "local-repos/components/localcnudierepos";
const OCMREPOS: &str = "local-repos/components/localocmrepos";

async fn blueprint(
    c: &Components,
    repo: &str,
    name: &str,
    resource: &str,
) -> Result<BTreeMap<String, Vec<u8>>, ComponentError> {
    let cv = c.component_version(&local(repo), name, "1.0.0").await?;
    let a = c.resource(&cv, resource).await?;
    blueprint_files(&a)
}

#[tokio::test]
async fn valid_components_v2_and_v3_are_equal() {
    let Some(dir) = data("valid_components_v2_and_v3_are_equal") else {
        return;
    };
    let c = components(&dir);
    let name = "example.com/landscaper-component";
    let v2 = c
        .component_version(&local(&format!("{CNUDIE}/valid-components")), name, "1.0.0")
        .await
        .expect("v2");
    let v3 = c
        .component_version(
            &local(&format!("{OCMREPOS}/valid-components")),
            name,
            "1.0.0",
        )
        .await
        .expect("v3");
    assert_eq!(v2.schema_version, SchemaVersion::V2);
    assert_eq!(v3.schema_version, SchemaVersion::V3Alpha1);
    assert_eq!(v2.v2, v3.v2);
    assert_eq!(v2.references(), v3.references());
    let b2 = blueprint(&c, &format!("{CNUDIE}/valid-components"), name, "blueprint")
        .await
        .expect("bp v2");
    let b3 = blueprint(
        &c,
        &format!("{OCMREPOS}/valid-components"),
        name,
        "blueprint",
    )
    .await
    .expect("bp v3");
    assert_eq!(b2, b3);
    assert!(b2.contains_key("blueprint.yaml"));
    // References resolve transitively in the same repository.
    for repo in [CNUDIE, OCMREPOS] {
        let ctx = local(&format!("{repo}/valid-components"));
        let r = resolve_transitive(&c, &ctx, name, "1.0.0", &Overwrites::default())
            .await
            .expect("resolves");
        let names: Vec<&str> = r.all.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            vec![name, "example.com/referenced-landscaper-component"]
        );
        let leaf = &r.all[1];
        let a = c.resource(leaf, "genericresource").await.expect("generic");
        assert_eq!(a.media_type, "text/plain");
        assert!(!a.bytes.is_empty());
    }
}

#[tokio::test]
async fn invalid_local_components_are_rejected() {
    let Some(dir) = data("invalid_local_components_are_rejected") else {
        return;
    };
    let c = components(&dir);
    for repo in [CNUDIE, OCMREPOS] {
        let err = c
            .component_version(
                &local(&format!("{repo}/invalid-components")),
                "example.com/invalid-landscaper-component",
                "1.0.0",
            )
            .await
            .expect_err("invalid");
        assert!(
            matches!(err, ComponentError::InvalidDescriptor { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("provider"), "{err}");
        let err = c
            .component_version(
                &local(&format!("{repo}/components-without-repoctx")),
                "example.com/landscaper-component",
                "1.0.0",
            )
            .await
            .expect_err("no repo ctx");
        assert!(err.to_string().contains("repository context"), "{err}");
        // A reference to a version that does not exist.
        let ctx = local(&format!("{repo}/components-with-invalid-reference"));
        let root = std::fs::read_dir(dir.join(format!("{repo}/components-with-invalid-reference")))
            .expect("dir")
            .flatten()
            .find(|e| e.path().is_file())
            .expect("one descriptor");
        let text = std::fs::read_to_string(root.path()).expect("read");
        let name = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("name: ").filter(|n| n.contains('/')))
            .expect("a name")
            .trim()
            .to_string();
        let err = resolve_transitive(&c, &ctx, &name, "1.0.0", &Overwrites::default())
            .await
            .expect_err("ref missing");
        assert!(matches!(err, ComponentError::NotFound { .. }), "{err}");
        // Unknown resource; invalid access type: version loads, content fails.
        let ctx = local(&format!("{repo}/components-with-invalid-access-type"));
        let cv = c
            .component_version(
                &ctx,
                "example.com/landscaper-component-with-invalid-access-type",
                "1.0.0",
            )
            .await
            .expect("loads");
        let err = c.resource(&cv, "nope").await.expect_err("unknown resource");
        assert!(
            matches!(err, ComponentError::ResourceNotFound { .. }),
            "{err}"
        );
        let err = c
            .resource(&cv, "genericresource")
            .await
            .expect_err("invalid access");
        assert!(err.to_string().contains("invalid-access-type"), "{err}");
        assert!(err.to_string().contains("genericresource"), "{err}");
    }
}

#[tokio::test]
async fn blueprints_dir_tar_tgz_are_equal_and_corrupted_fail() {
    let Some(dir) = data("blueprints_dir_tar_tgz_are_equal_and_corrupted_fail") else {
        return;
    };
    let c = components(&dir);
    let name = "example.com/landscaper-component-with-blueprints";
    for repo in [CNUDIE, OCMREPOS] {
        let repo = format!("{repo}/components-with-blueprints");
        let d = blueprint(&c, &repo, name, "blueprint-dir")
            .await
            .expect("dir");
        let t = blueprint(&c, &repo, name, "blueprint-tar")
            .await
            .expect("tar");
        let z = blueprint(&c, &repo, name, "blueprint-tar-gzip")
            .await
            .expect("tgz");
        assert_eq!(d, t);
        assert_eq!(d, z);
        assert!(
            d.contains_key("blueprint.yaml") && d.contains_key("data/test"),
            "{:?}",
            d.keys()
        );
        for bad in ["corrupted-blueprint", "corrupted-blueprint-tar"] {
            let err = blueprint(&c, &repo, name, bad).await.expect_err(bad);
            assert!(matches!(err, ComponentError::Content { .. }), "{err}");
        }
    }
}

#[tokio::test]
async fn jsonschemas_plain_and_gzip_are_equal() {
    let Some(dir) = data("jsonschemas_plain_and_gzip_are_equal") else {
        return;
    };
    let c = components(&dir);
    for repo in [CNUDIE, OCMREPOS] {
        let ctx = local(&format!("{repo}/components-with-jsonschemas"));
        let cv = c
            .component_version(
                &ctx,
                "example.com/landscaper-component-with-jsonschemas",
                "1.0.0",
            )
            .await
            .expect("cv");
        let plain =
            json_schema(&c.resource(&cv, "jsonschema").await.expect("plain")).expect("schema");
        let gz = json_schema(&c.resource(&cv, "jsonschema-compressed").await.expect("gz"))
            .expect("schema");
        assert_eq!(plain, gz);
        assert!(plain.is_object());
    }
}

#[tokio::test]
async fn jsonschema_cd_chain_resolves_relative_to_the_referencing_component() {
    let Some(dir) = data("jsonschema_cd_chain") else {
        return;
    };
    let c = components(&dir);
    let ctx = local("local-repos/jsonschema/registry");
    let root = c
        .component_version(&ctx, "example.com/root", "v0.1.0")
        .await
        .expect("root");
    let uri =
        CdUri::parse("cd://componentReferences/ref-1/resources/resourcesschema").expect("uri");
    let (ref1, res) = resolve_uri(&c, &ctx, &root, &uri).await.expect("ref-1");
    let schema = json_schema(&c.resource(&ref1, &res).await.expect("blob")).expect("schema");
    let inner = schema["properties"]["memory"]["$ref"]
        .as_str()
        .expect("inner ref");
    let (ref2, res2) = resolve_uri(&c, &ctx, &ref1, &CdUri::parse(inner).expect("uri"))
        .await
        .expect("ref-2");
    assert_eq!(ref2.name, "example.com/ref-2");
    let memory = json_schema(&c.resource(&ref2, &res2).await.expect("blob")).expect("schema");
    assert_eq!(memory, serde_json::json!({"type": "string"}));
    // From the root, ref-2 is not a direct reference.
    let err = resolve_uri(&c, &ctx, &root, &CdUri::parse(inner).expect("uri"))
        .await
        .expect_err("not direct");
    assert!(err.to_string().contains("ref-2"), "{err}");
    // Without the explicit context: the descriptor's own effective context (ociRegistry
    // example.com) is not where the components are; offline it fails.
    let own = landscaper_components::RepositoryContext::parse(
        root.effective_repository_context().expect("has one"),
    )
    .expect("parses");
    assert!(resolve_uri(&c, &own, &root, &uri).await.is_err());
}

async fn ctf_descriptor(c: &Components, path: &str) -> serde_json::Value {
    let cv = c
        .component_version(&ctf(path), "github.com/acme.org/helloworld", "1.0.0")
        .await
        .expect(path);
    assert!(
        cv.manifest_digest
            .as_deref()
            .is_some_and(|d| d.starts_with("sha256:"))
    );
    cv.v2.clone()
}

#[tokio::test]
async fn ctf_directory_tar_and_tgz_give_the_same_component() {
    let Some(dir) = data("ctf_directory_tar_and_tgz_give_the_same_component") else {
        return;
    };
    let c = components(&dir);
    let base = "ctf/ocm-0.20.0-compat-01/transport-archive";
    let d = ctf_descriptor(&c, base).await;
    let t = ctf_descriptor(&c, &format!("{base}.tar")).await;
    let z = ctf_descriptor(&c, &format!("{base}.tar.gz")).await;
    // The context the reader added (CTFs are intermediate) names the archive; the rest is equal.
    let strip = |mut v: serde_json::Value| {
        v["component"]["repositoryContexts"] = serde_json::Value::Null;
        v["component"]["creationTime"] = serde_json::Value::Null;
        v
    };
    assert_eq!(strip(d.clone()), strip(t));
    assert_eq!(strip(d.clone()), strip(z));
    for path in [
        base.to_string(),
        format!("{base}.tar"),
        format!("{base}.tar.gz"),
    ] {
        let cv = c
            .component_version(&ctf(&path), "github.com/acme.org/helloworld", "1.0.0")
            .await
            .expect("cv");
        let name = cv.v2["component"]["resources"][0]["name"]
            .as_str()
            .expect("resource")
            .to_string();
        let a = c.resource(&cv, &name).await.expect("local blob");
        assert_eq!(
            a.digest,
            landscaper_sources::archive::sha256_digest(&a.bytes)
        );
    }
    let err = c
        .component_version(&ctf(base), "github.com/acme.org/helloworld", "2.0.0")
        .await
        .expect_err("missing");
    assert!(matches!(err, ComponentError::NotFound { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("github.com/acme.org/helloworld:2.0.0"),
        "{err}"
    );
}

#[tokio::test]
async fn every_ctf_loads_and_every_local_blob_verifies() {
    let Some(dir) = data("every_ctf_loads") else {
        return;
    };
    let c = components(&dir);
    let mut loaded = 0;
    for path in [
        "ctf/ocm-0.18.0-multi-resource",
        "ctf/ocm-0.20.0-compat-01/transport-archive",
        "ctf/ocm-0.20.0-compat-02/with-resource",
        "ctf/ocm-0.20.0-compat-02/without-resource",
        "ctf/landscaper-ctf-local-blobs",
        "ctf/landscaper-container-2/registry-1",
        "ctf/landscaper-container-2/registry-2",
        "templates/shared_data/ctf-local-blobs",
    ] {
        let entries = Components::describe_archive(&dir.join(path)).expect(path);
        assert!(!entries.is_empty(), "{path}");
        for e in entries {
            let cv = c
                .component_version(&ctf(path), &e.component, &e.version)
                .await
                .expect(&e.component);
            loaded += 1;
            for r in cv.v2["component"]["resources"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let access_type = r["access"]["type"].as_str().unwrap_or_default();
                let name = r["name"].as_str().expect("name");
                if access_type.starts_with("localBlob") {
                    let a = c
                        .resource(&cv, name)
                        .await
                        .unwrap_or_else(|e| panic!("{path} {name}: {e}"));
                    assert!(!a.bytes.is_empty(), "{path} {name}");
                }
            }
        }
    }
    assert_eq!(loaded, 10);
}

#[tokio::test]
async fn ctf_local_blobs_resource_key_and_content() {
    let Some(dir) = data("ctf_local_blobs_resource_key_and_content") else {
        return;
    };
    let c = components(&dir);
    let ctx = ctf("ctf/landscaper-ctf-local-blobs");
    let resolved = resolve_transitive(&c, &ctx, "github.com/root", "1.0.0", &Overwrites::default())
        .await
        .expect("resolves");
    assert_eq!(resolved.all.len(), 2);
    let uri =
        CdUri::parse("cd://componentReferences/leaf-reference/resources/mychart").expect("uri");
    let (leaf, res) = resolve_uri(&c, &ctx, &resolved.root, &uri)
        .await
        .expect("walks");
    let key = resource_key(&leaf, &res);
    let id = parse_resource_key(&key).expect("decodes");
    assert_eq!(
        (id.component.name.as_str(), id.component.version.as_str()),
        ("github.com/leaf", "1.0.0")
    );
    assert_eq!(id.resource["name"], "mychart");
    let chart = helm_chart_tgz(&c.resource(&leaf, "mychart").await.expect("chart")).expect("tgz");
    assert!(chart.starts_with(&[0x1f, 0x8b]));
    let cfg = c.resource(&leaf, "myconfig").await.expect("config");
    let text = String::from_utf8(cfg.bytes.to_vec()).expect("utf8");
    assert!(text.contains("type: yaml-config"), "{text}");
    assert!(text.contains("subvalue2: val2"), "{text}");
}

#[tokio::test]
async fn ctf_blueprint_local_blob_and_cross_ctf_reference() {
    let Some(dir) = data("ctf_blueprint_local_blob") else {
        return;
    };
    let c = components(&dir);
    let e1 = Components::describe_archive(&dir.join("ctf/landscaper-container-2/registry-1"))
        .expect("r1");
    let cv = c
        .component_version(
            &ctf("ctf/landscaper-container-2/registry-1"),
            &e1[0].component,
            &e1[0].version,
        )
        .await
        .expect("component");
    let bp = cv.v2["component"]["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| {
            landscaper_components::content::is_blueprint_type(
                r["type"].as_str().unwrap_or_default(),
            )
        })
        .expect("blueprint resource");
    let files = blueprint_files(
        &c.resource(&cv, bp["name"].as_str().expect("name"))
            .await
            .expect("blob"),
    )
    .expect("files");
    assert_eq!(
        files.get("blueprint.yaml"),
        Some(
            &std::fs::read(dir.join("ctf/landscaper-container-2/blueprint/blueprint.yaml"))
                .expect("read")
        )
    );
    // The reference lives in the other CTF: registered as mirror archive it resolves.
    c.set_archives(vec![dir.join("ctf/landscaper-container-2/registry-2")]);
    let r = resolve_transitive(
        &c,
        &ctf("ctf/landscaper-container-2/registry-1"),
        &cv.name,
        &cv.version,
        &Overwrites::default(),
    )
    .await
    .expect("resolves across");
    assert_eq!(r.all.len(), 2);
}

#[test]
fn artifact_set_charts_by_media_type() {
    let Some(dir) = data("artifact_set_charts_by_media_type") else {
        return;
    };
    for f in [
        "test-chart-oci-artifact.tgz",
        "unusual-ordered-helm-chart.tgz",
        "legacy-pre-hip-helm-chart.tgz",
    ] {
        let bytes = std::fs::read(dir.join("artifact-sets").join(f)).expect("read");
        let a = Artifact::new("application/vnd.oci.image.manifest.v1+tar+gzip", bytes);
        let chart = helm_chart_tgz(&a).unwrap_or_else(|e| panic!("{f}: {e}"));
        let files = landscaper_components::archive::untar(&chart, 64 << 20).expect("chart untars");
        assert!(files.keys().any(|k| k.ends_with("Chart.yaml")), "{f}");
    }
}

#[tokio::test]
async fn ctf_artifact_set_local_blob_is_a_chart() {
    let Some(dir) = data("ctf_artifact_set_local_blob_is_a_chart") else {
        return;
    };
    let c = components(&dir);
    let cv = c
        .component_version(
            &ctf("ctf/ocm-0.20.0-compat-02/with-resource"),
            "github.com/acme.org/helloworld",
            "1.0.0",
        )
        .await
        .expect("cv");
    let a = c.resource(&cv, "mychart").await.expect("artifact set");
    let chart = helm_chart_tgz(&a).expect("chart");
    let files = landscaper_components::archive::untar(&chart, 64 << 20).expect("untars");
    assert!(files.keys().any(|k| k.ends_with("Chart.yaml")));
    // The same component by reference only: offline, the external chart is not available.
    let cv = c
        .component_version(
            &ctf("ctf/ocm-0.20.0-compat-02/without-resource"),
            "github.com/acme.org/helloworld",
            "1.0.0",
        )
        .await
        .expect("cv");
    let err = c.resource(&cv, "mychart").await.expect_err("offline");
    assert!(err.to_string().contains("mychart"), "{err}");
}

#[tokio::test]
async fn component_archives_load() {
    let Some(dir) = data("component_archives_load") else {
        return;
    };
    let c = components(&dir);
    for path in [
        "component-archives/ocm-signing-compat",
        "component-archives/ocm-comparch-testdata/common",
        "component-archives/ocm-comparch-testdata/directory",
        "guided-tour/components/helm-chart/component",
    ] {
        let entries = Components::describe_archive(&dir.join(path)).expect(path);
        let e = &entries[0];
        let ctx = common::ctx(serde_json::json!({"type": "ComponentArchive/v1", "filePath": path}));
        let cv = c
            .component_version(&ctx, &e.component, &e.version)
            .await
            .expect(path);
        for r in cv.v2["component"]["resources"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let t = r["access"]["type"].as_str().unwrap_or_default();
            if t.starts_with("localBlob") || t.starts_with("localFilesystemBlob") {
                c.resource(&cv, r["name"].as_str().expect("name"))
                    .await
                    .unwrap_or_else(|e| panic!("{path}: {e}"));
            }
        }
    }
    let e = Components::describe_archive(&dir.join("guided-tour/components/helm-chart/component"))
        .expect("tour");
    let ctx = common::ctx(
        serde_json::json!({"type": "ComponentArchive/v1", "filePath": "guided-tour/components/helm-chart/component"}),
    );
    let cv = c
        .component_version(&ctx, &e[0].component, &e[0].version)
        .await
        .expect("cv");
    let files =
        blueprint_files(&c.resource(&cv, "blueprint").await.expect("blob")).expect("blueprint");
    assert!(files.contains_key("blueprint.yaml"));
}

#[tokio::test]
async fn template_shared_local_repository_has_both_schemas() {
    let Some(dir) = data("template_shared_local_repository") else {
        return;
    };
    let c = components(&dir);
    let repo = landscaper_components::files::LocalRepository::new(
        dir.join("templates/shared_data/localocmrepository"),
        local("templates/shared_data/localocmrepository"),
    );
    let all = repo.list().expect("lists");
    assert_eq!(all.len(), 8);
    let mut v2 = 0;
    for (path, parsed) in &all {
        let cv = parsed
            .as_ref()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if cv.schema_version == SchemaVersion::V2 {
            v2 += 1;
        }
        let ctx = local("templates/shared_data/localocmrepository");
        let r = resolve_transitive(&c, &ctx, &cv.name, &cv.version, &Overwrites::default())
            .await
            .expect("resolves");
        let list = r.components_binding(SchemaVersion::V3Alpha1);
        assert_eq!(list.as_array().map(Vec::len), Some(r.all.len()));
    }
    assert_eq!(v2, 4);
    // template-30/31: `.cd` is the installation's component, `.components` the three.
    let ctx = local("templates/shared_data/localocmrepository");
    for (root, schema) in [
        ("v2", SchemaVersion::V2),
        ("v3alpha1", SchemaVersion::V3Alpha1),
    ] {
        let name = format!("example.com/landscaper-component-{root}");
        let r = resolve_transitive(&c, &ctx, &name, "1.0.0", &Overwrites::default())
            .await
            .expect("resolves");
        let (cd_name, names): (serde_json::Value, Vec<serde_json::Value>) = match schema {
            SchemaVersion::V2 => (
                r.cd_binding(schema)["component"]["name"].clone(),
                r.components_binding(schema)["components"]
                    .as_array()
                    .expect("list")
                    .iter()
                    .map(|c| c["component"]["name"].clone())
                    .collect(),
            ),
            SchemaVersion::V3Alpha1 => (
                r.cd_binding(schema)["metadata"]["name"].clone(),
                r.components_binding(schema)
                    .as_array()
                    .expect("list")
                    .iter()
                    .map(|c| c["metadata"]["name"].clone())
                    .collect(),
            ),
        };
        assert_eq!(cd_name, serde_json::json!(name));
        let mut names: Vec<String> = names
            .iter()
            .map(|n| n.as_str().expect("name").to_string())
            .collect();
        names.sort();
        assert_eq!(
            names,
            vec![name.clone(), format!("{name}-ref1"), format!("{name}-ref2")]
        );
    }
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read").flatten() {
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).expect("copy");
        }
    }
}

#[tokio::test]
async fn tampered_and_truncated_ctfs_fail_naming_the_component() {
    let Some(dir) = data("tampered_and_truncated_ctfs") else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    copy_dir(
        &dir.join("ctf/landscaper-ctf-local-blobs"),
        &tmp.path().join("ctf"),
    );
    let c = components(tmp.path());
    let ctx = ctf("ctf");
    let leaf = c
        .component_version(&ctx, "github.com/leaf", "1.0.0")
        .await
        .expect("leaf");
    let reference = leaf.resource("myconfig").expect("res")["access"]["localReference"]
        .as_str()
        .expect("ref")
        .to_string();
    let blob = tmp
        .path()
        .join("ctf/blobs")
        .join(reference.replace(':', "."));
    let mut bytes = std::fs::read(&blob).expect("blob");
    bytes.extend_from_slice(b"\n# tampered");
    std::fs::write(&blob, bytes).expect("write");
    let err = c.resource(&leaf, "myconfig").await.expect_err("tampered");
    match &err {
        ComponentError::DigestMismatch {
            component,
            version,
            what,
            ..
        } => {
            assert_eq!(
                (component.as_str(), version.as_str()),
                ("github.com/leaf", "1.0.0")
            );
            assert!(what.contains("myconfig"), "{what}");
        }
        other => panic!("expected a digest mismatch, got {other}"),
    }
    // Truncated tar: half of the archive.
    let full =
        std::fs::read(dir.join("ctf/ocm-0.20.0-compat-01/transport-archive.tar")).expect("tar");
    std::fs::write(tmp.path().join("truncated.tar"), &full[..full.len() / 2]).expect("write");
    let ctx = common::ctx(
        serde_json::json!({"type": "CommonTransportFormat/v1", "filePath": "truncated.tar"}),
    );
    let err = c
        .component_version(&ctx, "github.com/acme.org/helloworld", "1.0.0")
        .await
        .expect_err("truncated");
    assert!(matches!(err, ComponentError::Archive { .. }), "{err}");
    // Paths leaving the local root are refused.
    let err = c
        .component_version(&local("../etc"), "x.io/a", "1.0.0")
        .await
        .expect_err("traversal");
    assert!(
        matches!(err, ComponentError::InvalidRepositoryContext { .. }),
        "{err}"
    );
}

#[tokio::test]
async fn a_broken_archive_in_the_folder_leaves_other_components_alone() {
    let Some(dir) = data("a_broken_archive_in_the_folder") else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let full =
        std::fs::read(dir.join("ctf/ocm-0.20.0-compat-01/transport-archive.tar")).expect("tar");
    let broken = tmp.path().join("broken.tar");
    std::fs::write(&broken, &full[..full.len() / 2]).expect("write");
    let c = components(&dir);
    // A chart .tgz that is no archive at all is simply not one (no error).
    let chart = tmp.path().join("chart.tgz");
    std::fs::copy(
        dir.join("artifact-sets/test-chart-oci-artifact.tgz"),
        &chart,
    )
    .expect("copy");
    c.set_archives(vec![chart.clone()]);
    let err = c
        .component_version(
            &local(&format!("{CNUDIE}/valid-components")),
            "github.com/acme.org/helloworld",
            "1.0.0",
        )
        .await
        .expect_err("nowhere");
    assert!(matches!(err, ComponentError::NotFound { .. }), "{err}");
    c.set_archives(vec![
        chart,
        broken.clone(),
        dir.join("ctf/landscaper-container-2/registry-2"),
    ]);
    // Found elsewhere: unaffected.
    let ok = c
        .component_version(
            &local(&format!("{CNUDIE}/valid-components")),
            "example.com/landscaper-component",
            "1.0.0",
        )
        .await
        .expect("unaffected");
    assert_eq!(ok.name, "example.com/landscaper-component");
    let e2 = Components::describe_archive(&dir.join("ctf/landscaper-container-2/registry-2"))
        .expect("r2");
    c.component_version(&local("ctf"), &e2[0].component, &e2[0].version)
        .await
        .expect("from the second archive");
    // Found nowhere: the archive's problem is named with the lookup.
    let err = c
        .component_version(
            &local(&format!("{CNUDIE}/valid-components")),
            "github.com/acme.org/helloworld",
            "1.0.0",
        )
        .await
        .expect_err("nowhere");
    assert!(matches!(err, ComponentError::Archive { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("broken.tar") && text.contains("github.com/acme.org/helloworld:1.0.0"),
        "{text}"
    );
}

/// The air-gapped acceptance at the component layer: the guided tour's helm-chart component
/// and its chart (as the OCI artifact the `ociArtifact` access names) in a CTF .tgz written by
/// `CtfWriter`, registered as the folder's archive; the tour's Context (an OCI registry that
/// is not reachable) resolves everything from the CTF without a single request.
#[tokio::test]
async fn guided_tour_from_a_ctf_archive_without_any_registry() {
    let Some(dir) = data("guided_tour_from_a_ctf_archive") else {
        return;
    };
    let base = dir.join("guided-tour/components/helm-chart");
    let text = std::fs::read_to_string(base.join("component/component-descriptor.yaml"))
        .expect("descriptor");
    let blob_name = "sha256.e0a234552446487b1fe62a2d29ef0edfccaccc6c73b752e8fc54bb9314e0953f";
    let blob = std::fs::read(base.join("component/blobs").join(blob_name)).expect("blob");
    let descriptor = text.replace(blob_name, &blob_name.replace('.', ":"));
    // The chart as Helm pushes it: config + chart layer (a .tgz of the chart directory).
    let mut chart_files = BTreeMap::new();
    let chart_dir = base.join("chart/echo-server");
    let mut stack = vec![(chart_dir.clone(), "echo-server".to_string())];
    while let Some((d, prefix)) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read").flatten() {
            let rel = format!("{prefix}/{}", e.file_name().to_string_lossy());
            if e.path().is_dir() {
                stack.push((e.path(), rel));
            } else {
                chart_files.insert(rel, std::fs::read(e.path()).expect("read"));
            }
        }
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(
        &mut gz,
        &landscaper_components::archive::tar_files(&chart_files),
    )
    .expect("gzip");
    let chart_tgz = gz.finish().expect("gzip");
    let mut writer = landscaper_components::files::CtfWriter::new();
    writer
        .add_component(
            descriptor.as_bytes(),
            &[(
                "application/vnd.gardener.landscaper.blueprint.v1+tar+gzip".into(),
                blob,
            )],
        )
        .expect("component");
    writer.add_artifact(
        "sap-gcp-cp-k8s-stable-hub/landscaper-examples/examples/charts/guided-tour/echo-server",
        "1.0.0",
        (
            "application/vnd.cncf.helm.config.v1+json",
            br#"{"name":"echo-server","version":"1.0.0"}"#.to_vec(),
        ),
        &[(
            "application/vnd.cncf.helm.chart.content.v1.tar+gzip".into(),
            chart_tgz.clone(),
        )],
    );
    let tmp = tempfile::tempdir().expect("tmp");
    let archive = tmp.path().join("guided-tour.ctf.tgz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &writer.to_tar()).expect("gzip");
    std::fs::write(&archive, gz.finish().expect("gzip")).expect("write");
    let entries = Components::describe_archive(&archive).expect("describes");
    assert_eq!(
        entries.len(),
        1,
        "only component versions are listed: {entries:?}"
    );
    assert_eq!(entries[0].resources, 3);

    let transport = Arc::new(landscaper_sources::testing::MemoryTransport::new());
    transport.set_unreachable(true);
    let mut config = landscaper_components::ComponentsConfig::new(transport.clone());
    config.cache = Some(Arc::new(
        landscaper_sources::ChartCache::open(tmp.path().join("cache"), 1 << 30).expect("cache"),
    ));
    let c = Components::new(config);
    c.set_archives(vec![archive.clone()]);
    let ctx = common::ctx(serde_json::json!({"type": "ociRegistry",
        "baseUrl": "europe-docker.pkg.dev/sap-gcp-cp-k8s-stable-hub/landscaper-examples/examples"}));
    let name = "github.com/gardener/landscaper-examples/guided-tour/helm-chart";
    let resolved = resolve_transitive(&c, &ctx, name, "1.0.0", &Overwrites::default())
        .await
        .expect("from the CTF");
    let cv = &resolved.root;
    let files =
        blueprint_files(&c.resource(cv, "blueprint").await.expect("blueprint")).expect("files");
    assert_eq!(
        files.get("blueprint.yaml"),
        Some(&std::fs::read(base.join("blueprint/blueprint.yaml")).expect("read"))
    );
    let chart = helm_chart_tgz(
        &c.resource(cv, "echo-server-chart")
            .await
            .expect("chart from the CTF"),
    )
    .expect("chart");
    assert_eq!(chart, chart_tgz);
    assert!(
        transport.requests().is_empty(),
        "no requests: {:?}",
        transport.requests()
    );
    // The image is not mirrored: a clear error naming the resource (the registry is unreachable).
    let err = c
        .resource(cv, "echo-server-image")
        .await
        .expect_err("not mirrored");
    assert!(err.to_string().contains("echo-server-image"), "{err}");
}

/// Writes a CTF directory by hand: `blobs` and `(repository, tag, digest)` entries.
fn write_ctf(dir: &std::path::Path, blobs: &[Vec<u8>], index: &[(String, String, String)]) {
    std::fs::create_dir_all(dir.join("blobs")).expect("mkdir");
    for b in blobs {
        let d = landscaper_sources::archive::sha256_digest(b);
        std::fs::write(dir.join("blobs").join(d.replace(':', ".")), b).expect("blob");
    }
    let artifacts: Vec<serde_json::Value> = index
        .iter()
        .map(|(r, t, d)| serde_json::json!({"repository": r, "tag": t, "digest": d}))
        .collect();
    std::fs::write(
        dir.join("artifact-index.json"),
        serde_json::to_vec(&serde_json::json!({"schemaVersion": 1, "artifacts": artifacts}))
            .expect("json"),
    )
    .expect("index");
}

/// Forms other writers produce (FORMATS.md §4, §4.1): the legacy "cnudie" config and a plain
/// JSON descriptor layer, an OCI index at the tag whose descriptor manifest is marked, a
/// v3alpha1 descriptor, and a comma-composed `localReference` (concatenated layers).
#[tokio::test]
async fn legacy_json_layer_index_and_composed_local_blob() {
    let sha = landscaper_sources::archive::sha256_digest;
    let part1 = b"hello, ".to_vec();
    let part2 = b"world".to_vec();
    let descriptor = serde_json::to_vec(&serde_json::json!({
        "apiVersion": "ocm.software/v3alpha1", "kind": "ComponentVersion",
        "metadata": {"name": "example.com/forms", "version": "1.0.0+build.7", "provider": {"name": "acme"}},
        "repositoryContexts": [],
        "spec": {"resources": [{"name": "joined", "type": "plainText", "version": "1", "relation": "local",
            "access": {"type": "localBlob", "localReference": format!("{},{}", sha(&part1), sha(&part2)), "mediaType": "text/plain"}}]}
    }))
    .expect("json");
    let layer = serde_json::json!({"mediaType": "application/vnd.gardener.cloud.cnudie.component-descriptor.v2+json",
        "digest": sha(&descriptor), "size": descriptor.len()});
    let config =
        serde_json::to_vec(&serde_json::json!({"componentDescriptorLayer": layer})).expect("json");
    let manifest = serde_json::to_vec(&serde_json::json!({"schemaVersion": 2,
        "config": {"mediaType": "application/vnd.gardener.cloud.cnudie.component.config.v1+json", "digest": sha(&config), "size": config.len()},
        "layers": [layer, {"mediaType": "text/plain", "digest": sha(&part1), "size": part1.len()},
                   {"mediaType": "text/plain", "digest": sha(&part2), "size": part2.len()}]}))
    .expect("json");
    let index = serde_json::to_vec(&serde_json::json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": sha(b"{}"), "size": 2},
                      {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": sha(&manifest), "size": manifest.len(),
                       "annotations": {"software.ocm.descriptor": "true"}}]}))
    .expect("json");
    let tmp = tempfile::tempdir().expect("tmp");
    write_ctf(
        &tmp.path().join("ctf"),
        &[part1, part2, descriptor, config, manifest, index.clone()],
        &[(
            "component-descriptors/example.com/forms".into(),
            "1.0.0.build-build.7".into(),
            sha(&index),
        )],
    );
    let c = components(tmp.path());
    let cv = c
        .component_version(&ctf("ctf"), "example.com/forms", "1.0.0+build.7")
        .await
        .expect("loads");
    assert_eq!(cv.schema_version, SchemaVersion::V3Alpha1);
    // The CTF is intermediate: its own context was added as repository context.
    assert_eq!(
        cv.v2["component"]["repositoryContexts"][0]["type"],
        "CommonTransportFormat/v1"
    );
    let a = c.resource(&cv, "joined").await.expect("composed");
    assert_eq!(&a.bytes[..], b"hello, world");
    assert_eq!(a.media_type, "text/plain");
    // An artifact that is no component (an image config) is refused as such.
    let image_config = b"{\"architecture\":\"amd64\"}".to_vec();
    let image = serde_json::to_vec(&serde_json::json!({"schemaVersion": 2,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": sha(&image_config), "size": image_config.len()},
        "layers": []}))
    .expect("json");
    write_ctf(
        &tmp.path().join("image"),
        &[image_config, image.clone()],
        &[(
            "component-descriptors/example.com/forms".into(),
            "1.0.0".into(),
            sha(&image),
        )],
    );
    let err = c
        .component_version(&ctf("image"), "example.com/forms", "1.0.0")
        .await
        .expect_err("no component");
    assert!(err.to_string().contains("no component"), "{err}");
}

#[tokio::test]
async fn component_archive_as_tar_and_tgz() {
    let Some(dir) = data("component_archive_as_tar_and_tgz") else {
        return;
    };
    let src = dir.join("guided-tour/components/helm-chart/component");
    let tmp = tempfile::tempdir().expect("tmp");
    let mut files = BTreeMap::new();
    files.insert(
        "component-descriptor.yaml".to_string(),
        std::fs::read(src.join("component-descriptor.yaml")).expect("read"),
    );
    for e in std::fs::read_dir(src.join("blobs"))
        .expect("blobs")
        .flatten()
    {
        files.insert(
            format!("blobs/{}", e.file_name().to_string_lossy()),
            std::fs::read(e.path()).expect("read"),
        );
    }
    let tar = landscaper_components::archive::tar_files(&files);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &tar).expect("gzip");
    std::fs::write(tmp.path().join("ca.tar"), &tar).expect("write");
    std::fs::write(tmp.path().join("ca.tgz"), gz.finish().expect("gzip")).expect("write");
    let c = components(tmp.path());
    let name = "github.com/gardener/landscaper-examples/guided-tour/helm-chart";
    for f in ["ca.tar", "ca.tgz"] {
        let entries = Components::describe_archive(&tmp.path().join(f)).expect(f);
        assert_eq!(
            (entries[0].component.as_str(), entries[0].resources),
            (name, 3)
        );
        let ctx = common::ctx(serde_json::json!({"type": "ComponentArchive", "filePath": f}));
        let cv = c.component_version(&ctx, name, "1.0.0").await.expect(f);
        let files =
            blueprint_files(&c.resource(&cv, "blueprint").await.expect("blob")).expect("blueprint");
        assert!(files.contains_key("blueprint.yaml"));
        let err = c
            .component_version(&ctx, name, "2.0.0")
            .await
            .expect_err("other version");
        assert!(matches!(err, ComponentError::NotFound { .. }), "{err}");
    }
}

/// A `localBlob` whose media type is an OCI manifest type names a nested manifest of the CTF;
/// it is served as an artifact set, from which the chart layer is found by media type.
#[tokio::test]
async fn nested_manifest_local_blob_is_an_artifact_set() {
    let sha = landscaper_sources::archive::sha256_digest;
    let files: BTreeMap<String, Vec<u8>> = [(
        "app/Chart.yaml".to_string(),
        b"name: app\nversion: 1.0.0\n".to_vec(),
    )]
    .into();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &landscaper_components::archive::tar_files(&files))
        .expect("gzip");
    let chart = gz.finish().expect("gzip");
    let prov = b"-----BEGIN PGP SIGNED MESSAGE-----".to_vec();
    let helm_config = br#"{"name":"app","version":"1.0.0"}"#.to_vec();
    let chart_manifest = serde_json::to_vec(&serde_json::json!({"schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.cncf.helm.config.v1+json", "digest": sha(&helm_config), "size": helm_config.len()},
        "layers": [{"mediaType": "application/vnd.cncf.helm.chart.provenance.v1.prov", "digest": sha(&prov), "size": prov.len()},
                   {"mediaType": "application/vnd.cncf.helm.chart.content.v1.tar+gzip", "digest": sha(&chart), "size": chart.len()}]}))
    .expect("json");
    let descriptor = format!(
        "meta: {{schemaVersion: v2}}\ncomponent:\n  name: example.com/nested\n  version: 1.0.0\n  provider: acme\n  repositoryContexts: []\n  resources:\n  - {{name: chart, type: helmChart, version: 1.0.0, relation: local, access: {{type: localBlob, localReference: '{}', mediaType: application/vnd.oci.image.manifest.v1+json, referenceName: charts/app:1.0.0}}}}\n",
        sha(&chart_manifest)
    );
    let tar = landscaper_components::ocm::descriptor_tar(descriptor.as_bytes());
    let layer = serde_json::json!({"mediaType": landscaper_components::ocm::DESCRIPTOR_TAR_MEDIA_TYPE, "digest": sha(&tar), "size": tar.len()});
    let config =
        serde_json::to_vec(&serde_json::json!({"componentDescriptorLayer": layer})).expect("json");
    let manifest = serde_json::to_vec(&serde_json::json!({"schemaVersion": 2,
        "config": {"mediaType": landscaper_components::ocm::CONFIG_MEDIA_TYPE, "digest": sha(&config), "size": config.len()},
        "layers": [layer, {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": sha(&chart_manifest), "size": chart_manifest.len()}]}))
    .expect("json");
    let tmp = tempfile::tempdir().expect("tmp");
    write_ctf(
        &tmp.path().join("ctf"),
        &[
            chart.clone(),
            prov,
            helm_config,
            chart_manifest,
            tar,
            config,
            manifest.clone(),
        ],
        &[(
            "component-descriptors/example.com/nested".into(),
            "1.0.0".into(),
            sha(&manifest),
        )],
    );
    let c = components(tmp.path());
    let cv = c
        .component_version(&ctf("ctf"), "example.com/nested", "1.0.0")
        .await
        .expect("loads");
    let a = c.resource(&cv, "chart").await.expect("artifact set");
    assert_eq!(
        a.media_type,
        "application/vnd.oci.image.manifest.v1+tar+gzip"
    );
    assert_eq!(
        helm_chart_tgz(&a).expect("chart layer by media type"),
        chart
    );
}

#[tokio::test]
async fn a_rewritten_ctf_directory_is_read_again() {
    let Some(dir) = data("a_rewritten_ctf_directory_is_read_again") else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    copy_dir(
        &dir.join("ctf/landscaper-ctf-local-blobs"),
        &tmp.path().join("mirror"),
    );
    let c = components(tmp.path());
    c.set_archives(vec![tmp.path().join("mirror")]);
    std::fs::create_dir(tmp.path().join("empty")).expect("mkdir");
    let other = local("empty");
    c.component_version(&other, "github.com/leaf", "1.0.0")
        .await
        .expect("in the mirror");
    // The index is rewritten in place without the leaf (the directory's mtime stays).
    let index_path = tmp.path().join("mirror/artifact-index.json");
    let index = std::fs::read_to_string(&index_path).expect("read");
    let mut v: serde_json::Value = serde_json::from_str(&index).expect("json");
    v["artifacts"]
        .as_array_mut()
        .expect("list")
        .retain(|a| a["repository"] != "component-descriptors/github.com/leaf");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&index_path)
        .expect("open");
    std::io::Write::write_all(&mut file, &serde_json::to_vec(&v).expect("json")).expect("write");
    drop(file);
    let err = c
        .component_version(&other, "github.com/leaf", "1.0.0")
        .await
        .expect_err("gone");
    assert!(matches!(err, ComponentError::NotFound { .. }), "{err}");
}

/// FORMATS.md §10 on `local-repos/jsonschema/registry` as Landscaper's jsonschema suite does:
/// with the explicit context the two-hop chain resolves; without it, the descriptor's own
/// context (ociRegistry example.com) is used and resolution fails.
#[tokio::test]
async fn blueprint_schema_cd_refs_resolve_with_the_context_only() {
    let Some(dir) = data("blueprint_schema_cd_refs") else {
        return;
    };
    let c = components(&dir);
    let ctx = local("local-repos/jsonschema/registry");
    let root = c
        .component_version(&ctx, "example.com/root", "v0.1.0")
        .await
        .expect("root");
    let schema =
        serde_json::json!({"$ref": "cd://componentReferences/ref-1/resources/resourcesschema"});
    let got = landscaper_components::schema::resolve_cd_refs(&c, Some(&ctx), &root, &schema)
        .await
        .expect("resolves");
    assert_eq!(
        got["properties"]["memory"],
        serde_json::json!({"type": "string"})
    );
    assert_eq!(
        got["properties"]["cpu"],
        serde_json::json!({"type": "string"})
    );
    let err = landscaper_components::schema::resolve_cd_refs(&c, None, &root, &schema)
        .await
        .expect_err("own context");
    assert!(err.to_string().contains("example.com"), "{err}");
}

#[tokio::test]
async fn doctor_checks_file_repositories() {
    let Some(dir) = data("doctor_checks_file_repositories") else {
        return;
    };
    let c = components(&dir);
    c.check_repository(&local(&format!("{CNUDIE}/valid-components")))
        .await
        .expect("local");
    c.check_repository(&ctf("ctf/landscaper-ctf-local-blobs"))
        .await
        .expect("ctf");
    assert!(c.check_repository(&local("no/such/dir")).await.is_err());
    assert!(
        c.check_repository(&ctf("local-repos")).await.is_err(),
        "not a CTF"
    );
    let oci = common::ctx(serde_json::json!({"type": "OCIRegistry", "baseUrl": "127.0.0.1:1"}));
    let err = c.check_repository(&oci).await.expect_err("offline");
    assert!(err.to_string().contains("offline"), "{err}");
    assert_eq!(c.verify_cache(), None);
}
