//! Versions and version constraints as Helm's repository lookup uses them (Masterminds semver
//! v3): `1.2.3`, `v1.2`, `>=1.2 <2`, `^1.2`, `~1.2.3`, `1.2.x`, `*`, `1.2 - 1.4`, `a || b`.
//! A prerelease version satisfies a comparator only when the comparator names a prerelease.

use std::cmp::Ordering;

/// A semantic version (lenient: a `v` prefix and missing minor/patch are accepted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pub pre: Vec<String>,
}

impl Version {
    /// Lenient as Masterminds' `NewVersion`: `1.2` is `1.2.0`; wildcards are not versions.
    pub fn parse(text: &str) -> Option<Version> {
        let (v, parts) = parse_parts(text)?;
        if parts[0].is_none() || (parts[1].is_none() && parts[2].is_some()) {
            return None;
        }
        let given = parts.iter().take_while(|p| p.is_some()).count();
        let core = text.trim().trim_start_matches(['v', 'V']);
        let core = core.split(['-', '+']).next().unwrap_or_default();
        if core.split('.').count() != given {
            return None; // a wildcard somewhere
        }
        Some(v)
    }

    /// `major.minor.patch` all given (no wildcard, nothing missing): names one version.
    pub fn is_exact(text: &str) -> bool {
        parse_parts(text).is_some_and(|(_, parts)| parts.iter().all(Option::is_some))
    }
}

/// Parses a version whose numeric parts may be missing or wildcards: returns the version (with
/// zeros) and for each of major/minor/patch whether it was given (`Some`) or not (`None`).
fn parse_parts(text: &str) -> Option<(Version, [Option<u64>; 3])> {
    let text = text.trim();
    let text = text.strip_prefix(['v', 'V']).unwrap_or(text);
    let text = text.split('+').next()?;
    let (core, pre) = match text.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (text, None),
    };
    let mut parts = [None, None, None];
    let pieces: Vec<&str> = core.split('.').collect();
    if pieces.is_empty() || pieces.len() > 3 {
        return None;
    }
    let mut wildcard = false;
    for (i, piece) in pieces.iter().enumerate() {
        if matches!(*piece, "x" | "X" | "*") {
            wildcard = true;
            continue;
        }
        if wildcard || piece.is_empty() || !piece.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        parts[i] = Some(piece.parse().ok()?);
    }
    let pre = match pre {
        Some("") => return None,
        Some(p) => p.split('.').map(str::to_string).collect(),
        None => Vec::new(),
    };
    Some((
        Version {
            major: parts[0].unwrap_or(0),
            minor: parts[1].unwrap_or(0),
            patch: parts[2].unwrap_or(0),
            pre,
        },
        parts,
    ))
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(other.major, other.minor, other.patch))
            .then_with(|| match (self.pre.is_empty(), other.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => {
                    for (a, b) in self.pre.iter().zip(other.pre.iter()) {
                        let ord = match (a.parse::<u64>(), b.parse::<u64>()) {
                            (Ok(x), Ok(y)) => x.cmp(&y),
                            (Ok(_), Err(_)) => Ordering::Less,
                            (Err(_), Ok(_)) => Ordering::Greater,
                            (Err(_), Err(_)) => a.cmp(b),
                        };
                        if ord != Ordering::Equal {
                            return ord;
                        }
                    }
                    self.pre.len().cmp(&other.pre.len())
                }
            })
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// `[low, high)` bounds plus whether the comparator named a prerelease.
#[derive(Debug, Clone)]
struct Comparator {
    low: Option<(Version, bool)>,    // (version, inclusive)
    high: Option<(Version, bool)>,   // (version, inclusive)
    not: Option<(Version, Version)>, // != : excluded [low, high)
    allows_pre: bool,
}

impl Comparator {
    fn matches(&self, v: &Version) -> bool {
        if !v.pre.is_empty() && !self.allows_pre {
            return false;
        }
        if let Some((lo, hi)) = &self.not {
            return !(v >= lo && v < hi);
        }
        if let Some((lo, inclusive)) = &self.low
            && (v < lo || (!inclusive && v == lo))
        {
            return false;
        }
        if let Some((hi, inclusive)) = &self.high
            && (v > hi || (!inclusive && v == hi))
        {
            return false;
        }
        true
    }
}

