//! The state every request handler and simulated controller shares.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::{Notify, watch};

use crate::config::{Auth, Simulation};
use crate::faults::Faults;
use crate::store::Store;

/// One request as the server saw it (for assertions on client behaviour).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    pub method: String,
    pub path: String,
    pub query: String,
    pub user_agent: String,
    pub content_type: String,
}

pub struct App {
    pub store: Store,
    pub faults: Faults,
    pub auth: Auth,
    /// Whether requests without credentials get in (`Auth::anonymous` resolved for the listener).
    pub anonymous: bool,
    pub simulation: Mutex<Simulation>,
    /// Wakes the controllers when `simulation` changes.
    pub simulation_changed: Notify,
    pub requests: Mutex<Vec<RequestRecord>>,
    /// `host:port` for `APIVersions.serverAddressByClientCIDRs`.
    pub address: String,
    /// PEM of the CA (TLS) that token secrets carry as `ca.crt`.
    pub ca_pem: String,
    pub bookmark_interval: Duration,
    pub shutdown: watch::Receiver<bool>,
}

impl App {
    pub fn simulation(&self) -> Simulation {
        self.simulation
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn set_simulation(&self, change: impl FnOnce(&mut Simulation)) {
        change(&mut self.simulation.lock().unwrap_or_else(|e| e.into_inner()));
        // notify_one keeps a permit: a change is not lost while the controllers are busy.
        self.simulation_changed.notify_one();
    }

    pub fn record(&self, record: RequestRecord) {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(record);
    }
}
