use std::collections::HashMap;

use tokio::sync::{mpsc, watch};
use zbus::zvariant::OwnedObjectPath;

use super::*;
use crate::api::{Decision, Snapshot};
use crate::rules::{Event, EventKind};

/// A client that reads a property on a signal sees the state the signal led
/// to: between `signal` and `publish` the read waits; it is answered with the
/// new snapshot. The properties changed come in one `PropertiesChanged`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_property_read_between_signal_and_snapshot_waits_for_the_snapshot() {
    use futures_util::StreamExt;
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let address = format!("unix:path={}", dir.path().join("bus.sock").display());
    let mut bus = busd::bus::Bus::for_address(Some(&address)).await.unwrap();
    tokio::spawn(async move {
        let _ = bus.run().await;
    });
    let connect = || async {
        zbus::connection::Builder::address(address.as_str())
            .unwrap()
            .build()
            .await
            .unwrap()
    };
    let (server, client) = (connect().await, connect().await);
    let (snap_tx, snap_rx) = watch::channel(Snapshot::default());
    let (publishing_tx, publishing_rx) = watch::channel(false);
    let (commands, _requests) = mpsc::channel(1);
    let path = board_path("b1");
    server
        .object_server()
        .at(path.as_str(), Board1::new(snap_rx, publishing_rx, commands))
        .await
        .unwrap();
    let object = OwnedObjectPath::try_from(path.clone()).unwrap();
    let publisher = Publisher::new(snap_tx, publishing_tx, Some((server.clone(), object)));

    let signals = |member: &'static str, iface: &'static str| {
        let client = client.clone();
        async move {
            let rule = zbus::MatchRule::builder()
                .msg_type(zbus::message::Type::Signal)
                .interface(iface)
                .unwrap()
                .member(member)
                .unwrap()
                .build();
            zbus::MessageStream::for_match_rule(rule, &client, None)
                .await
                .unwrap()
        }
    };
    let mut made = signals("MoveMade", BOARD_INTERFACE).await;
    let mut changed = signals("PropertiesChanged", "org.freedesktop.DBus.Properties").await;
    let proxy = zbus::proxy::Builder::<zbus::Proxy>::new(&client)
        .destination(server.unique_name().unwrap().to_owned())
        .unwrap()
        .path(path.clone())
        .unwrap()
        .interface(BOARD_INTERFACE)
        .unwrap()
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await
        .unwrap();

    let fen = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1";
    let e4 = Event {
        t_us: 1_000_000,
        kind: EventKind::Move {
            ply: 1,
            san: "e4".into(),
            uci: "e2e4".into(),
            fen: fen.into(),
            side: crate::rules::Side::White,
            inferred: false,
        },
    };
    publisher.signal(std::slice::from_ref(&e4)).await;
    let signal = tokio::time::timeout(Duration::from_secs(5), made.next())
        .await
        .unwrap();
    assert!(signal.is_some());
    let read = tokio::spawn(async move { proxy.get_property::<String>("LastMove").await.unwrap() });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !read.is_finished(),
        "a property was read before the snapshot of the signal sent"
    );
    publisher
        .publish(Snapshot {
            last_move: "e2e4".into(),
            fen: fen.into(),
            moves: vec!["e4".into()],
            ..Snapshot::default()
        })
        .await;
    let last = tokio::time::timeout(Duration::from_secs(5), read)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(last, "e2e4");

    // The next PropertiesChanged: (interface, changed properties).
    type Changed = (String, HashMap<String, zbus::zvariant::OwnedValue>, Vec<String>);
    async fn next_change(
        changed: &mut zbus::MessageStream,
    ) -> (String, HashMap<String, zbus::zvariant::OwnedValue>) {
        let msg = tokio::time::timeout(Duration::from_secs(5), changed.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let (iface, props, _): Changed = msg.body().deserialize().unwrap();
        (iface, props)
    }
    let (iface, props) = next_change(&mut changed).await;
    assert_eq!(iface, BOARD_INTERFACE);
    let mut names: Vec<&str> = props.keys().map(String::as_str).collect();
    names.sort();
    assert_eq!(names, ["Fen", "LastMove", "Moves"]);

    // The names and types written out in `changed_properties` are the
    // interface's own: a snapshot that differs in every property gives a
    // PropertiesChanged equal to what GetAll answers.
    let all = Snapshot {
        connected: true,
        device: "/dev/eboard/b1".into(),
        serial_number: "12345".into(),
        orientation: "normal".into(),
        status: "playing".into(),
        fen: "8/8/8/8/8/8/8/K6k w - - 0 1".into(),
        moves: vec!["e4".into(), "e5".into()],
        pgn: "1. e4 e5 *".into(),
        last_move: "e7e5".into(),
        white_clock_ms: 5_400_000,
        black_clock_ms: 5_399_000,
        clock_running: "white".into(),
        result: "1-0".into(),
        termination: "checkmate".into(),
        irregularity: "displaced".into(),
        event: "Open".into(),
        round: "4".into(),
        board_number: 7,
        white: "A".into(),
        black: "B".into(),
        time_control: "5400+30".into(),
        tags: [("Board".to_string(), "7".to_string())].into(),
        fault: "restarted".into(),
        ..Snapshot::default()
    };
    publisher.publish(all).await;
    let (_, props) = next_change(&mut changed).await;
    let properties = zbus::fdo::PropertiesProxy::builder(&client)
        .destination(server.unique_name().unwrap().to_owned())
        .unwrap()
        .path(path.clone())
        .unwrap()
        .build()
        .await
        .unwrap();
    let name = zbus::names::InterfaceName::from_static_str_unchecked(BOARD_INTERFACE);
    let got = properties.get_all(name).await.unwrap();
    assert_eq!(got.len(), 23);
    assert_eq!(props, got);
}

