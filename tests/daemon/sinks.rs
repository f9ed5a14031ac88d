//! Publication: after D-Bus, one publication per turn of a board's task is
//! offered to every sink; a sink that blocks holds no move back.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use eboard_bridge::api::{Publication, Sink};

use super::*;

/// A sink that blocks in `offer` until the test lets it go.
#[derive(Default)]
struct Stuck {
    open: AtomicBool,
    entered: AtomicUsize,
    got: Mutex<Vec<Arc<Publication>>>,
}

impl Sink for Stuck {
    fn offer(&self, p: &Arc<Publication>) {
        self.entered.fetch_add(1, Ordering::SeqCst);
        while !self.open.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(2));
        }
        self.got.lock().unwrap().push(p.clone());
    }
}

/// A sink that keeps what it is offered.
#[derive(Default)]
struct Recorder(Mutex<Vec<Arc<Publication>>>);

impl Sink for Recorder {
    fn offer(&self, p: &Arc<Publication>) {
        self.0.lock().unwrap().push(p.clone());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sink_that_blocks_holds_no_move_back_from_dbus() {
    let dir = tempfile::tempdir().unwrap();
    let (_game, expected, emulator, link, address, (_client, mut signals)) = immortal_heard(dir.path()).await;

    let stuck = Arc::new(Stuck::default());
    let recorder = Arc::new(Recorder::default());
    let daemon = Daemon::start_with(
        vec![link.clone()],
        config(dir.path()),
        BusChoice::Address(address),
        vec![stuck.clone(), recorder.clone()],
    )
    .within(30, "the daemon to start")
    .await
    .unwrap();
    let live = common::replayed::collect(&daemon);

    // Every move's signal, each within 5 s of the one before (the emulator
    // plays a move about every 0.3 s), while the sink is stuck in its first offer.
    let mut made = Vec::new();
    while made.len() < expected.len() {
        let what = format!("MoveMade {} within 5 s of the one before", made.len() + 1);
        let msg = next_signal(&mut signals, 5, &what).await;
        let (_ply, san, _uci, _fen): (u32, String, String, String) = msg.body().deserialize().unwrap();
        made.push(san);
    }
    assert_eq!(made, expected);
    assert_eq!(
        stuck.entered.load(Ordering::SeqCst),
        1,
        "the sink is stuck in its first offer"
    );
    assert!(stuck.got.lock().unwrap().is_empty());

    // Let it go: it gets what waited for it, the latest publication included.
    stuck.open.store(true, Ordering::SeqCst);
    let last_move = |ps: &[Arc<Publication>]| {
        ps.iter()
            .flat_map(|p| &p.events)
            .filter(|e| matches!(e.event.kind, EventKind::Move { .. }))
            .count()
    };
    wait_for("the stuck sink to catch up", 10, || {
        last_move(&stuck.got.lock().unwrap()) == expected.len()
    })
    .await;
    daemon.shutdown().within(30, "the daemon to stop").await;
    emulator.abort();

    // The recorder saw every event the daemon published, in order; each
    // publication the two sinks got is one object, its JSON made once.
    let live = live.within(10, "the daemon's events to end").await.unwrap();
    let recorded = recorder.0.lock().unwrap().clone();
    let events: Vec<_> = recorded
        .iter()
        .flat_map(|p| &p.events)
        .map(|e| e.event.clone())
        .collect();
    let tapped: Vec<_> = live.iter().map(|t| t.event.clone()).collect();
    assert_eq!(events, tapped);
    let stuck_got = stuck.got.lock().unwrap().clone();
    assert!(!stuck_got.is_empty());
    for p in &stuck_got {
        let same = recorded
            .iter()
            .find(|r| Arc::ptr_eq(r, p))
            .expect("the same publication");
        for (a, b) in same.events.iter().zip(&p.events) {
            assert!(Arc::ptr_eq(a.json(), b.json()));
            let v: serde_json::Value = serde_json::from_str(a.json()).unwrap();
            assert_eq!(v["board"], "board0");
        }
    }
}

/// One publication offered to the network's history and to MQTT: both hand out
/// the one JSON text the publication made (the same allocation), and MQTT's
/// line is that text with its `seq`, byte for byte what it was when MQTT made
/// its own.
#[test]
fn the_sinks_share_the_json_made_once() {
    use eboard_bridge::net::events::{EventLog, Next};
    use eboard_bridge::rules::{Event, Side};
    let events = vec![
        Event {
            t_us: 500_000,
            kind: EventKind::MoveCompleted {
                ply: 1,
                side: Side::White,
            },
        },
        Event {
            t_us: 750_000,
            kind: EventKind::MoveCompleted {
                ply: 2,
                side: Side::Black,
            },
        },
    ];
    let p = Arc::new(Publication::new(
        "board0".into(),
        events.clone(),
        None,
        Vec::new(),
    ));
    let history = EventLog::new(16);
    let (outbox, mut updates) = eboard_bridge::mqtt::outbox();
    history.offer(&p);
    outbox.offer(&p);
    let Next::Items(items) = history.after(0, 16) else {
        panic!("the history has the events")
    };
    let update = updates.try_recv().expect("MQTT got the publication");
    assert_eq!(items.len(), 2);
    for ((item, sent), (published, event)) in
        items.iter().zip(&update.events).zip(p.events.iter().zip(&events))
    {
        assert!(Arc::ptr_eq(&item.json, published.json()));
        assert!(Arc::ptr_eq(sent, published.json()));
        let plain = serde_json::to_string(event).unwrap();
        assert_eq!(
            eboard_bridge::mqtt::spool::with_seq(sent, "board0", 9),
            eboard_bridge::mqtt::spool::with_seq(&plain, "board0", 9)
        );
    }
}
