//! A finished game: its result the delay late, or at once with `at_end`.

use super::*;

/// Six plies, then the arbiter's result. By default (`finished = "delayed"`,
/// a delay of 3 s) spectators get the result no sooner than 3 s after `ctl
/// result` answered; with `finished = "at_end"` (a delay of 30 s, every ply
/// still held) they get the game whole, every ply and the result, at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_is_delayed_by_default_and_published_whole_at_once_with_at_end() {
    for (broadcast, delay, whole) in [
        ("delay = \"3s\"", Duration::from_secs(3), false),
        (
            "delay = \"30s\"\nfinished = \"at_end\"",
            Duration::from_secs(30),
            true,
        ),
    ] {
        let (log, _) = game_log(6, 64);
        let (hall, board) = Hall::open_with(log, broadcast, None).await;
        let seen = Seen::default();
        let dbus = watch_dbus(&hall.address, seen.clone()).await;
        let daemon = hall.run();
        wait_for("six plies on D-Bus", 60, || seen.count("dbus") >= 6).await;
        let out = common::process::ctl(&hall.address, &["result", "1", "1-0"]).await;
        let decided = Instant::now();
        assert_eq!(out.code, 0, "{}{}", out.out, out.err);
        let until = decided + Duration::from_secs(10);
        let (result, plies) = loop {
            let (result, plies) = public_result(hall.http).await;
            if !result.is_empty() {
                break (result, plies);
            }
            assert!(
                Instant::now() < until,
                "{broadcast}: no result on /api/boards within 10 s"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let after = decided.elapsed();
        assert_eq!(result, "1-0");
        assert_eq!(plies, 6, "{broadcast}: the game whole with its result");
        if whole {
            assert!(
                after < Duration::from_secs(1),
                "at_end: the result {after:?} after ctl result"
            );
        } else {
            assert!(
                after + SLACK >= delay,
                "delayed: the result {after:?} after ctl result"
            );
            assert!(
                after < delay + Duration::from_secs(2),
                "delayed: the result {after:?} after ctl result"
            );
        }
        eprintln!(
            "measured: {}: the result on /api/boards {after:?} after ctl result",
            broadcast.replace('\n', ", ")
        );
        wait_for("the result in the folder", 5, || {
            common::process::tag_in(&hall.game_file(), "Result") == "1-0"
        })
        .await;
        // And on lichess, the game whole with its result, none refused.
        wait_for("the result on lichess", 10, || {
            hall.lichess.last_taken("Round001").is_some_and(|t| {
                standin::read_games(&t).first().is_some_and(|g| {
                    g.tags.get("Result").map(String::as_str) == Some("1-0")
                        && g.moves.len() == 6
                        && g.error.is_none()
                })
            })
        })
        .await;
        dbus.abort();
        daemon.stop().await;
        board.abort();
    }
}
