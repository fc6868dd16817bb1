//! Semantic versions and constraints with `github.com/Masterminds/semver/v3` v3.4's parsing,
//! ordering and constraint rules (the version Helm 3.19, sprig's `semverCompare` and Landscaper
//! link): [`Version::parse`] (`semver.NewVersion`), [`Version::compare`], [`Constraints::parse`]
//! (`semver.NewConstraint`) and [`Constraints::check`]. The Go template engine's `semver` and
//! `semverCompare` and spiff's `semver*` functions (spiff's own library release keeps its
//! messages and increments, see `landscaper_templating::spiff::semver`), the chart engine and
//! the Helm repository lookup share the [`Version`] type and its order.

use std::cmp::Ordering;
use std::sync::OnceLock;

// regex-lite: these are ASCII patterns over short strings, and the `regex` crate's compile
// (it builds DFAs up front) of the constraint patterns was ~3 % of a whole `render chart` run.
use regex_lite::Regex;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pub pre: String,
    pub metadata: String,
    pub original: String,
}

/// Masterminds' loose version pattern: matched by hand in [`loose_parts`], kept as the oracle of
/// its test.
#[cfg(test)]
const LOOSE: &str = r"v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?";
const CV: &str = r"v?([0-9|x|X|\*]+)(\.[0-9|x|X|\*]+)?(\.[0-9|x|X|\*]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?";
const OPS: &str = r"=||!=|>|<|>=|=>|<=|=<|~|~>|\^";
/// Go's `\s`: ASCII whitespace without `\v` (the `regex` crate's `\s` is Unicode whitespace).
const WS: &str = r"[\t\n\f\r ]";

/// Masterminds' patterns, with Go's `\s` written as the ASCII class [`WS`]; each compiled on
/// first use (compiling all of them cost a short `render chart` a third of its time when it
/// only parses a chart version).
macro_rules! lazy_regex {
    ($name:ident, $pattern:expr) => {
        fn $name() -> &'static Regex {
            static R: OnceLock<Regex> = OnceLock::new();
            R.get_or_init(|| Regex::new(&$pattern).expect("semver regex"))
        }
    };
}

#[cfg(test)]
lazy_regex!(version_regex, format!("^{LOOSE}$"));
lazy_regex!(constraint_regex, format!(r"^{WS}*({OPS}){WS}*({CV}){WS}*$"));
lazy_regex!(range_regex, format!(r"{WS}*({CV}){WS}+-{WS}+({CV}){WS}*"));
lazy_regex!(find_regex, format!(r"({OPS}){WS}*({CV})"));
lazy_regex!(
    valid_regex,
    format!(r"^({WS}*({OPS}){WS}*({CV}){WS}*)((?:{WS}+|,{WS}*)({OPS}){WS}*({CV}){WS}*)*$")
);

/// The parts of `^LOOSE$` (Masterminds' loose version pattern), matched by hand: it is a plain
/// left-to-right grammar, and compiling its regular expression was most of the cost of parsing
/// one chart version in a short-lived `render chart`. `minor`/`patch` include their dot.
#[derive(Debug, PartialEq, Eq)]
struct LooseParts<'a> {
    major: &'a str,
    minor: Option<&'a str>,
    patch: Option<&'a str>,
    pre: Option<&'a str>,
    metadata: Option<&'a str>,
}

fn loose_parts(text: &str) -> Option<LooseParts<'_>> {
    fn digits(s: &str) -> usize {
        s.bytes().take_while(u8::is_ascii_digit).count()
    }
    /// `[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*`
    fn dotted_identifiers(s: &str) -> bool {
        s.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
    }
    let s = text.strip_prefix('v').unwrap_or(text);
    let n = digits(s);
    if n == 0 {
        return None;
    }
    let (major, mut rest) = s.split_at(n);
    /// `\.[0-9]+` at the start of `rest`, consumed.
    fn dotted_number<'a>(rest: &mut &'a str) -> Option<&'a str> {
        let after = rest.strip_prefix('.')?;
        let n = digits(after);
        if n == 0 {
            return None;
        }
        let (part, tail) = rest.split_at(n + 1);
        *rest = tail;
        Some(part)
    }
    let minor = dotted_number(&mut rest);
    let patch = minor.and_then(|_| dotted_number(&mut rest));
    let (before_meta, metadata) = match rest.split_once('+') {
        Some((b, m)) => (b, Some(m)),
        None => (rest, None),
    };
    let pre = match before_meta {
        "" => None,
        p => Some(p.strip_prefix('-')?),
    };
    if pre.is_some_and(|p| !dotted_identifiers(p))
        || metadata.is_some_and(|m| !dotted_identifiers(m))
    {
        return None;
    }
    Some(LooseParts {
        major,
        minor,
        patch,
        pre,
        metadata,
    })
}

