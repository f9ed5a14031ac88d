//! Text shown to people about input from outside.

/// At most `n` characters of `s`, with `...` when it was longer (for messages
/// about input from outside, which may be of any size).
pub fn clip_to(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}...", s.chars().take(n).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_cut_at_characters_not_bytes() {
        assert_eq!(clip_to("abc", 3), "abc");
        assert_eq!(clip_to("abcd", 3), "abc...");
        assert_eq!(clip_to("éüöä", 2), "éü...");
        assert_eq!(clip_to("", 0), "");
    }
}
