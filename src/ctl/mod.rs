//! `eboard-bridge ctl`, the arbiter's command (`docs/INTERFACES.md`, "Command line";
//! `docs/EVENT.md`): every call on the daemon as a plain sub-command, boards
//! named by their number (or id, or serial number), times and results as people
//! write them. It talks to a running daemon over D-Bus: every decision is the same
//! journaled `arbiter` decision as a D-Bus call, with the caller's user name.
//!
//! - [`client`]: the bus, the boards, the calls and what a refusal means;
//! - [`format`]: times, results, the boards' table, the events watched;
//! - [`pairings`]: a round's pairings as tournament programs export them;
//! - [`lichess`]: the rounds pushed to lichess, as `ctl boards` shows them.
//!
//! Exit status: 0 done, 1 refused by the daemon (or no daemon), 2 a usage error.

pub mod client;
pub mod detail;
pub mod force;
pub mod format;
pub mod lichess;
pub mod passwd;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};

use crate::pairings;
use client::{Client, CtlError, Which};
use force::Change;

/// Which bus the daemon is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CtlBus {
    /// The system bus (the service, as systemd runs it).
    System,
    /// The session bus (`eboard-bridge demo`, or `run --bus session`).
    Session,
}

/// The arbiter's command: `ctl [--bus system|session] COMMAND`.
#[derive(Debug, Args)]
#[command(
    after_help = "BOARD is a board number (12), a board id (dgt_12345) or a serial number.\n\
Exit status: 0 done; 1 refused by the daemon (the message says why and what to do) or no daemon; 2 a usage error.\n\
Every call is journaled in the board's recording as the arbiter's decision, with your user name."
)]
pub struct CtlArgs {
    /// Where the daemon is: the system bus (the service) or the session bus (the demo).
    #[arg(long, value_enum, default_value = "system", global = true)]
    pub bus: CtlBus,
    #[command(subcommand)]
    pub command: CtlCommand,
}

/// How `ctl results` prints the round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ResultsFormat {
    /// A table for people.
    Text,
    /// board,white,black,result with a header row, for the tournament program.
    Csv,
    /// The round's games, one after another.
    Pgn,
}

/// A side of the board.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CtlSide {
    White,
    Black,
}

