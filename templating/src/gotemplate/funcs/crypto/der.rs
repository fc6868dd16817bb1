//! The little DER the key and certificate functions need: writing the structures Go's
//! `crypto/x509` and `encoding/asn1` write (byte for byte), and reading the few fields of keys
//! and certificates they look at.

/// Universal tags.
pub const BOOLEAN: u8 = 0x01;
pub const INTEGER: u8 = 0x02;
pub const BIT_STRING: u8 = 0x03;
pub const OCTET_STRING: u8 = 0x04;
pub const NULL: u8 = 0x05;
pub const OID: u8 = 0x06;
pub const UTF8_STRING: u8 = 0x0c;
pub const PRINTABLE_STRING: u8 = 0x13;
pub const UTC_TIME: u8 = 0x17;
pub const GENERALIZED_TIME: u8 = 0x18;
pub const SEQUENCE: u8 = 0x30;
pub const SET: u8 = 0x31;

/// A context-specific constructed tag `[n]` (EXPLICIT).
pub const fn explicit(n: u8) -> u8 {
    0xa0 | n
}

/// A context-specific primitive tag `[n]` (IMPLICIT over a primitive type).
pub const fn implicit(n: u8) -> u8 {
    0x80 | n
}

/// Tag, length and contents.
pub fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(content.len() + 6);
    out.push(tag);
    let n = content.len();
    if n < 0x80 {
        out.push(n as u8);
    } else {
        let bytes = n.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(content);
    out
}

/// A SEQUENCE of already encoded elements.
pub fn seq(parts: &[&[u8]]) -> Vec<u8> {
    tlv(SEQUENCE, &parts.concat())
}

/// An INTEGER holding a non-negative number given big-endian (Go's `*big.Int`).
pub fn uint(be: &[u8]) -> Vec<u8> {
    let skip = be.iter().take_while(|b| **b == 0).count();
    let digits = &be[skip..];
    let mut content = Vec::with_capacity(digits.len() + 1);
    if digits.first().is_none_or(|b| b & 0x80 != 0) {
        content.push(0);
    }
    content.extend_from_slice(digits);
    tlv(INTEGER, &content)
}

/// An INTEGER of a small non-negative value.
pub fn small_int(v: u8) -> Vec<u8> {
    uint(&[v])
}

/// A BIT STRING of whole bytes.
pub fn bit_string(bytes: &[u8]) -> Vec<u8> {
    let mut content = Vec::with_capacity(bytes.len() + 1);
    content.push(0);
    content.extend_from_slice(bytes);
    tlv(BIT_STRING, &content)
}

pub fn octet_string(bytes: &[u8]) -> Vec<u8> {
    tlv(OCTET_STRING, bytes)
}

pub fn null() -> Vec<u8> {
    vec![NULL, 0]
}

/// An OBJECT IDENTIFIER from its encoded contents.
pub fn oid(content: &[u8]) -> Vec<u8> {
    tlv(OID, content)
}

