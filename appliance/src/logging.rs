//! Log set-up: human-readable lines by default, JSON on request. Under systemd (JOURNAL_STREAM
//! set) lines carry no colours or timestamps, since the journal adds its own, and start with a
//! `<N>` syslog priority prefix so that `journalctl -p warning` filters by level.

use std::fmt;
use std::io::IsTerminal;

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::{Format, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use crate::config::LogFormat;

pub fn init(format: LogFormat, default_level: &str) {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(default_level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    // kube's client logs every failed connection at ERROR; the deploy item controller already
    // reports the same failure once per attempt with the item's name. RUST_LOG naming
    // kube_client brings it back.
    let mentions_kube = std::env::var("RUST_LOG").is_ok_and(|v| v.contains("kube_client"));
    let filter = match "kube_client::client::builder=off".parse() {
        Ok(directive) if !mentions_kube => filter.add_directive(directive),
        _ => filter,
    };
    let under_journal = std::env::var_os("JOURNAL_STREAM").is_some();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let result = match (format, under_journal) {
        (LogFormat::Json, _) => builder.json().try_init(),
        (LogFormat::Text, true) => builder
            .with_ansi(false)
            .event_format(JournalPriority(Format::default().without_time()))
            .try_init(),
        (LogFormat::Text, false) => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
    };
    // Already initialised (tests): keep the first subscriber.
    let _ = result;
}

/// The syslog priority systemd's journal reads from a `<N>` line prefix (sd-daemon(3)).
pub fn syslog_priority(level: &Level) -> u8 {
    match *level {
        Level::ERROR => 3,
        Level::WARN => 4,
        Level::INFO => 6,
        Level::DEBUG | Level::TRACE => 7,
    }
}

/// Prefixes each line of an inner formatter with the event's syslog priority.
struct JournalPriority<F>(F);

impl<S, N, F> FormatEvent<S, N> for JournalPriority<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        write!(writer, "<{}>", syslog_priority(event.metadata().level()))?;
        self.0.format_event(ctx, writer, event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_map_to_syslog_priorities() {
        assert_eq!(syslog_priority(&Level::ERROR), 3);
        assert_eq!(syslog_priority(&Level::WARN), 4);
        assert_eq!(syslog_priority(&Level::INFO), 6);
        assert_eq!(syslog_priority(&Level::DEBUG), 7);
    }
}
