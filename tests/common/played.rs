//! Games played by simulated hands against what the daemon published: which
//! touches of each ply reached it, whether the published game is the played one
//! (up to what no board seen across a gap can show), the `{inferred}` marks of a
//! PGN. Shared by the fault campaign (`tests/faults`) and the event campaign
//! (`tests/event`).

use eboard_bridge::log::{RecordKind, SensorLog};
use shakmaty::{Chess, Move, Piece, Position, Square};

/// A lift (`false`) or a placement (`true`) of a piece on a square, as the board
/// reports it.
pub type Touch = (bool, Square, Option<Piece>);

pub fn touch_of(kind: &RecordKind) -> Option<Touch> {
    match kind {
        RecordKind::Lift { square, piece } => Some((false, *square, *piece)),
        RecordKind::Place { square, piece } => Some((true, *square, Some(*piece))),
        _ => None,
    }
}

/// Which of each ply's lifts and placements reached the daemon while it knew the
/// board (read after the dump that follows a gap or unreadable bytes): the longest
/// common subsequence of the log's touches and those the recording decoded, a
/// touch matching only one within 3 s (real time) of its time in the log (the
/// two clocks aligned on the first touch of both; log time runs `speed` times
/// real time). Returns, per ply, (seen, all).
pub fn seen_per_ply(plies: &[Vec<(u64, Touch)>], recording: &SensorLog, speed: f64) -> Vec<(usize, usize)> {
    use eboard_bridge::board::BoardEvent;
    use eboard_bridge::log::{Played, Player};
    let sent: Vec<(usize, u64, Touch)> = plies
        .iter()
        .enumerate()
        .flat_map(|(p, ts)| ts.iter().map(move |(t, touch)| (p, *t, *touch)))
        .collect();
    // After a gap or bytes it could not read, the daemon knows the board again
    // only from the next dump: touches read before it are not counted as shown.
    let mut known = true;
    let got: Vec<(u64, Touch)> = Player::play_log(recording, "recording")
        .unwrap_or_default()
        .into_iter()
        .filter_map(|s| match s.what {
            Played::Gap(_) | Played::Skipped(_) => {
                known = false;
                None
            }
            Played::Board(BoardEvent::Dump(_)) => {
                known = true;
                None
            }
            Played::Board(BoardEvent::Lift { square, piece }) if known => {
                Some((s.time.micros(), (false, square, piece.piece())))
            }
            Played::Board(BoardEvent::Place { square, piece, .. }) if known => {
                piece.piece().map(|p| (s.time.micros(), (true, square, Some(p))))
            }
            _ => None,
        })
        .collect();
    let mut out: Vec<(usize, usize)> = plies.iter().map(|ts| (0, ts.len())).collect();
    let Some(&(t0, first)) = got.first() else {
        return out;
    };
    let Some(s0) = sent.iter().find(|s| s.2 == first).map(|s| s.1) else {
        return out;
    };
    // Real µs of the recording for a log time.
    let real = |log_us: u64| (log_us as f64 - s0 as f64) / speed + t0 as f64;
    let near = |s: &(usize, u64, Touch), g: &(u64, Touch)| {
        let dt = (real(s.1) - g.0 as f64).abs();
        (s.2 == g.1 && dt < 3e6).then_some(dt as u64)
    };
    for i in pair(&sent, &got, near) {
        out[sent[i].0].0 += 1;
    }
    out
}

/// Which of `sent` (in order) reached the other side as `got` (in order): the
/// indexes into `sent` of a longest common subsequence, a pair allowed where
/// `cost` is `Some` (how far apart in time the two are). Of the longest, the
/// one nearest in time: a touch that two sent ones match alike (a piece
/// put on a square by a move, then lifted and put back by a slip) is the one
/// it came at, not the first (seed 912: a capture's placement lost in a cut
/// was counted seen by the slip's placement after it).
pub fn pair<S, G>(sent: &[S], got: &[G], cost: impl Fn(&S, &G) -> Option<u64>) -> Vec<usize> {
    let (n, m) = (sent.len(), got.len());
    // Best (pairs, -total cost) from (i, j) on: more pairs first, then nearer.
    let better = |a: (u32, u64), b: (u32, u64)| a.0 > b.0 || (a.0 == b.0 && a.1 < b.1);
    let mut best = vec![vec![(0u32, 0u64); m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            let mut b = best[i + 1][j];
            if better(best[i][j + 1], b) {
                b = best[i][j + 1];
            }
            if let Some(c) = cost(&sent[i], &got[j]) {
                let (k, e) = best[i + 1][j + 1];
                if better((k + 1, e.saturating_add(c)), b) {
                    b = (k + 1, e.saturating_add(c));
                }
            }
            best[i][j] = b;
        }
    }
    let mut paired = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n && j < m {
        let here = best[i][j];
        if let Some(c) = cost(&sent[i], &got[j]) {
            let (k, e) = best[i + 1][j + 1];
            if (k + 1, e.saturating_add(c)) == here {
                paired.push(i);
                i += 1;
                j += 1;
                continue;
            }
        }
        if best[i + 1][j] == here {
            i += 1;
        } else {
            j += 1;
        }
    }
    paired
}