#[derive(Debug, Subcommand)]
pub enum CtlCommand {
    /// One line a board: number, id, players, status, plies, last move, both clocks
    /// (`<` white's running, `>` black's) and what needs the arbiter.
    Boards {
        /// One board in detail (number, id or serial number): the players with
        /// their ratings, the clocks, the moves, what needs the arbiter.
        board: Option<String>,
        /// One JSON array of the boards, for scripts.
        #[arg(long)]
        json: bool,
    },
    /// Prints the events that need the arbiter as they happen (irregular moves and
    /// positions, touch-move, flags, lost track, draws claimable, a clock not
    /// answering, a board disconnected or gone, game ends), with the board number,
    /// until Ctrl-C.
    Watch {
        /// One JSON object a line (`time`, `board`, `id`, `type` and the event's fields).
        #[arg(long)]
        json: bool,
    },
    /// Names the players of the game under way (if not over) and of the board's next games.
    Players {
        /// The board: number, id or serial number.
        board: String,
        /// White's name, as the PGN writes it ("Carlsen, Magnus").
        white: String,
        /// Black's name.
        black: String,
    },
    /// Sets the pairing's PGN tags of the game under way (if not over) and of the
    /// next games: WhiteElo, BlackElo, WhiteFideId, BlackFideId, WhiteTitle,
    /// BlackTitle, WhiteTeam, BlackTeam (an empty value removes one).
    Tags {
        /// The board: number, id or serial number.
        board: String,
        /// NAME=VALUE, for example WhiteElo=2830 BlackFideId=8603677.
        #[arg(required = true, value_parser = tag_arg, value_name = "NAME=VALUE")]
        tags: Vec<(String, String)>,
    },
    /// Gives the game's result (the game ends, termination `arbiter`; with
    /// --termination, the PGN's Termination tag says how it ended).
    Result {
        /// The board: number, id or serial number.
        board: String,
        /// 1-0, 0-1, 1/2 (1/2-1/2) or * (quote it in the shell: '*').
        #[arg(value_parser = result_arg)]
        result: String,
        /// How the game ended, for the PGN's Termination tag: "time forfeit",
        /// "adjudication", "rules infraction", ... (one line, up to 60 characters).
        #[arg(long, value_name = "TEXT", value_parser = termination_arg)]
        termination: Option<String>,
        /// Change a finished game anyway (without it, `ctl` says what would change).
        #[arg(long)]
        force: bool,
    },
    /// Takes the game back to ply PLY (Art. 7.5.1: the position before the
    /// irregularity): 0 is the start, 1 after White's first move.
    Reinstate {
        /// The board: number, id or serial number.
        board: String,
        /// The ply to go back to.
        ply: u32,
        /// Change a finished game anyway (without it, `ctl` says what would change).
        #[arg(long)]
        force: bool,
    },
    /// Sets the position (FEN): a position of the game takes it back there;
    /// another ends the game under way `*` and play goes on from it in a new game.
    Position {
        /// The board: number, id or serial number.
        board: String,
        /// The FEN (quoted, or its six fields as they come).
        #[arg(required = true, num_args = 1.., allow_hyphen_values = true)]
        fen: Vec<String>,
        /// Change a finished game anyway (without it, `ctl` says what would change).
        #[arg(long)]
        force: bool,
    },
    /// Starts a new game (the game under way, if it has moves, ends `*` abandoned and is kept).
    NewGame {
        /// The board: number, id or serial number.
        board: String,
        /// A start position (FEN); none: the standard start.
        #[arg(num_args = 0.., allow_hyphen_values = true)]
        fen: Vec<String>,
        /// End a game under way (without it, `ctl` says what would end).
        #[arg(long)]
        force: bool,
    },
    /// Sets the time control the daemon drives the board's clock with (before the
    /// game's first move): 90+30, 40/90+30,30+30, G/90;d5, or PGN seconds 5400+30.
    TimeControl {
        /// The board: number, id or serial number.
        board: String,
        /// The time control.
        #[arg(value_parser = time_control_arg)]
        spec: String,
    },
    /// Adds time to a side's clock (Art. 7.5.5, 6.11), or takes it with a minus:
    /// 120 (seconds), +2m, -30s, 1m30s, +1:30.
    AddTime {
        /// The board: number, id or serial number.
        board: String,
        /// Whose clock (white or black, in any case).
        #[arg(value_enum, ignore_case = true)]
        side: CtlSide,
        /// How much.
        #[arg(allow_hyphen_values = true, value_parser = format::duration)]
        time: i32,
    },
    /// Sets both clocks (H:MM:SS or M:SS: 1:30:00, 5:00; a bare number such as
    /// 10 is refused, it could be seconds, minutes or hours); the side running
    /// goes on running.
    SetClock {
        /// The board: number, id or serial number.
        board: String,
        /// White's time.
        #[arg(value_parser = format::clock_ms)]
        white: i64,
        /// Black's time.
        #[arg(value_parser = format::clock_ms)]
        black: i64,
    },
    /// Shows a text on the board's clock (up to 8 ASCII characters).
    Text {
        /// The board: number, id or serial number.
        board: String,
        /// The text ("ARBITER").
        #[arg(value_parser = text_arg)]
        text: String,
        /// For how long, in seconds.
        #[arg(default_value_t = 5)]
        seconds: u32,
    },
    /// The round's results (board, white, black, result): to check against the
    /// tournament program or import into it; `--format pgn`: the round's games.
    /// A game not over shows `*`.
    Results {
        /// The round (default: every board's round under way); a round the
        /// boards have left is in the broadcast folder (round-N/).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        round: Option<u32>,
        /// text, csv or pgn.
        #[arg(long, value_enum, default_value = "text")]
        format: ResultsFormat,
    },
    /// Prints a line for the arbiters' file of the console (`[http] arbiters`):
    /// USER:HASH, an Argon2id hash of the password read from the terminal (twice,
    /// not shown) or from standard input's first line. Needs no daemon: append
    /// it to the file (`ctl passwd alice >> /etc/eboard-bridge/arbiters`).
    Passwd {
        /// The arbiter's user name: letters, digits, `.`, `_` or `-` (up to 32).
        user: String,
    },
    /// Pushes round ROUND of the event to a lichess broadcast round from now on
    /// (the round is pushed whole to it at once); `off`: no longer pushed.
    /// The daemon journals it: it holds across restarts, until the
    /// configuration's [lichess] rounds change that round.
    Lichess {
        /// The event's round (1, 2, ...).
        #[arg(value_parser = clap::value_parser!(u32).range(1..))]
        round: u32,
        /// The broadcast round's id, the 8 letters and digits at the end of its
        /// address on lichess (or the address itself), or `off`.
        #[arg(value_parser = lichess_id_arg)]
        id: String,
    },
    /// Loads a round's pairings from the tournament program's export: a PGN with
    /// headers only (the board from a Board tag or Round "R.B") or a CSV with the
    /// header row board,white,black and any of white_elo, black_elo, white_fide_id,
    /// black_fide_id, white_title, black_title, white_team, black_team. Each
    /// board's next game (or its game not begun) takes its pairing; a game under
    /// way keeps its players. A file with an unknown board, a board twice or a
    /// malformed line is refused whole (with the file and line).
    Pairings {
        /// The PGN or CSV file.
        file: PathBuf,
        /// The round (a PGN's games of other rounds are left out); default: the
        /// round the PGN names, else each board's round stays.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        round: Option<u32>,
    },
}

