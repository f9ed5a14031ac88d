//! Issue 60, item 8: what the daemon says of a server error and of the token
//! file, in words that are true and say what to do.

use super::*;

/// The daemon on `d`'s games, pushing round 1 to the stand-in at `url`
/// (broadcast round `Round001`).
fn pushing_round_1_to(d: &std::path::Path, url: &str) -> Running {
    let cfg = device_dir_config(
        d,
        "",
        &format!("url = \"{url}\"\nrounds = {{ 1 = \"Round001\" }}\nmax_per_second = 10"),
    );
    Running::spawn(&mut run_command(&cfg, &[], None))
}

/// lichess answering `500`: its server failed, not the hall's connection; the
/// daemon says so and retries, and the round goes once lichess is back. No
/// answer at all (connections closed) is the hall's connection, still said.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_500_is_lichess_s_server_failing_not_the_hall_s_connection() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lichess = StandIn::start(&["Round001"], &[]).await;
    lichess.set_mode(Mode::Error(500));
    token_file(d, TOKEN);
    games_on_disk(d, 1..=2);
    let daemon = pushing_round_1_to(d, &lichess.url);
    wait_for("the 500 said", 30, || daemon.logged("lichess: round 1:") > 0).await;
    let line = daemon
        .log()
        .lines()
        .find(|l| l.contains("lichess: round 1:"))
        .unwrap()
        .to_string();
    assert!(
        line.contains(
            "lichess's server failed (it answered 500: Internal server error); retrying: the rounds are kept and pushed when lichess answers"
        ),
        "{line}"
    );
    assert!(
        line.contains("nothing to do in the hall: the fault is lichess's, not the hall's connection"),
        "{line}"
    );
    assert!(!line.contains("check the hall's connection"), "{line}");
    wait_for("a second try", 10, || lichess.to("Round001").len() >= 2).await;
    lichess.set_mode(Mode::Up);
    wait_for("the round on lichess", 30, || {
        lichess.games_taken("Round001") == round_tags(1..=2)
    })
    .await;
    wait_for("lichess back said", 10, || {
        daemon.logged("lichess takes the pushes again") > 0
    })
    .await;
    daemon.stop().await;

    // No answer: the hall's connection (or lichess down) is said, as before.
    let down = StandIn::start(&["Round001"], &[]).await;
    down.set_mode(Mode::Drop);
    let daemon = pushing_round_1_to(d, &down.url);
    wait_for("no answer said", 30, || daemon.logged("lichess: round 1:") > 0).await;
    let line = daemon
        .log()
        .lines()
        .find(|l| l.contains("lichess: round 1:"))
        .unwrap()
        .to_string();
    assert!(
        line.contains("check the hall's connection to the internet"),
        "{line}"
    );
    assert!(!line.contains("server failed"), "{line}");
    daemon.stop().await;
}

/// A token file others may read (644) or change (602), or both (606): the
/// daemon does not start, says which, and the `chmod` that mends it (never
/// the token, never "readable" for a file others can only write).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_file_others_may_read_or_change_keeps_the_daemon_from_starting() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let token = token_file(d, "lip_secretToken");
    let cfg = device_dir_config(d, "", "rounds = { 1 = \"Round001\" }");
    for (mode, said) in [
        (0o644, "may be read by others (mode 644)"),
        (0o602, "may be changed by others (mode 602)"),
        (0o606, "may be read and changed by others (mode 606)"),
    ] {
        std::fs::set_permissions(&token, std::fs::Permissions::from_mode(mode)).unwrap();
        let mut cmd = run_command(&cfg, &[], None);
        let out = tokio::task::spawn_blocking(move || common::output_within(&mut cmd, 30, "the daemon"))
            .await
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{err}");
        assert!(err.contains(said), "{mode:o}: {err}");
        assert!(err.contains(&format!("chmod 600 {}", token.display())), "{err}");
        assert!(!err.contains("lip_secretToken"), "{err}");
        if mode == 0o602 {
            assert!(
                !err.contains("read by others"),
                "602 is not readable by others: {err}"
            );
        }
    }
}

