//! The packaging files name what the code names: bus name, paths, interface,
//! device folder, unit, group (checked against the constants in `src/`).

use eboard_bridge::bus::{BOARD_INTERFACE, BUS_NAME, CHANGING_METHODS};
use eboard_bridge::daemon::DEVICE_DIR;

fn read(rel: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).unwrap()
}

#[test]
fn dbus_policy_names_the_service_and_guards_the_interface() {
    let policy = read("dbus/org.eboardbridge.conf");
    assert!(policy.contains(&format!("own=\"{BUS_NAME}\"")));
    assert!(policy.contains(&format!("send_interface=\"{BOARD_INTERFACE}\"")));
    // The interface's changing methods are only reachable through the rule for the
    // group eboard (and root): the default context never allows the interface.
    let default = policy.split("<policy context=\"default\">").nth(1).unwrap();
    let default = default.split("</policy>").next().unwrap();
    assert!(!default.contains(BOARD_INTERFACE));
    for m in CHANGING_METHODS {
        assert!(!default.contains(m));
    }
    assert!(policy.contains("<policy group=\"eboard\">"));
}

/// The udev rules' decision for one device: whether it is bridged. A small reader
/// of the rule syntax the file uses (match `==`/`!=` with `*`, `?` and `|`
/// alternatives, `ENV{..}=`, `GOTO`, `LABEL`), since no udev with USB devices
/// runs here.
fn udev_bridges(rules: &str, attrs: &[(&str, &str)]) -> bool {
    fn glob(p: &[u8], s: &[u8]) -> bool {
        match (p.first(), s.first()) {
            (None, None) => true,
            (Some(b'*'), _) => glob(&p[1..], s) || (!s.is_empty() && glob(p, &s[1..])),
            (Some(b'?'), Some(_)) => glob(&p[1..], &s[1..]),
            (Some(a), Some(b)) if a == b => glob(&p[1..], &s[1..]),
            _ => false,
        }
    }
    let mut env: std::collections::HashMap<String, String> = Default::default();
    let lines: Vec<&str> = rules
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let mut i = 0;
    'rules: while i < lines.len() {
        let line = lines[i];
        i += 1;
        let mut actions = Vec::new();
        for part in line.split(", ") {
            let (key, op, value) = ["==", "!=", "+=", "="]
                .iter()
                .find_map(|op| part.split_once(op).map(|(k, v)| (k, *op, v.trim_matches('"'))))
                .unwrap_or_else(|| panic!("cannot read `{part}`"));
            let actual = if let Some(var) = key.strip_prefix("ENV{").and_then(|k| k.strip_suffix('}')) {
                env.get(var).cloned().unwrap_or_default()
            } else if key == "SUBSYSTEM" {
                "tty".to_string()
            } else {
                let attr = key.trim_start_matches("ATTRS{").trim_end_matches('}');
                attrs
                    .iter()
                    .find(|(k, _)| *k == attr)
                    .map(|(_, v)| v.to_string())
                    .unwrap_or_default()
            };
            match op {
                "==" | "!=" => {
                    let m = value
                        .split('|')
                        .any(|alt| glob(alt.as_bytes(), actual.as_bytes()));
                    if m != (op == "==") {
                        continue 'rules;
                    }
                }
                _ => actions.push((key, value)),
            }
        }
        for (key, value) in actions {
            if key == "GOTO" {
                let at = lines
                    .iter()
                    .position(|l| *l == format!("LABEL=\"{value}\""))
                    .unwrap_or_else(|| panic!("no label {value}"));
                i = at + 1;
            } else if let Some(var) = key.strip_prefix("ENV{").and_then(|k| k.strip_suffix('}')) {
                env.insert(var.to_string(), value.to_string());
            }
        }
    }
    env.get("SYSTEMD_WANTS")
        .is_some_and(|w| w.contains("eboard-bridge.service"))
}

