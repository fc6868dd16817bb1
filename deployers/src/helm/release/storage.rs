//! Helm's release storage (`pkg/storage` over the Secret driver) on a [`ClusterClient`]: the
//! history of a release by label selector (`owner=helm,name=<release>`), creating and updating
//! records, removing the oldest revisions beyond the history limit (`removeLeastRecent`), and
//! telling a release stuck in a pending state.

use std::collections::BTreeMap;

use serde_json::Value;

use super::codec::{self, CodecError, RecordWrite};
use super::model::{Release, Status};
use crate::kubernetes::{ClusterClient, ClusterError, Deletion, ObjectRef};

/// Landscaper's `upgrade.MaxHistory` (install sets none).
pub const MAX_HISTORY: usize = 10;

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("release {release} in namespace {namespace}: {step}: {source}")]
    Cluster {
        release: String,
        namespace: String,
        step: &'static str,
        source: ClusterError,
    },
    #[error(transparent)]
    Codec(#[from] CodecError),
    /// A record that cannot be read is the latest revision: writing a new one would skip it
    /// or collide with it.
    #[error(
        "release {release} in namespace {namespace}: the record {key} of revision {version} cannot be read ({cause}); delete or repair the Secret"
    )]
    CorruptLatest {
        release: String,
        namespace: String,
        key: String,
        version: String,
        cause: String,
    },
}