/// A parsed constraint: alternatives (`||`) of conjunctions.
#[derive(Debug, Clone)]
pub struct Constraint {
    alternatives: Vec<Vec<Comparator>>,
}

fn version(major: u64, minor: u64, patch: u64) -> Version {
    Version {
        major,
        minor,
        patch,
        pre: Vec::new(),
    }
}

/// The smallest version above everything the partial version `parts` covers.
fn next_after(parts: &[Option<u64>; 3]) -> Option<Version> {
    match parts {
        [None, _, _] => None,
        [Some(m), None, _] => Some(version(m.saturating_add(1), 0, 0)),
        [Some(m), Some(n), None] => Some(version(*m, n.saturating_add(1), 0)),
        [Some(_), Some(_), Some(_)] => None,
    }
}

fn comparator(op: &str, text: &str) -> Option<Comparator> {
    let (v, parts) = parse_parts(text)?;
    let allows_pre = !v.pre.is_empty();
    let exact = parts.iter().all(|p| p.is_some());
    let mut c = Comparator {
        low: None,
        high: None,
        not: None,
        allows_pre,
    };
    match op {
        "" | "=" => {
            if exact {
                c.low = Some((v.clone(), true));
                c.high = Some((v, true));
            } else if parts[0].is_some() {
                c.low = Some((v, true));
                c.high = next_after(&parts).map(|h| (h, false));
            }
        }
        "!=" => {
            if exact {
                let next = bump_patch_floor(&v);
                c.not = Some((v, next));
            } else if parts[0].is_some() {
                c.not = Some((v, next_after(&parts)?));
            } else {
                // `!= *` matches nothing.
                c.not = Some((version(0, 0, 0), version(u64::MAX, 0, 0)));
            }
        }
        ">" => {
            if exact {
                c.low = Some((v, false));
            } else if parts[0].is_some() {
                c.low = Some((next_after(&parts)?, true));
            } else {
                c.low = Some((version(u64::MAX, 0, 0), false));
            }
        }
        ">=" | "=>" => c.low = Some((v, true)),
        "<" => c.high = Some((v, false)),
        "<=" | "=<" => {
            if exact {
                c.high = Some((v, true));
            } else if parts[0].is_some() {
                c.high = Some((next_after(&parts)?, false));
            }
        }
        "~" | "~>" => {
            c.low = Some((v.clone(), true));
            c.high = match parts {
                [Some(m), None, _] => Some((version(m.saturating_add(1), 0, 0), false)),
                [Some(m), Some(n), _] => Some((version(m, n.saturating_add(1), 0), false)),
                _ => None,
            };
        }
        "^" => {
            c.low = Some((v.clone(), true));
            c.high = match parts {
                [None, _, _] => None,
                [Some(m), _, _] if m > 0 => Some((version(m.saturating_add(1), 0, 0), false)),
                [Some(0), None, _] => Some((version(1, 0, 0), false)),
                [Some(0), Some(n), _] if n > 0 => Some((version(0, n.saturating_add(1), 0), false)),
                [Some(0), Some(0), None] => Some((version(0, 1, 0), false)),
                [Some(0), Some(0), Some(p)] => Some((version(0, 0, p.saturating_add(1)), false)),
                _ => None,
            };
        }
        _ => return None,
    }
    Some(c)
}

/// The smallest version greater than `v` (for excluding exactly `v`).
fn bump_patch_floor(v: &Version) -> Version {
    let mut next = v.clone();
    if next.pre.is_empty() {
        next.patch = next.patch.saturating_add(1);
        // `x.y.(z+1)-0`: no version lies between `x.y.z` and it.
        next.pre = vec!["0".into()];
    } else {
        next.pre.push("0".into());
    }
    next
}

const OPS: [&str; 11] = ["!=", ">=", "=>", "<=", "=<", "~>", "=", ">", "<", "~", "^"];

