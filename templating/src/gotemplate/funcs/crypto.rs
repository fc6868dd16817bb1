//! sprig's crypto.go functions. Hashing lives in `encoding`; here are `bcrypt`, `htpasswd`,
//! `derivePassword`, `encryptAES` and `decryptAES`, and the keys and certificates:
//! `genPrivateKey` (RSA 4096, ECDSA P-256, Ed25519 or DSA keys as Go's PEM; an unknown type
//! gives sprig's message as the result), `genCA`, `genCAWithKey`, `genSelfSignedCert`,
//! `genSelfSignedCertWithKey`, `genSignedCert`, `genSignedCertWithKey` and `buildCustomCert`.
//!
//! The certificate functions return sprig's `certificate` struct (`.Cert` and `.Key`, PEM
//! strings), a [`Value::Map`] whose element type is [`Elem::Struct`]: it prints as Go prints
//! the struct (`{CERT KEY}`), `typeOf` is `sprig.certificate`, and only it is accepted where
//! sprig wants a `certificate` (the CA of `genSignedCert`). Generated keys are RSA 2048 as in
//! sprig; the `WithKey` variants take a PEM key (PKCS#1, SEC 1 or PKCS#8) and return it
//! re-encoded as Go does. The X.509 details are in the `certs` submodule.

mod certs;
mod der;
mod pem;

use std::collections::BTreeMap;

use super::super::function::{Arity, FuncError, FuncMap};
use super::super::value::{Elem, Value, lazy_map};

pub use certs::{Certificate, generate_private_key};

/// Go's name of sprig's certificate type.
pub const CERTIFICATE_TYPE: &str = "sprig.certificate";

pub fn register(m: &mut FuncMap) {
    register_cheap(m);
    register_certificates(m);
}

/// sprig's `certificate{Cert, Key}` as a template value.
pub fn certificate_value(c: Certificate) -> Value {
    Value::typed_map(Elem::Struct(CERTIFICATE_TYPE), certificate_fields(c))
}

fn certificate_fields(c: Certificate) -> BTreeMap<String, Value> {
    BTreeMap::from([
        ("Cert".to_string(), Value::from_bytes(c.cert)),
        ("Key".to_string(), Value::from_bytes(c.key)),
    ])
}

/// The `certificate` argument of `genSignedCert` (the engine has checked its type).
fn certificate_arg(v: &Value) -> Result<Certificate, FuncError> {
    match v {
        Value::Map(m) if m.elem == Elem::Struct(CERTIFICATE_TYPE) => {
            let fields = m.borrow();
            let field = |name: &str| {
                fields
                    .get(name)
                    .and_then(Value::string_bytes)
                    .unwrap_or_default()
                    .to_vec()
            };
            Ok(Certificate {
                cert: field("Cert"),
                key: field("Key"),
            })
        }
        other => Err(args::type_error(CERTIFICATE_TYPE, other)),
    }
}

/// sprig's `getNetIPs`.
fn ips_arg(v: &Value) -> Result<Vec<Vec<u8>>, FuncError> {
    args::list(v)?
        .iter()
        .map(|ip| {
            let Some(text) = ip.string_bytes() else {
                return Err(FuncError::new(format!(
                    "error parsing ip: {} is not a string",
                    super::super::print::format_value(ip)
                )));
            };
            let text = String::from_utf8_lossy(text);
            certs::parse_ip(&text)
                .ok_or_else(|| FuncError::new(format!("error parsing ip: {text}")))
        })
        .collect()
}

/// sprig's `getAlternateDNSStrs` (names are text: Go's IA5String check rejects non-ASCII).
fn dns_arg(v: &Value) -> Result<Vec<String>, FuncError> {
    args::list(v)?
        .iter()
        .map(|name| match name.string_bytes() {
            Some(b) => Ok(String::from_utf8_lossy(b).into_owned()),
            None => Err(FuncError::new(format!(
                "error processing alternate dns name: {} is not a string",
                super::super::print::format_value(name)
            ))),
        })
        .collect()
}

/// sprig's `getBaseCertTemplate` arguments: common name, IPs, DNS names and days.
fn template_args(a: &[Value], is_ca: bool) -> Result<certs::Template, FuncError> {
    Ok(certs::Template {
        common_name: args::string_bytes(&a[0])?.to_vec(),
        ips: ips_arg(&a[1])?,
        dns_names: dns_arg(&a[2])?,
        days_valid: args::int(&a[3])?,
        is_ca,
    })
}

