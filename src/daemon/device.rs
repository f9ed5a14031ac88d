//! One board's serial line: opened (9600 8N1, DTR), read with no polling loop (the
//! task sleeps in `read` until bytes arrive), written from a channel. When the line
//! fails or the device goes away, the board's task is told and the line is opened
//! again once the device is back. An absent device is waited for with inotify on
//! the nearest folder of its path that exists (no timer: an absent board costs
//! no wake-up until something changes there); a device that exists but cannot be
//! opened (busy, no permission yet) is tried again on a timer that backs off.

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_util::StreamExt;
use inotify::{Inotify, WatchMask};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

use super::Input;
use crate::device::serial;

/// How long to wait before opening a device again after it failed or went away.
pub const REOPEN_AFTER: Duration = Duration::from_millis(300);

/// The longest wait between tries at a device that is there but cannot be opened.
const RETRY_AT_MOST: Duration = Duration::from_secs(5);

/// What the line tells the board's task.
#[derive(Debug)]
pub enum DeviceEvent {
    /// Opened (this device); the board is ready for its start-up commands.
    Connected(PathBuf),
    /// Bytes as one read returned them, and when that read returned: the board's
    /// timing is taken here, not when its task gets round to the bytes (under
    /// load that can be much later, and a quick lift-and-replace would look long).
    Bytes(Vec<u8>, std::time::Instant),
    /// The line failed or the device went away.
    Disconnected(String),
}

/// Runs the line of the device `device` names until `stop` turns true. Bytes to
/// write come on `outgoing`; they are dropped while the board is away (the
/// start-up sequence is sent again on every connection). While the board is away
/// its device may change (it came back elsewhere): the new one is opened at once;
/// sent while the line is open, the line is closed and opened again.
pub async fn run(
    mut device: watch::Receiver<PathBuf>,
    input: mpsc::Sender<Input>,
    mut outgoing: mpsc::Receiver<Vec<u8>>,
    mut stop: watch::Receiver<bool>,
) {
    let mut reported_absent = false;
    let mut retry = REOPEN_AFTER;
    loop {
        if *stop.borrow() {
            return;
        }
        let path = device.borrow_and_update().clone();
        let line = serial::open(&path);
        let mut line = match line {
            Ok(l) => l,
            Err(e) => {
                if !reported_absent {
                    tracing::warn!(
                        "{}: no board there ({e}); waiting for it to appear (is it plugged in? is the path right?)",
                        path.display()
                    );
                    reported_absent = true;
                }
                while outgoing.try_recv().is_ok() {}
                let wait = async {
                    match appeared(&path).await {
                        Ok(()) => retry = REOPEN_AFTER,
                        Err(_) => {
                            // There but not openable (or no inotify): a timer.
                            tokio::time::sleep(retry).await;
                            retry = (retry * 2).min(RETRY_AT_MOST);
                        }
                    }
                };
                tokio::pin!(wait);
                loop {
                    tokio::select! {
                        _ = &mut wait => break,
                        r = device.changed() => if r.is_err() { return } else { reported_absent = false; break },
                        _ = stop.changed() => return,
                        // Bytes for the board are dropped while it is away; the
                        // wait for it goes on.
                        out = outgoing.recv() => if out.is_none() { return },
                    }
                }
                continue;
            }
        };
        reported_absent = false;
        retry = REOPEN_AFTER;
        // A board needs a moment after the line opens before it listens.
        tokio::time::sleep(Duration::from_millis(200)).await;
        while outgoing.try_recv().is_ok() {}
        if input
            .send(Input::Device(DeviceEvent::Connected(path.clone())))
            .await
            .is_err()
        {
            return;
        }
        let mut buf = vec![0u8; 4096];
        let why = loop {
            tokio::select! {
                r = line.read(&mut buf) => match r {
                    Ok(0) => break "end of file".to_string(),
                    Ok(n) => {
                        let at = std::time::Instant::now();
                        // The HTTP server stands aside while they go out.
                        crate::net::board_bytes_arrived();
                        if input.send(Input::Device(DeviceEvent::Bytes(buf[..n].to_vec(), at))).await.is_err() {
                            return;
                        }
                        // The board's task, woken by the bytes, goes first; this
                        // task reads again after it (bytes wait in the line).
                        tokio::task::yield_now().await;
                    }
                    Err(e) => break e.to_string(),
                },
                out = outgoing.recv() => match out {
                    Some(bytes) => {
                        if let Err(e) = line.write_all(&bytes).await {
                            break e.to_string();
                        }
                    }
                    None => return,
                },
                _ = stop.changed() => return,
                // Sent again while open: the board's task was started again
                // (`supervise`) and needs the line set up for it.
                r = device.changed() => match r {
                    Ok(()) => break "opened again for the board's new task".to_string(),
                    Err(_) => return,
                },
            }
        };
        drop(line);
        if input
            .send(Input::Device(DeviceEvent::Disconnected(why)))
            .await
            .is_err()
        {
            return;
        }
        tokio::select! {
            _ = tokio::time::sleep(REOPEN_AFTER) => {}
            _ = device.changed() => {}
            _ = stop.changed() => return,
        }
    }
}