/// The `[rules]` section of a daemon run at `speed` times real time: the
/// thresholds divided by it, as `demo --speed` does.
pub fn scaled_rules(speed: f64) -> String {
    format!(
        "[rules]\nrelease_ms = {}\nflicker_ms = {}\nirregular_ms = {}\n",
        (300.0 / speed) as u64,
        (150.0 / speed) as u64,
        (2000.0 / speed) as u64,
    )
}

/// The result the board shows at the end: a forced end, else none.
pub fn true_result(start: &Chess, moves: &[Move]) -> &'static str {
    let mut pos = start.clone();
    for m in moves {
        pos.play_unchecked(*m);
    }
    if pos.is_checkmate() {
        if pos.turn().is_white() { "0-1" } else { "1-0" }
    } else if pos.is_stalemate() || pos.is_insufficient_material() {
        "1/2-1/2"
    } else {
        "*"
    }
}

/// The `{inferred}` marks of the first game of a PGN text, one per move.
pub fn inferred_marks(pgn: &str) -> Vec<bool> {
    let body: String = pgn
        .lines()
        .filter(|l| !l.starts_with('['))
        .collect::<Vec<_>>()
        .join(" ");
    let mut marks = Vec::new();
    let mut comment = String::new();
    let mut in_comment = false;
    for tok in body.split_whitespace() {
        if in_comment || tok.starts_with('{') {
            in_comment = !tok.ends_with('}');
            comment.push_str(tok);
            if !in_comment {
                if comment == "{inferred}" {
                    if let Some(last) = marks.last_mut() {
                        *last = true;
                    }
                }
                comment.clear();
            }
            continue;
        }
        if tok.ends_with('.') || ["*", "1-0", "0-1", "1/2-1/2"].contains(&tok) {
            continue;
        }
        marks.push(false);
    }
    marks
}

/// The published game is the played one but for what no board seen across a cut
/// can show: each move seen is the one played; each stretch of inferred moves ends
/// on the position the game really reached, after as many plies, or after fewer
/// when a piece went back to the square it started from while the line was away
/// (a trip no board seen before and after shows, and one the daemon never
/// invents: `rules::round_trip`); a cycle of plies back to the same position may
/// be missing altogether.
pub fn same_game_modulo_order(start: &Chess, played: &[Move], published: &[String], marked: &[bool]) -> bool {
    same_game(start, played, published, marked, false)
}

/// [`same_game_modulo_order`], and an inferred stretch may also end on the
/// position the game reached after more plies when none of them went and
/// came back: pieces that took a longer way than they needed (a rook to f1
/// and on to f2 for one move to f2, the king to c2 and back down to c1
/// while the rook did the same), with the same side to move after either.
/// Neither the dump nor what follows it can count those plies: the fewest
/// are recorded (the gaps class of `tests/classes.rs`).
pub fn same_game_modulo_count(start: &Chess, played: &[Move], published: &[String], marked: &[bool]) -> bool {
    same_game(start, played, published, marked, true)
}

fn same_game(start: &Chess, played: &[Move], published: &[String], marked: &[bool], fewer: bool) -> bool {
    if marked.len() != published.len() {
        return false;
    }
    let truth = super::sans(start, played);
    let key = |p: &Chess| {
        let fen = eboard_bridge::rules::game_fen(p);
        fen.split(' ').take(3).collect::<Vec<_>>().join(" ")
    };
    // The positions the game really went through: real[i] before ply i.
    let mut real = vec![start.clone()];
    for m in played {
        let mut next = real[real.len() - 1].clone();
        next.play_unchecked(*m);
        real.push(next);
    }
    let keys: Vec<String> = real.iter().map(key).collect();
    let walk = Walk {
        real: &real,
        keys: &keys,
        truth: &truth,
        played,
        published,
        marked,
        fewer,
        key: &key,
    };
    walk.from(0, 0, start.clone())
}

