//! `landscaper_components::fuzzing::component_descriptor` (shared with
//! `components/tests/fuzz_corpus.rs`): component descriptors (v2, v3alpha1), OCI manifests and
//! indexes, CTF artifact indexes, descriptor layers and artifact sets.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    landscaper_components::fuzzing::component_descriptor(data);
});
