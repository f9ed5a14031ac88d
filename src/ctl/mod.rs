//! `eboard-bridge ctl`, the arbiter's command (`docs/INTERFACES.md`, "Command line";
//! `docs/EVENT.md`): every call on the daemon as a plain sub-command, boards
//! named by their number (or id, or serial number), times and results as people
//! write them. It talks to a running daemon over D-Bus: every decision is the same
//! journaled `arbiter` decision as a D-Bus call, with the caller's user name.
//!
//! - [`client`]: the bus, the boards, the calls and what a refusal means;
//! - [`format`]: times, results, the boards' table, the events watched;
//! - [`pairings`]: a round's pairings as tournament programs export them;
//! - [`lichess`]: the rounds pushed to lichess, as `ctl boards` shows them;
//! - [`alerts`]: the console's alerts, `ctl ack` and in `ctl boards N`.
//!
//! Exit status: 0 done, 1 refused by the daemon (or no daemon), 2 a usage error.

pub mod alerts;
mod args;
pub mod client;
pub mod detail;
pub mod format;
pub mod history;
pub mod lichess;
pub mod passwd;
pub mod round;

use std::collections::BTreeMap;
use std::process::ExitCode;

use crate::api::Decision;
use crate::pairings;
use client::{Client, CtlError, Which};

pub use args::{CtlArgs, CtlBus, CtlCommand, CtlSide, ResultsFormat};

/// Runs `ctl`; the exit status.
pub fn main(args: CtlArgs) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("eboard-bridge ctl: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(CtlError::Usage(m)) => {
            eprintln!("eboard-bridge ctl: {m}");
            ExitCode::from(2)
        }
        Err(CtlError::Refused(m)) => {
            eprintln!("eboard-bridge ctl: {m}");
            ExitCode::from(1)
        }
        Err(CtlError::Absent { which, reached, why }) => {
            eprintln!(
                "eboard-bridge ctl: {}",
                rt.block_on(client::nowhere(which, reached, &why))
            );
            ExitCode::from(1)
        }
    }
}

/// What a change of players or tags (`what`) did on board `b` as it was
/// asked: the game under way and the next ones take it; a game that is over
/// keeps its own, and the words say so (issue 57: they read as if it changed).
fn for_which_game(b: &format::BoardView, what: String) -> String {
    match b.status.as_str() {
        _ if !b.result.is_empty() => format!(
            "{what} from its next game on (its game is over ({}): its PGN keeps {} - {} and its tags)",
            b.result, b.white, b.black
        ),
        "waiting" => format!("{what} from its next game on"),
        _ => what,
    }
}