fn rsa_2048() -> Result<certs::PrivateKey, String> {
    certs::generate_rsa(2048).map_err(|e| format!("error generating rsa key: {e}"))
}

/// A certificate with a new RSA-2048 key, made when the template first reads the result:
/// making the key is most of a render's time, and many charts call `genCA` in templates that
/// then use neither its certificate nor its key. The caller has checked the inputs
/// ([`certs::check_new_key_certificate`]); what is left cannot fail for a fresh RSA-2048 key,
/// and should it fail all the same, the render fails with the cause (never a silent empty
/// certificate).
fn lazy_certificate(make: impl FnOnce() -> Result<Certificate, String> + 'static) -> Value {
    Value::Map(lazy_map(
        Elem::Struct(CERTIFICATE_TYPE),
        move || match make() {
            Ok(c) => certificate_fields(c),
            Err(e) => {
                crate::budget::record("certificate", e);
                BTreeMap::new()
            }
        },
    ))
}

fn pem_key_arg(v: &Value) -> Result<certs::PrivateKey, FuncError> {
    certs::parse_private_key_pem(args::string_bytes(v)?)
        .map_err(|e| FuncError::new(format!("parsing private key: {e}")))
}

fn cert_result(r: Result<Certificate, String>) -> Result<Value, FuncError> {
    r.map(certificate_value).map_err(FuncError::new)
}

fn register_certificates(m: &mut FuncMap) {
    m.insert("genPrivateKey", Arity::Exact(1), |_, a| {
        Ok(s(generate_private_key(&args::string(&a[0])?)))
    });
    m.insert("buildCustomCert", Arity::Exact(2), |_, a| {
        cert_result(certs::build_custom_certificate(
            args::string_bytes(&a[0])?,
            args::string_bytes(&a[1])?,
        ))
    });
    m.insert("genCA", Arity::Exact(2), |_, a| {
        let (cn, days) = (args::string_bytes(&a[0])?.to_vec(), args::int(&a[1])?);
        let template = certs::Template::authority(cn, days);
        certs::check_new_key_certificate(&template, None).map_err(FuncError::new)?;
        Ok(lazy_certificate(move || {
            certs::self_signed_certificate(&template, &rsa_2048()?)
        }))
    });
    m.insert("genCAWithKey", Arity::Exact(3), |_, a| {
        let (cn, days) = (args::string_bytes(&a[0])?.to_vec(), args::int(&a[1])?);
        let key = pem_key_arg(&a[2])?;
        cert_result(certs::certificate_authority(cn, days, &key))
    });
    m.insert("genSelfSignedCert", Arity::Exact(4), |_, a| {
        // sprig makes the key first; making it after the checks of the arguments is the same.
        let template = template_args(a, false)?;
        certs::check_new_key_certificate(&template, None).map_err(FuncError::new)?;
        Ok(lazy_certificate(move || {
            certs::self_signed_certificate(&template, &rsa_2048()?)
        }))
    });
    m.insert("genSelfSignedCertWithKey", Arity::Exact(5), |_, a| {
        let key = pem_key_arg(&a[4])?;
        let template = template_args(a, false)?;
        cert_result(certs::self_signed_certificate(&template, &key))
    });
    m.insert("genSignedCert", Arity::Exact(5), |_, a| {
        let signer = certs::parse_signer(&certificate_arg(&a[4])?).map_err(FuncError::new)?;
        let template = template_args(a, false)?;
        certs::check_new_key_certificate(&template, Some(&signer)).map_err(FuncError::new)?;
        Ok(lazy_certificate(move || {
            certs::signed_certificate(&template, &rsa_2048()?, &signer)
        }))
    });
    m.insert("genSignedCertWithKey", Arity::Exact(6), |_, a| {
        let key = pem_key_arg(&a[5])?;
        let signer = certs::parse_signer(&certificate_arg(&a[4])?).map_err(FuncError::new)?;
        let template = template_args(a, false)?;
        cert_result(certs::signed_certificate(&template, &key, &signer))
    });
}

use aes::cipher::{BlockDecryptMut, BlockEncryptMut, KeyIvInit, block_padding::NoPadding};
use base64::Engine as _;
use sha2::Digest as _;

use super::args::{self, s};

/// Go's bcrypt `DefaultCost`.
const BCRYPT_COST: u32 = 10;