const NUM: &str = "0123456789";
const ALLOWED: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789";

fn contains_only(s: &str, set: &str) -> bool {
    s.chars().all(|c| set.contains(c))
}

fn parse_segment(text: &str) -> Result<u64, String> {
    text.parse::<u64>().map_err(|_| {
        format!(
            // `text` is ASCII digits (the pattern's `[0-9]+`), so Go's `strconv.Quote` of it is
            // the text in double quotes.
            "error parsing version segment: strconv.ParseUint: parsing \"{text}\": value out of range"
        )
    })
}

impl Version {
    /// `semver.NewVersion` (with the default `CoerceNewVersion`).
    pub fn parse(v: &str) -> Result<Version, String> {
        let parts = loose_parts(v).ok_or("invalid semantic version")?;
        let mut ver = Version {
            major: parse_segment(parts.major)?,
            minor: 0,
            patch: 0,
            pre: parts.pre.unwrap_or_default().to_string(),
            metadata: parts.metadata.unwrap_or_default().to_string(),
            original: v.to_string(),
        };
        if let Some(minor) = parts.minor {
            ver.minor = parse_segment(&minor[1..])?;
        }
        if let Some(patch) = parts.patch {
            ver.patch = parse_segment(&patch[1..])?;
        }
        if !ver.pre.is_empty() {
            for p in ver.pre.split('.') {
                if p.is_empty() {
                    return Err("invalid prerelease string".into());
                } else if contains_only(p, NUM) {
                    if p.len() > 1 && p.starts_with('0') {
                        return Err("version segment starts with 0".into());
                    }
                } else if !contains_only(p, ALLOWED) {
                    return Err("invalid prerelease string".into());
                }
            }
        }
        if !ver.metadata.is_empty()
            && ver
                .metadata
                .split('.')
                .any(|p| p.is_empty() || !contains_only(p, ALLOWED))
        {
            return Err("invalid metadata string".into());
        }
        Ok(ver)
    }

    /// Whether `text` names one version: it parses with major, minor and patch all given
    /// (`1.2.3`, `v1.2.3-rc.1`; not `1.2`, `1.x` or a constraint such as `^1.2.3`).
    pub fn is_exact(text: &str) -> bool {
        loose_parts(text).is_some_and(|p| p.patch.is_some()) && Version::parse(text).is_ok()
    }

    /// `Version.Compare`: by major, minor and patch, then a release above its prereleases,
    /// prereleases by their dot-separated parts (numbers by value and below words).
    pub fn compare(&self, o: &Version) -> Ordering {
        self.major
            .cmp(&o.major)
            .then(self.minor.cmp(&o.minor))
            .then(self.patch.cmp(&o.patch))
            .then_with(|| match (self.pre.is_empty(), o.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => compare_prerelease(&self.pre, &o.pre),
            })
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if !self.pre.is_empty() {
            write!(f, "-{}", self.pre)?;
        }
        if !self.metadata.is_empty() {
            write!(f, "+{}", self.metadata)?;
        }
        Ok(())
    }
}

fn compare_prerelease(a: &str, b: &str) -> Ordering {
    let ap: Vec<&str> = a.split('.').collect();
    let bp: Vec<&str> = b.split('.').collect();
    for i in 0..ap.len().max(bp.len()) {
        let d = compare_pre_part(
            ap.get(i).copied().unwrap_or(""),
            bp.get(i).copied().unwrap_or(""),
        );
        if d != Ordering::Equal {
            return d;
        }
    }
    Ordering::Equal
}

