//! sprig's crypto.go functions. Hashing lives in `encoding`; here are `bcrypt`, `htpasswd`,
//! `derivePassword`, `encryptAES` and `decryptAES`. Key generation and X.509 certificates are
//! not supported in the appliance and fail with a clear message.

use super::super::function::{Arity, FuncError, FuncMap};
use super::super::value::Value;

/// The functions of sprig that the appliance does not provide, with their arity.
pub const UNSUPPORTED: &[(&str, usize)] = &[
    ("genPrivateKey", 1),
    ("buildCustomCert", 2),
    ("genCA", 2),
    ("genCAWithKey", 3),
    ("genSelfSignedCert", 4),
    ("genSelfSignedCertWithKey", 5),
    ("genSignedCert", 5),
    ("genSignedCertWithKey", 6),
];

pub fn unsupported(name: &str) -> FuncError {
    FuncError::new(format!("{name} is not supported in the appliance"))
}

pub fn register(m: &mut FuncMap) {
    register_cheap(m);
    for &(name, arity) in UNSUPPORTED {
        m.insert(name, Arity::Exact(arity), move |_, _| {
            Err(unsupported(name))
        });
    }
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
