//! Tests of `infer` (the searches for plies the line did not show).

use super::*;
use shakmaty::CastlingMode;
use shakmaty::fen::Fen;

fn pos(fen: &str) -> Chess {
    fen.parse::<Fen>()
        .unwrap()
        .into_position(CastlingMode::Standard)
        .unwrap()
}

#[test]
fn six_plies_with_captures_are_found() {
    let from = pos("r1b1kr2/5p1p/1qpp1p2/1p2pP1Q/p2bP3/P1NP4/BPP3PP/R3KR2 w Qq - 2 15");
    let to = Board::from_ascii_board_fen(b"r1b1kr2/5p1p/2pp1p2/2q1pP1Q/p2bP3/P2P4/B1P3PP/2RNKR2").unwrap();
    for under_way in [false, true] {
        let r = infer_path(
            &from,
            &to,
            MAX_INFERRED_PLIES,
            INFER_BUDGET,
            Seen::default(),
            under_way,
        );
        assert!(matches!(r, Inferred::Path(ref p) if p.len() == 6), "{r:?}");
    }
}

fn play(pos: &mut Chess, sans: &str) -> Vec<Move> {
    sans.split_whitespace()
        .map(|s| {
            let m = s.parse::<shakmaty::san::San>().unwrap().to_move(pos).unwrap();
            pos.play_unchecked(m);
            m
        })
        .collect()
}

/// Fault campaign, cuts, seed 1049: the line came back on 27... Ndxc4 made and
/// White's pawn b3 in the hand to take back on c4. Five plies end on that board
/// exactly, a bishop's trip and a pawn's capture invented; one ply and a move
/// under way is what happened, and the search says so instead of a path.
#[test]
fn a_piece_in_the_hand_is_not_explained_by_plies_more() {
    let mut from = Chess::default();
    play(
        &mut from,
        "d4 d5 c4 dxc4 e4 e5 d5 f5 Nc3 Nf6 Bxc4 Bc5 Nf3 Qe7 Bg5 Bxf2+ Kf1 Bb6 Qe2 f4 \
         Rd1 Bg4 d6 cxd6 Nd5 Nxd5 Bxe7 Ne3+ Ke1 Kxe7 Qd3 Rd8 Rd2 Nc6 b3 Ba5 a3 Rac8 \
         Rg1 b5 Bxb5 Bxf3 gxf3 Nd4 Bc4 Nxf3+ Kf2 Nxd2 Rxg7+ Kf6 Rf7+ Kg6 Rb7",
    );
    let mut after = from.clone();
    let made = play(&mut after, "Ndxc4");
    let mut board = after.board().clone();
    board.discard_piece_at(Square::B3);
    // The longer explanation exists: it ends on the board exactly.
    let mut longer = from.clone();
    play(&mut longer, "Nxb3 Bb5 Nd2 Bc4 Ndxc4");
    assert_eq!(longer.board(), &board);
    let r = infer_path(
        &from,
        &board,
        MAX_INFERRED_PLIES,
        INFER_BUDGET,
        Seen::default(),
        true,
    );
    assert_eq!(r, Inferred::UnderWay(1));
    // Not looking for a move under way (the board stood too long for a piece in
    // the hand), the exact sequence is found.
    let r = infer_path(
        &from,
        &board,
        MAX_INFERRED_PLIES,
        INFER_BUDGET,
        Seen::default(),
        false,
    );
    assert!(matches!(r, Inferred::Path(ref p) if p.len() == 5), "{r:?}");
    // With the pawn on c4 the board is reached exactly in two plies.
    let mut done = after.clone();
    let both = [made, play(&mut done, "bxc4")].concat();
    let r = infer_path(
        &from,
        done.board(),
        MAX_INFERRED_PLIES,
        INFER_BUDGET,
        Seen::default(),
        true,
    );
    assert_eq!(r, Inferred::Path(both));
    // A move under way from the position itself.
    let mut lifted = from.board().clone();
    lifted.discard_piece_at(Square::D2);
    let r = infer_path(
        &from,
        &lifted,
        MAX_INFERRED_PLIES,
        INFER_BUDGET,
        Seen::default(),
        true,
    );
    assert_eq!(r, Inferred::UnderWay(0));
}

