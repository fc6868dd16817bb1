//! The lexer of Go's `text/template/parse` (lex.go), state for state: the same items at the
//! same positions and lines, with the same trim-marker and comment rules and error texts.

use std::borrow::Cow;

use super::print;
use super::value::Value;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) enum ItemType {
    Error,
    Bool,
    Char,
    CharConstant,
    Complex,
    Assign,
    Declare,
    Eof,
    Field,
    Identifier,
    LeftDelim,
    LeftParen,
    Number,
    Pipe,
    RawString,
    RightDelim,
    RightParen,
    Space,
    String,
    Text,
    Variable,
    // Keywords appear after all the rest.
    Keyword,
    Block,
    Break,
    Continue,
    Dot,
    Define,
    Else,
    End,
    If,
    Nil,
    Range,
    Template,
    With,
}

#[derive(Clone, Debug)]
pub(crate) struct Item<'a> {
    pub typ: ItemType,
    pub pos: usize,
    /// A slice of the input (Go's item holds a string header into it; the parser's lookahead
    /// copies items freely), or an error message.
    pub val: Cow<'a, str>,
    pub line: usize,
}

impl std::fmt::Display for Item<'_> {
    /// Go's `item.String()`, used in "unexpected %s in %s".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.typ {
            ItemType::Eof => f.write_str("EOF"),
            ItemType::Error => f.write_str(&self.val),
            t if t > ItemType::Keyword => write!(f, "<{}>", self.val),
            _ => {
                let v = [Value::string(&*self.val)];
                if self.val.len() > 10 {
                    f.write_str(&print::sprintf("%.10q...", &v))
                } else {
                    f.write_str(&print::sprintf("%q", &v))
                }
            }
        }
    }
}

fn keyword(word: &str) -> Option<ItemType> {
    Some(match word {
        "." => ItemType::Dot,
        "block" => ItemType::Block,
        "break" => ItemType::Break,
        "continue" => ItemType::Continue,
        "define" => ItemType::Define,
        "else" => ItemType::Else,
        "end" => ItemType::End,
        "if" => ItemType::If,
        "range" => ItemType::Range,
        "nil" => ItemType::Nil,
        "template" => ItemType::Template,
        "with" => ItemType::With,
        _ => return None,
    })
}

const LEFT_DELIM: &str = "{{";
const RIGHT_DELIM: &str = "}}";
const LEFT_COMMENT: &str = "/*";
const RIGHT_COMMENT: &str = "*/";
const TRIM_MARKER_LEN: usize = 2;
/// Go's eof rune (-1): a code point no `char` can hold.
const EOF: char = '\u{10FFFF}';

#[derive(Clone, Copy)]
enum State {
    Text,
    LeftDelim,
    Comment,
    RightDelim,
    InsideAction,
    Space,
    Identifier,
    Field,
    Variable,
    Char,
    Number,
    Quote,
    RawQuote,
}

pub(crate) struct Lexer<'a> {
    input: &'a str,
    pos: usize,
    start: usize,
    at_eof: bool,
    paren_depth: i32,
    line: usize,
    start_line: usize,
    item: Option<Item<'a>>,
    pending_error: Option<String>,
    inside_action: bool,
    pub break_ok: bool,
    pub continue_ok: bool,
}

fn is_space(r: char) -> bool {
    r == ' ' || r == '\t' || r == '\r' || r == '\n'
}

/// Go's `unicode.IsLetter(r) || unicode.IsDigit(r)` (approximated by Rust's Unicode tables
/// outside ASCII) or an underscore.
pub(crate) fn is_alpha_numeric(r: char) -> bool {
    if r.is_ascii() {
        return r == '_' || r.is_ascii_alphanumeric();
    }
    r != EOF && (r.is_alphabetic() || r.is_numeric())
}

fn has_left_trim_marker(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && b[0] == b'-' && is_space(b[1] as char)
}

fn has_right_trim_marker(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && is_space(b[0] as char) && b[1] == b'-'
}

const SPACE_CHARS: &[char] = &[' ', '\t', '\r', '\n'];

fn right_trim_length(s: &str) -> usize {
    s.len() - s.trim_end_matches(SPACE_CHARS).len()
}

fn left_trim_length(s: &str) -> usize {
    s.len() - s.trim_start_matches(SPACE_CHARS).len()
}

