//! The one-shot commands of the binary: the client commands over the API (`get`, `describe`,
//! `tree`, `reconcile`, `interrupt`, `delete`), the day-2 commands on a data folder (`backup`,
//! `restore`, `export`, `doctor`) and the offline ones (`render`, `render chart`, `validate`).

pub mod backup;
pub mod client;
pub mod demo;
pub mod doctor;
pub mod export;
pub mod jsonpath;
mod objects;
pub mod progress;
pub mod render;
pub mod render_chart;
pub mod ui;
pub mod validate;

pub use objects::*;
