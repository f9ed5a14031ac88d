//! What the driver compares of the games (live and replayed, before and after
//! a refused call or an undo): everything of a game a reader of its record
//! sees. And the check that every recorded move is legal where it was played.

use super::Found;
use serde_json::Value;
use shakmaty::Position;

use crate::board::Orientation;
use crate::rules::{Core, DrawReason, Game, GameResult, Termination, game_fen};

/// One game as its record shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct GameView {
    number: u32,
    orientation: Orientation,
    start_fen: String,
    fen: String,
    moves: Vec<MoveView>,
    result: Option<(GameResult, Termination)>,
    termination_words: Option<String>,
    claimed: Vec<(usize, DrawReason)>,
    time_control: Option<String>,
    clocks: Option<(u64, u64)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct MoveView {
    uci: String,
    san: String,
    completed: bool,
    inferred: bool,
    clk_ms: Option<u64>,
    emt_ms: Option<u64>,
}

fn view(g: &Game) -> GameView {
    GameView {
        number: g.number,
        orientation: g.orientation,
        start_fen: g.start_fen.clone(),
        fen: game_fen(g.current()),
        moves: g
            .moves
            .iter()
            .map(|m| MoveView {
                uci: m.uci.clone(),
                san: m.san.clone(),
                completed: m.completed,
                inferred: m.inferred,
                clk_ms: m.clk_ms,
                emt_ms: m.emt_ms,
            })
            .collect(),
        result: g.result,
        termination_words: g.termination_words.clone(),
        claimed: g.claimed.clone(),
        time_control: g.time_control.clone(),
        clocks: g.clocks,
    }
}

/// Every game of the core, the one under way last.
pub(super) fn games(core: &Core) -> Vec<GameView> {
    core.games().map(view).collect()
}

/// Every recorded move is legal where it was played, and the positions
/// kept are those the moves lead to.
pub(super) fn only_legal_moves(core: &Core) -> Result<(), Found> {
    for g in core.games() {
        let mut pos = g.positions[0].clone();
        for (i, m) in g.moves.iter().enumerate() {
            if !pos.is_legal(m.mv) {
                return Err(Found(format!(
                    "game {}: ply {} ({}) is not legal",
                    g.number,
                    i + 1,
                    m.san
                )));
            }
            pos.play_unchecked(m.mv);
            if g.positions.get(i + 1).map(game_fen) != Some(game_fen(&pos)) {
                return Err(Found(format!(
                    "game {}: the position after ply {} is not the move's",
                    g.number,
                    i + 1
                )));
            }
        }
    }
    Ok(())
}

/// A call's arguments as the journal writes them, clipped for a message.
pub(super) fn args_text(args: &[Value]) -> String {
    let text: Vec<String> = args.iter().map(ToString::to_string).collect();
    crate::text::clip_to(&text.join(" "), 120)
}
