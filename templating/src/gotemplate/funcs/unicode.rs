//! Go's `unicode` predicates and simple case mappings, as close as Rust's std allows.

/// `unicode.ToUpper`: the simple (one-to-one) mapping.
pub fn to_upper(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_uppercase();
    }
    let mut it = c.to_uppercase();
    match (it.next(), it.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

/// `unicode.ToLower`: the simple mapping.
pub fn to_lower(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_lowercase();
    }
    if c == '\u{130}' {
        return 'i';
    }
    let mut it = c.to_lowercase();
    match (it.next(), it.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

/// `unicode.ToTitle`.
pub fn to_title(c: char) -> char {
    match c {
        'ǆ' | 'ǅ' | 'Ǆ' => 'ǅ',
        'ǉ' | 'ǈ' | 'Ǉ' => 'ǈ',
        'ǌ' | 'ǋ' | 'Ǌ' => 'ǋ',
        'ǳ' | 'ǲ' | 'Ǳ' => 'ǲ',
        c => to_upper(c),
    }
}

pub fn is_title(c: char) -> bool {
    matches!(c, 'ǅ' | 'ǈ' | 'ǋ' | 'ǲ')
        || ('\u{1f88}'..='\u{1faf}').contains(&c) && {
            let low = c as u32 & 0xF;
            low >= 8
        }
        || matches!(c, '\u{1fbc}' | '\u{1fcc}' | '\u{1ffc}')
}

pub fn is_upper(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_uppercase();
    }
    c.is_uppercase() && !is_title(c)
}

pub fn is_lower(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_lowercase();
    }
    c.is_lowercase()
}

/// `unicode.IsSpace`.
pub fn is_space(c: char) -> bool {
    c.is_whitespace()
}

pub fn is_letter(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphabetic();
    }
    c.is_alphabetic() && !c.is_numeric()
}

pub fn is_number(c: char) -> bool {
    c.is_numeric()
}

pub fn is_digit(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_digit();
    }
    c.is_numeric()
}

/// `unicode.IsPunct` (category P). Exact for ASCII and Latin-1, approximate beyond.
pub fn is_punct(c: char) -> bool {
    match c {
        '!' | '"' | '#' | '%' | '&' | '\'' | '(' | ')' | '*' | ',' | '-' | '.' | '/' | ':'
        | ';' | '?' | '@' | '[' | '\\' | ']' | '_' | '{' | '}' => true,
        c if c.is_ascii() => false,
        '\u{a1}' | '\u{a7}' | '\u{ab}' | '\u{b6}' | '\u{b7}' | '\u{bb}' | '\u{bf}' => true,
        c => {
            let u = c as u32;
            (0x2010..=0x2027).contains(&u)
                || (0x2030..=0x205E).contains(&u) && !matches!(u, 0x2044 | 0x2052)
                || (0x3001..=0x3003).contains(&u)
                || (0x3008..=0x3011).contains(&u)
                || (0xFF01..=0xFF0F).contains(&u) && !matches!(u, 0xFF04 | 0xFF0B)
        }
    }
}
