//! `LabelSelector::parse` must never panic, and anything it accepts must print (`Display`)
//! to a string that parses back to an equal selector.
#![no_main]

use landscaper_store::LabelSelector;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(selector) = LabelSelector::parse(input) else {
        return;
    };
    let printed = selector.to_string();
    match LabelSelector::parse(&printed) {
        Ok(again) => assert_eq!(
            again, selector,
            "round trip changed the selector: input {input:?} printed as {printed:?}"
        ),
        Err(e) => panic!("printed selector does not parse: input {input:?} printed as {printed:?}: {e}"),
    }
});
