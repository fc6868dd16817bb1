//! Properties of the input parsers: no panic on any input, and round trips where there is one.

use landscaper_sources::archive::check_chart_archive;
use landscaper_sources::helmrepo::Index;
use landscaper_sources::http::resolve_url;
use landscaper_sources::oci::Reference;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn references_parse_or_fail_and_print_back(text in "(oci://)?[a-z0-9.:/@_-]{0,40}(:[a-zA-Z0-9._-]{1,8})?") {
        if let Ok(reference) = Reference::parse(&text) {
            let again = Reference::parse(&reference.to_string());
            prop_assert_eq!(again.ok(), Some(reference));
        }
    }

    #[test]
    fn relative_urls_stay_on_the_repository_host(path in "[a-z0-9./_-]{0,30}") {
        let base = "https://charts.example.com/repo/index.yaml";
        if !path.starts_with("//")
            && let Some(url) = resolve_url(base, &path)
        {
            prop_assert!(url.starts_with("https://charts.example.com/"), "{}", url);
            prop_assert!(!url.contains("/../"), "{}", url);
        }
    }

    #[test]
    fn archives_and_indexes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = check_chart_archive("fuzz", &bytes, 1 << 16);
        let mut gz = vec![0x1f, 0x8b];
        gz.extend_from_slice(&bytes);
        let _ = check_chart_archive("fuzz", &gz, 1 << 16);
        let _ = Index::parse("fuzz", &bytes);
    }
}
