//! The values events carry where they once carried words: results,
//! terminations, draw reasons, touch-move articles, variants; and how squares,
//! pieces and the running clock are written. Each is written where it is shown
//! (serde writes the names of `docs/INTERFACES.md`).

use serde::Serialize;
use shakmaty::{Piece, Square};

use super::Side;

/// A game's result, as PGN writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum GameResult {
    #[serde(rename = "1-0")]
    WhiteWins,
    #[serde(rename = "0-1")]
    BlackWins,
    #[serde(rename = "1/2-1/2")]
    Draw,
    /// Unfinished or abandoned.
    #[serde(rename = "*")]
    Unfinished,
}

impl GameResult {
    pub fn as_str(self) -> &'static str {
        match self {
            GameResult::WhiteWins => "1-0",
            GameResult::BlackWins => "0-1",
            GameResult::Draw => "1/2-1/2",
            GameResult::Unfinished => "*",
        }
    }

    /// A result as PGN writes it (`1-0`, `0-1`, `1/2-1/2`, `*`).
    pub fn parse(s: &str) -> Option<GameResult> {
        Some(match s {
            "1-0" => GameResult::WhiteWins,
            "0-1" => GameResult::BlackWins,
            "1/2-1/2" => GameResult::Draw,
            "*" => GameResult::Unfinished,
            _ => return None,
        })
    }

    /// The game lost by `loser`.
    pub fn lost_by(loser: shakmaty::Color) -> GameResult {
        if loser.is_white() {
            GameResult::BlackWins
        } else {
            GameResult::WhiteWins
        }
    }
}

impl std::fmt::Display for GameResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a game ended (`game_end`'s `termination`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Termination {
    Checkmate,
    Stalemate,
    InsufficientMaterial,
    FivefoldRepetition,
    SeventyfiveMoves,
    /// A flag fell and the configuration ends games on it (6.9).
    TimeForfeit,
    /// Both kings put on the centre squares (the DGT convention).
    ResultKings,
    /// A new game started before this one ended.
    Abandoned,
    /// The arbiter gave the result.
    Arbiter,
    /// The arbiter set up another position (play goes on from it).
    PositionSet,
}

impl Termination {
    pub fn name(self) -> &'static str {
        match self {
            Termination::Checkmate => "checkmate",
            Termination::Stalemate => "stalemate",
            Termination::InsufficientMaterial => "insufficient_material",
            Termination::FivefoldRepetition => "fivefold_repetition",
            Termination::SeventyfiveMoves => "seventyfive_moves",
            Termination::TimeForfeit => "time_forfeit",
            Termination::ResultKings => "result_kings",
            Termination::Abandoned => "abandoned",
            Termination::Arbiter => "arbiter",
            Termination::PositionSet => "position_set",
        }
    }

    /// An end the position forces by itself (5.1.1, 5.2.1, 5.2.2, 9.6): the
    /// move that reaches it ends the game when it is made.
    pub fn is_forced(self) -> bool {
        matches!(
            self,
            Termination::Checkmate
                | Termination::Stalemate
                | Termination::InsufficientMaterial
                | Termination::FivefoldRepetition
                | Termination::SeventyfiveMoves
        )
    }
}

impl std::fmt::Display for Termination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a draw can be claimed (`draw_claimable`'s `reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DrawReason {
    /// The same position for the third time (9.2).
    #[serde(rename = "threefold")]
    Threefold,
    /// 50 moves by each player without a capture or a pawn move (9.3).
    FiftyMoves,
}

impl DrawReason {
    pub fn name(self) -> &'static str {
        match self {
            DrawReason::Threefold => "threefold",
            DrawReason::FiftyMoves => "fifty_moves",
        }
    }
}

impl std::fmt::Display for DrawReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The touch-move article a `touch_move` event cites (FIDE Laws, Art. 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Article {
    /// 4.3.1: an own piece touched (the first), another moved.
    OwnPiece,
    /// 4.3.2: an opponent's piece touched (the first) that could be captured, not captured.
    OpponentsPiece,
    /// 4.3.3: pieces of both colours touched, the capture of one by the other not played.
    BothColours,
    /// 4.4.1: king and rook touched, castling with that rook legal, not played.
    KingAndRook,
    /// 4.4.2: the rook touched before the king, then castled.
    RookFirst,
    /// 4.4.4: a promotion piece stood on the promotion square, then another.
    PromotionPiece,
    /// 4.7: a piece released on a square, then moved elsewhere.
    Released,
}

impl Article {
    /// The article's number, as the Laws number it.
    pub fn number(self) -> &'static str {
        match self {
            Article::OwnPiece => "4.3.1",
            Article::OpponentsPiece => "4.3.2",
            Article::BothColours => "4.3.3",
            Article::KingAndRook => "4.4.1",
            Article::RookFirst => "4.4.2",
            Article::PromotionPiece => "4.4.4",
            Article::Released => "4.7",
        }
    }
}

