//! Chart archives: digests and the check that bytes are a gzipped tar holding a chart
//! (`<dir>/Chart.yaml`), with the unpacked size bounded (no gzip bombs).

use std::io::Read;

use sha2::{Digest, Sha256};

use crate::error::SourceError;

/// `sha256:<hex>` of the bytes.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex(&Sha256::digest(bytes)))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Checks that `digest` (`sha256:<64 hex>`) is well formed.
pub fn valid_sha256_digest(digest: &str) -> bool {
    digest
        .strip_prefix("sha256:")
        .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

/// What [`check_chart_archive`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveInfo {
    /// The top directory holding `Chart.yaml`.
    pub chart_dir: String,
    pub entries: usize,
    pub unpacked_bytes: u64,
}

/// Checks that `bytes` is a gzipped tar with a `<dir>/Chart.yaml` at its top, unpacking at most
/// `max_unpacked` bytes.
pub fn check_chart_archive(
    what: &str,
    bytes: &[u8],
    max_unpacked: u64,
) -> Result<ArchiveInfo, SourceError> {
    let corrupt = |detail: String| SourceError::CorruptArchive {
        what: what.to_string(),
        detail,
    };
    if bytes.len() < 2 || bytes[0] != 0x1f || bytes[1] != 0x8b {
        return Err(corrupt("not gzip data".into()));
    }
    let decoder = flate2::read::GzDecoder::new(bytes);
    let read = std::rc::Rc::new(std::cell::Cell::new(0u64));
    let limited = Limited {
        inner: decoder,
        read: read.clone(),
        max: max_unpacked,
    };
    let too_large = || SourceError::TooLarge {
        what: format!("{what} (unpacked)"),
        limit: max_unpacked,
    };
    let mut archive = tar::Archive::new(limited);
    let mut chart_dir: Option<String> = None;
    let mut entries = 0usize;
    let mut unpacked = 0u64;
    let iter = archive
        .entries()
        .map_err(|e| corrupt(format!("cannot read tar: {e}")))?;
    for entry in iter {
        let mut entry = match entry {
            Ok(entry) => entry,
            Err(_) if read.get() > max_unpacked => return Err(too_large()),
            Err(e) => return Err(corrupt(format!("cannot read tar entry: {e}"))),
        };
        entries += 1;
        let path = entry
            .path()
            .map_err(|e| corrupt(format!("bad entry name: {e}")))?
            .to_string_lossy()
            .into_owned();
        let mut sink = std::io::sink();
        let copied = match std::io::copy(&mut entry, &mut sink) {
            Ok(n) => n,
            Err(_) if read.get() > max_unpacked => return Err(too_large()),
            Err(e) => return Err(corrupt(format!("cannot read {path}: {e}"))),
        };
        unpacked = unpacked.saturating_add(copied);
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        if parts.len() == 2 && parts[1] == "Chart.yaml" && chart_dir.is_none() {
            chart_dir = Some(parts[0].to_string());
        }
    }
    match chart_dir {
        Some(chart_dir) => Ok(ArchiveInfo {
            chart_dir,
            entries,
            unpacked_bytes: unpacked,
        }),
        None if entries == 0 => Err(corrupt("empty archive".into())),
        None => Err(corrupt("no Chart.yaml in a top-level directory".into())),
    }
}

/// Counts what is read and fails once more than `max` bytes came through.
struct Limited<R> {
    inner: R,
    read: std::rc::Rc<std::cell::Cell<u64>>,
    max: u64,
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let total = self.read.get().saturating_add(n as u64);
        self.read.set(total);
        if total > self.max {
            return Err(std::io::Error::other("unpacked size limit exceeded"));
        }
        Ok(n)
    }
}

#[cfg(test)]
pub(crate) mod fixtures {
    //! Tiny charts made in the tests.

    /// A `.tgz` of `files` (path, content) with Helm's layout.
    pub fn tgz(files: &[(&str, &str)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (path, content) in files {
            let mut header = tar::Header::new_gnu();
            header.set_size(content.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder
                .append_data(&mut header, path, content.as_bytes())
                .expect("append");
        }
        let tar = builder.into_inner().expect("tar");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, &tar).expect("gzip");
        gz.finish().expect("gzip finish")
    }

    pub fn chart(name: &str, version: &str) -> Vec<u8> {
        tgz(&[
            (
                &format!("{name}/Chart.yaml"),
                &format!("apiVersion: v2\nname: {name}\nversion: {version}\n"),
            ),
            (&format!("{name}/values.yaml"), "replicas: 1\n"),
            (
                &format!("{name}/templates/cm.yaml"),
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
            ),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;

    #[test]
    fn a_chart_archive_passes() {
        let info = check_chart_archive("t", &chart("app", "1.0.0"), 1 << 20).expect("valid");
        assert_eq!(info.chart_dir, "app");
        assert_eq!(info.entries, 3);
    }

    #[test]
    fn corrupt_archives_fail_fatally() {
        let err = check_chart_archive("chart x", b"hello", 1 << 20).expect_err("not gzip");
        assert!(matches!(err, SourceError::CorruptArchive { .. }), "{err}");
        assert!(err.to_string().starts_with("chart x: "), "{err}");
        assert!(!err.is_retryable());
        let mut truncated = chart("app", "1.0.0");
        truncated.truncate(truncated.len() / 2);
        let err = check_chart_archive("t", &truncated, 1 << 20).expect_err("truncated");
        assert!(matches!(err, SourceError::CorruptArchive { .. }), "{err}");
        let err = check_chart_archive("t", &tgz(&[("app/values.yaml", "a: 1\n")]), 1 << 20)
            .expect_err("no Chart.yaml");
        assert!(err.to_string().contains("no Chart.yaml"), "{err}");
    }

    #[test]
    fn unpacked_size_is_bounded() {
        let big = "x".repeat(100_000);
        let bytes = tgz(&[("app/Chart.yaml", "name: app\n"), ("app/big", &big)]);
        assert!(bytes.len() < 10_000, "compresses well");
        let err = check_chart_archive("t", &bytes, 50_000).expect_err("too large unpacked");
        assert!(matches!(err, SourceError::TooLarge { .. }), "{err}");
        check_chart_archive("t", &bytes, 200_000).expect("within limit");
    }

    #[test]
    fn digests() {
        assert_eq!(
            sha256_digest(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert!(valid_sha256_digest(&sha256_digest(b"x")));
        assert!(!valid_sha256_digest("sha256:abc"));
        assert!(!valid_sha256_digest(
            "sha256:../../../../etc/passwd0000000000000000000000000000000000000000"
        ));
    }
}
