//! The one error type of component resolution.

/// Every variant names component, version (and resource) where known.
#[derive(Debug, thiserror::Error)]
pub enum ComponentError {
    #[error("component version {component}:{version} not found in {repository}")]
    NotFound {
        component: String,
        version: String,
        repository: String,
    },
    #[error("component version {component}:{version} has no resource {resource:?}")]
    ResourceNotFound {
        component: String,
        version: String,
        resource: String,
    },
    #[error(
        "resource {resource:?} of component version {component}:{version} has type {found:?}, expected {expected}"
    )]
    WrongResourceType {
        component: String,
        version: String,
        resource: String,
        found: String,
        expected: String,
    },
    #[error(
        "component version {component}:{version}: digest mismatch of {what}: expected {expected}, got {actual}"
    )]
    DigestMismatch {
        component: String,
        version: String,
        what: String,
        expected: String,
        actual: String,
    },
    #[error("invalid component descriptor {origin}: {reason}")]
    InvalidDescriptor { origin: String, reason: String },
    #[error("invalid repository context: {reason}")]
    InvalidRepositoryContext { reason: String },
    #[error(
        "no repository context: neither componentDescriptor.ref.repositoryContext nor the Context's repositoryContext is set"
    )]
    RepositoryContextMissing,
    #[error("repository {repository}: {reason}")]
    Repository {
        repository: String,
        reason: String,
        retryable: bool,
    },
    #[error("archive {path}: {reason}")]
    Archive { path: String, reason: String },
    #[error("invalid component URI {uri:?}: {reason}")]
    InvalidUri { uri: String, reason: String },
    #[error("cycle in component references: {chain}")]
    Cycle { chain: String },
    #[error("{}", content_message(component, version, resource, reason))]
    Content {
        component: String,
        version: String,
        resource: String,
        reason: String,
    },
}

impl ComponentError {
    /// Whether trying again later may succeed (unreachable registry, HTTP 5xx, timeouts).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ComponentError::Repository {
                retryable: true,
                ..
            }
        )
    }

    pub(crate) fn invalid(origin: &str, reason: impl Into<String>) -> Self {
        ComponentError::InvalidDescriptor {
            origin: origin.to_string(),
            reason: reason.into(),
        }
    }

    pub(crate) fn repo(repository: impl Into<String>, reason: impl Into<String>) -> Self {
        ComponentError::Repository {
            repository: repository.into(),
            reason: reason.into(),
            retryable: false,
        }
    }

    pub(crate) fn archive(path: &std::path::Path, reason: impl Into<String>) -> Self {
        ComponentError::Archive {
            path: path.display().to_string(),
            reason: reason.into(),
        }
    }
}

/// `Content` errors raised where only the bytes are known name the artifact's digest instead
/// (`content::in_context` fills in component, version and resource).
fn content_message(component: &str, version: &str, resource: &str, reason: &str) -> String {
    if component.is_empty() {
        format!("artifact {resource}: {reason}")
    } else {
        format!("resource {resource:?} of component version {component}:{version}: {reason}")
    }
}