impl std::fmt::Display for Article {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.number())
    }
}

impl Serialize for Article {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.number())
    }
}

/// A game's variant (`game_start`'s `variant`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    Standard,
    Chess960,
}

impl Variant {
    pub fn name(self) -> &'static str {
        match self {
            Variant::Standard => "standard",
            Variant::Chess960 => "chess960",
        }
    }
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A square as its name (`e4`).
pub(super) fn square_name<S: serde::Serializer>(sq: &Square, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(sq)
}

/// Squares as their names.
pub(super) fn square_names<S: serde::Serializer>(squares: &[Square], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(squares.iter().map(|sq| sq.to_string()))
}

/// A piece as FEN writes it (`K`, `p`).
pub(super) fn piece_letter<S: serde::Serializer>(p: &Piece, s: S) -> Result<S::Ok, S::Error> {
    let mut b = [0; 4];
    s.serialize_str(p.char().encode_utf8(&mut b))
}

/// The side whose clock runs, `none` when neither.
pub(super) fn running_name<S: serde::Serializer>(side: &Option<Side>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(running_str(*side))
}

/// The side whose clock runs, as events write it (`white`, `black`, `none`).
pub fn running_str(side: Option<Side>) -> &'static str {
    side.map_or("none", Side::name)
}

/// Squares' names, joined by one blank (for text).
pub fn joined(squares: &[Square]) -> String {
    let mut s = String::new();
    for (i, sq) in squares.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(sq.to_string().as_str());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json<T: Serialize>(v: T) -> String {
        serde_json::to_string(&v).unwrap()
    }

    #[test]
    fn results_are_written_as_pgn_writes_them_and_read_back() {
        for (r, s) in [
            (GameResult::WhiteWins, "1-0"),
            (GameResult::BlackWins, "0-1"),
            (GameResult::Draw, "1/2-1/2"),
            (GameResult::Unfinished, "*"),
        ] {
            assert_eq!(json(r), format!("\"{s}\""));
            assert_eq!(r.to_string(), s);
            assert_eq!(GameResult::parse(s), Some(r));
        }
        assert_eq!(GameResult::parse("1-1"), None);
        assert_eq!(GameResult::lost_by(shakmaty::Color::White), GameResult::BlackWins);
    }

    #[test]
    fn names_in_json_are_the_names_shown() {
        use Termination::*;
        let all = [
            Checkmate,
            Stalemate,
            InsufficientMaterial,
            FivefoldRepetition,
            SeventyfiveMoves,
            TimeForfeit,
            ResultKings,
            Abandoned,
            Arbiter,
            PositionSet,
        ];
        let names: Vec<&str> = all.iter().map(|t| t.name()).collect();
        // `docs/INTERFACES.md`'s list, and the arbiter's set-up position.
        assert_eq!(
            names,
            [
                "checkmate",
                "stalemate",
                "insufficient_material",
                "fivefold_repetition",
                "seventyfive_moves",
                "time_forfeit",
                "result_kings",
                "abandoned",
                "arbiter",
                "position_set"
            ]
        );
        for t in all {
            assert_eq!(json(t), format!("\"{t}\""));
        }
        for d in [DrawReason::Threefold, DrawReason::FiftyMoves] {
            assert_eq!(json(d), format!("\"{}\"", d.name()));
        }
        for v in [Variant::Standard, Variant::Chess960] {
            assert_eq!(json(v), format!("\"{}\"", v.name()));
        }
        let articles = [
            Article::OwnPiece,
            Article::OpponentsPiece,
            Article::BothColours,
            Article::KingAndRook,
            Article::RookFirst,
            Article::PromotionPiece,
            Article::Released,
        ];
        let numbers: Vec<String> = articles.iter().map(json).collect();
        assert_eq!(
            numbers,
            [
                "\"4.3.1\"",
                "\"4.3.2\"",
                "\"4.3.3\"",
                "\"4.4.1\"",
                "\"4.4.2\"",
                "\"4.4.4\"",
                "\"4.7\""
            ]
        );
    }

    #[test]
    fn squares_pieces_and_the_running_clock_are_written_by_name() {
        #[derive(Serialize)]
        struct Shown {
            #[serde(serialize_with = "square_name")]
            square: Square,
            #[serde(serialize_with = "square_names")]
            squares: Vec<Square>,
            #[serde(serialize_with = "piece_letter")]
            piece: Piece,
            #[serde(serialize_with = "running_name")]
            running: Option<Side>,
        }
        let shown = Shown {
            square: Square::E4,
            squares: vec![Square::D1, Square::H8],
            piece: shakmaty::Color::Black.knight(),
            running: None,
        };
        assert_eq!(
            json(&shown),
            r#"{"square":"e4","squares":["d1","h8"],"piece":"n","running":"none"}"#
        );
        assert_eq!(running_str(Some(Side::White)), "white");
        assert_eq!(joined(&[Square::A1, Square::B2]), "a1 b2");
        assert_eq!(joined(&[]), "");
    }
}
