//! sprig's string functions (strings.go and the string entries of functions.go).

use super::super::function::{Arity, FuncError, FuncMap};
use super::super::value::{Elem, Value};
use super::args::{self, s};
use super::random;
use super::strval::{format_v, strval, strval_value};
use super::unicode as uc;
use crate::budget;

pub fn register(m: &mut FuncMap) {
    m.insert("abbrev", Arity::Exact(2), |_, a| {
        let (w, st) = (args::int(&a[0])?, args::string_bytes(&a[1])?);
        Ok(Value::from_bytes(abbrev(w, st)))
    });
    m.insert("abbrevboth", Arity::Exact(3), |_, a| {
        let (l, r) = (args::int(&a[0])?, args::int(&a[1])?);
        Ok(Value::from_bytes(abbrevboth(
            l,
            r,
            args::string_bytes(&a[2])?,
        )))
    });
    m.insert("trunc", Arity::Exact(2), |_, a| {
        let (c, st) = (args::int(&a[0])?, args::string_bytes(&a[1])?);
        Ok(Value::from_bytes(trunc(c, st)))
    });
    m.insert("trim", Arity::Exact(1), |_, a| {
        Ok(s(args::string(&a[0])?.trim_matches(uc::is_space)))
    });
    m.insert("upper", Arity::Exact(1), |_, a| {
        Ok(s(args::string(&a[0])?
            .chars()
            .map(uc::to_upper)
            .collect::<String>()))
    });
    m.insert("lower", Arity::Exact(1), |_, a| {
        Ok(s(args::string(&a[0])?
            .chars()
            .map(uc::to_lower)
            .collect::<String>()))
    });
    m.insert("title", Arity::Exact(1), |_, a| {
        Ok(s(title(&args::string(&a[0])?)))
    });
    m.insert("untitle", Arity::Exact(1), |_, a| {
        Ok(s(untitle(&args::string(&a[0])?)))
    });
    m.insert("substr", Arity::Exact(3), |_, a| {
        let (st, en) = (args::int(&a[0])?, args::int(&a[1])?);
        substring(st, en, args::string_bytes(&a[2])?).map(Value::from_bytes)
    });
    m.insert("repeat", Arity::Exact(2), |_, a| {
        let (n, text) = (args::int(&a[0])?, args::string(&a[1])?);
        if n < 0 {
            return Err(FuncError::new("strings: negative Repeat count"));
        }
        budget::check_bytes_wide(text.len() as u128 * n as u128)?;
        Ok(s(text.repeat(n as usize)))
    });
    for name in ["trimall", "trimAll"] {
        m.insert(name, Arity::Exact(2), |_, a| {
            let (cut, text) = (args::string(&a[0])?, args::string(&a[1])?);
            Ok(s(text.trim_matches(|c| cut.contains(c))))
        });
    }
    m.insert("trimSuffix", Arity::Exact(2), |_, a| {
        let (suf, text) = (args::string(&a[0])?, args::string(&a[1])?);
        Ok(s(text.strip_suffix(&*suf).unwrap_or(&text)))
    });
    m.insert("trimPrefix", Arity::Exact(2), |_, a| {
        let (pre, text) = (args::string(&a[0])?, args::string(&a[1])?);
        Ok(s(text.strip_prefix(&*pre).unwrap_or(&text)))
    });
    m.insert("nospace", Arity::Exact(1), |_, a| {
        Ok(s(delete_white_space(&args::string(&a[0])?)))
    });
    m.insert("initials", Arity::Exact(1), |_, a| {
        Ok(s(initials(&args::string(&a[0])?)))
    });
    m.insert("randAlphaNum", Arity::Exact(1), |_, a| {
        Ok(s(random::string(args::int(&a[0])?, random::ALPHANUM)?))
    });
    m.insert("randAlpha", Arity::Exact(1), |_, a| {
        Ok(s(random::string(args::int(&a[0])?, random::ALPHA)?))
    });
    m.insert("randAscii", Arity::Exact(1), |_, a| {
        Ok(s(random::string(args::int(&a[0])?, random::ASCII)?))
    });
    m.insert("randNumeric", Arity::Exact(1), |_, a| {
        Ok(s(random::string(args::int(&a[0])?, random::NUMERIC)?))
    });
    m.insert("swapcase", Arity::Exact(1), |_, a| {
        Ok(s(swap_case(&args::string(&a[0])?)))
    });
    m.insert("shuffle", Arity::Exact(1), |_, a| {
        let mut chars: Vec<char> = args::string(&a[0])?.chars().collect();
        random::shuffle(&mut chars);
        Ok(s(chars.into_iter().collect::<String>()))
    });
    m.insert("snakecase", Arity::Exact(1), |_, a| {
        Ok(s(camel_to_lower(&args::string(&a[0])?, '_')))
    });
    m.insert("kebabcase", Arity::Exact(1), |_, a| {
        Ok(s(camel_to_lower(&args::string(&a[0])?, '-')))
    });
    m.insert("camelcase", Arity::Exact(1), |_, a| {
        Ok(s(to_pascal_case(&args::string(&a[0])?)))
    });
    m.insert("wrap", Arity::Exact(2), |_, a| {
        let (l, text) = (args::int(&a[0])?, args::string(&a[1])?);
        Ok(s(wrap_custom(&text, l, "", false)))
    });
    m.insert("wrapWith", Arity::Exact(3), |_, a| {
        let (l, sep, text) = (
            args::int(&a[0])?,
            args::string(&a[1])?,
            args::string(&a[2])?,
        );
        // At most one separator per byte of the text.
        budget::check_bytes_wide(text.len() as u128 * (sep.len() as u128 + 1))?;
        Ok(s(wrap_custom(&text, l, &sep, true)))
    });
    m.insert("contains", Arity::Exact(2), |_, a| {
        let (sub, text) = (args::string(&a[0])?, args::string(&a[1])?);
        Ok(Value::Bool(text.contains(&*sub)))
    });
    m.insert("hasPrefix", Arity::Exact(2), |_, a| {
        let (sub, text) = (args::string(&a[0])?, args::string(&a[1])?);
        Ok(Value::Bool(text.starts_with(&*sub)))
    });
    m.insert("hasSuffix", Arity::Exact(2), |_, a| {
        let (sub, text) = (args::string(&a[0])?, args::string(&a[1])?);
        Ok(Value::Bool(text.ends_with(&*sub)))
    });
    m.insert("quote", Arity::AtLeast(0), |_, a| {
        let mut out = String::new();
        for (i, v) in a.iter().filter(|v| !matches!(v, Value::Nil)).enumerate() {
            if i > 0 {
                out.push(' ');
            }
            match v {
                Value::String(text) => super::super::print::append_quote(&mut out, text),
                v => match strval_value(v) {
                    Value::ByteString(b) => {
                        out.push_str(&super::super::print::quote_bytes(&b, false));
                    }
                    text => super::super::print::append_quote(&mut out, &strval(&text)),
                },
            }
        }
        Ok(s(out))
    });
    m.insert("squote", Arity::AtLeast(0), |_, a| {
        let parts: Vec<String> = a
            .iter()
            .filter(|v| !matches!(v, Value::Nil))
            .map(|v| format!("'{}'", format_v(v)))
            .collect();
        Ok(s(parts.join(" ")))
    });
    m.insert("cat", Arity::AtLeast(0), |_, a| {
        let parts: Vec<String> = a
            .iter()
            .filter(|v| !matches!(v, Value::Nil))
            .map(format_v)
            .collect();
        budget::check_bytes(parts.iter().map(|p| p.len() + 1).sum())?;
        Ok(s(parts.join(" ")))
    });
    m.insert("indent", Arity::Exact(2), |_, a| {
        let (n, text) = (args::int(&a[0])?, args::string(&a[1])?);
        indent(n, &text, false).map(s)
    });
    m.insert("nindent", Arity::Exact(2), |_, a| {
        let (n, text) = (args::int(&a[0])?, args::string(&a[1])?);
        indent(n, &text, true).map(s)
    });
    m.insert("replace", Arity::Exact(3), |_, a| {
        let (old, new, src) = (
            args::string(&a[0])?,
            args::string(&a[1])?,
            args::string(&a[2])?,
        );
        let places = if old.is_empty() {
            src.chars().count() + 1
        } else {
            src.matches(&*old).count()
        };
        budget::check_bytes_wide(src.len() as u128 + places as u128 * new.len() as u128)?;
        Ok(s(replace_all(&src, &old, &new)))
    });
    m.insert("plural", Arity::Exact(3), |_, a| {
        let (one, many, n) = (
            args::string(&a[0])?,
            args::string(&a[1])?,
            args::int(&a[2])?,
        );
        Ok(Value::String(if n == 1 { one } else { many }))
    });
    m.insert("toString", Arity::Exact(1), |_, a| Ok(strval_value(&a[0])));
    m.insert("toStrings", Arity::Exact(1), |_, a| {
        Ok(strings_list(strslice(&a[0])))
    });
    m.insert("split", Arity::Exact(2), |_, a| {
        let (sep, orig) = (args::string(&a[0])?, args::string(&a[1])?);
        Ok(indexed_map(go_split(&orig, &sep, -1)))
    });
    m.insert("splitList", Arity::Exact(2), |_, a| {
        let (sep, orig) = (args::string(&a[0])?, args::string(&a[1])?);
        Ok(strings_list(go_split(&orig, &sep, -1)))
    });
    m.insert("splitn", Arity::Exact(3), |_, a| {
        let (sep, n, orig) = (
            args::string(&a[0])?,
            args::int(&a[1])?,
            args::string(&a[2])?,
        );
        Ok(indexed_map(go_split(&orig, &sep, n)))
    });
    m.insert("join", Arity::Exact(2), |_, a| {
        let sep = args::string(&a[0])?;
        if let Value::List(l) = &a[1] {
            // Before the items' texts are built: a long list with a long separator.
            budget::check_bytes_wide(l.len().saturating_sub(1) as u128 * sep.len() as u128)?;
        }
        let items = strslice(&a[1]);
        budget::check_bytes(items.iter().map(|p| p.len() + sep.len()).sum())?;
        Ok(s(items.join(&sep)))
    });
    m.insert("sortAlpha", Arity::Exact(1), |_, a| {
        let mut items = match &a[0] {
            Value::List(_) | Value::Bytes(_) => strslice(&a[0]),
            other => vec![strval(other)],
        };
        items.sort();
        Ok(strings_list(items))
    });
}

