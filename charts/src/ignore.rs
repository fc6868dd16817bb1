//! `.helmignore` rules (Helm's `pkg/ignore`): patterns as Go's `filepath.Match`, `!` negates,
//! a trailing `/` matches directories only, a leading `/` or an inner `/` matches the whole
//! relative path, otherwise the base name; `**` is refused.

use regex::Regex;

#[derive(Debug, Clone)]
struct Pattern {
    negate: bool,
    must_dir: bool,
    /// Match the base name (no `/` in the rule) or the whole path.
    base_only: bool,
    matcher: Matcher,
}

/// A compiled `filepath.Match` pattern: most rules (`*.tgz`, `.git`, `*.swp`) only have
/// literals, `*` and `?`, matched directly; the rest as a regular expression (compiling one
/// costs more than a short `render chart` spends on everything else).
#[derive(Debug, Clone)]
enum Matcher {
    Glob(Vec<Glob>),
    Regex(Regex),
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Glob {
    Lit(char),
    /// `?`: one character but `/`.
    One,
    /// `*`: any characters but `/`.
    Star,
}

impl Matcher {
    fn new(pattern: &str) -> Matcher {
        if !pattern.contains(['[', '\\']) {
            return Matcher::Glob(
                pattern
                    .chars()
                    .map(|c| match c {
                        '*' => Glob::Star,
                        '?' => Glob::One,
                        c => Glob::Lit(c),
                    })
                    .collect(),
            );
        }
        // A rule that does not compile after trimming never matches (Helm logs it).
        go_match_regex(pattern).map_or(Matcher::Never, Matcher::Regex)
    }

    fn is_match(&self, name: &str) -> bool {
        match self {
            Matcher::Glob(g) => glob_match(g, name),
            Matcher::Regex(re) => re.is_match(name),
            Matcher::Never => false,
        }
    }
}

/// Whether `name` matches all of `pattern` (by characters; `*` and `?` never match `/`), as
/// Go's `filepath.Match` does it: each chunk after a star at the first place it matches (the
/// last one at the end), which needs no backtracking and allocates nothing.
fn glob_match(pattern: &[Glob], mut name: &str) -> bool {
    let mut rest = pattern;
    'chunks: while !rest.is_empty() {
        let stars = rest.iter().take_while(|g| **g == Glob::Star).count();
        let star = stars > 0;
        rest = &rest[stars..];
        let len = rest.iter().take_while(|g| **g != Glob::Star).count();
        let (chunk, after) = rest.split_at(len);
        rest = after;
        if star && chunk.is_empty() {
            return !name.contains('/');
        }
        if let Some(t) = match_chunk(chunk, name)
            && (t.is_empty() || !rest.is_empty())
        {
            name = t;
            continue;
        }
        if star {
            for (i, c) in name.char_indices() {
                if c == '/' {
                    break;
                }
                if let Some(t) = match_chunk(chunk, &name[i + c.len_utf8()..]) {
                    if rest.is_empty() && !t.is_empty() {
                        continue;
                    }
                    name = t;
                    continue 'chunks;
                }
            }
        }
        return false;
    }
    name.is_empty()
}

/// Go's `matchChunk` for a chunk without stars: what is left of `name` after it.
fn match_chunk<'a>(chunk: &[Glob], mut name: &'a str) -> Option<&'a str> {
    for g in chunk {
        let mut chars = name.chars();
        let c = chars.next()?;
        let ok = match g {
            Glob::Lit(l) => c == *l,
            Glob::One => c != '/',
            Glob::Star => false,
        };
        if !ok {
            return None;
        }
        name = chars.as_str();
    }
    Some(name)
}

/// Parsed rules, in file order.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    patterns: Vec<Pattern>,
}

impl Rules {
    /// Parses a `.helmignore` file.
    pub fn parse(text: &str) -> Result<Rules, String> {
        let mut r = Rules::default();
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        for line in text.lines() {
            r.parse_rule(line)?;
        }
        Ok(r)
    }

    /// Helm's default: dot files in `templates/`.
    pub fn add_defaults(&mut self) {
        let _ = self.parse_rule("templates/.?*");
    }

    fn parse_rule(&mut self, rule: &str) -> Result<(), String> {
        let mut rule = rule.trim();
        if rule.is_empty() || rule.starts_with('#') {
            return Ok(());
        }
        if rule.contains("**") {
            return Err("double-star (**) syntax is not supported".into());
        }
        if go_match_source(rule).is_none() {
            return Err("syntax error in pattern".into());
        }
        let mut p = Pattern {
            negate: false,
            must_dir: false,
            base_only: false,
            matcher: Matcher::Never,
        };
        if let Some(r) = rule.strip_prefix('!') {
            p.negate = true;
            rule = r;
        }
        if let Some(r) = rule.strip_suffix('/') {
            p.must_dir = true;
            rule = r;
        }
        if let Some(r) = rule.strip_prefix('/') {
            rule = r;
        } else if !rule.contains('/') {
            p.base_only = true;
        }
        p.matcher = Matcher::new(rule);
        self.patterns.push(p);
        Ok(())
    }

