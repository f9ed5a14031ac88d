//! The systemd notification protocol (`sd_notify`): readiness, status, watchdog.
//! A datagram to `$NOTIFY_SOCKET`; nothing happens when it is not set.

use std::os::unix::net::UnixDatagram;
use std::time::Duration;

/// Sends `state` (for example `READY=1`) to the service manager, if there is one.
pub fn notify(state: &str) {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    let Ok(sock) = UnixDatagram::unbound() else { return };
    let path = path.to_string_lossy().to_string();
    let sent = if let Some(name) = path.strip_prefix('@') {
        use std::os::linux::net::SocketAddrExt;
        std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())
            .and_then(|addr| sock.send_to_addr(state.as_bytes(), &addr))
    } else {
        sock.send_to(state.as_bytes(), &path)
    };
    if let Err(e) = sent {
        tracing::warn!("cannot notify the service manager at {path}: {e}");
    }
}

/// The watchdog interval the service manager asks for (`$WATCHDOG_USEC`), if any.
pub fn watchdog_interval() -> Option<Duration> {
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.parse().ok()?;
    if let Ok(pid) = std::env::var("WATCHDOG_PID") {
        if pid.parse::<u32>().ok()? != std::process::id() {
            return None;
        }
    }
    Some(Duration::from_micros(usec))
}
