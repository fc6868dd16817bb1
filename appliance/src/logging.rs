//! Log set-up: human-readable lines by default, JSON on request. Under systemd (JOURNAL_STREAM
//! set) lines carry no colours or timestamps, since the journal adds its own.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

pub fn init(format: LogFormat, default_level: &str) {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(default_level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let under_journal = std::env::var_os("JOURNAL_STREAM").is_some();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let result = match (format, under_journal) {
        (LogFormat::Json, _) => builder.json().try_init(),
        (LogFormat::Text, true) => builder.with_ansi(false).without_time().try_init(),
        (LogFormat::Text, false) => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
    };
    // Already initialised (tests): keep the first subscriber.
    let _ = result;
}
