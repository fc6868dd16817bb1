//! The Landscaper appliance daemon and CLI: configuration, folder ingest, controllers, HTTP API.

pub mod api;
pub mod ingest;
