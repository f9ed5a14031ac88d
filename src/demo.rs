//! `eboard-bridge demo`: a bundled real game played by an emulated board through a
//! real pseudo-terminal, read back by the host side exactly as a board is read.

use std::process::ExitCode;
use std::time::Duration;

use shakmaty::{Chess, Position, san::San};
use tokio::io::AsyncReadExt;

use crate::board::{BoardEvent, BoardState};
use crate::device::{Emulator, EmulatorConfig, serial};
use crate::log::{Header, RecordKind, SensorLog};
use crate::protocol::{ClockTime, Decoded, Decoder};
use crate::sim::{Hands, Style};

/// The Immortal Game, Anderssen - Kieseritzky, London 1851.
pub const GAME: &str = "e4 e5 f4 exf4 Bc4 Qh4+ Kf1 b5 Bxb5 Nf6 Nf3 Qh6 d3 Nh5 Nh4 Qg5 Nf5 c6 g4 Nf6 Rg1 cxb5 \
h4 Qg6 h5 Qg5 Qf3 Ng8 Bxf4 Qf6 Nc3 Bc5 Nd5 Qxb2 Bd6 Bxg1 e5 Qxa1+ Ke2 Na6 Nxg7+ Kd8 Qf6+ Nxf6 Be7#";

/// The demo's sensor log: the game as hands play it, with a slide, a take-back and
/// an illegal move that is corrected.
pub fn demo_log() -> SensorLog {
    let style = Style {
        think_ms: (400, 1200),
        slide: 30,
        ..Style::default()
    };
    let mut hands = Hands::new(1851, style, crate::board::Orientation::Normal);
    let mut pos = Chess::default();
    hands.board(pos.board());
    let five = ClockTime::from_hms(0, 5, 0).unwrap_or_default();
    hands.push(RecordKind::Clock {
        left: five,
        right: five,
        running: crate::log::Running::Left,
    });
    for (ply, san) in GAME.split_whitespace().enumerate() {
        let Ok(mv) = san
            .parse::<San>()
            .map_err(|_| ())
            .and_then(|s| s.to_move(&pos).map_err(|_| ()))
        else {
            break;
        };
        match ply {
            // White first plays 3. Nf3, takes it back, then plays the game move.
            4 => {
                let nf3 = "Nf3".parse::<San>().ok().and_then(|s| s.to_move(&pos).ok());
                if let Some(alt) = nf3 {
                    let knight = shakmaty::Piece {
                        color: shakmaty::Color::White,
                        role: shakmaty::Role::Knight,
                    };
                    hands.hands(&pos, &alt);
                    hands.wait(1500);
                    hands.lift(alt.to(), knight);
                    hands.place(shakmaty::Square::G1, knight);
                    hands.wait(800);
                }
            }
            // Black tries the queen from h4 to h1 through the pawn on h2 (illegal),
            // sees it, and puts her back before playing the game move.
            11 => {
                let q = shakmaty::Piece {
                    color: shakmaty::Color::Black,
                    role: shakmaty::Role::Queen,
                };
                if pos.board().piece_at(shakmaty::Square::H6) == Some(q) {
                    hands.lift(shakmaty::Square::H6, q);
                    hands.place(shakmaty::Square::H1, q);
                    hands.wait(2500);
                    hands.lift(shakmaty::Square::H1, q);
                    hands.place(shakmaty::Square::H6, q);
                    hands.wait(800);
                }
            }
            _ => {}
        }
        hands.play(&pos, &mv);
        pos.play_unchecked(mv);
    }
    let mut header = Header::default();
    header.set(
        "source",
        "eboard-bridge demo: Anderssen - Kieseritzky, London 1851",
    );
    header.set("serial", "18510");
    SensorLog {
        header,
        records: hands.records,
        lines: Vec::new(),
    }
}

/// Runs the demo; returns the exit status.
pub fn run(speed: f64) -> ExitCode {
    if !(speed.is_finite() && speed > 0.0) {
        eprintln!("eboard-bridge: --speed must be a positive number, not {speed}");
        return ExitCode::from(2);
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("eboard-bridge: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(demo(speed)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("eboard-bridge: demo: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn demo(speed: f64) -> Result<(), Box<dyn std::error::Error>> {
    let log = demo_log();
    let length = log.records.last().map_or(0, |r| r.time.micros());
    let emulator = Emulator::open()?;
    let path = emulator.path().to_path_buf();
    println!(
        "eboard-bridge demo: a virtual DGT board on {} plays the Immortal Game (1851)",
        path.display()
    );
    println!(
        "(the daemon and its D-Bus service are not wired in yet: shown here is the board as the host reads it; `eboard-bridge replay` runs the rules core)"
    );
    let cfg = EmulatorConfig {
        speed,
        serial: "18510".into(),
        ..EmulatorConfig::default()
    };
    let served = tokio::spawn(async move { emulator.run(&log, "demo", &cfg).await });
    let mut line = serial::open(&path)?;
    serial::start_up(&mut line).await?;
    let mut decoder = Decoder::new();
    let mut board = BoardState::new();
    let mut buf = [0u8; 512];
    let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(length as f64 / 1e6 / speed + 1.5);
    loop {
        let n = tokio::select! {
            r = line.read(&mut buf) => r?,
            _ = tokio::time::sleep_until(deadline) => break,
        };
        for d in decoder.feed(&buf[..n]) {
            match d {
                Decoded::Message(m) => {
                    for ev in board.apply(&m) {
                        show(&ev, &board);
                    }
                }
                Decoded::Skipped(s) => println!("  ! {s}"),
            }
        }
    }
    served.abort();
    if let Some(p) = board.placement() {
        println!("\nfinal board:\n{}", diagram(&p.to_board()));
    }
    Ok(())
}

fn show(ev: &BoardEvent, board: &BoardState) {
    match ev {
        BoardEvent::Dump(p) => println!("board:\n{}", diagram(&p.to_board())),
        BoardEvent::Lift { square, piece } => println!("  lift  {square} {piece}"),
        BoardEvent::Place { square, piece, .. } => println!("  place {square} {piece}"),
        BoardEvent::Press(side) => println!("  clock pressed on the {side}"),
        BoardEvent::Clock(c) => {
            if board.clock().is_some_and(|prev| prev.running != c.running) || c.running_side().is_none() {
                println!("  clock left {} right {}", c.left, c.right);
            }
        }
        BoardEvent::Info(info) => println!("  board: {info:?}"),
        BoardEvent::Button(b) => println!("  clock button {b:?}"),
        BoardEvent::ClockAck(k) => println!("  clock: {k:?}"),
    }
}

/// A text diagram, rank 8 at the top.
pub fn diagram(board: &shakmaty::Board) -> String {
    let mut s = String::new();
    for rank in (0..8).rev() {
        s.push_str(&format!("  {} ", rank + 1));
        for file in 0..8 {
            let sq = shakmaty::Square::from_coords(shakmaty::File::new(file), shakmaty::Rank::new(rank));
            s.push(board.piece_at(sq).map_or('.', |p| p.char()));
            s.push(' ');
        }
        s.push('\n');
    }
    s.push_str("    a b c d e f g h");
    s
}
