//! `replay` on threads: one log on two (reading and printing beside the rules
//! core), many logs one after the other on the caller's thread.

use std::path::Path;
use std::sync::mpsc;

use shakmaty::{CastlingMode, Chess};

use super::{BATCH, CHUNK, Made, Print, Printer, Read, pgn_date, start_session};
use crate::log::{LogError, Player};
use crate::rules::{Game, Pinned, Settings};
use crate::session::{Judge, Session};

/// `replay` of one log file as a whole, on two threads, one a core each: one
/// reads, parses and plays the log into board-level steps (decoder and board as
/// for [`run`]) and prints what comes back; this one runs the rules core on the
/// steps and hands back its events as they come (`text`, `jsonl`) or the games
/// as they end (`uci`, `pgn`). Reading and printing together take about as long
/// as the rules core, so neither side waits much. The log is judged by the
/// settings it states (the defaults where it states none) but for those
/// `pinned`; `given` overrides the header's `fen`. Returns what to print for the
/// log, complete, in chunks to print in order: a log with a problem in it prints
/// nothing and gives the problem (the first one in the file, with its line).
pub fn replay_file(
    path: &Path,
    file: &str,
    pinned: Pinned,
    given: Option<&(Chess, CastlingMode)>,
    print: Print,
) -> Result<Vec<Vec<u8>>, String> {
    std::thread::scope(|scope| {
        let (steps_tx, steps_rx) = mpsc::sync_channel::<Read>(32);
        // Unbounded: the rules core never waits for the printer, so the reading
        // side (which waits for the rules core) cannot wait for itself.
        let (made_tx, made_rx) = mpsc::channel::<Made>();
        let io = scope.spawn(move || read_and_print(path, file, steps_tx, &made_rx, print));
        let played = play_steps(&steps_rx, &made_tx, file, pinned, given, print);
        // Stops the reading side if the rules core stopped first; ends what it
        // prints.
        drop(steps_rx);
        drop(made_tx);
        let printed = io
            .join()
            .unwrap_or_else(|_| Err(format!("{file}: the reading thread failed")));
        // The reader's problem comes first: the rules core only stops early when
        // the header is wrong, and the reader's is then "hung up" (empty).
        match (printed, played) {
            (Err(e), _) if !e.is_empty() => Err(e),
            (_, Err(e)) => Err(e),
            (printed, Ok(())) => printed,
        }
    })
}

/// The reading and printing side: the file parsed and played record by record,
/// the steps sent on in batches, and between records what the rules core has
/// made printed. An empty error means the rules core hung up (it has its own
/// problem to report).
fn read_and_print(
    path: &Path,
    file: &str,
    tx: mpsc::SyncSender<Read>,
    made: &mpsc::Receiver<Made>,
    print: Print,
) -> Result<Vec<Vec<u8>>, String> {
    let text = crate::log::read_text(path, file).map_err(|e| e.to_string())?;
    let mut printer = Printer {
        print,
        date: String::new(),
        out: Vec::new(),
        chunk: Vec::with_capacity(CHUNK),
        line: String::new(),
    };
    let mut player = Player::new(file);
    let mut steps = Vec::with_capacity(BATCH + 16);
    let mut header_sent = false;
    let hung_up = || LogError {
        file: String::new(),
        line: 0,
        problem: String::new(),
    };
    let header = crate::log::parse_each(&text, file, None, |header, record, line| {
        if !header_sent {
            printer.date = pgn_date(header);
            tx.send(Read::Header(header.clone())).map_err(|_| hung_up())?;
            header_sent = true;
        }
        player.play_into(&record, Some(line), &mut steps)?;
        if steps.len() >= BATCH {
            let next = Vec::with_capacity(BATCH + 16);
            let mut full = Read::Steps(std::mem::replace(&mut steps, next));
            // While the rules core is a batch behind, print what it made: it
            // hands something back after every batch, which also frees a slot.
            loop {
                match tx.try_send(full) {
                    Ok(()) => break,
                    Err(mpsc::TrySendError::Full(again)) => {
                        full = again;
                        printer.print(&made.recv().map_err(|_| hung_up())?);
                    }
                    Err(mpsc::TrySendError::Disconnected(_)) => return Err(hung_up()),
                }
            }
            while let Ok(m) = made.try_recv() {
                printer.print(&m);
            }
        }
        Ok(())
    })
    .map_err(|e| {
        if e.problem.is_empty() {
            String::new()
        } else {
            e.to_string()
        }
    })?;
    if !header_sent {
        printer.date = pgn_date(&header);
        tx.send(Read::Header(header)).map_err(|_| String::new())?;
    }
    tx.send(Read::Steps(steps)).map_err(|_| String::new())?;
    tx.send(Read::End(player.finish())).map_err(|_| String::new())?;
    drop(tx);
    for m in made {
        printer.print(&m);
    }
    printer.out.push(printer.chunk);
    Ok(printer.out)
}