/// The dotted text of an OBJECT IDENTIFIER's contents, as Go prints an `ObjectIdentifier`.
pub fn oid_text(content: &[u8]) -> String {
    let mut arcs: Vec<u128> = Vec::new();
    let mut v: u128 = 0;
    for &b in content {
        v = (v << 7) | u128::from(b & 0x7f);
        if b & 0x80 == 0 {
            if arcs.is_empty() {
                let first = (v / 40).min(2);
                arcs.push(first);
                arcs.push(v - first * 40);
            } else {
                arcs.push(v);
            }
            v = 0;
        }
    }
    arcs.iter()
        .map(u128::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

/// Encoded OBJECT IDENTIFIER contents.
pub mod oids {
    /// rsaEncryption, 1.2.840.113549.1.1.1
    pub const RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
    /// sha256WithRSAEncryption, 1.2.840.113549.1.1.11
    pub const SHA256_WITH_RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b];
    /// id-ecPublicKey, 1.2.840.10045.2.1
    pub const EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
    /// ecdsa-with-SHA256, 1.2.840.10045.4.3.2
    pub const ECDSA_WITH_SHA256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02];
    /// prime256v1 (P-256), 1.2.840.10045.3.1.7
    pub const P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
    /// secp224r1, 1.3.132.0.33
    pub const P224: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x21];
    /// secp384r1, 1.3.132.0.34
    pub const P384: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x22];
    /// secp521r1, 1.3.132.0.35
    pub const P521: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x23];
    /// id-Ed25519, 1.3.101.112
    pub const ED25519: &[u8] = &[0x2b, 0x65, 0x70];
    /// id-dsa, 1.2.840.10040.4.1
    pub const DSA: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x38, 0x04, 0x01];
    /// id-at-commonName, 2.5.4.3
    pub const COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];
    /// id-ce-subjectKeyIdentifier, 2.5.29.14
    pub const SUBJECT_KEY_ID: &[u8] = &[0x55, 0x1d, 0x0e];
    /// id-ce-keyUsage, 2.5.29.15
    pub const KEY_USAGE: &[u8] = &[0x55, 0x1d, 0x0f];
    /// id-ce-subjectAltName, 2.5.29.17
    pub const SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];
    /// id-ce-basicConstraints, 2.5.29.19
    pub const BASIC_CONSTRAINTS: &[u8] = &[0x55, 0x1d, 0x13];
    /// id-ce-authorityKeyIdentifier, 2.5.29.35
    pub const AUTHORITY_KEY_ID: &[u8] = &[0x55, 0x1d, 0x23];
    /// id-ce-extKeyUsage, 2.5.29.37
    pub const EXT_KEY_USAGE: &[u8] = &[0x55, 0x1d, 0x25];
    /// id-kp-serverAuth, 1.3.6.1.5.5.7.3.1
    pub const SERVER_AUTH: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01];
    /// id-kp-clientAuth, 1.3.6.1.5.5.7.3.2
    pub const CLIENT_AUTH: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x02];
}

/// One element read: its tag, contents and whole encoding.
#[derive(Debug, Clone, Copy)]
pub struct Tlv<'a> {
    pub tag: u8,
    pub content: &'a [u8],
    pub full: &'a [u8],
}

impl<'a> Tlv<'a> {
    /// The elements of a constructed value.
    pub fn reader(&self) -> Reader<'a> {
        Reader::new(self.content)
    }

    /// The value of an INTEGER as big-endian magnitude, rejecting negative numbers.
    pub fn unsigned(&self) -> Result<&'a [u8], String> {
        self.expect(INTEGER)?;
        match self.content {
            [] => Err(syntax("empty integer")),
            [b, ..] if b & 0x80 != 0 => Err(structure("negative integer")),
            [0, rest @ ..] if rest.first().is_some_and(|b| b & 0x80 == 0) => {
                Err(structure("integer not minimally-encoded"))
            }
            c => Ok(c),
        }
    }

    /// The value of a small INTEGER (a version field), as Go's `int`.
    pub fn small(&self) -> Result<i64, String> {
        self.expect(INTEGER)?;
        if self.content.is_empty() {
            return Err(syntax("empty integer"));
        }
        if self.content.len() > 8 {
            return Err(structure("integer too large"));
        }
        let neg = self.content[0] & 0x80 != 0;
        let mut v: i64 = if neg { -1 } else { 0 };
        for &b in self.content {
            v = (v << 8) | i64::from(b);
        }
        Ok(v)
    }

    pub fn expect(&self, tag: u8) -> Result<(), String> {
        if self.tag == tag {
            Ok(())
        } else {
            Err(structure(&format!(
                "tags don't match (expected tag {}, got tag {})",
                tag & 0x1f,
                self.tag & 0x1f
            )))
        }
    }
}

