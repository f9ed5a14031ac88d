//! Waiting on a condition that takes a request to read (a property over D-Bus,
//! a page of the daemon): bounded, and failing with what was seen instead.

use std::time::Duration;

/// Waits until `check` answers `Ok`, asking it every 100 ms for at most `secs`
/// seconds; fails naming `what` and the last `Err`, which says what was seen.
pub async fn wait_until<F, Fut>(what: &str, secs: u64, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let until = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let seen = match check().await {
            Ok(()) => return,
            Err(seen) => seen,
        };
        assert!(
            tokio::time::Instant::now() < until,
            "timed out after {secs} s waiting for {what}: {seen}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
