//! Opening a board's serial line, and the start-up sequence.

use std::path::Path;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio_serial::{DataBits, FlowControl, Parity, SerialPortBuilderExt, SerialStream, StopBits};

use crate::protocol::{BAUD_RATE, ClockCommand, HostCommand};

/// Opens a board: 9600 8N1, no flow control, DTR raised (where the line has one: a
/// pseudo-terminal does not, and that is fine). What the line held from before
/// it was opened is discarded: bytes the board sent while nobody read it (the
/// daemon down, or the line between its reopens) are stale, and a stale clock
/// report read as the first after a gap says the wrong side is to move (the
/// event campaign's seed 1166: White's clock running, read from the buffer
/// after a restart, made 9. Bd2 and 9... Bb4 the plies found instead of 8...
/// Bb4+ 9. Bd2). The start-up commands' dump says what the board shows now.
pub fn open(path: &Path) -> std::io::Result<SerialStream> {
    use tokio_serial::SerialPort;
    let name = path.to_string_lossy();
    let line = tokio_serial::new(name.as_ref(), BAUD_RATE)
        .data_bits(DataBits::Eight)
        .parity(Parity::None)
        .stop_bits(StopBits::One)
        .flow_control(FlowControl::None)
        .dtr_on_open(true)
        .open_native_async()
        .map_err(|e| std::io::Error::other(format!("{}: {e}", path.display())))?;
    if let Err(e) = line.clear(tokio_serial::ClearBuffer::Input) {
        tracing::warn!(
            "{}: cannot discard what the line held before it was opened ({e}); the dump after it decides",
            path.display()
        );
    }
    Ok(line)
}

/// The first commands after opening: updates "nice", the version, then the board,
/// the serial number and the clock's version: a start-up order known to work with
/// real boards.
pub fn start_up_commands() -> [HostCommand; 5] {
    [
        HostCommand::SendUpdatesNice,
        HostCommand::SendVersion,
        HostCommand::SendBoard,
        HostCommand::SendSerialNumber,
        HostCommand::Clock(ClockCommand::Version),
    ]
}

/// Asks the board on `path` its serial number and closes the line again. `None`
/// when the line closes before it answers; the caller bounds the wait.
pub async fn probe(path: &Path) -> std::io::Result<Option<String>> {
    use tokio::io::AsyncReadExt;
    let mut line = open(path)?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    line.write_all(&HostCommand::SendSerialNumber.encode()).await?;
    line.flush().await?;
    let mut decoder = crate::protocol::Decoder::new();
    let mut buf = [0u8; 512];
    loop {
        let n = line.read(&mut buf).await?;
        if n == 0 {
            return Ok(None);
        }
        for d in decoder.feed(&buf[..n]) {
            if let crate::protocol::Decoded::Message(crate::protocol::BoardMessage::SerialNumber(s)) = d {
                return Ok(Some(s));
            }
        }
    }
}

/// Sends the start-up commands, after the board's moment to settle.
pub async fn start_up(line: &mut SerialStream) -> std::io::Result<()> {
    tokio::time::sleep(Duration::from_millis(500)).await;
    for cmd in start_up_commands() {
        line.write_all(&cmd.encode()).await?;
    }
    line.flush().await
}
