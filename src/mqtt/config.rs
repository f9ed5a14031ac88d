//! `[mqtt]` in the configuration, checked when it is read: a broker address that
//! is not one, a QoS that could lose events, or commands without an authenticated
//! connection are refused with the key that is wrong.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// `[mqtt]`: off unless present.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MqttConfig {
    /// `mqtt://HOST[:PORT]` (1883) or `mqtts://HOST[:PORT]` (8883).
    pub broker: Broker,
    /// Default `eboard-bridge-<host name>`.
    #[serde(default)]
    pub client_id: Option<String>,
    /// A file with the user name on its first line and the password on its second.
    #[serde(default)]
    pub credentials_file: Option<PathBuf>,
    /// Topics are under it. Default `eboard/<host name>`: one prefix per hall.
    #[serde(default)]
    pub prefix: Option<String>,
    /// QoS of every publication: 1 (default) or 2. Never 0: an event may not be lost.
    #[serde(default = "default_qos")]
    pub qos: u8,
    /// Arbiter calls over MQTT (`<prefix>/boards/<id>/cmd/<Method>`); also needs
    /// `credentials_file` and a broker that refuses anonymous clients.
    #[serde(default)]
    pub commands: bool,
    /// TLS (`mqtts://`): the CA that signed the broker's certificate (default: the
    /// system's roots), and a client certificate and key when the broker asks.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    #[serde(default)]
    pub cert_file: Option<PathBuf>,
    #[serde(default)]
    pub key_file: Option<PathBuf>,
    /// Events held per board while the broker is away; past it the oldest go
    /// (their `seq` numbers are missing, so consumers see it).
    #[serde(default = "default_queue_limit")]
    pub queue_limit: usize,
}

fn default_qos() -> u8 {
    1
}

/// Hours of a board's events (about two a second while a clock runs).
pub const DEFAULT_QUEUE_LIMIT: usize = 20_000;

fn default_queue_limit() -> usize {
    DEFAULT_QUEUE_LIMIT
}

/// Where the broker is.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "String")]
pub struct Broker {
    pub host: String,
    pub port: u16,
    pub tls: bool,
}

impl TryFrom<String> for Broker {
    type Error = String;
    fn try_from(url: String) -> Result<Broker, String> {
        let (tls, rest) = if let Some(r) = url.strip_prefix("mqtts://") {
            (true, r)
        } else if let Some(r) = url.strip_prefix("mqtt://") {
            (false, r)
        } else {
            return Err(format!(
                "broker `{url}`: write mqtt://HOST:PORT, or mqtts://HOST:PORT for TLS"
            ));
        };
        let rest = rest.trim_end_matches('/');
        let default_port = if tls { 8883 } else { 1883 };
        // `[::1]:1883`, `host:1883`, `host`.
        let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
            let (h, after) = v6
                .split_once(']')
                .ok_or_else(|| format!("broker `{url}`: an IPv6 address needs its closing `]`"))?;
            let port = match after.strip_prefix(':') {
                Some(p) => Some(p),
                None if after.is_empty() => None,
                None => return Err(format!("broker `{url}`: `{after}` after the address")),
            };
            (h.to_string(), port)
        } else {
            match rest.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (rest.to_string(), None),
            }
        };
        if host.is_empty() || host.contains('/') || host.contains('@') {
            return Err(format!("broker `{url}`: no host name (mqtt://HOST:PORT)"));
        }
        let port = match port {
            None => default_port,
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| format!("broker `{url}`: `{p}` is not a port"))?,
        };
        Ok(Broker { host, port, tls })
    }
}

impl std::fmt::Display for Broker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = if self.tls { "mqtts" } else { "mqtt" };
        if self.host.contains(':') {
            write!(f, "{scheme}://[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{scheme}://{}:{}", self.host, self.port)
        }
    }
}

/// The machine's host name, fit for a topic level and a client id.
pub fn host_name() -> String {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let name: String = raw
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() { "eboard".into() } else { name }
}

impl MqttConfig {
    /// The configuration for a broker with every default.
    pub fn for_broker(url: &str) -> Result<MqttConfig, String> {
        Ok(MqttConfig {
            broker: Broker::try_from(url.to_string())?,
            client_id: None,
            credentials_file: None,
            prefix: None,
            qos: default_qos(),
            commands: false,
            ca_file: None,
            cert_file: None,
            key_file: None,
            queue_limit: default_queue_limit(),
        })
    }

    pub fn prefix(&self) -> String {
        self.prefix
            .clone()
            .unwrap_or_else(|| format!("eboard/{}", host_name()))
    }