/// The published game matched against the played one from ply `i` of the
/// played and `k` of the published (`ours` the position published so far):
/// each account of a stretch is tried in turn (a seen move as the next ply
/// played, or as the one after a cycle back to the same position), so that
/// a move seen both next and after a cycle is matched either way.
struct Walk<'a> {
    real: &'a [Chess],
    keys: &'a [String],
    truth: &'a [String],
    played: &'a [Move],
    published: &'a [String],
    marked: &'a [bool],
    fewer: bool,
    key: &'a dyn Fn(&Chess) -> String,
}

impl Walk<'_> {
    fn from(&self, i: usize, k: usize, mut ours: Chess) -> bool {
        let (published, marked, played) = (self.published, self.marked, self.played);
        if k == published.len() {
            return i == played.len();
        }
        let end = if marked[k] {
            (k..published.len())
                .find(|&x| !marked[x])
                .unwrap_or(published.len())
        } else {
            k + 1
        };
        for san in &published[k..end] {
            let Ok(san) = san.parse::<shakmaty::san::San>() else {
                return false;
            };
            let Ok(mv) = san.to_move(&ours) else { return false };
            ours.play_unchecked(mv);
        }
        let here = (self.key)(&ours);
        let len = end - k;
        let nexts: Vec<usize> = if marked[k] {
            (i + len..=played.len())
                .filter(|&j| {
                    self.keys[j] == here
                        && (j == i + len
                            || self.fewer
                            || (i + 1..=j).any(|m| {
                                eboard_bridge::rules::round_trip(self.real[i].board(), &played[i..m])
                            }))
                })
                .collect()
        } else {
            // The next ply played, or a cycle back to this position, then the
            // move seen.
            (i..played.len())
                .filter(|&j| (j == i || self.keys[j] == self.keys[i]) && self.truth[j] == published[k])
                .map(|j| j + 1)
                .collect()
        };
        nexts.into_iter().any(|j| self.from(j, end, ours.clone()))
    }
}

/// The standard games of `tests/data/games` of 10 plies or more, named `FILE#N`.
pub fn all_games() -> Vec<(String, Chess, Vec<Move>)> {
    let mut games = Vec::new();
    for file in super::STANDARD_GAME_FILES {
        for (k, g) in super::pgn_games(file).into_iter().enumerate() {
            if g.mode == shakmaty::CastlingMode::Standard && g.moves.len() >= 10 {
                games.push((format!("{file}#{}", k + 1), g.start, g.moves));
            }
        }
    }
    games
}

#[cfg(test)]
mod tests {
    /// (touch, time) pairs: a touch is the same when its name is, within 10 s.
    type Timed = (&'static str, u64);

    fn paired(sent: &[Timed], got: &[Timed]) -> Vec<usize> {
        super::pair(sent, got, |s: &Timed, g: &Timed| {
            (s.0 == g.0 && s.1.abs_diff(g.1) < 10_000).then(|| s.1.abs_diff(g.1))
        })
    }

    /// A move's placement on f3 lost in a cut, then a slip's lift and
    /// placement of the same piece there, of which only the placement came
    /// through: the placement read is the slip's, at its time (seed 912).
    #[test]
    fn a_touch_matched_alike_by_two_is_paired_with_the_nearer() {
        let sent = [
            ("up g4", 1_000),
            ("on f3", 1_200),
            ("up f3", 2_000),
            ("on f3", 5_000),
        ];
        assert_eq!(paired(&sent, &[("up g4", 1_000), ("on f3", 5_010)]), vec![0, 3]);
        // Read at the move's time, it is the move's.
        assert_eq!(paired(&sent, &[("up g4", 1_000), ("on f3", 1_210)]), vec![0, 1]);
    }

    /// More pairs win over nearer ones: the longest common subsequence first.
    #[test]
    fn more_pairs_come_before_nearer_ones() {
        let sent = [("a", 0), ("b", 100), ("a", 9_000)];
        // Pairing the nearer "a" (9,000) would leave "b" unpaired.
        assert_eq!(paired(&sent, &[("a", 8_000), ("b", 8_100)]), vec![0, 1]);
        assert!(paired(&sent, &[("c", 0)]).is_empty());
    }
}
