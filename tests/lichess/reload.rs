//! Issue 60, item 6: a new server on reload gets every round whole.

use super::*;

/// A round of three games on disk (no board plays: the round does not change)
/// pushed to a first stand-in; the configuration's `url` changed to a second
/// and the daemon reloaded (SIGHUP): the second gets the round whole at once,
/// the first nothing more; the doors say `pushed` (of the second).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_url_on_reload_gets_every_round_whole() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let first = StandIn::start(&["Round001"], &[]).await;
    let second = StandIn::start(&["Round001"], &[]).await;
    token_file(d, TOKEN);
    games_on_disk(d, 1..=3);
    let address = private_bus(d).await;
    let lichess_toml =
        |url: &str| format!("url = \"{url}\"\nrounds = {{ 1 = \"Round001\" }}\nmax_per_second = 4");
    let cfg = device_dir_config(d, "", &lichess_toml(&first.url));
    let daemon = Running::spawn(&mut run_command(&cfg, &[], Some(&address)));
    wait_for("the round at the first server", 30, || {
        first.games_taken("Round001") == round_tags(1..=3)
    })
    .await;
    common::wait_until("the round pushed", 10, || {
        let address = address.clone();
        async move {
            let r = lichess_property(&address).await;
            match r.first() {
                Some(r) if r.state == "pushed" => Ok(()),
                other => Err(format!("{other:?}")),
            }
        }
    })
    .await;
    let pushes_to_first = first.seen().len();

    device_dir_config(d, "", &lichess_toml(&second.url));
    let reloaded = std::time::Instant::now();
    common::send_signal(daemon.child.id(), libc::SIGHUP);
    wait_for("the round whole at the second server", 30, || {
        second.last_taken("Round001").as_deref() == Some(games_pgn(d).as_str())
    })
    .await;
    assert_eq!(second.games_taken("Round001"), round_tags(1..=3));
    assert_eq!(
        first.seen().len(),
        pushes_to_first,
        "nothing more to the first server"
    );
    assert!(
        daemon.logged(&format!("lichess: pushing to {} from now on", second.url)) == 1,
        "{}",
        daemon.log()
    );
    let r = &lichess_property(&address).await[0];
    assert_eq!(r.state, "pushed", "{r:?}");
    let taken_at = second.seen()[0].at.duration_since(reloaded);
    assert!(
        taken_at < Duration::from_secs(5),
        "the round went {taken_at:?} after the reload"
    );
    let (code, out, err) = ctl(&address, &["boards"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("lichess round 1 (Round001): pushed"), "{out}");
    daemon.stop().await;
}
