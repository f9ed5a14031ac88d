//! Issue 51, every round pushed to a lichess broadcast, end to end against a
//! stand-in lichess written from the API documentation (`standin`, in this
//! process, plain HTTP on 127.0.0.1): emulated boards on real
//! pseudo-terminals, the daemon in this process or as the real binary, a
//! private D-Bus broker (busd) for `ctl` and the signals. No network.
//!
//! - `round`: a round reaches lichess game by game and move by move, the last
//!   push equal to `games.pgn`, at the configured rate; D-Bus and `ctl boards`
//!   show it.
//! - `outage`: lichess away 30 s (connections cut, 503, 429 with
//!   `Retry-After`), then back: nothing lost, the back-off and `Retry-After`
//!   obeyed, the rate kept.
//! - `refused`: a game lichess refuses is reported (log, D-Bus, `ctl watch`)
//!   and the others go on.
//! - `errors`: a wrong token, a round id lichess does not have, a round with a
//!   source URL: each reported once with its remedy, tried again only after a
//!   change of configuration; more boards than a round takes.
//! - `restart`: `ctl lichess` mid-round, SIGKILL and restart: the decision
//!   holds and the round is pushed whole again.
//! - `reload` (issue 60): a new `url` read on reload gets every round whole.
//! - `split` (issue 60): a round of 66 boards over two broadcast rounds (64 +
//!   2 games), by the configuration and by `ctl lichess ROUND ID ID`.
//! - `messages` (issue 60): a `500` said as lichess's fault; a token file
//!   others may read or change; a missing or empty token file leaves the
//!   boards bridged and the push off, with the remedy.

use crate::common;
mod errors;
mod messages;
mod outage;
mod refused;
mod reload;
mod restart;
mod round;
mod split;
pub mod standin;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::process::{Running, run_command};
use common::{Within, private_bus, quick, wait_for};
use eboard_bridge::board::Orientation;
use eboard_bridge::log::SensorLog;
use eboard_bridge::protocol::ClockTime;
use eboard_bridge::sim::Hands;
use shakmaty::{Chess, Move, Position};
use standin::{Mode, StandIn, TOKEN};

/// A sensor log of `moves` from the start played by simulated hands, the first
/// after `delay_ms`, the clock at 1:30:00.
fn game_log(moves: &[Move], seed: u64, delay_ms: u64) -> SensorLog {
    let mut hands = Hands::new(seed, quick(), Orientation::Normal);
    hands.board(Chess::default().board());
    hands.set_clock(ClockTime::from_hms(1, 30, 0).unwrap());
    hands.wait(delay_ms);
    common::played_log(hands, &Chess::default(), moves, 1500)
}

/// An emulated board (serial `serial`) playing `log` at `speed`, `link` to it.
fn emulate(log: SensorLog, link: &Path, serial: &str, speed: f64) -> tokio::task::JoinHandle<()> {
    common::emulated::emulate(log, link, speed, serial)
}

/// The first `plies` plies of a real game from the start.
fn real_game(file: &str, plies: usize) -> Vec<Move> {
    common::game_of_at_least(file, plies).moves[..plies].to_vec()
}

/// The immortal games of `tests/data/games`.
const IMMORTAL: &str = "games/immortal-games.pgn";
/// Kasparov - Deep Blue (1997).
const DEEP_BLUE: &str = "games/kasparov-deep-blue-1997.pgn";
/// Nepomniachtchi - Ding (2023), game 1.
const NEPO_DING: &str = "games/nepomniachtchi-liren-game1.pgn";

/// Boards 1 and 2 in `d` (serial numbers `{serials}1` and `{serials}2`, at a real
/// board's pace), each playing `(file, plies, seed, delay_ms)`: the first
/// `plies` plies of the first game of `file` long enough, by hands seeded
/// `seed` that wait `delay_ms` first.
fn two_real_boards(
    d: &Path,
    serials: &str,
    games: [(&str, usize, u64, u64); 2],
) -> Vec<tokio::task::JoinHandle<()>> {
    two_boards_at(d, serials, games, 1.0)
}

/// The same at `speed` times a real board's pace (the daemon's thresholds as
/// they are: the tests' quick hands are read alike up to eight times it).
fn two_boards_at(
    d: &Path,
    serials: &str,
    games: [(&str, usize, u64, u64); 2],
    speed: f64,
) -> Vec<tokio::task::JoinHandle<()>> {
    games
        .into_iter()
        .zip(1..)
        .map(|((file, plies, seed, delay_ms), n)| {
            let log = game_log(&real_game(file, plies), seed, delay_ms);
            emulate(log, &d.join(format!("board{n}")), &format!("{serials}{n}"), speed)
        })
        .collect()
}

