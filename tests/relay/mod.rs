//! A faulty serial line, for fault injection: it sits between a board (the
//! emulator's pseudo-terminal) and the host, on a pseudo-terminal of its own,
//! and drops or flips the board's bytes at seeded rates and cuts the line when
//! told. A cut closes the host's side (its reads fail, as when a USB cable is
//! pulled) and removes the link to it; the board's bytes meanwhile are lost; when
//! the cut ends a new pseudo-terminal appears under the same link.
//!
//! Used by the fault tests (`tests/faults/`) and the campaign documented in
//! `docs/RELIABILITY.md`; only tests use it, so it is not in the daemon's library.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_serial::{SerialPort, SerialStream};

use eboard_bridge::sim::Seeded;

/// What the line does to the board's bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LineFaults {
    /// Probability that a byte from the board is lost.
    pub drop: f64,
    /// Probability that a byte from the board has one bit flipped.
    pub flip: f64,
    pub seed: u64,
}

impl LineFaults {
    pub const CLEAN: LineFaults = LineFaults {
        drop: 0.0,
        flip: 0.0,
        seed: 0,
    };
}

/// What the relay did, for the test's report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RelayStats {
    pub bytes: u64,
    pub dropped: u64,
    pub flipped: u64,
    pub cuts: u64,
}

/// The host's side of the line: a pseudo-terminal pair and the link to its slave.
struct HostSide {
    master: SerialStream,
    slave: SerialStream,
}

impl HostSide {
    fn open(link: &Path) -> std::io::Result<HostSide> {
        let (master, slave) = SerialStream::pair().map_err(std::io::Error::other)?;
        let path = slave
            .name()
            .ok_or_else(|| std::io::Error::other("the pseudo-terminal has no name"))?;
        let _ = std::fs::remove_file(link);
        std::os::unix::fs::symlink(path, link)?;
        // Not inherited: a daemon started as a process of its own (the event
        // campaign) would keep the master open, and a cut would never reach it.
        for fd in [
            std::os::fd::AsRawFd::as_raw_fd(&master),
            std::os::fd::AsRawFd::as_raw_fd(&slave),
        ] {
            close_on_exec(fd);
        }
        let host = HostSide { master, slave };
        host.release_exclusive();
        Ok(host)
    }

    /// A host that opened the line made it exclusive (as the daemon's serial
    /// library does); the relay keeps the slave open, so the mark would outlive
    /// that host and refuse the next one (a daemon started again): cleared once
    /// the host talks, as the emulator does.
    fn release_exclusive(&self) {
        let fd = std::os::fd::AsRawFd::as_raw_fd(&self.slave);
        // SAFETY: an ioctl without an argument on a descriptor owned by `slave`,
        // which outlives the call.
        unsafe { libc::ioctl(fd, libc::TIOCNXCL) };
    }
}

/// Marks `fd` close-on-exec.
fn close_on_exec(fd: std::os::fd::RawFd) {
    // SAFETY: fcntl on a descriptor the caller owns, with integer arguments.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
        }
    }
}

/// A relay from the board at `board` to a new line linked at `link`. Send cut
/// lengths on the returned channel; the task ends when the channel is closed (and
/// returns what it did) or when the board's line fails.
pub fn start(
    board: &Path,
    link: &Path,
    faults: LineFaults,
) -> std::io::Result<(mpsc::Sender<Duration>, tokio::task::JoinHandle<RelayStats>)> {
    let upstream = eboard_bridge::device::serial::open(board)?;
    close_on_exec(std::os::fd::AsRawFd::as_raw_fd(&upstream));
    let host = HostSide::open(link)?;
    let (cuts_tx, cuts) = mpsc::channel(16);
    let link = link.to_path_buf();
    Ok((cuts_tx, tokio::spawn(run(upstream, host, link, faults, cuts))))
}

/// A relay as `start` returns it: where to send its cuts, and its task.
pub type Relay = (mpsc::Sender<Duration>, tokio::task::JoinHandle<RelayStats>);

