//! The board task on its own: inputs through its channel, its journal read
//! back by `replay`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};

use super::{BoardSetup, BoardTask, BoardUpdate};
use crate::api::{Publication, Sink, Snapshot};
use crate::bus::Publisher;
use crate::daemon::Input;
use crate::daemon::device::DeviceEvent;
use crate::output::replay::Tags;
use crate::rules::{Config, Event};

/// The events a board published, in order.
#[derive(Default)]
struct Heard(Mutex<Vec<Event>>);

impl Sink for Heard {
    fn offer(&self, publication: &Arc<Publication>) {
        let mut heard = self.0.lock().unwrap();
        heard.extend(publication.events.iter().map(|p| p.event.clone()));
    }
}

fn setup(dir: &std::path::Path) -> BoardSetup {
    let tags = Tags {
        event: "?".into(),
        site: "?".into(),
        date: "2026.11.27".into(),
        round: "1".into(),
        white: "?".into(),
        black: "?".into(),
        extra: Default::default(),
    };
    BoardSetup {
        id: "board1".into(),
        device: dir.join("dgt"),
        configured: BoardUpdate {
            round: 1,
            number: 1,
            tags,
            by_serial: Vec::new(),
            time_control: None,
            pairings: Default::default(),
        },
        round_format: Default::default(),
        rules: Config::default(),
        white_side: None,
        show_moves: false,
        recording: dir.join("board1.esl"),
        time_scale: 1.0,
    }
}

/// The bytes a board sends for its dump of the start position.
fn start_dump() -> Vec<u8> {
    let log = crate::log::parse_log(
        "# eboard-sensor-log 1\n0 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR\n",
        "t.esl",
    )
    .unwrap();
    let player = crate::log::Player::new("t.esl");
    let mut clock = crate::clock::ClockModel::new(
        crate::protocol::ClockTime::from_millis(0),
        crate::protocol::ClockTime::from_millis(0),
        0,
    );
    crate::log::play::board_bytes(&log.records[0].kind, player.board(), &mut clock, 0)
        .unwrap()
        .unwrap()
}

/// Bytes read before the task wrote its start-up commands, and handed to it
/// after: the journal writes them at the commands' time (times never go back
/// in it), and the rules core takes them at that time too, so the game
/// published live is the game `replay` reads from the journal, to the
/// microsecond (the fault campaign once saw a dump's game start 1 ms apart).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_read_before_a_command_is_written_are_taken_when_the_journal_has_them() {
    let dir = tempfile::tempdir().unwrap();
    let setup = setup(dir.path());
    let recording = setup.recording.clone();
    let device = setup.device.clone();
    let (out_tx, mut out_rx) = mpsc::channel(64);
    let publisher = Arc::new(Publisher::new(
        watch::channel(Snapshot::default()).0,
        watch::channel(false).0,
        None,
    ));
    let heard = Arc::new(Heard::default());
    let sinks: Vec<Arc<dyn Sink>> = vec![heard.clone()];
    let task = BoardTask::new(setup, out_tx, publisher, sinks).unwrap();
    let (input_tx, mut input_rx) = mpsc::channel(16);
    let (stop_tx, stop_rx) = watch::channel(false);
    let running = tokio::spawn(async move { task.run(&mut input_rx, stop_rx).await });

    let read_at = Instant::now();
    // The read returned some time before the task writes its commands.
    tokio::time::sleep(Duration::from_millis(30)).await;
    input_tx
        .send(Input::Device(DeviceEvent::Connected(device)))
        .await
        .unwrap();
    // A start-up command on the line: its `tx` record is written.
    tokio::time::timeout(Duration::from_secs(10), out_rx.recv())
        .await
        .expect("a start-up command within 10 s")
        .expect("the line open");
    input_tx
        .send(Input::Device(DeviceEvent::Bytes(start_dump(), read_at)))
        .await
        .unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    while heard.0.lock().unwrap().is_empty() {
        assert!(Instant::now() < until, "no event published within 10 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop_tx.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("the task stops within 10 s")
        .unwrap();

    let live = heard.0.lock().unwrap().clone();
    let log = crate::log::read_log(&recording).unwrap();
    let replayed = crate::output::replay::run(&log, "board1.esl", Config::default(), None).unwrap();
    let json = |events: &[Event]| -> Vec<String> {
        events.iter().map(|e| serde_json::to_string(e).unwrap()).collect()
    };
    assert!(
        live.iter()
            .any(|e| matches!(e.kind, crate::rules::EventKind::GameStart { .. })),
        "{:?}",
        json(&live)
    );
    // What `replay` reads past the end of the input (a game left under way)
    // is not what the live task has published by then.
    let replayed: Vec<Event> = replayed.events.into_iter().take(live.len()).collect();
    assert_eq!(json(&live), json(&replayed));
}
