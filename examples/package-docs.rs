//! The manual pages and the shell completions of the Debian package, made from the
//! command line the binary parses (`eboard_bridge::cli::Cli`), so that they never
//! drift from it:
//!
//!     cargo run --example package-docs -- target/package-docs 2026-11-25 [DEB_VERSION]
//!
//! writes `man/eboard-bridge.1` and one page per command (`eboard-bridge-run.1`,
//! ...), `completions/eboard-bridge.bash`, `_eboard-bridge` (zsh) and
//! `eboard-bridge.fish`, and `changelog.Debian`: the package's own changelog, one
//! entry for DEB_VERSION (default: the crate's version, revision 1) that points to
//! the project's CHANGELOG.md, shipped beside it. The date is the pages' and the
//! entry's (`.ci/package` gives the commit's, so that the same commit makes the
//! same files). `.ci/package` runs it before `cargo deb`, whose metadata
//! in `Cargo.toml` takes the files from there. A development program rather than a
//! command of the binary: the shipped daemon carries neither generator.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::Shell;

/// Where the package puts things, for the top page's FILES section.
const FILES: &[(&str, &str)] = &[
    (
        "/etc/eboard-bridge/config.toml",
        "The configuration (every option is there, commented out). SIGHUP (systemctl reload eboard-bridge) reads it again.",
    ),
    (
        "/var/lib/eboard-bridge/recordings/",
        "One sensor log per board: every byte both ways, and the journal the daemon resumes its games from.",
    ),
    (
        "/var/lib/eboard-bridge/live/",
        "The broadcast folder (round-N/game-M.pgn, round-N/games.pgn) unless the configuration sets output.",
    ),
    (
        "/usr/lib/systemd/system/eboard-bridge.service",
        "The service; /usr/share/doc/eboard-bridge/examples/network.conf is the drop-in for [http] and [mqtt].",
    ),
    (
        "/usr/share/doc/eboard-bridge/",
        "README.md, and docs/EVENT.md: running an event from install to broadcast.",
    ),
];

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let usage = "usage: cargo run --example package-docs -- OUT_DIR YYYY-MM-DD [DEB_VERSION]";
    let (Some(out), Some(date)) = (args.next().map(PathBuf::from), args.next()) else {
        eprintln!("{usage}");
        return ExitCode::from(2);
    };
    let date = date.to_string_lossy().into_owned();
    let Some(rfc2822) = rfc2822_day(&date) else {
        eprintln!("package-docs: `{date}` is not a date YYYY-MM-DD\n{usage}");
        return ExitCode::from(2);
    };
    let version = args
        .next()
        .map(|v| v.to_string_lossy().into_owned())
        .unwrap_or_else(|| format!("{}-1", env!("CARGO_PKG_VERSION")));
    let changelog = format!(
        "eboard-bridge ({version}) unstable; urgency=medium\n\n  \
         * eboard-bridge {}: what changed is in changelog.gz beside this file\n    \
         (the project's CHANGELOG.md).\n\n -- {MAINTAINER}  {rfc2822}\n",
        env!("CARGO_PKG_VERSION")
    );
    if let Err(e) =
        std::fs::create_dir_all(&out).and_then(|()| std::fs::write(out.join("changelog.Debian"), changelog))
    {
        eprintln!("package-docs: {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    match generate(&out, &date) {
        Ok(files) => {
            println!("{}", out.join("changelog.Debian").display());
            for f in files {
                println!("{}", f.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("package-docs: {}: {e}", out.display());
            ExitCode::FAILURE
        }
    }
}

/// The package's maintainer, as `[package.metadata.deb] maintainer` names it.
const MAINTAINER: &str = "eboard-bridge developers <eboard-bridge@example.org>";

/// `YYYY-MM-DD` as a changelog's date (RFC 2822, at midnight UTC).
fn rfc2822_day(date: &str) -> Option<String> {
    let mut parts = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (y, m, d) = (parts.next()??, parts.next()??, parts.next()??);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    // Days since 1970-01-01 (the civil-from-days inverse, proleptic Gregorian).
    let (y2, m2) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let doy = (153 * m2 + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    // 1970-01-01 was a Thursday.
    let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][days.rem_euclid(7) as usize];
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ][(m - 1) as usize];
    Some(format!("{weekday}, {d:02} {month} {y} 00:00:00 +0000"))
}

fn generate(out: &Path, date: &str) -> std::io::Result<Vec<PathBuf>> {
    let man = out.join("man");
    let completions = out.join("completions");
    std::fs::create_dir_all(&man)?;
    std::fs::create_dir_all(&completions)?;
    let mut written = Vec::new();

    // One page per command, named as man(1) finds them (`man eboard-bridge-run`).
    let cmd = eboard_bridge::cli::Cli::command().disable_help_subcommand(true);
    let name = cmd.get_name().to_string();
    let source = format!("{name} {}", env!("CARGO_PKG_VERSION"));
    let page = |c: clap::Command| {
        clap_mangen::Man::new(c)
            .date(date)
            .source(source.clone())
            .manual("eboard-bridge manual")
    };
    let mut built = cmd.clone();
    built.build();
    for sub in built.get_subcommands().filter(|s| !s.is_hide_set()) {
        written.push(page(sub.clone()).generate_to(&man)?);
    }
    // The top page: clap_mangen's sections, then where the package puts things.
    let top = page(built);
    let path = man.join(top.get_filename());
    let mut page = Vec::new();
    top.render(&mut page)?;
    writeln!(page, ".SH FILES")?;
    for (file, what) in FILES {
        writeln!(page, ".TP\n\\fI{file}\\fR\n{what}")?;
    }
    writeln!(page, ".SH \"SEE ALSO\"")?;
    let subs: Vec<String> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(|s| format!("\\fB{name}\\-{}\\fR(1)", s.get_name()))
        .collect();
    writeln!(
        page,
        "{}, \\fBsystemctl\\fR(1), \\fBbusctl\\fR(1)",
        subs.join(", ")
    )?;
    std::fs::write(&path, page)?;
    written.push(path);

    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        let mut cmd = eboard_bridge::cli::Cli::command();
        let path = clap_complete::generate_to(shell, &mut cmd, &name, &completions)?;
        if shell == Shell::Bash {
            let text = std::fs::read_to_string(&path)?;
            std::fs::write(&path, eboard_bridge::cli::mend_bash_completion(&text, &name))?;
        }
        written.push(path);
    }
    Ok(written)
}
