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
    re: Regex,
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
        if go_match_regex(rule).is_none() {
            return Err("syntax error in pattern".into());
        }
        let mut p = Pattern {
            negate: false,
            must_dir: false,
            base_only: false,
            re: Regex::new("^$").expect("constant regex"),
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
        // A rule that does not compile after trimming never matches (Helm logs it).
        p.re = go_match_regex(rule).unwrap_or_else(|| Regex::new("^\\x00$").expect("constant"));
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
                if !p.re.is_match(subject) {
                    return true;
                }
                continue;
            }
            if p.must_dir && !is_dir {
                continue;
            }
            if p.re.is_match(subject) {
                return true;
            }
        }
        false
    }
}

/// Go's `filepath.Match` pattern as a regular expression (`None`: `ErrBadPattern`).
pub fn go_match_regex(pattern: &str) -> Option<Regex> {
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
    Regex::new(&re).ok()
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

    #[test]
    fn double_star_is_refused() {
        assert!(Rules::parse("a/**/b").is_err());
        assert!(Rules::parse("[").is_err());
    }
}