/// A Go `[]string`.
pub fn strings_list(items: Vec<String>) -> Value {
    Value::string_list(items)
}

/// sprig's `split`/`splitn` result: a `map[string]string` from `_0`, `_1`... to the parts.
fn indexed_map(parts: Vec<String>) -> Value {
    Value::typed_map(
        Elem::String,
        parts
            .into_iter()
            .enumerate()
            .map(|(i, p)| (format!("_{i}"), s(p)))
            .collect(),
    )
}

/// sprig's `strslice`: a list's non-nil elements through `strval`; nil gives an empty list;
/// anything else a one-element list.
pub fn strslice(v: &Value) -> Vec<String> {
    match v {
        Value::List(items) => items
            .iter()
            .filter(|x| !matches!(x, Value::Nil))
            .map(strval)
            .collect(),
        Value::Bytes(b) => b.iter().map(|x| x.to_string()).collect(),
        Value::Nil => Vec::new(),
        other => vec![strval(other)],
    }
}

/// Go's `strings.SplitN` (`n < 0`: all parts).
pub fn go_split(s: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        // Splits after each UTF-8 sequence, the last part keeps the rest.
        let chars: Vec<&str> = s
            .char_indices()
            .map(|(i, c)| &s[i..i + c.len_utf8()])
            .collect();
        let limit = if n < 0 || n as usize > chars.len() {
            chars.len()
        } else {
            n as usize
        };
        let mut out: Vec<String> = chars[..limit.saturating_sub(1)]
            .iter()
            .map(|c| c.to_string())
            .collect();
        if limit > 0 {
            out.push(chars[limit - 1..].concat());
        }
        return out;
    }
    if n < 0 {
        s.split(sep).map(str::to_string).collect()
    } else {
        s.splitn(n as usize, sep).map(str::to_string).collect()
    }
}

