//! Opening a board's serial line, and the start-up sequence.

use std::path::Path;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio_serial::{DataBits, FlowControl, Parity, SerialPortBuilderExt, SerialStream, StopBits};

use crate::protocol::{BAUD_RATE, ClockCommand, HostCommand};

/// Opens a board: 9600 8N1, no flow control, DTR raised (where the line has one: a
/// pseudo-terminal does not, and that is fine).
pub fn open(path: &Path) -> std::io::Result<SerialStream> {
    let name = path.to_string_lossy();
    tokio_serial::new(name.as_ref(), BAUD_RATE)
        .data_bits(DataBits::Eight)
        .parity(Parity::None)
        .stop_bits(StopBits::One)
        .flow_control(FlowControl::None)
        .dtr_on_open(true)
        .open_native_async()
        .map_err(|e| std::io::Error::other(format!("{}: {e}", path.display())))
}

/// The first commands after opening: updates "nice", the version, then the board,
/// the serial number and the clock's version (`shared/spec/dgt-protocol.md`,
/// start-up sequence).
pub fn start_up_commands() -> [HostCommand; 5] {
    [
        HostCommand::SendUpdatesNice,
        HostCommand::SendVersion,
        HostCommand::SendBoard,
        HostCommand::SendSerialNumber,
        HostCommand::Clock(ClockCommand::Version),
    ]
}

/// Sends the start-up commands, after the board's moment to settle.
pub async fn start_up(line: &mut SerialStream) -> std::io::Result<()> {
    tokio::time::sleep(Duration::from_millis(500)).await;
    for cmd in start_up_commands() {
        line.write_all(&cmd.encode()).await?;
    }
    line.flush().await
}
