//! Object model and persistent object store of the Landscaper appliance.

pub mod model;

pub use model::Kind;