/// Only DGT boards are bridged: an id that other devices share is not enough.
#[test]
fn udev_rules_take_dgt_boards_only() {
    let rules = read("udev/70-eboard-bridge.rules");
    let usb = |v: &'static str, p: &'static str, manufacturer: &'static str, product: &'static str| {
        vec![
            ("idVendor", v),
            ("idProduct", p),
            ("manufacturer", manufacturer),
            ("product", product),
        ]
    };
    for (what, attrs, bridged) in [
        (
            "a DGT USB board",
            usb("04d8", "000a", "Digital Game Technology", "DGT USB e-Board"),
            true,
        ),
        (
            "a DGT board naming only its product",
            usb("04d8", "000a", "", "DGT e-Board"),
            true,
        ),
        ("the Smart Board", usb("045b", "8111", "DGT", "Smart Board"), true),
        (
            "a DGT board behind FTDI",
            usb("0403", "6001", "FTDI", "DGT Serial e-Board"),
            true,
        ),
        (
            "another Microchip CDC device",
            usb(
                "04d8",
                "000a",
                "Microchip Technology Inc.",
                "CDC RS-232 Emulation Demo",
            ),
            false,
        ),
        (
            "a plain FTDI adapter",
            usb("0403", "6001", "FTDI", "FT232R USB UART"),
            false,
        ),
        (
            "an unknown id naming DGT",
            usb("1234", "5678", "DGT", "DGT"),
            false,
        ),
    ] {
        assert_eq!(udev_bridges(&rules, &attrs), bridged, "{what}");
    }
    // A local rule by serial number (as the file documents) takes a board whose
    // strings do not say DGT.
    let local = "SUBSYSTEM==\"tty\", ATTRS{idVendor}==\"04d8\", ATTRS{idProduct}==\"000a\", ATTRS{serial}==\"A1B2C3\", ENV{EBOARD_BRIDGE}=\"1\"\n";
    let mut attrs = usb("04d8", "000a", "", "");
    attrs.push(("serial", "A1B2C3"));
    assert!(udev_bridges(&(local.to_string() + &rules), &attrs));
}

#[test]
fn udev_rules_match_the_boards_and_the_daemon() {
    let rules = read("udev/70-eboard-bridge.rules");
    assert!(rules.contains("ATTRS{idVendor}==\"04d8\", ATTRS{idProduct}==\"000a\""));
    assert!(rules.contains("ENV{ID_MM_DEVICE_IGNORE}=\"1\""));
    let dir = DEVICE_DIR.strip_prefix("/dev/").unwrap();
    assert!(rules.contains(&format!("SYMLINK+=\"{dir}/")));
    assert!(rules.contains("ENV{SYSTEMD_WANTS}+=\"eboard-bridge.service\""));
    assert!(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("systemd/eboard-bridge.service")
            .exists()
    );
}

#[test]
fn systemd_unit_runs_the_daemon_on_the_system_bus_hardened() {
    let unit = read("systemd/eboard-bridge.service");
    assert!(unit.contains("ExecStart=/usr/bin/eboard-bridge run --bus system"));
    assert!(unit.contains("Type=notify"));
    for line in [
        "ProtectSystem=strict",
        "RestrictAddressFamilies=AF_UNIX",
        "PrivateNetwork=yes",
        "DevicePolicy=closed",
        "StateDirectory=eboard-bridge",
        "WatchdogSec=",
    ] {
        assert!(unit.contains(line), "{line}");
    }
    // The user the unit runs as may own the name.
    assert!(read("dbus/org.eboardbridge.conf").contains("<policy user=\"eboard-bridge\">"));
    assert!(unit.contains("User=eboard-bridge"));
    // A static user (sysusers.d), which the policy can name; not a dynamic one.
    assert!(!unit.contains("DynamicUser=yes"));
    assert!(read("systemd/eboard-bridge.sysusers").contains("u eboard-bridge "));
    assert!(unit.contains("ExecReload=/bin/kill -HUP $MAINPID"));
    // The drop-in for HTTP and MQTT undoes exactly the three network settings.
    let net = read("systemd/network.conf");
    let settings: Vec<&str> = net
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains('='))
        .collect();
    assert_eq!(
        settings,
        [
            "PrivateNetwork=no",
            "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6",
            "IPAddressDeny="
        ]
    );
    assert!(net.contains("[Service]"));
}