/// sprig's `bcrypt`: x/crypto/bcrypt's `$2a$` hash at the default cost.
pub fn bcrypt_hash(input: &str) -> String {
    if input.len() > 72 {
        return "failed to encrypt string with bcrypt: bcrypt: password length exceeds 72 bytes"
            .to_string();
    }
    let salt: [u8; 16] = super::random::bytes(16).try_into().unwrap_or([0; 16]);
    match bcrypt::hash_with_salt(input, BCRYPT_COST, salt) {
        Ok(parts) => parts.format_for_version(bcrypt::Version::TwoA),
        Err(e) => format!("failed to encrypt string with bcrypt: {e}"),
    }
}

fn hmac_sha256(key: &[u8], msg: &[u8]) -> Vec<u8> {
    let mut k = [0u8; 64];
    if key.len() > 64 {
        k[..32].copy_from_slice(&sha2::Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let mut inner = sha2::Sha256::new();
    inner.update(k.iter().map(|b| b ^ 0x36).collect::<Vec<u8>>());
    inner.update(msg);
    let ih = inner.finalize();
    let mut outer = sha2::Sha256::new();
    outer.update(k.iter().map(|b| b ^ 0x5c).collect::<Vec<u8>>());
    outer.update(ih);
    outer.finalize().to_vec()
}

const TEMPLATES: &[(&str, &[&str])] = &[
    ("maximum", &["anoxxxxxxxxxxxxxxxxx", "axxxxxxxxxxxxxxxxxno"]),
    (
        "long",
        &[
            "CvcvnoCvcvCvcv",
            "CvcvCvcvnoCvcv",
            "CvcvCvcvCvcvno",
            "CvccnoCvcvCvcv",
            "CvccCvcvnoCvcv",
            "CvccCvcvCvcvno",
            "CvcvnoCvccCvcv",
            "CvcvCvccnoCvcv",
            "CvcvCvccCvcvno",
            "CvcvnoCvcvCvcc",
            "CvcvCvcvnoCvcc",
            "CvcvCvcvCvccno",
            "CvccnoCvccCvcv",
            "CvccCvccnoCvcv",
            "CvccCvccCvcvno",
            "CvcvnoCvccCvcc",
            "CvcvCvccnoCvcc",
            "CvcvCvccCvccno",
            "CvccnoCvcvCvcc",
            "CvccCvcvnoCvcc",
            "CvccCvcvCvccno",
        ],
    ),
    ("medium", &["CvcnoCvc", "CvcCvcno"]),
    ("short", &["Cvcn"]),
    ("basic", &["aaanaaan", "aannaaan", "aaannaaa"]),
    ("pin", &["nnnn"]),
];

fn template_chars(c: u8) -> &'static [u8] {
    match c {
        b'V' => b"AEIOU",
        b'C' => b"BCDFGHJKLMNPQRSTVWXYZ",
        b'v' => b"aeiou",
        b'c' => b"bcdfghjklmnpqrstvwxyz",
        b'A' => b"AEIOUBCDFGHJKLMNPQRSTVWXYZ",
        b'a' => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz",
        b'n' => b"0123456789",
        b'o' => b"@&%?,=[]_:-+*$#!'^~;()/.",
        b'x' => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz0123456789!@#$%^&*()",
        _ => b"",
    }
}

/// sprig's `derivePassword` (the Master Password algorithm).
pub fn derive_password(counter: u32, kind: &str, password: &str, user: &str, site: &str) -> String {
    let Some((_, templates)) = TEMPLATES.iter().find(|(k, _)| *k == kind) else {
        return format!("cannot find password template {kind}");
    };
    const SEED: &str = "com.lyndir.masterpassword";
    let mut salt = SEED.as_bytes().to_vec();
    salt.extend_from_slice(&(user.len() as u32).to_be_bytes());
    salt.extend_from_slice(user.as_bytes());
    let mut key = [0u8; 64];
    let params = match scrypt::Params::new(15, 8, 2, 64) {
        Ok(p) => p,
        Err(e) => return format!("failed to derive password: {e}"),
    };
    if let Err(e) = scrypt::scrypt(password.as_bytes(), &salt, &params, &mut key) {
        return format!("failed to derive password: {e}");
    }
    let mut msg = SEED.as_bytes().to_vec();
    msg.extend_from_slice(&(site.len() as u32).to_be_bytes());
    msg.extend_from_slice(site.as_bytes());
    msg.extend_from_slice(&counter.to_be_bytes());
    let seed = hmac_sha256(&key, &msg);
    let template = templates[seed[0] as usize % templates.len()].as_bytes();
    template
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let chars = template_chars(*c);
            chars[seed[i + 1] as usize % chars.len()] as char
        })
        .collect()
}

