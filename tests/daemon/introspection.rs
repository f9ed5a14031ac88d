//! Introspection as the D-Bus tools read it (issue 49): the real `busctl` and
//! `gdbus` on every object of a daemon bridging two boards, no warning from
//! either, and each node's data listing its children by name only.

use super::*;

/// Runs `program args` (at most 30 s, off the runtime: the broker is in this
/// process); its exit status, standard output and standard error.
async fn tool(program: &str, args: Vec<String>) -> (std::process::ExitStatus, String, String) {
    let what = format!("{program} {}", args.join(" "));
    let path = common::find_tool(program).unwrap_or_else(|| panic!("{program} (checked first)"));
    let out = tokio::task::spawn_blocking(move || {
        let mut cmd = std::process::Command::new(path);
        cmd.args(&args)
            .env("SYSTEMD_PAGER", "cat")
            .env("SYSTEMD_COLORS", "0");
        common::output_within(&mut cmd, 30, &what)
    })
    .within(40, program)
    .await
    .unwrap();
    (
        out.status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `program args` as `tool` does, which must succeed and say no warning
/// or error (`complaints`); its standard output.
async fn clean_output(program: &str, args: Vec<String>) -> String {
    let what = format!("{program} {}", args.join(" "));
    let (status, out, err) = tool(program, args).await;
    assert!(status.success(), "{what}: {status:?} {err}");
    assert_eq!(
        complaints(&err, &out),
        Vec::<String>::new(),
        "{what}:\n{err}{out}"
    );
    out
}

/// The lines of a tool's output that are warnings or errors.
fn complaints(stderr: &str, stdout: &str) -> Vec<String> {
    stderr
        .lines()
        .chain(stdout.lines())
        .filter(|l| {
            let l = l.to_lowercase();
            l.contains("unexpected") || l.contains("warning") || l.contains("error") || l.contains("failed")
        })
        .map(str::to_string)
        .chain(
            stderr
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(str::to_string),
        )
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busctl_and_gdbus_read_every_object_without_a_warning() {
    if !need(&[Need::Tool("busctl", "systemd")]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let _b0 = emulate(standing(""), &d.join("board0"), 1.0);
    let _b1 = emulate_as(standing(""), &d.join("board1"), 1.0, "24680");
    let address = private_bus(d).await;
    let daemon = Daemon::start(
        vec![d.join("board0"), d.join("board1")],
        config(d),
        BusChoice::Address(address.clone()),
    )
    .within(30, "the daemon to start")
    .await
    .unwrap();
    wait_for("two boards", 10, || daemon.boards().len() == 2).await;
    let boards = ["/org/eboardbridge/board/board0", "/org/eboardbridge/board/board1"];
    let objects = [
        "/",
        "/org",
        ROOT_PATH,
        "/org/eboardbridge/board",
        boards[0],
        boards[1],
    ];
    let bus = format!("--address={address}");

    // The tree: every object, nothing said on the side.
    let out = clean_output(
        "busctl",
        vec![bus.clone(), "--no-pager".into(), "tree".into(), BUS_NAME.into()],
    )
    .await;
    let listed: Vec<&str> = out
        .lines()
        .filter_map(|l| l.find('/').map(|i| l[i..].trim()))
        .collect();
    for o in &objects[1..] {
        assert!(listed.contains(o), "busctl tree lists {o}: {out}");
    }

    // Each object, introspected by busctl: its interfaces, no warning.
    for o in objects {
        let out = clean_output(
            "busctl",
            vec![
                bus.clone(),
                "--no-pager".into(),
                "introspect".into(),
                BUS_NAME.into(),
                o.into(),
            ],
        )
        .await;
        assert!(out.contains("org.freedesktop.DBus.Introspectable"), "{o}: {out}");
        let board = boards.contains(&o);
        assert_eq!(out.contains(BOARD_INTERFACE), board, "{o}: {out}");
        assert_eq!(out.contains(".SetResult"), board, "{o}: {out}");
        assert_eq!(
            out.contains("org.freedesktop.DBus.ObjectManager"),
            o == ROOT_PATH,
            "{o}: {out}"
        );
    }

    // The data itself: a node's children by name only, each interface once.
    let client = bus_client(&address).await;
    for (o, children) in [
        ("/", vec!["org"]),
        ("/org", vec!["eboardbridge"]),
        (ROOT_PATH, vec!["board"]),
        ("/org/eboardbridge/board", vec!["board0", "board1"]),
        (boards[0], vec![]),
    ] {
        let proxy = zbus::fdo::IntrospectableProxy::builder(&client)
            .destination(BUS_NAME)
            .unwrap()
            .path(o)
            .unwrap()
            .build()
            .within(10, "an Introspectable proxy")
            .await
            .unwrap();
        let xml = proxy.introspect().within(10, "Introspect").await.unwrap();
        let nodes: Vec<&str> = xml
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("<node name="))
            .collect();
        let want: Vec<String> = children.iter().map(|c| format!("<node name=\"{c}\"/>")).collect();
        assert_eq!(nodes, want, "{o}: {xml}");
        assert_eq!(
            xml.matches("<interface name=\"org.freedesktop.DBus.Introspectable\"")
                .count(),
            1,
            "{o}: {xml}"
        );
    }

    // gdbus, recursively from the root, where it is installed.
    if common::find_tool("gdbus").is_some() {
        let out = clean_output(
            "gdbus",
            vec![
                "introspect".into(),
                "--address".into(),
                address.clone(),
                "--dest".into(),
                BUS_NAME.into(),
                "--object-path".into(),
                "/".into(),
                "--recurse".into(),
            ],
        )
        .await;
        for o in &objects[1..] {
            assert!(out.contains(&format!("node {o} {{")), "gdbus lists {o}: {out}");
        }
        assert_eq!(
            out.matches("interface org.eboardbridge.Board1 {").count(),
            2,
            "{out}"
        );
    } else {
        eprintln!("gdbus not found (apt-get install libglib2.0-bin): busctl alone checked");
    }
    daemon.shutdown().within(30, "the daemon to stop").await;
}