/// The field names a derived `Deserialize` struct accepts (as serde names them):
/// the derive hands them to `deserialize_struct`, and this deserializer stops there.
fn serde_fields<'de, T: serde::Deserialize<'de>>() -> Vec<&'static str> {
    struct Lister(std::rc::Rc<std::cell::Cell<&'static [&'static str]>>);
    #[derive(Debug)]
    struct Stop;
    impl std::fmt::Display for Stop {
        fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("not a struct")
        }
    }
    impl std::error::Error for Stop {}
    impl serde::de::Error for Stop {
        fn custom<M: std::fmt::Display>(_: M) -> Self {
            Stop
        }
    }
    impl<'de> serde::Deserializer<'de> for Lister {
        type Error = Stop;
        fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
            Err(Stop)
        }
        fn deserialize_struct<V: serde::de::Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Stop> {
            self.0.set(fields);
            Err(Stop)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map enum identifier ignored_any
        }
    }
    let fields = std::rc::Rc::new(std::cell::Cell::new(&[][..]));
    let _ = T::deserialize(Lister(fields.clone()));
    let fields = fields.get().to_vec();
    assert!(
        !fields.is_empty(),
        "{} is not a struct",
        std::any::type_name::<T>()
    );
    fields
}

/// The package's default configuration (`/etc/eboard-bridge/config.toml`): as
/// shipped it parses to the defaults; with every `#key = value` and `#[table]` line
/// uncommented it still parses with the daemon's parser (no unknown or misspelt
/// key), names every option the parser knows, section by section, and the values
/// it calls defaults are the parser's defaults.
#[test]
fn the_packaged_config_names_every_option_and_parses() {
    use eboard_bridge::daemon::config::{Board, ClockConfig, DaemonConfig, Rules};
    let shipped = read("packaging/config.toml");
    let config = DaemonConfig::parse(&shipped, "packaging/config.toml").unwrap();
    assert_eq!(
        config,
        DaemonConfig::default(),
        "as shipped, every option is commented out"
    );

    let uncommented: String = shipped
        .lines()
        .map(|l| match l.strip_prefix('#') {
            Some(rest) if rest.starts_with(|c: char| c.is_ascii_lowercase() || c == '[') => rest,
            _ => l,
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let full =
        DaemonConfig::parse(&uncommented, "config.toml (uncommented)").unwrap_or_else(|e| panic!("{e}"));

    // Each table's keys, from the uncommented text.
    let mut keys: std::collections::HashMap<String, Vec<String>> = Default::default();
    let mut table = String::new();
    for line in uncommented
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        if let Some(t) = line.strip_prefix('[') {
            table = t.trim_matches(['[', ']']).to_string();
        } else if let Some((key, _)) = line.split_once(" = ") {
            keys.entry(table.clone()).or_default().push(key.to_string());
        }
    }
    for (table, fields) in [
        ("", serde_fields::<DaemonConfig>()),
        ("rules", serde_fields::<Rules>()),
        ("clock", serde_fields::<ClockConfig>()),
        ("http", serde_fields::<eboard_bridge::net::HttpConfig>()),
        ("mqtt", serde_fields::<eboard_bridge::mqtt::MqttConfig>()),
        ("lichess", serde_fields::<eboard_bridge::lichess::LichessConfig>()),
        (
            "broadcast",
            serde_fields::<eboard_bridge::daemon::delay::BroadcastConfig>(),
        ),
        ("board", serde_fields::<Board>()),
    ] {
        let have = keys.get(table).cloned().unwrap_or_default();
        for field in fields {
            // Top-level fields that are tables have their own section.
            let is_table = table.is_empty()
                && ["rules", "clock", "http", "mqtt", "lichess", "broadcast", "board"].contains(&field);
            assert!(
                is_table || have.iter().any(|k| k == field),
                "packaging/config.toml has no `{field}` in [{table}]"
            );
        }
    }

    // The values the file calls defaults are the parser's.
    let default = DaemonConfig::default();
    assert_eq!(full.rules, default.rules);
    assert_eq!(
        (
            full.clock.white,
            full.clock.flag,
            full.clock.mode,
            full.clock.show_moves
        ),
        (
            default.clock.white,
            default.clock.flag,
            default.clock.mode,
            default.clock.show_moves
        )
    );
    assert_eq!(full.device_dir(), default.device_dir());
    assert_eq!(
        full.state.as_deref(),
        Some(std::path::Path::new("/var/lib/eboard-bridge"))
    );
    assert_eq!(
        full.output_dir(),
        std::path::Path::new("/var/lib/eboard-bridge/live")
    );
    let mut http = full.http.expect("[http]");
    // The console's files are examples (no default): where the docs put them.
    assert_eq!(
        (http.arbiters.take(), http.tls_cert.take(), http.tls_key.take()),
        (
            Some("/etc/eboard-bridge/arbiters".into()),
            Some("/etc/eboard-bridge/console.crt".into()),
            Some("/etc/eboard-bridge/console.key".into())
        )
    );
    assert_eq!(
        (
            std::mem::take(&mut http.server_names),
            http.redirect_listen.take()
        ),
        (
            vec!["hall-laptop.local".to_string(), "192.168.1.20".to_string()],
            Some(eboard_bridge::net::Listen::One("0.0.0.0:80".into()))
        )
    );
    let http_default = eboard_bridge::net::HttpConfig::on("127.0.0.1:1982");
    assert_eq!(http, http_default);
    let mqtt = full.mqtt.expect("[mqtt]");
    assert_eq!(
        (mqtt.qos, mqtt.commands, mqtt.queue_limit),
        (1, false, eboard_bridge::mqtt::config::DEFAULT_QUEUE_LIMIT)
    );
    let lichess = full.lichess.expect("[lichess]");
    assert_eq!(
        (lichess.url.to_string(), lichess.max_per_second, lichess.max_games),
        (
            eboard_bridge::lichess::config::DEFAULT_URL.to_string(),
            eboard_bridge::lichess::config::DEFAULT_MAX_PER_SECOND,
            eboard_bridge::lichess::config::DEFAULT_MAX_GAMES
        )
    );
    assert_eq!(full.boards.len(), 1);
}

/// The game `.ci/upgrade-test` plays while it upgrades the package: the Opera
/// Game, whole (it replays to its moves and ends in mate), with a think of more
/// than 30 s after ply 10, when the upgrade runs.
#[test]
fn the_upgrade_tests_game_is_whole_and_pauses_after_ply_ten() {
    let rel = "tests/fixtures/upgrade/opera_game.esl";
    let text = read(rel);
    let expected: Vec<&str> = text
        .lines()
        .find_map(|l| l.strip_prefix("# expect-moves: "))
        .expect("an expect-moves line")
        .split_whitespace()
        .collect();
    assert_eq!(expected.len(), 33);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
        .args(["replay", "--format", "uci"])
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let played: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    assert_eq!(played, expected);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
        .args(["replay", "--format", "pgn"])
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel))
        .output()
        .unwrap();
    let pgn = String::from_utf8_lossy(&out.stdout);
    assert!(pgn.contains("[Result \"1-0\"]") && pgn.contains("Rd8#"), "{pgn}");

    let log = eboard_bridge::log::parse_log(&text, rel).unwrap();
    let records = &log.records;
    let tenth_press = records
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r.kind, eboard_bridge::log::RecordKind::Press(_)))
        .nth(9)
        .map(|(i, _)| i)
        .expect("ten presses");
    let pause = records[tenth_press + 1].time.micros() - records[tenth_press].time.micros();
    assert!(pause > 30_000_000, "the think after ply 10 is {pause} µs");
}