/// The token file in `dir`, for its owner only.
fn token_file(dir: &Path, token: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join("lichess-token");
    std::fs::write(&p, format!("{token}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    p
}

/// The configuration's text: round 1, boards `(number, white, black)` on
/// `dir/boardN`, and `[lichess]` with `lichess` after its token file.
fn config_text(dir: &Path, boards: &[(u32, &str, &str)], lichess: &str) -> String {
    let mut text = format!(
        "event = \"Lichess Open\"\nround = 1\noutput = \"{}\"\nstate = \"{}\"\n",
        dir.join("live").display(),
        dir.join("state").display()
    );
    for (n, white, black) in boards {
        text += &format!(
            "[[board]]\ndevice = \"{}\"\nnumber = {n}\nwhite = \"{white}\"\nblack = \"{black}\"\n",
            dir.join(format!("board{n}")).display()
        );
    }
    text += &format!(
        "[lichess]\ntoken_file = \"{}\"\n{lichess}\n",
        dir.join("lichess-token").display()
    );
    text
}

/// `config_text` written to `dir/config.toml`; its path.
fn config_file(dir: &Path, boards: &[(u32, &str, &str)], lichess: &str) -> PathBuf {
    let p = dir.join("config.toml");
    std::fs::write(&p, config_text(dir, boards, lichess)).unwrap();
    p
}

/// Writes `d/config.toml`: `head`, then the boards found in `d/dev` (made here)
/// and the lichess section `lichess` of `config_text`; its path.
fn device_dir_config(d: &Path, head: &str, lichess: &str) -> PathBuf {
    std::fs::create_dir_all(d.join("dev")).unwrap();
    let text = format!(
        "{head}device_dir = \"{}\"\n{}",
        d.join("dev").display(),
        config_text(d, &[], lichess)
    );
    let cfg = d.join("config.toml");
    std::fs::write(&cfg, text).unwrap();
    cfg
}

/// The game files of boards `boards` of round 1 in the broadcast folder, as a
/// daemon before this one left them (a game of two plies each, `Round "1.N"`):
/// the folder reads them when the round is first asked for, so the round has
/// these games without a board playing.
fn games_on_disk(d: &Path, boards: std::ops::RangeInclusive<u32>) {
    let dir = d.join("live/round-1");
    std::fs::create_dir_all(&dir).unwrap();
    for n in boards {
        let pgn = format!(
            "[Event \"Lichess Open\"]\n[Site \"?\"]\n[Date \"2026.11.27\"]\n[Round \"1.{n}\"]\n\
             [White \"White {n}\"]\n[Black \"Black {n}\"]\n[Result \"*\"]\n\n1. e4 e5 *\n\n"
        );
        std::fs::write(dir.join(format!("game-{n}.pgn")), pgn).unwrap();
    }
}

/// The `Round` tags `1.{first}` to `1.{last}`.
fn round_tags(boards: std::ops::RangeInclusive<u32>) -> Vec<String> {
    boards.map(|n| format!("1.{n}")).collect()
}

/// The devices of boards `numbers`.
fn devices(dir: &Path, numbers: &[u32]) -> Vec<PathBuf> {
    numbers.iter().map(|n| dir.join(format!("board{n}"))).collect()
}

/// Round 1's `games.pgn` ("" until it exists).
fn games_pgn(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("live/round-1/games.pgn")).unwrap_or_default()
}

/// The plies of each game of a PGN text, by its `Round` tag.
fn plies_by_round_tag(text: &str) -> std::collections::BTreeMap<String, usize> {
    standin::read_games(text)
        .into_iter()
        .map(|g| (g.tags.get("Round").cloned().unwrap_or_default(), g.moves.len()))
        .collect()
}

/// All plies of a PGN text.
fn plies(text: &str) -> usize {
    plies_by_round_tag(text).values().sum()
}

/// `eboard-bridge ctl --bus session ARGS` on the bus at `address`, within 20 s:
/// exit status, stdout, stderr.
async fn ctl(address: &str, args: &[&str]) -> (i32, String, String) {
    let o = common::process::ctl(address, args).await;
    (o.code, o.out, o.err)
}

/// The `Manager1.Lichess` property on the bus at `address`, read afresh.
async fn lichess_property(address: &str) -> Vec<eboard_bridge::api::lichess::RoundStatus> {
    use eboard_bridge::bus::{MANAGER_INTERFACE, ROOT_PATH};
    let client = common::bus_client(address).await;
    let proxy = common::uncached_proxy(&client, ROOT_PATH, MANAGER_INTERFACE).await;
    let v: zbus::zvariant::OwnedValue = proxy
        .get_property("Lichess")
        .within(10, "the Lichess property")
        .await
        .unwrap();
    eboard_bridge::ctl::lichess::statuses(v)
}

/// The shortest time between two requests of `seen` (none: a day).
fn shortest_gap(seen: &[standin::Seen]) -> Duration {
    seen.windows(2)
        .map(|w| w[1].at.duration_since(w[0].at))
        .min()
        .unwrap_or(Duration::from_secs(86_400))
}