type Aes256CbcEnc = cbc::Encryptor<aes::Aes256>;
type Aes256CbcDec = cbc::Decryptor<aes::Aes256>;

fn aes_key(password: &str) -> [u8; 32] {
    let mut key = [0u8; 32];
    let p = password.as_bytes();
    let n = p.len().min(32);
    key[..n].copy_from_slice(&p[..n]);
    key
}

/// sprig's `encryptAES`: AES-256-CBC with a random IV in front, PKCS#7 padding, base64.
pub fn encrypt_aes(password: &str, plaintext: &[u8]) -> String {
    if plaintext.is_empty() {
        return String::new();
    }
    let mut content = plaintext.to_vec();
    let pad = 16 - content.len() % 16;
    content.extend(std::iter::repeat_n(pad as u8, pad));
    let iv: [u8; 16] = super::random::bytes(16).try_into().unwrap_or([0; 16]);
    let n = content.len();
    let enc = Aes256CbcEnc::new(&aes_key(password).into(), &iv.into());
    let ct = enc
        .encrypt_padded_mut::<NoPadding>(&mut content, n)
        .map(|c| c.to_vec())
        .unwrap_or_default();
    let mut out = iv.to_vec();
    out.extend(ct);
    base64::engine::general_purpose::STANDARD.encode(out)
}

/// sprig's `decryptAES`, with the panics Go's slicing would raise on malformed input. The
/// plaintext is bytes (a Go string need not be valid UTF-8).
pub fn decrypt_aes(password: &str, crypt64: &[u8]) -> Result<Vec<u8>, String> {
    if crypt64.is_empty() {
        return Ok(Vec::new());
    }
    let crypt = super::encoding::b64_decode(crypt64)
        .map_err(|at| format!("illegal base64 data at input byte {at}"))?;
    if crypt.len() < 16 {
        // base64's DecodeString allocates DecodedLen(len(s)) bytes: that is the capacity.
        return Err(format!(
            "runtime error: slice bounds out of range [:16] with capacity {}",
            crypt64.len() / 4 * 3
        ));
    }
    let (iv, body) = crypt.split_at(16);
    if body.len() % 16 != 0 {
        return Err("crypto/cipher: input not full blocks".into());
    }
    let mut buf = body.to_vec();
    let iv: [u8; 16] = iv.try_into().unwrap_or([0; 16]);
    let dec = Aes256CbcDec::new(&aes_key(password).into(), &iv.into());
    let plain = dec
        .decrypt_padded_mut::<NoPadding>(&mut buf)
        .map_err(|e| e.to_string())?
        .to_vec();
    let Some(&last) = plain.last() else {
        return Err("runtime error: index out of range [-1]".into());
    };
    let len = plain.len() as i64 - last as i64;
    if len < 0 {
        return Err(format!("runtime error: slice bounds out of range [:{len}]"));
    }
    Ok(plain[..len as usize].to_vec())
}

pub fn register_cheap(m: &mut FuncMap) {
    m.insert("bcrypt", Arity::Exact(1), |_, a| {
        Ok(s(bcrypt_hash(&args::string(&a[0])?)))
    });
    m.insert("htpasswd", Arity::Exact(2), |_, a| {
        let (user, pw) = (args::string(&a[0])?, args::string(&a[1])?);
        if user.contains(':') {
            return Ok(s(format!("invalid username: {user}")));
        }
        Ok(s(format!("{user}:{}", bcrypt_hash(&pw))))
    });
    m.insert("derivePassword", Arity::Exact(5), |_, a| {
        let counter = args::uint32(&a[0])?;
        let (kind, pw, user, site) = (
            args::string(&a[1])?,
            args::string(&a[2])?,
            args::string(&a[3])?,
            args::string(&a[4])?,
        );
        Ok(s(derive_password(counter, &kind, &pw, &user, &site)))
    });
    m.insert("encryptAES", Arity::Exact(2), |_, a| {
        let pw = args::string(&a[0])?;
        Ok(s(encrypt_aes(&pw, args::string_bytes(&a[1])?)))
    });
    m.insert("decryptAES", Arity::Exact(2), |_, a| {
        let pw = args::string(&a[0])?;
        decrypt_aes(&pw, args::string_bytes(&a[1])?)
            .map(Value::from_bytes)
            .map_err(FuncError::new)
    });
}