/// lintian (issue 49): the package ships its overrides, each with the comment
/// that justifies it; the words `spelling-error-in-binary` is told to pass are
/// in no text of the program (they are machine-code bytes, see the file); the
/// release build of `.ci/package` fortifies the C part (mimalloc), whatever
/// `hardening-no-fortify-functions`, which counts Rust's calls, says.
#[test]
fn lintian_overrides_are_shipped_justified_and_hide_no_typo() {
    let manifest = read("Cargo.toml");
    assert!(
        manifest.contains(
            r#"["packaging/lintian-overrides", "usr/share/lintian/overrides/eboard-bridge", "644"]"#
        ),
        "the overrides are an asset of the package"
    );
    let overrides = read("packaging/lintian-overrides");
    let (mut words, mut fortify) = (Vec::new(), false);
    let mut justified = false;
    for line in overrides.lines() {
        if line.starts_with('#') {
            justified = line.len() > 2;
            continue;
        }
        if line.trim().is_empty() {
            justified = false;
            continue;
        }
        let rest = line
            .strip_prefix("eboard-bridge: ")
            .unwrap_or_else(|| panic!("`{line}` names the package"));
        assert!(justified, "`{line}` follows its justification");
        let parts: Vec<&str> = rest.split_whitespace().collect();
        match parts[..] {
            // One word each, whatever lintian's correction and pointer.
            ["spelling-error-in-binary", word, "*"] => words.push(word.to_lowercase()),
            ["hardening-no-fortify-functions", "[usr/bin/eboard-bridge]"] => fortify = true,
            _ => panic!("{line}: not one of the overrides meant"),
        }
    }
    assert_eq!(words, ["ment", "wth", "whith"]);
    assert!(fortify);
    // Every source file of the program: none has the words as a word.
    fn sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                sources(&p, out);
            } else if p
                .extension()
                .is_some_and(|x| x == "rs" || x == "html" || x == "js" || x == "css")
            {
                out.push(p);
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    sources(&root.join("crates"), &mut files);
    sources(&root.join("assets"), &mut files);
    assert!(files.len() > 50, "{} files", files.len());
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_default().to_lowercase();
        for w in text.split(|c: char| !c.is_ascii_alphanumeric()) {
            assert!(!words.iter().any(|x| x == w), "{}: `{w}`", f.display());
        }
    }
    let package = read(".ci/package");
    let build = package
        .lines()
        .find(|l| l.contains("cargo build --release"))
        .unwrap();
    assert!(
        build.contains("-D_FORTIFY_SOURCE=2") && build.starts_with("CFLAGS="),
        "{build}"
    );
}

