//! Log set-up: human-readable lines by default, JSON on request. Under systemd (JOURNAL_STREAM
//! set) lines carry no colours or timestamps, since the journal adds its own, and start with a
//! `<N>` syslog priority prefix so that `journalctl -p warning` filters by level.

use std::fmt;
use std::io::IsTerminal;
use std::sync::OnceLock;

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::{Format, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use crate::config::LogFormat;

/// Swaps the filter of the installed subscriber (set by [`init`]).
type Reloader = Box<dyn Fn(EnvFilter) -> Result<(), String> + Send + Sync>;

static RELOADER: OnceLock<Reloader> = OnceLock::new();

/// The filter for `default_level`: `RUST_LOG` when set, else `default_level`.
fn filter(default_level: &str) -> Result<EnvFilter, String> {
    let filter = match EnvFilter::try_from_default_env() {
        Ok(filter) => filter,
        Err(_) => EnvFilter::try_new(default_level).map_err(|e| e.to_string())?,
    };
    // kube's client logs every failed connection at ERROR; the deploy item controller already
    // reports the same failure once per attempt with the item's name. RUST_LOG naming
    // kube_client brings it back.
    let mentions_kube = std::env::var("RUST_LOG").is_ok_and(|v| v.contains("kube_client"));
    Ok(match "kube_client::client::builder=off".parse() {
        Ok(directive) if !mentions_kube => filter.add_directive(directive),
        _ => filter,
    })
}

fn keep_reload_handle<S: 'static>(handle: tracing_subscriber::reload::Handle<EnvFilter, S>) {
    let _ = RELOADER.set(Box::new(move |filter| {
        handle.reload(filter).map_err(|e| e.to_string())
    }));
}

pub fn init(format: LogFormat, default_level: &str) {
    let filter = filter(default_level).unwrap_or_else(|_| EnvFilter::new("info"));
    let under_journal = std::env::var_os("JOURNAL_STREAM").is_some();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // The filter can be swapped later ([`reload_level`], on SIGHUP); when a subscriber is
    // already installed (tests), the first one stays and so does its handle.
    match (format, under_journal) {
        (LogFormat::Json, _) => {
            let builder = builder.json().with_filter_reloading();
            let handle = builder.reload_handle();
            if builder.try_init().is_ok() {
                keep_reload_handle(handle);
            }
        }
        (LogFormat::Text, true) => {
            let builder = builder
                .with_ansi(false)
                .event_format(JournalPriority(Format::default().without_time()))
                .with_filter_reloading();
            let handle = builder.reload_handle();
            if builder.try_init().is_ok() {
                keep_reload_handle(handle);
            }
        }
        (LogFormat::Text, false) => {
            let builder = builder
                .with_ansi(std::io::stderr().is_terminal())
                .with_filter_reloading();
            let handle = builder.reload_handle();
            if builder.try_init().is_ok() {
                keep_reload_handle(handle);
            }
        }
    }
}

/// Why a new log level was not applied.
#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    #[error("logLevel {level:?} is not a valid level or filter: {message}")]
    Invalid { level: String, message: String },
    #[error("logging was not set up by this process, so its level cannot change")]
    NotInitialised,
    #[error("applying logLevel {level:?}: {message}")]
    Apply { level: String, message: String },
}

/// What [`reload_level`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LevelChange {
    Applied,
    /// `RUST_LOG` is set and wins over `logLevel`, as at start.
    OverriddenByEnvironment,
}

/// Applies a new `logLevel` (a level or an `EnvFilter` directive list) to the running
/// subscriber.
pub fn reload_level(level: &str) -> Result<LevelChange, ReloadError> {
    if std::env::var_os("RUST_LOG").is_some() {
        return Ok(LevelChange::OverriddenByEnvironment);
    }
    let new = filter(level).map_err(|message| ReloadError::Invalid {
        level: level.to_string(),
        message,
    })?;
    let reload = RELOADER.get().ok_or(ReloadError::NotInitialised)?;
    reload(new).map_err(|message| ReloadError::Apply {
        level: level.to_string(),
        message,
    })?;
    Ok(LevelChange::Applied)
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

    #[test]
    fn reloads_refuse_invalid_levels() {
        if std::env::var_os("RUST_LOG").is_some() {
            assert_eq!(
                reload_level("debug").unwrap(),
                LevelChange::OverriddenByEnvironment
            );
            return;
        }
        let err = reload_level("landscaper=notalevel").unwrap_err();
        assert!(matches!(err, ReloadError::Invalid { .. }), "{err}");
    }
}
