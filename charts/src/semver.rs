//! The semantic-version checks the chart engine needs (Masterminds/semver, as Helm uses it):
//! a thin seam over the template engine's implementation, so that it can move.

use landscaper_templating::semver::{Constraints, Version};

/// `semver.NewVersion`: `None` when the text is not a version.
pub fn parse_version(v: &str) -> Option<Version> {
    Version::parse(v).ok()
}

/// Helm's `IsCompatibleRange`: whether `version` satisfies `constraint`; false when either
/// does not parse.
pub fn is_compatible_range(constraint: &str, version: &str) -> bool {
    let (Ok(c), Some(v)) = (Constraints::parse(constraint), parse_version(version)) else {
        return false;
    };
    c.check(&v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_check_like_masterminds() {
        assert!(is_compatible_range(">=1.21.0-0", "v1.33.0"));
        assert!(!is_compatible_range(">=1.30.0-0", "v1.29.4"));
        assert!(is_compatible_range("8.4.*", "8.4.0"));
        assert!(!is_compatible_range("~1.2", "1.3.0"));
        assert!(!is_compatible_range("nonsense", "1.0.0"));
    }
}
