//! sprig's private keys and X.509 certificates (`genPrivateKey`, `genCA`, `genSignedCert`...):
//! what sprig's `crypto.go` does with Go's `crypto/x509`, `crypto/rsa`, `crypto/ecdsa`,
//! `crypto/ed25519` and `crypto/dsa`, with Go's key encodings, certificate layout and messages.
//!
//! Keys: RSA (PKCS#1 `RSA PRIVATE KEY`), ECDSA on P-256 (SEC 1 `EC PRIVATE KEY`), Ed25519
//! (PKCS#8 `PRIVATE KEY`) and DSA (sprig's own `DSA PRIVATE KEY`), each re-encoded as Go's
//! `pemBlockForKey` does. Certificates are written as `x509.CreateCertificate` writes sprig's
//! templates (Go 1.25, the Go Landscaper builds with; the layout is Go 1.19's too): version 3, a
//! random 128-bit serial, the subject `CN=cn` (PrintableString, or UTF8String), UTCTime validity
//! (GeneralizedTime from 2050 on; `days` wraps as Go's `time.Duration` does), then the
//! extensions key usage (critical), extended key usage (server and client auth), basic
//! constraints (critical), the subject key identifier (CAs only: the first 160 bits of the
//! SHA-256 of the public key, Go 1.25's `x509sha256skid=1`; Go 1.19 used SHA-1), the authority
//! key identifier (the issuer's subject key identifier, when issuer and subject differ) and the
//! subject alternative names (DNS names, then IPs; critical when the subject is empty).
//! Signatures: SHA-256 with RSA (PKCS#1 v1.5; RSA keys under 1024 bits are refused, as Go 1.24
//! and later refuse them), ECDSA with SHA-256, or Ed25519. The checks and messages follow Go's
//! (a CA key that is not its certificate's, DSA keys, non-ASCII DNS names...).
//!
//! Key generation uses the RustCrypto crates (`rsa`, `p256`, `ed25519-dalek`, `dsa`); RSA 4096
//! (`genPrivateKey "rsa"`) takes seconds, several times Go's time.
//!
//! Go's ECDSA keys on P-224, P-384 and P-521 are not supported (P-256 is what `genPrivateKey`
//! makes); reading one fails with a message saying so.

use std::fmt;

use p256::elliptic_curve::sec1::ToEncodedPoint as _;
use rsa::pkcs1::{DecodeRsaPrivateKey as _, EncodeRsaPrivateKey as _};
use rsa::rand_core::OsRng;
use rsa::traits::PublicKeyParts as _;
use sha2::Digest as _;

use super::der::{self, oids};
use super::pem;

/// A private key of a type Go's `parsePrivateKeyPEM` returns.
pub enum PrivateKey {
    Rsa(Box<rsa::RsaPrivateKey>),
    Ecdsa(p256::SecretKey),
    Ed25519(ed25519_dalek::SigningKey),
    /// sprig's `DSAKeyFormat` fields, big-endian: Go can read such a key but not sign or
    /// certify with it, so neither do we.
    Dsa(DsaKey),
}

/// sprig's `DSAKeyFormat`: `P, Q, G, Y, X` (the version is always written as 0).
pub struct DsaKey {
    pub p: Vec<u8>,
    pub q: Vec<u8>,
    pub g: Vec<u8>,
    pub y: Vec<u8>,
    pub x: Vec<u8>,
}

impl fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PrivateKey::Rsa(_) => "PrivateKey::Rsa",
            PrivateKey::Ecdsa(_) => "PrivateKey::Ecdsa",
            PrivateKey::Ed25519(_) => "PrivateKey::Ed25519",
            PrivateKey::Dsa(_) => "PrivateKey::Dsa",
        })
    }
}

// --- key generation ----------------------------------------------------------------------

/// Go's `rsa.GenerateKey(rand.Reader, bits)`.
pub fn generate_rsa(bits: usize) -> Result<PrivateKey, String> {
    rsa::RsaPrivateKey::new(&mut OsRng, bits)
        .map(|k| PrivateKey::Rsa(Box::new(k)))
        .map_err(|e| e.to_string())
}

fn generate_ecdsa() -> PrivateKey {
    PrivateKey::Ecdsa(p256::SecretKey::random(&mut OsRng))
}

fn generate_ed25519() -> PrivateKey {
    let seed: [u8; 32] = super::super::random::bytes(32)
        .try_into()
        .unwrap_or([0; 32]);
    PrivateKey::Ed25519(ed25519_dalek::SigningKey::from_bytes(&seed))
}

/// `dsa.GenerateParameters(L2048N256)` and `dsa.GenerateKey`.
fn generate_dsa() -> PrivateKey {
    let components = dsa::Components::generate(&mut OsRng, dsa::KeySize::DSA_2048_256);
    let key = dsa::SigningKey::generate(&mut OsRng, components);
    let public = key.verifying_key();
    let c = public.components();
    PrivateKey::Dsa(DsaKey {
        p: c.p().to_bytes_be(),
        q: c.q().to_bytes_be(),
        g: c.g().to_bytes_be(),
        y: public.y().to_bytes_be(),
        x: key.x().to_bytes_be(),
    })
}

/// sprig's `genPrivateKey`: the PEM of a new key, or (as sprig does) an error message as the
/// result.
pub fn generate_private_key(kind: &str) -> String {
    let key = match kind {
        "" | "rsa" => match generate_rsa(4096) {
            Ok(k) => k,
            Err(e) => return format!("failed to generate private key: {e}"),
        },
        "dsa" => generate_dsa(),
        "ecdsa" => generate_ecdsa(),
        "ed25519" => generate_ed25519(),
        _ => return format!("Unknown type {kind}"),
    };
    pem_for_key(&key)
}

// --- key encoding ------------------------------------------------------------------------

/// Go's `pemBlockForKey`, as PEM text.
pub fn pem_for_key(key: &PrivateKey) -> String {
    let (kind, der) = key_block(key);
    pem::encode(kind, &der)
}

fn key_block(key: &PrivateKey) -> (&'static str, Vec<u8>) {
    match key {
        // x509.MarshalPKCS1PrivateKey (the rsa crate writes the same fields: version, n, e, d,
        // p, q, dp, dq, qinv and further primes).
        PrivateKey::Rsa(k) => (
            "RSA PRIVATE KEY",
            k.to_pkcs1_der()
                .map(|d| d.as_bytes().to_vec())
                .unwrap_or_default(),
        ),
        // x509.MarshalECPrivateKey: version 1, the scalar, the curve and the public point.
        PrivateKey::Ecdsa(k) => ("EC PRIVATE KEY", sec1_der(k)),
        // x509.MarshalPKCS8PrivateKey: version 0, the algorithm, the seed as an OCTET STRING.
        PrivateKey::Ed25519(k) => (
            "PRIVATE KEY",
            der::seq(&[
                &der::small_int(0),
                &der::seq(&[&der::oid(oids::ED25519)]),
                &der::octet_string(&der::octet_string(&k.to_bytes())),
            ]),
        ),
        // asn1.Marshal(DSAKeyFormat{...}).
        PrivateKey::Dsa(k) => (
            "DSA PRIVATE KEY",
            der::seq(&[
                &der::small_int(0),
                &der::uint(&k.p),
                &der::uint(&k.q),
                &der::uint(&k.g),
                &der::uint(&k.y),
                &der::uint(&k.x),
            ]),
        ),
    }
}

fn sec1_der(k: &p256::SecretKey) -> Vec<u8> {
    let point = k.public_key().to_encoded_point(false);
    der::seq(&[
        &der::small_int(1),
        &der::octet_string(&k.to_bytes()),
        &der::tlv(der::explicit(0), &der::oid(oids::P256)),
        &der::tlv(der::explicit(1), &der::bit_string(point.as_bytes())),
    ])
}

