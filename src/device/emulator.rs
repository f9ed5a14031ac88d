//! A virtual DGT e-Board with a DGT 3000 clock on a pseudo-terminal.
//!
//! It answers host commands as a board does and plays a sensor log into the line at
//! the log's pace (times divided by `speed`). Playback starts when the host first
//! asks for updates (a real board's moves are only seen in update mode); records at
//! time 0 that set up the board (a `board` record, a dump in an `rx` record) are
//! applied before that, so the host's first board request sees them. The clock keeps
//! time like a real clock, in log time.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;
use tokio_serial::{SerialPort, SerialStream};

use crate::board::BoardState;
use crate::clock::ClockModel;
use crate::log::{LogError, Player, RecordKind, SensorLog, play};
use crate::protocol::{
    BoardMessage, ClockAck, ClockCommand, ClockSide, ClockTime, CommandParser, Decoded, Decoder, Field,
    HostCommand, HostInput, Placement,
};

/// What the emulator reports about itself.
#[derive(Debug, Clone)]
pub struct EmulatorConfig {
    /// Log time runs this many times faster than real time.
    pub speed: f64,
    /// Reported serial number (the log's `serial` header when it has one).
    pub serial: String,
    pub version: (u8, u8),
    pub clock_version: (u8, u8),
    /// The first this many acknowledgements of host clock commands are not sent
    /// (a clock that missed them), for tests of resends.
    pub drop_acks: u32,
    /// When given, the instant each record's bytes were written to the line, by
    /// record index (latency measurements: `benches/network.rs`).
    pub trace: Option<WriteTrace>,
    /// The charge a Bluetooth board reports when asked (percent); `None` for a
    /// wired board, which does not answer the question.
    pub battery: Option<u8>,
}

/// Record indices and the instants their bytes were written.
pub type WriteTrace = std::sync::Arc<std::sync::Mutex<Vec<(usize, Instant)>>>;

