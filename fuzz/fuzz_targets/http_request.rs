//! One HTTP request built from the input (method, flags, target, headers, body; see
//! `landscaper_appliance::fuzzing`) through the API router and the status page against a store
//! seeded with credentials: never panics, never answers 5xx, and never shows the secret marker
//! to a caller without the token.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(finding) = landscaper_appliance::fuzzing::check_http_request(data) {
        panic!("{finding}");
    }
});
