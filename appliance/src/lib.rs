//! The Landscaper appliance daemon and CLI: configuration, folder ingest, controllers, HTTP API.

pub mod api;
pub mod backup;
pub mod cli;
pub mod client;
pub mod commands;
pub mod config;
pub mod controllers;
pub mod daemon;
pub mod doctor;
pub mod export;
#[doc(hidden)]
pub mod fuzzing;
pub mod history;
pub mod ingest;
pub mod logging;
pub mod metrics;
pub mod render;
pub mod render_chart;
pub mod systemd;
pub mod ui;
pub mod validate;