impl Default for EmulatorConfig {
    fn default() -> Self {
        EmulatorConfig {
            speed: 1.0,
            serial: "12345".into(),
            version: (3, 1),
            clock_version: (2, 2),
            drop_acks: 0,
            battery: None,
            trace: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EmulatorError {
    #[error("{0}")]
    Log(#[from] LogError),
    #[error("pseudo-terminal: {0}")]
    Pty(#[from] tokio_serial::Error),
    #[error("serial line: {0}")]
    Io(#[from] std::io::Error),
    #[error("speed must be a positive number, not {0}")]
    Speed(f64),
}

/// What the board sends while in update mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Idle,
    /// 0x43: field updates, and the clock at least once a second.
    Updates,
    /// 0x44: field updates only.
    FieldsOnly,
    /// 0x4b: field updates, and the clock when its time changes.
    Nice,
}

/// Takes exclusive mode off the line. Serial libraries open a line exclusive
/// (TIOCEXCL: anyone else but root gets EBUSY). On a real device that ends when the
/// host closes it, as the device is released; a pseudo-terminal whose two ends the
/// emulator keeps is never released, so the mode would outlive the host and refuse
/// it when it comes back (a daemon restarted after SIGKILL, not run as root). The
/// emulator takes it off whenever its host talks to it; a second opener is then
/// let in, which real hardware would refuse, and no test depends on that.
fn release_exclusive(slave: &SerialStream) {
    let fd = std::os::fd::AsRawFd::as_raw_fd(slave);
    // SAFETY: an ioctl without an argument on a descriptor owned by `slave`, which
    // outlives the call.
    unsafe { libc::ioctl(fd, libc::TIOCNXCL) };
}

/// The emulator's pseudo-terminal: open it, hand its path to the host, then run.
pub struct Emulator {
    master: SerialStream,
    /// Kept open so that the line stays up while the host closes and reopens it.
    slave: SerialStream,
    path: PathBuf,
}

impl Emulator {
    /// Opens a pseudo-terminal pair.
    pub fn open() -> Result<Emulator, EmulatorError> {
        let (master, slave) = SerialStream::pair()?;
        // Neither end may leak into programs the process starts (a daemon under
        // test): a board unplugged must close for the host.
        for fd in [
            std::os::fd::AsRawFd::as_raw_fd(&master),
            std::os::fd::AsRawFd::as_raw_fd(&slave),
        ] {
            // SAFETY: fcntl on a descriptor this function owns; no memory is shared.
            if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } == -1 {
                return Err(EmulatorError::Io(std::io::Error::last_os_error()));
            }
        }
        let path = slave
            .name()
            .map(PathBuf::from)
            .ok_or_else(|| EmulatorError::Io(std::io::Error::other("the pseudo-terminal has no name")))?;
        Ok(Emulator { master, slave, path })
    }

    /// The device path the host opens.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Serves the board, playing `log` (checked first: a log that cannot be played
    /// is an error before anything is sent). Returns when the host side is gone for
    /// good (the line fails), or never.
    pub async fn run(self, log: &SensorLog, file: &str, cfg: &EmulatorConfig) -> Result<(), EmulatorError> {
        if !(cfg.speed.is_finite() && cfg.speed > 0.0) {
            return Err(EmulatorError::Speed(cfg.speed));
        }
        Player::play_log(log, file)?;
        let mut state = State::new(cfg.clone());
        let mut next = state.setup(log);
        let mut master = self.master;
        let slave = self.slave;
        release_exclusive(&slave);
        let mut parser = CommandParser::new();
        let mut buf = [0u8; 256];
        let mut start: Option<Instant> = None;
        let mut out = Vec::new();
        let mut written: Option<usize> = None;
        loop {
            // The next thing due: a record, or a clock message.
            let now_log = start.map(|s| state.log_time(s));
            let record_due = match (start, log.records.get(next)) {
                (Some(s), Some(r)) => Some(s + state.real(r.time.micros())),
                _ => None,
            };
            // The clock's next report, in log time and as an instant.
            let tick = match (start, now_log) {
                (Some(s), Some(now)) => state.next_clock_report(now).map(|t| (t, s + state.real(t))),
                _ => None,
            };
            let tick_due = tick.map(|(_, at)| at);
            let due = [record_due, tick_due].into_iter().flatten().min();
            tokio::select! {
                read = master.read(&mut buf) => {
                    let n = match read {
                        Ok(0) => { tokio::time::sleep(Duration::from_millis(20)).await; continue; }
                        Ok(n) => n,
                        // EIO: no process has the line open right now; wait for one.
                        Err(e) if e.raw_os_error() == Some(5) => { tokio::time::sleep(Duration::from_millis(20)).await; continue; }
                        Err(e) => return Err(e.into()),
                    };
                    // A host that talks to the board has opened it (and may have
                    // made it exclusive): see `release_exclusive`.
                    release_exclusive(&slave);
                    let now = start.map_or(0, |s| state.log_time(s));
                    for input in parser.feed(&buf[..n]) {
                        match input {
                            HostInput::Command(cmd) => {
                                if state.command(&cmd, now, &mut out) && start.is_none() {
                                    start = Some(Instant::now());
                                }
                            }
                            HostInput::Invalid { .. } => tracing::warn!("emulator: {input}"),
                        }
                    }
                }
                _ = sleep_until(due) => {
                    // One item per wake-up, the earliest first, so that a late
                    // wake-up never reorders a record and a clock message.
                    let record_first = match (record_due, tick_due) {
                        (Some(r), Some(t)) => r <= t,
                        (r, _) => r.is_some(),
                    };
                    if record_first {
                        let r = &log.records[next];
                        written = Some(next);
                        next += 1;
                        state.record(&r.kind, r.time.micros(), &mut out);
                    } else if let Some((t, _)) = tick {
                        state.clock_report(t, &mut out);
                    }
                }
            }
            if !out.is_empty() {
                master.write_all(&out).await?;
                master.flush().await?;
                out.clear();
                if let (Some(trace), Some(i)) = (&cfg.trace, written) {
                    trace
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((i, Instant::now()));
                }
            }
            written = None;
        }
    }
}

async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// The emulated board and clock, apart from the line.
struct State {
    cfg: EmulatorConfig,
    board: BoardState,
    clock: ClockModel,
    mode: Mode,
    /// Decodes `rx` records so that the model follows recorded traffic too.
    rx: Decoder,
    /// When the last clock message went out (log time), and what it said.
    last_report: Option<(u64, [u8; 7])>,
}

impl State {
    fn new(cfg: EmulatorConfig) -> State {
        let five = ClockTime::from_hms(0, 5, 0).unwrap_or_default();
        let mut board = BoardState::new();
        board.apply(&BoardMessage::BoardDump(Box::new(Placement::from_board(
            &shakmaty::Board::new(),
        ))));
        State {
            cfg,
            board,
            clock: ClockModel::new(five, five, 0),
            mode: Mode::Idle,
            rx: Decoder::new(),
            last_report: None,
        }
    }

    fn real(&self, log_us: u64) -> Duration {
        Duration::from_secs_f64(log_us as f64 / 1e6 / self.cfg.speed)
    }

    fn log_time(&self, start: Instant) -> u64 {
        (start.elapsed().as_secs_f64() * self.cfg.speed * 1e6) as u64
    }

    /// Applies the set-up records at time 0 and returns the index of the first
    /// record left to play.
    fn setup(&mut self, log: &SensorLog) -> usize {
        let mut next = 0;
        for r in &log.records {
            let setup = match &r.kind {
                RecordKind::Board(_) => true,
                RecordKind::Rx(b) => b.first() == Some(&crate::protocol::id::BOARD_DUMP),
                _ => false,
            };
            if r.time.micros() != 0 || !setup {
                break;
            }
            let mut sink = Vec::new();
            self.record(&r.kind, 0, &mut sink);
            next += 1;
        }
        next
    }

    fn sends_updates(&self) -> bool {
        self.mode != Mode::Idle
    }

    fn sends_clock(&self) -> bool {
        matches!(self.mode, Mode::Updates | Mode::Nice)
    }

    fn emit(&mut self, msg: BoardMessage, out: &mut Vec<u8>) {
        self.board.apply(&msg);
        out.extend(msg.encode());
    }

    /// Plays one record (already checked by the log player).
    fn record(&mut self, kind: &RecordKind, now: u64, out: &mut Vec<u8>) {
        match kind {
            RecordKind::Rx(bytes) => {
                for d in self.rx.feed(bytes) {
                    if let Decoded::Message(m) = d {
                        if let BoardMessage::Clock(s) = &m {
                            self.clock = ClockModel::from_status(s, now);
                        }
                        self.board.apply(&m);
                    }
                }
                if self.sends_updates() {
                    out.extend_from_slice(bytes);
                }
            }
            RecordKind::Board(p) => {
                let before = self.board.placement().cloned().unwrap_or_else(Placement::empty);
                for field in Field::all() {
                    if before.get(field) != p.get(field) {
                        let m = BoardMessage::FieldUpdate {
                            field,
                            piece: p.get(field),
                        };
                        self.board.apply(&m);
                        if self.sends_updates() {
                            out.extend(m.encode());
                        }
                    }
                }
            }
            RecordKind::Tx(_)
            | RecordKind::Note(_)
            | RecordKind::Gap(_)
            | RecordKind::Arbiter { .. }
            | RecordKind::Settings(_) => {}
            kind => {
                // Lifts, places, clock, press, button: the bytes a board sends.
                let bytes = match play::board_bytes(kind, &self.board, &mut self.clock, now) {
                    Ok(Some(b)) => b,
                    Ok(None) => return,
                    Err(e) => {
                        tracing::warn!("emulator: record not played: {e}");
                        return;
                    }
                };
                let mut d = Decoder::new();
                for decoded in d.feed(&bytes) {
                    if let Decoded::Message(m) = decoded {
                        let is_clock = matches!(m, BoardMessage::Clock(_) | BoardMessage::ClockAck(_));
                        self.board.apply(&m);
                        if self.sends_updates() && (!is_clock || self.sends_clock()) {
                            out.extend(m.encode());
                            if let BoardMessage::Clock(s) = m {
                                self.last_report = Some((now, s.to_payload()));
                            }
                        }
                    }
                }
            }
        }
    }

    /// When the next clock message is due (log time), in the clock-sending modes:
    /// the display's first change after the last message, which may be past (a
    /// clock started by a record changes its display a millisecond later, before
    /// the loop is back): it is due at once, with the time it changed at. Counted
    /// from `now` instead, a change missed would go unreported, and the next
    /// report would show two seconds gone in one.
    fn next_clock_report(&self, now: u64) -> Option<u64> {
        if !self.sends_clock() {
            return None;
        }
        let last = self.last_report.map_or(now, |(t, _)| t.min(now));
        let change = self.clock.next_change_us(last);
        match self.mode {
            // At least once a second.
            Mode::Updates => Some(change.map_or(last + 1_000_000, |c| c.min(last + 1_000_000))),
            _ => change,
        }
    }

    fn clock_report(&mut self, now: u64, out: &mut Vec<u8>) {
        let status = self.clock.status(now);
        let payload = status.to_payload();
        let same = self.last_report.is_some_and(|(_, p)| p == payload);
        // The time moves on even when nothing is sent, so that the next change is
        // looked for after this one.
        self.last_report = Some((now, payload));
        if self.mode == Mode::Nice && same {
            return;
        }
        self.emit(BoardMessage::Clock(status), out);
    }

    /// Answers one host command; true when it asks for updates.
    fn command(&mut self, cmd: &HostCommand, now: u64, out: &mut Vec<u8>) -> bool {
        let serial_digits: String = self.cfg.serial.chars().filter(char::is_ascii_digit).collect();
        match cmd {
            HostCommand::Reset | HostCommand::ToBusMode => self.mode = Mode::Idle,
            HostCommand::SendClock => {
                let status = self.clock.status(now);
                self.emit(BoardMessage::Clock(status), out);
            }
            HostCommand::SendBoard => {
                let p = self.board.placement().cloned().unwrap_or_else(Placement::empty);
                self.emit(BoardMessage::BoardDump(Box::new(p)), out);
            }
            HostCommand::SendUpdates | HostCommand::SendUpdatesBoard | HostCommand::SendUpdatesNice => {
                self.mode = match cmd {
                    HostCommand::SendUpdates => Mode::Updates,
                    HostCommand::SendUpdatesBoard => Mode::FieldsOnly,
                    _ => Mode::Nice,
                };
                self.last_report = None;
                return true;
            }
            HostCommand::SendSerialNumber => {
                let s = format!("{:0>5}", serial_digits);
                self.emit(BoardMessage::SerialNumber(s[s.len() - 5..].to_string()), out);
            }
            HostCommand::SendLongSerialNumber => {
                let s = format!("{:0>10}", serial_digits);
                self.emit(BoardMessage::LongSerialNumber(s[s.len() - 10..].to_string()), out);
            }
            HostCommand::SendBusAddress => self.emit(BoardMessage::BusAddress(0), out),
            HostCommand::SendTrademark => self.emit(
                BoardMessage::Trademark("eboard-bridge virtual DGT e-Board".into()),
                out,
            ),
            HostCommand::SendEepromMoves => self.emit(BoardMessage::EepromMoves(Vec::new()), out),
            HostCommand::SendBattery => {
                if let Some(percent) = self.cfg.battery {
                    self.emit(
                        BoardMessage::Battery {
                            percent,
                            rest: Vec::new(),
                        },
                        out,
                    )
                }
            }
            HostCommand::SendVersion => {
                let (major, minor) = self.cfg.version;
                self.emit(BoardMessage::Version { major, minor }, out);
            }
            HostCommand::Leds(l) => tracing::debug!("emulator: LEDs {l:?}"),
            HostCommand::Clock(c) => {
                if let ClockCommand::SetAndRun { left, right, flags } = c {
                    let running = if flags.paused {
                        None
                    } else if flags.left_runs {
                        Some(ClockSide::Left)
                    } else if flags.right_runs {
                        Some(ClockSide::Right)
                    } else {
                        None
                    };
                    let (l, r) = (
                        left.to_time().unwrap_or_default(),
                        right.to_time().unwrap_or_default(),
                    );
                    self.clock.set_and_run(l, r, running, now);
                }
                // Acks arrive only in update modes.
                if self.cfg.drop_acks > 0 {
                    self.cfg.drop_acks -= 1;
                } else if self.sends_updates() {
                    let ack = match c {
                        ClockCommand::Version => {
                            ClockAck::version(self.cfg.clock_version.0, self.cfg.clock_version.1)
                        }
                        other => ClockAck::ok(other.code()),
                    };
                    self.emit(BoardMessage::ClockAck(ack), out);
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The clock reports `out` holds, as (left, right) in whole seconds.
    fn reports(out: &[u8]) -> Vec<(u32, u32)> {
        Decoder::new()
            .feed(out)
            .into_iter()
            .filter_map(|d| match d {
                Decoded::Message(BoardMessage::Clock(s)) => {
                    Some((s.left.millis() / 1000, s.right.millis() / 1000))
                }
                _ => None,
            })
            .collect()
    }

    /// A clock started by a record shows a second less a millisecond later; the
    /// loop back after that (here 50 ms of log time) still reports it, so that no
    /// report shows two seconds gone in one (issue 59: the demo's daemon took its
    /// second report for a fault).
    #[test]
    fn a_display_change_the_loop_was_late_for_is_reported() {
        let mut state = State::new(EmulatorConfig::default());
        let mut out = Vec::new();
        assert!(state.command(&HostCommand::SendUpdatesNice, 0, &mut out));
        let five = ClockTime::from_hms(0, 5, 0).unwrap();
        state.record(
            &RecordKind::Clock {
                left: five,
                right: five,
                running: crate::log::Running::Left,
            },
            10_000,
            &mut out,
        );
        assert_eq!(reports(&out), [(300, 300)]);
        out.clear();
        let mut now = 60_000;
        let mut sent = Vec::new();
        // Every report due up to 2.5 s, each taken when the loop is back 50 ms late.
        while let Some(t) = state.next_clock_report(now).filter(|&t| t <= 2_500_000) {
            assert!(t > state.last_report.map_or(0, |(l, _)| l), "reports move on");
            state.clock_report(t, &mut out);
            sent.extend(reports(&out).into_iter().map(|r| (t, r)));
            out.clear();
            now = t + 50_000;
        }
        assert_eq!(
            sent,
            [
                (11_000, (299, 300)),
                (1_011_000, (298, 300)),
                (2_011_000, (297, 300))
            ]
        );
    }
}