/// Go's `strings.Replace(s, old, new, -1)`; an empty `old` inserts `new` around every rune.
pub fn replace_all(s: &str, old: &str, new: &str) -> String {
    if old.is_empty() {
        let mut out = String::from(new);
        for c in s.chars() {
            out.push(c);
            out.push_str(new);
        }
        return out;
    }
    s.replace(old, new)
}

fn push_spaces(out: &mut String, mut n: usize) {
    const SPACES: &str = "                                ";
    while n > 0 {
        let k = n.min(SPACES.len());
        out.push_str(&SPACES[..k]);
        n -= k;
    }
}

/// sprig's `indent` (`pad + strings.Replace(v, "\n", "\n"+pad, -1)`), and `nindent` with
/// `newline_first`.
fn indent(n: i64, text: &str, newline_first: bool) -> Result<String, FuncError> {
    if n < 0 {
        return Err(FuncError::new("strings: negative Repeat count"));
    }
    let n = n as usize;
    let lines = 1 + text.bytes().filter(|&b| b == b'\n').count();
    budget::check_bytes_wide(text.len() as u128 + lines as u128 * n as u128 + 1)?;
    let mut out = String::with_capacity(text.len() + lines.saturating_mul(n) + 1);
    if newline_first {
        out.push('\n');
    }
    push_spaces(&mut out, n);
    let mut start = 0;
    for (i, &b) in text.as_bytes().iter().enumerate() {
        if b == b'\n' {
            out.push_str(&text[start..=i]);
            push_spaces(&mut out, n);
            start = i + 1;
        }
    }
    out.push_str(&text[start..]);
    Ok(out)
}

