//! Issue 48 (part, item 5): what `ctl boards` shows is not stale: a flag the
//! arbiter gave time to no longer needs the arbiter, and a new game on a board
//! without a clock shows no clocks, not the last game's.

use super::*;

/// A board's line in `ctl boards`.
async fn line_of(address: &str, n: u32) -> String {
    let table = ok(address, &["boards"]).await;
    table
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{n}  ")))
        .unwrap_or_else(|| panic!("no board {n} in:\n{table}"))
        .to_string()
}

/// Board 1's clock stands at 0:00:00 on white's side (stopped): NEEDS says
/// white's flag, until `ctl add-time` gives white time again. Board 2 has no
/// clock: the daemon drove the clock of its first game (`ctl time-control`);
/// once the configuration's time control is the clock's own program, its next
/// game shows no clocks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flag_given_time_and_a_new_game_without_a_clock_are_not_stale() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (address, cfg) = desk(d, "").await;
    let flagged = at_the_start("0 clock left=0:00:00 right=0:05:00 running=none\n");
    let no_clock = at_the_start("");
    let _boards = three_playing(d, "485", [flagged, no_clock.clone(), no_clock]);
    let daemon = start(&cfg, d, &address);
    property_is(&address, 1, "BlackClockMs", "300000").await;
    property_is(&address, 1, "Status", "playing").await;
    assert!(
        line_of(&address, 1).await.ends_with("flag: white's time is up"),
        "{}",
        line_of(&address, 1).await
    );
    ok(&address, &["add-time", "1", "white", "+2m"]).await;
    property_is(&address, 1, "WhiteClockMs", "120000").await;
    let line = line_of(&address, 1).await;
    assert!(!line.contains("flag"), "{line}");

    // Board 2: the daemon drives a clock it does not have.
    property_is(&address, 2, "Status", "playing").await;
    ok(&address, &["time-control", "2", "5+0"]).await;
    property_is(&address, 2, "WhiteClockMs", "300000").await;
    ok(&address, &["result", "2", "1-0"]).await;
    edit_and_reload(&daemon, &cfg, "[clock]\n", "[clock]\ntime_control = \"90+30\"\n");
    logged_once(&daemon, "configuration read again").await;
    // A new game of the same round after its result: confirmed (it takes
    // that game's place in the round's results).
    ok(&address, &["new-game", "2", "--force"]).await;
    property_is(&address, 2, "Status", "playing").await;
    property_is(&address, 2, "WhiteClockMs", "0").await;
    property_is(&address, 2, "BlackClockMs", "0").await;
    property_is(&address, 2, "TimeControl", "5400+30").await;
    let one = ok(&address, &["boards", "2"]).await;
    assert!(one.contains("\nclocks: none reported\n"), "{one}");
    drop(daemon);
}