impl StorageError {
    pub fn cluster_error(&self) -> Option<&ClusterError> {
        match self {
            StorageError::Cluster { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// A record whose data could not be decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct CorruptRecord {
    pub key: String,
    /// The `version` label (may be anything).
    pub version: String,
    pub cause: String,
}

/// The revisions of a release, oldest first.
#[derive(Debug, Clone, Default)]
pub struct History {
    pub releases: Vec<Release>,
    pub corrupt: Vec<CorruptRecord>,
}

impl History {
    /// The highest revision (`Last`).
    pub fn last(&self) -> Option<&Release> {
        self.releases.last()
    }

    /// The latest revision with status `deployed` (`Deployed`).
    pub fn deployed(&self) -> Option<&Release> {
        self.releases
            .iter()
            .rev()
            .find(|r| r.status() == Status::Deployed)
    }

    /// The revision a new one gets: one above the highest known, corrupt records included.
    pub fn next_revision(&self) -> u32 {
        let corrupt = self
            .corrupt
            .iter()
            .filter_map(|c| c.version.parse::<u32>().ok())
            .max()
            .unwrap_or(0);
        self.last().map_or(0, |r| r.version).max(corrupt) + 1
    }

    /// A corrupt record at or above the highest readable revision.
    pub fn corrupt_latest(&self) -> Option<&CorruptRecord> {
        let last = self.last().map_or(0, |r| r.version);
        self.corrupt
            .iter()
            .find(|c| c.version.parse::<u32>().map_or(true, |v| v >= last))
    }

    /// The latest revision when it is left in a pending state (an operation was interrupted,
    /// or another client is in the middle of one).
    pub fn pending(&self) -> Option<&Release> {
        self.last().filter(|r| r.status().is_pending())
    }
}

/// `removeLeastRecent(name, max)`: the revisions to delete so that at most `max` remain,
/// oldest first, never the latest deployed one.
pub fn least_recent(history: &[Release], max: usize) -> Vec<u32> {
    if history.len() <= max {
        return Vec::new();
    }
    let mut sorted: Vec<&Release> = history.iter().collect();
    sorted.sort_by_key(|r| r.version);
    let last_deployed = sorted
        .iter()
        .rev()
        .find(|r| r.status() == Status::Deployed)
        .map(|r| r.version);
    let mut delete = Vec::new();
    for release in sorted {
        if history.len() - delete.len() == max {
            break;
        }
        if Some(release.version) != last_deployed {
            delete.push(release.version);
        }
    }
    delete
}

/// The release storage of one namespace on a cluster.
pub struct Storage<'a> {
    pub client: &'a dyn ClusterClient,
    pub namespace: &'a str,
}

fn now_unix() -> i64 {
    jiff::Timestamp::now().as_second()
}

impl<'a> Storage<'a> {
    pub fn new(client: &'a dyn ClusterClient, namespace: &'a str) -> Storage<'a> {
        Storage { client, namespace }
    }

    fn error(&self, release: &str, step: &'static str, source: ClusterError) -> StorageError {
        StorageError::Cluster {
            release: release.to_string(),
            namespace: self.namespace.to_string(),
            step,
            source,
        }
    }

    /// The record in this storage's namespace (Helm's driver writes where it is bound).
    fn secret(&self, release: &Release, write: RecordWrite) -> Result<Value, StorageError> {
        let mut secret = codec::to_secret(release, write, now_unix())?;
        secret["metadata"]["namespace"] = Value::String(self.namespace.to_string());
        Ok(secret)
    }

    /// Every revision of `name` (`History`), sorted by revision; undecodable records are
    /// listed apart.
    pub async fn history(&self, name: &str) -> Result<History, StorageError> {
        let selector = BTreeMap::from([
            ("owner".to_string(), "helm".to_string()),
            ("name".to_string(), name.to_string()),
        ]);
        let secrets = self
            .client
            .list("v1", "Secret", Some(self.namespace), &selector)
            .await
            .map_err(|e| self.error(name, "listing release records", e))?;
        let mut history = History::default();
        for secret in &secrets {
            match codec::from_secret(secret) {
                Ok(release) => history.releases.push(release),
                Err(e) => history.corrupt.push(CorruptRecord {
                    key: secret
                        .pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    version: secret
                        .pointer("/metadata/labels/version")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    cause: e.to_string(),
                }),
            }
        }
        history.releases.sort_by_key(|r| r.version);
        Ok(history)
    }

    /// [`Storage::history`] that fails when the latest record cannot be read.
    pub async fn readable_history(&self, name: &str) -> Result<History, StorageError> {
        let history = self.history(name).await?;
        if let Some(corrupt) = history.corrupt_latest() {
            return Err(StorageError::CorruptLatest {
                release: name.to_string(),
                namespace: self.namespace.to_string(),
                key: corrupt.key.clone(),
                version: corrupt.version.clone(),
                cause: corrupt.cause.clone(),
            });
        }
        Ok(history)
    }

    /// Stores a new revision (`Create`); with `max_history` > 0 the oldest revisions beyond
    /// `max_history - 1` are removed first, as Helm's storage does.
    pub async fn create(&self, release: &Release, max_history: usize) -> Result<(), StorageError> {
        if max_history > 0 {
            let history = self.history(&release.name).await?;
            for version in least_recent(&history.releases, max_history - 1) {
                self.delete(&release.name, version).await?;
            }
        }
        let secret = self.secret(release, RecordWrite::Create)?;
        self.client
            .create(&secret)
            .await
            .map_err(|e| self.error(&release.name, "creating the release record", e))?;
        Ok(())
    }

    /// Replaces a revision's record (`Update`).
    pub async fn update(&self, release: &Release) -> Result<(), StorageError> {
        let secret = self.secret(release, RecordWrite::Update)?;
        self.client
            .update(&secret)
            .await
            .map_err(|e| self.error(&release.name, "updating the release record", e))?;
        Ok(())
    }

    /// Deletes a revision's record; a missing one is fine.
    pub async fn delete(&self, name: &str, version: u32) -> Result<(), StorageError> {
        self.delete_key(name, &codec::secret_name(name, version))
            .await
    }

    /// Deletes a record by Secret name (also a corrupt one).
    pub async fn delete_key(&self, name: &str, key: &str) -> Result<(), StorageError> {
        let reference = ObjectRef::new("v1", "Secret", self.namespace, key);
        match self.client.delete(&reference).await {
            Ok(Deletion::Accepted | Deletion::NotFound) => Ok(()),
            Err(e) => Err(self.error(name, "deleting a release record", e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::helm::release::model::Info;

    fn rev(version: u32, status: Status) -> Release {
        Release {
            name: "r".into(),
            version,
            info: Some(Info {
                status,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn least_recent_keeps_the_latest_deployed_revision() {
        let history: Vec<Release> = (1..=5)
            .map(|v| {
                rev(
                    v,
                    if v == 2 {
                        Status::Deployed
                    } else {
                        Status::Failed
                    },
                )
            })
            .collect();
        // Room for one more with max 3: keep 2 (deployed) and the newest.
        assert_eq!(least_recent(&history, 2), vec![1, 3, 4]);
        assert_eq!(least_recent(&history, 5), Vec::<u32>::new());
        assert_eq!(least_recent(&history, 4), vec![1]);
        let superseded: Vec<Release> = (1..=3).map(|v| rev(v, Status::Superseded)).collect();
        assert_eq!(least_recent(&superseded, 1), vec![1, 2]);
    }

    #[test]
    fn history_tells_last_deployed_pending_and_next_revision() {
        let mut history = History {
            releases: vec![
                rev(1, Status::Superseded),
                rev(2, Status::Deployed),
                rev(3, Status::PendingUpgrade),
            ],
            corrupt: Vec::new(),
        };
        assert_eq!(history.last().map(|r| r.version), Some(3));
        assert_eq!(history.deployed().map(|r| r.version), Some(2));
        assert_eq!(history.pending().map(|r| r.version), Some(3));
        assert_eq!(history.next_revision(), 4);
        assert!(history.corrupt_latest().is_none());
        history.corrupt.push(CorruptRecord {
            key: "sh.helm.release.v1.r.v4".into(),
            version: "4".into(),
            cause: "bad".into(),
        });
        assert_eq!(history.next_revision(), 5);
        assert_eq!(
            history.corrupt_latest().map(|c| c.version.as_str()),
            Some("4")
        );
        history.corrupt[0].version = "1".into();
        assert!(history.corrupt_latest().is_none());
        assert_eq!(History::default().next_revision(), 1);
    }
}
