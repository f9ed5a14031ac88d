//! The tags an arbiter may set on a board's games (a pairing's), and what a
//! value of each may be.

use std::collections::BTreeMap;

use crate::log::clip_to;

/// The tags of a pairing besides the players (`SetTags` sets these; `SetPairing`
/// these and `White`, `Black`).
pub const PAIRING_TAGS: [&str; 8] = [
    "WhiteElo",
    "BlackElo",
    "WhiteFideId",
    "BlackFideId",
    "WhiteTitle",
    "BlackTitle",
    "WhiteTeam",
    "BlackTeam",
];

/// The longest tag value (a player's or a team's name), in characters.
pub const MAX_TAG_CHARS: usize = 200;

/// The most boards one `SetPairings` call names.
pub const MAX_PAIRINGS: usize = 1000;

/// Whether `value` may be the value of tag `name` (one of [`PAIRING_TAGS`], or
/// `White`/`Black` when `players`): one line of at most [`MAX_TAG_CHARS`]
/// characters; a rating at most 4 digits, a FIDE id at most 12, a title at most
/// 4 letters. An empty value removes the tag. What is wrong, else.
pub fn check_tag(name: &str, value: &str, players: bool) -> Result<(), String> {
    let player = players && matches!(name, "White" | "Black");
    if !player && !PAIRING_TAGS.contains(&name) {
        return Err(format!(
            "`{}` is not a tag that can be set (these can: {}{})",
            clip_to(name, 40),
            if players { "White, Black, " } else { "" },
            PAIRING_TAGS.join(", ")
        ));
    }
    let shown = clip_to(value, 40);
    if value.chars().count() > MAX_TAG_CHARS || value.chars().any(char::is_control) {
        return Err(format!(
            "{name} `{shown}`: a tag is one line of at most {MAX_TAG_CHARS} characters"
        ));
    }
    let digits = |max: usize| value.len() <= max && value.bytes().all(|b| b.is_ascii_digit());
    let ok = match name {
        "WhiteElo" | "BlackElo" => digits(4),
        "WhiteFideId" | "BlackFideId" => digits(12),
        "WhiteTitle" | "BlackTitle" => value.len() <= 4 && value.bytes().all(|b| b.is_ascii_alphabetic()),
        "White" | "Black" => !value.trim().is_empty(),
        _ => true,
    };
    if ok {
        return Ok(());
    }
    Err(match name {
        "WhiteElo" | "BlackElo" => format!("{name} `{shown}`: a rating is a number of at most 4 digits"),
        "WhiteFideId" | "BlackFideId" => {
            format!("{name} `{shown}`: a FIDE id is a number of at most 12 digits")
        }
        "White" | "Black" => format!("{name}: a player's name cannot be empty"),
        _ => format!("{name} `{shown}`: a title is at most 4 letters (GM, IM, WFM, ...)"),
    })
}

/// Checks every tag of `tags` ([`check_tag`]).
pub fn check_tags(tags: &BTreeMap<String, String>, players: bool) -> Result<(), String> {
    if tags.len() > PAIRING_TAGS.len() + 2 {
        return Err(format!("{} tags: at most {}", tags.len(), PAIRING_TAGS.len() + 2));
    }
    tags.iter().try_for_each(|(n, v)| check_tag(n, v, players))
}

/// A pairing's tags: `White` and `Black` named, the rest [`check_tag`].
pub fn check_pairing(tags: &BTreeMap<String, String>) -> Result<(), String> {
    check_tags(tags, true)?;
    for side in ["White", "Black"] {
        if !tags.contains_key(side) {
            return Err(format!("a pairing names both players: {side} is missing"));
        }
    }
    Ok(())
}
