//! Kubernetes-style HTTP API.
