//! The check of the `component_descriptor` fuzz target (fuzz/fuzz_targets), shared with
//! `tests/fuzz_corpus.rs`, which replays the committed seeds in the ordinary test run.

use crate::content::{blueprint_files, helm_chart_tgz, json_schema};
use crate::{Artifact, ComponentVersion, RepositoryContext, RepositoryKind, SchemaVersion, ocm};

/// Feeds `data` to the descriptor, manifest, index and archive parsers. Never panics; an
/// accepted descriptor converts to v3alpha1 and back to the same v2 model.
pub fn component_descriptor(data: &[u8]) {
    let ctx = RepositoryContext::for_file(RepositoryKind::Local {
        file_path: "fuzz".into(),
    });
    if let Ok(cv) = ComponentVersion::parse(data, "fuzz", ctx.clone()) {
        let v3 = cv.descriptor_in(SchemaVersion::V3Alpha1);
        let again = ComponentVersion::from_value(v3, "fuzz v3", ctx)
            .expect("a converted descriptor is valid");
        assert_eq!(again.v2, cv.v2, "v2 → v3alpha1 → v2 changes the descriptor");
        assert_eq!(again.references(), cv.references());
        let _ = crate::uri::resource_key(&cv, "r");
    }
    if let Ok(doc) = ocm::parse_oci_document(data)
        && let ocm::OciDocument::Manifest { config, layers, .. } = &doc
    {
        let _ = ocm::check_config(config);
        let _ = ocm::descriptor_layer_from_config(data, layers);
    }
    let _ = ocm::parse_artifact_index(data);
    for mt in ocm::DESCRIPTOR_TAR_MEDIA_TYPES
        .iter()
        .take(1)
        .chain(ocm::DESCRIPTOR_PLAIN_MEDIA_TYPES.iter().take(1))
    {
        let _ = ocm::descriptor_from_layer(mt, data);
    }
    let set = Artifact::new(
        "application/vnd.oci.image.manifest.v1+tar+gzip",
        data.to_vec(),
    );
    let _ = helm_chart_tgz(&set);
    let _ = blueprint_files(&set);
    let _ = blueprint_files(&Artifact::new("application/x-tar", data.to_vec()));
    let _ = json_schema(&Artifact::new("application/json", data.to_vec()));
    let _ = crate::uri::parse_resource_key(&String::from_utf8_lossy(data));
    let _ = crate::uri::CdUri::parse(&String::from_utf8_lossy(data));
}