fn tag_arg(s: &str) -> Result<(String, String), String> {
    let (name, value) = s
        .split_once('=')
        .ok_or_else(|| format!("`{}` is not NAME=VALUE", crate::log::clip_to(s, 40)))?;
    crate::api::check_tag(name, value, false)?;
    Ok((name.to_string(), value.to_string()))
}

/// A broadcast round's id (or its address), or `off` (as an empty id).
fn lichess_id_arg(s: &str) -> Result<String, String> {
    if s.trim().eq_ignore_ascii_case("off") {
        return Ok(String::new());
    }
    crate::api::lichess::RoundId::parse(s).map(String::from)
}

fn result_arg(s: &str) -> Result<String, String> {
    format::result(s)
}

fn termination_arg(s: &str) -> Result<String, String> {
    crate::rules::termination_words(s)
}

fn time_control_arg(s: &str) -> Result<String, String> {
    crate::clock::control::TimeControl::parse(s).map(|_| s.to_string())
}

fn text_arg(s: &str) -> Result<String, String> {
    if s.is_ascii() && s.len() <= 8 && !s.chars().any(|c| c.is_ascii_control()) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "`{}`: the clock shows up to 8 ASCII characters",
            crate::log::clip_to(s, 20)
        ))
    }
}

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
    }
}

