//! The names the console is reached by (`[http] server_names`): each one read
//! and checked from the configuration, a request's `Host` parsed and matched
//! against them. A browser's page on another site can make a browser send any
//! request to this server under its own name (DNS rebinding), never under one of
//! these: so `Host` is checked against them, not trusted. Pure.

use std::fmt;
use std::net::IpAddr;

/// One name or address of the server, as a `Host` header names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Name {
    /// A DNS name, in lower case, without a final dot.
    Dns(String),
    Ip(IpAddr),
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Name::Dns(n) => f.write_str(n),
            Name::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

impl Name {
    /// The name as the host part of a URL (`[::1]` for an IPv6 address).
    pub fn url_host(&self) -> String {
        match self {
            Name::Ip(IpAddr::V6(ip)) => format!("[{ip}]"),
            n => n.to_string(),
        }
    }

    /// A name of the configuration: a DNS name or an address, without a port
    /// (`hall.example`, `192.168.1.10`, `::1` or `[::1]`).
    pub fn parse(text: &str) -> Result<Name, String> {
        let t = text.trim();
        let bare = t.strip_prefix('[').and_then(|r| r.strip_suffix(']')).unwrap_or(t);
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return Ok(Name::Ip(ip));
        }
        let shown = crate::log::clip_to(t, 64);
        if let Some((name, port)) = t.rsplit_once(':') {
            if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!(
                    "`{shown}`: a name or an address without the port (`{}`)",
                    crate::log::clip_to(name, 64)
                ));
            }
        }
        let name = t.strip_suffix('.').unwrap_or(t).to_ascii_lowercase();
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        };
        if name.is_empty() || name.len() > 253 || !name.split('.').all(label_ok) {
            return Err(format!(
                "`{shown}` is not a host name (letters, digits, `-` and dots) nor an address"
            ));
        }
        Ok(Name::Dns(name))
    }

    /// The name of a `Host` header (`hall.example:1982`, `[::1]:1982`), if it
    /// reads as one.
    pub fn of_host(host: &str) -> Option<Name> {
        let name = if let Some(rest) = host.strip_prefix('[') {
            let (inside, after) = rest.split_once(']')?;
            if !(after.is_empty() || port_ok(after.strip_prefix(':')?)) {
                return None;
            }
            return inside
                .parse::<std::net::Ipv6Addr>()
                .ok()
                .map(|ip| Name::Ip(ip.into()));
        } else {
            match host.split_once(':') {
                Some((name, port)) if port_ok(port) => name,
                Some(_) => return None,
                None => host,
            }
        };
        Name::parse(name).ok()
    }
}

fn port_ok(p: &str) -> bool {
    !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit())
}

/// The names the console answers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerNames {
    names: Vec<Name>,
    /// From `[http] server_names` (false: the defaults).
    configured: bool,
}

impl ServerNames {
    /// `server_names` when given; else this machine's own names (`localhost`,
    /// `127.0.0.1`, `::1`) and the host of each `listen` address that is not a
    /// wildcard (`0.0.0.0`, `::`).
    pub fn new(configured: &[String], listen: &[String]) -> ServerNames {
        if !configured.is_empty() {
            return ServerNames {
                names: configured.iter().filter_map(|n| Name::parse(n).ok()).collect(),
                configured: true,
            };
        }
        let mut names = vec![
            Name::Dns("localhost".into()),
            Name::Ip(IpAddr::from([127, 0, 0, 1])),
            Name::Ip(IpAddr::from(std::net::Ipv6Addr::LOCALHOST)),
        ];
        for a in listen {
            let host = match a.rsplit_once(':') {
                Some((h, p)) if port_ok(p) => h,
                _ => a.as_str(),
            };
            let host = host
                .strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .unwrap_or(host);
            match Name::parse(host) {
                Ok(Name::Ip(ip)) if ip.is_unspecified() => {}
                Ok(n) if !names.contains(&n) => names.push(n),
                _ => {}
            }
        }
        ServerNames {
            names,
            configured: false,
        }
    }

