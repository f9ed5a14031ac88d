//! Cookie tossing (issue 60): a page on another port of the same host sets
//! `eb_arbiter=junk; path=/arbiter/api`, which the browser sends before the
//! session's cookie. Every cookie of the name is tried: the console stays
//! usable. (Over HTTPS the cookie is `__Host-eb_arbiter`: `tls`.)

use crate::common::hall::{Hall, standing};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tossed_cookie_before_the_session_s_does_not_lock_the_console() {
    let dir = tempfile::tempdir().unwrap();
    let mut hall = Hall::open(dir.path(), vec![standing("")], "").await;
    let (cookie, csrf) = hall.login().await;
    // A page on another port of the same host set `eb_arbiter=junk;
    // path=/arbiter/api`: the browser sends it first (longer path first).
    for tossed in [
        format!("eb_arbiter=junk; {cookie}"),
        format!("eb_arbiter=; eb_arbiter=junk; theme=dark; {cookie}; eb_arbiter=more-junk"),
    ] {
        let state = hall.get("/arbiter/api/state", &[("Cookie", &tossed)]).await;
        assert_eq!(state.status, 200, "{tossed}: {}", state.text());
        assert_eq!(state.json()["csrf"], csrf.as_str());
        assert_eq!(hall.get("/arbiter", &[("Cookie", &tossed)]).await.status, 200);
        let ack = hall
            .post(
                "/arbiter/api/ack",
                &[("Cookie", &tossed), ("X-CSRF-Token", &csrf)],
                "{\"id\": 999999}",
            )
            .await;
        assert_ne!(ack.status, 401, "{tossed}: {}", ack.text());
        assert_ne!(ack.status, 403, "{tossed}: {}", ack.text());
    }
    let tossed = format!("eb_arbiter=junk; {cookie}");
    let out = hall
        .post(
            "/arbiter/logout",
            &[("Cookie", &tossed), ("X-CSRF-Token", &csrf)],
            "{}",
        )
        .await;
    assert_eq!(out.status, 200, "{}", out.text());
    // Signed out: the real cookie is no session, junk or not before it.
    let after = hall.get("/arbiter/api/state", &[("Cookie", &tossed)]).await;
    assert_eq!(after.status, 401);
    hall.kill();
}
