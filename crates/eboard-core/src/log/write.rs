//! Writing sensor logs.

use std::io::{self, Write};

use super::record::{Header, LogTime, MAGIC, Record};

/// Writes a sensor log record by record, refusing times that go back.
#[derive(Debug)]
pub struct LogWriter<W: Write> {
    out: W,
    last: LogTime,
}

impl<W: Write> LogWriter<W> {
    /// Writes the first line and the header fields.
    pub fn new(mut out: W, header: &Header) -> io::Result<LogWriter<W>> {
        writeln!(out, "{MAGIC}")?;
        for (k, v) in &header.fields {
            // A header value is one line; keys have no spaces or colons.
            let key: String = k.chars().filter(|c| !c.is_whitespace() && *c != ':').collect();
            let value = v.replace(['\n', '\r'], " ");
            writeln!(out, "# {key}: {value}")?;
        }
        Ok(LogWriter {
            out,
            last: LogTime::default(),
        })
    }

    /// Goes on writing an existing log (opened for appending) whose last record is
    /// at `last`: no first line, no header.
    pub fn append(out: W, last: LogTime) -> LogWriter<W> {
        LogWriter { out, last }
    }

    /// Writes one record.
    pub fn write(&mut self, record: &Record) -> io::Result<()> {
        if record.time < self.last {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "sensor log time would go back: {} after {}",
                    record.time, self.last
                ),
            ));
        }
        self.last = record.time;
        let line = record.to_string();
        // A note is one line: fold any line break into a space.
        writeln!(self.out, "{}", line.replace(['\n', '\r'], " "))
    }

    /// Writes a comment line (never a header field once records exist).
    pub fn comment(&mut self, text: &str) -> io::Result<()> {
        writeln!(self.out, "# {}", text.replace(['\n', '\r'], " "))
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    pub fn get_ref(&self) -> &W {
        &self.out
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

/// The whole log as text.
pub fn to_string(header: &Header, records: &[Record]) -> io::Result<String> {
    let mut w = LogWriter::new(Vec::new(), header)?;
    for r in records {
        w.write(r)?;
    }
    String::from_utf8(w.into_inner()).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}
