//! Connecting to the broker: the options, TLS, and a first probe.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use super::{Calls, Link, MqttConfig, MqttError, Service, config};
use rumqttc::v5::mqttbytes::v5::{ConnectReturnCode, LastWill, Packet};
use rumqttc::v5::{AsyncClient, ConnectionError, Event, MqttOptions};
use rumqttc::{TlsConfiguration, Transport};

/// The rustls configuration: the CA file's roots (else the system's), and the
/// client certificate when one is configured and `with_cert`.
pub(super) fn tls_config(cfg: &MqttConfig, with_cert: bool) -> Result<rustls::ClientConfig, MqttError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let err = |what: &std::path::Path, e: &dyn std::fmt::Display| {
        MqttError::Tls(format!("{}: {e}", what.display()))
    };
    let mut roots = rustls::RootCertStore::empty();
    match &cfg.ca_file {
        Some(ca) => {
            for cert in CertificateDer::pem_file_iter(ca).map_err(|e| err(ca, &e))? {
                let cert = cert.map_err(|e| err(ca, &e))?;
                roots.add(cert).map_err(|e| err(ca, &e))?;
            }
            if roots.is_empty() {
                return Err(MqttError::Tls(format!("{}: no certificate in it", ca.display())));
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            for cert in found.certs {
                let _ = roots.add(cert);
            }
            if roots.is_empty() {
                return Err(MqttError::Tls(
                    "no CA certificates on this system: set ca_file to the broker's CA".into(),
                ));
            }
        }
    }
    let builder =
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| MqttError::Tls(e.to_string()))?
            .with_root_certificates(roots);
    match (&cfg.cert_file, &cfg.key_file, with_cert) {
        (Some(cert), Some(key), true) => {
            let chain = CertificateDer::pem_file_iter(cert)
                .map_err(|e| err(cert, &e))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| err(cert, &e))?;
            let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| err(key, &e))?;
            builder
                .with_client_auth_cert(chain, key_der)
                .map_err(|e| MqttError::Tls(format!("{} and {}: {e}", cert.display(), key.display())))
        }
        _ => Ok(builder.with_no_client_auth()),
    }
}

impl Service {
    pub(super) fn options(&self, client_id: String, tls: Option<&Arc<rustls::ClientConfig>>) -> MqttOptions {
        let mut o = MqttOptions::new(client_id, self.cfg.broker.host.clone(), self.cfg.broker.port);
        o.set_keep_alive(Duration::from_secs(15));
        o.set_clean_start(true);
        o.set_connection_timeout(5);
        if let Some(t) = tls {
            o.set_transport(Transport::Tls(TlsConfiguration::Rustls(t.clone())));
        }
        o
    }

    /// A new connection (made by the first poll), with the last will and the
    /// credentials; commands are checked against the broker first.
    pub(super) async fn connect(&mut self) -> Result<Link, String> {
        let mut o = self.options(self.cfg.client_id(), self.tls.as_ref());
        o.set_last_will(LastWill::new(
            self.status_topic(),
            "offline",
            self.qos,
            true,
            None,
        ));
        if let Some(path) = &self.cfg.credentials_file {
            let (user, password) = config::read_credentials(path)?;
            o.set_credentials(user, password);
        }
        if self.cfg.commands {
            self.calls = self.probe().await;
            if let Calls::Refused(why) = &self.calls {
                tracing::warn!("MQTT: arbiter calls are refused: {why}");
            }
        }
        let (client, events) = AsyncClient::new(o, 1024);
        Ok(Link {
            client,
            events,
            connected: false,
            inflight: VecDeque::new(),
        })
    }

    /// Connects without credentials (nor client certificate): calls are taken only
    /// when the broker refuses that, i.e. when every caller it lets publish is one
    /// it authenticated.
    pub(super) async fn probe(&self) -> Calls {
        let o = self.options(
            format!("{}-probe", self.cfg.client_id()),
            self.tls_anonymous.as_ref(),
        );
        let (client, mut events) = AsyncClient::new(o, 4);
        let outcome = tokio::time::timeout(Duration::from_secs(6), async {
            loop {
                match events.poll().await {
                    Ok(Event::Incoming(Packet::ConnAck(_))) => return Ok(()),
                    Ok(_) => {}
                    Err(e) => return Err(e),
                }
            }
        })
        .await;
        let calls = match outcome {
            Ok(Ok(())) => Calls::Refused(format!(
                "{} accepts clients without credentials, so a caller may not be one it authenticated (set allow_anonymous false)",
                self.cfg.broker
            )),
            Ok(Err(ConnectionError::ConnectionRefused(
                ConnectReturnCode::NotAuthorized | ConnectReturnCode::BadUserNamePassword,
            ))) => Calls::Allowed,
            // A TLS broker that wants a client certificate ends the handshake.
            Ok(Err(ConnectionError::Tls(_))) if self.cfg.broker.tls => Calls::Allowed,
            Ok(Err(e)) => Calls::Refused(format!(
                "cannot tell whether {} refuses anonymous clients: {e}",
                self.cfg.broker
            )),
            Err(_) => Calls::Refused(format!(
                "cannot tell whether {} refuses anonymous clients: no answer in 6 s",
                self.cfg.broker
            )),
        };
        let _ = client.try_disconnect();
        let _ = tokio::time::timeout(Duration::from_millis(500), async {
            while events.poll().await.is_ok() {}
        })
        .await;
        calls
    }
}
