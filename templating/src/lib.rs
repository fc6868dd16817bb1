//! Template engines of the Landscaper appliance: Go templates with sprig (`gotemplate`), Spiff
//! (`spiff`), JSON schema validation (`schema`), and blueprint rendering.

pub mod blueprint;
pub mod budget;
#[doc(hidden)]
pub mod fuzzing;
pub mod gofmt;
pub mod gotemplate;
pub mod resources;
pub mod schema;
pub mod spiff;
mod yaml_scalar;

pub use budget::RenderBudget;
/// Masterminds semver, shared with the model crate (its home) so existing paths keep working.
pub use landscaper_model::semver;
