//! `eboard-bridge record`: one board bridged, every byte both ways written to a
//! sensor log, until SIGINT or SIGTERM.

use super::rfc3339_now;

/// `record`: one board bridged, every byte both ways appended to `out` (a sensor
/// log), until SIGINT or SIGTERM.
pub async fn record(device: &std::path::Path, out: &std::path::Path) -> std::io::Result<()> {
    use crate::log::{Header, LogTime, LogWriter, Record, RecordKind};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut line = crate::device::serial::open(device)?;
    let mut header = Header::default();
    header.set("device", &device.display().to_string());
    header.set("started", &rfc3339_now());
    header.set("source", "eboard-bridge record");
    let file =
        std::fs::File::create(out).map_err(|e| std::io::Error::other(format!("{}: {e}", out.display())))?;
    let mut w = LogWriter::new(std::io::BufWriter::new(file), &header)?;
    let start = std::time::Instant::now();
    let at = |start: std::time::Instant| LogTime::from_micros(start.elapsed().as_micros() as u64);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    for cmd in crate::device::serial::start_up_commands() {
        let bytes = cmd.encode();
        line.write_all(&bytes).await?;
        w.write(&Record {
            time: at(start),
            kind: RecordKind::Tx(bytes),
        })?;
    }
    w.flush()?;
    eprintln!(
        "eboard-bridge: recording {} to {} (Ctrl-C to stop)",
        device.display(),
        out.display()
    );
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut buf = vec![0u8; 4096];
    loop {
        tokio::select! {
            r = line.read(&mut buf) => match r? {
                0 => break,
                n => {
                    w.write(&Record { time: at(start), kind: RecordKind::Rx(buf[..n].to_vec()) })?;
                    w.flush()?;
                }
            },
            _ = term.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    w.flush()
}