/// Byte-slices a Go string; a cut inside a UTF-8 sequence yields U+FFFD as Go would print
/// the broken bytes.
fn slice_panic(msg: String) -> FuncError {
    FuncError::new(format!("runtime error: slice bounds out of range {msg}"))
}

/// sprig's `substring`: a byte slice of the string (which may cut a multi-byte character, as
/// in Go).
fn substring(start: i64, end: i64, s: &[u8]) -> Result<Vec<u8>, FuncError> {
    let len = s.len() as i64;
    if start < 0 {
        if end < 0 {
            return Err(slice_panic(format!("[:{end}]")));
        }
        if end > len {
            return Err(slice_panic(format!("[:{end}] with length {len}")));
        }
        return Ok(s[..end as usize].to_vec());
    }
    if end < 0 || end > len {
        if start > len {
            return Err(slice_panic(format!("[{start}:{len}]")));
        }
        return Ok(s[start as usize..].to_vec());
    }
    if start > end {
        return Err(slice_panic(format!("[{start}:{end}]")));
    }
    Ok(s[start as usize..end as usize].to_vec())
}

/// sprig's `trunc` (byte-based).
fn trunc(c: i64, s: &[u8]) -> Vec<u8> {
    let len = s.len() as i64;
    if c < 0 && len + c > 0 {
        return s[(len + c) as usize..].to_vec();
    }
    if c >= 0 && len > c {
        return s[..c as usize].to_vec();
    }
    s.to_vec()
}

