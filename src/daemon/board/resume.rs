//! A board's journal opened for its task: the game resumed from the recording
//! when one exists (every move recorded before a crash or a restart comes back),
//! else a new recording with its header. It runs in the board's own task (under
//! `supervise`), so that a journal that makes the rules core panic stops only
//! its own board.

use std::fs::OpenOptions;

use super::history::{Book, RESUMED_AT};
use super::remember::{Info, board_info, roster_call};
use super::{BoardError, BoardSetup, board_tags};
use crate::api::Decision;
use crate::board::BoardEvent;
use crate::daemon::roster::Roster;
use crate::daemon::{fault, rfc3339_now, unix_from_rfc3339, unix_ms_now};
use crate::log::{Header, Journal, LogTime, Played, Record, RecordKind, clip_to};
use crate::rules::{Core, SETTINGS_KEY, Settings};
use crate::session::{FromHeader, Session, Start};

/// A journal open for writing, and what resuming it gave.
pub(super) struct Opened {
    /// The board's decoder, board model and rules core, where the recording
    /// left them.
    pub session: Session,
    pub writer: Journal,
    /// Microseconds of log time the task starts at.
    pub offset_us: u64,
    pub resumed: Resumed,
    /// The delayed view rebuilt from the journal (`rebuild`), when asked for.
    pub seed: Option<crate::api::delay::Seed>,
    /// The record's words of the journal's last turn (its records at the last
    /// time): its moves, amendments and take-backs, on disk before they were
    /// published, so perhaps never published (a SIGKILL between the two). The
    /// new process says them first: a subscriber hears of an amendment or a
    /// take-back the record now shows, never sees it happen without a word (at
    /// worst, hears it twice; a word of a ply is the same said again). Nothing
    /// else is said again: an arbiter's decision or a clock report published
    /// twice would be a second decision in the history and stale clocks in
    /// the tags (seeds 1017 and 1048).
    pub unsaid: Vec<crate::rules::Event>,
}

