//! Scopes and names: where an installation lives and where its children and imports go.

use landscaper_store::LabelSelector;
use landscaper_store::model::Installation;
use landscaper_store::model::constants::*;

/// The scope an installation lives in: `""` for roots, `Inst.<parent>` for subinstallations.
pub fn parent_scope(inst: &Installation) -> String {
    match parent_name(inst) {
        Some(p) => format!("{INSTALLATION_PREFIX}{p}"),
        None => String::new(),
    }
}

/// The scope an installation creates for its children and imports: `Inst.<name>`.
pub fn own_scope(inst: &Installation) -> String {
    format!(
        "{INSTALLATION_PREFIX}{}",
        inst.metadata.name.as_deref().unwrap_or_default()
    )
}

/// The parent installation's name (label `landscaper.gardener.cloud/encompassed-by`).
pub fn parent_name(inst: &Installation) -> Option<&str> {
    inst.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(ENCOMPASSED_BY_LABEL))
        .map(String::as_str)
        .filter(|s| !s.is_empty())
}

pub fn name(inst: &Installation) -> &str {
    inst.metadata.name.as_deref().unwrap_or_default()
}

pub fn namespace(inst: &Installation) -> &str {
    inst.metadata.namespace.as_deref().unwrap_or("default")
}

/// `key=value`; a value that is no valid label value matches everything (callers filter).
pub fn label_equals(key: &str, value: &str) -> LabelSelector {
    LabelSelector::parse(&format!("{key}={value}")).unwrap_or_default()
}