// --- key parsing -------------------------------------------------------------------------

/// sprig's `parsePrivateKeyPEM`.
pub fn parse_private_key_pem(text: &[u8]) -> Result<PrivateKey, String> {
    let block = pem::decode(text).ok_or("no PEM data in input")?;
    if block.kind == "PRIVATE KEY" {
        return parse_pkcs8(&block.bytes).map_err(|e| format!("decoding PEM as PKCS#8: {e}"));
    }
    let Some(prefix) = block.kind.strip_suffix(" PRIVATE KEY") else {
        return Err(format!(
            "no private key data in PEM block of type {}",
            block.kind
        ));
    };
    match prefix {
        "RSA" => {
            parse_pkcs1(&block.bytes).map_err(|e| format!("parsing RSA private key from PEM: {e}"))
        }
        "EC" => parse_sec1(None, &block.bytes)
            .map_err(|e| format!("parsing EC private key from PEM: {e}")),
        "DSA" => {
            parse_dsa(&block.bytes).map_err(|e| format!("parsing DSA private key from PEM: {e}"))
        }
        _ => Err(format!("invalid private key type {}", block.kind)),
    }
}

const USE_EC: &str =
    "x509: failed to parse private key (use ParseECPrivateKey instead for this key format)";
const USE_PKCS1: &str =
    "x509: failed to parse private key (use ParsePKCS1PrivateKey instead for this key format)";
const USE_PKCS8: &str =
    "x509: failed to parse private key (use ParsePKCS8PrivateKey instead for this key format)";

/// Whether an INTEGER's contents are zero or negative.
fn not_positive(content: &[u8]) -> bool {
    content.first().is_none_or(|b| b & 0x80 != 0) || content.iter().all(|b| *b == 0)
}

/// `asn1.Unmarshal` into Go's `pkcs1PrivateKey`: the version, then N, E, D, P and Q.
fn pkcs1_shape(bytes: &[u8]) -> Result<(i64, [&[u8]; 5]), String> {
    let t = der::Reader::new(bytes).read()?;
    t.expect(der::SEQUENCE)?;
    let mut r = t.reader();
    let version = r.read()?.small()?;
    let mut ints: [&[u8]; 5] = [&[]; 5];
    for (i, slot) in ints.iter_mut().enumerate() {
        let v = r.read()?;
        if i == 1 {
            v.small()?;
        }
        v.expect(der::INTEGER)?;
        *slot = v.content;
    }
    Ok((version, ints))
}

/// `asn1.Unmarshal` into Go's `ecPrivateKey`: the version, scalar and (optional) curve OID.
type Sec1<'a> = (i64, &'a [u8], Option<&'a [u8]>);

fn sec1_shape(bytes: &[u8]) -> Result<Sec1<'_>, String> {
    let t = der::Reader::new(bytes).read()?;
    t.expect(der::SEQUENCE)?;
    let mut r = t.reader();
    let version = r.read()?.small()?;
    let scalar = r.read_tag(der::OCTET_STRING)?.content;
    let curve = match r.optional(der::explicit(0))? {
        Some(p) => {
            let oid = der::parse_one(p.content)?;
            oid.expect(der::OID)?;
            Some(oid.content)
        }
        None => None,
    };
    if let Some(pk) = r.optional(der::explicit(1))? {
        der::parse_one(pk.content)?.expect(der::BIT_STRING)?;
    }
    Ok((version, scalar, curve))
}

/// `asn1.Unmarshal` into Go's `pkcs8`: the algorithm OID, its parameters and the key bytes.
type Pkcs8<'a> = (&'a [u8], Option<der::Tlv<'a>>, &'a [u8]);

fn pkcs8_shape(bytes: &[u8]) -> Result<Pkcs8<'_>, String> {
    let t = der::Reader::new(bytes).read()?;
    t.expect(der::SEQUENCE)?;
    let mut r = t.reader();
    r.read()?.small()?;
    let algo = r.read_tag(der::SEQUENCE)?;
    let mut a = algo.reader();
    let oid = a.read_tag(der::OID)?;
    let params = if a.is_empty() { None } else { Some(a.read()?) };
    let key = r.read_tag(der::OCTET_STRING)?;
    Ok((oid.content, params, key.content))
}

/// Go's `x509.ParsePKCS1PrivateKey`.
fn parse_pkcs1(bytes: &[u8]) -> Result<PrivateKey, String> {
    let mut r = der::Reader::new(bytes);
    let shape = r.read().and_then(|_| {
        if r.is_empty() {
            pkcs1_shape(bytes)
        } else {
            Err(der::syntax("trailing data"))
        }
    });
    let (version, [n, _, d, p, q]) = match shape {
        Ok(s) => s,
        Err(e) if e.ends_with("trailing data") => return Err(e),
        Err(e) => {
            if sec1_shape(bytes).is_ok() {
                return Err(USE_EC.into());
            }
            if pkcs8_shape(bytes).is_ok() {
                return Err(USE_PKCS8.into());
            }
            return Err(e);
        }
    };
    if version > 1 {
        return Err("x509: unsupported private key version".into());
    }
    if [n, d, p, q].iter().any(|c| not_positive(c)) {
        return Err("x509: private key contains zero or negative value".into());
    }
    rsa::RsaPrivateKey::from_pkcs1_der(bytes)
        .map(|k| PrivateKey::Rsa(Box::new(k)))
        .map_err(|e| format!("crypto/rsa: invalid private key: {e}"))
}

/// Go's `x509.ParsePKCS8PrivateKey` (RSA, ECDSA and Ed25519 keys).
fn parse_pkcs8(bytes: &[u8]) -> Result<PrivateKey, String> {
    let (oid, params, key) = match pkcs8_shape(bytes) {
        Ok(s) => s,
        Err(e) => {
            if sec1_shape(bytes).is_ok() {
                return Err(USE_EC.into());
            }
            if pkcs1_shape(bytes).is_ok() {
                return Err(USE_PKCS1.into());
            }
            return Err(e);
        }
    };
    match oid {
        oids::RSA => parse_pkcs1(key)
            .map_err(|e| format!("x509: failed to parse RSA private key embedded in PKCS#8: {e}")),
        oids::EC_PUBLIC_KEY => {
            let curve = params
                .and_then(|p| der::parse_one(p.full).ok())
                .filter(|p| p.tag == der::OID)
                .map(|p| p.content);
            parse_sec1(curve, key).map_err(|e| {
                format!("x509: failed to parse EC private key embedded in PKCS#8: {e}")
            })
        }
        oids::ED25519 => {
            if params.is_some() {
                return Err("x509: invalid Ed25519 private key parameters".into());
            }
            let seed = der::parse_one(key)
                .and_then(|t| t.expect(der::OCTET_STRING).map(|()| t.content))
                .map_err(|e| format!("x509: invalid Ed25519 private key: {e}"))?;
            let seed: [u8; 32] = seed
                .try_into()
                .map_err(|_| format!("x509: invalid Ed25519 private key length: {}", seed.len()))?;
            Ok(PrivateKey::Ed25519(ed25519_dalek::SigningKey::from_bytes(
                &seed,
            )))
        }
        other => Err(format!(
            "x509: PKCS#8 wrapping contained private key with unknown algorithm: {}",
            der::oid_text(other)
        )),
    }
}