/// Returns once `path` may have appeared: something was created, moved in or
/// changed (permissions set by udev) in the nearest existing folder of its path,
/// under the name that leads to it. An error when the path exists already (it
/// is there but could not be opened: the caller waits on a timer) or inotify
/// cannot watch.
async fn appeared(path: &Path) -> std::io::Result<()> {
    // Watch the nearest folder that exists: for /dev/serial/by-id/usb-x the
    // folder itself, or /dev/serial or /dev before the first USB serial device
    // creates them. The name awaited there is the next part of the path.
    let mut dir = path;
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    while let Some(parent) = dir.parent() {
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        if parent.is_dir() {
            dir = parent;
            break;
        }
        name = parent.file_name().map(|n| n.to_os_string()).unwrap_or_default();
        dir = parent;
    }
    let inotify = Inotify::init()?;
    let mask = WatchMask::CREATE
        | WatchMask::MOVED_TO
        | WatchMask::ATTRIB
        | WatchMask::DELETE_SELF
        | WatchMask::MOVE_SELF;
    inotify.watches().add(dir, mask)?;
    // Set up before looking, so that an arrival in between is not missed.
    if path.exists() || std::fs::symlink_metadata(path).is_ok() {
        // There (or a link whose target is not): a timer, not the folder.
        return Err(std::io::Error::other(format!("{} exists", path.display())));
    }
    let mut stream = inotify.into_event_stream([0u8; 1024])?;
    while let Some(event) = stream.next().await {
        let event = event?;
        if event.name.as_deref().is_none_or(|n| n == name.as_os_str()) {
            return Ok(());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn pending_for(task: &tokio::task::JoinHandle<std::io::Result<()>>, ms: u64) -> bool {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        !task.is_finished()
    }

    /// An absent device is waited for by inotify: nothing wakes the wait until its
    /// name (or the missing folder on its path) appears; an unrelated file does not.
    #[tokio::test]
    async fn an_absent_device_is_waited_for_by_inotify() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("by-id").join("board");
        let p = path.clone();
        let task = tokio::spawn(async move { appeared(&p).await });
        assert!(pending_for(&task, 150).await, "woke with nothing there");
        std::fs::write(dir.path().join("unrelated"), b"").expect("a file");
        assert!(pending_for(&task, 150).await, "an unrelated file woke it");
        std::fs::create_dir(dir.path().join("by-id")).expect("the folder");
        let r = tokio::time::timeout(Duration::from_secs(5), task).await;
        assert!(
            matches!(r, Ok(Ok(Ok(())))),
            "the folder on the path wakes it: {r:?}"
        );

        let p = path.clone();
        let task = tokio::spawn(async move { appeared(&p).await });
        assert!(pending_for(&task, 150).await, "woke with the device still absent");
        std::os::unix::fs::symlink("/dev/null", &path).expect("the device link");
        let r = tokio::time::timeout(Duration::from_secs(5), task).await;
        assert!(
            matches!(r, Ok(Ok(Ok(())))),
            "the device's arrival wakes it: {r:?}"
        );

        // There already: the caller is told to use its timer.
        assert!(appeared(&path).await.is_err());
    }
}
