//! `model::validate_object` must never panic on any JSON value. The bytes are decoded as
//! JSON (inputs that are not JSON are skipped); seeds are objects of every kind.
#![no_main]

use landscaper_model::validate_object;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    if let Ok(validated) = validate_object(&value) {
        // What was accepted once is accepted again, as the same object (idempotence).
        let again = validate_object(&validated.object).unwrap_or_else(|e| {
            panic!("validated object is rejected on a second pass: {e}\n{}", validated.object)
        });
        assert_eq!(again.kind, validated.kind);
        assert_eq!(again.object, validated.object, "second pass changed the object");
    }
});
