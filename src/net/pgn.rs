//! The broadcast folder over HTTP: `/round-N/games.pgn` and each game's file, the
//! same bytes as on disk, with `ETag` and `Last-Modified` so that pollers (lichess
//! broadcasts poll a URL every few seconds) get `304 Not Modified` when nothing
//! changed.

use std::path::{Path, PathBuf};

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The file a request path names inside the broadcast folder: `round-<digits>/`
/// and a `.pgn` file name of letters, digits, `-`, `_` and `.` (never a path
/// that leaves the folder).
pub fn file_for(out: &Path, round: &str, file: &str) -> Option<PathBuf> {
    let digits = round.strip_prefix("round-")?;
    let round_ok = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    let stem = file.strip_suffix(".pgn")?;
    let file_ok = !stem.is_empty()
        && !stem.starts_with('.')
        && stem
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    (round_ok && file_ok).then(|| out.join(round).join(file))
}

/// A strong validator of the bytes: FNV-1a 64 and the length.
pub fn etag(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("\"{h:016x}-{:x}\"", bytes.len())
}

/// Whether an `If-None-Match` value names `tag` (or is `*`).
fn none_match(value: &str, tag: &str) -> bool {
    value
        .split(',')
        .map(|t| t.trim().trim_start_matches("W/"))
        .any(|t| t == "*" || t == tag)
}

/// Serves one file of the broadcast folder.
pub async fn serve(path: PathBuf, headers: &HeaderMap) -> Response {
    let read = tokio::task::spawn_blocking(move || {
        let bytes = std::fs::read(&path)?;
        let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
        Ok::<_, std::io::Error>((bytes, modified))
    })
    .await;
    let (bytes, modified) = match read {
        Ok(Ok(r)) => r,
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            return (StatusCode::NOT_FOUND, "no such file in the broadcast folder\n").into_response();
        }
        Ok(Err(e)) => {
            tracing::warn!("HTTP: cannot read a broadcast file: {e}");
            return (StatusCode::INTERNAL_SERVER_ERROR, "cannot read the file\n").into_response();
        }
        Err(_) => return StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    };
    let tag = etag(&bytes);
    let last_modified = modified.map(httpdate::fmt_http_date);
    let not_modified = match headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()) {
        Some(v) => none_match(v, &tag),
        // Only without If-None-Match (RFC 9110 13.1.3).
        None => match (
            headers
                .get(header::IF_MODIFIED_SINCE)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| httpdate::parse_http_date(v).ok()),
            modified,
        ) {
            (Some(since), Some(m)) => httpdate::HttpDate::from(m) <= httpdate::HttpDate::from(since),
            _ => false,
        },
    };
    let mut response = if not_modified {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut r = Response::new(Body::from(bytes));
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-chess-pgn; charset=utf-8"),
        );
        r
    };
    let h = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&tag) {
        h.insert(header::ETAG, v);
    }
    if let Some(v) = last_modified.and_then(|m| HeaderValue::from_str(&m).ok()) {
        h.insert(header::LAST_MODIFIED, v);
    }
    // May be kept, but asked about again every time.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_pgn_files_of_a_round_are_served() {
        let out = Path::new("/srv/live");
        assert_eq!(
            file_for(out, "round-3", "games.pgn"),
            Some(PathBuf::from("/srv/live/round-3/games.pgn"))
        );
        assert!(file_for(out, "round-3", "game-2-2.pgn").is_some());
        for (r, f) in [
            ("round-", "games.pgn"),
            ("round-x", "games.pgn"),
            ("..", "games.pgn"),
            ("round-1", "..pgn"),
            ("round-1", ".pgn"),
            ("round-1", "games.txt"),
            ("round-1", "a/b.pgn"),
            ("round-1", "%2e%2e.pgn"),
        ] {
            assert_eq!(file_for(out, r, f), None, "{r}/{f}");
        }
    }

    #[test]
    fn etags_follow_the_bytes() {
        assert_eq!(etag(b"1. e4 *"), etag(b"1. e4 *"));
        assert_ne!(etag(b"1. e4 *"), etag(b"1. d4 *"));
        let t = etag(b"x");
        assert!(none_match(&t, &t));
        assert!(none_match(&format!("\"a\", W/{t}"), &t));
        assert!(none_match("*", &t));
        assert!(!none_match("\"a\"", &t));
    }
}
