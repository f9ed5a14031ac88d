//! Arbiter calls over MQTT: refused unless enabled and allowed.

use super::*;

/// Publishes a call as `user` and waits for its reply; the broker's answer to the
/// publication comes with it. A refused publication gets no reply (`None`); an
/// accepted one whose reply does not come in 8 s fails the test.
async fn call(
    port: u16,
    user: &str,
    board: &str,
    method: &str,
    args: Value,
) -> (PubAckReason, Option<Value>) {
    match try_call(port, user, board, method, args).await {
        Ok(answer) => answer,
        Err(e) => panic!("{e}"),
    }
}

/// As [`call`], the failures said rather than panicked on (the event
/// campaign calls while the daemon may be restarting).
pub(crate) async fn try_call(
    port: u16,
    user: &str,
    board: &str,
    method: &str,
    args: Value,
) -> Result<(PubAckReason, Option<Value>), String> {
    let mut o = MqttOptions::new(format!("{user}-caller"), "127.0.0.1", port);
    o.set_credentials(user, PASSWORD);
    let (client, mut events) = AsyncClient::new(o, 16);
    let reply_topic = format!("eboard/hall-a/reply/{user}");
    let mut puback = None;
    let mut reply = None;
    // A refused publication gets no reply: the wait ends on the PUBACK.
    let answered = tokio::time::timeout(Duration::from_secs(8), async {
        loop {
            let Ok(event) = events.poll().await else {
                return;
            };
            match event {
                Event::Incoming(Packet::ConnAck(_)) => {
                    client
                        .subscribe(reply_topic.clone(), QoS::AtLeastOnce)
                        .await
                        .unwrap();
                }
                Event::Incoming(Packet::SubAck(_)) => {
                    let props = PublishProperties {
                        response_topic: Some(reply_topic.clone()),
                        correlation_data: Some(Bytes::from_static(b"call-1")),
                        ..Default::default()
                    };
                    client
                        .publish_with_properties(
                            format!("eboard/hall-a/boards/{board}/cmd/{method}"),
                            QoS::AtLeastOnce,
                            false,
                            args.to_string(),
                            props,
                        )
                        .await
                        .unwrap();
                }
                Event::Incoming(Packet::PubAck(a)) => {
                    puback = Some(a.reason);
                    if a.reason != PubAckReason::Success && a.reason != PubAckReason::NoMatchingSubscribers {
                        return;
                    }
                }
                Event::Incoming(Packet::Publish(p)) => {
                    let props = p.properties.unwrap_or_default();
                    assert_eq!(props.correlation_data.as_deref(), Some(&b"call-1"[..]));
                    reply = Some(serde_json::from_slice(&p.payload).unwrap());
                    return;
                }
                _ => {}
            }
        }
    })
    .await;
    match (answered, puback) {
        (Err(_), None) => Err(format!(
            "{user}'s call {method} on {board}: no answer from the broker in 8 s"
        )),
        (Err(_), Some(reason)) => Err(format!(
            "{user}'s call {method} on {board}: the broker answered {reason:?}, but no reply came in 8 s"
        )),
        (Ok(_), None) => Err(format!(
            "{user}'s call {method} on {board}: the broker did not answer"
        )),
        (Ok(_), Some(reason)) => Ok((reason, reply)),
    }
}

/// `SetPlayers` with these names on `board`, called as `user`.
async fn set_players(port: u16, user: &str, board: &str, names: Value) -> (PubAckReason, Option<Value>) {
    call(port, user, board, "SetPlayers", names).await
}