    pub fn client_id(&self) -> String {
        self.client_id
            .clone()
            .unwrap_or_else(|| format!("eboard-bridge-{}", host_name()))
    }

    /// What is wrong with it, if anything (beyond what parsing caught).
    pub fn check(&self) -> Result<(), String> {
        if !(1..=2).contains(&self.qos) {
            return Err(format!(
                "qos = {}: events need 1 or 2 (QoS 0 may lose them)",
                self.qos
            ));
        }
        let prefix = self.prefix();
        if prefix.is_empty()
            || prefix.contains(['+', '#', '\0'])
            || prefix.starts_with('/')
            || prefix.ends_with('/')
        {
            return Err(format!(
                "prefix = \"{prefix}\": a topic prefix has no wildcards (+ #) and no leading or trailing /"
            ));
        }
        if self.client_id().is_empty() {
            return Err("client_id is empty".into());
        }
        if self.commands && self.credentials_file.is_none() && self.cert_file.is_none() {
            return Err(
                "commands = true needs credentials_file (or a client certificate, cert_file): arbiter calls are taken only from a broker that authenticates its clients"
                    .into(),
            );
        }
        if self.cert_file.is_some() != self.key_file.is_some() {
            return Err("cert_file and key_file go together (a client certificate and its key)".into());
        }
        if !self.broker.tls && (self.ca_file.is_some() || self.cert_file.is_some()) {
            return Err(format!(
                "ca_file, cert_file and key_file are for TLS: write the broker as mqtts://{}:{}",
                self.broker.host, self.broker.port
            ));
        }
        if self.queue_limit == 0 {
            return Err("queue_limit = 0 would hold no event while the broker is away".into());
        }
        Ok(())
    }
}

/// The user name and password of `credentials_file`.
pub fn read_credentials(path: &Path) -> Result<(String, String), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("[mqtt] credentials_file {}: {e}", path.display()))?;
    let mut lines = text.lines();
    let user = lines.next().unwrap_or("").trim_end_matches('\r').to_string();
    let password = lines.next().unwrap_or("").trim_end_matches('\r').to_string();
    if user.is_empty() {
        return Err(format!(
            "[mqtt] credentials_file {}: the first line is the user name, the second the password",
            path.display()
        ));
    }
    Ok((user, password))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn broker(s: &str) -> Result<Broker, String> {
        Broker::try_from(s.to_string())
    }

    #[test]
    fn broker_addresses() {
        assert_eq!(
            broker("mqtt://127.0.0.1:1884").unwrap(),
            Broker {
                host: "127.0.0.1".into(),
                port: 1884,
                tls: false
            }
        );
        assert_eq!(broker("mqtt://hall-a").unwrap().port, 1883);
        let b = broker("mqtts://central.example.org").unwrap();
        assert_eq!((b.port, b.tls), (8883, true));
        let b = broker("mqtt://[::1]:1999").unwrap();
        assert_eq!((b.host.as_str(), b.port), ("::1", 1999));
        assert_eq!(b.to_string(), "mqtt://[::1]:1999");
        for bad in [
            "tcp://x:1",
            "mqtt://",
            "mqtt://x:0",
            "mqtt://x:port",
            "mqtt://u@x",
            "x:1883",
        ] {
            assert!(broker(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn checks_say_which_key() {
        let mut c = MqttConfig::for_broker("mqtt://127.0.0.1").unwrap();
        c.prefix = Some("eboard/hall-a".into());
        assert!(c.check().is_ok());
        c.qos = 0;
        assert!(c.check().unwrap_err().contains("qos = 0"));
        c.qos = 1;
        c.prefix = Some("eboard/#".into());
        assert!(c.check().unwrap_err().contains("prefix"));
        c.prefix = None;
        assert!(c.prefix().starts_with("eboard/"));
        c.commands = true;
        assert!(c.check().unwrap_err().contains("credentials_file"));
        c.credentials_file = Some("/x".into());
        assert!(c.check().is_ok());
        c.ca_file = Some("/ca.pem".into());
        assert!(c.check().unwrap_err().contains("mqtts://"));
    }

    #[test]
    fn credentials_are_two_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c");
        std::fs::write(&p, "hall-a\ns3cret:with colon\n").unwrap();
        assert_eq!(
            read_credentials(&p).unwrap(),
            ("hall-a".into(), "s3cret:with colon".into())
        );
        std::fs::write(&p, "").unwrap();
        assert!(read_credentials(&p).unwrap_err().contains("first line"));
        assert!(read_credentials(&dir.path().join("none")).is_err());
    }
}
