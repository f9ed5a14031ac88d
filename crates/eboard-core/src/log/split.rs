//! The lines of a sensor log and the words of a record, found by plain loops
//! over the bytes (a log's lines and words are short: a search call each cost
//! more than the bytes it looked at).

/// The pieces of a text between `\n`s, as `str::split('\n')` gives them, found
/// by a plain loop: a log's lines are short, and a search call per line cost
/// more than the bytes it looked at.
pub(super) struct Lines<'a> {
    pub(super) rest: Option<&'a str>,
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let rest = self.rest?;
        match newline(rest.as_bytes()) {
            Some(i) => {
                self.rest = Some(&rest[i + 1..]);
                Some(&rest[..i])
            }
            None => {
                self.rest = None;
                Some(rest)
            }
        }
    }
}

/// The first `\n` in `b`: 8 bytes at a time (a word with a zero byte where
/// the text has `\n`: the lowest byte flagged is the first one, a borrow
/// only flags bytes above a true zero), then the bytes left one by one.
fn newline(b: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut i = 0;
    while let Some(chunk) = b[i..].first_chunk::<8>() {
        let w = u64::from_le_bytes(*chunk) ^ (ONES * u64::from(b'\n'));
        let zero = w.wrapping_sub(ONES) & !w & HIGH;
        if zero != 0 {
            return Some(i + (zero.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    b[i..].iter().position(|&c| c == b'\n').map(|p| i + p)
}

/// A line's words, between blanks and tabs, as `split([' ', '\t'])` without the
/// empty pieces gives them, found by a plain loop over the bytes.
pub(super) struct Words<'a> {
    pub(super) rest: &'a str,
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let blank = |b: &u8| *b == b' ' || *b == b'\t';
        let bytes = self.rest.as_bytes();
        let start = bytes.iter().position(|b| !blank(b))?;
        let len = bytes[start..]
            .iter()
            .position(blank)
            .unwrap_or(bytes.len() - start);
        // Both ends are next to an ASCII byte or the text's ends: char boundaries.
        let word = &self.rest[start..start + len];
        self.rest = &self.rest[start + len..];
        Some(word)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_what_split_gives() {
        for text in [
            "",
            " ",
            "\t",
            "a",
            " a",
            "a ",
            "a  b",
            "\ta\t b\t",
            "1.5 lift é2  ü",
            " x\u{a0}y z ",
        ] {
            let ours: Vec<&str> = Words { rest: text }.collect();
            let split: Vec<&str> = text.split([' ', '\t']).filter(|w| !w.is_empty()).collect();
            assert_eq!(ours, split, "{text:?}");
        }
    }

    #[test]
    fn lines_are_what_split_gives() {
        for text in ["", "\n", "a", "a\n", "\na", "a\nb", "a\r\nb\n\n", "é\nü\n\nx y\n"] {
            let ours: Vec<&str> = Lines { rest: Some(text) }.collect();
            let split: Vec<&str> = text.split('\n').collect();
            assert_eq!(ours, split, "{text:?}");
        }
        // Lines found 8 bytes at a time: a `\n` at every place in and across
        // the words, beside bytes near it in value (`\t`, `\x0b`) and above
        // 0x7f (UTF-8), in texts of every length up to 40 bytes.
        let mut texts = 0;
        for len in 0..40 {
            for at in 0..len {
                for filler in ["a", "\t", "\x0b", "é", "\u{10a}"] {
                    let mut text: String = filler.repeat(len / filler.len());
                    if at < text.len() && text.is_char_boundary(at) && text.is_char_boundary(at + 1) {
                        text.replace_range(at..at + 1, "\n");
                    }
                    text.push_str("\n\nx\n");
                    let ours: Vec<&str> = Lines { rest: Some(&text) }.collect();
                    let split: Vec<&str> = text.split('\n').collect();
                    assert_eq!(ours, split, "{text:?}");
                    texts += 1;
                }
            }
        }
        assert!(texts > 3000, "{texts} texts");
    }
}
