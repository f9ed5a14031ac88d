//! Which round, board number and players each game of a board belongs to, and
//! which broadcast file it goes to.
//!
//! - A game takes the round and players the board has when the game is first
//!   seen, and keeps them: a new round (SIGHUP) or other players in the
//!   configuration apply to the games that start after it. A game with no move
//!   and no result yet has not begun: it takes the new round and players.
//! - `SetPlayers` names the players of the game under way (if not over) and of
//!   the games the board starts after it, until the configuration is read again
//!   (a `note reloaded` in the journal marks that, so that a resume agrees).
//! - The tags are journaled (a `note tags {...}` in the board's recording, after
//!   the records that started the game), so that a resumed game keeps its round
//!   and players whatever the configuration says after the restart.
//! - Every game has a file of its own (`output::live::GameKey`); a game with no
//!   move and no result that is replaced gives its place to the next.

use std::collections::BTreeMap;

use super::config::RoundFormat;

use serde::{Deserialize, Serialize};

use crate::output::live::{GameKey, LiveMsg};
use crate::output::replay::{Tags, game_pgn, game_pgn_digest};
use crate::rules::Game;

/// A game's round, board number and PGN tags.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GameTags {
    pub round: u32,
    pub board: u32,
    pub tags: Tags,
}

/// The prefix of the journal notes that hold a game's tags.
pub const NOTE_PREFIX: &str = "tags ";

#[derive(Debug, Serialize, Deserialize)]
struct Note {
    game: u32,
    #[serde(flatten)]
    tags: GameTags,
}

#[derive(Debug, Clone)]
struct Entry {
    tags: GameTags,
    /// The journal holds these tags.
    noted: bool,
    /// Has a move or a result: it keeps its file.
    counts: bool,
    key: Option<GameKey>,
    pgn: String,
    /// The digest (`game_pgn_digest`) of what `pgn` was made from.
    digest: Option<u64>,
}

/// Sets tag `name` to `value`; an empty value removes it.
fn merge_tag(extra: &mut BTreeMap<String, String>, name: &str, value: &str) {
    if value.is_empty() {
        extra.remove(name);
    } else {
        extra.insert(name.to_string(), value.to_string());
    }
}

/// The players of `tags` renamed to `white` and `black`, each player's own tags
/// (`WhiteElo`, `WhiteFideId`, `WhiteTitle`, `WhiteTeam` and Black's) following
/// the player by name: a player named on the other colour than before takes
/// their tags there (a colour swap swaps them); a colour whose player moved to
/// the other colour keeps none of them; a name not seen before (a new player, a
/// spelling mended) keeps the colour's tags.
pub fn rename_players(tags: &mut Tags, white: &str, black: &str) {
    const OWN: [&str; 4] = ["Elo", "FideId", "Title", "Team"];
    let own = |extra: &BTreeMap<String, String>, colour: &str| -> Vec<(&'static str, Option<String>)> {
        OWN.iter()
            .map(|suffix| (*suffix, extra.get(&format!("{colour}{suffix}")).cloned()))
            .collect()
    };
    let old = [tags.white.clone(), tags.black.clone()];
    let new = [white, black];
    let before = [own(&tags.extra, "White"), own(&tags.extra, "Black")];
    for (c, colour) in ["White", "Black"].into_iter().enumerate() {
        let other = 1 - c;
        let from = if new[c] == old[c] {
            Some(c)
        } else if !new[c].is_empty() && new[c] == old[other] {
            Some(other)
        } else if !old[c].is_empty() && new[other] == old[c] {
            None
        } else {
            Some(c)
        };
        for (i, suffix) in OWN.iter().enumerate() {
            let name = format!("{colour}{suffix}");
            match from.and_then(|f| before[f][i].1.clone()) {
                Some(v) => tags.extra.insert(name, v),
                None => tags.extra.remove(&name),
            };
        }
    }
    tags.white = white.to_string();
    tags.black = black.to_string();
}

/// A game that has begun: a move made, or a result given.
pub fn has_begun(g: &Game) -> bool {
    g.ply() > 0
        || g.result
            .is_some_and(|(r, _)| r != crate::rules::GameResult::Unfinished)
}