async fn run(args: CtlArgs) -> Result<(), CtlError> {
    let which = match args.bus {
        CtlBus::System => Which::System,
        CtlBus::Session => Which::Session,
    };
    if let CtlCommand::Passwd { user } = &args.command {
        return passwd::run(user);
    }
    // A file that does not read is said before the daemon is asked anything.
    let pairings = match &args.command {
        CtlCommand::Pairings { file, round } => {
            Some(pairings::read(file, *round).map_err(|e| CtlError::Usage(e.to_string()))?)
        }
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
        CtlCommand::Lichess { round, id } => {
            client.set_lichess_round(round, &id).await?;
            if id.is_empty() {
                println!("round {round}: no longer pushed to lichess");
            } else {
                println!(
                    "round {round}: pushed to the lichess broadcast round {id} from now on, whole at once (ctl boards shows how it goes)"
                );
            }
        }
        CtlCommand::Watch { json } => client.watch(json).await?,
        CtlCommand::Results { round, format } => {
            // From D-Bus, not the broadcast folder: `ctl` knows the daemon only
            // by the bus (the folder's place is in the daemon's configuration,
            // which ctl does not read, and may not be readable by the arbiter),
            // and the bus shows each decision at once. It holds each board's game
            // under way, that is the round being played; an earlier round is
            // in the folder (round-N/), which this says when asked for one.
            let boards = client.boards().await?;
            let round_of =
                |b: &format::BoardView| b.round.split('.').next().unwrap_or_default().trim().to_string();
            let chosen: Vec<format::BoardView> = match round {
                None => boards,
                Some(n) => {
                    let n = n.to_string();
                    let (on, off): (Vec<_>, Vec<_>) = boards.into_iter().partition(|b| round_of(b) == n);
                    if on.is_empty() {
                        let mut rounds: Vec<String> =
                            off.iter().map(round_of).filter(|r| !r.is_empty()).collect();
                        rounds.sort();
                        rounds.dedup();
                        return Err(CtlError::Refused(format!(
                            "no board plays round {n} now{}: an earlier round's games are in the broadcast folder (round-{n}/)",
                            if rounds.is_empty() {
                                String::new()
                            } else {
                                format!(" (the boards are on round {})", rounds.join(", "))
                            }
                        )));
                    }
                    on
                }
            };
            print!("{}", format::results(&chosen, format));
        }
        CtlCommand::Players { board, white, black } => {
            let b = client.board(&board).await?;
            client
                .board_call(&b, "SetPlayers", &(white.as_str(), black.as_str()))
                .await?;
            done(&b, format!("players {white} - {black}"));
        }
        CtlCommand::Tags { board, tags } => {
            let b = client.board(&board).await?;
            let map: HashMap<String, String> = tags.iter().cloned().collect();
            client.board_call(&b, "SetTags", &(map,)).await?;
            let shown: Vec<String> = tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
            done(&b, format!("tags {}", shown.join(" ")));
        }
        CtlCommand::Result {
            board,
            result,
            termination,
            force,
        } => {
            let b = client.board(&board).await?;
            confirm(&b, Change::Result(&result), force)?;
            match &termination {
                // The call of old (a daemon before issue 48 has no SetResultWith).
                None => client.board_call(&b, "SetResult", &(result.as_str(),)).await?,
                Some(t) => {
                    client
                        .board_call(&b, "SetResultWith", &(result.as_str(), t.as_str()))
                        .await?
                }
            }
            match termination {
                None => done(&b, format!("result {result}")),
                Some(t) => done(&b, format!("result {result} ({t})")),
            }
        }
        CtlCommand::Reinstate { board, ply, force } => {
            let b = client.board(&board).await?;
            confirm(&b, Change::Reinstate(ply), force)?;
            client.board_call(&b, "Reinstate", &(ply,)).await?;
            done(&b, format!("back to ply {ply}"));
        }
        CtlCommand::Position { board, fen, force } => {
            let (fen, force) = fen_and_force(fen, force);
            let b = client.board(&board).await?;
            confirm(&b, Change::Position, force)?;
            client.board_call(&b, "SetPosition", &(fen.as_str(),)).await?;
            done(&b, format!("position {fen}"));
        }
        CtlCommand::NewGame { board, fen, force } => {
            let (fen, force) = fen_and_force(fen, force);
            let b = client.board(&board).await?;
            confirm(&b, Change::NewGame, force)?;
            client.board_call(&b, "NewGame", &(fen.as_str(),)).await?;
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
            client.board_call(&b, "SetTimeControl", &(spec.as_str(),)).await?;
            done(&b, format!("time control {spec}"));
        }
        CtlCommand::AddTime { board, side, time } => {
            let b = client.board(&board).await?;
            let side = match side {
                CtlSide::White => "white",
                CtlSide::Black => "black",
            };
            client.board_call(&b, "AddTime", &(side, time)).await?;
            let what = if time < 0 {
                format!("{} s taken from {side}", -i64::from(time))
            } else {
                format!("{time} s added to {side}")
            };
            done(&b, what);
        }
        CtlCommand::SetClock { board, white, black } => {
            let b = client.board(&board).await?;
            client.board_call(&b, "SetClock", &(white, black)).await?;
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
                .board_call(&b, "ShowText", &(text.as_str(), seconds))
                .await?;
            done(&b, detail::text_shown(&b, &text, seconds));
        }
        CtlCommand::Passwd { .. } => {}
        CtlCommand::Pairings { .. } => {
            let Some(p) = pairings else {
                return Ok(());
            };
            let list: Vec<(u32, HashMap<String, String>)> = p
                .boards
                .iter()
                .map(|b| {
                    (
                        b.board,
                        b.tags.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                    )
                })
                .collect();
            let round = p.round.unwrap_or(0);
            // A file of an earlier round (an old export picked by mistake), or
            // one that skips rounds, is loaded, and said.
            let on: Option<u32> = client
                .boards()
                .await?
                .iter()
                .filter_map(|b| b.round.split('.').next()?.parse().ok())
                .max();
            if let (Some(r), Some(on)) = (p.round, on) {
                if r < on || r > on + 1 {
                    eprintln!(
                        "eboard-bridge ctl: note: {}: the file is round {r}'s pairings, the boards are on round {on}: is it the right export? (loaded: load the right file to put it right)",
                        p.file
                    );
                }
            }
            for note in &p.notes {
                eprintln!("eboard-bridge ctl: note: {}: {note}", p.file);
            }
            if let Err(e) = client.set_pairings(round, &list).await {
                // The daemon names the board it does not have: the file's line too.
                let CtlError::Refused(m) = &e else { return Err(e) };
                let line = m
                    .strip_prefix("no board ")
                    .and_then(|r| r.split(':').next())
                    .and_then(|n| n.parse::<u32>().ok())
                    .and_then(|n| p.boards.iter().find(|b| b.board == n));
                return Err(match line {
                    Some(b) => CtlError::Refused(format!("{}:{}: {m}; nothing was applied", p.file, b.line)),
                    None => CtlError::Refused(format!("{}: {m}; nothing was applied", p.file)),
                });
            }
            let numbers: Vec<u32> = p.boards.iter().map(|b| b.board).collect();
            let round = p.round.map(|r| format!("round {r}, ")).unwrap_or_default();
            println!(
                "{round}{} board(s) ({}) from {}: each board's next game (or its game not begun) takes its pairing",
                numbers.len(),
                crate::api::board_numbers(&numbers),
                p.file
            );
        }
    }
    Ok(())
}

/// Refuses a decision that changes a finished game (or ends one under way)
/// unless `force`, saying what it would change.
fn confirm(b: &format::BoardView, change: Change, force: bool) -> Result<(), CtlError> {
    match force::what_it_changes(b, change) {
        Some(what) if !force => Err(CtlError::Refused(force::refusal(&what))),
        _ => Ok(()),
    }
}

/// A FEN's words, and `--force` given among them (a FEN takes any words after
/// the board, so the flag may land there).
fn fen_and_force(words: Vec<String>, force: bool) -> (String, bool) {
    let given = words.iter().any(|w| w == "--force");
    let fen: Vec<String> = words.into_iter().filter(|w| w != "--force").collect();
    (fen.join(" "), force || given)
}
