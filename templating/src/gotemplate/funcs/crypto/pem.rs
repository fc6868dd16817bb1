//! Go's `encoding/pem` (Go 1.19): `Decode` finds the first well-formed block anywhere in the
//! input, `Encode` writes 64-column base64.

use base64::Engine as _;

use super::super::encoding::b64_decode;

/// A decoded PEM block: its type and bytes (headers are read past, as sprig ignores them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub kind: String,
    pub bytes: Vec<u8>,
}

/// Go's `getLine`: the line without its `\n` (and `\r`), right-trimmed of spaces and tabs, and
/// the rest after it.
fn get_line(data: &[u8]) -> (&[u8], &[u8]) {
    let (mut i, j) = match data.iter().position(|&b| b == b'\n') {
        None => (data.len(), data.len()),
        Some(i) => (i, i + 1),
    };
    if i < data.len() && i > 0 && data[i - 1] == b'\r' {
        i -= 1;
    }
    let mut line = &data[..i];
    while let [rest @ .., b' ' | b'\t'] = line {
        line = rest;
    }
    (line, &data[j..])
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn trim_space(s: &[u8]) -> &[u8] {
    s.trim_ascii()
}

const PEM_START: &[u8] = b"\n-----BEGIN ";
const PEM_END: &[u8] = b"\n-----END ";
const PEM_END_OF_LINE: &[u8] = b"-----";

/// Go's `pem.Decode`: the first block in `data`, or `None` if there is no (well-formed) one.
pub fn decode(data: &[u8]) -> Option<Block> {
    let mut rest = data;
    loop {
        if rest.starts_with(&PEM_START[1..]) {
            rest = &rest[PEM_START.len() - 1..];
        } else if let Some(i) = find(rest, PEM_START) {
            rest = &rest[i + PEM_START.len()..];
        } else {
            return None;
        }
        let (type_line, after) = get_line(rest);
        rest = after;
        let Some(type_line) = type_line.strip_suffix(PEM_END_OF_LINE) else {
            continue;
        };
        let mut headers = 0usize;
        loop {
            if rest.is_empty() {
                return None;
            }
            let (line, next) = get_line(rest);
            let Some(colon) = line.iter().position(|&b| b == b':') else {
                break;
            };
            let _key = trim_space(&line[..colon]);
            headers += 1;
            rest = next;
        }
        let (end_index, end_trailer_index) = if headers == 0 && rest.starts_with(&PEM_END[1..]) {
            (0, PEM_END.len() - 1)
        } else {
            match find(rest, PEM_END) {
                Some(i) => (i, i + PEM_END.len()),
                None => continue,
            }
        };
        let end_trailer = &rest[end_trailer_index..];
        let end_trailer_len = type_line.len() + PEM_END_OF_LINE.len();
        if end_trailer.len() < end_trailer_len {
            continue;
        }
        let rest_of_end_line = &end_trailer[end_trailer_len..];
        let end_trailer = &end_trailer[..end_trailer_len];
        if !end_trailer.starts_with(type_line) || !end_trailer.ends_with(PEM_END_OF_LINE) {
            continue;
        }
        if !get_line(rest_of_end_line).0.is_empty() {
            continue;
        }
        let b64: Vec<u8> = rest[..end_index]
            .iter()
            .copied()
            .filter(|&b| b != b' ' && b != b'\t')
            .collect();
        let Ok(bytes) = b64_decode(&b64) else {
            continue;
        };
        return Some(Block {
            kind: String::from_utf8_lossy(type_line).into_owned(),
            bytes,
        });
    }
}

/// Go's `pem.EncodeToMemory` of a block without headers.
pub fn encode(kind: &str, bytes: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
    let mut out = String::with_capacity(b64.len() + b64.len() / 64 + 2 * kind.len() + 40);
    out.push_str("-----BEGIN ");
    out.push_str(kind);
    out.push_str("-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        out.push('\n');
    }
    out.push_str("-----END ");
    out.push_str(kind);
    out.push_str("-----\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_with_64_columns() {
        let bytes: Vec<u8> = (0..=255).collect();
        let text = encode("THING", &bytes);
        assert!(text.starts_with("-----BEGIN THING-----\n"));
        assert!(text.ends_with("\n-----END THING-----\n"));
        assert!(text.lines().all(|l| l.len() <= 64));
        assert_eq!(
            decode(text.as_bytes()),
            Some(Block {
                kind: "THING".into(),
                bytes
            })
        );
        assert_eq!(encode("E", &[]), "-----BEGIN E-----\n-----END E-----\n");
        assert_eq!(
            decode(b"-----BEGIN E-----\n-----END E-----\n")
                .unwrap()
                .bytes,
            b""
        );
    }

    #[test]
    fn decodes_like_go() {
        // Text around the block, headers, CRLF and spaces inside the base64.
        let text = b"junk\r\n-----BEGIN K-----\r\nProc-Type: 4,x\r\n\r\naGVs bG8=\r\n-----END K-----  \r\ntail";
        assert_eq!(decode(text).unwrap().bytes, b"hello");
        // A malformed first block is skipped for a later good one.
        let text =
            b"-----BEGIN A-----\n!!!\n-----END A-----\n-----BEGIN B-----\naGk=\n-----END B-----\n";
        let b = decode(text).unwrap();
        assert_eq!((b.kind.as_str(), b.bytes.as_slice()), ("B", &b"hi"[..]));
        // Mismatched END type, missing END, no block at all.
        assert_eq!(decode(b"-----BEGIN A-----\naGk=\n-----END B-----\n"), None);
        assert_eq!(decode(b"-----BEGIN A-----\naGk=\n"), None);
        assert_eq!(decode(b"hello"), None);
        assert_eq!(decode(b""), None);
    }
}
