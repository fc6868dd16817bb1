//! A progress line on stderr for long commands (backup, restore, export): redrawn in place at
//! most ten times a second when stderr is a terminal, silent otherwise (pipes, logs, tests). The
//! commands print their own summary line when done.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// What is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Bytes,
    Objects,
}

/// The text of one progress line: `label: 12.0 MB of 48.0 MB (25 %)`, or without a total
/// `label: 12.0 MB`.
pub fn progress_line(label: &str, done: u64, total: Option<u64>, unit: Unit) -> String {
    let amount = |n: u64| match unit {
        Unit::Bytes => human_bytes(n),
        Unit::Objects => format!("{n} objects"),
    };
    match total.filter(|t| *t > 0) {
        Some(total) => format!(
            "{label}: {} of {} ({} %)",
            match unit {
                Unit::Bytes => human_bytes(done),
                Unit::Objects => done.to_string(),
            },
            amount(total),
            (done.min(total) * 100) / total
        ),
        None => format!("{label}: {}", amount(done)),
    }
}

/// `1536` as `1.5 KB`, in powers of 1024.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// A progress line that redraws itself.
pub struct Progress {
    out: Option<Box<dyn Write>>,
    label: String,
    total: Option<u64>,
    unit: Unit,
    done: u64,
    last: Option<Instant>,
    interval: Duration,
}

impl Progress {
    /// On stderr when it is a terminal; does nothing otherwise.
    pub fn stderr(label: impl Into<String>, total: Option<u64>, unit: Unit) -> Progress {
        let out: Option<Box<dyn Write>> = std::io::stderr()
            .is_terminal()
            .then(|| Box::new(std::io::stderr()) as Box<dyn Write>);
        Progress::to(out, label, total, unit)
    }

    /// On `out` (`None`: silent).
    pub fn to(
        out: Option<Box<dyn Write>>,
        label: impl Into<String>,
        total: Option<u64>,
        unit: Unit,
    ) -> Progress {
        Progress {
            out,
            label: label.into(),
            total,
            unit,
            done: 0,
            last: None,
            interval: Duration::from_millis(100),
        }
    }

    /// Counts `n` more and redraws when the last drawing is old enough.
    pub fn add(&mut self, n: u64) {
        self.done += n;
        if self.last.is_some_and(|t| t.elapsed() < self.interval) {
            return;
        }
        self.draw();
    }

    fn draw(&mut self) {
        let line = progress_line(&self.label, self.done, self.total, self.unit);
        if let Some(out) = &mut self.out {
            // Carriage return and erase-line: the line is redrawn in place.
            let _ = write!(out, "\r\x1b[K{line}");
            let _ = out.flush();
        }
        self.last = Some(Instant::now());
    }

    /// Shows `text` as the line (a step without a count).
    pub fn step(&mut self, text: &str) {
        if let Some(out) = &mut self.out {
            let _ = write!(out, "\r\x1b[K{}: {text}", self.label);
            let _ = out.flush();
        }
        self.last = Some(Instant::now());
    }

    /// Erases the line (the command's summary follows).
    pub fn finish(&mut self) {
        if let Some(out) = &mut self.out
            && self.last.is_some()
        {
            let _ = write!(out, "\r\x1b[K");
            let _ = out.flush();
        }
        self.out = None;
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A writer that counts what passes through it into a [`Progress`].
pub struct CountingWriter<'a, W: Write> {
    pub inner: &'a mut W,
    pub progress: Progress,
}

impl<W: Write> Write for CountingWriter<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.progress.add(n as u64);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn lines_say_how_far_and_of_what() {
        assert_eq!(
            progress_line("downloading", 1536, Some(6144), Unit::Bytes),
            "downloading: 1.5 KB of 6.0 KB (25 %)"
        );
        assert_eq!(
            progress_line("downloading", 10, None, Unit::Bytes),
            "downloading: 10 B"
        );
        assert_eq!(
            progress_line("writing", 3, Some(12), Unit::Objects),
            "writing: 3 of 12 objects (25 %)"
        );
        assert_eq!(
            progress_line("writing", 5, Some(0), Unit::Objects),
            "writing: 5 objects"
        );
        assert_eq!(human_bytes(5 * 1024 * 1024 * 1024), "5.0 GB");
    }

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn redraws_in_place_and_clears_at_the_end_or_stays_silent() {
        let shared = Shared::default();
        let mut sink = Vec::new();
        {
            let mut writer = CountingWriter {
                inner: &mut sink,
                progress: Progress::to(
                    Some(Box::new(shared.clone())),
                    "copying",
                    Some(8),
                    Unit::Bytes,
                ),
            };
            writer.write_all(b"abcd").unwrap();
            writer.write_all(b"efgh").unwrap(); // within 100 ms: not drawn
        }
        assert_eq!(sink, b"abcdefgh");
        let text = String::from_utf8(shared.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text, "\r\x1b[Kcopying: 4 B of 8 B (50 %)\r\x1b[K");

        let mut silent = Progress::to(None, "x", None, Unit::Objects);
        silent.add(3);
        silent.finish();
    }
}
