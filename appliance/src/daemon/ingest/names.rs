//! Which directory entries are manifests, and the `ManifestFile` object name of a path.

use sha2::{Digest, Sha256};

/// Suffix of the marker file that disables `NAME`: `NAME.skip` beside it.
pub const SKIP_SUFFIX: &str = ".skip";

/// Maximum length of a DNS-1123 subdomain, and so of a `ManifestFile` name.
const MAX_NAME_LENGTH: usize = 253;

/// Entries the ingest never reads: dot-files and dot-directories (including Kubernetes'
/// `..data` projections and emacs' `.#lock` files), and the temporary and backup files editors
/// and tools leave beside the file they write.
pub fn is_ignored_name(name: &str) -> bool {
    name.starts_with('.')
        || name.ends_with('~')
        || (name.starts_with('#') && name.ends_with('#'))
        || name == "4913" // vim's probe for a writable directory
        || [
            ".swp", ".swx", ".swo", ".tmp", ".temp", ".part", ".bak", ".orig", ".rej", ".dpkg-new",
            ".dpkg-old", ".dpkg-dist", ".rpmnew", ".rpmsave", ".ucf-new", ".ucf-old",
        ]
        .iter()
        .any(|suffix| name.ends_with(suffix))
}

/// Whether a file name is read as a manifest: `*.yaml`, `*.yml` or `*.json`, not ignored.
pub fn is_manifest_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    !is_ignored_name(name)
        && [".yaml", ".yml", ".json"]
            .iter()
            .any(|ext| lower.len() > ext.len() && lower.ends_with(ext))
}

/// Hex SHA-256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest.iter() {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// The `ManifestFile` object name of a path relative to the manifests folder.
///
/// The readable form lower-cases the path, turns `/` into `.` and other invalid characters into
/// `-`, and fixes label edges. A path that maps onto itself without loss (a top-level file name
/// that already is a DNS-1123 subdomain) keeps that name; every other path gets `-` and 8 hex
/// digits of the SHA-256 of the path appended, so that distinct paths never share a name
/// (`a/b.yaml` and `a.b.yaml`, `A.yaml` and `a.yaml`). Manifest paths end in `.yaml`, `.yml`
/// or `.json`, so an exact name can never look like a suffixed one.
pub fn manifest_file_name(rel_path: &str) -> String {
    manifest_file_name_with(rel_path, 8)
}

/// [`manifest_file_name`] with a longer hash, for the (astronomically unlikely) case that two
/// paths collide in 32 bits with the same readable prefix.
pub fn manifest_file_name_with(rel_path: &str, hash_digits: usize) -> String {
    let mut lossy = rel_path.contains('/');
    let mut mapped = String::with_capacity(rel_path.len());
    for c in rel_path.chars() {
        let m = match c {
            'a'..='z' | '0'..='9' | '-' | '.' => c,
            '/' => '.',
            'A'..='Z' => c.to_ascii_lowercase(),
            _ => '-',
        };
        if m != c && c != '/' {
            lossy = true;
        }
        mapped.push(m);
    }
    let fixed = fix_labels(&mapped);
    if fixed != mapped {
        lossy = true;
    }
    if !lossy && fixed.len() <= MAX_NAME_LENGTH {
        return fixed;
    }
    let hash = &sha256_hex(rel_path.as_bytes())[..hash_digits];
    let room = MAX_NAME_LENGTH - hash_digits - 1;
    // Everything is ASCII now, so byte truncation is character truncation.
    let head = fix_labels(&fixed[..fixed.len().min(room)]);
    format!("{head}-{hash}")
}