/// Opens `setup.recording` for the board's task: resumes the board's session
/// from it when it exists (every record through [`Session::step_with`], as it
/// went live; the session then stands where the recording left it, a second
/// later), else creates it with its header.
pub(super) fn open(setup: &BoardSetup, window: Option<std::time::Duration>) -> Result<Opened, BoardError> {
    let path = &setup.recording;
    let file_name = path.display().to_string();
    let io = |e| BoardError::Recording(file_name.clone(), e);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let mut resumed = Resumed::default();
    if !path.exists() {
        let mut header = Header::default();
        header.set("board", &setup.id);
        header.set("device", &setup.device.display().to_string());
        header.set("started", &rfc3339_now());
        header.set("source", "eboard-bridge run");
        header.set(SETTINGS_KEY, &setup.settings().to_json());
        let writer = Journal::create(path, &header).map_err(io)?;
        resumed.history = Book::new(0, unix_ms_now());
        return Ok(Opened {
            session: Session::new(Core::with_settings(&setup.settings()), &file_name),
            writer,
            offset_us: 0,
            resumed,
            seed: None,
            unsaid: Vec::new(),
        });
    }
    let log = read_journal(path).map_err(|e| BoardError::Journal(format!("cannot resume: {e}")))?;
    // The journal is judged by the settings it states, and starts from the
    // position its header's `fen` gives, as `replay` judges it (the daemon
    // writes no `fen`: a log made elsewhere may); one from before settings
    // were written, by the configuration's. A field that does not read is
    // passed over (the board must run), with a warning.
    let start = Start {
        defaults: setup.settings(),
        ..Start::default()
    };
    let FromHeader {
        mut session,
        stated,
        passed_over,
    } = Session::from_header(&log.header, &file_name, &start);
    for e in passed_over {
        tracing::warn!(
            "{file_name}: {}: resuming as if the header did not have it",
            crate::log::escaped(&e.to_string())
        );
    }
    resumed.settings = stated.unwrap_or_default();
    // The history's times count from the header's start (then from each anchor).
    let started = log.header.get("started").and_then(unix_from_rfc3339);
    resumed.history = Book::new(0, started.unwrap_or(0) * 1000);
    let mut rebuild =
        window.map(|w| super::rebuild::Rebuilder::new(&setup.id, w, started.unwrap_or(0) * 1000));
    let mut last = LogTime::default();
    let final_turn = log.records.last().map(|r| r.time);
    let mut unsaid = Vec::new();
    for (i, record) in log.records.iter().enumerate() {
        last = record.time;
        if let Some(r) = &mut rebuild {
            r.before(record.time.micros(), &record.kind, &session, &resumed, setup);
        }
        // A record that does not fit the board (a lift that does not match
        // after a reconnect, say) is skipped: the records after it still count.
        let _ = session.step_with(record, log.line_of(i), |step, core| {
            if let Played::Note(text) = &step.what {
                resumed.history.note(text, step.time.micros());
            }
            resumed.step(&step.what, core, setup);
            fault::on_resume(&setup.id);
        });
        // The history as it was made live: from the events, as they come; the
        // last turn's, from the new process's first publication.
        let events = session.take_events();
        resumed.history.observe(&events, session.core().game());
        if Some(record.time) == final_turn {
            unsaid.extend(events.iter().filter(|e| record_word(&e.kind)).cloned());
        }
        if let Some(r) = &mut rebuild {
            r.after(record.time.micros(), events, &session, &resumed, setup);
        }
    }
    let seed = rebuild.map(|r| r.finish(&session, &resumed, setup));
    session.take_events();
    for n in session.take_notes() {
        tracing::warn!("{file_name} (resuming): {}", crate::log::escaped(&n));
    }
    // Commands the clock got before the restart are not sent again.
    session.take_clock_commands();
    resumed.roster.all_noted();
    let mut writer = Journal::append(path, last).map_err(io)?;
    writer.comment(&format!("resumed {}", rfc3339_now()));
    // The configuration's settings judge what comes now: a line says so when
    // they are not those a reader of the journal has by now.
    let settings = setup.settings();
    if resumed.settings != settings {
        writer.comment(&format!("{SETTINGS_KEY}: {}", settings.to_json()));
    }
    session.set_settings(&settings);
    // The daemon stopped reading the board after the last record (stopped or
    // killed): the line was away from there, and the journal says so, so that
    // what the board did meanwhile (a piece set down on a square it slid
    // across, its release never seen) is judged by the dump after it, live and
    // in `replay` alike (the event campaign's seed 521).
    let away = Record {
        time: last,
        kind: RecordKind::Gap("not read while the daemon was down".into()),
    };
    writer.write(&away);
    let _ = session.step(&away, None);
    // Restarted: the time since the last record is unknown; go on a second
    // later. What the board showed by then is decided now, so that the first
    // publication has every move published before it (a move whose release
    // threshold passes only now is made, but as no fact: the dump after the
    // gap may amend it).
    let offset_us = last.micros() + 1_000_000;
    session.advance(offset_us);
    // The journal's time from here is the wall clock's from now.
    let now = unix_ms_now();
    writer.write(&Record {
        time: LogTime::from_micros(offset_us),
        kind: RecordKind::Note(format!("{RESUMED_AT}{}", rfc3339_now())),
    });
    resumed.history.anchor(offset_us, now);
    Ok(Opened {
        session,
        writer,
        offset_us,
        resumed,
        seed,
        unsaid,
    })
}

/// Whether an event is a word of the game's record (a move, its completion,
/// an amendment, a take-back): one a subscriber may hear twice and be none
/// the worse.
fn record_word(kind: &crate::rules::EventKind) -> bool {
    use crate::rules::EventKind;
    matches!(
        kind,
        EventKind::Move { .. }
            | EventKind::MoveAmended { .. }
            | EventKind::MoveCompleted { .. }
            | EventKind::Takeback { .. }
    )
}