fn compare_pre_part(s: &str, o: &str) -> Ordering {
    if s == o {
        return Ordering::Equal;
    }
    if s.is_empty() {
        return Ordering::Less;
    }
    if o.is_empty() {
        return Ordering::Greater;
    }
    match (s.parse::<u64>(), o.parse::<u64>()) {
        (Err(_), Err(_)) => {
            if s > o {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
        (_, Err(_)) => Ordering::Less,
        (Err(_), _) => Ordering::Greater,
        (Ok(a), Ok(b)) => {
            if a > b {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
    }
}

struct Constraint {
    con: Version,
    op: String,
    minor_dirty: bool,
    patch_dirty: bool,
    dirty: bool,
}

fn is_x(x: &str) -> bool {
    matches!(x, "x" | "*" | "X")
}

fn parse_constraint(c: &str) -> Result<Constraint, String> {
    if c.is_empty() {
        return Ok(Constraint {
            con: Version::parse("0.0.0")?,
            op: String::new(),
            minor_dirty: false,
            patch_dirty: false,
            dirty: true,
        });
    }
    let caps = constraint_regex()
        .captures(c)
        .ok_or_else(|| format!("improper constraint: {c}"))?;
    let g = |i: usize| caps.get(i).map(|m| m.as_str()).unwrap_or("");
    let (m3, m4, m5, m6) = (g(3), g(4), g(5), g(6));
    let (mut minor_dirty, mut patch_dirty, mut dirty) = (false, false, false);
    let ver = if is_x(m3) || m3.is_empty() {
        dirty = true;
        format!("0.0.0{m6}")
    } else if is_x(m4.trim_start_matches('.')) || m4.is_empty() {
        minor_dirty = true;
        dirty = true;
        format!("{m3}.0.0{m6}")
    } else if is_x(m5.trim_start_matches('.')) || m5.is_empty() {
        dirty = true;
        patch_dirty = true;
        format!("{m3}{m4}.0{m6}")
    } else {
        g(2).to_string()
    };
    let con = Version::parse(&ver).map_err(|_| "constraint parser error".to_string())?;
    Ok(Constraint {
        con,
        op: g(1).to_string(),
        minor_dirty,
        patch_dirty,
        dirty,
    })
}

/// Parsed `||`-groups of `AND`ed constraints.
pub struct Constraints {
    groups: Vec<(Vec<Constraint>, bool)>,
}

impl Constraints {
    /// `semver.NewConstraint`.
    pub fn parse(text: &str) -> Result<Constraints, String> {
        // rewriteRange: "a - b" becomes ">= a, <= b".
        let mut c = text.to_string();
        let ranges: Vec<(String, String, String)> = range_regex()
            .captures_iter(text)
            .map(|m| {
                (
                    m[0].to_string(),
                    m.get(1).map_or("", |x| x.as_str()).to_string(),
                    m.get(11).map_or("", |x| x.as_str()).to_string(),
                )
            })
            .collect();
        for (whole, a, b) in ranges {
            c = c.replacen(&whole, &format!(">= {a}, <= {b} "), 1);
        }
        let mut groups = Vec::new();
        for part in c.split("||") {
            if !valid_regex().is_match(part) {
                return Err(format!("improper constraint: {part}"));
            }
            let mut found: Vec<&str> = find_regex().find_iter(part).map(|m| m.as_str()).collect();
            if found.is_empty() {
                found.push(part);
            }
            let mut list = Vec::new();
            let mut has_pre = false;
            for f in found {
                let pc = parse_constraint(f)?;
                if !pc.con.pre.is_empty() {
                    has_pre = true;
                }
                list.push(pc);
            }
            groups.push((list, has_pre));
        }
        Ok(Constraints { groups })
    }

    /// `Constraints.Check`: whether `v` satisfies any of the `||` groups.
    pub fn check(&self, v: &Version) -> bool {
        self.groups
            .iter()
            .any(|(list, pre)| list.iter().all(|c| check(c, v, *pre)))
    }
}

fn check(c: &Constraint, v: &Version, include_pre: bool) -> bool {
    if !v.pre.is_empty() && !include_pre {
        return false;
    }
    let cmp = v.compare(&c.con);
    match c.op.as_str() {
        "" | "=" => {
            if c.dirty {
                tilde(c, v)
            } else {
                cmp == Ordering::Equal
            }
        }
        "!=" => {
            if c.dirty {
                if c.con.major != v.major {
                    return true;
                }
                if c.con.minor != v.minor && !c.minor_dirty {
                    return true;
                } else if c.minor_dirty {
                    return false;
                } else if c.con.patch != v.patch && !c.patch_dirty {
                    return true;
                } else if c.patch_dirty {
                    if !v.pre.is_empty() || !c.con.pre.is_empty() {
                        return compare_prerelease(&v.pre, &c.con.pre) != Ordering::Equal;
                    }
                    return false;
                }
            }
            cmp != Ordering::Equal
        }
        ">" => {
            if !c.dirty {
                return cmp == Ordering::Greater;
            }
            if v.major > c.con.major {
                true
            } else if v.major < c.con.major || c.minor_dirty {
                false
            } else if c.patch_dirty {
                v.minor > c.con.minor
            } else {
                cmp == Ordering::Greater
            }
        }
        "<" => cmp == Ordering::Less,
        ">=" | "=>" => cmp != Ordering::Less,
        "<=" | "=<" => {
            if !c.dirty {
                return cmp != Ordering::Greater;
            }
            !(v.major > c.con.major
                || v.major == c.con.major && v.minor > c.con.minor && !c.minor_dirty)
        }
        "~" | "~>" => tilde(c, v),
        "^" => {
            if cmp == Ordering::Less {
                return false;
            }
            if c.con.major > 0 || c.minor_dirty {
                return v.major == c.con.major;
            }
            if v.major > 0 {
                return false;
            }
            if c.con.minor > 0 || c.patch_dirty {
                return v.minor == c.con.minor;
            }
            if v.minor > 0 {
                return false;
            }
            c.con.patch == v.patch
        }
        _ => false,
    }
}

fn tilde(c: &Constraint, v: &Version) -> bool {
    if v.compare(&c.con) == Ordering::Less {
        return false;
    }
    if c.con.major == 0 && c.con.minor == 0 && c.con.patch == 0 && !c.minor_dirty && !c.patch_dirty
    {
        return true;
    }
    if v.major != c.con.major {
        return false;
    }
    v.minor == c.con.minor || c.minor_dirty
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The regular expression's captures in [`LooseParts`]' shape.
    fn regex_parts(text: &str) -> Option<LooseParts<'_>> {
        let c = version_regex().captures(text)?;
        let get = |i: usize| c.get(i).map(|m| m.as_str());
        Some(LooseParts {
            major: get(1)?,
            minor: get(2),
            patch: get(3),
            pre: get(5),
            metadata: get(8),
        })
    }

    proptest! {
        #[test]
        fn hand_matching_equals_masterminds_loose_pattern(
            text in "v?[0-9a]{0,3}(\\.[0-9x]{0,2}){0,4}(-[0-9A-Za-z.+-]{0,6})?(\\+[0-9A-Za-z.+-]{0,6})?[ .a-]?"
        ) {
            prop_assert_eq!(loose_parts(&text), regex_parts(&text), "{:?}", text);
        }
    }

    #[test]
    fn hand_matching_edge_cases() {
        for text in [
            "",
            "v",
            "vv1",
            "1",
            "v1.2",
            "1.2.3",
            "1.2.3.4",
            "1..2",
            "1.2.",
            "01.002.3",
            "1.2.3-",
            "1.2.3--",
            "1.2.3-a..b",
            "1.2.3-a.b+c",
            "1.2.3+",
            "1.2.3+a+b",
            "1-rc.1",
            "1.2-x",
            "1.2.3-+m",
            "1.2.3 ",
            "１.2.3",
            "1.2.3-é",
        ] {
            assert_eq!(loose_parts(text), regex_parts(text), "{text:?}");
        }
    }

    fn cmp(c: &str, v: &str) -> bool {
        Constraints::parse(c)
            .unwrap()
            .check(&Version::parse(v).unwrap())
    }

    #[test]
    fn constraints_match_like_masterminds() {
        assert!(cmp("^1.2", "1.9.0"));
        assert!(!cmp("^1.2", "2.0.0"));
        assert!(!cmp("^1.2", "1.1.9"));
        assert!(cmp("~1.2.3", "1.2.9"));
        assert!(!cmp("~1.2.3", "1.3.0"));
        assert!(cmp(">=1.0 <2.0", "1.5.0"));
        assert!(!cmp(">=1.0 <2.0", "2.0.0"));
        assert!(cmp(">=1.0, <2.0", "1.0.0"));
        assert!(cmp("1.x", "1.4.2"));
        assert!(!cmp("1.x", "2.0.0"));
        assert!(cmp("<1.0 || >=3.0", "3.1.0"));
        assert!(!cmp("<1.0 || >=3.0", "2.1.0"));
        assert!(cmp("1.2 - 1.4", "1.3.5"));
        assert!(!cmp(">=1.0", "1.5.0-beta.1"));
        assert!(cmp(">=1.0-0", "1.5.0-beta.1"));
        assert!(cmp(">=1.21-0", "v1.28.3-gke.100"));
        assert!(cmp("^0.2.3", "0.2.5"));
        assert!(!cmp("^0.2.3", "0.3.0"));
        assert!(cmp("*", "4.5.6"));
        assert!(cmp("!=1.2.3", "1.2.4"));
    }

    #[test]
    fn versions_parse_leniently() {
        let v = Version::parse("v1.2").unwrap();
        assert_eq!((v.major, v.minor, v.patch), (1, 2, 0));
        assert_eq!(
            Version::parse("1.2.3.4").unwrap_err(),
            "invalid semantic version"
        );
        assert_eq!(
            Version::parse("1.2.3-01").unwrap_err(),
            "version segment starts with 0"
        );
        assert_eq!(
            Constraints::parse("foo").err().unwrap(),
            "improper constraint: foo"
        );
    }

    /// The Helm repository lookup's expectations (they lived beside the second implementation
    /// landscaper-sources had; its lookup now uses this one).
    #[test]
    fn helm_repository_lookup_expectations() {
        let mut vs: Vec<Version> = [
            "1.0.0",
            "1.0.0-rc.1",
            "1.0.0-alpha",
            "0.9",
            "v2",
            "1.0.0-rc.10",
        ]
        .iter()
        .map(|v| Version::parse(v).expect("parses"))
        .collect();
        vs.sort_by(Version::compare);
        let shown: Vec<String> = vs.iter().map(Version::to_string).collect();
        assert_eq!(
            shown,
            [
                "0.9.0",
                "1.0.0-alpha",
                "1.0.0-rc.1",
                "1.0.0-rc.10",
                "1.0.0",
                "2.0.0"
            ]
        );
        assert!(Version::parse("1.x").is_err());
        assert!(Version::parse("abc").is_err());
        assert!(Version::is_exact("1.2.3-rc.1"));
        assert!(Version::is_exact("v1.2.3"));
        assert!(!Version::is_exact("1.2"));
        assert!(!Version::is_exact("1.2.x"));
        assert!(!Version::is_exact("^1.2.3"));
        assert!(!Version::is_exact("1.2.3-01"));

        assert!(cmp("*", "3.1.4"));
        assert!(!cmp("*", "3.1.4-beta.1"), "no prereleases without asking");
        assert!(cmp(">=1.2.0-0", "1.3.0-beta.1"));
        assert!(cmp("1.2.3", "1.2.3"));
        assert!(!cmp("1.2.3", "1.2.4"));
        assert!(cmp("1.2.x", "1.2.9"));
        assert!(!cmp("1.2.x", "1.3.0"));
        assert!(cmp("^0.2.3", "0.2.9"));
        assert!(cmp("~1", "1.9.9"));
        assert!(cmp(">= 1.2, < 2", "1.5.0"));
        assert!(cmp(">=1.2 <2", "1.5.0"));
        assert!(!cmp(">=1.2 <2", "2.0.0"));
        assert!(cmp("<1.0 || >=3", "0.5.0"));
        assert!(!cmp("<1.0 || >=3", "2.0.0"));
        assert!(cmp("1.2 - 1.4", "1.4.9"));
        assert!(!cmp("1.2 - 1.4", "1.5.0"));
        assert!(!cmp("!=1.2.3", "1.2.3"));
        assert!(cmp(">1.2", "1.3.0"));
        assert!(!cmp(">1.2", "1.2.9"));
        // Huge numbers do not overflow.
        for (c, v) in [
            ("^18446744073709551615", "18446744073709551615.0.0"),
            (
                "~18446744073709551615.18446744073709551615",
                "18446744073709551615.0.1",
            ),
            ("<=18446744073709551615.x", "1.0.0"),
            ("!=1.2.18446744073709551615", "1.2.18446744073709551615"),
        ] {
            let _ = cmp(c, v);
        }
        assert!(cmp(">=18446744073709551615", "18446744073709551615.0.0"));
        assert!(Constraints::parse(">=").is_err());
        assert!(Constraints::parse("not a version").is_err());
    }

    /// Go's `\s` is ASCII whitespace: a vertical tab or a no-break space is not a separator.
    #[test]
    fn whitespace_is_go_ascii_whitespace() {
        assert!(cmp(">=1.0\t<2.0", "1.5.0"));
        assert!(cmp(" >=1.0\n", "1.5.0"));
        assert!(Constraints::parse(">=1.0\u{0b}<2.0").is_err());
        assert!(Constraints::parse(">=1.0\u{a0}<2.0").is_err());
    }
}