async fn run(args: CtlArgs) -> Result<(), CtlError> {
    let which = match args.bus {
        CtlBus::System => Which::System,
        CtlBus::Session => Which::Session,
    };
    if let CtlCommand::Passwd { user, file } = &args.command {
        return passwd::run(user, file.as_deref());
    }
    // A file that does not read is refused (exit status 1, as the daemon's
    // refusals: the command line was right) before the daemon is asked anything.
    let pairings = match &args.command {
        CtlCommand::Pairings { file, round } => {
            Some(pairings::read(file, *round).map_err(|e| CtlError::Refused(e.to_string()))?)
        }
        CtlCommand::Round {
            round,
            pairings: Some(file),
        } => Some(pairings::read(file, Some(*round)).map_err(|e| CtlError::Refused(e.to_string()))?),
        _ => None,
    };
    let client = Client::connect(which).await?;
    let done = |b: &format::BoardView, what: String| {
        println!("board {} ({}): {what}", b.number, b.id);
    };
    match args.command {
        CtlCommand::Boards {
            board: Some(name),
            json,
        } => {
            let mut boards = vec![client.board(&name).await?];
            let rounds = client.lichess().await?;
            lichess::attach(&mut boards, &rounds);
            alerts::attach(&client, &mut boards).await;
            if json {
                println!("{}", serde_json::to_string_pretty(&boards[0]).unwrap_or_default());
            } else {
                print!("{}", detail::detail(&boards[0]));
            }
        }
        CtlCommand::Boards { board: None, json } => {
            let mut boards = client.boards().await?;
            let rounds = client.lichess().await?;
            lichess::attach(&mut boards, &rounds);
            if json {
                alerts::attach(&client, &mut boards).await;
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&boards).unwrap_or_default());
            } else if boards.is_empty() {
                println!(
                    "no boards yet: plug one in (journalctl -u eboard-bridge says what the daemon sees)"
                );
            } else {
                print!("{}", format::table(&boards));
            }
            if !json {
                print!("{}", lichess::lines(&rounds));
            }
        }
        CtlCommand::Lichess { round, ids } => {
            let ids = lichess::ids_arg(&ids)?;
            match ids.as_slice() {
                [] => client.set_lichess_round(round, "").await?,
                [one] => client.set_lichess_round(round, one.as_str()).await?,
                many => client.set_lichess_rounds(round, many).await?,
            }
            match ids.as_slice() {
                [] => println!("round {round}: no longer pushed to lichess"),
                [one] => println!(
                    "round {round}: pushed to the lichess broadcast round {one} from now on, whole at once (ctl boards shows how it goes)"
                ),
                many => println!(
                    "round {round}: pushed to the lichess broadcast rounds {} from now on, each whole at once (ctl boards shows how it goes)",
                    crate::api::lichess::ids_words(many)
                ),
            }
        }
        CtlCommand::Delay { args } => {
            let (round, duration) = match args.as_slice() {
                [] => {
                    println!("broadcast delay: {}", client.broadcast_delay().await?);
                    return Ok(());
                }
                // `ctl delay 3` may mean round 3: a duration alone has its unit.
                [d] if d != "0" && d.bytes().all(|b| b.is_ascii_digit()) => {
                    return Err(CtlError::Usage(format!(
                        "`{}`: give the duration its unit (3s, 3m, 1h) or a round and a duration (ctl delay 3 15m)",
                        crate::log::escaped(d)
                    )));
                }
                [d] => (0, d.as_str()),
                [r, d] => match r.parse::<u32>() {
                    Ok(r) if r > 0 => (r, d.as_str()),
                    _ => {
                        return Err(CtlError::Usage(format!(
                            "`{}` is not a round: ctl delay [ROUND] DURATION|off (ctl delay 3 15m)",
                            crate::log::escaped(r)
                        )));
                    }
                },
                _ => return Err(CtlError::Usage("ctl delay [ROUND] DURATION|off".into())),
            };
            let ms = crate::api::delay::parse_duration(duration).map_err(CtlError::Usage)?;
            client.set_broadcast_delay(round, duration).await?;
            let which = if round == 0 {
                "every round".to_string()
            } else {
                format!("round {round}")
            };
            if ms == 0 {
                println!("{which}: no broadcast delay; every move held is published now");
            } else {
                println!(
                    "{which}: spectators see each game as it stood {} ago from now on; ctl and the console stay live",
                    crate::api::delay::words(ms)
                );
            }
        }
        CtlCommand::Watch { json } => client.watch(json).await?,
        CtlCommand::Results { round, format } => round::results(&client, round, format).await?,
        CtlCommand::Players { board, white, black } => {
            let b = client.board(&board).await?;
            client
                .decide(&b, &Decision::SetPlayers(white.clone(), black.clone()), false)
                .await?;
            done(&b, for_which_game(&b, format!("players {white} - {black}")));
        }
        CtlCommand::Tags { board, tags } => {
            let b = client.board(&board).await?;
            let map: BTreeMap<String, String> = tags.iter().cloned().collect();
            client.decide(&b, &Decision::SetTags(map), false).await?;
            let shown: Vec<String> = tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
            done(&b, for_which_game(&b, format!("tags {}", shown.join(" "))));
        }
        CtlCommand::Result {
            board,
            result,
            termination,
            force,
        } => {
            let b = client.board(&board).await?;
            let d = made(Decision::set_result(&result, termination.as_deref()))?;
            client.decide(&b, &d, force).await?;
            match termination {
                None => done(&b, format!("result {result}")),
                Some(t) => done(&b, format!("result {result} ({t})")),
            }
        }
        CtlCommand::Reinstate { board, ply, force } => {
            let b = client.board(&board).await?;
            client.decide(&b, &Decision::Reinstate(ply), force).await?;
            done(&b, format!("back to ply {ply}"));
        }
        CtlCommand::Position { board, fen, force } => {
            let (fen, force) = fen_and_force(fen, force);
            let b = client.board(&board).await?;
            client
                .decide(&b, &made(Decision::set_position(&fen))?, force)
                .await?;
            done(&b, format!("position {fen}"));
        }
        CtlCommand::NewGame { board, fen, force } => {
            let (fen, force) = fen_and_force(fen, force);
            let b = client.board(&board).await?;
            client.decide(&b, &made(Decision::new_game(&fen))?, force).await?;
            done(
                &b,
                if fen.is_empty() {
                    "new game".into()
                } else {
                    format!("new game from {fen}")
                },
            );
        }
        CtlCommand::TimeControl { board, spec } => {
            let b = client.board(&board).await?;
            let d = made(Decision::set_time_control(&spec, crate::rules::ClockMode::Drive))?;
            client.decide(&b, &d, false).await?;
            done(&b, format!("time control {spec}"));
        }
        CtlCommand::AddTime { board, side, time } => {
            let b = client.board(&board).await?;
            let side = match side {
                CtlSide::White => "white",
                CtlSide::Black => "black",
            };
            client
                .decide(&b, &made(Decision::add_time(side, i64::from(time)))?, false)
                .await?;
            let what = if time < 0 {
                format!("{} s taken from {side}", -i64::from(time))
            } else {
                format!("{time} s added to {side}")
            };
            done(&b, what);
        }
        CtlCommand::SetClock { board, white, black } => {
            let b = client.board(&board).await?;
            client
                .decide(&b, &made(Decision::set_clock(white, black))?, false)
                .await?;
            done(
                &b,
                format!(
                    "clocks set: white {}, black {}",
                    format::clock(white),
                    format::clock(black)
                ),
            );
        }
        CtlCommand::Text { board, text, seconds } => {
            let b = client.board(&board).await?;
            client
                .decide(&b, &Decision::ShowText(text.clone(), seconds), false)
                .await?;
            done(&b, detail::text_shown(&b, &text, seconds));
        }
        CtlCommand::History { board, last, json } => {
            let b = client.board(&board).await?;
            let entries = client.history(&b, last).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&entries).unwrap_or_default());
            } else {
                print!("{}", history::text(&b, &entries));
            }
        }
        CtlCommand::Undo { board, force } => {
            let b = client.board(&board).await?;
            if let Err(e) = client.decide(&b, &Decision::Undo { force }, false).await {
                return Err(history::undo_refused(&b, e));
            }
            let last = client.history(&b, 1).await?;
            let what = last.last().map_or("undone".to_string(), |e| e.text.clone());
            done(&b, what);
        }
        CtlCommand::Passwd { .. } => {}
        CtlCommand::Pairings { .. } => {
            if let Some(p) = pairings {
                round::pairings(&client, &p).await?;
            }
        }
        CtlCommand::Round { round, .. } => round::start(&client, round, pairings.as_ref()).await?,
        CtlCommand::Ack { target } => alerts::ack(&client, &target).await?,
    }
    Ok(())
}

/// A FEN's words, and `--force` given among them (a FEN takes any words after
/// the board, so the flag may land there).
fn fen_and_force(words: Vec<String>, force: bool) -> (String, bool) {
    let given = words.iter().any(|w| w == "--force");
    let fen: Vec<String> = words.into_iter().filter(|w| w != "--force").collect();
    (fen.join(" "), force || given)
}

/// A decision made on the command line, its payloads checked as every door
/// checks them (`rules::Decision::set_result`, ...): refused, in the daemon's
/// words.
fn made(d: Result<Decision, crate::rules::Refused>) -> Result<Decision, CtlError> {
    d.map_err(|e| CtlError::Refused(format!("refused: {e}")))
}