    pub fn is_configured(&self) -> bool {
        self.configured
    }

    /// The name of `host` (a `Host` header) when it is one of these.
    pub fn allowed(&self, host: &str) -> Option<Name> {
        Name::of_host(host).filter(|n| self.names.contains(n))
    }

    /// The names, for a message: `localhost, 127.0.0.1, ::1`.
    pub fn list(&self) -> String {
        self.names
            .iter()
            .map(Name::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// What a client that used `host` is told: which names the console answers
    /// to, and what the organiser adds when `host` is one of this server's.
    pub fn refusal(&self, host: Option<&str>) -> String {
        let shown: String = host
            .unwrap_or("")
            .chars()
            .filter(|c| c.is_ascii_graphic())
            .take(64)
            .collect();
        let name = Name::of_host(host.unwrap_or(""))
            .map(|n| n.to_string())
            .unwrap_or_else(|| shown.clone());
        let whence = if self.configured {
            "[http] server_names"
        } else {
            "the defaults, [http] server_names being unset"
        };
        format!(
            "This server does not answer to the name `{shown}` here. It answers to {} ({whence}). \
             If `{name}` is a name of this server, add it to server_names in the [http] section \
             of the daemon's configuration and restart the daemon.\n",
            self.list()
        )
    }
}

/// `server_names` in the configuration: each entry a name or an address, and
/// at least one when given.
pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let list = <Vec<String> as serde::Deserialize>::deserialize(d)?;
    if list.is_empty() {
        return Err(serde::de::Error::custom(
            "server_names is empty: give the names and addresses arbiters reach the console by (or leave it out)",
        ));
    }
    for n in &list {
        Name::parse(n).map_err(serde::de::Error::custom)?;
    }
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_with_or_without_brackets_and_never_with_a_port() {
        assert_eq!(Name::parse("Hall.Example."), Ok(Name::Dns("hall.example".into())));
        assert_eq!(Name::parse("[::1]"), Name::parse("::1"));
        assert_eq!(Name::parse("192.168.1.10").unwrap().url_host(), "192.168.1.10");
        assert_eq!(Name::parse("::1").unwrap().url_host(), "[::1]");
        let e = Name::parse("hall.example:1982").unwrap_err();
        assert!(e.contains("without the port (`hall.example`)"), "{e}");
        assert!(Name::parse("hall example").is_err());
        assert!(Name::parse("").is_err());
        assert!(Name::parse("a..b").is_err());
    }

    #[test]
    fn a_host_header_matches_by_name_whatever_its_port() {
        let names = ServerNames::new(&["hall.example".into(), "192.168.1.10".into(), "::1".into()], &[]);
        assert!(names.is_configured());
        for ok in [
            "hall.example:1982",
            "HALL.example",
            "hall.example.:443",
            "192.168.1.10:1982",
            "[::1]:1982",
            "[::1]",
        ] {
            assert!(names.allowed(ok).is_some(), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:1982",
            "localhost:1982",
            "127.0.0.1",
            "hall.example:x",
            "[::1",
            "::1",
            "hall.example@evil",
            "",
        ] {
            assert!(names.allowed(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn without_server_names_the_machine_s_own_names_and_the_listen_hosts() {
        let names = ServerNames::new(
            &[],
            &[
                "0.0.0.0:1982".into(),
                "[::]:1982".into(),
                "192.168.1.20:1982".into(),
                "hall.local:1982".into(),
            ],
        );
        assert!(!names.is_configured());
        assert_eq!(
            names.list(),
            "localhost, 127.0.0.1, ::1, 192.168.1.20, hall.local"
        );
        assert!(names.allowed("0.0.0.0:1982").is_none());
        let said = names.refusal(Some("192.168.1.30:1982"));
        assert!(
            said.contains("add it to server_names") && said.contains("`192.168.1.30`"),
            "{said}"
        );
    }
}
