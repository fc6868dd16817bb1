//! yaml.v2's scalar analysis, shared by the Go template `toYaml` and the Spiff printer.

/// What yaml.v2's emitter (`yaml_emitter_analyze_scalar`) finds out about a scalar: which
/// styles may write it.
pub(crate) struct ScalarAnalysis {
    pub multiline: bool,
    pub flow_plain: bool,
    pub block_plain: bool,
    pub single_quoted: bool,
    pub block: bool,
}

pub(crate) fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

pub(crate) fn is_printable(c: char) -> bool {
    let u = c as u32;
    u == 0x0A
        || (0x20..=0x7E).contains(&u)
        || (0xA0..=0xD7FF).contains(&u)
        || (0xE000..=0xFFFD).contains(&u) && u != 0xFEFF
        || u >= 0x10000
        || u == 0x85
}

/// `ascii_only`: treat every non-ASCII character as special (spiff's printer escapes them), as
/// opposed to yaml.v2, which writes printable Unicode as is.
pub(crate) fn analyze(value: &str, ascii_only: bool) -> ScalarAnalysis {
    if value.is_empty() {
        return ScalarAnalysis {
            multiline: false,
            flow_plain: false,
            block_plain: true,
            single_quoted: true,
            block: false,
        };
    }
    let (mut block_ind, mut flow_ind) = (false, false);
    if value.starts_with("---") || value.starts_with("...") {
        block_ind = true;
        flow_ind = true;
    }
    let (mut line_breaks, mut special) = (false, false);
    let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
        (false, false, false, false);
    let (mut break_space, mut space_break) = (false, false);
    let mut preceded_by_ws = true;
    let (mut prev_space, mut prev_break) = (false, false);
    let mut chars = value.chars().peekable();
    let mut first = true;
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        let last = next.is_none();
        let followed_by_ws = next.is_none_or(|n| n == ' ' || n == '\t' || is_break(n));
        if first {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => {
                    flow_ind = true;
                    block_ind = true;
                }
                '?' | ':' => {
                    flow_ind = true;
                    if followed_by_ws {
                        block_ind = true;
                    }
                }
                '-' if followed_by_ws => {
                    flow_ind = true;
                    block_ind = true;
                }
                _ => {}
            }
        } else {
            match c {
                ',' | '?' | '[' | ']' | '{' | '}' => flow_ind = true,
                ':' => {
                    flow_ind = true;
                    if followed_by_ws {
                        block_ind = true;
                    }
                }
                '#' if preceded_by_ws => {
                    flow_ind = true;
                    block_ind = true;
                }
                _ => {}
            }
        }
        if !is_printable(c) || (ascii_only && !c.is_ascii()) {
            special = true;
        }
        if c == ' ' {
            if first {
                leading_space = true;
            }
            if last {
                trailing_space = true;
            }
            if prev_break {
                break_space = true;
            }
            prev_space = true;
            prev_break = false;
        } else if is_break(c) {
            line_breaks = true;
            if first {
                leading_break = true;
            }
            if last {
                trailing_break = true;
            }
            if prev_space {
                space_break = true;
            }
            prev_space = false;
            prev_break = true;
        } else {
            prev_space = false;
            prev_break = false;
        }
        preceded_by_ws = c == ' ' || c == '\t' || is_break(c) || c == '\0';
        first = false;
    }
    let mut a = ScalarAnalysis {
        multiline: line_breaks,
        flow_plain: true,
        block_plain: true,
        single_quoted: true,
        block: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.flow_plain = false;
        a.block_plain = false;
    }
    if trailing_space {
        a.block = false;
    }
    if break_space {
        a.flow_plain = false;
        a.block_plain = false;
        a.single_quoted = false;
    }
    if space_break || special {
        a.flow_plain = false;
        a.block_plain = false;
        a.single_quoted = false;
        a.block = false;
    }
    if line_breaks {
        a.flow_plain = false;
        a.block_plain = false;
    }
    if flow_ind {
        a.flow_plain = false;
    }
    if block_ind {
        a.block_plain = false;
    }
    a
}