/// Go's `parseECPrivateKey`: `named_curve` is the curve of an enclosing PKCS#8 structure.
fn parse_sec1(named_curve: Option<&[u8]>, bytes: &[u8]) -> Result<PrivateKey, String> {
    let (version, scalar, curve) = sec1_shape(bytes).map_err(|e| {
        if pkcs8_shape(bytes).is_ok() {
            USE_PKCS8.to_string()
        } else if pkcs1_shape(bytes).is_ok() {
            USE_PKCS1.to_string()
        } else {
            format!("x509: failed to parse EC private key: {e}")
        }
    })?;
    if version != 1 {
        return Err(format!("x509: unknown EC private key version {version}"));
    }
    let curve = named_curve.or(curve).unwrap_or_default();
    match curve {
        oids::P256 => {}
        oids::P224 | oids::P384 | oids::P521 => {
            let name = match curve {
                oids::P224 => "P-224",
                oids::P384 => "P-384",
                _ => "P-521",
            };
            return Err(format!(
                "the elliptic curve {name} is not supported in the appliance (P-256 is)"
            ));
        }
        _ => return Err("x509: unknown elliptic curve".into()),
    }
    // Go reads the scalar as a number below the curve order (leading zeros do not count).
    let skip = scalar.iter().take_while(|b| **b == 0).count();
    let s = &scalar[skip..];
    if s.len() > 32 {
        return Err("x509: invalid elliptic curve private key value".into());
    }
    let mut padded = [0u8; 32];
    padded[32 - s.len()..].copy_from_slice(s);
    p256::SecretKey::from_bytes(&padded.into())
        .map(PrivateKey::Ecdsa)
        .map_err(|_| "x509: invalid elliptic curve private key value".to_string())
}

/// `asn1.Unmarshal` into sprig's `DSAKeyFormat`.
fn parse_dsa(bytes: &[u8]) -> Result<PrivateKey, String> {
    let t = der::parse_one(bytes)?;
    t.expect(der::SEQUENCE)?;
    let mut r = t.reader();
    r.read()?.small()?;
    let mut next = || -> Result<Vec<u8>, String> { Ok(r.read()?.unsigned()?.to_vec()) };
    Ok(PrivateKey::Dsa(DsaKey {
        p: next()?,
        q: next()?,
        g: next()?,
        y: next()?,
        x: next()?,
    }))
}

// --- public keys and signatures ------------------------------------------------------------

/// Go's `marshalPublicKey`: the subjectPublicKey bytes and the encoded AlgorithmIdentifier.
fn marshal_public_key(key: &PrivateKey) -> Result<(Vec<u8>, Vec<u8>), String> {
    match key {
        PrivateKey::Rsa(k) => Ok((
            der::seq(&[
                &der::uint(&k.n().to_bytes_be()),
                &der::uint(&k.e().to_bytes_be()),
            ]),
            der::seq(&[&der::oid(oids::RSA), &der::null()]),
        )),
        PrivateKey::Ecdsa(k) => Ok((
            k.public_key().to_encoded_point(false).as_bytes().to_vec(),
            der::seq(&[&der::oid(oids::EC_PUBLIC_KEY), &der::oid(oids::P256)]),
        )),
        PrivateKey::Ed25519(k) => Ok((
            k.verifying_key().to_bytes().to_vec(),
            der::seq(&[&der::oid(oids::ED25519)]),
        )),
        PrivateKey::Dsa(_) => Err("x509: unsupported public key type: *dsa.PublicKey".into()),
    }
}

/// The public key algorithm OID of a key (what Go's key `Equal` compares first).
fn public_key_oid(key: &PrivateKey) -> &'static [u8] {
    match key {
        PrivateKey::Rsa(_) => oids::RSA,
        PrivateKey::Ecdsa(_) => oids::EC_PUBLIC_KEY,
        PrivateKey::Ed25519(_) => oids::ED25519,
        PrivateKey::Dsa(_) => oids::DSA,
    }
}

/// Go's `signingParamsForPublicKey`: the encoded signature AlgorithmIdentifier.
fn signature_algorithm(key: &PrivateKey) -> Result<Vec<u8>, String> {
    match key {
        PrivateKey::Rsa(_) => Ok(der::seq(&[&der::oid(oids::SHA256_WITH_RSA), &der::null()])),
        PrivateKey::Ecdsa(_) => Ok(der::seq(&[&der::oid(oids::ECDSA_WITH_SHA256)])),
        PrivateKey::Ed25519(_) => Ok(der::seq(&[&der::oid(oids::ED25519)])),
        // *dsa.PrivateKey is no crypto.Signer.
        PrivateKey::Dsa(_) => {
            Err("x509: certificate private key does not implement crypto.Signer".into())
        }
    }
}

fn sign(key: &PrivateKey, message: &[u8]) -> Result<Vec<u8>, String> {
    match key {
        PrivateKey::Rsa(k) => {
            check_signing_key(key)?;
            let digest = <rsa::sha2::Sha256 as rsa::sha2::Digest>::digest(message);
            k.sign(rsa::Pkcs1v15Sign::new::<rsa::sha2::Sha256>(), &digest)
                .map_err(|e| e.to_string())
        }
        PrivateKey::Ecdsa(k) => {
            use p256::ecdsa::signature::Signer as _;
            let signer = p256::ecdsa::SigningKey::from(k);
            let sig: p256::ecdsa::Signature = signer.sign(message);
            Ok(sig.to_der().as_bytes().to_vec())
        }
        PrivateKey::Ed25519(k) => {
            use ed25519_dalek::Signer as _;
            Ok(k.sign(message).to_bytes().to_vec())
        }
        PrivateKey::Dsa(_) => {
            Err("x509: certificate private key does not implement crypto.Signer".into())
        }
    }
}

// --- certificates ----------------------------------------------------------------------------

/// sprig's `certificate`: PEM text of the certificate and of its key (Go strings: bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Certificate {
    pub cert: Vec<u8>,
    pub key: Vec<u8>,
}

/// The fields of a parsed certificate that `CreateCertificate` uses of a parent.
struct Parent {
    raw_subject: Vec<u8>,
    subject_key_id: Vec<u8>,
    /// The public key algorithm OID and subjectPublicKey bytes.
    public_key: (Vec<u8>, Vec<u8>),
}

