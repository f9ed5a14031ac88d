//! One board in detail (`ctl boards N`), and what `ctl text` did there.

use std::fmt::Write;

use super::format::{BoardView, clock};

/// One board in detail (`ctl boards N`): where it is, the players with their
/// tags, the game, the clocks, the moves and what needs the arbiter.
pub fn detail(b: &BoardView) -> String {
    let mut s = String::new();
    let line = if b.connected { "connected" } else { "disconnected" };
    let serial = if b.serial.is_empty() {
        String::new()
    } else {
        format!(", serial number {}", b.serial)
    };
    let round = if b.round.is_empty() { "?" } else { &b.round };
    let _ = writeln!(s, "board {} ({}), round {round}: {line}{serial}", b.number, b.id);
    for (side, name) in [("White", &b.white), ("Black", &b.black)] {
        let tag = |t: &str| b.tags.get(&format!("{side}{t}")).filter(|v| !v.is_empty());
        let mut about = Vec::new();
        if let Some(t) = tag("Title") {
            about.push(t.clone());
        }
        if let Some(e) = tag("Elo") {
            about.push(e.clone());
        }
        if let Some(f) = tag("FideId") {
            about.push(format!("FIDE {f}"));
        }
        if let Some(t) = tag("Team") {
            about.push(t.clone());
        }
        let about = if about.is_empty() {
            String::new()
        } else {
            format!(" ({})", about.join(", "))
        };
        let _ = writeln!(s, "{side}: {name}{about}");
    }
    let result = if b.result.is_empty() {
        String::new()
    } else {
        format!(" {}", b.result)
    };
    let _ = writeln!(
        s,
        "game: {}{result}, {} plies",
        super::format::status_words(b),
        b.moves
    );
    if b.white_clock_ms == 0 && b.black_clock_ms == 0 && b.clock_running == "none" {
        let _ = writeln!(s, "clocks: none reported");
    } else {
        let running = match b.clock_running.as_str() {
            "white" | "black" => format!(" ({}'s running)", b.clock_running),
            _ => " (stopped)".into(),
        };
        let _ = writeln!(
            s,
            "clocks: white {}, black {}{running}",
            clock(b.white_clock_ms),
            clock(b.black_clock_ms)
        );
    }
    if !b.time_control.is_empty() {
        let _ = writeln!(s, "time control: {}", b.time_control);
    }
    if !b.sans.is_empty() {
        let moves: Vec<String> = b
            .sans
            .iter()
            .enumerate()
            .map(|(i, m)| {
                if i % 2 == 0 {
                    format!("{}. {m}", i / 2 + 1)
                } else {
                    m.clone()
                }
            })
            .collect();
        let _ = writeln!(s, "moves: {}", moves.join(" "));
    }
    if b.needs.is_empty() {
        let _ = writeln!(s, "needs the arbiter: nothing");
    } else {
        let _ = writeln!(s, "needs the arbiter: {}", b.needs.join("; "));
    }
    s.push_str(&super::alerts::lines(&b.alerts, b.number));
    s
}

/// What `ctl text` did: a board whose clock never reported may have none to
/// show the text.
pub fn text_shown(b: &BoardView, text: &str, seconds: u32) -> String {
    if b.white_clock_ms == 0 && b.black_clock_ms == 0 && b.clock_running == "none" {
        format!("{text:?} sent for {seconds} s; no clock has reported on this board, so none may show it")
    } else {
        format!("the clock shows {text:?} for {seconds} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_board_in_detail() {
        let b = BoardView {
            number: 3,
            id: "board3".into(),
            connected: true,
            serial: "11003".into(),
            round: "2".into(),
            white: "Carlsen, Magnus".into(),
            black: "Gukesh, D".into(),
            status: "playing".into(),
            moves: 3,
            sans: vec!["e4".into(), "e5".into(), "Nf3".into()],
            white_clock_ms: 5_000_000,
            black_clock_ms: 5_390_000,
            clock_running: "black".into(),
            tags: [
                ("WhiteElo".to_string(), "2830".to_string()),
                ("WhiteTitle".into(), "GM".into()),
                ("WhiteFideId".into(), "1503014".into()),
            ]
            .into(),
            ..BoardView::default()
        };
        assert_eq!(
            detail(&b),
            "board 3 (board3), round 2: connected, serial number 11003\n\
             White: Carlsen, Magnus (GM, 2830, FIDE 1503014)\n\
             Black: Gukesh, D\n\
             game: playing, 3 plies\n\
             clocks: white 1:23:20, black 1:29:50 (black's running)\n\
             moves: 1. e4 e5 2. Nf3\n\
             needs the arbiter: nothing\n"
        );
    }

    #[test]
    fn a_text_is_said_shown_only_where_a_clock_reported() {
        let mut b = BoardView {
            clock_running: "none".into(),
            ..BoardView::default()
        };
        assert_eq!(
            text_shown(&b, "ARBITER", 10),
            "\"ARBITER\" sent for 10 s; no clock has reported on this board, so none may show it"
        );
        b.white_clock_ms = 5_400_000;
        assert_eq!(
            text_shown(&b, "ARBITER", 10),
            "the clock shows \"ARBITER\" for 10 s"
        );
    }
}
