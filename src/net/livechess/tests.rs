use super::*;

const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

fn board(moves: &[&str]) -> LiveBoard {
    let mut pos = position(START).unwrap();
    for m in moves {
        let mv = m.parse::<San>().unwrap().to_move(&pos).unwrap();
        pos.play_unchecked(mv);
    }
    let fen = Fen::from_position(&pos, EnPassantMode::Legal).to_string();
    LiveBoard {
        id: "dgt_1".into(),
        snapshot: Snapshot {
            connected: true,
            device: "/dev/eboard/dgt_1".into(),
            serial_number: "23946".into(),
            orientation: "normal".into(),
            placement: fen.split(' ').next().unwrap().to_string(),
            fen,
            start_fen: START.into(),
            moves: moves.iter().map(|s| s.to_string()).collect(),
            settled: moves.len(),
            ..Snapshot::default()
        },
    }
}

fn parse(frames: &[String]) -> Vec<Value> {
    frames.iter().map(|f| serde_json::from_str(f).unwrap()).collect()
}

#[test]
fn eboards_echoes_the_id_and_lists_every_field() {
    let mut s = LiveSession::default();
    let b = board(&[]);
    for req in [
        r#"{"id":1,"call":"eboards"}"#,
        r#"{"id":1,"call":"eboards","param":null}"#,
        r#"{"id":1,"call":"eboards","param":{}}"#,
    ] {
        let out = s.call(req, std::slice::from_ref(&b), 1000);
        assert!(
            out[0].starts_with(r#"{"response":"call","id":1,"param":[{"#),
            "{}",
            out[0]
        );
        let v = parse(&out);
        let e = &v[0]["param"][0];
        assert_eq!(e["serialnr"], "23946");
        assert_eq!(e["source"], "dgt_1");
        assert_eq!(e["state"], "ACTIVE");
        assert_eq!(e["board"], "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR");
        assert_eq!(e["flipped"], false);
        for k in ["battery", "comment", "clock"] {
            assert!(e[k].is_null(), "{k}");
        }
        assert_eq!(v[0]["time"], 1000);
    }
}

#[test]
fn subscribe_replies_then_pushes_the_state_and_setup_brings_san() {
    let mut s = LiveSession::default();
    let b = board(&["e4", "e5"]);
    let all = [b.clone()];
    let v = parse(&s.call(
        r#"{"id":2,"call":"subscribe","param":{"feed":"eboardevent","id":1,"param":{"serialnr":"23946"}}}"#,
        &all,
        5,
    ));
    assert_eq!(v.len(), 2);
    assert_eq!(v[0]["response"], "call");
    assert_eq!(v[0]["id"], 2);
    assert!(v[0]["param"].is_null());
    assert_eq!(v[1]["response"], "feed");
    assert_eq!(v[1]["id"], 1);
    assert_eq!(v[1]["param"]["board"], b.snapshot.placement);
    assert!(v[1]["param"]["clock"].is_null());
    assert!(v[1]["param"].get("san").is_none());
    // Nothing changed: no push.
    assert!(s.pushes(|_| Some(b.clone()), 6).is_empty());
    let v = parse(&s.call(
        &format!(
            r#"{{"id":3,"call":"call","param":{{"id":1,"method":"setup","param":{{"fen":"{START}"}}}}}}"#
        ),
        &all,
        7,
    ));
    assert_eq!(v[0]["id"], 3);
    assert_eq!(v[1]["param"]["start"], START);
    assert_eq!(v[1]["param"]["san"], json!(["e4", "e5"]));
    assert_eq!(v[1]["param"]["match"], true);
    // Two more moves at once.
    let later = board(&["e4", "e5", "Nf3", "Nc6"]);
    let v = parse(&s.pushes(|_| Some(later.clone()), 8));
    assert_eq!(v[0]["param"]["san"], json!(["e4", "e5", "Nf3", "Nc6"]));
    // A setup at a later position of the game: the moves after it.
    let after_e4 = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1";
    let v = parse(&s.call(
        &format!(
            r#"{{"id":3,"call":"call","param":{{"id":1,"method":"setup","param":{{"fen":"{after_e4}"}}}}}}"#
        ),
        std::slice::from_ref(&later),
        9,
    ));
    assert_eq!(v[1]["param"]["san"], json!(["e5", "Nf3", "Nc6"]));
    // A position the game never reached: no moves, no match.
    let other = "rnbqkbnr/pppppppp/8/8/3P4/8/PPP1PPPP/RNBQKBNR b KQkq - 0 1";
    let v = parse(&s.call(
        &format!(
            r#"{{"id":3,"call":"call","param":{{"id":1,"method":"setup","param":{{"fen":"{other}"}}}}}}"#
        ),
        &[later],
        9,
    ));
    assert_eq!(v[1]["param"]["san"], json!([]));
    assert_eq!(v[1]["param"]["match"], false);
}

#[test]
fn clocks_are_seconds_with_the_running_side_and_pushed_when_they_change() {
    let mut s = LiveSession::default();
    let mut b = board(&["e4"]);
    b.snapshot.has_clock = true;
    b.snapshot.white_clock_ms = 5_676_400;
    b.snapshot.black_clock_ms = 7_190_000;
    b.snapshot.clock_running = "black".into();
    let v = parse(&s.call(
        r#"{"id":2,"call":"subscribe","param":{"feed":"eboardevent","id":7,"param":{"serialnr":"23946"}}}"#,
        std::slice::from_ref(&b),
        42,
    ));
    assert_eq!(
        v[1]["param"]["clock"],
        json!({"white":5676,"black":7190,"run":false,"time":42})
    );
    // The board changes, the clock does not: no clock key.
    let mut lifted = b.clone();
    lifted.snapshot.placement = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNB1KBNR".into();
    let v = parse(&s.pushes(|_| Some(lifted.clone()), 43));
    assert!(v[0]["param"].get("clock").is_none());
    assert_eq!(v[0]["param"]["board"], lifted.snapshot.placement);
    // The clock alone changes: no push (a client that takes the last `san`
    // entry of every push would play it again) ...
    lifted.snapshot.black_clock_ms = 7_189_000;
    assert!(s.pushes(|_| Some(lifted.clone()), 44).is_empty());
    lifted.snapshot.clock_running = "none".into();
    assert!(s.pushes(|_| Some(lifted.clone()), 45).is_empty());
    // ... it rides in the next push the board makes.
    lifted.snapshot.placement = b.snapshot.placement.clone();
    let v = parse(&s.pushes(|_| Some(lifted.clone()), 46));
    assert_eq!(v[0]["param"]["clock"]["black"], 7189);
    assert!(v[0]["param"]["clock"]["run"].is_null());
}

#[test]
fn feeds_ids_and_fens_are_bounded_and_errors_do_not_echo_a_flood() {
    let mut s = LiveSession::default();
    let all = [board(&[])];
    for i in 0..MAX_FEEDS {
        let v = parse(&s.call(
            &format!(r#"{{"id":1,"call":"subscribe","param":{{"feed":"eboardevent","id":{i},"param":{{"serialnr":"23946"}}}}}}"#),
            &all,
            1,
        ));
        assert_eq!(v[0]["response"], "call", "feed {i}");
    }
    let v = parse(&s.call(
        r#"{"id":1,"call":"subscribe","param":{"feed":"eboardevent","id":99,"param":{"serialnr":"23946"}}}"#,
        &all,
        1,
    ));
    assert_eq!(v[0]["response"], "error");
    assert!(
        v[0]["param"]["message"]
            .as_str()
            .unwrap()
            .contains("at most 8 feeds")
    );
    // A feed id used again replaces its feed: allowed at the limit.
    let v = parse(&s.call(
        r#"{"id":1,"call":"subscribe","param":{"feed":"eboardevent","id":3,"param":{"serialnr":"23946"}}}"#,
        &all,
        1,
    ));
    assert_eq!(v[0]["response"], "call");
    let mut s = LiveSession::default();
    let long = "7".repeat(10_000);
    let frames = s.call(
        &format!(r#"{{"id":1,"call":"subscribe","param":{{"feed":"eboardevent","id":"{long}","param":{{"serialnr":"23946"}}}}}}"#),
        &all,
        1,
    );
    assert!(
        frames[0].contains("at most 128 bytes") && frames[0].len() < 300,
        "{}",
        frames[0]
    );
    let frames = s.call(&format!(r#"{{"id":1,"call":"{long}"}}"#), &all, 1);
    assert!(
        frames[0].len() < 300,
        "the unknown call echoed whole: {} bytes",
        frames[0].len()
    );
    s.call(
        r#"{"id":1,"call":"subscribe","param":{"feed":"eboardevent","id":1,"param":{"serialnr":"23946"}}}"#,
        &all,
        1,
    );
    let frames = s.call(
        &format!(
            r#"{{"id":3,"call":"call","param":{{"id":1,"method":"setup","param":{{"fen":"{long}"}}}}}}"#
        ),
        &all,
        1,
    );
    assert!(
        frames[0].contains("at most 128 bytes") && frames[0].len() < 300,
        "{}",
        frames[0]
    );
}

/// Subscribed with `setup` at the start: the frames' `san` lists (`None` for
/// a push without one).
fn sans(frames: &[String]) -> Vec<Option<Value>> {
    parse(frames)
        .iter()
        .map(|v| v["param"].get("san").cloned())
        .collect()
}

fn subscribed(b: &LiveBoard) -> LiveSession {
    let mut s = LiveSession::new(2000);
    s.call(
        r#"{"id":2,"call":"subscribe","param":{"feed":"eboardevent","id":1,"param":{"serialnr":"23946"}}}"#,
        std::slice::from_ref(b),
        0,
    );
    s.call(
        &format!(
            r#"{{"id":3,"call":"call","param":{{"id":1,"method":"setup","param":{{"fen":"{START}"}}}}}}"#
        ),
        std::slice::from_ref(b),
        0,
    );
    s
}

#[test]
fn san_holds_settled_moves_only_and_an_amendment_before_it_settled_never_shows() {
    let mut s = subscribed(&board(&["e4"]));
    assert_eq!(s.next_deadline(), None);
    // d3, not completed: the board's push carries no new `san`.
    let mut b = board(&["e4", "d5", "d3"]);
    b.snapshot.settled = 2;
    assert_eq!(
        sans(&s.pushes(|_| Some(b.clone()), 100)),
        vec![Some(json!(["e4", "d5"]))]
    );
    assert_eq!(s.next_deadline(), Some(2100));
    // The slide goes on: d3 becomes d4 before it settled.
    let mut b2 = board(&["e4", "d5", "d4"]);
    b2.snapshot.settled = 2;
    assert_eq!(sans(&s.pushes(|_| Some(b2.clone()), 900)), vec![None]);
    assert_eq!(s.next_deadline(), Some(2900));
    // Not yet stood long enough: nothing.
    assert!(s.pushes(|_| Some(b2.clone()), 2899).is_empty());
    // Stood 2 s: d4 is sent, and nothing waits any more.
    assert_eq!(
        sans(&s.pushes(|_| Some(b2.clone()), 2900)),
        vec![Some(json!(["e4", "d5", "d4"]))]
    );
    assert_eq!(s.next_deadline(), None);
    // Completed by the clock at once: sent with no wait.
    let b3 = board(&["e4", "d5", "d4", "Nf6"]);
    assert_eq!(
        sans(&s.pushes(|_| Some(b3.clone()), 3000)),
        vec![Some(json!(["e4", "d5", "d4", "Nf6"]))]
    );
    // A lift: a push for the board, without `san`.
    let mut lifted = b3.clone();
    lifted.snapshot.placement = "rnbqkb1r/ppp1pppp/5n2/3p4/3P4/8/PPP1PPPP/RN1QKBNR".into();
    assert_eq!(sans(&s.pushes(|_| Some(lifted.clone()), 3100)), vec![None]);
}

#[test]
fn a_move_sent_and_still_on_the_record_is_never_taken_back_from_san() {
    let mut s = subscribed(&board(&["e4", "e5"]));
    // e5 was sent settled; the record now shows it not completed (a new
    // game state after a reinstatement, say): the list does not shrink.
    let mut b = board(&["e4", "e5"]);
    b.snapshot.settled = 1;
    b.snapshot.placement = "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKB1R".into();
    assert_eq!(sans(&s.pushes(|_| Some(b.clone()), 10)), vec![None]);
    // A real take-back of a settled move does shrink it.
    let back = board(&["e4"]);
    assert_eq!(
        sans(&s.pushes(|_| Some(back.clone()), 20)),
        vec![Some(json!(["e4"]))]
    );
}

#[test]
fn errors_flip_unsubscribe_and_loose_clients() {
    let mut s = LiveSession::default();
    let b = board(&[]);
    let all = [b.clone()];
    let v = parse(&s.call(
        r#"{"id":6,"call":"subscribe","param":{"feed":"eboardevent","id":2,"param":{"serialnr":"99999"}}}"#,
        &all,
        1,
    ));
    assert_eq!(v[0]["response"], "error");
    assert_eq!(v[0]["id"], 6);
    assert_eq!(v[0]["param"]["message"], "no such e-board");
    assert_eq!(parse(&s.call("{nope", &all, 1))[0]["response"], "error");
    assert_eq!(
        parse(&s.call(r#"{"id":9,"call":"dance"}"#, &all, 1))[0]["response"],
        "error"
    );
    // No serial number: the first board.
    let v = parse(&s.call(
        r#"{"id":1,"call":"subscribe","param":{"feed":"eboardevent","id":1}}"#,
        &all,
        1,
    ));
    assert_eq!(v[1]["param"]["serialnr"], "23946");
    // Flip, also sent by one client as `setup` with a flip argument.
    let v = parse(&s.call(
        r#"{"id":4,"call":"call","param":{"id":1,"method":"flip","param":{"flip":true}}}"#,
        &all,
        1,
    ));
    assert_eq!(v[0]["response"], "call");
    assert_eq!(v[1]["param"]["flipped"], true);
    let v = parse(&s.call(
        r#"{"id":4,"call":"call","param":{"id":1,"method":"setup","param":{"flip":false}}}"#,
        &all,
        1,
    ));
    assert_eq!(v[1]["param"]["flipped"], false);
    let v = parse(&s.call(
        r#"{"id":3,"call":"call","param":{"id":1,"method":"setup","param":{"fen":"not a fen"}}}"#,
        &all,
        1,
    ));
    assert_eq!(v[0]["response"], "error");
    assert_eq!(s.boards(), ["dgt_1"]);
    let v = parse(&s.call(r#"{"id":5,"call":"unsubscribe","param":{"id":1}}"#, &all, 1));
    assert_eq!(v[0]["response"], "call");
    assert!(s.boards().is_empty());
    assert!(s.pushes(|_| Some(b.clone()), 2).is_empty());
}