/// `cargo tree`'s packages with the features each is built with: those of
/// `cargo build` (normal and build dependencies), or with the dev-dependencies
/// too, those of `cargo test`.
fn built_with(dev: bool) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let edges = if dev { "normal,build,dev" } else { "normal,build" };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut child = std::process::Command::new(cargo)
        .args([
            "tree", "--locked", "--quiet", "--target", "all", "--prefix", "none",
        ])
        .args(["--edges", edges, "--format", "{p} [{f}]"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("cargo tree");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > until {
            let _ = child.kill();
            panic!("cargo tree did not finish in 120 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut packages = std::collections::BTreeMap::<String, std::collections::BTreeSet<String>>::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((package, features)) = l.trim_end_matches(" (*)").split_once(" [") else {
            continue;
        };
        let package = package.split(" (").next().unwrap_or(package).to_string();
        packages.entry(package).or_default().extend(
            features
                .trim_end_matches(']')
                .split(',')
                .filter(|f| !f.is_empty())
                .map(String::from),
        );
    }
    packages
}

/// One build serves `cargo build` and `cargo test`: every package the daemon
/// builds has the same features in both, so `cargo run` after `cargo test`
/// compiles nothing (issue 59: a test-only feature of eboard-core, and
/// features the tests' crates turn on in shared dependencies, made two builds
/// of both our crates).
#[test]
fn cargo_build_and_cargo_test_build_each_crate_once() {
    let build = built_with(false);
    let test = built_with(true);
    assert!(build.contains_key("eboard-core v0.1.0"), "{build:?}");
    let differ: Vec<String> = build
        .iter()
        .filter(|(p, f)| test.get(*p).is_some_and(|t| t != *f))
        .map(|(p, f)| format!("{p}: {f:?} in cargo build, {:?} in cargo test", test[p]))
        .collect();
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