/// Go's `x509.ParseCertificate`: the structure is read as Go reads it (with Go's messages),
/// then the whole certificate must decode as X.509 (checked by `x509-cert`). Returns what
/// `CreateCertificate` uses of a parent: its raw subject, subject key identifier and key.
fn parse_certificate(der_bytes: &[u8]) -> Result<Parent, String> {
    fn need<T>(r: Result<T, String>, msg: &str) -> Result<T, String> {
        r.map_err(|_| format!("x509: {msg}"))
    }
    let mut input = der::Reader::new(der_bytes);
    let cert = need(input.read_tag(der::SEQUENCE), "malformed certificate")?;
    let mut c = cert.reader();
    let tbs = need(c.read_tag(der::SEQUENCE), "malformed tbs certificate")?;
    let mut t = tbs.reader();
    let version = match need(t.optional(der::explicit(0)), "malformed version")? {
        Some(v) => need(
            der::parse_one(v.content).and_then(|i| i.small()),
            "malformed version",
        )?,
        None => 0,
    };
    if version < 0 {
        return Err("x509: malformed version".into());
    }
    if version > 2 {
        return Err("x509: invalid version".into());
    }
    need(t.read_tag(der::INTEGER), "malformed serial number")?;
    let sig_alg = need(
        t.read_tag(der::SEQUENCE),
        "malformed signature algorithm identifier",
    )?;
    let outer_alg = need(c.read_tag(der::SEQUENCE), "malformed algorithm identifier")?;
    if sig_alg.content != outer_alg.content {
        return Err("x509: inner and outer signature algorithm identifiers don't match".into());
    }
    need(t.read_tag(der::SEQUENCE), "malformed issuer")?;
    need(t.read_tag(der::SEQUENCE), "malformed validity")?;
    let subject = need(t.read_tag(der::SEQUENCE), "malformed issuer")?;
    let spki = need(t.read_tag(der::SEQUENCE), "malformed spki")?;
    let mut s = spki.reader();
    let alg = need(
        s.read_tag(der::SEQUENCE),
        "malformed public key algorithm identifier",
    )?;
    let alg = need(alg.reader().read_tag(der::OID), "malformed OID")?;
    let bits = need(s.read_tag(der::BIT_STRING), "malformed subjectPublicKey")?;
    let public_key = (
        alg.content.to_vec(),
        bits.content.get(1..).unwrap_or_default().to_vec(),
    );
    let mut subject_key_id = Vec::new();
    if version > 0 {
        need(t.optional(der::implicit(1)), "malformed issuerUniqueID")?;
        need(t.optional(der::implicit(2)), "malformed subjectUniqueID")?;
        if version == 2
            && let Some(exts) = need(t.optional(der::explicit(3)), "malformed extensions")?
        {
            let exts = need(der::parse_one(exts.content), "malformed extensions")?;
            need(exts.expect(der::SEQUENCE), "malformed extensions")?;
            let mut exts = exts.reader();
            while !exts.is_empty() {
                let ext = need(exts.read_tag(der::SEQUENCE), "malformed extension")?;
                let mut e = ext.reader();
                let id = need(e.read_tag(der::OID), "malformed extension OID field")?;
                need(
                    e.optional(der::BOOLEAN),
                    "malformed extension critical field",
                )?;
                let value = need(
                    e.read_tag(der::OCTET_STRING),
                    "malformed extension value field",
                )?;
                if id.content == oids::SUBJECT_KEY_ID {
                    let v = need(
                        der::parse_one(value.content),
                        "invalid subject key identifier",
                    )?;
                    need(
                        v.expect(der::OCTET_STRING),
                        "invalid subject key identifier",
                    )?;
                    subject_key_id = v.content.to_vec();
                }
            }
        }
    }
    need(c.read_tag(der::BIT_STRING), "malformed signature")?;
    if !input.is_empty() {
        return Err("x509: trailing data".into());
    }
    {
        use x509_cert::der::Decode as _;
        x509_cert::Certificate::from_der(der_bytes)
            .map_err(|e| format!("x509: malformed certificate: {e}"))?;
    }
    Ok(Parent {
        raw_subject: subject.full.to_vec(),
        subject_key_id,
        public_key,
    })
}

/// The fields sprig's `getBaseCertTemplate` (and `IsCA` for CAs) set.
pub struct Template {
    pub common_name: Vec<u8>,
    /// Addresses as Go's `net.ParseIP` returns them, each either 4 or 16 bytes.
    pub ips: Vec<Vec<u8>>,
    pub dns_names: Vec<String>,
    pub days_valid: i64,
    pub is_ca: bool,
}

impl Template {
    /// The template of a certificate authority (`genCA`).
    pub fn authority(common_name: Vec<u8>, days_valid: i64) -> Template {
        Template {
            common_name,
            ips: Vec::new(),
            dns_names: Vec::new(),
            days_valid,
            is_ca: true,
        }
    }
}

/// Go's `asn1.Marshal(pkix.Name{CommonName: cn}.ToRDNSequence())`: a PrintableString when
/// every character is allowed in one (no `*` or `&`), else a UTF8String.
fn subject_der(cn: &[u8]) -> Result<Vec<u8>, String> {
    if cn.is_empty() {
        return Ok(der::seq(&[]));
    }
    let printable = cn.iter().all(|&b| {
        b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'\'' | b'(' | b')' | b'+' | b',' | b'-' | b'.' | b'/' | b' ' | b':' | b'=' | b'?'
            )
    });
    let value = if printable {
        der::tlv(der::PRINTABLE_STRING, cn)
    } else if std::str::from_utf8(cn).is_ok() {
        der::tlv(der::UTF8_STRING, cn)
    } else {
        return Err("asn1: string not valid UTF-8".into());
    };
    let atv = der::seq(&[&der::oid(oids::COMMON_NAME), &value]);
    Ok(der::seq(&[&der::tlv(der::SET, &atv)]))
}

