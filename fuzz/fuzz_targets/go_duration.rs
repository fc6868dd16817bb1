//! The Go-duration parser of the model (`Duration::parse`, `parse_landscaper_duration`,
//! `parse_go_duration`) must never panic; accepted values fit Go's i64 nanoseconds.
#![no_main]

use landscaper_model::Duration;
use landscaper_model::duration::{parse_go_duration, parse_landscaper_duration};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let go = parse_go_duration(text);
    let landscaper = parse_landscaper_duration(text);
    if text != "none" {
        assert_eq!(go, landscaper, "`none` is the only difference");
    }
    if let Ok(nanos) = landscaper {
        assert!(
            (i128::from(i64::MIN)..=i128::from(i64::MAX)).contains(&nanos),
            "{text:?} parsed to {nanos} ns, outside Go's i64 range"
        );
        let duration = Duration::parse(text).expect("parse agrees with parse_landscaper_duration");
        assert_eq!(duration.nanos(), nanos);
        assert_eq!(duration.as_str(), text);
        let _ = duration.to_std();
    } else {
        assert!(Duration::parse(text).is_err());
    }
});