#[test]
fn decisions_read_back_from_their_records() {
    let all = [
        Decision::new_game("").unwrap(),
        Decision::set_position("8/8/8/8/8/8/8/K6k w - - 0 1").unwrap(),
        Decision::Reinstate(12),
        Decision::set_result("1-0", None).unwrap(),
        Decision::set_result("1-0", Some("time forfeit")).unwrap(),
        Decision::set_time_control("40/5400+30:1800+30", crate::rules::ClockMode::Drive).unwrap(),
        Decision::ShowText("ARBITER".into(), 5),
        Decision::SetPlayers("Carlsen, Magnus".into(), "Caruana, Fabiano".into()),
        Decision::set_clock(60_000, 0).unwrap(),
        Decision::add_time("black", 120).unwrap(),
        Decision::SetTags([("WhiteElo".to_string(), "2830".to_string())].into()),
        Decision::SetPairing(3, [("White".to_string(), "Carlsen, Magnus".to_string())].into()),
        Decision::Undo { force: true },
    ];
    // Every decision has its named method; `Decide` takes them all.
    assert_eq!(all.len() + 1, CHANGING_METHODS.len());
    assert_eq!(
        crate::rules::Decision::BOARD_METHODS.len() + 1,
        CHANGING_METHODS.len()
    );
    for m in crate::rules::Decision::BOARD_METHODS {
        assert!(CHANGING_METHODS.contains(&m), "{m}");
    }
    for c in all {
        assert!(CHANGING_METHODS.contains(&c.method()), "{c:?}");
        assert_eq!(crate::api::decision::from_call(c.method(), &c.args()).unwrap(), c);
    }
}

/// A board's refusal keeps its D-Bus name and text on the bus.
#[test]
fn a_board_error_is_the_same_error_on_the_bus() {
    use crate::api::Error;
    use zbus::DBusError;
    for e in [
        Error::InvalidArgument("a".into()),
        Error::NoGame("b".into()),
        Error::NotConnected("c".into()),
        Error::Unavailable("d".into()),
        Error::GameUnderWay("e".into()),
        Error::NoBoard("f".into()),
        Error::NotUndone("g".into()),
    ] {
        let on_bus = BusError::from(e.clone());
        assert_eq!(on_bus.name().as_str(), e.name());
        assert_eq!(on_bus.description(), Some(e.message()));
        assert_eq!(on_bus.to_string(), e.to_string());
    }
}