#[derive(Debug, Default, Clone)]
pub struct Roster {
    games: BTreeMap<u32, Entry>,
    /// Players named by `SetPlayers`, for the games that start from then on.
    players: Option<(String, String)>,
    /// A round's pairing (`SetPairing`: round, 0 for the board's own, and tags
    /// with the players) for the games that start from then on.
    pairing: Option<(u32, BTreeMap<String, String>)>,
    /// Tags set by `SetTags` for the games that start from then on (an empty
    /// value removes the tag).
    set_tags: BTreeMap<String, String>,
    /// Games up to this number are over and published for good.
    final_upto: u32,
    /// Which game each file holds.
    published: BTreeMap<GameKey, u32>,
}

impl Roster {
    /// A journal note read back on resume: the tags of the game it names.
    /// False when the note is not a tags note.
    pub fn apply_note(&mut self, text: &str) -> bool {
        let Some(json) = text.strip_prefix(NOTE_PREFIX) else {
            return false;
        };
        let Ok(note) = serde_json::from_str::<Note>(json) else {
            tracing::warn!(
                "a tags note that does not read: {}",
                crate::log::escaped(&crate::log::clip_to(json, 100))
            );
            return true;
        };
        self.games.insert(
            note.game,
            Entry {
                tags: note.tags,
                noted: true,
                counts: false,
                key: None,
                pgn: String::new(),
                digest: None,
            },
        );
        true
    }

    /// The tags games starting now take: the board's (`base`, from the
    /// configuration) with the pairing `SetPairing` gave, the tags `SetTags` set
    /// and the players `SetPlayers` named since, if any.
    pub fn for_new_games(&self, base: GameTags, format: RoundFormat) -> GameTags {
        let mut tags = base;
        if let Some((round, pairing)) = &self.pairing {
            if *round != 0 {
                tags.round = *round;
                tags.tags.round = format.tag(*round, tags.board);
            }
            for name in crate::api::PAIRING_TAGS {
                tags.tags.extra.remove(name);
            }
            for (name, value) in pairing {
                match name.as_str() {
                    "White" => tags.tags.white = value.clone(),
                    "Black" => tags.tags.black = value.clone(),
                    _ => merge_tag(&mut tags.tags.extra, name, value),
                }
            }
        }
        for (name, value) in &self.set_tags {
            merge_tag(&mut tags.tags.extra, name, value);
        }
        if let Some((w, b)) = &self.players {
            tags.tags.white = w.clone();
            tags.tags.black = b.clone();
        }
        tags
    }

    /// The configuration was read again: its round, players and tags stand from
    /// now on.
    pub fn reloaded(&mut self) {
        self.players = None;
        self.pairing = None;
        self.set_tags.clear();
    }

    /// `SetPairing`: the games that start from now on (and a game not begun,
    /// which the caller retags) take it; what `SetPlayers` and `SetTags` named
    /// for them before gives way.
    pub fn set_pairing(&mut self, round: u32, tags: &BTreeMap<String, String>) {
        self.pairing = Some((round, tags.clone()));
        self.players = None;
        self.set_tags.clear();
    }

    /// `SetTags`: the tags of the game under way (`current`, when it is not over)
    /// and of the games that start after it.
    pub fn set_tags(&mut self, current: Option<&Game>, tags: &BTreeMap<String, String>, default: &GameTags) {
        for (name, value) in tags {
            self.set_tags.insert(name.clone(), value.clone());
        }
        if let Some(g) = current.filter(|g| !g.is_over()) {
            let e = self.entry(g.number, default);
            let before = e.tags.tags.extra.clone();
            for (name, value) in tags {
                merge_tag(&mut e.tags.tags.extra, name, value);
            }
            if e.tags.tags.extra != before {
                e.noted = false;
            }
        }
    }

    /// The tags of game `n`, fixed now (as `default`) if it had none.
    fn entry(&mut self, n: u32, default: &GameTags) -> &mut Entry {
        self.games.entry(n).or_insert_with(|| {
            let tags = default.clone();
            Entry {
                tags,
                noted: false,
                counts: false,
                key: None,
                pgn: String::new(),
                digest: None,
            }
        })
    }