fn count_newlines(s: &str) -> usize {
    memchr::memchr_iter(b'\n', s.as_bytes()).count()
}

/// `strings.Index(s, "{{")`: a scan for `{` beats setting up a substring search per text item.
fn find_left_delim(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut from = 0;
    while let Some(i) = memchr::memchr(b'{', &b[from..]) {
        let at = from + i;
        if b.get(at + 1) == Some(&b'{') {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

fn fmt_u(r: char) -> String {
    print::sprintf("%#U", &[Value::Int(r as i64)])
}

impl<'a> Lexer<'a> {
    pub fn new(input: &'a str) -> Self {
        Lexer {
            input,
            pos: 0,
            start: 0,
            at_eof: false,
            paren_depth: 0,
            line: 1,
            start_line: 1,
            item: None,
            pending_error: None,
            inside_action: false,
            break_ok: true,
            continue_ok: true,
        }
    }

    fn next(&mut self) -> char {
        if self.pos >= self.input.len() {
            self.at_eof = true;
            return EOF;
        }
        let r = self.input[self.pos..].chars().next().unwrap_or(EOF);
        self.pos += r.len_utf8();
        // The input's own U+10FFFF classifies like its neighbour, leaving EOF unambiguous.
        let r = if r == EOF { '\u{10FFFE}' } else { r };
        if r == '\n' {
            self.line += 1;
        }
        r
    }

    fn peek(&mut self) -> char {
        let r = self.next();
        self.backup();
        r
    }

    fn backup(&mut self) {
        if !self.at_eof && self.pos > 0 {
            let r = self.input[..self.pos].chars().next_back().unwrap_or(EOF);
            self.pos -= r.len_utf8();
            if r == '\n' {
                self.line -= 1;
            }
        }
    }

    fn this_item(&mut self, t: ItemType) -> Item<'a> {
        let i = Item {
            typ: t,
            pos: self.start,
            val: Cow::Borrowed(&self.input[self.start..self.pos]),
            line: self.start_line,
        };
        self.start = self.pos;
        self.start_line = self.line;
        i
    }

    fn emit(&mut self, t: ItemType) -> Option<State> {
        let i = self.this_item(t);
        self.item = Some(i);
        None
    }

    fn emit_item(&mut self, i: Item<'a>) -> Option<State> {
        self.item = Some(i);
        None
    }

    fn ignore(&mut self) {
        self.line += count_newlines(&self.input[self.start..self.pos]);
        self.start = self.pos;
        self.start_line = self.line;
    }

    fn accept(&mut self, valid: &str) -> bool {
        let r = self.next();
        if r != EOF && valid.contains(r) {
            return true;
        }
        self.backup();
        false
    }

    fn accept_run(&mut self, valid: &str) {
        loop {
            let r = self.next();
            if r == EOF || !valid.contains(r) {
                break;
            }
        }
        self.backup();
    }

    fn errorf(&mut self, msg: String) -> Option<State> {
        self.item = Some(Item {
            typ: ItemType::Error,
            pos: self.start,
            val: Cow::Owned(msg),
            line: self.start_line,
        });
        self.start = 0;
        self.pos = 0;
        self.input = &self.input[..0];
        None
    }

    pub fn next_item(&mut self) -> Item<'a> {
        self.item = None;
        if let Some(msg) = self.pending_error.take() {
            self.errorf(msg);
            return self.item.take().unwrap_or_else(|| unreachable!());
        }
        let mut state = if self.inside_action {
            State::InsideAction
        } else {
            State::Text
        };
        // The EOF item when no state emitted one (its text borrowed: nothing allocated).
        let (eof_pos, eof_line) = (self.pos, self.start_line);
        loop {
            match self.run(state) {
                Some(s) => state = s,
                None => {
                    return self.item.take().unwrap_or(Item {
                        typ: ItemType::Eof,
                        pos: eof_pos,
                        val: Cow::Borrowed("EOF"),
                        line: eof_line,
                    });
                }
            }
        }
    }

    fn run(&mut self, state: State) -> Option<State> {
        match state {
            State::Text => self.lex_text(),
            State::LeftDelim => self.lex_left_delim(),
            State::Comment => self.lex_comment(),
            State::RightDelim => self.lex_right_delim(),
            State::InsideAction => self.lex_inside_action(),
            State::Space => self.lex_space(),
            State::Identifier => self.lex_identifier(),
            State::Field => self.lex_field_or_variable(ItemType::Field),
            State::Variable => self.lex_variable(),
            State::Char => self.lex_char(),
            State::Number => self.lex_number(),
            State::Quote => self.lex_quote(),
            State::RawQuote => self.lex_raw_quote(),
        }
    }

    fn lex_text(&mut self) -> Option<State> {
        if let Some(x) = find_left_delim(&self.input[self.pos..]) {
            if x > 0 {
                self.pos += x;
                let mut trim_length = 0;
                let delim_end = self.pos + LEFT_DELIM.len();
                if has_left_trim_marker(&self.input[delim_end..]) {
                    trim_length = right_trim_length(&self.input[self.start..self.pos]);
                }
                self.pos -= trim_length;
                self.line += count_newlines(&self.input[self.start..self.pos]);
                let i = self.this_item(ItemType::Text);
                self.pos += trim_length;
                self.ignore();
                if !i.val.is_empty() {
                    return self.emit_item(i);
                }
            }
            return Some(State::LeftDelim);
        }
        self.pos = self.input.len();
        if self.pos > self.start {
            self.line += count_newlines(&self.input[self.start..self.pos]);
            return self.emit(ItemType::Text);
        }
        self.emit(ItemType::Eof)
    }

    fn at_right_delim(&self) -> (bool, bool) {
        let rest = &self.input[self.pos..];
        if has_right_trim_marker(rest) && rest[TRIM_MARKER_LEN..].starts_with(RIGHT_DELIM) {
            return (true, true);
        }
        if rest.starts_with(RIGHT_DELIM) {
            return (true, false);
        }
        (false, false)
    }

    fn lex_left_delim(&mut self) -> Option<State> {
        self.pos += LEFT_DELIM.len();
        let trim_space = has_left_trim_marker(&self.input[self.pos..]);
        let after_marker = if trim_space { TRIM_MARKER_LEN } else { 0 };
        if self.input[self.pos + after_marker..].starts_with(LEFT_COMMENT) {
            self.pos += after_marker;
            self.ignore();
            return Some(State::Comment);
        }
        let i = self.this_item(ItemType::LeftDelim);
        self.inside_action = true;
        self.pos += after_marker;
        self.ignore();
        self.paren_depth = 0;
        self.emit_item(i)
    }

    fn lex_comment(&mut self) -> Option<State> {
        self.pos += LEFT_COMMENT.len();
        let Some(x) = self.input[self.pos..].find(RIGHT_COMMENT) else {
            return self.errorf("unclosed comment".into());
        };
        self.pos += x + RIGHT_COMMENT.len();
        let (delim, trim_space) = self.at_right_delim();
        if !delim {
            return self.errorf("comment ends before closing delimiter".into());
        }
        self.line += count_newlines(&self.input[self.start..self.pos]);
        let _ = self.this_item(ItemType::Text); // the comment item, not emitted
        if trim_space {
            self.pos += TRIM_MARKER_LEN;
        }
        self.pos += RIGHT_DELIM.len();
        if trim_space {
            self.pos += left_trim_length(&self.input[self.pos..]);
        }
        self.ignore();
        Some(State::Text)
    }

    fn lex_right_delim(&mut self) -> Option<State> {
        let (_, trim_space) = self.at_right_delim();
        if trim_space {
            self.pos += TRIM_MARKER_LEN;
            self.ignore();
        }
        self.pos += RIGHT_DELIM.len();
        let i = self.this_item(ItemType::RightDelim);
        if trim_space {
            self.pos += left_trim_length(&self.input[self.pos..]);
            self.ignore();
        }
        self.inside_action = false;
        self.emit_item(i)
    }

    fn lex_inside_action(&mut self) -> Option<State> {
        let (delim, _) = self.at_right_delim();
        if delim {
            if self.paren_depth == 0 {
                return Some(State::RightDelim);
            }
            return self.errorf("unclosed left paren".into());
        }
        let r = self.next();
        match r {
            EOF => self.errorf("unclosed action".into()),
            r if is_space(r) => {
                self.backup();
                Some(State::Space)
            }
            '=' => self.emit(ItemType::Assign),
            ':' => {
                if self.next() != '=' {
                    return self.errorf("expected :=".into());
                }
                self.emit(ItemType::Declare)
            }
            '|' => self.emit(ItemType::Pipe),
            '"' => Some(State::Quote),
            '`' => Some(State::RawQuote),
            '$' => Some(State::Variable),
            '\'' => Some(State::Char),
            '.' => {
                if self.pos < self.input.len() {
                    let c = self.input.as_bytes()[self.pos];
                    if !c.is_ascii_digit() {
                        return Some(State::Field);
                    }
                }
                self.backup();
                Some(State::Number)
            }
            '+' | '-' | '0'..='9' => {
                self.backup();
                Some(State::Number)
            }
            r if is_alpha_numeric(r) => {
                self.backup();
                Some(State::Identifier)
            }
            '(' => {
                self.paren_depth += 1;
                self.emit(ItemType::LeftParen)
            }
            ')' => {
                // Go 1.19 emits the paren, then reports the error as the next item.
                self.paren_depth -= 1;
                if self.paren_depth < 0 {
                    self.pending_error = Some(format!("unexpected right paren {}", fmt_u(r)));
                }
                self.emit(ItemType::RightParen)
            }
            r if r.is_ascii() && (' '..='~').contains(&r) => self.emit(ItemType::Char),
            r => {
                let msg = format!("unrecognized character in action: {}", fmt_u(r));
                self.errorf(msg)
            }
        }
    }

    fn lex_space(&mut self) -> Option<State> {
        let mut num_spaces = 0;
        loop {
            let r = self.peek();
            if !is_space(r) {
                break;
            }
            self.next();
            num_spaces += 1;
        }
        let rest = &self.input[self.pos - 1..];
        if has_right_trim_marker(rest) && rest[TRIM_MARKER_LEN..].starts_with(RIGHT_DELIM) {
            self.backup();
            if num_spaces == 1 {
                return Some(State::RightDelim);
            }
        }
        self.emit(ItemType::Space)
    }

    fn lex_identifier(&mut self) -> Option<State> {
        loop {
            let r = self.next();
            if is_alpha_numeric(r) {
                continue;
            }
            self.backup();
            let word = &self.input[self.start..self.pos];
            if !self.at_terminator() {
                return self.errorf(format!("bad character {}", fmt_u(r)));
            }
            if let Some(k) = keyword(word) {
                if (k == ItemType::Break && !self.break_ok)
                    || (k == ItemType::Continue && !self.continue_ok)
                {
                    return self.emit(ItemType::Identifier);
                }
                return self.emit(k);
            }
            if word.starts_with('.') {
                return self.emit(ItemType::Field);
            }
            if word == "true" || word == "false" {
                return self.emit(ItemType::Bool);
            }
            return self.emit(ItemType::Identifier);
        }
    }

    fn lex_variable(&mut self) -> Option<State> {
        if self.at_terminator() {
            return self.emit(ItemType::Variable);
        }
        self.lex_field_or_variable(ItemType::Variable)
    }

    fn lex_field_or_variable(&mut self, typ: ItemType) -> Option<State> {
        if self.at_terminator() {
            if typ == ItemType::Variable {
                return self.emit(ItemType::Variable);
            }
            return self.emit(ItemType::Dot);
        }
        let mut r;
        loop {
            r = self.next();
            if !is_alpha_numeric(r) {
                self.backup();
                break;
            }
        }
        if !self.at_terminator() {
            return self.errorf(format!("bad character {}", fmt_u(r)));
        }
        self.emit(typ)
    }

    /// Go's atTerminator: space, eof, `.,|:()` or the right delimiter.
    fn at_terminator(&mut self) -> bool {
        let r = self.peek();
        if is_space(r) {
            return true;
        }
        matches!(r, EOF | '.' | ',' | '|' | ':' | ')' | '(')
            || self.input[self.pos..].starts_with(RIGHT_DELIM)
    }

    fn lex_char(&mut self) -> Option<State> {
        loop {
            match self.next() {
                '\\' => {
                    let r = self.next();
                    if r != EOF && r != '\n' {
                        continue;
                    }
                    return self.errorf("unterminated character constant".into());
                }
                EOF | '\n' => return self.errorf("unterminated character constant".into()),
                '\'' => break,
                _ => {}
            }
        }
        self.emit(ItemType::CharConstant)
    }

    fn lex_number(&mut self) -> Option<State> {
        if !self.scan_number() {
            let msg = format!(
                "bad number syntax: {}",
                print::quote(&self.input[self.start..self.pos])
            );
            return self.errorf(msg);
        }
        let sign = self.peek();
        if sign == '+' || sign == '-' {
            if !self.scan_number() || !self.input[..self.pos].ends_with('i') {
                let msg = format!(
                    "bad number syntax: {}",
                    print::quote(&self.input[self.start..self.pos])
                );
                return self.errorf(msg);
            }
            return self.emit(ItemType::Complex);
        }
        self.emit(ItemType::Number)
    }

    fn scan_number(&mut self) -> bool {
        self.accept("+-");
        let mut digits = "0123456789_";
        if self.accept("0") {
            if self.accept("xX") {
                digits = "0123456789abcdefABCDEF_";
            } else if self.accept("oO") {
                digits = "01234567_";
            } else if self.accept("bB") {
                digits = "01_";
            }
        }
        self.accept_run(digits);
        if self.accept(".") {
            self.accept_run(digits);
        }
        if digits.len() == 10 + 1 && self.accept("eE") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        if digits.len() == 16 + 6 + 1 && self.accept("pP") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        self.accept("i");
        if is_alpha_numeric(self.peek()) {
            self.next();
            return false;
        }
        true
    }

    fn lex_quote(&mut self) -> Option<State> {
        loop {
            match self.next() {
                '\\' => {
                    let r = self.next();
                    if r != EOF && r != '\n' {
                        continue;
                    }
                    return self.errorf("unterminated quoted string".into());
                }
                EOF | '\n' => return self.errorf("unterminated quoted string".into()),
                '"' => break,
                _ => {}
            }
        }
        self.emit(ItemType::String)
    }

    fn lex_raw_quote(&mut self) -> Option<State> {
        loop {
            match self.next() {
                EOF => return self.errorf("unterminated raw quoted string".into()),
                '`' => break,
                _ => {}
            }
        }
        self.emit(ItemType::RawString)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(s: &str) -> Vec<(ItemType, String)> {
        let mut l = Lexer::new(s);
        let mut out = Vec::new();
        loop {
            let i = l.next_item();
            let done = matches!(i.typ, ItemType::Eof | ItemType::Error);
            out.push((i.typ, i.val.to_string()));
            if done {
                break;
            }
        }
        out
    }

    #[test]
    fn lexes_actions_and_trim_markers() {
        use ItemType::*;
        let got = items("a  {{- .x.y | f 1 -}}  b");
        let want = vec![
            (Text, "a"),
            (LeftDelim, "{{"),
            (Field, ".x"),
            (Field, ".y"),
            (Space, " "),
            (Pipe, "|"),
            (Space, " "),
            (Identifier, "f"),
            (Space, " "),
            (Number, "1"),
            (RightDelim, "}}"),
            (Text, "b"),
            (Eof, ""),
        ];
        let want: Vec<_> = want.into_iter().map(|(t, v)| (t, v.to_string())).collect();
        assert_eq!(got, want);
        assert_eq!(items("{{-3}}")[1], (Number, "-3".to_string()));
        assert_eq!(
            items("x {{- /* c */ -}} y"),
            vec![(Text, "x".into()), (Text, "y".into()), (Eof, "".into())]
        );
    }

    #[test]
    fn lexer_errors() {
        assert_eq!(items("{{ .x").last().unwrap().1, "unclosed action");
        assert_eq!(
            items("{{ 3k }}").last().unwrap().1,
            "bad number syntax: \"3k\""
        );
        assert_eq!(
            items("{{ .x+ }}").last().unwrap().1,
            "bad character U+002B '+'"
        );
        assert_eq!(
            items("{{ ) }}").last().unwrap().1,
            "unexpected right paren U+0029 ')'"
        );
        assert_eq!(items("{{ ( }}").last().unwrap().1, "unclosed left paren");
        assert_eq!(
            items("{{ \u{1} }}").last().unwrap().1,
            "unrecognized character in action: U+0001"
        );
        assert_eq!(items("{{/* x").last().unwrap().1, "unclosed comment");
    }
}
