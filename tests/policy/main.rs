//! The D-Bus policy in `dbus/`, loaded by a real `dbus-daemon`: an unprivileged
//! caller can read a board's properties but cannot call `NewGame`; a member of the
//! group `eboard` (an arbiter) and root can.
//! Needs root (to own the name and to run callers as other users), `dbus-daemon`
//! and `dbus-send`, as in CI; without them each test says in one line what it
//! skips. The group `eboard` and a system user `eboard-arbiter` in it are created
//! when the machine lacks them (`groupadd`, `useradd`), as the README's install
//! section does for real arbiters, and the unit's user by `systemd-sysusers`; every
//! user and group a test made is removed again when it ends, passed or failed.
//! The two tests take turns (they make and remove the same names).

use crate::common;
mod ctl;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Need, Within, need, output_within};
use eboard_bridge::bus::{BOARD_INTERFACE, BUS_NAME};
use eboard_bridge::daemon::{BusChoice, Daemon, DaemonConfig};
use eboard_bridge::device::EmulatorConfig;

const NOBODY: u32 = 65534;

/// One test at a time: both make, use and remove the same users and groups.
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// What both tests need: root, a real broker and a client that can run as another
/// user.
const BROKER: [Need; 3] = [
    Need::Root,
    Need::Tool("dbus-daemon", "dbus-daemon"),
    Need::Tool("dbus-send", "dbus-bin"),
];

/// Whether a user (`passwd`) or a group (`group`) exists.
fn exists(database: &str, name: &str) -> bool {
    output_within(
        Command::new("getent").args([database, name]),
        10,
        &format!("getent {database} {name}"),
    )
    .status
    .success()
}

/// The users and groups a test is about to make, removed again (`userdel`,
/// `groupdel`) when the guard goes, however the test ends; those that existed
/// before it are left alone.
struct MadeHere {
    users: Vec<String>,
    groups: Vec<String>,
}

impl MadeHere {
    /// A guard for `users` and `groups`: it will remove those missing now.
    fn new(users: &[&str], groups: &[&str]) -> MadeHere {
        MadeHere {
            users: users
                .iter()
                .filter(|u| !exists("passwd", u))
                .map(|u| u.to_string())
                .collect(),
            groups: groups
                .iter()
                .filter(|g| !exists("group", g))
                .map(|g| g.to_string())
                .collect(),
        }
    }
}

impl Drop for MadeHere {
    fn drop(&mut self) {
        // Users first: a group cannot go while it is a user's primary group.
        let mut left = Vec::new();
        for (tool, database, names) in [
            ("userdel", "passwd", &self.users),
            ("groupdel", "group", &self.groups),
        ] {
            for name in names.iter().filter(|n| exists(database, n)) {
                let out = output_within(Command::new(tool).arg(name), 30, &format!("{tool} {name}"));
                if !out.status.success() {
                    left.push(format!(
                        "{tool} {name}: {}",
                        String::from_utf8_lossy(&out.stderr).trim()
                    ));
                }
            }
        }
        if !left.is_empty() && !std::thread::panicking() {
            panic!("could not remove what the test made: {}", left.join("; "));
        }
    }
}

/// `dbus-send` as root, or as `(uid, gid)`.
fn dbus_send(address: &str, user: Option<(u32, u32)>, args: &[&str]) -> (bool, String) {
    let mut cmd = Command::new("dbus-send");
    cmd.arg(format!("--bus={address}"))
        .arg("--print-reply")
        .args(args);
    if let Some((uid, gid)) = user {
        cmd.uid(uid).gid(gid);
    }
    let out = output_within(&mut cmd, 30, "dbus-send");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr),
    )
}

/// The uid and gid of `user` (None when there is no such user).
fn ids(user: &str) -> Option<(u32, u32)> {
    let id = |flag: &str| -> Option<u32> {
        let out = output_within(Command::new("id").arg(flag).arg(user), 10, "id");
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    };
    Some((id("-u")?, id("-g")?))
}

