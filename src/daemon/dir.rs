//! The device directory (`/dev/eboard/`, filled by the udev rules): what is in it,
//! and what appears there later, for the hub (`hub`).

use std::path::{Path, PathBuf};

use futures_util::StreamExt;
use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask};
use tokio::sync::mpsc;

/// The entries of `dir`, sorted (a missing directory has none).
pub fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    found.sort();
    found
}

/// Sends every entry of `dir` and every one that appears later (created, or renamed
/// into it as udev does with its symlinks). A missing directory is waited for in its
/// parent, and waited for again when it is removed.
pub(super) async fn watch_dir(dir: &Path, found: mpsc::Sender<PathBuf>) -> std::io::Result<()> {
    let parent = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = dir.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    let inotify = Inotify::init()?;
    let arrivals = WatchMask::CREATE | WatchMask::MOVED_TO;
    inotify.watches().add(parent, arrivals)?;
    let mut stream = inotify.into_event_stream([0u8; 4096])?;
    let mut watches = stream.watches();
    let mut dir_watch: Option<WatchDescriptor> = None;
    let mut arm = |dir_watch: &mut Option<WatchDescriptor>| -> Vec<PathBuf> {
        if dir_watch.is_none() {
            *dir_watch = watches.add(dir, arrivals | WatchMask::DELETE_SELF).ok();
        }
        if dir_watch.is_some() {
            entries(dir)
        } else {
            Vec::new()
        }
    };
    for p in arm(&mut dir_watch) {
        if found.send(p).await.is_err() {
            return Ok(());
        }
    }
    while let Some(event) = stream.next().await {
        let event = event?;
        let mut new = Vec::new();
        if Some(&event.wd) == dir_watch.as_ref() {
            if event.mask.intersects(EventMask::DELETE_SELF | EventMask::IGNORED) {
                dir_watch = None;
            } else if let Some(n) = &event.name {
                new.push(dir.join(n));
            }
        } else if event.name.as_deref() == Some(name.as_os_str()) {
            // The directory itself appeared: everything in it is new.
            new = arm(&mut dir_watch);
        }
        for p in new {
            if found.send(p).await.is_err() {
                return Ok(());
            }
        }
    }
    Ok(())
}
