//! What `ctl` takes: its sub-commands, their arguments and how each argument
//! is checked before the daemon is asked anything (a usage error exits 2).

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use super::format;

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
    /// The board's decisions and alerts, oldest first, with the time of day,
    /// who decided and through which door (D-Bus, console, MQTT), in words:
    /// every game of the board's recording, across restarts.
    History {
        /// The board: number, id or serial number.
        board: String,
        /// Only the last N entries.
        #[arg(long, value_name = "N", default_value_t = 0, hide_default_value = true)]
        last: u32,
        /// One JSON array of the entries, for scripts.
        #[arg(long)]
        json: bool,
    },
    /// Takes back the board's last decision (a take-back, a result, time added,
    /// clocks set): the moves and the result come back as they were. Itself a
    /// decision, journaled: undo again to give it back. A new game or a time
    /// control is not taken back (it says what to do instead).
    Undo {
        /// The board: number, id or serial number.
        board: String,
        /// Even when plies recorded since the decision would be dropped
        /// (without it, `ctl` says which).
        #[arg(long)]
        force: bool,
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
    /// A line for the arbiters' file of the console (`[http] arbiters`):
    /// USER:HASH, an Argon2id hash of the password read from the terminal (twice,
    /// not shown) or from standard input's first line. Needs no daemon. With
    /// --file, written into the file (`ctl passwd alice --file
    /// /etc/eboard-bridge/arbiters`); without, printed.
    Passwd {
        /// The arbiter's user name: letters, digits, `.`, `_` or `-` (up to 32).
        user: String,
        /// The arbiters' file: USER's line is added, or replaces theirs, and
        /// the file is written whole (atomically), readable by its owner and
        /// group only (mode 0640 when made; others' rights taken away), as the
        /// daemon requires.
        #[arg(long, value_name = "FILE")]
        file: Option<std::path::PathBuf>,
    },
    /// Pushes round ROUND of the event to a lichess broadcast round from now on
    /// (the round is pushed whole to it at once); several for a round of more
    /// boards than one takes: boards 1-64 to the first ID, 65-128 to the
    /// second, and so on; `off`: no longer pushed. The daemon journals it: it
    /// holds across restarts, until the configuration's [lichess] rounds
    /// change that round.
    Lichess {
        /// The event's round (1, 2, ...).
        #[arg(value_parser = clap::value_parser!(u32).range(1..))]
        round: u32,
        /// The broadcast round's id, the 8 letters and digits at the end of its
        /// address on lichess (or the address itself); several, in the order
        /// of the boards (at most 16); or `off`.
        #[arg(value_parser = lichess_id_arg, required = true, num_args = 1.., value_name = "ID")]
        ids: Vec<String>,
    },
    /// The broadcast delay: spectators (the broadcast folder, lichess, the
    /// live page, /api/boards, /api/events, LiveChess, MQTT) see each game as
    /// it stood DURATION ago (15m, 90s, 1h30m); `off` publishes every move
    /// held at once. With ROUND, that round's delay only; without, every
    /// round's. The arbiter's doors (ctl, the console, D-Bus) stay live. The
    /// daemon journals it: it holds across restarts, until the
    /// configuration's [broadcast] changes. With nothing, the delay in effect.
    Delay {
        /// [ROUND] DURATION|off
        #[arg(num_args = 0..=2, value_name = "ROUND DURATION")]
        args: Vec<String>,
    },
    /// Acknowledges an alert as the arbiters' console does (with your user
    /// name): ALERT is its number as `ctl boards N` shows it (A12); a BOARD
    /// (number, id or serial number) acknowledges every alert standing on it.
    /// The alerts are the console's: without it ([http] arbiters) there are none.
    Ack {
        /// A12 (an alert), or a board: 12, dgt_12345, a serial number.
        #[arg(value_name = "ALERT|BOARD")]
        target: String,
    },
    /// Starts round N on every board: each board's next game (or its game not
    /// begun) is round N, with its pairing from --pairings FILE (read as `ctl
    /// pairings` reads it); a game under way keeps its round to its end. A board
    /// the file does not name has no pairing for a new round (the
    /// configuration's [[board]] players, else ?). Kept across restarts, and
    /// across a reload that leaves the configuration's round and pairings as
    /// they were.
    Round {
        /// The round (1, 2, ...).
        #[arg(value_parser = clap::value_parser!(u32).range(1..))]
        round: u32,
        /// The round's pairings: a PGN with headers only or a CSV (as `ctl
        /// pairings` takes them; a PGN's games of other rounds are left out).
        #[arg(long, value_name = "FILE")]
        pairings: Option<PathBuf>,
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

fn termination_arg(s: &str) -> Result<String, crate::rules::Refused> {
    crate::rules::termination_words(s)
}

fn time_control_arg(s: &str) -> Result<String, crate::clock::control::TimeControlError> {
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