    /// `SetPlayers`: the players of the game under way (`current`, when it is not
    /// over) and of the games that start after it. Each player's own tags
    /// (rating, FIDE id, title, team) follow the player: a colour swap swaps them
    /// ([`rename_players`]).
    pub fn set_players(&mut self, current: Option<&Game>, white: &str, black: &str, default: &GameTags) {
        self.players = Some((white.to_string(), black.to_string()));
        // The games that start from now on: the tags they take now, renamed, kept
        // as this board's own tags (a later `SetTags` names the new colours).
        let mut renamed = default.tags.clone();
        rename_players(&mut renamed, white, black);
        for name in crate::api::PAIRING_TAGS {
            let value = renamed.extra.get(name).cloned().unwrap_or_default();
            if default.tags.extra.get(name).cloned().unwrap_or_default() != value {
                self.set_tags.insert(name.to_string(), value);
            }
        }
        if let Some(g) = current.filter(|g| !g.is_over()) {
            let e = self.entry(g.number, default);
            let before = e.tags.tags.clone();
            rename_players(&mut e.tags.tags, white, black);
            if e.tags.tags != before {
                e.noted = false;
            }
        }
    }

    /// The board's round or players changed: a game that has not begun takes them.
    pub fn retag_unbegun(&mut self, current: Option<&Game>, default: &GameTags) {
        let Some(g) = current.filter(|g| !has_begun(g)) else {
            return;
        };
        if let Some(e) = self.games.get_mut(&g.number) {
            if e.tags != *default {
                e.tags = default.clone();
                e.noted = false;
            }
        }
    }

    /// Everything resumed from the journal is noted there already.
    pub fn all_noted(&mut self) {
        for e in self.games.values_mut() {
            e.noted = true;
        }
    }

    pub fn tags_of(&self, n: u32) -> Option<&GameTags> {
        self.games.get(&n).map(|e| &e.tags)
    }

    /// The PGN last published for game `n`.
    pub fn pgn_of(&self, n: u32) -> Option<&str> {
        self.games.get(&n).map(|e| e.pgn.as_str())
    }

