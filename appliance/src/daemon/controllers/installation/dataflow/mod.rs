//! An installation's data, by concept: [`scope`] (scopes and names), [`blueprint`] (where the
//! blueprint comes from), [`siblings`] (the sibling graph), [`imports`] (import resolution over
//! an [`ObjectSource`](landscaper_store::ObjectSource), shared with the offline `render`
//! command), [`subobjects`] (rendered deploy items and subinstallations) and [`exports`]
//! (export writing). Reading is done here; the machine decides what to write.

pub mod blueprint;
pub mod exports;
pub mod imports;
pub mod scope;
pub mod siblings;
pub mod subobjects;
#[cfg(test)]
mod tests;

pub use self::blueprint::*;
pub use self::exports::*;
pub use self::imports::*;
pub use self::scope::*;
pub use self::siblings::*;
pub use self::subobjects::*;

use crate::daemon::controllers::lserror::{LsError, PhaseError};

pub(crate) fn fatal(op: &str, reason: &str, message: impl Into<String>) -> PhaseError {
    PhaseError::Fatal(LsError::new(op, reason, message))
}

pub(crate) fn normal(op: &str, reason: &str, message: impl Into<String>) -> PhaseError {
    PhaseError::Normal(LsError::new(op, reason, message))
}

pub(crate) fn store_error(op: &str, e: landscaper_store::StoreError) -> PhaseError {
    normal(op, "Store", e.to_string())
}
