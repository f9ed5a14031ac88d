//! A game lichess refuses, reported, while the others go on.

use super::*;
use futures_util::StreamExt;
use tokio::io::AsyncBufReadExt;

/// Two boards; the stand-in refuses every push's game whose White is "Refused,
/// Rita" (`error`, as lichess answers a game it cannot read). The refusal is
/// reported once, with the game and lichess's words, although every push
/// carries the game again: in the daemon's log, as a `LichessReport` signal,
/// by `ctl watch`, in `Manager1.Lichess` and the arbiters' console's state;
/// board 1's game reaches lichess whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_lichess_refuses_is_reported_once_and_the_others_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lichess = StandIn::start(&["Round001"], &[]).await;
    lichess.refuse_white("Refused, Rita", "No move found: Pawn a8");
    token_file(d, TOKEN);
    let _boards = two_real_boards(d, "530", [(IMMORTAL, 16, 3, 0), (NEPO_DING, 12, 4, 0)]);
    let address = private_bus(d).await;
    let (_listener, mut signals) = common::listen(
        &address,
        eboard_bridge::bus::MANAGER_INTERFACE,
        Some("LichessReport"),
    )
    .await;
    // `ctl watch` before the daemon: it prints the report as it comes.
    let mut watch = common::process::spawn_ctl(&address, &["watch"], std::process::Stdio::null());
    let mut watched = tokio::io::BufReader::new(watch.stdout.take().unwrap()).lines();
    // The arbiters' console too.
    use common::hall::{PASSWORD, USER};
    let line = common::hall::passwd(USER, PASSWORD).await;
    std::fs::write(d.join("arbiters"), &line.stdout).unwrap();
    // Readable by its owner only: the daemon refuses an arbiters' file others may read.
    std::fs::set_permissions(
        d.join("arbiters"),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let console: std::net::SocketAddr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let cfg = config_file(
        d,
        &[
            (1, "Accepted, Alex", "Black, Bea"),
            (2, "Refused, Rita", "Black, Bo"),
        ],
        &format!(
            "url = \"{}\"\nrounds = {{ 1 = \"Round001\" }}\nmax_per_second = 4\n[http]\nlisten = \"{console}\"\narbiters = \"{}\"",
            lichess.url,
            d.join("arbiters").display()
        ),
    );
    let daemon = Running::spawn(&mut run_command(&cfg, &devices(d, &[1, 2]), Some(&address)));

    let line = async {
        loop {
            match watched.next_line().await {
                Ok(Some(l)) if l.contains("LICHESS REFUSED") => return l,
                Ok(Some(_)) => {}
                other => panic!("ctl watch ended: {other:?}"),
            }
        }
    }
    .within(40, "ctl watch's line")
    .await;
    assert!(
        line.contains("lichess round 1 (Round001): LICHESS REFUSED board 2: Refused, Rita - Black, Bo: No move found: Pawn a8; "),
        "{line}"
    );
    wait_for("both games whole in games.pgn", 60, || plies(&games_pgn(d)) == 28).await;
    wait_for("lichess to have games.pgn as it stands", 20, || {
        lichess.last_taken("Round001").as_deref() == Some(games_pgn(d).as_str())
    })
    .await;

    // Board 1's game whole on lichess, board 2's refused in every push.
    let pushes = lichess.to("Round001");
    assert!(pushes.len() >= 4, "pushes went on: {}", pushes.len());
    let last = standin::read_games(&lichess.last_taken("Round001").unwrap());
    assert_eq!((last.len(), last[0].moves.len()), (2, 16));
    // Said once, however many pushes carried the game.
    let first = signals
        .next()
        .within(10, "the LichessReport signal")
        .await
        .unwrap()
        .unwrap();
    let (round, id, kind, game, text, _remedy): (u32, String, String, String, String, String) =
        first.body().deserialize().unwrap();
    assert_eq!(
        (round, id.as_str(), kind.as_str()),
        (1, "Round001", "game_refused")
    );
    assert_eq!(
        (game.as_str(), text.as_str()),
        ("board 2: Refused, Rita - Black, Bo", "No move found: Pawn a8")
    );
    let more = tokio::time::timeout(Duration::from_millis(500), signals.next()).await;
    assert!(more.is_err(), "one report: {more:?}");
    assert_eq!(
        daemon.logged("refused: No move found: Pawn a8"),
        1,
        "{}",
        daemon.log()
    );
    let r = &lichess_property(&address).await[0];
    assert_eq!(
        (r.games_accepted, r.games_refused, r.state.as_str()),
        (1, 1, "pushed")
    );
    assert_eq!(r.games[0].moves, 16);
    assert_eq!(r.games[1].error, "No move found: Pawn a8");
    // The console's state has the round, never the token.
    let origin = format!("http://{console}");
    let login = serde_json::json!({"user": USER, "password": PASSWORD}).to_string();
    let headers = [("Origin", origin.as_str()), ("Content-Type", "application/json")];
    let a = common::web::request(console, "POST", "/arbiter/login", &headers, login.as_bytes()).await;
    assert_eq!(a.status, 200, "{}", a.text());
    let cookie = format!("eb_arbiter={}", a.cookie("eb_arbiter").unwrap());
    let state = common::web::request(console, "GET", "/arbiter/api/state", &[("Cookie", &cookie)], b"").await;
    let rounds = &state.json()["lichess"];
    assert_eq!(rounds[0]["id"], "Round001", "{}", state.text());
    assert_eq!(rounds[0]["games"][1]["error"], "No move found: Pawn a8");
    assert!(!state.text().contains(TOKEN));
    daemon.stop().await;
}