/// Reads a board's recording to resume from it. A last line without its line end
/// (the daemon killed in the middle of a write) is cut off the file, so that the
/// records after the restart start on a line of their own.
fn read_journal(path: &std::path::Path) -> Result<crate::log::SensorLog, String> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| format!("{file}: {e}"))?;
    // A journal damaged on disk must not stop the board: bytes that are not UTF-8
    // become replacement characters, and the lines they are in are skipped below.
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let whole = text.rfind('\n').map_or(0, |i| i + 1);
    if whole < text.len() {
        tracing::warn!(
            "{file}: cutting off a torn last line: {:?}",
            clip_to(&text[whole..], 80)
        );
        OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|f| f.set_len(whole as u64))
            .map_err(|e| format!("{file}: {e}"))?;
    }
    let mut skipped = Vec::new();
    let log =
        crate::log::parse_log_lenient(&text[..whole], &file, &mut skipped).map_err(|e| e.to_string())?;
    for e in skipped {
        tracing::warn!(
            "{}: line skipped, resuming without it",
            crate::log::escaped(&e.to_string())
        );
    }
    Ok(log)
}

/// What a board's recording says besides the game, gathered while resuming.
#[derive(Default)]
pub(super) struct Resumed {
    pub serial: String,
    pub battery: Option<u8>,
    pub roster: Roster,
    /// The settings a reader of the recording has by now: its header's, then
    /// its `# settings:` lines' (the defaults when it states none).
    pub settings: Settings,
    /// The board's decisions and alerts, in words, as they were made live.
    pub history: Book,
}

impl Resumed {
    /// One played step of the recording, before the rules core takes it.
    fn step(&mut self, what: &Played, core: &Core, setup: &BoardSetup) {
        match what {
            Played::Board(BoardEvent::Info(info)) => match board_info(info) {
                Some(Info::Serial(s)) => self.serial = s,
                Some(Info::Battery(percent)) => self.battery = Some(percent),
                None => {}
            },
            Played::Settings(json) => {
                if let Ok(s) = Settings::from_json(json) {
                    self.settings = s;
                }
            }
            Played::Note(text) if text == RELOADED_NOTE => self.roster.reloaded(),
            Played::Note(text) => {
                if fault::broken("players") && self.players_noted_again(text) {
                    return;
                }
                self.roster.apply_note(text);
            }
            Played::Arbiter(method, args, _) => {
                // The record read back as the session reads it.
                let Ok(call) = Decision::from_record_texts(method, args) else {
                    return;
                };
                if fault::broken("players") && matches!(call, Decision::SetPlayers(..)) {
                    return;
                }
                // As the task took it live: the same checks, the same roster.
                let tags_now = |r: &Roster| r.for_new_games(board_tags(setup), setup.round_format);
                if let Err(e) = roster_call(&mut self.roster, core.game(), &call, tags_now) {
                    tracing::warn!(
                        "{}: {} in the journal is refused as it would be live ({}); resuming without it",
                        setup.id,
                        crate::log::escaped(method),
                        crate::log::escaped(e.message())
                    );
                }
            }
            _ => {}
        }
    }
}

/// The journal note that marks the configuration read again (resume clears the
/// players `SetPlayers` named there, as the daemon did live).
pub(super) const RELOADED_NOTE: &str = "configuration read again";

impl Resumed {
    /// Whether `text` is a tags note of a game already noted: the players
    /// and tags an arbiter's decision changed (the deliberate defect
    /// `break:players` drops them with the `SetPlayers` before them).
    fn players_noted_again(&self, text: &str) -> bool {
        text.strip_prefix(crate::daemon::roster::NOTE_PREFIX)
            .and_then(|json| serde_json::from_str::<serde_json::Value>(json).ok())
            .and_then(|note| note["game"].as_u64())
            .is_some_and(|game| self.roster.tags_of(game as u32).is_some())
    }
}
