//! Patch semantics of the Kubernetes API server: JSON patch, merge patch, strategic merge
//! patch and server-side apply.
