//! The clock: time controls driven by the host's clock (drive mode), presses
//! charged to the millisecond, periods, delays, penalties on the clock, flags,
//! and `%clk` in replay equal to what the clock showed. Sensor logs through the
//! same decoder and rules core as the daemon (`replay`).

use crate::common;

use eboard_bridge::board::Orientation;
use eboard_bridge::clock::ClockModel;
use eboard_bridge::log::{LogTime, Record, RecordKind, SensorLog, parse_log};
use eboard_bridge::output::replay;
use eboard_bridge::protocol::{ClockCommand, ClockSide, ClockTime, HostCommand};
use eboard_bridge::rules::{Config, EventKind, FlagPolicy};
use eboard_bridge::rules::{GameResult, Termination};
use eboard_bridge::sim::Hands;
use shakmaty::{Chess, Position};

const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR";

fn log(body: &str) -> SensorLog {
    parse_log(
        &format!("# eboard-sensor-log 1\n0 board {START}\n{body}"),
        "t.esl",
    )
    .unwrap()
}

fn run(log: &SensorLog, cfg: Config) -> replay::Replay {
    replay::run(log, "t.esl", cfg, None).unwrap()
}

/// The bytes of the set-and-run commands the core made, in hex.
fn sets(r: &mut replay::Replay) -> Vec<String> {
    r.core
        .take_clock_commands()
        .into_iter()
        .filter(|c| matches!(c, ClockCommand::SetAndRun { .. }))
        .map(|c| {
            HostCommand::Clock(c)
                .encode()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn clks(r: &replay::Replay) -> Vec<Option<u64>> {
    r.core.game().unwrap().moves.iter().map(|m| m.clk_ms).collect()
}

#[test]
fn ninety_thirty_sets_the_clock_and_charges_a_press_to_the_millisecond() {
    // Black starts white's clock at 1 s; white plays e4 and presses 12.4 s later.
    let mut r = run(
        &log(
            "0 arbiter SetTimeControl \"90+30\"\n1.000 press right\n2.000 lift e2 P\n2.400 place e4 P\n13.400 press left\n",
        ),
        Config::default(),
    );
    let g = r.core.game().unwrap();
    assert_eq!(g.time_control.as_deref(), Some("5400+30"));
    // 5400 s - 12.4 s + 30 s, kept to the millisecond; the move took 12.4 s.
    assert_eq!(g.moves[0].clk_ms, Some(5_417_600));
    assert_eq!(g.moves[0].emt_ms, Some(12_400));
    assert_eq!(
        sets(&mut r),
        [
            // 1:30:00 both, stopped until a press, switching on the lever.
            "2b 0a 03 0a 01 1e 00 01 1e 00 08 00",
            // White (left) 1:30:17, black 1:30:00 counting down.
            "2b 0a 03 0a 01 1e 11 01 1e 00 0a 00",
        ]
    );
    let pgn = replay::pgn(r.core.games(), "?");
    assert!(pgn.contains("[TimeControl \"5400+30\"]"), "{pgn}");
    assert!(pgn.contains("1. e4 { [%clk 1:30:17] [%emt 0:00:12] }"), "{pgn}");
    assert!(
        pgn.contains("[WhiteClock \"1:30:17\"]\n[BlackClock \"1:30:00\"]"),
        "{pgn}"
    );
}

#[test]
fn a_set_is_no_press_and_reports_wait_while_it_is_pending() {
    // White's move pressed; the clock's own report after it (before our set is
    // acknowledged) shows its own times: they are not the record's.
    let mut r = run(
        &log(
            "0 arbiter SetTimeControl \"3+2\"\n1.000 press right\n2.000 lift e2 P\n2.400 place e4 P\n4.000 press left\n4.100 clock left=0:02:57 right=0:03:00 running=right\n",
        ),
        Config::default(),
    );
    let kinds: Vec<&str> = r.events.iter().map(|e| e.kind.name()).collect();
    assert!(!kinds.contains(&"irregular"), "{kinds:?}");
    assert_eq!(clks(&r), [Some(179_000)]);
    assert_eq!(sets(&mut r).len(), 2);
}

/// A game of `plies` plies with think times from `seed` (up to 6 s), the clock
/// set by the log at the start when `clock` is given; a press after every move.
fn played(plies: usize, seed: u64, clock: Option<ClockTime>) -> (SensorLog, Vec<String>) {
    let legal = common::random_game(plies, seed);
    let mut pos = Chess::default();
    let mut sans = Vec::new();
    for m in &legal {
        sans.push(shakmaty::san::SanPlus::from_move_and_play_unchecked(&mut pos, *m).to_string());
    }
    let style = common::steady_hands((200, 6000), (60, 200));
    let mut hands = Hands::new(seed, style, Orientation::Normal);
    hands.board(Chess::default().board());
    if let Some(t) = clock {
        hands.set_clock(t);
    }
    (common::played_log(hands, &Chess::default(), &legal, 1500), sans)
}

/// The times of the press records of a log (µs).
fn presses(log: &SensorLog) -> Vec<u64> {
    log.records
        .iter()
        .filter(|r| matches!(r.kind, RecordKind::Press(_)))
        .map(|r| r.time.micros())
        .collect()
}

#[test]
fn the_second_period_comes_with_white_s_fortieth_move_and_80_moves_keep_the_model() {
    let (mut log, _) = played(160, 7, Some(ClockTime::from_hms(1, 30, 0).unwrap()));
    log.records.insert(
        1,
        Record {
            time: LogTime::from_micros(0),
            kind: RecordKind::Arbiter {
                method: "SetTimeControl".into(),
                args: vec!["\"40/5400+30:1800+30\"".into()],
            },
        },
    );
    let r = run(&log, Config::default());
    let game = r.core.game().unwrap();
    assert_eq!(game.ply(), 160);
    // The model, from the log's press times: white's first press starts black's
    // clock (white's never ran); each move costs the time since the press before.
    let p = presses(&log);
    assert_eq!(p.len(), 160);
    let mut left = [5_400_000_000i64, 5_400_000_000];
    for (ply, m) in game.moves.iter().enumerate() {
        let side = ply % 2;
        let used = if ply == 0 { 0 } else { (p[ply] - p[ply - 1]) as i64 };
        left[side] -= used;
        left[side] += 30_000_000;
        let n = ply / 2 + 1;
        if n == 40 {
            left[side] += 1_800_000_000;
        }
        assert_eq!(m.clk_ms, Some((left[side] / 1000) as u64), "ply {}", ply + 1);
    }
    // Move 39 got the increment only, move 40 the second period too.
    let white = |n: usize| game.moves[2 * (n - 1)].clk_ms.unwrap() as i64;
    let used = |n: usize| ((p[2 * (n - 1)] - p[2 * (n - 1) - 1]) / 1000) as i64;
    assert!((white(39) - white(38) + used(39) - 30_000).abs() <= 1);
    assert!((white(40) - white(39) + used(40) - 1_830_000).abs() <= 1);
}

#[test]
fn bronstein_and_us_delays_charge_what_the_rules_say() {
    // White's moves take 7.3 s and 14.6 s; black's 1 s.
    let body = |tc: &str| {
        format!(
            "0 arbiter SetTimeControl \"{tc}\"\n1.000 press right\n\
             5.000 lift e2 P\n5.400 place e4 P\n8.300 press left\n\
             8.800 lift e7 p\n9.000 place e5 p\n9.300 press right\n\
             20.000 lift g1 N\n20.400 place f3 N\n23.900 press left\n"
        )
    };
    let r = run(&log(&body("90b10")), Config::default());
    // Bronstein d10: 7.3 s used and given back; 14.6 s used, 10 s back.
    assert_eq!(clks(&r), [Some(5_400_000), Some(5_400_000), Some(5_395_400)]);
    let r = run(&log(&body("G/90;d5")), Config::default());
    // US delay d5: 7.3 s costs 2.3 s; 14.6 s costs 9.6 s; 0.5 s costs nothing.
    assert_eq!(clks(&r), [Some(5_397_700), Some(5_400_000), Some(5_388_100)]);
}

#[test]
fn the_host_sees_the_flag_between_two_records_and_the_game_goes_on() {
    // 3+2: white uses 181 s on the second move; nothing arrives meanwhile.
    let text = "0 arbiter SetTimeControl \"3+2\"\n1.000 press right\n\
                2.000 lift e2 P\n2.400 place e4 P\n3.000 press left\n\
                4.000 lift e7 p\n4.400 place e5 p\n5.000 press right\n\
                190.000 lift g1 N\n190.400 place f3 N\n191.000 press left\n";
    let r = run(&log(text), Config::default());
    let flag = r.events.iter().find(|e| e.kind.name() == "flag").expect("a flag");
    // White's clock ran from 1 s; 1. e4 took 2 s and earned 2 s: 180 s left
    // when black's press at 5 s started it again, so the flag falls at 185 s.
    let EventKind::Flag { side, ply, .. } = &flag.kind else {
        unreachable!()
    };
    assert_eq!((side.name(), *ply), ("white", 2));
    assert!(
        flag.t_us.abs_diff(185_000_000) < 2_000,
        "flag at {} µs",
        flag.t_us
    );
    assert_eq!(
        r.core.game().unwrap().ply(),
        3,
        "moves after the flag are recorded"
    );
    assert!(r.core.game().unwrap().result.is_none());
    // With `flag = "end"`: 0-1, and the clock is stopped.
    let mut end = run(
        &log(text),
        Config {
            flag: FlagPolicy::End,
            ..Config::default()
        },
    );
    assert_eq!(
        end.core.game().unwrap().result,
        Some((GameResult::BlackWins, Termination::TimeForfeit))
    );
    let last = sets(&mut end).pop().unwrap();
    assert!(last.ends_with(" 08 00"), "stopped: {last}");
    // A log that ends before the time is out has no flag.
    let short = &text[..text.find("190.000").unwrap()];
    let r = run(&log(short), Config::default());
    assert!(r.events.iter().all(|e| e.kind.name() != "flag"));
}

#[test]
fn a_move_completed_at_zero_that_meets_the_count_is_no_flag() {
    // 1/60+0:60 (one move in 60 s, then 60 s): white's first move starts black's
    // clock; black's first move is pressed exactly as its 60 s run out.
    let text = "0 arbiter SetTimeControl \"1/60:60\"\n0.500 press right\n\
                1.000 lift e2 P\n1.400 place e4 P\n2.000 press left\n\
                3.000 lift e7 p\n3.400 place e5 p\n62.000 press right\n\
                63.000 lift g1 N\n63.400 place f3 N\n64.000 press left\n";
    let r = run(
        &log(text),
        Config {
            flag: FlagPolicy::End,
            ..Config::default()
        },
    );
    assert!(r.events.iter().all(|e| e.kind.name() != "flag"), "{:?}", r.events);
    assert_eq!(clks(&r)[1], Some(60_000), "the second period added at zero");
    assert!(r.core.game().unwrap().result.is_none());
}

#[test]
fn a_completed_illegal_move_puts_exactly_two_minutes_on_the_opponent_s_clock() {
    let cfg = Config {
        apply_penalties: true,
        ..Config::default()
    };
    // The clock's own program (report mode): white's clock runs from 1 s.
    let text = "0 clock left=0:05:00 right=0:05:00 running=none\n1.000 press right\n\
                2.000 lift e2 P\n2.400 place e5 P\n5.000 press left\n";
    let mut r = run(&log(text), cfg);
    let irregular = r
        .events
        .iter()
        .find(|e| matches!(e.kind, EventKind::Irregular { completed: true, .. }))
        .unwrap();
    let EventKind::Irregular { penalty, .. } = &irregular.kind else {
        unreachable!()
    };
    assert!(
        penalty.unwrap().to_string().ends_with("added to the clock"),
        "{penalty:?}"
    );
    // White 4:56 as it was; black 5:00 + 2:00, running on.
    assert_eq!(sets(&mut r), ["2b 0a 03 0a 00 04 38 00 07 00 0a 00"]);
    // Not configured: reported only.
    let mut r = run(&log(text), Config::default());
    assert!(sets(&mut r).is_empty());
    // Drive mode: the host's clock, exactly 120 000 ms more for black.
    let drive = format!(
        "0 arbiter SetTimeControl \"5+0\"\n{}",
        &text[text.find("1.000").unwrap()..]
    );
    let mut r = run(&log(&drive), cfg);
    let all = sets(&mut r);
    // White (left) 296 s since its clock ran from 1 s to 5 s; black 300 + 120.
    assert_eq!(all.last().unwrap(), "2b 0a 03 0a 00 04 38 00 07 00 0a 00");
}

#[test]
fn a_glitched_report_is_ignored_and_one_confirmed_is_taken() {
    let text = "0 clock left=0:05:00 right=0:05:00 running=left\n\
                2.000 rx 8d 00 0a 00 05 00 00 02 11 01\n\
                3.000 clock left=0:04:57 right=0:05:00 running=left\n\
                4.000 clock left=0:03:00 right=0:05:00 running=left\n\
                5.000 clock left=0:02:59 right=0:05:00 running=left\n";
    let r = run(&log(text), Config::default());
    let white: Vec<u64> = r
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Clock { white_ms, .. } => Some(*white_ms),
            _ => None,
        })
        .collect();
    // 0:02:11 at 2 s is a glitch; 3:00 at 4 s is confirmed by 2:59 at 5 s (the
    // arbiter set the clock by hand).
    assert_eq!(white, [300_000, 297_000, 179_000]);
}

#[test]
fn replay_gives_every_move_the_time_the_clock_showed() {
    // 80 moves, think times up to 6 s, the clock's own program (1:30:00, no
    // increment): the displayed time after each press is the base minus the
    // mover's time, to the millisecond, rounded down to the second.
    let (log, sans) = played(160, 11, Some(ClockTime::from_hms(1, 30, 0).unwrap()));
    let r = run(&log, Config::default());
    let game = r.core.game().unwrap();
    assert_eq!(game.moves.iter().map(|m| m.san.clone()).collect::<Vec<_>>(), sans);
    let p = presses(&log);
    let mut left = [5_400_000_000u64, 5_400_000_000];
    for (ply, m) in game.moves.iter().enumerate() {
        let used = if ply == 0 { 0 } else { p[ply] - p[ply - 1] };
        left[ply % 2] -= used;
        assert_eq!(
            m.clk_ms,
            Some(left[ply % 2] / 1_000_000 * 1000),
            "ply {}",
            ply + 1
        );
    }
    // The same through the clock model the emulator runs.
    let mut model = ClockModel::new(
        ClockTime::from_hms(1, 30, 0).unwrap(),
        ClockTime::from_hms(1, 30, 0).unwrap(),
        0,
    );
    for (i, t) in p.iter().enumerate() {
        let side = if i % 2 == 0 {
            ClockSide::Left
        } else {
            ClockSide::Right
        };
        model.press(side, *t);
        let shown = model.status(*t).time(side).millis() / 1000 * 1000;
        assert_eq!(game.moves[i].clk_ms, Some(u64::from(shown)));
    }
}

#[test]
fn a_start_press_tells_which_side_is_white_s_when_the_host_drives() {
    // White sits on the right: black presses the left lever to start white's clock.
    let mut r = run(
        &log(
            "0 clock left=0:05:00 right=0:05:00 running=none\n0 arbiter SetTimeControl \"5+3\"\n\
              1.000 press left\n2.000 lift e2 P\n2.400 place e4 P\n6.000 press right\n",
        ),
        Config::default(),
    );
    assert_eq!(r.core.white_side(), Some(ClockSide::Right));
    // White used 5 s from the start press and got 3 s: 298 s.
    assert_eq!(clks(&r), [Some(298_000)]);
    // Black (left) 5:00 running, white (right) 4:58.
    assert_eq!(
        sets(&mut r).last().unwrap(),
        "2b 0a 03 0a 00 05 00 00 04 3a 09 00"
    );
}

#[test]
fn after_a_gap_the_host_takes_the_times_the_clock_kept() {
    // The line is away for a minute; the clock's first report after it shows
    // times the host could not follow (white's clock ran on): they stand.
    let text = "0 arbiter SetTimeControl \"5+0\"\n1.000 press right\n\
                2.000 lift e2 P\n2.400 place e4 P\n3.000 press left\n\
                30.000 gap reconnected\n\
                31.000 board rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR\n\
                31.100 clock left=0:04:00 right=0:04:10 running=right\n";
    let r = run(&log(text), Config::default());
    let last = r
        .events
        .iter()
        .rev()
        .find_map(|e| match e.kind {
            EventKind::Clock {
                white_ms, black_ms, ..
            } => Some((white_ms, black_ms)),
            _ => None,
        })
        .unwrap();
    assert_eq!(last, (240_000, 250_000));
}

/// How a game in drive mode ends: by its last move (a position that ends it
/// by itself), made with no press, or with its mover's press at once (before
/// the placement is released: the press makes the move, and the end); or by
/// the arbiter's result after its last move but one, pressed.
#[derive(Clone, Copy, Debug)]
enum Ending {
    Forced,
    ForcedPressedAtOnce,
    ArbiterResult,
}

/// What comes after the end: presses (each by the mover of the last move, or
/// by the other side), then an arbiter's time decision.
#[derive(Clone, Copy, Debug)]
struct After {
    presses: &'static [bool],
    decision: Option<(&'static str, &'static str)>,
}

/// The presses after an end: none, the mover's, the other side's, both ways.
const PRESSES_AFTER: [&[bool]; 5] = [&[], &[true], &[false], &[true, false], &[false, true]];

/// The arbiter's time decisions after an end (method, JSON arguments).
const DECISIONS_AFTER: [Option<(&str, &str)>; 4] = [
    None,
    Some(("SetClock", "600000 600000")),
    Some(("AddTime", "\"white\" 60")),
    Some(("AddTime", "\"black\" -30")),
];

/// A drive-mode log (90 min + 30 s, the host keeping the time) of `moves`
/// from `start`: Black's start press, a press after every move but the last;
/// then the end (`ending`) and what comes `after` it, a few seconds apart.
/// The arbiter's result comes after the last move but one, pressed.
fn drive_ending_log(
    start: &Chess,
    moves: &[shakmaty::Move],
    seed: u64,
    white_side: ClockSide,
    ending: Ending,
    after: After,
) -> SensorLog {
    let arbiter = |method: &str, args: &str| RecordKind::Arbiter {
        method: method.to_string(),
        args: args.split(' ').map(str::to_string).collect(),
    };
    let style = common::steady_hands((300, 4000), (60, 200));
    let mut h = Hands::new(seed, style, Orientation::Normal);
    h.white_side = white_side;
    h.push(arbiter("SetTimeControl", "\"90+30\""));
    h.board(start.board());
    h.wait(500);
    h.press(!start.turn());
    let mut pos = start.clone();
    // The arbiter ends the game before its last move (which would end it).
    let moves = match ending {
        Ending::ArbiterResult => &moves[..moves.len() - 1],
        _ => moves,
    };
    let last = moves.len().saturating_sub(1);
    for (i, m) in moves.iter().enumerate() {
        match ending {
            Ending::Forced if i == last => h.style.press = 0,
            // Blitz timing: the press lands 10-40 ms after the last placement.
            Ending::ForcedPressedAtOnce if i == last => h.style.press_ms = Some((10, 40)),
            _ => {}
        }
        h.play(&pos, m);
        pos.play_unchecked(*m);
    }
    let mover = !pos.turn();
    h.wait(1500);
    if matches!(ending, Ending::ArbiterResult) {
        h.push(arbiter("SetResult", "\"1/2-1/2\""));
        h.wait(1500);
    }
    for &by_mover in after.presses {
        h.press(if by_mover { mover } else { !mover });
        h.wait(2000);
    }
    if let Some((method, args)) = after.decision {
        h.push(arbiter(method, args));
        h.wait(2000);
    }
    h.wait(3000);
    h.flush();
    SensorLog {
        header: eboard_bridge::log::Header::default(),
        records: h.records,
        lines: Vec::new(),
    }
}

/// What a drive-mode game published about its clocks: the tags (the clocks at
/// its end), every move's `%clk` and `%emt`, and its result.
type ClockFacts = (Option<(u64, u64)>, Vec<(Option<u64>, Option<u64>)>, String);

fn clock_facts(r: &replay::Replay) -> Option<ClockFacts> {
    let g = r.core.games().next()?;
    Some((
        g.clocks,
        g.moves.iter().map(|m| (m.clk_ms, m.emt_ms)).collect(),
        format!("{:?}", g.result),
    ))
}

/// Judges one drive-mode ending against the truth of a host's clock: the
/// side that did not move last keeps, to the end, the time the set after its
/// press gave it; the mover's clock ran from that press to the end, and no
/// bonus comes after the end. Then every clock the host sets after the end
/// shows the end's times (until the arbiter sets others, which it shows), and
/// the game's tags and `%clk` are those of the same game with nothing after
/// its end (`bare`).
fn judge_drive_ending(r: &replay::Replay, bare: &ClockFacts, after: After) -> Result<(), String> {
    let end = r
        .events
        .iter()
        .position(|e| matches!(e.kind, EventKind::GameEnd { .. }))
        .ok_or("no game_end")?;
    let t_end = r.events[end].t_us;
    let clock = |e: &eboard_bridge::rules::Event| match e.kind {
        EventKind::Clock {
            white_ms,
            black_ms,
            running,
        } => Some((e.t_us, white_ms, black_ms, running)),
        _ => None,
    };
    let (t_set, w_set, b_set, running) = r.events[..end]
        .iter()
        .rev()
        .find_map(clock)
        .ok_or("no clock set before the end")?;
    let facts = clock_facts(r).ok_or("no game")?;
    let (w_tag, b_tag) = facts.0.ok_or("no clock tags")?;
    // The mover's clock ran from the last set to the end; the other stood.
    let ran = (t_end - t_set) / 1000;
    let (w_true, b_true) = match running {
        Some(eboard_bridge::rules::Side::White) => (w_set.saturating_sub(ran), b_set),
        Some(eboard_bridge::rules::Side::Black) => (w_set, b_set.saturating_sub(ran)),
        None => return Err("no clock ran at the end".into()),
    };
    let near = |a: u64, b: u64| a.abs_diff(b) <= 1000;
    if !near(w_tag, w_true) || !near(b_tag, b_true) {
        return Err(format!(
            "clock tags {w_tag} / {b_tag} ms, the host's clock at the end {w_true} / {b_true} ms"
        ));
    }
    if facts != *bare {
        return Err(format!(
            "what came after the end changed the game: {facts:?}, with nothing after it {bare:?}"
        ));
    }
    // After the end: the end's times, stopped, until the arbiter's decision.
    let mut expect = (w_true / 1000, b_true / 1000);
    let decided = r
        .events
        .iter()
        .skip(end)
        .find(|e| matches!(&e.kind, EventKind::Arbiter { .. }) && e.t_us > t_end)
        .map(|e| e.t_us);
    for e in &r.events[end..] {
        let Some((t, w, b, running)) = clock(e) else {
            continue;
        };
        if decided.is_some_and(|d| t >= d) {
            match after.decision {
                Some(("SetClock", _)) => expect = (600, 600),
                Some(("AddTime", a)) if a.starts_with("\"white\"") => {
                    expect = (w_true / 1000 + 60, b_true / 1000)
                }
                Some(("AddTime", _)) => expect = (w_true / 1000, b_true / 1000 - 30),
                _ => {}
            }
        }
        if (w / 1000, b / 1000) != expect || running.is_some() {
            return Err(format!(
                "a clock after the end at {:.1} s: {w} / {b} ms running {running:?}, not the end's {expect:?} s stopped",
                t as f64 / 1e6
            ));
        }
    }
    Ok(())
}

/// Every ending in drive mode (the class of the event campaign's seeds 323,
/// 401, 407: a press after a mate started a clock, then gave the mover its
/// bonus, and the clock showed times the game's tags did not): each game that
/// ends by its last move, and each ended by the arbiter's result, White on
/// either side of the clock, with no press after the end, the mover's, the
/// other side's, or both in either order, then no time decision, a `SetClock`,
/// or time added to or taken from either side. The game's tags and `%clk`
/// are the host's clock at the end, and no clock after it runs or gives a
/// bonus. `CLASSES=full` walks every forced-end game of `classes`.
#[test]
fn every_drive_mode_ending_keeps_the_clocks_of_its_end() {
    let mut games = crate::classes::forced_end_games();
    if !crate::classes::full() {
        games.truncate(6);
    }
    let mut cases = 0;
    let mut failures = Vec::new();
    for (g, (name, start, moves)) in games.iter().enumerate() {
        for white_side in [ClockSide::Left, ClockSide::Right] {
            for ending in [Ending::Forced, Ending::ForcedPressedAtOnce, Ending::ArbiterResult] {
                let seed = (g as u64 * 2 + white_side as u64) * 3 + ending as u64;
                let log_of = |after: After| drive_ending_log(start, moves, seed, white_side, ending, after);
                let run = |log: &SensorLog| {
                    replay::run(
                        log,
                        "generated",
                        Config::default(),
                        Some((start.clone(), shakmaty::CastlingMode::Standard)),
                    )
                };
                let none = After {
                    presses: &[],
                    decision: None,
                };
                let Some(bare) = run(&log_of(none)).ok().as_ref().and_then(clock_facts) else {
                    failures.push(format!(
                        "{name}: the game with nothing after its end does not replay"
                    ));
                    continue;
                };
                for presses in PRESSES_AFTER {
                    for decision in DECISIONS_AFTER {
                        cases += 1;
                        let after = After { presses, decision };
                        let verdict = match run(&log_of(after)) {
                            Ok(r) => judge_drive_ending(&r, &bare, after),
                            Err(e) => Err(format!("does not replay: {e}")),
                        };
                        if let Err(e) = verdict {
                            failures.push(format!(
                                "{name}, White {white_side:?}, {ending:?}, presses after (mover's?) {presses:?}, then {decision:?}: {e}"
                            ));
                        }
                    }
                }
            }
        }
    }
    eprintln!(
        "drive-mode endings: {cases} cases over {} games, {} failures",
        games.len(),
        failures.len()
    );
    assert!(cases > 0 && failures.is_empty(), "{}", failures.join("\n"));
}