/// `asn1: syntax error: ...`, as Go's `encoding/asn1` reports malformed input.
pub fn syntax(msg: &str) -> String {
    format!("asn1: syntax error: {msg}")
}

/// `asn1: structure error: ...`, as Go reports input of the wrong shape.
pub fn structure(msg: &str) -> String {
    format!("asn1: structure error: {msg}")
}

/// Reads consecutive DER elements.
pub struct Reader<'a> {
    data: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Reader { data }
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The next element's tag, if any.
    pub fn peek_tag(&self) -> Option<u8> {
        self.data.first().copied()
    }

    pub fn read(&mut self) -> Result<Tlv<'a>, String> {
        let d = self.data;
        let (&tag, rest) = d.split_first().ok_or_else(|| syntax("data truncated"))?;
        if tag & 0x1f == 0x1f {
            return Err(structure("high-tag-number form not supported"));
        }
        let (&first, mut rest) = rest.split_first().ok_or_else(|| syntax("data truncated"))?;
        let len = if first < 0x80 {
            usize::from(first)
        } else {
            let n = usize::from(first & 0x7f);
            if n == 0 {
                return Err(syntax("indefinite length found (not DER)"));
            }
            if n > 4 || rest.len() < n {
                return Err(syntax("data truncated"));
            }
            let mut len = 0usize;
            for &b in &rest[..n] {
                len = (len << 8) | usize::from(b);
            }
            if rest[0] == 0 || len < 0x80 {
                return Err(structure("non-minimal length"));
            }
            rest = &rest[n..];
            len
        };
        if rest.len() < len {
            return Err(syntax("data truncated"));
        }
        let header = d.len() - rest.len();
        let tlv = Tlv {
            tag,
            content: &rest[..len],
            full: &d[..header + len],
        };
        self.data = &rest[len..];
        Ok(tlv)
    }

    /// Reads the next element, which must have the given tag.
    pub fn read_tag(&mut self, tag: u8) -> Result<Tlv<'a>, String> {
        let t = self.read()?;
        t.expect(tag)?;
        Ok(t)
    }

    /// Reads the next element if it has the given tag.
    pub fn optional(&mut self, tag: u8) -> Result<Option<Tlv<'a>>, String> {
        if self.peek_tag() == Some(tag) {
            self.read().map(Some)
        } else {
            Ok(None)
        }
    }
}

/// Reads exactly one element from `data` (Go's `asn1.Unmarshal`, which reports trailing data).
pub fn parse_one(data: &[u8]) -> Result<Tlv<'_>, String> {
    let mut r = Reader::new(data);
    let t = r.read()?;
    if !r.is_empty() {
        return Err("asn1: syntax error: trailing data".into());
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_minimal_and_positive() {
        assert_eq!(uint(&[]), [2, 1, 0]);
        assert_eq!(uint(&[0, 0, 5]), [2, 1, 5]);
        assert_eq!(uint(&[0x80]), [2, 2, 0, 0x80]);
        assert_eq!(small_int(2), [2, 1, 2]);
    }

    #[test]
    fn lengths_use_the_long_form_past_127() {
        let long = tlv(OCTET_STRING, &[7; 300]);
        assert_eq!(&long[..4], &[4, 0x82, 0x01, 0x2c]);
        let t = parse_one(&long).unwrap();
        assert_eq!(t.content.len(), 300);
        assert!(
            parse_one(&[4, 0x81, 0x05, 1, 2, 3, 4, 5]).is_err(),
            "non-minimal"
        );
        assert!(parse_one(&[4, 3, 1]).is_err(), "truncated");
        assert!(parse_one(&[4, 1, 1, 0]).is_err(), "trailing");
    }

    #[test]
    fn oids_print_dotted() {
        assert_eq!(oid_text(oids::RSA), "1.2.840.113549.1.1.1");
        assert_eq!(oid_text(oids::ED25519), "1.3.101.112");
        assert_eq!(oid_text(oids::COMMON_NAME), "2.5.4.3");
    }
}