/// Makes every `.`-separated label start and end with an alphanumeric character.
fn fix_labels(name: &str) -> String {
    name.split('.')
        .map(|label| {
            let trimmed = label.trim_matches('-');
            if trimmed.is_empty() { "x" } else { trimmed }
        })
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::*;
    use landscaper_store::model::names::is_dns1123_subdomain;
    use proptest::prelude::*;

    #[test]
    fn temp_and_hidden_files_are_ignored() {
        for name in [
            ".hidden.yaml",
            ".#a.yaml",
            "#a.yaml#",
            "a.yaml~",
            "a.yaml.swp",
            ".a.yaml.swx",
            "4913",
            "a.yaml.tmp",
            "a.yaml.part",
            "a.yaml.bak",
            "a.yaml.dpkg-new",
            "..data",
        ] {
            assert!(is_ignored_name(name), "{name}");
            assert!(!is_manifest_name(name), "{name}");
        }
        for name in ["a.yaml", "A.YML", "b.json", "x.y.yaml"] {
            assert!(is_manifest_name(name), "{name}");
        }
        for name in ["a.txt", "a.yaml.skip", "yaml", ".yaml", "README"] {
            assert!(!is_manifest_name(name), "{name}");
        }
    }

    #[test]
    fn simple_names_map_onto_themselves() {
        assert_eq!(manifest_file_name("app.yaml"), "app.yaml");
        assert_eq!(
            manifest_file_name("team-a.dataobjects.json"),
            "team-a.dataobjects.json"
        );
    }

    #[test]
    fn lossy_names_get_a_hash_suffix() {
        let sub = manifest_file_name("team/app.yaml");
        assert!(sub.starts_with("team.app.yaml-"), "{sub}");
        assert_eq!(sub.len(), "team.app.yaml-".len() + 8);
        assert_ne!(
            manifest_file_name("a/b.yaml"),
            manifest_file_name("a.b.yaml")
        );
        assert_ne!(manifest_file_name("A.yaml"), manifest_file_name("a.yaml"));
        let odd = manifest_file_name("_My File (1).yaml");
        assert!(
            odd.starts_with("my-file--1-.yaml-") || is_dns1123_subdomain(&odd).is_empty(),
            "{odd}"
        );
        assert!(is_dns1123_subdomain(&odd).is_empty(), "{odd}");
        let long = format!("{}/{}.yaml", "d".repeat(200), "f".repeat(200));
        let name = manifest_file_name(&long);
        assert!(
            name.len() <= 253 && is_dns1123_subdomain(&name).is_empty(),
            "{name}"
        );
    }

    fn path_strategy() -> impl Strategy<Value = String> {
        let segment = "[a-zA-Z0-9 ._#@()\\-]{1,20}|[a-z]{1,3}|[\\PC]{1,6}";
        (
            proptest::collection::vec(segment, 0..4),
            segment,
            prop_oneof![Just(".yaml"), Just(".yml"), Just(".json"), Just(".YAML")],
        )
            .prop_map(|(dirs, file, ext)| {
                let mut parts = dirs;
                parts.push(format!("{file}{ext}"));
                parts.join("/")
            })
    }

    proptest! {
        #[test]
        fn names_are_valid_subdomains(path in path_strategy()) {
            let name = manifest_file_name(&path);
            prop_assert!(is_dns1123_subdomain(&name).is_empty(), "{path:?} -> {name:?}");
            prop_assert!(name.len() <= 253);
        }

        #[test]
        fn distinct_paths_get_distinct_names(a in path_strategy(), b in path_strategy()) {
            prop_assume!(a != b);
            prop_assert_ne!(manifest_file_name(&a), manifest_file_name(&b));
        }

        #[test]
        fn similar_paths_get_distinct_names(base in path_strategy(), flip in 0usize..64) {
            // Near-collisions: same path with one character's case flipped or `/` -> `.`.
            let chars: Vec<char> = base.chars().collect();
            let i = flip % chars.len();
            let mut other = chars.clone();
            other[i] = match chars[i] {
                '/' => '.',
                '.' => '/',
                c if c.is_ascii_lowercase() => c.to_ascii_uppercase(),
                c => c.to_ascii_lowercase(),
            };
            let other: String = other.into_iter().collect();
            prop_assume!(other != base);
            prop_assert_ne!(manifest_file_name(&base), manifest_file_name(&other));
        }
    }
}
