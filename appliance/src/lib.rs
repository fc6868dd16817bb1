//! The Landscaper appliance: the daemon (folder ingest, controllers, HTTP API, status page) and
//! the commands of its CLI, with the configuration and logging both share.

pub mod cli;
pub mod commands;
pub mod components;
pub mod config;
pub mod daemon;
#[doc(hidden)]
pub mod fuzzing;
pub mod logging;