/// Fault campaign, drop 1%, seed 1156: a bishop's trip out and back (...Be7,
/// then ...Bf8) whose lift the line lost, and no dump got through until it
/// was back. Without the trip the board cannot be reached (the side to move
/// differs); with the line having shown the bishop put down on e7 it is
/// inferred, and not on less evidence.
#[test]
fn a_trip_back_is_inferred_only_where_the_line_showed_it() {
    let mut from = Chess::default();
    play(&mut from, "e4 e5 Nf3 Nc6 Bc4 d6 d3");
    let mut after = from.clone();
    let made = play(&mut after, "Be7 Bg5 Bf8");
    let bishop = |c| Piece {
        color: c,
        role: Role::Bishop,
    };
    let (b, w) = (bishop(shakmaty::Color::Black), bishop(shakmaty::Color::White));
    let infer = |placed: &[(Square, Piece)]| {
        let seen = Seen {
            lifts: &[Square::E7],
            placed,
            boards: &[],
        };
        infer_path(
            &from,
            after.board(),
            MAX_INFERRED_PLIES,
            INFER_BUDGET,
            seen,
            false,
        )
    };
    let all = [(Square::E7, b), (Square::G5, w), (Square::F8, b)];
    assert_eq!(infer(&all), Inferred::Path(made.clone()));
    // Its return home is no change on a sensor board that never saw it leave.
    assert_eq!(infer(&all[..2]), Inferred::Path(made.clone()));
    // Nothing seen put down away from home, or another piece put down there:
    // no trip is inferred, and nothing else reaches the board.
    assert_eq!(infer(&[]), Inferred::None);
    assert_eq!(infer(&all[1..]), Inferred::None);
    assert_eq!(
        infer(&[(Square::E7, w), (Square::G5, w), (Square::F8, b)]),
        Inferred::None
    );
    // And the check the fault campaign uses still calls it a round trip.
    assert!(round_trip(from.board(), &made));
}

/// Fault campaign, cuts, seed 1019: 4... b5 5. Bxb5 Nf6 missed. Two plies
/// (...Nf6, Bb5) and Black's pawn b7 in the hand look like it too, but with the
/// move under way that is three plies as well: the board as it stands wins.
#[test]
fn a_pawn_captured_is_not_taken_for_one_in_the_hand() {
    let mut from = Chess::default();
    play(&mut from, "e4 e5 f4 exf4 Bc4 Qh4+ Kf1");
    let mut after = from.clone();
    let made = play(&mut after, "b5 Bxb5 Nf6");
    for under_way in [true, false] {
        let r = infer_path(
            &from,
            after.board(),
            MAX_INFERRED_PLIES,
            INFER_BUDGET,
            Seen::default(),
            under_way,
        );
        assert_eq!(r, Inferred::Path(made.clone()));
    }
}

/// Event campaign, seed 13 (issue 62): the line came back on 8. Nh4 made and
/// Black's queen set on d2, where no move of it goes (the pawn on f4 stands
/// between). Six plies end on that board exactly (8. Ne1 Qa6 9. Nf3 Qa5 10.
/// Nh4 Qd2); one ply and the queen's slip is what happened, and
/// `displaced_path` finds that ply.
#[test]
fn an_illegal_placement_is_one_ply_and_the_slip() {
    let from = pos("rnb1kb1r/p1pp1ppp/7q/1B5n/4Pp2/3P1N2/PPP3PP/RNBQ1K1R w kq - 1 8");
    let board = Board::from_ascii_board_fen(b"rnb1kb1r/p1pp1ppp/8/1B5n/4Pp1N/3P4/PPPq2PP/RNBQ1K1R").unwrap();
    let longer = infer_path(
        &from,
        &board,
        MAX_INFERRED_PLIES,
        INFER_BUDGET,
        Seen::default(),
        false,
    );
    assert!(
        matches!(longer, Inferred::Path(ref p) if p.len() == 6),
        "{longer:?}"
    );
    let mut after = from.clone();
    let nh4 = play(&mut after, "Nh4");
    assert_eq!(
        displaced_path(&from, &board, 4, INFER_BUDGET, Seen::default()),
        Some(nh4)
    );
    // On the record's position after Nh4, the slip alone; and a legal move's
    // result, or a piece of the side not to move, is no illegal placement.
    assert_eq!(
        displaced_path(&after, &board, 4, INFER_BUDGET, Seen::default()),
        Some(Vec::new())
    );
    let mut legal = after.clone();
    play(&mut legal, "Qg5");
    assert_eq!(illegal_placement(&after, legal.board()), None);
    assert_eq!(illegal_placement(&from, &board), None);
    assert_eq!(
        displaced_path(&from, legal.board(), 1, INFER_BUDGET, Seen::default()),
        None
    );
}

/// Issue 58, the gaps class (`immortal-games.pgn#28`, gap of 3 after ply 3):
/// 2... Qxd5 3. Nc3 Qd8 missed. The pawn gone from d5 says a black piece
/// took it, and only the queen can have and be home again: a trip the
/// capture shows is inferred (before: no path, `lost_track`). A trip that
/// took nothing is not (`a_trip_back_is_inferred_only_where_the_line_showed_it`).
#[test]
fn a_trip_whose_piece_captured_is_inferred() {
    let mut from = Chess::default();
    play(&mut from, "e4 d5 exd5");
    let mut after = from.clone();
    let made = play(&mut after, "Qxd5 Nc3 Qd8");
    let r = infer_path(
        &from,
        after.board(),
        MAX_INFERRED_PLIES,
        INFER_BUDGET,
        Seen::default(),
        false,
    );
    assert_eq!(r, Inferred::Path(made));
}