/// Go's `asn1` time: UTCTime from 1950 to 2049, else GeneralizedTime; UTC, whole seconds.
fn time_der(ts: jiff::Timestamp) -> Vec<u8> {
    let t = ts.to_zoned(jiff::tz::TimeZone::UTC);
    let year = i32::from(t.year());
    let rest = format!(
        "{:02}{:02}{:02}{:02}{:02}Z",
        t.month(),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    if (1950..2050).contains(&year) {
        der::tlv(der::UTC_TIME, format!("{:02}{rest}", year % 100).as_bytes())
    } else {
        der::tlv(der::GENERALIZED_TIME, format!("{year:04}{rest}").as_bytes())
    }
}

fn extension(id: &[u8], critical: bool, value: &[u8]) -> Vec<u8> {
    let mut parts: Vec<Vec<u8>> = vec![der::oid(id)];
    if critical {
        parts.push(vec![der::BOOLEAN, 1, 0xff]);
    }
    parts.push(der::octet_string(value));
    der::tlv(der::SEQUENCE, &parts.concat())
}

/// Go's `marshalKeyUsage`: the usage bits (bit 0 = digitalSignature) as a minimal BIT STRING.
fn key_usage_der(usage: u16) -> Vec<u8> {
    let a = [
        (usage as u8).reverse_bits(),
        ((usage >> 8) as u8).reverse_bits(),
    ];
    let bytes: &[u8] = if a[1] != 0 { &a } else { &a[..1] };
    let last = bytes[bytes.len() - 1];
    let unused = if last == 0 {
        0
    } else {
        last.trailing_zeros() as u8
    };
    let mut content = vec![unused];
    content.extend_from_slice(bytes);
    der::tlv(der::BIT_STRING, &content)
}

const KEY_USAGE_DIGITAL_SIGNATURE: u16 = 1 << 0;
const KEY_USAGE_KEY_ENCIPHERMENT: u16 = 1 << 2;
const KEY_USAGE_CERT_SIGN: u16 = 1 << 5;

/// Nanoseconds per day, as Go's `time.Hour * 24`.
const DAY_NANOS: i64 = 24 * 3_600_000_000_000;

/// sprig's `getCertAndKey` around Go's `x509.CreateCertificate`: signs `template` for
/// `signee`'s public key with `signer`, under `parent` (none: self-signed).
fn create(
    template: &Template,
    signee: &PrivateKey,
    parent: Option<&Parent>,
    signer: &PrivateKey,
) -> Result<Certificate, String> {
    let cert = create_certificate(template, signee, parent, signer)
        .map_err(|e| format!("error creating certificate: {e}"))?;
    Ok(Certificate {
        cert: pem::encode("CERTIFICATE", &cert).into_bytes(),
        key: pem_for_key(signee).into_bytes(),
    })
}

/// The errors [`create`] would report for `template` signed by `signer` (none: self-signed)
/// that do not depend on the new key, in Go's order: what `genCA`, `genSelfSignedCert` and
/// `genSignedCert` check at the call before they leave making the RSA key and the certificate
/// to the first reader of the result (a fresh RSA-2048 key adds no error of its own).
pub fn check_new_key_certificate(
    template: &Template,
    signer: Option<&Signer>,
) -> Result<(), String> {
    let check = || -> Result<(), String> {
        if let Some(s) = signer {
            signature_algorithm(&s.key)?;
        }
        subject_der(&template.common_name)?;
        if let Some(s) = signer {
            check_parent_key(&s.parent, &s.key)?;
        }
        check_names(template)?;
        validity_end(template, jiff::Timestamp::now())?;
        if let Some(s) = signer {
            check_signing_key(&s.key)?;
        }
        Ok(())
    };
    check().map_err(|e| format!("error creating certificate: {e}"))
}

/// `x509.CreateCertificate`: the parent's public key must be the signer's.
fn check_parent_key(p: &Parent, signer: &PrivateKey) -> Result<(), String> {
    let (signer_bytes, _) = marshal_public_key(signer)?;
    let known = [oids::RSA, oids::EC_PUBLIC_KEY, oids::ED25519, oids::DSA];
    if known.contains(&p.public_key.0.as_slice())
        && (p.public_key.0 != public_key_oid(signer) || p.public_key.1 != signer_bytes)
    {
        return Err("x509: provided PrivateKey doesn't match parent's PublicKey".into());
    }
    Ok(())
}

/// DNS names must be IA5Strings.
fn check_names(template: &Template) -> Result<(), String> {
    for name in &template.dns_names {
        if !name.is_ascii() {
            return Err(format!(
                "x509: {} cannot be encoded as an IA5String",
                super::super::super::print::quote(name)
            ));
        }
    }
    Ok(())
}

/// The end of the validity period starting at `not_before`.
fn validity_end(
    template: &Template,
    not_before: jiff::Timestamp,
) -> Result<jiff::Timestamp, String> {
    // Go's Duration arithmetic wraps on overflow (about 106,751 days).
    let validity = jiff::SignedDuration::from_nanos(DAY_NANOS.wrapping_mul(template.days_valid));
    not_before
        .checked_add(validity)
        .map_err(|e| format!("invalid validity: {e}"))
}

/// The errors of [`sign`] that the key alone decides.
fn check_signing_key(key: &PrivateKey) -> Result<(), String> {
    match key {
        PrivateKey::Rsa(k) => {
            // Go 1.24 and later refuse to sign with keys under 1024 bits (rsa1024min=1).
            let bits = k.n().bits();
            if bits < 1024 {
                return Err(format!(
                    "crypto/rsa: {bits}-bit keys are insecure (see https://go.dev/pkg/crypto/rsa#hdr-Minimum_key_size)"
                ));
            }
            Ok(())
        }
        PrivateKey::Ecdsa(_) | PrivateKey::Ed25519(_) => Ok(()),
        PrivateKey::Dsa(_) => {
            Err("x509: certificate private key does not implement crypto.Signer".into())
        }
    }
}

fn create_certificate(
    template: &Template,
    signee: &PrivateKey,
    parent: Option<&Parent>,
    signer: &PrivateKey,
) -> Result<Vec<u8>, String> {
    // The order of Go's checks decides which error a bad call reports.
    let sig_alg = signature_algorithm(signer)?;
    let (public_key_bytes, public_key_alg) = marshal_public_key(signee)?;
    let subject = subject_der(&template.common_name)?;
    let issuer = match parent {
        Some(p) => p.raw_subject.clone(),
        None => subject.clone(),
    };
    let authority_key_id: &[u8] = match parent {
        Some(p) if issuer != subject => &p.subject_key_id,
        _ => &[],
    };
    // Go 1.25 (x509sha256skid=1): the first 160 bits of the SHA-256 of the public key (Go
    // 1.19 took its SHA-1).
    let subject_key_id: Vec<u8> = if template.is_ca {
        sha2::Sha256::digest(&public_key_bytes)[..20].to_vec()
    } else {
        Vec::new()
    };
    if let Some(p) = parent {
        check_parent_key(p, signer)?;
    }

    let mut extensions: Vec<Vec<u8>> = Vec::new();
    let mut usage = KEY_USAGE_KEY_ENCIPHERMENT | KEY_USAGE_DIGITAL_SIGNATURE;
    if template.is_ca {
        usage |= KEY_USAGE_CERT_SIGN;
    }
    extensions.push(extension(oids::KEY_USAGE, true, &key_usage_der(usage)));
    extensions.push(extension(
        oids::EXT_KEY_USAGE,
        false,
        &der::seq(&[&der::oid(oids::SERVER_AUTH), &der::oid(oids::CLIENT_AUTH)]),
    ));
    let basic = if template.is_ca {
        der::seq(&[&[der::BOOLEAN, 1, 0xff]])
    } else {
        der::seq(&[])
    };
    extensions.push(extension(oids::BASIC_CONSTRAINTS, true, &basic));
    if !subject_key_id.is_empty() {
        extensions.push(extension(
            oids::SUBJECT_KEY_ID,
            false,
            &der::octet_string(&subject_key_id),
        ));
    }
    if !authority_key_id.is_empty() {
        extensions.push(extension(
            oids::AUTHORITY_KEY_ID,
            false,
            &der::seq(&[&der::tlv(der::implicit(0), authority_key_id)]),
        ));
    }
    if !template.dns_names.is_empty() || !template.ips.is_empty() {
        check_names(template)?;
        let mut names: Vec<Vec<u8>> = Vec::new();
        for name in &template.dns_names {
            names.push(der::tlv(der::implicit(2), name.as_bytes()));
        }
        for ip in &template.ips {
            names.push(der::tlv(der::implicit(7), ip));
        }
        let subject_is_empty = template.common_name.is_empty();
        extensions.push(extension(
            oids::SUBJECT_ALT_NAME,
            subject_is_empty,
            &der::tlv(der::SEQUENCE, &names.concat()),
        ));
    }

    let serial: Vec<u8> = super::super::random::bytes(16);
    let not_before = jiff::Timestamp::now();
    let not_after = validity_end(template, not_before)?;

    let mut tbs_parts: Vec<Vec<u8>> = vec![
        der::tlv(der::explicit(0), &der::small_int(2)),
        der::uint(&serial),
        sig_alg.clone(),
        issuer,
        der::seq(&[&time_der(not_before), &time_der(not_after)]),
        subject,
        der::seq(&[&public_key_alg, &der::bit_string(&public_key_bytes)]),
    ];
    if !extensions.is_empty() {
        tbs_parts.push(der::tlv(
            der::explicit(3),
            &der::tlv(der::SEQUENCE, &extensions.concat()),
        ));
    }
    let tbs = der::tlv(der::SEQUENCE, &tbs_parts.concat());
    let signature = sign(signer, &tbs)?;
    Ok(der::seq(&[&tbs, &sig_alg, &der::bit_string(&signature)]))
}

/// Go's `net.ParseIP`: IPv4 as its 16-byte IPv4-mapped form, IPv6 as 16 bytes; `None` for
/// anything else. The certificate holds IPv4 (also IPv4-mapped IPv6) addresses in 4 bytes.
pub fn parse_ip(text: &str) -> Option<Vec<u8>> {
    match text.parse::<std::net::IpAddr>().ok()? {
        std::net::IpAddr::V4(v4) => Some(v4.octets().to_vec()),
        std::net::IpAddr::V6(v6) => Some(match v6.to_ipv4_mapped() {
            Some(v4) => v4.octets().to_vec(),
            None => v6.octets().to_vec(),
        }),
    }
}

/// sprig's `buildCustomCertificate`.
pub fn build_custom_certificate(b64_cert: &[u8], b64_key: &[u8]) -> Result<Certificate, String> {
    let cert = super::super::encoding::b64_decode(b64_cert)
        .map_err(|_| "unable to decode base64 certificate")?;
    let key = super::super::encoding::b64_decode(b64_key)
        .map_err(|_| "unable to decode base64 private key")?;
    let block = pem::decode(&cert).ok_or("unable to decode certificate")?;
    parse_certificate(&block.bytes)
        .map_err(|e| format!("error parsing certificate: decodedCert.Bytes: {e}"))?;
    parse_private_key_pem(&key).map_err(|e| format!("error parsing private key: {e}"))?;
    Ok(Certificate { cert, key })
}

/// sprig's `generateCertificateAuthorityWithKeyInternal`.
pub fn certificate_authority(
    common_name: Vec<u8>,
    days_valid: i64,
    key: &PrivateKey,
) -> Result<Certificate, String> {
    create(
        &Template::authority(common_name, days_valid),
        key,
        None,
        key,
    )
}

/// sprig's `generateSelfSignedCertificateWithKeyInternal`.
pub fn self_signed_certificate(
    template: &Template,
    key: &PrivateKey,
) -> Result<Certificate, String> {
    create(template, key, None, key)
}

/// The signing half of sprig's `generateSignedCertificateWithKeyInternal`: the CA certificate
/// and key, parsed (checked before the template's names and addresses, as sprig does).
pub struct Signer {
    parent: Parent,
    key: PrivateKey,
}

pub fn parse_signer(ca: &Certificate) -> Result<Signer, String> {
    let block = pem::decode(&ca.cert).ok_or("unable to decode certificate")?;
    let parent = parse_certificate(&block.bytes)
        .map_err(|e| format!("error parsing certificate: decodedSignerCert.Bytes: {e}"))?;
    let key =
        parse_private_key_pem(&ca.key).map_err(|e| format!("error parsing private key: {e}"))?;
    Ok(Signer { parent, key })
}

/// The certificate half of sprig's `generateSignedCertificateWithKeyInternal`.
pub fn signed_certificate(
    template: &Template,
    key: &PrivateKey,
    signer: &Signer,
) -> Result<Certificate, String> {
    create(template, key, Some(&signer.parent), &signer.key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_usage_bits_are_minimal() {
        // digitalSignature | keyEncipherment: 101 → 3 bits used.
        assert_eq!(key_usage_der(0b101), [3, 2, 5, 0xa0]);
        // ... | keyCertSign: 100101 → 6 bits.
        assert_eq!(key_usage_der(0b10_0101), [3, 2, 2, 0xa4]);
        // decipherOnly (bit 8) needs a second byte.
        assert_eq!(key_usage_der(1 << 8), [3, 3, 7, 0, 0x80]);
    }

    #[test]
    fn subjects_use_go_string_types() {
        assert_eq!(subject_der(b"").unwrap(), [0x30, 0]);
        let s = subject_der(b"a b").unwrap();
        assert_eq!(s[s.len() - 5], der::PRINTABLE_STRING);
        let s = subject_der(b"*.x").unwrap();
        assert_eq!(s[s.len() - 5], der::UTF8_STRING);
        assert_eq!(
            subject_der(b"\xff").unwrap_err(),
            "asn1: string not valid UTF-8"
        );
    }

    #[test]
    fn times_switch_to_generalized_in_2050() {
        let t = |s: &str| time_der(s.parse().unwrap());
        assert_eq!(
            t("2049-12-31T23:59:59.9Z"),
            der::tlv(der::UTC_TIME, b"491231235959Z")
        );
        assert_eq!(
            t("2050-01-01T00:00:00Z"),
            der::tlv(der::GENERALIZED_TIME, b"20500101000000Z")
        );
        assert_eq!(
            t("1950-01-01T00:00:00Z"),
            der::tlv(der::UTC_TIME, b"500101000000Z")
        );
        assert_eq!(
            t("1949-12-31T23:59:59Z"),
            der::tlv(der::GENERALIZED_TIME, b"19491231235959Z")
        );
    }

    #[test]
    fn ips_parse_as_go_does() {
        assert_eq!(parse_ip("10.0.0.1"), Some(vec![10, 0, 0, 1]));
        assert_eq!(parse_ip("::ffff:10.0.0.1"), Some(vec![10, 0, 0, 1]));
        assert_eq!(parse_ip("::1").map(|v| v.len()), Some(16));
        assert_eq!(parse_ip("010.0.0.1"), None);
        assert_eq!(parse_ip("fe80::1%eth0"), None);
        assert_eq!(parse_ip("host"), None);
    }

    #[test]
    fn private_key_pem_errors_are_sprigs() {
        let err = |text: &str| parse_private_key_pem(text.as_bytes()).unwrap_err();
        assert_eq!(err("nothing"), "no PEM data in input");
        assert_eq!(
            err("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
            "no private key data in PEM block of type CERTIFICATE"
        );
        assert_eq!(
            err("-----BEGIN FOO PRIVATE KEY-----\nAAAA\n-----END FOO PRIVATE KEY-----\n"),
            "invalid private key type FOO PRIVATE KEY"
        );
        assert!(
            err("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n")
                .starts_with("parsing RSA private key from PEM: asn1: ")
        );
        assert!(
            err("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
                .starts_with("decoding PEM as PKCS#8: asn1: ")
        );
    }

    #[test]
    fn ecdsa_and_ed25519_keys_round_trip_in_go_formats() {
        for key in [generate_ecdsa(), generate_ed25519()] {
            let text = pem_for_key(&key);
            let again = parse_private_key_pem(text.as_bytes()).unwrap();
            assert_eq!(pem_for_key(&again), text);
        }
        // A SEC 1 key in PKCS#8 (as openssl writes it) is re-encoded in Go's SEC 1 form.
        let PrivateKey::Ecdsa(k) = generate_ecdsa() else {
            unreachable!()
        };
        let sec1 = sec1_der(&k);
        let pkcs8 = der::seq(&[
            &der::small_int(0),
            &der::seq(&[&der::oid(oids::EC_PUBLIC_KEY), &der::oid(oids::P256)]),
            &der::octet_string(&sec1),
        ]);
        let parsed = parse_private_key_pem(pem::encode("PRIVATE KEY", &pkcs8).as_bytes()).unwrap();
        assert_eq!(pem_for_key(&parsed), pem::encode("EC PRIVATE KEY", &sec1));
    }

    #[test]
    fn wrong_formats_get_gos_hints() {
        let PrivateKey::Ecdsa(k) = generate_ecdsa() else {
            unreachable!()
        };
        let sec1 = pem::encode("RSA PRIVATE KEY", &sec1_der(&k));
        assert_eq!(
            parse_private_key_pem(sec1.as_bytes()).unwrap_err(),
            "parsing RSA private key from PEM: x509: failed to parse private key (use ParseECPrivateKey instead for this key format)"
        );
        let ed = pem_for_key(&generate_ed25519()).replace("PRIVATE KEY", "EC PRIVATE KEY");
        assert_eq!(
            parse_private_key_pem(ed.as_bytes()).unwrap_err(),
            "parsing EC private key from PEM: x509: failed to parse private key (use ParsePKCS8PrivateKey instead for this key format)"
        );
    }

    // --- certificates: parsed back with x509-cert, signatures checked with the key crates ---

    use x509_cert::der::{Decode as _, Encode as _};
    use x509_cert::ext::pkix::{
        AuthorityKeyIdentifier, BasicConstraints, ExtendedKeyUsage, KeyUsage, SubjectAltName,
        SubjectKeyIdentifier, name::GeneralName,
    };

    fn ecdsa() -> PrivateKey {
        generate_ecdsa()
    }

    fn template(cn: &str, ips: &[&str], dns: &[&str], days: i64) -> Template {
        Template {
            common_name: cn.as_bytes().to_vec(),
            ips: ips.iter().map(|ip| parse_ip(ip).unwrap()).collect(),
            dns_names: dns.iter().map(|d| d.to_string()).collect(),
            days_valid: days,
            is_ca: false,
        }
    }

    fn cert_der(c: &Certificate) -> Vec<u8> {
        let block = pem::decode(&c.cert).unwrap();
        assert_eq!(block.kind, "CERTIFICATE");
        block.bytes
    }

    fn parsed(c: &Certificate) -> x509_cert::Certificate {
        x509_cert::Certificate::from_der(&cert_der(c)).unwrap()
    }

    fn ext<'a>(
        cert: &'a x509_cert::Certificate,
        oid: &str,
    ) -> Option<&'a x509_cert::ext::Extension> {
        let oid: x509_cert::der::oid::ObjectIdentifier = oid.parse().unwrap();
        cert.tbs_certificate
            .extensions
            .as_ref()?
            .iter()
            .find(|e| e.extn_id == oid)
    }

    fn ext_value<'a, T: x509_cert::der::Decode<'a>>(
        cert: &'a x509_cert::Certificate,
        oid: &str,
    ) -> Option<(bool, T)> {
        let e = ext(cert, oid)?;
        Some((e.critical, T::from_der(e.extn_value.as_bytes()).unwrap()))
    }

    fn ext_ids(cert: &x509_cert::Certificate) -> Vec<String> {
        cert.tbs_certificate
            .extensions
            .iter()
            .flatten()
            .map(|e| e.extn_id.to_string())
            .collect()
    }

    /// Checks the certificate's signature with the issuer's public key (its SPKI).
    fn verifies(c: &Certificate, issuer: &x509_cert::Certificate) -> bool {
        let der_bytes = cert_der(c);
        let tbs = der::parse_one(&der_bytes)
            .unwrap()
            .reader()
            .read()
            .unwrap()
            .full;
        let cert = parsed(c);
        let sig = cert.signature.raw_bytes();
        let spki = &issuer.tbs_certificate.subject_public_key_info;
        let key = spki.subject_public_key.raw_bytes();
        match spki.algorithm.oid.to_string().as_str() {
            "1.2.840.113549.1.1.1" => {
                use rsa::pkcs1::DecodeRsaPublicKey as _;
                let public = rsa::RsaPublicKey::from_pkcs1_der(key).unwrap();
                let digest = <rsa::sha2::Sha256 as rsa::sha2::Digest>::digest(tbs);
                public
                    .verify(rsa::Pkcs1v15Sign::new::<rsa::sha2::Sha256>(), &digest, sig)
                    .is_ok()
            }
            "1.2.840.10045.2.1" => {
                use p256::ecdsa::signature::Verifier as _;
                let public = p256::ecdsa::VerifyingKey::from_sec1_bytes(key).unwrap();
                p256::ecdsa::Signature::from_der(sig).is_ok_and(|s| public.verify(tbs, &s).is_ok())
            }
            "1.3.101.112" => {
                let public =
                    ed25519_dalek::VerifyingKey::from_bytes(key.try_into().unwrap()).unwrap();
                ed25519_dalek::Signature::from_slice(sig)
                    .is_ok_and(|s| public.verify_strict(tbs, &s).is_ok())
            }
            other => panic!("unexpected key algorithm {other}"),
        }
    }

    fn validity_secs(cert: &x509_cert::Certificate) -> (u64, u64) {
        let v = &cert.tbs_certificate.validity;
        (
            v.not_before.to_unix_duration().as_secs(),
            v.not_after.to_unix_duration().as_secs(),
        )
    }

    const KU: &str = "2.5.29.15";
    const EKU: &str = "2.5.29.37";
    const BC: &str = "2.5.29.19";
    const SKI: &str = "2.5.29.14";
    const AKI: &str = "2.5.29.35";
    const SAN: &str = "2.5.29.17";

    #[test]
    fn a_ca_is_laid_out_as_go_lays_it_out() {
        let key = ecdsa();
        let ca = certificate_authority(b"my CA".to_vec(), 30, &key).unwrap();
        let c = parsed(&ca);
        let tbs = &c.tbs_certificate;
        assert_eq!(tbs.version, x509_cert::Version::V3);
        assert_eq!(tbs.subject.to_string(), "CN=my CA");
        assert_eq!(tbs.issuer, tbs.subject);
        assert!(tbs.serial_number.as_bytes().len() <= 17);
        assert_eq!(ext_ids(&c), [KU, EKU, BC, SKI], "Go's extension order");
        let (critical, ku): (bool, KeyUsage) = ext_value(&c, KU).unwrap();
        assert!(critical);
        assert!(ku.digital_signature() && ku.key_encipherment() && ku.key_cert_sign());
        assert!(!ku.crl_sign() && !ku.non_repudiation());
        let (critical, eku): (bool, ExtendedKeyUsage) = ext_value(&c, EKU).unwrap();
        assert!(!critical);
        let eku: Vec<String> = eku.0.iter().map(|o| o.to_string()).collect();
        assert_eq!(eku, ["1.3.6.1.5.5.7.3.1", "1.3.6.1.5.5.7.3.2"]);
        let (critical, bc): (bool, BasicConstraints) = ext_value(&c, BC).unwrap();
        assert!(critical && bc.ca && bc.path_len_constraint.is_none());
        let (_, ski): (bool, SubjectKeyIdentifier) = ext_value(&c, SKI).unwrap();
        let public = tbs.subject_public_key_info.subject_public_key.raw_bytes();
        assert_eq!(ski.0.as_bytes(), &sha2::Sha256::digest(public)[..20]);
        let (from, to) = validity_secs(&c);
        assert_eq!(to - from, 30 * 86_400);
        let now = jiff::Timestamp::now().as_second() as u64;
        assert!(from <= now && now - from < 60);
        assert!(verifies(&ca, &c), "self-signed");
        // The key comes back in Go's encoding, as given.
        assert_eq!(ca.key, pem_for_key(&key).into_bytes());
    }

    #[test]
    fn self_signed_certificates_carry_the_names_and_addresses() {
        let key = ecdsa();
        let t = template(
            "web",
            &["10.0.0.1", "::1", "::ffff:1.2.3.4"],
            &["a.example", "b"],
            2,
        );
        let cert = self_signed_certificate(&t, &key).unwrap();
        let c = parsed(&cert);
        assert_eq!(ext_ids(&c), [KU, EKU, BC, SAN], "no key identifiers");
        let (_, ku): (bool, KeyUsage) = ext_value(&c, KU).unwrap();
        assert!(ku.digital_signature() && ku.key_encipherment() && !ku.key_cert_sign());
        let (critical, bc): (bool, BasicConstraints) = ext_value(&c, BC).unwrap();
        assert!(critical && !bc.ca);
        assert_eq!(ext(&c, BC).unwrap().extn_value.as_bytes(), [0x30, 0]);
        let (critical, san): (bool, SubjectAltName) = ext_value(&c, SAN).unwrap();
        assert!(!critical, "the subject is not empty");
        let names: Vec<String> = san
            .0
            .iter()
            .map(|n| match n {
                GeneralName::DnsName(d) => format!("dns:{}", d.as_str()),
                GeneralName::IpAddress(ip) => format!("ip:{:?}", ip.as_bytes()),
                other => panic!("{other:?}"),
            })
            .collect();
        let v6 = format!("ip:{:?}", std::net::Ipv6Addr::LOCALHOST.octets());
        assert_eq!(
            names,
            [
                "dns:a.example",
                "dns:b",
                "ip:[10, 0, 0, 1]",
                v6.as_str(),
                "ip:[1, 2, 3, 4]"
            ]
        );
        assert!(verifies(&cert, &c));
    }

    #[test]
    fn signed_certificates_chain_to_their_ca() {
        for (ca_key, leaf_key) in [
            (generate_rsa(1024).unwrap(), ecdsa()),
            (ecdsa(), generate_ed25519()),
            (generate_ed25519(), generate_rsa(1024).unwrap()),
        ] {
            let ca = certificate_authority(b"ca".to_vec(), 10, &ca_key).unwrap();
            let ca_cert = parsed(&ca);
            let signer = parse_signer(&ca).unwrap();
            let leaf = signed_certificate(&template("leaf", &[], &["x.y"], 5), &leaf_key, &signer)
                .unwrap();
            let c = parsed(&leaf);
            assert_eq!(c.tbs_certificate.issuer, ca_cert.tbs_certificate.subject);
            assert_eq!(c.tbs_certificate.subject.to_string(), "CN=leaf");
            assert_eq!(ext_ids(&c), [KU, EKU, BC, AKI, SAN]);
            let (_, aki): (bool, AuthorityKeyIdentifier) = ext_value(&c, AKI).unwrap();
            let (_, ski): (bool, SubjectKeyIdentifier) = ext_value(&ca_cert, SKI).unwrap();
            assert_eq!(aki.key_identifier, Some(ski.0));
            assert!(verifies(&leaf, &ca_cert), "signed by the CA");
            assert!(!verifies(&leaf, &c), "not self-signed");
            assert_eq!(leaf.key, pem_for_key(&leaf_key).into_bytes());
            let (from, to) = validity_secs(&c);
            assert_eq!(to - from, 5 * 86_400);
        }
    }

    #[test]
    fn a_leaf_named_like_its_ca_has_no_authority_key_id() {
        let ca = certificate_authority(b"same".to_vec(), 1, &ecdsa()).unwrap();
        let signer = parse_signer(&ca).unwrap();
        let leaf = signed_certificate(&template("same", &[], &[], 1), &ecdsa(), &signer).unwrap();
        assert_eq!(ext_ids(&parsed(&leaf)), [KU, EKU, BC]);
    }

    #[test]
    fn an_empty_subject_makes_the_alternative_names_critical() {
        let cert = self_signed_certificate(&template("", &["1.2.3.4"], &[], 1), &ecdsa()).unwrap();
        let c = parsed(&cert);
        assert_eq!(c.tbs_certificate.subject.to_der().unwrap(), [0x30, 0]);
        assert!(ext(&c, SAN).unwrap().critical);
    }

    #[test]
    fn validity_follows_gos_duration_arithmetic() {
        let days = |d: i64| {
            let cert = self_signed_certificate(&template("x", &[], &[], d), &ecdsa()).unwrap();
            let (from, to) = validity_secs(&parsed(&cert));
            to as i64 - from as i64
        };
        assert_eq!(days(0), 0);
        assert_eq!(days(-1), -86_400);
        // 200000 days overflow Go's int64 nanoseconds and wrap around.
        let wrapped = DAY_NANOS.wrapping_mul(200_000).div_euclid(1_000_000_000);
        assert!(wrapped < 0);
        assert!((days(200_000) - wrapped).abs() <= 1);
        // Past 2049 the times are GeneralizedTime.
        let cert = self_signed_certificate(&template("x", &[], &[], 40_000), &ecdsa()).unwrap();
        let c = parsed(&cert);
        assert!(matches!(
            c.tbs_certificate.validity.not_after,
            x509_cert::time::Time::GeneralTime(_)
        ));
        assert!(matches!(
            c.tbs_certificate.validity.not_before,
            x509_cert::time::Time::UtcTime(_)
        ));
    }

    #[test]
    fn go_refusals_are_reported_as_go_reports_them() {
        let ca = certificate_authority(b"ca".to_vec(), 1, &ecdsa()).unwrap();
        // A CA whose key is not its certificate's.
        let other = Certificate {
            cert: ca.cert.clone(),
            key: pem_for_key(&ecdsa()).into_bytes(),
        };
        let signer = parse_signer(&other).unwrap();
        assert_eq!(
            signed_certificate(&template("x", &[], &[], 1), &ecdsa(), &signer).unwrap_err(),
            "error creating certificate: x509: provided PrivateKey doesn't match parent's PublicKey"
        );
        let dsa = PrivateKey::Dsa(DsaKey {
            p: vec![23],
            q: vec![11],
            g: vec![4],
            y: vec![8],
            x: vec![3],
        });
        assert_eq!(
            certificate_authority(b"x".to_vec(), 1, &dsa).unwrap_err(),
            "error creating certificate: x509: certificate private key does not implement crypto.Signer"
        );
        let signer = parse_signer(&ca).unwrap();
        assert_eq!(
            signed_certificate(&template("x", &[], &[], 1), &dsa, &signer).unwrap_err(),
            "error creating certificate: x509: unsupported public key type: *dsa.PublicKey"
        );
        assert_eq!(
            self_signed_certificate(&template("x", &[], &["bücher.example"], 1), &ecdsa())
                .unwrap_err(),
            "error creating certificate: x509: \"bücher.example\" cannot be encoded as an IA5String"
        );
        let small = generate_rsa(512).unwrap();
        assert_eq!(
            certificate_authority(b"x".to_vec(), 1, &small).unwrap_err(),
            "error creating certificate: crypto/rsa: 512-bit keys are insecure (see https://go.dev/pkg/crypto/rsa#hdr-Minimum_key_size)"
        );
        let t = Template {
            common_name: b"\xff".to_vec(),
            ..template("", &[], &[], 1)
        };
        assert_eq!(
            self_signed_certificate(&t, &ecdsa()).unwrap_err(),
            "error creating certificate: asn1: string not valid UTF-8"
        );
    }

    #[test]
    fn custom_certificates_are_checked() {
        use base64::Engine as _;
        let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        let ca = certificate_authority(b"ca".to_vec(), 1, &ecdsa()).unwrap();
        let built = build_custom_certificate(b64(&ca.cert).as_bytes(), b64(&ca.key).as_bytes());
        assert_eq!(built.unwrap(), ca);
        let err = |c: &[u8], k: &[u8]| build_custom_certificate(c, k).unwrap_err();
        assert_eq!(err(b"!", b""), "unable to decode base64 certificate");
        assert_eq!(err(b"", b"!"), "unable to decode base64 private key");
        assert_eq!(err(b"", b""), "unable to decode certificate");
        let junk = pem::encode("CERTIFICATE", b"junk");
        assert!(
            err(b64(junk.as_bytes()).as_bytes(), b"")
                == "error parsing certificate: decodedCert.Bytes: x509: malformed certificate"
        );
        assert_eq!(
            err(b64(&ca.cert).as_bytes(), b""),
            "error parsing private key: no PEM data in input"
        );
        // The key need not be the certificate's (sprig does not check).
        let other = pem_for_key(&generate_ed25519());
        assert!(
            build_custom_certificate(b64(&ca.cert).as_bytes(), b64(other.as_bytes()).as_bytes())
                .is_ok()
        );
    }

    #[test]
    fn dsa_keys_are_written_and_read_as_sprig_does() {
        let key = PrivateKey::Dsa(DsaKey {
            p: vec![0x80, 1],
            q: vec![11],
            g: vec![4],
            y: vec![8],
            x: vec![3],
        });
        let text = pem_for_key(&key);
        assert!(text.starts_with("-----BEGIN DSA PRIVATE KEY-----\n"));
        let again = parse_private_key_pem(text.as_bytes()).unwrap();
        assert_eq!(pem_for_key(&again), text);
    }

    #[test]
    fn generated_dsa_keys_have_gos_l2048_n256_parameters() {
        let PrivateKey::Dsa(k) = generate_dsa() else {
            unreachable!()
        };
        let n = |b: &[u8]| rsa::BigUint::from_bytes_be(b);
        assert_eq!(n(&k.p).bits(), 2048);
        assert_eq!(n(&k.q).bits(), 256);
        assert_eq!(n(&k.g).modpow(&n(&k.x), &n(&k.p)), n(&k.y));
        assert_eq!(
            (n(&k.p) - 1u32) % n(&k.q),
            rsa::BigUint::from(0u32),
            "q divides p-1"
        );
    }
}
