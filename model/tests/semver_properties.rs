//! Properties of the Masterminds semver implementation (moved with it from landscaper-sources,
//! whose Helm repository lookup uses it).

use landscaper_model::semver::{Constraints, Version};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn constraints_never_panic(text in "[<>=!~^ ,|xX*0-9.v-]{0,24}", version in "v?[0-9]{1,20}(\\.[0-9]{1,20}){0,2}(-[a-z0-9.]{1,6})?") {
        if let (Ok(c), Ok(v)) = (Constraints::parse(&text), Version::parse(&version)) {
            let _ = c.check(&v);
        }
    }

    #[test]
    fn exact_constraints_match_themselves(major in 0u64..1000, minor in 0u64..1000, patch in 0u64..1000) {
        let text = format!("{major}.{minor}.{patch}");
        let v = Version::parse(&text).expect("a version");
        prop_assert!(Version::is_exact(&text));
        let c = Constraints::parse(&text).expect("a constraint");
        prop_assert!(c.check(&v));
        let next = Version::parse(&format!("{major}.{minor}.{}", patch + 1)).expect("a version");
        prop_assert!(!c.check(&next));
    }
}