/// Emulated boards playing `logs` at `speed` (serial numbers from
/// `first_serial` on), board `i` behind a relay with the faults `faults(i)` whose
/// line is linked at `dir/line{i}`: the emulators' tasks, the relays and the
/// lines' paths, in the boards' order.
pub fn relayed_boards(
    logs: Vec<eboard_bridge::log::SensorLog>,
    speed: f64,
    first_serial: usize,
    dir: &Path,
    faults: impl Fn(usize) -> LineFaults,
) -> (Vec<tokio::task::JoinHandle<()>>, Vec<Relay>, Vec<PathBuf>) {
    let (mut emulators, mut relays, mut lines) = (Vec::new(), Vec::new(), Vec::new());
    for (i, log) in logs.into_iter().enumerate() {
        let emulator = eboard_bridge::device::Emulator::open().unwrap();
        let board = emulator.path().to_path_buf();
        let cfg = eboard_bridge::device::EmulatorConfig {
            speed,
            serial: format!("{}", first_serial + i),
            ..eboard_bridge::device::EmulatorConfig::default()
        };
        emulators.push(tokio::spawn(async move {
            let _ = emulator.run(&log, "generated", &cfg).await;
        }));
        let link = dir.join(format!("line{i}"));
        relays.push(start(&board, &link, faults(i)).unwrap());
        lines.push(link);
    }
    (emulators, relays, lines)
}

async fn run(
    mut upstream: SerialStream,
    host: HostSide,
    link: PathBuf,
    faults: LineFaults,
    mut cuts: mpsc::Receiver<Duration>,
) -> RelayStats {
    let mut rng = Seeded::new(faults.seed);
    // A probability as a threshold on 64 random bits.
    let threshold = |p: f64| (p.clamp(0.0, 1.0) * u64::MAX as f64) as u64;
    let (drop_at, flip_at) = (threshold(faults.drop), threshold(faults.flip));
    let mut stats = RelayStats::default();
    let mut host = Some(host);
    let mut cut_until: Option<tokio::time::Instant> = None;
    let mut up = [0u8; 512];
    let mut down = [0u8; 512];
    loop {
        let cut_over = async {
            match cut_until {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let from_host = async {
            match host.as_mut() {
                Some(h) => h.master.read(&mut down).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            r = upstream.read(&mut up) => {
                let n = match r {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                stats.bytes += n as u64;
                let Some(h) = host.as_mut() else { continue };
                let mut out = Vec::with_capacity(n);
                for &b in &up[..n] {
                    if drop_at > 0 && rng.next_u64() < drop_at {
                        stats.dropped += 1;
                        continue;
                    }
                    if flip_at > 0 && rng.next_u64() < flip_at {
                        stats.flipped += 1;
                        out.push(b ^ (1 << (rng.next_u64() % 8)));
                        continue;
                    }
                    out.push(b);
                }
                if h.master.write_all(&out).await.is_err() {
                    // The host is not listening right now (between its reopens).
                    continue;
                }
            }
            r = from_host => match r {
                Ok(n) if n > 0 => {
                    if let Some(h) = &host {
                        h.release_exclusive();
                    }
                    if upstream.write_all(&down[..n]).await.is_err() {
                        break;
                    }
                }
                // EIO while no process has the line open: wait for the host.
                _ => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            cut = cuts.recv() => match cut {
                Some(length) => {
                    stats.cuts += 1;
                    host = None;
                    let _ = std::fs::remove_file(&link);
                    cut_until = Some(tokio::time::Instant::now() + length);
                }
                None => break,
            },
            _ = cut_over => {
                cut_until = None;
                match HostSide::open(&link) {
                    Ok(h) => host = Some(h),
                    Err(e) => {
                        tracing::warn!("relay: cannot open the line again: {e}");
                        break;
                    }
                }
            }
        }
    }
    stats
}