    /// Brings the files in step with the games (`games`: every game of the board,
    /// the current one last). Returns the tags notes to journal and the changes
    /// for the broadcast folder.
    pub fn update<'a>(
        &mut self,
        games: impl Iterator<Item = &'a Game>,
        current: Option<u32>,
        default: &GameTags,
    ) -> (Vec<String>, Vec<LiveMsg>) {
        let mut notes = Vec::new();
        let mut live = Vec::new();
        let upto = self.final_upto;
        for g in games.filter(|g| g.number > upto) {
            let n = g.number;
            let is_current = current == Some(n);
            let begun = has_begun(g);
            let e = self.entry(n, default);
            e.counts = begun;
            if !e.noted {
                e.noted = true;
                let note = Note {
                    game: n,
                    tags: e.tags.clone(),
                };
                notes.push(format!(
                    "{NOTE_PREFIX}{}",
                    serde_json::to_string(&note).unwrap_or_default()
                ));
            }
            let (round, board) = (e.tags.round, e.tags.board);
            let index = 1 + self
                .games
                .range(..n)
                .filter(|(_, o)| o.counts && o.tags.round == round && o.tags.board == board)
                .count() as u32;
            let key = GameKey { round, board, index };
            let Some(e) = self.games.get_mut(&n) else { continue };
            let old = e.key.replace(key);
            if let Some(old) = old.filter(|o| *o != key) {
                if self.published.get(&old) == Some(&n) {
                    self.published.remove(&old);
                    live.push(LiveMsg::Withdraw(old));
                }
            }
            if !is_current {
                self.final_upto = n;
                if !begun {
                    // Replaced before it began: its place goes to the next game.
                    if self.published.get(&key) == Some(&n) {
                        self.published.remove(&key);
                        live.push(LiveMsg::Withdraw(key));
                    }
                    continue;
                }
            }
            // Most calls come from a clock report or a touch: nothing the PGN
            // shows has changed, and it is not built again.
            let digest = game_pgn_digest(g, &e.tags.tags);
            if e.digest == Some(digest) && old == Some(key) {
                continue;
            }
            e.digest = Some(digest);
            let pgn = game_pgn(g, &e.tags.tags);
            if pgn != e.pgn || old != Some(key) {
                e.pgn = pgn.clone();
                self.published.insert(key, n);
                live.push(LiveMsg::Game {
                    key,
                    plies: g.ply(),
                    pgn,
                });
            }
        }
        (notes, live)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(white: &str, black: &str, extra: &[(&str, &str)]) -> Tags {
        let mut t = Tags::unknown("2026.11.27");
        t.white = white.into();
        t.black = black.into();
        t.extra = extra
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        t
    }

    const PAIR: [(&str, &str); 7] = [
        ("Board", "3"),
        ("WhiteElo", "2830"),
        ("WhiteFideId", "1503014"),
        ("WhiteTitle", "GM"),
        ("BlackElo", "2786"),
        ("BlackFideId", "2020009"),
        ("BlackTeam", "USA"),
    ];

    /// A colour swap swaps each player's rating, FIDE id, title and team (issue
    /// 47: before, they stayed on the colour, each player shown with the other's).
    #[test]
    fn a_colour_swap_takes_each_players_tags_along() {
        let mut t = tags("Carlsen, Magnus", "Caruana, Fabiano", &PAIR);
        rename_players(&mut t, "Caruana, Fabiano", "Carlsen, Magnus");
        let want = tags(
            "Caruana, Fabiano",
            "Carlsen, Magnus",
            &[
                ("Board", "3"),
                ("BlackElo", "2830"),
                ("BlackFideId", "1503014"),
                ("BlackTitle", "GM"),
                ("WhiteElo", "2786"),
                ("WhiteFideId", "2020009"),
                ("WhiteTeam", "USA"),
            ],
        );
        assert_eq!(t, want);
    }

    /// A name mended keeps the colour's tags; a player moved to the other colour
    /// takes theirs there, and the one who replaces them takes none of them.
    #[test]
    fn a_new_name_keeps_the_colours_tags_and_a_moved_player_takes_theirs() {
        let mut t = tags("Carlsen, Magnis", "Caruana, Fabiano", &PAIR);
        rename_players(&mut t, "Carlsen, Magnus", "Caruana, Fabiano");
        assert_eq!(t, tags("Carlsen, Magnus", "Caruana, Fabiano", &PAIR));

        let mut t = tags("Carlsen, Magnus", "Caruana, Fabiano", &PAIR);
        rename_players(&mut t, "Caruana, Fabiano", "Nakamura, Hikaru");
        let want = tags(
            "Caruana, Fabiano",
            "Nakamura, Hikaru",
            &[
                ("Board", "3"),
                ("WhiteElo", "2786"),
                ("WhiteFideId", "2020009"),
                ("WhiteTeam", "USA"),
            ],
        );
        assert_eq!(t, want);
    }

    /// `SetPlayers` with the colours swapped: the game under way and the games
    /// that start after it show each player with their own rating, and a
    /// `SetTags` after the swap names the new colours.
    #[test]
    fn set_players_swapped_moves_the_tags_for_this_game_and_the_next() {
        let base = GameTags {
            round: 1,
            board: 3,
            tags: tags("Carlsen, Magnus", "Caruana, Fabiano", &PAIR),
        };
        let mut roster = Roster::default();
        let game = Game::new(
            1,
            shakmaty::Chess::default(),
            shakmaty::CastlingMode::Standard,
            crate::board::Orientation::Normal,
        );
        roster.set_players(Some(&game), "Caruana, Fabiano", "Carlsen, Magnus", &base);
        let now = &roster.tags_of(1).unwrap().tags;
        assert_eq!(now.extra["WhiteElo"], "2786");
        assert_eq!(now.extra["BlackElo"], "2830");
        let next = roster.for_new_games(base.clone(), RoundFormat::default());
        assert_eq!(next.tags.white, "Caruana, Fabiano");
        assert_eq!(next.tags.extra["WhiteFideId"], "2020009");
        assert_eq!(next.tags.extra["BlackTitle"], "GM");
        assert!(!next.tags.extra.contains_key("WhiteTitle"));
        let default = roster.for_new_games(base.clone(), RoundFormat::default());
        roster.set_tags(
            None,
            &[("WhiteElo".to_string(), "2790".to_string())].into(),
            &default,
        );
        let next = roster.for_new_games(base, RoundFormat::default());
        assert_eq!(next.tags.extra["WhiteElo"], "2790");
        assert_eq!(next.tags.extra["BlackElo"], "2830");
    }
}
