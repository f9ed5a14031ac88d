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
        match rest.bytes().position(|b| b == b'\n') {
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
    }
}