/// A reply that refuses the call as not allowed, saying `why`.
fn assert_not_allowed(reply: Option<Value>, why: &str) {
    let reply = reply.expect("a reply");
    assert_eq!(reply["error"], "org.eboardbridge.Error.NotAllowed");
    assert!(reply["message"].as_str().unwrap().contains(why), "{reply}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arbiter_calls_change_the_game_only_when_enabled_and_allowed() {
    if !need(&BROKERS) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_port();
    // The hall's broker; its bridge to a central broker that is not there waits.
    let _hall = hall_broker(d, "hall-a", port, free_port()).await;
    let room = Subscriber::start(port, "viewer", "display", "eboard/hall-a/#").await;
    let g = game("games/molinari-bordais-1979.pgn");
    let link = d.join("board-a");
    let _emulator = emulate(game_log(&g.start, &g.moves, 5, 600_000), &link, "1003");
    let state = || -> Value {
        room.last("eboard/hall-a/boards/board_a/state")
            .map(|m| serde_json::from_str(&m.payload).unwrap())
            .unwrap_or(Value::Null)
    };

    // Commands off: refused with the reason, nothing changes.
    let daemon = hall_a_daemon(d, port, &link, false).await;
    wait_for("the game under way", 20, || {
        state()["Moves"].as_array().is_some_and(|m| !m.is_empty())
    })
    .await;
    let (ack, reply) = set_players(port, "arbiter", "board_a", json!(["Carlsen", "Caruana"])).await;
    assert_eq!(ack, PubAckReason::Success);
    assert_not_allowed(reply, "commands = false");
    assert_eq!(state()["White"], "White, A");
    daemon.shutdown().within(30, "the daemon to stop").await;

    // Commands on, on a broker that authenticates everyone.
    let daemon = hall_a_daemon(d, port, &link, true).await;
    wait_for("online again", 20, || {
        room.last("eboard/hall-a/status")
            .is_some_and(|m| m.payload == "online")
    })
    .await;
    // A reader may not call: the broker refuses the publication, no reply comes.
    let (ack, reply) = set_players(port, "viewer", "board_a", json!(["Viewer", "Viewer"])).await;
    assert_eq!(ack, PubAckReason::NotAuthorized);
    assert!(reply.is_none());
    // An arbiter's malformed call is refused with the reason.
    let (_, reply) = set_players(port, "arbiter", "board_a", json!(["Only one"])).await;
    assert_eq!(reply.unwrap()["error"], "org.eboardbridge.Error.InvalidArgument");
    let (_, reply) = set_players(port, "arbiter", "nosuch", json!(["A", "B"])).await;
    assert_eq!(reply.unwrap()["error"], "org.eboardbridge.Error.NoBoard");
    // An arbiter's call is made.
    let (ack, reply) = set_players(port, "arbiter", "board_a", json!(["Carlsen", "Caruana"])).await;
    assert_eq!(ack, PubAckReason::Success);
    assert_eq!(reply, Some(json!({"ok": true})));
    wait_for("the new players in the state", 10, || {
        state()["White"] == "Carlsen"
    })
    .await;
    assert_eq!(state()["Black"], "Caruana");
    assert!(room.all().iter().all(|m| !m.payload.contains("Viewer")));
    // A new game on the game under way needs confirming, as at every door
    // (issue 57: MQTT ended games without it): refused with the rule book's
    // words, and the game goes on.
    let (_, reply) = call(port, "arbiter", "board_a", "NewGame", json!([""])).await;
    let reply = reply.expect("a reply");
    assert_eq!(reply["error"], "org.eboardbridge.Error.NeedsForce", "{reply}");
    let confirm = reply["confirm"].as_str().unwrap_or_default();
    assert!(
        confirm.starts_with("board 1's game is under way (")
            && confirm.ends_with("a new game ends it `*` (abandoned)"),
        "{reply}"
    );
    assert_eq!(
        reply["message"],
        format!("{confirm}; nothing was changed (run it again with --force to do it)")
    );
    assert_eq!(state()["Result"], "");
    assert!(state()["Moves"].as_array().is_some_and(|m| !m.is_empty()));
    // A payload that is neither the arguments nor `{"args", "force"}` is refused.
    let (_, reply) = call(port, "arbiter", "board_a", "NewGame", json!({"force": true})).await;
    assert_eq!(reply.unwrap()["error"], "org.eboardbridge.Error.InvalidArgument");
    // The call is in the board's events, as on D-Bus.
    let arbiter: Vec<Value> = room
        .in_order("eboard/hall-a/boards/board_a/events")
        .into_iter()
        .filter(|v| v["type"] == "arbiter")
        .collect();
    assert_eq!(arbiter.len(), 1, "{arbiter:?}");
    assert_eq!(arbiter[0]["method"], "SetPlayers");
    daemon.shutdown().within(30, "the daemon to stop").await;

    // Commands on, but the broker lets anyone in: refused.
    let open_port = free_port();
    let _open = Broker::start(d, "open", "listener 1883\nallow_anonymous true\n", open_port).await;
    let daemon = hall_a_daemon(d, open_port, &link, true).await;
    let open_room = Subscriber::start(open_port, "viewer", "open-display", "eboard/hall-a/#").await;
    wait_for("the board on the open broker", 20, || {
        open_room.last("eboard/hall-a/boards/board_a/state").is_some()
    })
    .await;
    let (_, reply) = set_players(open_port, "arbiter", "board_a", json!(["X", "Y"])).await;
    assert_not_allowed(reply, "without credentials");
    let s = open_room.last("eboard/hall-a/boards/board_a/state").unwrap();
    assert!(s.payload.contains("\"White\":\"Carlsen\""), "{}", s.payload);
    daemon.shutdown().within(30, "the daemon to stop").await;
    open_room.stop();
    room.stop();
}
