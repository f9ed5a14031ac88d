//! MQTT over TLS with a client certificate.

use super::*;

fn openssl(dir: &Path, args: &[&str]) {
    let out = output_within(
        Command::new("openssl").args(args).current_dir(dir),
        60,
        &format!("openssl {}", args.first().unwrap_or(&"")),
    );
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA, and a certificate it signed for `name` (key `name.key`, `name.pem`).
fn certificate(dir: &Path, name: &str, server: bool) {
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.csr"),
            "-subj",
            &format!("/CN={name}"),
        ],
    );
    let ext = dir.join(format!("{name}.ext"));
    std::fs::write(
        &ext,
        if server {
            "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
        } else {
            "extendedKeyUsage=clientAuth\n"
        },
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &format!("{name}.csr"),
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-out",
            &format!("{name}.pem"),
            "-extfile",
            &format!("{name}.ext"),
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_tls_with_a_client_certificate_at_qos_2() {
    if !need(&[
        Need::Tool("mosquitto", "mosquitto"),
        Need::Tool("openssl", "openssl"),
    ]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    openssl(
        d,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=eboard test CA",
        ],
    );
    certificate(d, "broker", true);
    certificate(d, "eboard-bridge", false);
    let port = free_port();
    let plain = free_port();
    // TLS for the daemon (its certificate is its identity); a plain listener on
    // loopback for this test's reader.
    let conf = format!(
        "per_listener_settings true\nlistener 1883\nallow_anonymous true\nlistener {port} 127.0.0.1\nallow_anonymous false\ncafile {0}/ca.pem\ncertfile {0}/broker.pem\nkeyfile {0}/broker.key\nrequire_certificate true\nuse_identity_as_username true\n",
        d.display()
    );
    let _broker = Broker::start(d, "tls", &conf, plain).await;
    let room = Subscriber::start(plain, "viewer", "reader", "eboard/#").await;
    let g = game("games/molinari-bordais-1979.pgn");
    let link = d.join("board-a");
    let _emulator = emulate(game_log(&g.start, &g.moves, 6, 600_000), &link, "1004");
    let text = format!(
        "state = \"{0}/state\"\noutput = \"{0}/live\"\n[mqtt]\nbroker = \"mqtts://127.0.0.1:{port}\"\nprefix = \"eboard/tls\"\nqos = 2\nca_file = \"{0}/ca.pem\"\ncert_file = \"{0}/eboard-bridge.pem\"\nkey_file = \"{0}/eboard-bridge.key\"\n",
        d.display()
    );
    let daemon = Daemon::start(
        vec![link],
        DaemonConfig::parse(&text, "tls.toml").unwrap(),
        BusChoice::None,
    )
    .within(30, "the daemon to start")
    .await
    .unwrap();
    let expected = sans(&g.start, &g.moves);
    wait_for("every move over TLS", 30, || {
        room.moves("eboard/tls/boards/board_a/events") == expected
    })
    .await;
    assert_eq!(room.last("eboard/tls/status").unwrap().payload, "online");
    daemon.shutdown().within(30, "the daemon to stop").await;
    // Every QoS 2 exchange completed: the broker has every event, none waits.
    let last = room.in_order("eboard/tls/boards/board_a/events").len();
    let acked = std::fs::read_to_string(d.join("state/mqtt/board_a.acked")).unwrap();
    assert_eq!(acked.trim(), last.to_string());
    room.stop();
}
