//! `GET /appliance/v1/backup`: a consistent snapshot of the whole store as a redb file (what
//! `landscaper-appliance backup` saves and `restore` puts back). It holds every Secret
//! unredacted, so it needs the bearer token, like writes (or a request over the daemon's Unix
//! socket, which its file permissions authorise).
//!
//! The snapshot is written by [`Store::write_snapshot`](landscaper_store::Store::write_snapshot)
//! (one read transaction copied table by table, writes go on meanwhile) into a file in the data
//! folder that is unlinked right after it was created: nothing is left behind even if the
//! daemon dies during a backup, and no other process can open it. The answer streams that file
//! with its `Content-Length`; `X-Landscaper-Appliance-Revision` names the revision it holds.

use std::fs::OpenOptions;
use std::io::{Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use landscaper_store::SnapshotInfo;
use tokio::io::AsyncReadExt;

use super::{ApiError, ApiState};

/// The route of the endpoint.
pub const BACKUP_PATH: &str = "/appliance/v1/backup";
/// Response header with the revision the snapshot holds.
pub const REVISION_HEADER: &str = "x-landscaper-appliance-revision";
/// Response header with the number of objects the snapshot holds.
pub const OBJECTS_HEADER: &str = "x-landscaper-appliance-objects";

const CHUNK: usize = 256 * 1024;

/// `GET /appliance/v1/backup`.
pub async fn backup(
    State(state): State<ApiState>,
    trusted: Option<axum::Extension<super::token::TrustedConnection>>,
    headers: HeaderMap,
) -> Response {
    // The token, or the Unix socket (see api/listen.rs).
    let caller = super::token::Caller::new(&headers, trusted.is_some());
    if let Err(e) = super::write::authorize(&state, &caller) {
        return e.into_response();
    }
    let store = state.store.clone();
    let snapshot = tokio::task::spawn_blocking(move || snapshot(&store)).await;
    let (info, file, length) = match snapshot {
        Ok(Ok(done)) => done,
        Ok(Err(e)) => return e.into_response(),
        Err(e) => {
            return ApiError::internal(format!("the backup task failed: {e}")).into_response();
        }
    };
    tracing::info!(
        revision = info.revision,
        objects = info.objects,
        bytes = length,
        "backup snapshot sent"
    );
    let file = tokio::fs::File::from_std(file);
    let stream = futures_util::stream::unfold(file, |mut file| async move {
        let mut buf = vec![0u8; CHUNK];
        match file.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok::<Bytes, std::io::Error>(Bytes::from(buf)), file))
            }
            Err(e) => Some((Err(e), file)),
        }
    });
    let mut response = Body::from_stream(stream).into_response();
    *response.status_mut() = StatusCode::OK;
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("attachment; filename=\"store.redb\""),
    );
    h.insert(REVISION_HEADER, HeaderValue::from(info.revision));
    h.insert(OBJECTS_HEADER, HeaderValue::from(info.objects));
    response
}

/// Writes the snapshot into an unlinked private file in the data folder; returns the file,
/// positioned at its start, and its length.
fn snapshot(
    store: &landscaper_store::Store,
) -> Result<(SnapshotInfo, std::fs::File, u64), ApiError> {
    let dir = store
        .path()
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let path = dir.join(format!(".backup-{}.redb", uuid::Uuid::new_v4()));
    let io = |what: &str| {
        let what = what.to_string();
        move |e: std::io::Error| ApiError::internal(format!("{what}: {e}"))
    };
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(io("creating the backup snapshot file"))?;
    let reader = file.try_clone();
    let _ = std::fs::remove_file(&path);
    let mut reader = reader.map_err(io("opening the backup snapshot file"))?;
    let info = store.write_snapshot(file)?;
    let length = reader
        .seek(SeekFrom::End(0))
        .map_err(io("measuring the backup snapshot"))?;
    reader
        .seek(SeekFrom::Start(0))
        .map_err(io("reading the backup snapshot"))?;
    Ok((info, reader, length))
}