    /// Whether the slash-separated relative path is ignored.
    pub fn ignore(&self, path: &str, is_dir: bool) -> bool {
        if path.is_empty() || path == "." || path == "./" {
            return false;
        }
        for p in &self.patterns {
            let subject = if p.base_only {
                path.rsplit('/').next().unwrap_or(path)
            } else {
                path
            };
            if p.negate {
                if p.must_dir && !is_dir {
                    return true;
                }
                if !p.matcher.is_match(subject) {
                    return true;
                }
                continue;
            }
            if p.must_dir && !is_dir {
                continue;
            }
            if p.matcher.is_match(subject) {
                return true;
            }
        }
        false
    }
}

/// Go's `filepath.Match` pattern as a regular expression (`None`: `ErrBadPattern`).
pub fn go_match_regex(pattern: &str) -> Option<Regex> {
    Regex::new(&go_match_source(pattern)?).ok()
}

/// The source of [`go_match_regex`] (`None`: `ErrBadPattern`).
fn go_match_source(pattern: &str) -> Option<String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut re = String::from("^(?s:");
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' => re.push_str("[^/]*"),
            '?' => re.push_str("[^/]"),
            '[' => {
                let mut j = i + 1;
                let mut class = String::from("[");
                if chars.get(j) == Some(&'^') {
                    class.push('^');
                    j += 1;
                }
                let mut n = 0;
                loop {
                    let c = *chars.get(j)?;
                    if c == ']' && n > 0 {
                        break;
                    }
                    if c == ']' {
                        return None;
                    }
                    let c = if c == '\\' {
                        j += 1;
                        *chars.get(j)?
                    } else {
                        c
                    };
                    if c == '-' && n == 0 {
                        return None;
                    }
                    if matches!(c, '\\' | '[' | ']' | '&' | '~' | '^') {
                        class.push('\\');
                    }
                    class.push(c);
                    n += 1;
                    j += 1;
                }
                class.push(']');
                re.push_str(&class);
                i = j;
            }
            '\\' => {
                i += 1;
                re.push_str(&regex::escape(&chars.get(i)?.to_string()));
            }
            c => re.push_str(&regex::escape(&c.to_string())),
        }
        i += 1;
    }
    re.push_str(")$");
    Some(re)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_match_as_helm() {
        let r = Rules::parse("# comment\n*.txt\nfiles/crds/full/\n/top.md\nsub/*.bin\n").unwrap();
        assert!(r.ignore("a.txt", false));
        assert!(r.ignore("deep/b.txt", false));
        assert!(r.ignore("files/crds/full", true));
        assert!(!r.ignore("files/crds/minimal", true));
        assert!(r.ignore("top.md", false));
        assert!(!r.ignore("x/top.md", false));
        assert!(r.ignore("sub/x.bin", false));
        assert!(!r.ignore("sub/deeper/x.bin", false));
        assert!(!r.ignore("values.yaml", false));
        // A negated rule ignores everything it does not match, as Helm's does.
        let r = Rules::parse("!keep.txt\n").unwrap();
        assert!(r.ignore("values.yaml", false));
        assert!(!r.ignore("keep.txt", false));
    }

    #[test]
    fn defaults_hide_template_dotfiles() {
        let mut r = Rules::default();
        r.add_defaults();
        assert!(r.ignore("templates/.keep", false));
        assert!(!r.ignore("templates/a.yaml", false));
        assert!(!r.ignore(".helmignore", false));
    }

    proptest::proptest! {
        /// Go's greedy chunk matching finds what the regular expression of the pattern finds.
        #[test]
        fn greedy_globs_match_as_their_regular_expressions(
            pattern in "[ab/*?é]{0,8}",
            name in "[ab/é]{0,10}",
        ) {
            let Matcher::Glob(g) = Matcher::new(&pattern) else {
                panic!("{pattern} is a glob")
            };
            let re = go_match_regex(&pattern).unwrap();
            proptest::prop_assert_eq!(glob_match(&g, &name), re.is_match(&name));
        }
    }

    #[test]
    fn globs_match_as_their_regular_expressions() {
        let patterns = [
            "*", "*.txt", "a?c", "*.*", ".*", "a*b*c", "*/x", "a/*", "?", "", "é*", "*~", "a**b",
            "x*y?z", "*.t?z",
        ];
        let names = [
            "",
            "a",
            "abc",
            "a.txt",
            "b/a.txt",
            "a/b",
            "axbyc",
            "aXbYcZ",
            ".git",
            "x/y",
            "é1",
            "n~",
            "a/x",
            "abbbb",
            "xqyrz",
            "chart.tgz",
            "é",
            "aéc",
            "a/c",
        ];
        for p in patterns {
            let Matcher::Glob(g) = Matcher::new(p) else {
                panic!("{p} is a glob")
            };
            let re = go_match_regex(p).unwrap();
            for n in names {
                assert_eq!(glob_match(&g, n), re.is_match(n), "{p:?} on {n:?}");
            }
        }
    }

    #[test]
    fn double_star_is_refused() {
        assert!(Rules::parse("a/**/b").is_err());
        assert!(Rules::parse("[").is_err());
    }
}
