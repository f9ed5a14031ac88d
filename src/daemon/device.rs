//! One board's serial line: opened (9600 8N1, DTR), read with no polling loop (the
//! task sleeps in `read` until bytes arrive), written from a channel. When the line
//! fails or the device goes away, the board's task is told and the line is opened
//! again once the device is back.

use std::path::PathBuf;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

use super::Input;
use crate::device::serial;

/// How long to wait before opening a device again after it failed or went away.
pub const REOPEN_AFTER: Duration = Duration::from_millis(300);

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
/// its device may change (it came back elsewhere): the new one is opened at once.
pub async fn run(
    mut device: watch::Receiver<PathBuf>,
    input: mpsc::Sender<Input>,
    mut outgoing: mpsc::Receiver<Vec<u8>>,
    mut stop: watch::Receiver<bool>,
) {
    let mut reported_absent = false;
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
                    tracing::info!("{}: not available ({e}); waiting for it", path.display());
                    reported_absent = true;
                }
                while outgoing.try_recv().is_ok() {}
                tokio::select! {
                    _ = tokio::time::sleep(REOPEN_AFTER) => continue,
                    r = device.changed() => if r.is_err() { return } else { reported_absent = false; continue },
                    _ = stop.changed() => return,
                }
            }
        };
        reported_absent = false;
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
                        if input.send(Input::Device(DeviceEvent::Bytes(buf[..n].to_vec(), at))).await.is_err() {
                            return;
                        }
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
