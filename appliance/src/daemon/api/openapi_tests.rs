use super::*;

#[test]
fn definition_names_reverse_the_group() {
    assert_eq!(
        definition_name("landscaper.gardener.cloud", "v1alpha1", "Installation"),
        "cloud.gardener.landscaper.v1alpha1.Installation"
    );
}
