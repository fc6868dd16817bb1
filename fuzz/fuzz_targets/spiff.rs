//! `landscaper_templating::fuzzing::spiff` (shared with `templating/tests/fuzz_corpus.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    landscaper_templating::fuzzing::spiff(data);
});
