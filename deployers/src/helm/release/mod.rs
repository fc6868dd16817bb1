//! Real Helm releases (`helmDeployment: true`): the release record exactly as Helm 3.19 stores
//! it ([`model`], [`codec`]), its storage in Secrets of the release namespace ([`storage`]).

pub mod action;
pub mod codec;
pub mod model;
pub mod patch;
pub mod storage;

pub use model::{Hook, HookExecution, Info, Release, Status};

#[cfg(test)]
mod tests;