impl Constraint {
    pub fn parse(text: &str) -> Option<Constraint> {
        let mut alternatives = Vec::new();
        for alt in text.split("||") {
            let alt = alt.trim();
            let mut comparators = Vec::new();
            // Hyphen range `a - b`.
            if let Some((a, b)) = alt.split_once(" - ") {
                comparators.push(comparator(">=", a.trim())?);
                comparators.push(comparator("<=", b.trim())?);
                alternatives.push(comparators);
                continue;
            }
            // Tokens separated by commas or spaces; an operator may stand apart from its version.
            let mut pending_op: Option<&str> = None;
            for token in alt
                .split([',', ' ', '\t'])
                .map(str::trim)
                .filter(|t| !t.is_empty())
            {
                let op = OPS.iter().find(|op| token.starts_with(**op)).copied();
                match (op, pending_op.take()) {
                    (Some(op), None) if token.len() == op.len() => pending_op = Some(op),
                    (Some(op), None) => comparators.push(comparator(op, &token[op.len()..])?),
                    (None, Some(op)) => comparators.push(comparator(op, token)?),
                    (None, None) => comparators.push(comparator("", token)?),
                    (Some(_), Some(_)) => return None,
                }
            }
            if pending_op.is_some() {
                return None;
            }
            if comparators.is_empty() {
                return None;
            }
            alternatives.push(comparators);
        }
        Some(Constraint { alternatives })
    }

    pub fn matches(&self, v: &Version) -> bool {
        self.alternatives
            .iter()
            .any(|all| all.iter().all(|c| c.matches(v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(constraint: &str, version: &str) -> bool {
        Constraint::parse(constraint)
            .unwrap_or_else(|| panic!("constraint {constraint} parses"))
            .matches(&Version::parse(version).unwrap_or_else(|| panic!("{version} parses")))
    }

    #[test]
    fn versions_order_as_semver() {
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
        vs.sort();
        let shown: Vec<String> = vs
            .iter()
            .map(|v| {
                let mut s = format!("{}.{}.{}", v.major, v.minor, v.patch);
                if !v.pre.is_empty() {
                    s.push('-');
                    s.push_str(&v.pre.join("."));
                }
                s
            })
            .collect();
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
        assert!(Version::parse("1.x").is_none());
        assert!(Version::is_exact("1.2.3-rc.1"));
        assert!(!Version::is_exact("1.2"));
        assert!(!Version::is_exact("^1.2.3"));
        assert!(Version::parse("abc").is_none());
    }

    #[test]
    fn constraints_as_masterminds() {
        assert!(check("*", "3.1.4"));
        assert!(!check("*", "3.1.4-beta.1"), "no prereleases without asking");
        assert!(check(">=1.2.0-0", "1.3.0-beta.1"));
        assert!(check("1.2.3", "1.2.3"));
        assert!(!check("1.2.3", "1.2.4"));
        assert!(check("1.2.x", "1.2.9"));
        assert!(!check("1.2.x", "1.3.0"));
        assert!(check("^1.2", "1.9.0"));
        assert!(!check("^1.2", "2.0.0"));
        assert!(!check("^1.2", "1.1.9"));
        assert!(check("^0.2.3", "0.2.9"));
        assert!(!check("^0.2.3", "0.3.0"));
        assert!(check("~1.2.3", "1.2.9"));
        assert!(!check("~1.2.3", "1.3.0"));
        assert!(check("~1", "1.9.9"));
        assert!(check(">= 1.2, < 2", "1.5.0"));
        assert!(check(">=1.2 <2", "1.5.0"));
        assert!(!check(">=1.2 <2", "2.0.0"));
        assert!(check("<1.0 || >=3", "3.2.0"));
        assert!(check("<1.0 || >=3", "0.5.0"));
        assert!(!check("<1.0 || >=3", "2.0.0"));
        assert!(check("1.2 - 1.4", "1.4.9"));
        assert!(!check("1.2 - 1.4", "1.5.0"));
        assert!(check("!=1.2.3", "1.2.4"));
        assert!(!check("!=1.2.3", "1.2.3"));
        assert!(check(">1.2", "1.3.0"));
        assert!(!check(">1.2", "1.2.9"));
        // Huge numbers must not overflow (the old `m + 1` panicked here in debug builds); the
        // bounds saturate, so the results are only required to exist.
        for (c, v) in [
            ("^18446744073709551615", "18446744073709551615.0.0"),
            (
                "~18446744073709551615.18446744073709551615",
                "18446744073709551615.0.1",
            ),
            ("<=18446744073709551615.x", "1.0.0"),
            ("!=1.2.18446744073709551615", "1.2.18446744073709551615"),
        ] {
            let _ = check(c, v);
        }
        assert!(check(">=18446744073709551615", "18446744073709551615.0.0"));
        assert!(Constraint::parse(">=").is_none());
        assert!(Constraint::parse("not a version").is_none());
    }
}