/// Issue 58 (`nepomniachtchi-liren-game1.pgn#1`, gap of 5 after ply 45):
/// 23... Rd8 24. Rd3 c5 25. Qd2 c6: the pawn c6 pushed and c7's taking its
/// place; c6 shows a black pawn before and after. A piece on a square the
/// board agrees on moves when a piece like it may replace it (before: no
/// path, `lost_track`).
#[test]
fn a_piece_replaced_by_one_like_it_is_found() {
    let from = pos("5rk1/2p1qbp1/1pp1np1p/p7/4P3/P3QPBP/1PP1N1PK/3R4 b - - 0 23");
    let to = pos("3r2k1/4qbp1/1pp1np1p/p1p5/4P3/P2R1PBP/1PPQN1PK/8 w - - 0 26");
    let r = infer_path(
        &from,
        to.board(),
        MAX_INFERRED_PLIES,
        INFER_BUDGET,
        Seen::default(),
        false,
    );
    assert!(matches!(r, Inferred::Path(ref p) if p.len() == 5), "{r:?}");
}

/// Issue 58 (`immortal-games.pgn#29`, gap of 6 after ply 9): six plies with
/// two captures on f6 that the search gave up on at 60,000 positions; the
/// budget (250,000) reaches them.
#[test]
fn six_plies_of_captures_on_one_square_are_within_the_budget() {
    let from = pos("r1bqkbnr/pp1npppp/2p5/8/3PN3/5N2/PPP2PPP/R1BQKB1R b KQkq - 2 5");
    let to = pos("r2qkb1r/pp2pppp/2p2n2/5b2/2BP4/5N2/PPP1QPPP/R1B1K2R b KQkq - 3 8");
    let r = infer_path(
        &from,
        to.board(),
        MAX_INFERRED_PLIES,
        60_000,
        Seen::default(),
        false,
    );
    assert_eq!(r, Inferred::GaveUp);
    let r = infer_path(
        &from,
        to.board(),
        MAX_INFERRED_PLIES,
        INFER_BUDGET,
        Seen::default(),
        false,
    );
    assert!(matches!(r, Inferred::Path(ref p) if p.len() == 6), "{r:?}");
}

/// Issue 58 (`immortal-games.pgn#32`, gap of 5 after ply 9): 5... Ba5 6. d4
/// exd4 7. e5 d5, then 8. exd6 e.p. seen. The board cannot tell which pawn
/// stepped last; `orders` gives the orders it cannot tell apart, among them
/// the one the en passant capture after them needs.
#[test]
fn the_orders_a_board_cannot_tell_apart_include_the_played_one() {
    let from = pos("r1bqk1nr/pppp1ppp/2n5/4p3/1bB1P3/2P2N2/P2P1PPP/RNBQK2R b KQkq - 0 5");
    let to = pos("r1bqk1nr/ppp2ppp/2n5/b2pP3/2Bp4/2P2N2/P4PPP/RNBQK2R w KQkq d6 0 8");
    let all = orders(&from, to.board(), 5, INFER_BUDGET, Seen::default());
    assert!(all.len() > 1, "{all:?}");
    let ep = all.iter().any(|o| {
        let mut p = from.clone();
        for m in o {
            p.play_unchecked(*m);
        }
        p.legal_moves().iter().any(|m| m.is_en_passant())
    });
    assert!(ep, "{all:?}");
}

/// The event campaign's seed 772: 5... Ngf6 played while the line was away,
/// and Black's bishop on g4 knocked over and lying off the board. A capture
/// and the capturer's way home end on that board exactly (5... Bh3 6. Bxh3
/// Ngf6 7. Bg2); one ply and a piece off is what happened, and `lying_path`
/// finds it. Nothing lifts the bishop as a move of White's: no move is under
/// way.
#[test]
fn a_piece_lying_off_the_board_is_one_ply_and_the_piece_off() {
    let mut from = Chess::default();
    play(&mut from, "Nf3 d5 g3 Bg4 Bg2");
    let mut after = from.clone();
    play(&mut after, "Ngf6");
    let mut board = after.board().clone();
    board.discard_piece_at(Square::G4);
    let mut longer = from.clone();
    play(&mut longer, "Bh3 Bxh3 Ngf6 Bg2");
    assert_eq!(longer.board(), &board, "the longer explanation ends on the board");
    let path = lying_path(&from, &board, MAX_INFERRED_PLIES, INFER_BUDGET, Seen::default());
    assert_eq!(path.as_deref().map(<[Move]>::len), Some(1), "{path:?}");
    assert!(under_way_path(&from, &board, MAX_INFERRED_PLIES, INFER_BUDGET, Seen::default()).is_none());
    // A board with two pieces off is no piece lying.
    board.discard_piece_at(Square::A7);
    assert_eq!(lying_path(&from, &board, 3, INFER_BUDGET, Seen::default()), None);
}
