//! The daemon's config file parser (`serde_saphyr::from_str::<ConfigFile>`, then
//! `Config::resolve` without overrides) must never panic.
#![no_main]

use landscaper_appliance::config::{Config, ConfigFile, Overrides};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(file) = serde_saphyr::from_str::<ConfigFile>(text) {
        let _ = Config::resolve(file, Overrides::default());
    }
});
