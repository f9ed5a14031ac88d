//! What a push carries: the round's `games.pgn` as the broadcast folder wrote
//! it, cut after the games a lichess round takes (the first, by board), the
//! games it holds and the boards it leaves out; for a round over several
//! broadcast rounds, each its boards' games (boards 1-64, 65-128, ...); and a
//! game's name for people.

use bytes::Bytes;

use crate::api::lichess::{GameSpan, RoundPgn, part_of};

/// A round's push, made once from the folder's text. Two are the same push
/// when they send the same bytes (what they leave out may differ: a round
/// given a second broadcast round sends the first the same).
#[derive(Debug, Clone)]
pub struct Body {
    /// The bytes sent: the folder's `games.pgn`, whole when it has no more
    /// games than a round takes.
    pub bytes: Bytes,
    /// The games in it, in order, each with its name (`White - Black`).
    pub games: Vec<(GameSpan, String)>,
    /// The boards whose games are left out (one of their games at least).
    pub left_out: Vec<u32>,
}

impl PartialEq for Body {
    fn eq(&self, other: &Body) -> bool {
        self.bytes == other.bytes
    }
}

impl Body {
    /// The push of `pgn` for a server that takes `max_games` games a round.
    #[cfg(test)]
    pub fn new(pgn: &RoundPgn, max_games: usize) -> Body {
        Body::of(pgn, &pgn.games, max_games)
    }

    /// The pushes of `pgn` to its `parts` broadcast rounds, each of its boards'
    /// games ([`part_of`]), each cut after `max_games`.
    pub fn parts(pgn: &RoundPgn, max_games: usize, parts: usize) -> Vec<Body> {
        (0..parts.max(1))
            .map(|index| {
                let games: Vec<GameSpan> = pgn
                    .games
                    .iter()
                    .filter(|g| part_of(g.board, parts) == index)
                    .copied()
                    .collect();
                Body::of(pgn, &games, max_games)
            })
            .collect()
    }

    /// The push of `games` of `pgn`, cut after `max_games`: the folder's very
    /// text when they are all its games, or the text up to the last when they
    /// are its first; else the games' texts one after another.
    fn of(pgn: &RoundPgn, games: &[GameSpan], max_games: usize) -> Body {
        let kept = &games[..games.len().min(max_games)];
        let mut left_out: Vec<u32> = games[kept.len()..].iter().map(|g| g.board).collect();
        left_out.dedup();
        let text = |g: &GameSpan| pgn.text.get(g.start..g.end).unwrap_or_default();
        let from_start =
            kept.first().is_none_or(|g| g.start == 0) && kept.windows(2).all(|w| w[0].end == w[1].start);
        let bytes = match kept.last() {
            _ if kept.len() == pgn.games.len() => Bytes::from(pgn.text.as_bytes().to_vec()),
            Some(last) if from_start && last.end <= pgn.text.len() => {
                Bytes::from(pgn.text.as_bytes()[..last.end].to_vec())
            }
            _ => Bytes::from(kept.iter().map(text).collect::<String>().into_bytes()),
        };
        Body {
            bytes,
            games: kept.iter().map(|g| (*g, name(text(g)))).collect(),
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

    /// Issue 60: a round over two broadcast rounds, boards 1-64 and 65 and up,
    /// each its games only; the first is the folder's text up to board 64.
    #[test]
    fn a_round_over_two_broadcast_rounds_each_its_boards() {
        let boards: Vec<(u32, u32)> = (1..=66).map(|b| (b, 1)).collect();
        let r = round(&boards);
        let [first, second] = <[Body; 2]>::try_from(Body::parts(&r, 64, 2)).unwrap();
        assert_eq!(&first.bytes[..], &r.text.as_bytes()[..r.games[63].end]);
        assert_eq!(first.games.len(), 64);
        assert_eq!(&second.bytes[..], &r.text.as_bytes()[r.games[64].start..]);
        assert_eq!(
            second.games.iter().map(|(g, _)| g.board).collect::<Vec<_>>(),
            [65, 66]
        );
        assert!(first.left_out.is_empty() && second.left_out.is_empty());
        // One broadcast round: as before, the first 64 and 65-66 left out.
        let [one] = <[Body; 1]>::try_from(Body::parts(&r, 64, 1)).unwrap();
        let before = Body::new(&r, 64);
        assert_eq!(
            (&one.bytes, &one.games, &one.left_out),
            (&before.bytes, &before.games, &before.left_out)
        );
        // The same push as the first of two: the same bytes, though it leaves
        // out what the other takes.
        assert_eq!(one, first);
        assert_eq!(one.left_out, [65, 66]);
        // The last takes the boards past its range, as far as it has room.
        let boards: Vec<(u32, u32)> = (1..=130).map(|b| (b, 1)).collect();
        let r = round(&boards);
        let parts = Body::parts(&r, 64, 2);
        assert_eq!(parts[1].games.len(), 64);
        assert_eq!(parts[1].left_out, [129, 130]);
        // A part with no game of its own: nothing in it.
        let r = round(&[(1, 1), (2, 1)]);
        let parts = Body::parts(&r, 64, 3);
        assert_eq!(&parts[0].bytes[..], r.text.as_bytes());
        assert!(parts[1].games.is_empty() && parts[1].bytes.is_empty());
        // Sparse boards: 70 goes to the second.
        let r = round(&[(1, 1), (70, 1), (70, 2)]);
        let parts = Body::parts(&r, 64, 2);
        assert_eq!(parts[0].games.len(), 1);
        assert_eq!(&parts[1].bytes[..], &r.text.as_bytes()[r.games[1].start..]);
        assert_eq!(parts[1].games[1].0.index, 2);
    }
}
