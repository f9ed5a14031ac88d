//! `ctl` run by a caller the policy refuses.

use super::*;

/// `ctl` with the shipped policy on a system-style broker: a caller outside the
/// group `eboard` reads the boards but is refused a decision and a round's
/// pairings, with what to do; an arbiter (group `eboard`) decides, and the
/// recording names them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctl_tells_a_caller_outside_the_group_what_to_do() {
    if !need(&[
        Need::Root,
        Need::Tool("dbus-daemon", "dbus-daemon"),
        Need::Tool("useradd", "passwd"),
        Need::Tool("groupadd", "passwd"),
    ]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (_turn, _made, (arbiter_uid, arbiter_gid), _bus, address) = arbiter_and_bus(dir.path()).await;
    let state = dir.path().join("state");
    let (daemon, play) = bridged_at_the_start(dir.path(), &address).await;
    let snap = daemon.boards()[0].2.clone();
    // The binary where other users can run it.
    let exe = dir.path().join("eboard-bridge");
    std::fs::copy(env!("CARGO_BIN_EXE_eboard-bridge"), &exe).unwrap();
    std::fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let pairings = dir.path().join("round.csv");
    std::fs::write(&pairings, "board,white,black\n1,A,B\n").unwrap();
    std::fs::set_permissions(&pairings, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let ctl = |user: (u32, u32), args: &[&str]| {
        let run = tokio::process::Command::new(&exe)
            .args(["ctl", "--bus", "system"])
            .args(args)
            .env("DBUS_SYSTEM_BUS_ADDRESS", &address)
            .uid(user.0)
            .gid(user.1)
            .kill_on_drop(true)
            .output();
        async move {
            let out = tokio::time::timeout(Duration::from_secs(20), run)
                .await
                .expect("ctl did not finish in 20 s")
                .unwrap();
            (
                out.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr),
            )
        }
    };
    let nobody = (NOBODY, NOBODY);
    let (code, out) = ctl(nobody, &["boards"]).await;
    assert_eq!(code, 0, "anyone reads the boards: {out}");
    assert!(out.contains("board0"), "{out}");
    let refusal =
        "not allowed: add yourself to the group eboard (sudo usermod -aG eboard $USER, then log in again)";
    for args in [
        &["players", "1", "A", "B"][..],
        &["pairings", pairings.to_str().unwrap()][..],
    ] {
        let (code, out) = ctl(nobody, args).await;
        assert_eq!(code, 1, "{args:?}: {out}");
        assert!(out.contains(refusal), "{args:?}: {out}");
    }
    let (code, out) = ctl(
        (arbiter_uid, arbiter_gid),
        &["players", "1", "Arbiter, Chosen", "B"],
    )
    .await;
    assert_eq!(code, 0, "an arbiter names the players: {out}");
    common::wait_for("the players", 10, || snap.borrow().white == "Arbiter, Chosen").await;
    daemon.shutdown().await;
    play.abort();
    let text = std::fs::read_to_string(state.join("recordings/board0.esl")).unwrap();
    assert!(
        text.contains(" note decided by eboard-arbiter\n"),
        "who decided is not in the record"
    );
}
