//! Folder ingest: the manifests directory as the source of user objects.
