//! Randomness for `randAlpha`…, `shuffle`, `randInt`, `randBytes` and `uuidv4` (from the OS
//! generator; templates only rely on the shape of the results).

use super::super::function::{Arity, FuncError, FuncMap};
use super::super::value::Value;
use super::args::{self, s};

pub const ALPHA: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
pub const ALPHANUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
pub const NUMERIC: &[u8] = b"0123456789";
/// goutils' `CryptoRandomAscii`: code points 32 to 126.
pub const ASCII: &[u8] =
    b" !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~";

pub fn bytes(n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    getrandom::fill(&mut buf).expect("the OS random generator failed");
    buf
}

/// A uniformly distributed number in `0..n` (`n > 0`).
pub fn below(n: u64) -> u64 {
    let zone = u64::MAX - (u64::MAX % n);
    loop {
        let b = bytes(8);
        let v = u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
        if v < zone {
            return v % n;
        }
    }
}

/// goutils' `CryptoRandom*`: a negative count is an error sprig swallows into "".
pub fn string(count: i64, alphabet: &[u8]) -> Result<String, crate::budget::BudgetExceeded> {
    if count <= 0 {
        return Ok(String::new());
    }
    crate::budget::check_bytes_wide(count as u128)?;
    Ok((0..count)
        .map(|_| alphabet[below(alphabet.len() as u64) as usize] as char)
        .collect())
}

pub fn shuffle<T>(items: &mut [T]) {
    for i in (1..items.len()).rev() {
        let j = below(i as u64 + 1) as usize;
        items.swap(i, j);
    }
}

pub fn register(m: &mut FuncMap) {
    m.insert("randInt", Arity::Exact(2), |_, a| {
        let (min, max) = (args::int(&a[0])?, args::int(&a[1])?);
        let span = max.wrapping_sub(min);
        if span <= 0 {
            return Err(FuncError::new("invalid argument to Intn"));
        }
        Ok(Value::Int(below(span as u64) as i64 + min))
    });
    m.insert("randBytes", Arity::Exact(1), |_, a| {
        use base64::Engine as _;
        let n = args::int(&a[0])?;
        if n < 0 {
            return Err(FuncError::new("runtime error: makeslice: len out of range"));
        }
        crate::budget::check_bytes_wide(n as u128 * 4 / 3 + 4)?;
        Ok(s(
            base64::engine::general_purpose::STANDARD.encode(bytes(n as usize))
        ))
    });
    m.insert("uuidv4", Arity::Exact(0), |_, _| {
        Ok(s(uuid::Uuid::new_v4().hyphenated().to_string()))
    });
}
