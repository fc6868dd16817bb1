//! A Helm chart (archive or `==> PATH` file list) loaded and rendered with a small budget:
//! see `landscaper_charts::fuzzing::chart`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    landscaper_charts::fuzzing::chart(data);
});
