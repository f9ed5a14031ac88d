//! A sensor log read from disk: its bytes read here, its text checked and
//! parsed by `eboard_core::log`.

use std::path::Path;

use eboard_core::log::{LogError, SensorLog, cannot_read, decode_text, parse_log};

/// Reads and parses a sensor log file.
pub fn read_log(path: &Path) -> Result<SensorLog, LogError> {
    let file = path.display().to_string();
    parse_log(&read_text(path, &file)?, &file)
}

/// Reads a sensor log file's text; `file` names it in errors.
pub fn read_text(path: &Path, file: &str) -> Result<String, LogError> {
    let bytes = std::fs::read(path).map_err(|e| cannot_read(file, &e))?;
    String::from_utf8(bytes).map_err(|e| match decode_text(e.as_bytes(), file) {
        Err(says_where) => says_where,
        Ok(_) => cannot_read(file, &e),
    })
}

/// [`read_text`] into `buf`, kept by the caller from file to file (many short
/// logs): the file is read until its end into the room `buf` already has, with
/// no look at its size first and nothing allocated once `buf` is large enough.
/// The same errors as [`read_text`].
pub fn read_text_into<'b>(path: &Path, file: &str, buf: &'b mut Vec<u8>) -> Result<&'b str, LogError> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| cannot_read(file, &e))?;
    let mut n = 0;
    loop {
        if n == buf.len() {
            buf.resize((2 * buf.len()).max(16 * 1024), 0);
        }
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(cannot_read(file, &e)),
        }
    }
    decode_text(&buf[..n], file)
}
