//! A board read by dumps (polled), made from an update-mode log.

/// What a poller reads: the whole board at every whole second of the log.
pub fn polled(log: &eboard_bridge::log::SensorLog) -> eboard_bridge::log::SensorLog {
    use eboard_bridge::log::{Header, LogTime, Player, Record, RecordKind, SensorLog};
    use eboard_bridge::protocol::Placement;
    let mut player = Player::new("update");
    let mut records = Vec::new();
    let mut second = 0u64;
    let dump = |player: &Player, s: u64| Record {
        time: LogTime::from_micros(s * 1_000_000),
        kind: RecordKind::Board(Box::new(
            player
                .board()
                .placement()
                .cloned()
                .unwrap_or_else(Placement::empty),
        )),
    };
    for r in &log.records {
        while (second + 1) * 1_000_000 <= r.time.micros() && !records.is_empty() {
            second += 1;
            records.push(dump(&player, second));
        }
        player.play(r, None).unwrap();
        if records.is_empty() {
            records.push(dump(&player, 0));
        }
    }
    second += 1;
    records.push(dump(&player, second));
    SensorLog {
        header: Header::default(),
        records,
        lines: Vec::new(),
    }
}