/// No token file, then an empty one: the daemon starts and bridges the board
/// all the same; the push is off, and the log, D-Bus (`Manager1.Lichess`) and
/// `ctl boards` say why and what to do. The token put in and the daemon
/// reloaded: the round is pushed whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_or_empty_token_file_leaves_the_boards_bridged_and_the_push_off() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lichess = StandIn::start(&["Round001"], &[]).await;
    let _b1 = emulate(
        game_log(&common::random_game(60, 8), 3, 0),
        &d.join("board1"),
        "5601",
        1.0,
    );
    let address = private_bus(d).await;
    let cfg = config_file(
        d,
        &[(1, "White", "Black")],
        &format!(
            "url = \"{}\"\nrounds = {{ 1 = \"Round001\" }}\nmax_per_second = 4",
            lichess.url
        ),
    );
    let token = d.join("lichess-token");
    let daemon = Running::spawn(&mut run_command(&cfg, &devices(d, &[1]), Some(&address)));
    wait_for("the board bridged: four plies in games.pgn", 60, || {
        plies(&games_pgn(d)) >= 4
    })
    .await;
    let remedy = format!(
        "put a lichess token with the study:write scope on its first line (docs/BROADCAST.md, section 1), \
         chmod 600 {}, then reload the daemon (systemctl reload eboard-bridge)",
        token.display()
    );
    let log = daemon.log();
    assert!(
        log.contains(&format!(
            "lichess: the push is off: [lichess] token_file {}: ",
            token.display()
        )) && log.contains(&remedy)
            && log.contains("every board is bridged all the same"),
        "{log}"
    );
    let state = |address: String| async move {
        let r = lichess_property(&address).await;
        r.first()
            .map(|r| (r.state.clone(), r.error.clone()))
            .unwrap_or_default()
    };
    let (s, error) = state(address.clone()).await;
    assert_eq!(s, "off", "{error}");
    assert!(error.contains("token_file") && error.contains(&remedy), "{error}");
    let (code, out, err) = ctl(&address, &["boards"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("lichess round 1 (Round001): off; the push is off: [lichess] token_file"),
        "{out}"
    );
    assert!(lichess.seen().is_empty(), "nothing pushed without a token");

    // An empty file, reloaded: still off, and said why.
    std::fs::write(&token, "").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    common::send_signal(daemon.child.id(), libc::SIGHUP);
    common::wait_until("the empty file said", 20, || {
        let address = address.clone();
        async move {
            let (s, e) = state(address).await;
            if s == "off" && e.contains("is empty") {
                Ok(())
            } else {
                Err(format!("{s}: {e}"))
            }
        }
    })
    .await;
    assert!(daemon.log().contains("is empty"), "{}", daemon.log());

    // The token, reloaded: the round whole on lichess.
    token_file(d, TOKEN);
    common::send_signal(daemon.child.id(), libc::SIGHUP);
    let now = plies(&games_pgn(d));
    wait_for("the round on lichess", 30, || {
        lichess.last_taken("Round001").is_some_and(|b| plies(&b) >= now)
    })
    .await;
    assert_eq!(lichess.seen()[0].status, 200);
    common::wait_until("the round pushed", 20, || {
        let address = address.clone();
        async move {
            let (s, e) = state(address).await;
            if s == "pushed" || s == "pushing" {
                Ok(())
            } else {
                Err(format!("{s}: {e}"))
            }
        }
    })
    .await;
    daemon.stop().await;
}

/// lichess's words in the log are escaped (issue 60, item 4: every logged
/// value from outside): an answer whose error holds a newline and a forged
/// line stays on the daemon's one line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lichess_s_words_cannot_forge_a_line_of_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lichess = StandIn::start(&["Round001"], &[]).await;
    lichess.set_mode(Mode::Forged);
    token_file(d, TOKEN);
    games_on_disk(d, 1..=2);
    let daemon = pushing_round_1_to(d, &lichess.url);
    wait_for("lichess's answer logged", 30, || {
        daemon.logged("FAKE LOG LINE") > 0
    })
    .await;
    let log = daemon.log();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("FAKE LOG LINE")).collect();
    assert!(
        lines
            .iter()
            .all(|l| l.contains("lichess: round 1") && l.contains("Bad PGN\\n")),
        "{lines:?}"
    );
    daemon.stop().await;
}