/// The uid and gid of a user in the group `eboard`, made if missing.
fn arbiter() -> (u32, u32) {
    let run = |cmd: &mut Command| {
        let out = output_within(cmd, 30, &format!("{cmd:?}"));
        assert!(
            out.status.success(),
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    if !exists("group", "eboard") {
        run(Command::new("groupadd").args(["--system", "eboard"]));
    }
    if !exists("passwd", "eboard-arbiter") {
        run(Command::new("useradd").args([
            "--system",
            "--no-create-home",
            "--shell",
            "/usr/sbin/nologin",
            "--gid",
            "eboard",
            "eboard-arbiter",
        ]));
    }
    ids("eboard-arbiter").expect("uid and gid of eboard-arbiter")
}

/// What a test of the policy holds: its turn (one such test at a time), the
/// arbiter's user and the group `eboard` made for it (removed when dropped), the
/// arbiter's uid and gid, and a system-style bus in `dir` with its address.
async fn arbiter_and_bus(
    dir: &Path,
) -> (
    tokio::sync::MutexGuard<'static, ()>,
    MadeHere,
    (u32, u32),
    Broker,
    String,
) {
    let turn = TURN.lock().within(600, "the other policy test to end").await;
    let made = MadeHere::new(&["eboard-arbiter"], &["eboard"]);
    // Before the bus starts: it resolves the policy's group name when it loads it.
    let arbiter = arbiter();
    let (bus, address) = system_bus(dir).await;
    (turn, made, arbiter, bus, address)
}

/// The daemon (state and output in `dir`, on the bus at `address`) bridging an
/// emulated board standing at the start position, once the board's game is on;
/// the emulator's task with it.
async fn bridged_at_the_start(dir: &Path, address: &str) -> (Daemon, tokio::task::JoinHandle<()>) {
    let log = eboard_bridge::log::parse_log(
        "# eboard-sensor-log 1\n0 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR\n",
        "start.esl",
    )
    .unwrap();
    let link = dir.join("board0");
    let play = common::emulated::emulate_with(log, &link, EmulatorConfig::default());
    let config = DaemonConfig::parse(
        &format!(
            "state = \"{}\"\noutput = \"{}\"\n",
            dir.join("state").display(),
            dir.join("live").display()
        ),
        "test.toml",
    )
    .unwrap();
    let daemon = Daemon::start(vec![link], config, BusChoice::Address(address.to_string()))
        .within(30, "the daemon to start")
        .await
        .unwrap();
    let snap = daemon.boards()[0].2.clone();
    common::wait_for("the board's game", 10, || snap.borrow().status == "playing").await;
    (daemon, play)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unprivileged_callers_read_but_cannot_change_a_game() {
    let needs = [
        &BROKER[..],
        &[Need::Tool("useradd", "passwd"), Need::Tool("groupadd", "passwd")],
    ]
    .concat();
    if !need(&needs) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (_turn, _made, (arbiter_uid, arbiter_gid), _bus, address) = arbiter_and_bus(dir.path()).await;

    let (daemon, play) = bridged_at_the_start(dir.path(), &address).await;
    let path = daemon.boards()[0].1.clone();

    let get = [
        &format!("--dest={BUS_NAME}"),
        path.as_str(),
        "org.freedesktop.DBus.Properties.Get",
        &format!("string:{BOARD_INTERFACE}"),
        "string:Status",
    ];
    let get: Vec<&str> = get.iter().map(|s| &**s).collect();
    let (ok, out) = dbus_send(&address, Some((NOBODY, NOBODY)), &get);
    assert!(ok && out.contains("\"playing\""), "nobody reads Status: {out}");

    let new_game = format!("{BOARD_INTERFACE}.NewGame");
    let call = [
        &format!("--dest={BUS_NAME}"),
        path.as_str(),
        new_game.as_str(),
        "string:",
    ];
    let call: Vec<&str> = call.iter().map(|s| &**s).collect();
    let (ok, out) = dbus_send(&address, Some((NOBODY, NOBODY)), &call);
    assert!(
        !ok && out.contains("AccessDenied"),
        "nobody must not start a game: {out}"
    );
    let (ok, out) = dbus_send(&address, Some((arbiter_uid, arbiter_gid)), &call);
    assert!(ok, "an arbiter (group eboard) may start a game: {out}");
    let (ok, out) = dbus_send(&address, None, &call);
    assert!(ok, "root may start a game: {out}");

    daemon.shutdown().within(30, "the daemon to stop").await;
    play.abort();
}

/// The users and groups the shipped sysusers.d file makes: `u NAME` is a user and
/// its group, `g NAME` a group.
fn sysusers_names() -> (Vec<String>, Vec<String>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("systemd/eboard-bridge.sysusers")).unwrap();
    let (mut users, mut groups) = (Vec::new(), Vec::new());
    for line in text.lines().filter(|l| !l.trim_start().starts_with('#')) {
        let mut words = line.split_whitespace();
        match (words.next(), words.next()) {
            (Some("u"), Some(name)) => {
                users.push(name.to_string());
                groups.push(name.to_string());
            }
            (Some("g"), Some(name)) => groups.push(name.to_string()),
            _ => {}
        }
    }
    (users, groups)
}

/// The user the systemd unit runs as (`User=`), made from the shipped sysusers.d
/// file by `systemd-sysusers`, as a package install does: (name, uid, gid).
fn unit_user() -> (String, u32, u32) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let unit = std::fs::read_to_string(root.join("systemd/eboard-bridge.service")).unwrap();
    let name = unit
        .lines()
        .find_map(|l| l.strip_prefix("User="))
        .expect("the unit names its User=")
        .trim()
        .to_string();
    let out = output_within(
        Command::new("systemd-sysusers").arg(root.join("systemd/eboard-bridge.sysusers")),
        30,
        "systemd-sysusers",
    );
    assert!(
        out.status.success(),
        "systemd-sysusers: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (uid, gid) =
        ids(&name).unwrap_or_else(|| panic!("the sysusers file does not make the unit's user {name}"));
    (name, uid, gid)
}

/// Packaging as installed: the daemon, run as the unit's user from the sysusers
/// file, owns its name on a system-style broker with the shipped policy; an
/// unprivileged user is refused every method of the board interface.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_as_the_units_user_owns_its_name_and_nobody_may_call_a_method() {
    let needs = [&BROKER[..], &[Need::Tool("systemd-sysusers", "systemd")]].concat();
    if !need(&needs) {
        return;
    }
    let _turn = TURN.lock().within(600, "the other policy test to end").await;
    let (users, groups) = sysusers_names();
    let users: Vec<&str> = users.iter().map(String::as_str).collect();
    let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
    let _made = MadeHere::new(&users, &groups);
    // The user must exist before the broker loads the policy that names it.
    let (user, uid, gid) = unit_user();
    let dir = tempfile::tempdir().unwrap();
    let (_bus, address) = system_bus(dir.path()).await;
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::os::unix::fs::chown(&state, Some(uid), Some(gid)).unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(
        &cfg,
        format!(
            "state = \"{}\"\noutput = \"{}\"\n",
            state.display(),
            state.join("live").display()
        ),
    )
    .unwrap();
    // The binary where the unit's user can reach it (a checkout under /root or a
    // private temporary folder is not), as an installed /usr/bin/eboard-bridge is.
    let exe = dir.path().join("eboard-bridge");
    std::fs::copy(env!("CARGO_BIN_EXE_eboard-bridge"), &exe).unwrap();
    std::fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let daemon = Broker(
        Command::new(&exe)
            .args([
                "run",
                "--bus",
                "system",
                "--device",
                "/dev/eboard-test-board0",
                "--config",
            ])
            .arg(&cfg)
            .env("DBUS_SYSTEM_BUS_ADDRESS", &address)
            .env_remove("INVOCATION_ID")
            .uid(uid)
            .gid(gid)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let path = "/org/eboardbridge/board/eboard_test_board0";
    let mut owner = String::new();
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while std::time::Instant::now() < until {
        let (ok, out) = dbus_send(
            &address,
            None,
            &[
                "--dest=org.freedesktop.DBus",
                "/org/freedesktop/DBus",
                "org.freedesktop.DBus.GetConnectionUnixUser",
                &format!("string:{BUS_NAME}"),
            ],
        );
        if ok {
            owner = out;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        owner.contains(&format!("uint32 {uid}")),
        "{BUS_NAME} is not owned by {user} (uid {uid}): {owner}"
    );
    // Every method of the interface, as introspected, is refused to nobody.
    let (ok, xml) = dbus_send(
        &address,
        Some((NOBODY, NOBODY)),
        &[
            &format!("--dest={BUS_NAME}"),
            path,
            "org.freedesktop.DBus.Introspectable.Introspect",
        ],
    );
    assert!(ok, "nobody may introspect: {xml}");
    let iface = xml
        .split(&format!("<interface name=\"{BOARD_INTERFACE}\">"))
        .nth(1)
        .and_then(|s| s.split("</interface>").next())
        .expect("the board interface");
    let methods: Vec<&str> = iface
        .split("<method name=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .collect();
    assert!(methods.len() >= 7, "{methods:?}");
    for m in &methods {
        let (ok, out) = dbus_send(
            &address,
            Some((NOBODY, NOBODY)),
            &[
                &format!("--dest={BUS_NAME}"),
                path,
                &format!("{BOARD_INTERFACE}.{m}"),
            ],
        );
        assert!(!ok && out.contains("AccessDenied"), "nobody called {m}: {out}");
    }
    // Root (an arbiter) may call them.
    let (ok, out) = dbus_send(
        &address,
        None,
        &[
            &format!("--dest={BUS_NAME}"),
            path,
            &format!("{BOARD_INTERFACE}.SetPlayers"),
            "string:A",
            "string:B",
        ],
    );
    assert!(ok, "root may name the players: {out}");
    drop(daemon);
}

/// A bus whose policy does not let the daemon own its name (as a system bus
/// without the policy file installed, or the daemon run as a user the policy does
/// not name): `run` says so, names the policy file to install, and does not blame
/// another daemon. Needs `dbus-daemon` only (a session-type bus of this user).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bus_that_refuses_the_name_is_reported_with_the_policy_file_to_install() {
    if !need(&[Need::Tool("dbus-daemon", "dbus-daemon")]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("bus");
    let policy = format!(
        r#"    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
    <deny own="{BUS_NAME}"/>
"#
    );
    let _bus = dbus_daemon(dir.path(), &socket, "session", &policy, "", Stdio::null()).await;
    let cfg = dir.path().join("config.toml");
    std::fs::write(
        &cfg,
        format!(
            "state = \"{0}/state\"\noutput = \"{0}/live\"\n",
            dir.path().display()
        ),
    )
    .unwrap();
    let nowhere = [std::path::PathBuf::from("/dev/nonexistent-board")];
    let address = format!("unix:path={}", socket.display());
    let out = output_within(
        common::process::run_command(&cfg, &nowhere, Some(&address)).env_remove("RUST_LOG"),
        30,
        "eboard-bridge run on a bus that refuses its name",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("does not let this user"), "{err}");
    assert!(err.contains(eboard_bridge::daemon::POLICY_FILE), "{err}");
    assert!(!err.contains("another eboard-bridge"), "{err}");
}

/// A system-bus-like broker (deny by default, as system.conf does) with the
/// project's policy file included as installed, listening in `dir`; its address.
/// `EB_POLICY_FILE` names another policy file: `.ci/package` gives the one the
/// Debian package installed.
async fn system_bus(dir: &Path) -> (Broker, String) {
    std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let socket = dir.join("system_bus_socket");
    let policy = std::env::var_os("EB_POLICY_FILE")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("dbus/org.eboardbridge.conf"));
    assert!(policy.is_file(), "no D-Bus policy file {}", policy.display());
    // A system-bus-like configuration (deny by default, as system.conf does) that
    // includes the project's policy file as installed.
    let default = r#"    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
"#;
    let include = format!("  <include>{}</include>\n", policy.display());
    let bus = dbus_daemon(dir, &socket, "system", default, &include, Stdio::inherit()).await;
    (bus, format!("unix:path={}", socket.display()))
}

/// A `dbus-daemon` of this `kind` (`session`, `system`) listening on `socket`,
/// its configuration (in `dir`) `default` as its default policy and `more` after
/// it; once it listens.
async fn dbus_daemon(
    dir: &Path,
    socket: &Path,
    kind: &str,
    default: &str,
    more: &str,
    stderr: Stdio,
) -> Broker {
    let conf = dir.join("bus.conf");
    std::fs::write(
        &conf,
        format!(
            r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>{kind}</type>
  <listen>unix:path={}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
{default}  </policy>
{more}</busconfig>
"#,
            socket.display()
        ),
    )
    .unwrap();
    let bus = Broker(
        Command::new("dbus-daemon")
            .arg(format!("--config-file={}", conf.display()))
            .arg("--nofork")
            .stderr(stderr)
            .spawn()
            .expect("dbus-daemon (package dbus-daemon)"),
    );
    common::wait_for("dbus-daemon to listen", 10, || socket.exists()).await;
    bus
}

/// The broker, stopped however the test ends (a failed assertion too).
struct Broker(std::process::Child);

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