fn abbrev(width: i64, s: &[u8]) -> Vec<u8> {
    if width < 4 {
        return s.to_vec();
    }
    abbreviate_full(s, 0, width).unwrap_or_default()
}

fn abbrevboth(left: i64, right: i64, s: &[u8]) -> Vec<u8> {
    if right < 4 || left > 0 && right < 7 {
        return s.to_vec();
    }
    abbreviate_full(s, left, right).unwrap_or_default()
}

/// goutils' `AbbreviateFull` (byte-based, like the original).
fn abbreviate_full(s: &[u8], offset: i64, max_width: i64) -> Option<Vec<u8>> {
    if s.is_empty() {
        return Some(Vec::new());
    }
    if max_width < 4 {
        return None;
    }
    let len = s.len() as i64;
    if len <= max_width {
        return Some(s.to_vec());
    }
    let mut offset = offset.min(len);
    if len - offset < max_width - 3 {
        offset = len - (max_width - 3);
    }
    if offset <= 4 {
        return Some([&s[..(max_width - 3) as usize], b"..."].concat());
    }
    if max_width < 7 {
        return None;
    }
    if offset + max_width - 3 < len {
        let inner = abbreviate_full(&s[offset as usize..], 0, max_width - 3)?;
        return Some([&b"..."[..], &inner].concat());
    }
    Some([&b"..."[..], &s[(len - (max_width - 3)) as usize..]].concat())
}

/// Go's `strings.Title`.
pub fn title(s: &str) -> String {
    fn is_separator(c: char) -> bool {
        if c.is_ascii() {
            return !(c.is_ascii_alphanumeric() || c == '_');
        }
        if uc::is_letter(c) || uc::is_digit(c) {
            return false;
        }
        uc::is_space(c)
    }
    let mut prev = ' ';
    s.chars()
        .map(|c| {
            let out = if is_separator(prev) {
                uc::to_title(c)
            } else {
                c
            };
            prev = c;
            out
        })
        .collect()
}

/// goutils' `Uncapitalize` with whitespace delimiters.
fn untitle(s: &str) -> String {
    let mut next = true;
    s.chars()
        .map(|c| {
            if uc::is_space(c) {
                next = true;
                c
            } else if next {
                next = false;
                uc::to_lower(c)
            } else {
                c
            }
        })
        .collect()
}

/// goutils' `SwapCase`.
fn swap_case(s: &str) -> String {
    let mut whitespace = true;
    s.chars()
        .map(|c| {
            if uc::is_upper(c) || uc::is_title(c) {
                whitespace = false;
                uc::to_lower(c)
            } else if uc::is_lower(c) {
                if whitespace {
                    whitespace = false;
                    uc::to_title(c)
                } else {
                    uc::to_upper(c)
                }
            } else {
                whitespace = uc::is_space(c);
                c
            }
        })
        .collect()
}

/// Go's `unicode.IsSpace` on a byte taken as a rune (goutils iterates bytes).
fn byte_is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ' | 0x85 | 0xA0)
}

/// goutils' `DeleteWhiteSpace`: byte-wise, each kept byte written as the rune of that value.
fn delete_white_space(s: &str) -> String {
    if !s.bytes().any(byte_is_space) {
        return s.to_string();
    }
    s.bytes()
        .filter(|b| !byte_is_space(*b))
        .map(|b| b as char)
        .collect()
}

/// goutils' `Initials` (byte-wise, whitespace delimiters).
fn initials(s: &str) -> String {
    let mut out = String::new();
    let mut gap = true;
    for b in s.bytes() {
        if byte_is_space(b) {
            gap = true;
        } else if gap {
            out.push(b as char);
            gap = false;
        }
    }
    out
}

