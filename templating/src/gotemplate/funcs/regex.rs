//! sprig's regex functions with Go's RE2 syntax. The `regex` crate implements the same
//! syntax; Go's ASCII-only `\d`, `\w`, `\s`, `\b` and `\Q…\E` are translated first.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use regex::{Regex, RegexBuilder};

use super::super::function::{Arity, FuncError, FuncMap};
use super::super::value::Value;
use super::args::{self, s};
use super::strings::strings_list;

/// Rewrites Go regexp syntax into the `regex` crate's.
fn translate(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(e) = chars.next() else {
                    out.push('\\');
                    break;
                };
                let (inner, outer) = match e {
                    'd' => ("0-9", "[0-9]"),
                    'D' => ("", "[^0-9]"),
                    'w' => ("0-9A-Za-z_", "[0-9A-Za-z_]"),
                    'W' => ("", "[^0-9A-Za-z_]"),
                    's' => ("\\t\\n\\f\\r ", "[\\t\\n\\f\\r ]"),
                    'S' => ("", "[^\\t\\n\\f\\r ]"),
                    'b' if !in_class => ("", "(?-u:\\b)"),
                    'B' if !in_class => ("", "(?-u:\\B)"),
                    'Q' => {
                        let mut lit = String::new();
                        loop {
                            match chars.next() {
                                None => break,
                                Some('\\') if chars.peek() == Some(&'E') => {
                                    chars.next();
                                    break;
                                }
                                Some(x) => lit.push(x),
                            }
                        }
                        out.push_str(&quote_meta(&lit));
                        continue;
                    }
                    _ => {
                        out.push('\\');
                        out.push(e);
                        continue;
                    }
                };
                if in_class {
                    if inner.is_empty() {
                        // Negated Perl classes inside a class: use the ASCII class syntax.
                        out.push_str(match e {
                            'D' => "[^0-9]",
                            'W' => "[^0-9A-Za-z_]",
                            _ => "[^\\t\\n\\f\\r ]",
                        });
                    } else {
                        out.push_str(inner);
                    }
                } else {
                    out.push_str(outer);
                }
            }
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                if chars.peek() == Some(&'^') {
                    out.push('^');
                    chars.next();
                }
                // A ']' right after '[' or '[^' is a literal.
                if chars.peek() == Some(&']') {
                    out.push_str("\\]");
                    chars.next();
                }
                continue;
            }
            '[' if in_class => {
                // POSIX class `[:alpha:]` or a literal '['.
                if chars.peek() == Some(&':') {
                    out.push('[');
                    for x in chars.by_ref() {
                        out.push(x);
                        if x == ']' {
                            break;
                        }
                    }
                } else {
                    out.push_str("\\[");
                }
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            '&' | '~' if in_class => {
                // The regex crate treats `&&` and `~~` as set operations.
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// Go's `regexp.QuoteMeta`.
pub fn quote_meta(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Go's `syntax.Error` message for a pattern the `regex` crate rejects, as close as the crate's
/// error kinds allow.
fn go_error(pattern: &str, err: &regex::Error) -> String {
    let text = err.to_string();
    let (code, expr) = if text.contains("unclosed group") {
        ("missing closing )", pattern.to_string())
    } else if text.contains("unopened group") {
        ("unexpected )", pattern.to_string())
    } else if text.contains("unclosed character class") {
        let at = pattern.rfind('[').unwrap_or(0);
        ("missing closing ]", pattern[at..].to_string())
    } else if text.contains("repetition operator missing expression") {
        let at = pattern.find(['*', '+', '?', '{']).unwrap_or(0);
        (
            "missing argument to repetition operator",
            pattern[at..at + 1].to_string(),
        )
    } else if text.contains("unrecognized escape") || text.contains("escape sequence") {
        let at = pattern.find('\\').unwrap_or(0);
        let end = (at + 2).min(pattern.len());
        ("invalid escape sequence", pattern[at..end].to_string())
    } else if text.contains("incomplete escape") {
        ("trailing backslash at end of expression", String::new())
    } else if text.contains("invalid range") || text.contains("class range") {
        ("invalid character class range", pattern.to_string())
    } else if text.contains("repetition") {
        let expr = pattern
            .find('{')
            .and_then(|st| {
                pattern[st..]
                    .find('}')
                    .map(|en| pattern[st..st + en + 1].to_string())
            })
            .unwrap_or_else(|| pattern.to_string());
        ("invalid repeat count", expr)
    } else if text.contains("group name") || text.contains("capture group") {
        ("invalid named capture", pattern.to_string())
    } else if text.contains("flag") || text.contains("look-around") {
        ("invalid or unsupported Perl syntax", pattern.to_string())
    } else {
        ("invalid regular expression", pattern.to_string())
    };
    format!("error parsing regexp: {code}: `{expr}`")
}

/// Compiles a Go pattern, from this thread's cache when it was compiled before: charts call
/// `regexReplaceAll` and friends with the same constant pattern in loops, and compiling costs
/// far more than matching (it was a tenth of `render chart`'s time over the Helm corpus).
pub fn compile(pattern: &str) -> Result<Rc<Regex>, String> {
    if let Some(re) = CACHE.with(|c| c.borrow().get(pattern).cloned()) {
        return Ok(re);
    }
    let source = translate(pattern);
    // Only small programs are kept, so the cache holds at most CACHED × (CACHED_PROGRAM_BYTES
    // + its search cache) however hostile the templates; bigger ones are compiled per call.
    let small = RegexBuilder::new(&source)
        .size_limit(CACHED_PROGRAM_BYTES)
        .dfa_size_limit(CACHED_PROGRAM_BYTES)
        .build();
    match small {
        Ok(re) => {
            let re = Rc::new(re);
            CACHE.with(|c| {
                let mut c = c.borrow_mut();
                if c.len() >= CACHED {
                    c.clear();
                }
                c.insert(pattern.to_string(), Rc::clone(&re));
            });
            Ok(re)
        }
        Err(regex::Error::CompiledTooBig(_)) => Regex::new(&source)
            .map(Rc::new)
            .map_err(|e| go_error(pattern, &e)),
        Err(e) => Err(go_error(pattern, &e)),
    }
}

/// Patterns kept per thread (the cache starts over when full).
const CACHED: usize = 128;
/// The compiled size (and lazy DFA cache) below which a pattern is kept.
const CACHED_PROGRAM_BYTES: usize = 256 << 10;

thread_local! {
    static CACHE: RefCell<HashMap<String, Rc<Regex>>> = RefCell::new(HashMap::new());
}

/// `regexp.MustCompile`'s panic message.
fn must_compile(pattern: &str) -> Result<Rc<Regex>, FuncError> {
    compile(pattern)
        .map_err(|e| FuncError::new(format!("regexp: Compile({}): {e}", go_backquote(pattern))))
}

/// `regexp.quote`: a raw-string literal when possible, else strconv.Quote.
fn go_backquote(s: &str) -> String {
    if !s.contains('`') && s.chars().all(|c| c == '\t' || crate::gofmt::is_print(c)) {
        format!("`{s}`")
    } else {
        crate::gofmt::quote(s)
    }
}

/// Go's `FindAllStringIndex(s, n)`: successive non-overlapping matches, where an empty match
/// right after the previous match is skipped.
fn find_all(re: &Regex, text: &str, n: i64) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    let mut prev_end: Option<usize> = None;
    while pos <= text.len() && (n < 0 || (out.len() as i64) < n) {
        let Some(m) = re.find_at(text, pos) else {
            break;
        };
        let (start, end) = (m.start(), m.end());
        let mut accept = true;
        if start == end && prev_end == Some(start) {
            accept = false;
        }
        if end == start {
            // Advance past one rune.
            pos = match text[end..].chars().next() {
                Some(c) => end + c.len_utf8(),
                None => end + 1,
            };
        } else {
            pos = end;
        }
        if accept {
            out.push((start, end));
            prev_end = Some(end);
        }
    }
    out
}

fn split(re: &Regex, text: &str, n: i64, pattern: &str) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if !pattern.is_empty() && text.is_empty() {
        return vec![String::new()];
    }
    let matches = find_all(re, text, n);
    let mut out = Vec::new();
    let (mut beg, mut end) = (0usize, 0usize);
    for (ms, me) in matches {
        if n > 0 && out.len() as i64 == n - 1 {
            break;
        }
        end = ms;
        if me != 0 {
            out.push(text[beg..end].to_string());
        }
        beg = me;
    }
    if end != text.len() {
        out.push(text[beg..].to_string());
    }
    out
}

/// `ReplaceAllString` / `ReplaceAllLiteralString`, within the render budget: an expansion
/// (`$0$0...`) is at most the replacement plus one match per `$`, checked before it is added.
fn expand_replace(
    re: &Regex,
    text: &str,
    repl: &str,
    literal: bool,
) -> Result<String, crate::budget::BudgetExceeded> {
    let limit = crate::budget::current().max_value_bytes;
    let dollars = if literal {
        0
    } else {
        repl.matches('$').count()
    };
    let mut out = String::new();
    let mut last = 0;
    for caps in re.captures_iter(text) {
        let Some(m) = caps.get(0) else { continue };
        let bound = out.len() + (m.start() - last) + repl.len() + dollars * m.len();
        if bound > limit {
            crate::budget::check_bytes(bound)?;
        }
        out.push_str(&text[last..m.start()]);
        if literal {
            out.push_str(repl);
        } else {
            caps.expand(repl, &mut out);
        }
        last = m.end();
    }
    out.push_str(&text[last..]);
    crate::budget::check_bytes(out.len())?;
    Ok(out)
}

pub fn register(m: &mut FuncMap) {
    m.insert("regexMatch", Arity::Exact(2), |_, a| {
        let (p, text) = (args::string(&a[0])?, args::string(&a[1])?);
        Ok(Value::Bool(compile(&p).is_ok_and(|re| re.is_match(&text))))
    });
    m.insert("mustRegexMatch", Arity::Exact(2), |_, a| {
        let (p, text) = (args::string(&a[0])?, args::string(&a[1])?);
        let re = compile(&p).map_err(FuncError::new)?;
        Ok(Value::Bool(re.is_match(&text)))
    });
    for (name, must) in [("regexFindAll", false), ("mustRegexFindAll", true)] {
        m.insert(name, Arity::Exact(3), move |_, a| {
            let (p, text, n) = (
                args::string(&a[0])?,
                args::string(&a[1])?,
                args::int(&a[2])?,
            );
            let re = if must {
                compile(&p).map_err(FuncError::new)?
            } else {
                must_compile(&p)?
            };
            let found = find_all(&re, &text, n)
                .into_iter()
                .map(|(a, b)| text[a..b].to_string())
                .collect();
            Ok(strings_list(found))
        });
    }
    for (name, must) in [("regexFind", false), ("mustRegexFind", true)] {
        m.insert(name, Arity::Exact(2), move |_, a| {
            let (p, text) = (args::string(&a[0])?, args::string(&a[1])?);
            let re = if must {
                compile(&p).map_err(FuncError::new)?
            } else {
                must_compile(&p)?
            };
            Ok(s(re.find(&text).map(|m| m.as_str()).unwrap_or("")))
        });
    }
    for (name, must, literal) in [
        ("regexReplaceAll", false, false),
        ("mustRegexReplaceAll", true, false),
        ("regexReplaceAllLiteral", false, true),
        ("mustRegexReplaceAllLiteral", true, true),
    ] {
        m.insert(name, Arity::Exact(3), move |_, a| {
            let (p, text, repl) = (
                args::string(&a[0])?,
                args::string(&a[1])?,
                args::string(&a[2])?,
            );
            let re = if must {
                compile(&p).map_err(FuncError::new)?
            } else {
                must_compile(&p)?
            };
            Ok(s(expand_replace(&re, &text, &repl, literal)?))
        });
    }
    for (name, must) in [("regexSplit", false), ("mustRegexSplit", true)] {
        m.insert(name, Arity::Exact(3), move |_, a| {
            let (p, text, n) = (
                args::string(&a[0])?,
                args::string(&a[1])?,
                args::int(&a[2])?,
            );
            let re = if must {
                compile(&p).map_err(FuncError::new)?
            } else {
                must_compile(&p)?
            };
            Ok(strings_list(split(&re, &text, n, &p)))
        });
    }
    m.insert("regexQuoteMeta", Arity::Exact(1), |_, a| {
        Ok(s(quote_meta(&args::string(&a[0])?)))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_is_compiled_once_per_thread_and_errors_are_not_kept() {
        let first = compile(r"[^a-z0-9\d]+").unwrap();
        let again = compile(r"[^a-z0-9\d]+").unwrap();
        assert!(Rc::ptr_eq(&first, &again));
        assert!(again.is_match("A-7"));
        let err = compile("a(b").unwrap_err();
        assert_eq!(err, compile("a(b").unwrap_err());
        assert!(err.contains("missing closing )"), "{err}");
    }

    #[test]
    fn a_big_program_still_compiles_but_is_not_kept() {
        // About a megabyte of program: over the cache's limit, within regex's own.
        let big = "(?:[a-z]{100}){40}";
        let first = compile(big).unwrap();
        let again = compile(big).unwrap();
        assert!(!Rc::ptr_eq(&first, &again));
        assert!(first.is_match(&"q".repeat(4000)));
        assert!(!first.is_match(&"q".repeat(3999)));
    }
}