/// `replay` of many log files, one after the other on this thread: each file
/// run whole (read, parse, play, rules core, print into one buffer kept from
/// file to file), and `write` given its output, in the order of `paths`.
/// `write` returns `false` to stop (stdout closed); the first file with a
/// problem stops the replay there, after the files before it were written, and
/// its problem is returned with its index.
///
/// One thread a file cost more than a short file's events (a thread's start and
/// end, the futex hand-over of every batch, the allocator's purge at each
/// thread's end): 700 logs of 150 events ran at 0.28 M events/s of CPU time,
/// 72% of system time in futex waits. A pool of one thread a core then handed
/// each file's output to the writing thread: on the 2 cores measured, the two
/// threads together took 1.3 times the CPU time of one doing everything
/// (`docs/PERFORMANCE.md`, issue 36), for 0.6 times the wall time. The figure
/// that counts for an audit of many logs is the CPU time, so there is no pool.
pub fn replay_many(
    paths: &[(std::path::PathBuf, String)],
    pinned: Pinned,
    given: Option<&(Chess, CastlingMode)>,
    print: Print,
    mut write: impl FnMut(usize, &[u8]) -> bool,
) -> Result<(), (usize, String)> {
    let (mut buf, mut text) = (Vec::new(), Vec::new());
    for (i, (path, file)) in paths.iter().enumerate() {
        buf.clear();
        replay_in(path, file, pinned, given, print, &mut buf, &mut text).map_err(|e| (i, e))?;
        if !write(i, &buf) {
            return Ok(());
        }
    }
    Ok(())
}

/// One log file on this thread: what [`replay_file`] prints of it, appended to
/// `out`. Nothing is appended when the log has a problem (the first one in the
/// file, with its line).
pub fn replay_one(
    path: &Path,
    file: &str,
    pinned: Pinned,
    given: Option<&(Chess, CastlingMode)>,
    print: Print,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    replay_in(path, file, pinned, given, print, out, &mut Vec::new())
}

/// [`replay_one`], the file read into `text_buf` (kept from file to file).
fn replay_in(
    path: &Path,
    file: &str,
    pinned: Pinned,
    given: Option<&(Chess, CastlingMode)>,
    print: Print,
    out: &mut Vec<u8>,
    text_buf: &mut Vec<u8>,
) -> Result<(), String> {
    let text = crate::log::read_text_into(path, file, text_buf).map_err(|e| e.to_string())?;
    let mut printer = Printer {
        print,
        date: String::new(),
        out: Vec::new(),
        chunk: std::mem::take(out),
        line: String::new(),
    };
    let start_len = printer.chunk.len();
    let mut session: Option<Session> = None;
    let events = matches!(print, Print::Text | Print::Jsonl);
    let mut games = Vec::new();
    let mut since = 0;
    let hand_on = |session: &mut Session, printer: &mut Printer, games: &mut Vec<Game>, last: bool| {
        if events {
            let made = Made::Events(session.take_events());
            printer.print(&made);
            super::warn_notes(session.take_notes(), file);
        } else {
            session.drop_events();
            super::warn_notes(session.take_notes(), file);
            games.extend(session.take_finished());
            if last {
                games.extend(session.take_game());
            }
            if !games.is_empty() {
                printer.print(&Made::Games(std::mem::take(games)));
            }
        }
    };
    let result = (|| {
        let header = crate::log::parse_each(text, file, None, |header, record, line| {
            let session = match &mut session {
                Some(s) => s,
                None => {
                    printer.date = pgn_date(header);
                    let made = start_session(header, file, Settings::default(), pinned, given, print)
                        .map_err(|problem| LogError {
                            file: String::new(),
                            line: 0,
                            problem,
                        })?;
                    session.insert(made)
                }
            };
            session.step(&record, Some(line))?;
            // What the core made is printed now and then, not kept whole.
            since += 1;
            if since >= BATCH {
                since = 0;
                hand_on(session, &mut printer, &mut games, false);
            }
            Ok(())
        })
        .map_err(|e| {
            if e.file.is_empty() {
                e.problem
            } else {
                e.to_string()
            }
        })?;
        let session = match &mut session {
            Some(s) => s,
            None => {
                printer.date = pgn_date(&header);
                session.insert(start_session(
                    &header,
                    file,
                    Settings::default(),
                    pinned,
                    given,
                    print,
                )?)
            }
        };
        session.finish();
        hand_on(session, &mut printer, &mut games, true);
        Ok(())
    })();
    *out = printer.chunk;
    if result.is_err() {
        out.truncate(start_len);
    }
    result
}

/// The rules core's side: the steps as they come, the events and the games that
/// end handed back as they are made.
fn play_steps(
    rx: &mpsc::Receiver<Read>,
    tx: &mpsc::Sender<Made>,
    file: &str,
    pinned: Pinned,
    given: Option<&(Chess, CastlingMode)>,
    print: Print,
) -> Result<(), String> {
    let Ok(Read::Header(header)) = rx.recv() else {
        // The reader stopped before the header: its problem says why.
        return Ok(());
    };
    let session = start_session(&header, file, Settings::default(), pinned, given, print)?;
    // The player is the reading side's; this side judges its steps.
    let (_, mut judge) = session.into_parts();
    let events = matches!(print, Print::Text | Print::Jsonl);
    let hand_on = |judge: &mut Judge, last: bool| {
        super::warn_notes(judge.take_notes(), file);
        let made = if events {
            Made::Events(judge.take_events())
        } else {
            judge.drop_events();
            let mut games = judge.take_finished();
            if last {
                games.extend(judge.take_game());
            }
            Made::Games(games)
        };
        // The reading side stops listening only when it has its own problem.
        let _ = tx.send(made);
    };
    for read in rx {
        match read {
            Read::Header(_) => {}
            Read::Steps(steps) => {
                for step in &steps {
                    judge.step(step);
                }
                hand_on(&mut judge, false);
            }
            // The end of the log, as a session ends it.
            Read::End(rest) => {
                judge.finish_with(rest);
                hand_on(&mut judge, true);
                return Ok(());
            }
        }
    }
    // The reading side stopped before the end: its problem says why.
    Ok(())
}