/// goutils' `WrapCustom`.
fn wrap_custom(s: &str, wrap_length: i64, new_line: &str, wrap_long_words: bool) -> String {
    if s.is_empty() {
        return String::new();
    }
    let nl = if new_line.is_empty() { "\n" } else { new_line };
    let wl = wrap_length.max(1) as usize;
    let b = s.as_bytes();
    let len = b.len();
    let mut offset = 0usize;
    let mut out: Vec<u8> = Vec::new();
    while len - offset > wl {
        if b[offset] == b' ' {
            offset += 1;
            continue;
        }
        let end = wl + offset + 1;
        let space = b[offset..end].iter().rposition(|c| *c == b' ');
        if let Some(rel) = space {
            let at = rel + offset;
            out.extend_from_slice(&b[offset..at]);
            out.extend_from_slice(nl.as_bytes());
            offset = at + 1;
        } else if wrap_long_words {
            let end = wl + offset;
            out.extend_from_slice(&b[offset..end]);
            out.extend_from_slice(nl.as_bytes());
            offset += wl;
        } else {
            let end = wl + offset;
            match b[end..].iter().position(|c| *c == b' ') {
                None => {
                    out.extend_from_slice(&b[offset..]);
                    offset = len;
                }
                Some(rel) => {
                    let at = rel + end;
                    out.extend_from_slice(&b[offset..at]);
                    out.extend_from_slice(nl.as_bytes());
                    offset = at + 1;
                }
            }
        }
    }
    out.extend_from_slice(&b[offset..]);
    String::from_utf8_lossy(&out).into_owned()
}

// ---- xstrings: snake/kebab/pascal case ----------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Word {
    Invalid,
    Number,
    UpperCase,
    Alphabet,
    Connector,
    Punct,
    Other,
}

fn is_connector(c: char) -> bool {
    c == '-' || c == '_' || uc::is_space(c)
}

fn is_alphabet(c: char) -> bool {
    if !uc::is_letter(c) {
        return false;
    }
    let u = c as u32;
    if u < 0x3400 {
        return true;
    }
    !((0x4E00..=0x9FCC).contains(&u)
        || (0x3400..=0x4D85).contains(&u)
        || (0x20000..=0x2B81D).contains(&u))
}

/// xstrings' `nextWord`: the type of the next word, the word and the rest.
fn next_word(s: &str) -> (Word, &str, &str) {
    let mut chars = s.char_indices().peekable();
    let Some((_, first)) = chars.next() else {
        return (Word::Invalid, "", "");
    };
    let mut end = first.len_utf8();
    let take_while = |end: &mut usize, pred: &dyn Fn(char) -> bool| {
        for (i, c) in s[*end..].char_indices() {
            if !pred(c) {
                *end += i;
                return;
            }
        }
        *end = s.len();
    };
    let wt;
    if is_connector(first) {
        wt = Word::Connector;
        take_while(&mut end, &is_connector);
    } else if uc::is_punct(first) {
        wt = Word::Punct;
        take_while(&mut end, &uc::is_punct);
    } else if uc::is_upper(first) {
        wt = Word::UpperCase;
        if let Some(c) = s[end..].chars().next() {
            if uc::is_upper(c) {
                // A run of upper case letters; "HTTPStatus" splits into "HTTP" and "Status".
                let run_start = end;
                let mut prev_size = c.len_utf8();
                end += prev_size;
                let mut stopped_on = None;
                for c in s[end..].chars() {
                    if !uc::is_upper(c) {
                        stopped_on = Some(c);
                        break;
                    }
                    prev_size = c.len_utf8();
                    end += prev_size;
                }
                let _ = run_start;
                if stopped_on.is_some_and(is_alphabet) {
                    end -= prev_size;
                }
            } else if is_alphabet(c) {
                end += c.len_utf8();
                take_while(&mut end, &|c| is_alphabet(c) && !uc::is_upper(c));
            }
        }
    } else if is_alphabet(first) {
        wt = Word::Alphabet;
        take_while(&mut end, &|c| is_alphabet(c) && !uc::is_upper(c));
    } else if uc::is_number(first) {
        wt = Word::Number;
        take_while(&mut end, &uc::is_number);
    } else {
        wt = Word::Other;
        take_while(&mut end, &|c| {
            !(is_connector(c) || is_alphabet(c) || uc::is_number(c) || uc::is_punct(c))
        });
    }
    (wt, &s[..end], &s[end..])
}

