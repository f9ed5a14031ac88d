//! What a push carries: the round's `games.pgn` as the broadcast folder wrote
//! it, cut after the games a lichess round takes (the first, by board), the
//! games it holds and the boards it leaves out; and a game's name for people.

use bytes::Bytes;

use crate::api::lichess::{GameSpan, RoundPgn};

/// A round's push, made once from the folder's text.
#[derive(Debug, Clone, PartialEq)]
pub struct Body {
    /// The bytes sent: the folder's `games.pgn`, whole when it has no more
    /// games than a round takes.
    pub bytes: Bytes,
    /// The games in it, in order, each with its name (`White - Black`).
    pub games: Vec<(GameSpan, String)>,
    /// The boards whose games are left out (one of their games at least).
    pub left_out: Vec<u32>,
}

impl Body {
    /// The push of `pgn` for a server that takes `max_games` games a round.
    pub fn new(pgn: &RoundPgn, max_games: usize) -> Body {
        let kept = &pgn.games[..pgn.games.len().min(max_games)];
        let cut = kept.last().map_or(0, |g| g.end);
        let mut left_out: Vec<u32> = pgn.games[kept.len()..].iter().map(|g| g.board).collect();
        left_out.dedup();
        let games = kept
            .iter()
            .map(|g| (*g, name(pgn.text.get(g.start..g.end).unwrap_or_default())))
            .collect();
        let bytes = if cut == pgn.text.len() {
            Bytes::from(pgn.text.as_bytes().to_vec())
        } else {
            Bytes::from(pgn.text.as_bytes()[..cut].to_vec())
        };
        Body {
            bytes,
            games,
            left_out,
        }
    }
}

/// `White - Black` from a game's tags.
pub fn name(game: &str) -> String {
    let tag = |t: &str| {
        let start = format!("[{t} \"");
        game.lines()
            .find_map(|l| l.strip_prefix(start.as_str()).and_then(|r| r.strip_suffix("\"]")))
            .map(|v| v.replace("\\\"", "\"").replace("\\\\", "\\"))
            .unwrap_or_else(|| "?".into())
    };
    format!("{} - {}", tag("White"), tag("Black"))
}

/// A game as reports name it: `board 12: White - Black` (`board 12, game 2:`
/// for a board's second game of the round).
pub fn game_words(span: &GameSpan, name: &str) -> String {
    if span.index > 1 {
        format!("board {}, game {}: {name}", span.board, span.index)
    } else {
        format!("board {}: {name}", span.board)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(boards: &[(u32, u32)]) -> RoundPgn {
        let mut text = String::new();
        let mut games = Vec::new();
        for &(board, index) in boards {
            let start = text.len();
            text += &format!(
                "[Event \"Open\"]\n[Round \"1.{board}\"]\n[White \"W{board}\"]\n[Black \"B \\\"{board}\\\"\"]\n[Result \"*\"]\n\n1. e4 *\n\n"
            );
            games.push(GameSpan {
                board,
                index,
                start,
                end: text.len(),
            });
        }
        RoundPgn {
            round: 1,
            text: text.into(),
            games,
        }
    }

    #[test]
    fn the_folders_text_whole_or_cut_after_the_games_a_round_takes() {
        let r = round(&[(1, 1), (2, 1), (2, 2), (3, 1)]);
        let whole = Body::new(&r, 64);
        assert_eq!(&whole.bytes[..], r.text.as_bytes());
        assert!(whole.left_out.is_empty());
        assert_eq!(whole.games[1].1, "W2 - B \"2\"");
        let cut = Body::new(&r, 2);
        assert_eq!(&cut.bytes[..], &r.text.as_bytes()[..r.games[1].end]);
        assert_eq!(cut.games.len(), 2);
        // Board 2's second game and board 3 are left out.
        assert_eq!(cut.left_out, [2, 3]);
        assert_eq!(game_words(&r.games[2], "W2 - B2"), "board 2, game 2: W2 - B2");
        assert_eq!(game_words(&r.games[0], "W1 - B1"), "board 1: W1 - B1");
        assert_eq!(name("no tags"), "? - ?");
    }
}
