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
}