fn to_lower_word(buf: &mut String, wt: Word, word: &str, connector: char) {
    if wt != Word::UpperCase && wt != Word::Connector {
        buf.push_str(word);
        return;
    }
    for c in word.chars() {
        if is_connector(c) {
            buf.push(connector);
        } else if uc::is_upper(c) {
            buf.push(uc::to_lower(c));
        } else {
            buf.push(c);
        }
    }
}

/// xstrings' `camelCaseToLowerCase` (`ToSnakeCase`, `ToKebabCase`).
pub fn camel_to_lower(s: &str, connector: char) -> String {
    if s.is_empty() {
        return String::new();
    }
    let mut buf = String::new();
    let (mut wt, mut word, mut remaining) = next_word(s);
    while !remaining.is_empty() {
        if wt != Word::Connector {
            to_lower_word(&mut buf, wt, word, connector);
        }
        let prev = wt;
        let last = word;
        (wt, word, remaining) = next_word(remaining);
        match prev {
            Word::Number => {
                while wt == Word::Alphabet || wt == Word::Number {
                    to_lower_word(&mut buf, wt, word, connector);
                    (wt, word, remaining) = next_word(remaining);
                }
                if wt != Word::Invalid && wt != Word::Punct && wt != Word::Connector {
                    buf.push(connector);
                }
            }
            Word::Connector => to_lower_word(&mut buf, prev, last, connector),
            Word::Punct => {}
            _ => {
                if wt != Word::Number {
                    if wt != Word::Connector && wt != Word::Punct {
                        buf.push(connector);
                    }
                    continue;
                }
                if remaining.is_empty() {
                    continue;
                }
                let last = word;
                (wt, word, remaining) = next_word(remaining);
                if wt != Word::Alphabet {
                    to_lower_word(&mut buf, Word::Number, last, connector);
                    if wt != Word::Connector && wt != Word::Punct {
                        buf.push(connector);
                    }
                    continue;
                }
                buf.push(connector);
                to_lower_word(&mut buf, Word::Number, last, connector);
                while wt == Word::Alphabet || wt == Word::Number {
                    to_lower_word(&mut buf, wt, word, connector);
                    (wt, word, remaining) = next_word(remaining);
                }
                if wt != Word::Invalid && wt != Word::Connector && wt != Word::Punct {
                    buf.push(connector);
                }
            }
        }
    }
    to_lower_word(&mut buf, wt, word, connector);
    buf
}

/// xstrings' `ToPascalCase` (sprig's `camelcase`).
pub fn to_pascal_case(s: &str) -> String {
    let mut chars = s.chars().peekable();
    let mut buf = String::new();
    let mut first_upper = false;
    let mut r0 = '\0';
    let mut found = false;
    for c in chars.by_ref() {
        if !is_connector(c) {
            first_upper = uc::is_upper(c);
            r0 = uc::to_upper(c);
            found = true;
            break;
        }
        buf.push(c);
    }
    if !found {
        return buf;
    }
    if chars.peek().is_none() {
        buf.push(r0);
        return buf;
    }
    for c in chars {
        let r1 = r0;
        r0 = c;
        if is_connector(r0) && is_connector(r1) {
            buf.push(r1);
            continue;
        }
        if is_connector(r1) {
            first_upper = uc::is_upper(r0);
            r0 = uc::to_upper(r0);
        } else {
            if first_upper {
                if uc::is_upper(r0) {
                    r0 = uc::to_lower(r0);
                } else {
                    first_upper = false;
                }
            }
            buf.push(r1);
        }
    }
    buf.push(r0);
    buf
}
