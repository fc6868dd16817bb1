//! sprig's encodings and hashes: `b64enc`, `b64dec`, `b32enc`, `b32dec`, `sha1sum`,
//! `sha256sum`, `sha512sum`, `adler32sum`.

use base64::Engine as _;
use sha1::Digest as _;

use super::super::function::{Arity, FuncMap};
use super::super::value::Value;
use super::args::{self, s};

const B32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

pub fn register(m: &mut FuncMap) {
    // All of them work on the string's bytes, which need not be valid UTF-8.
    m.insert("b64enc", Arity::Exact(1), |_, a| {
        let v = args::string_bytes(&a[0])?;
        Ok(s(base64::engine::general_purpose::STANDARD.encode(v)))
    });
    m.insert("b64dec", Arity::Exact(1), |_, a| {
        Ok(match b64_decode(args::string_bytes(&a[0])?) {
            Ok(b) => Value::from_bytes(b),
            Err(at) => s(format!("illegal base64 data at input byte {at}")),
        })
    });
    m.insert("b32enc", Arity::Exact(1), |_, a| {
        Ok(s(b32_encode(args::string_bytes(&a[0])?)))
    });
    m.insert("b32dec", Arity::Exact(1), |_, a| {
        Ok(match b32_decode(args::string_bytes(&a[0])?) {
            Ok(b) => Value::from_bytes(b),
            Err(at) => s(format!("illegal base32 data at input byte {at}")),
        })
    });
    m.insert("sha1sum", Arity::Exact(1), |_, a| {
        Ok(s(hex(&sha1::Sha1::digest(args::string_bytes(&a[0])?))))
    });
    m.insert("sha256sum", Arity::Exact(1), |_, a| {
        Ok(s(hex(&sha2::Sha256::digest(args::string_bytes(&a[0])?))))
    });
    m.insert("sha512sum", Arity::Exact(1), |_, a| {
        Ok(s(hex(&sha2::Sha512::digest(args::string_bytes(&a[0])?))))
    });
    m.insert("adler32sum", Arity::Exact(1), |_, a| {
        Ok(s(adler32(args::string_bytes(&a[0])?).to_string()))
    });
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65521;
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &x in chunk {
            a += x as u32;
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

pub fn b32_encode(data: &[u8]) -> String {
    let mut out = String::new();
    for chunk in data.chunks(5) {
        let mut buf = [0u8; 5];
        buf[..chunk.len()].copy_from_slice(chunk);
        let bits = u64::from_be_bytes([0, 0, 0, buf[0], buf[1], buf[2], buf[3], buf[4]]);
        let chars = match chunk.len() {
            1 => 2,
            2 => 4,
            3 => 5,
            4 => 7,
            _ => 8,
        };
        for i in 0..8 {
            if i < chars {
                out.push(B32[((bits >> (35 - 5 * i)) & 31) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Go's `base64.StdEncoding.DecodeString`: `\r` and `\n` are ignored, padding is required;
/// the error is the offset Go reports.
pub fn b64_decode(src: &[u8]) -> Result<Vec<u8>, usize> {
    fn val(c: u8) -> Option<u8> {
        match c {
            b'A'..=b'Z' => Some(c - b'A'),
            b'a'..=b'z' => Some(c - b'a' + 26),
            b'0'..=b'9' => Some(c - b'0' + 52),
            b'+' => Some(62),
            b'/' => Some(63),
            _ => None,
        }
    }
    let mut out = Vec::new();
    let mut si = 0usize;
    loop {
        let mut dbuf = [0u8; 4];
        let mut dlen = 4;
        let mut j = 0usize;
        let mut trailing_err = None;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    return Ok(out);
                }
                return Err(si - j);
            }
            let c = src[si];
            si += 1;
            if let Some(v) = val(c) {
                dbuf[j] = v;
                j += 1;
                continue;
            }
            if c == b'\n' || c == b'\r' {
                continue;
            }
            if c != b'=' {
                return Err(si - 1);
            }
            // Padding.
            match j {
                0 | 1 => return Err(si - 1),
                2 => {
                    while si < src.len() && (src[si] == b'\n' || src[si] == b'\r') {
                        si += 1;
                    }
                    if si == src.len() {
                        return Err(src.len());
                    }
                    if src[si] != b'=' {
                        return Err(si - 1);
                    }
                    si += 1;
                }
                _ => {}
            }
            while si < src.len() && (src[si] == b'\n' || src[si] == b'\r') {
                si += 1;
            }
            if si < src.len() {
                trailing_err = Some(si);
            }
            dlen = j;
            break;
        }
        let v = (dbuf[0] as u32) << 18
            | (dbuf[1] as u32) << 12
            | (dbuf[2] as u32) << 6
            | dbuf[3] as u32;
        let bytes = [(v >> 16) as u8, (v >> 8) as u8, v as u8];
        out.extend_from_slice(&bytes[..dlen - 1]);
        if let Some(e) = trailing_err {
            return Err(e);
        }
        if dlen < 4 {
            return Ok(out);
        }
    }
}

/// Go's `base32.StdEncoding.DecodeString` (newlines stripped first).
pub fn b32_decode(src: &[u8]) -> Result<Vec<u8>, usize> {
    let src: Vec<u8> = src
        .iter()
        .copied()
        .filter(|c| *c != b'\n' && *c != b'\r')
        .collect();
    fn val(c: u8) -> u8 {
        match c {
            b'A'..=b'Z' => c - b'A',
            b'2'..=b'7' => c - b'2' + 26,
            _ => 0xFF,
        }
    }
    let olen = src.len();
    let mut rest: &[u8] = &src;
    let mut out = Vec::new();
    let mut end = false;
    while !rest.is_empty() && !end {
        let mut dbuf = [0u8; 8];
        let mut dlen = 8;
        let mut j = 0;
        while j < 8 {
            if rest.is_empty() {
                return Err(olen - rest.len() - j);
            }
            let c = rest[0];
            rest = &rest[1..];
            if c == b'=' && j >= 2 && rest.len() < 8 {
                if rest.len() + j < 8 - 1 {
                    return Err(olen);
                }
                for k in 0..8 - 1 - j {
                    if rest.len() > k && rest[k] != b'=' {
                        return Err(olen - rest.len() + k - 1);
                    }
                }
                dlen = j;
                end = true;
                if dlen == 1 || dlen == 3 || dlen == 6 {
                    return Err(olen - rest.len() - 1);
                }
                break;
            }
            dbuf[j] = val(c);
            if dbuf[j] == 0xFF {
                return Err(olen - rest.len() - 1);
            }
            j += 1;
        }
        let bits = dbuf.iter().fold(0u64, |acc, d| (acc << 5) | *d as u64);
        let bytes = bits.to_be_bytes();
        let n = match dlen {
            8 => 5,
            7 => 4,
            5 => 3,
            4 => 2,
            2 => 1,
            _ => 0,
        };
        out.extend_from_slice(&bytes[3..3 + n]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_encodings_round_trip_and_report_go_offsets() {
        assert_eq!(b64_decode(b"aGVsbG8=").unwrap(), b"hello");
        assert_eq!(b64_decode(b"aGVs\nbG8=").unwrap(), b"hello");
        assert_eq!(b64_decode(b"aGVsbG8"), Err(4));
        assert_eq!(b64_decode(b"a!"), Err(1));
        assert_eq!(b32_encode(b"hello"), "NBSWY3DP");
        assert_eq!(b32_encode(b"hi"), "NBUQ====");
        assert_eq!(b32_decode(b"NBUQ====").unwrap(), b"hi");
        assert_eq!(b32_decode(b"NBSWY3DP").unwrap(), b"hello");
        assert!(b32_decode(b"1").is_err());
        assert_eq!(adler32(b"Wikipedia"), 300286872);
    }
}
