//! Typed Landscaper objects with exactly Landscaper's JSON shapes, plus core ConfigMap/Secret and
//! the appliance's own `ManifestFile` kind.
//!
//! The store keeps objects as JSON values; these types are the schema those values must satisfy
//! (see [`validate_object`]) and the typed view controllers work with.

pub mod kind;

pub use kind::{APPLIANCE_GROUP, Kind, LANDSCAPER_GROUP, V1ALPHA1};
