//! `ctl passwd USER [--file FILE]`: a line for the arbiters' file of the
//! console (`[http] arbiters`), `USER:$argon2id$...`, the password read from
//! the terminal (twice, not echoed) or, when standard input is not a terminal,
//! from its first line. With `--file`, written into the file itself (the
//! user's line added or replaced, the file closed to other users whatever the
//! umask: `arbiters::write_line`); without, printed. It needs no daemon.

use std::io::{BufRead, Write};
use std::path::Path;

use super::client::CtlError;

/// Reads one line from the terminal with echo off (restored however it ends).
fn read_hidden(prompt: &str) -> Result<String, CtlError> {
    let io = |e: std::io::Error| CtlError::Refused(format!("cannot read the password: {e}"));
    eprint!("{prompt}");
    let _ = std::io::stderr().flush();
    // SAFETY: termios is plain data that tcgetattr fills; fd 0 is standard input.
    let saved = unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        (libc::tcgetattr(0, &mut t) == 0).then_some(t)
    };
    if let Some(mut quiet) = saved {
        quiet.c_lflag &= !libc::ECHO;
        // SAFETY: as above, with a termios read from the same terminal.
        unsafe { libc::tcsetattr(0, libc::TCSANOW, &quiet) };
    }
    let mut line = String::new();
    let read = std::io::stdin().lock().read_line(&mut line);
    if let Some(t) = saved {
        // SAFETY: restores what tcgetattr gave.
        unsafe { libc::tcsetattr(0, libc::TCSANOW, &t) };
    }
    eprintln!();
    read.map_err(io)?;
    Ok(line.trim_end_matches(['\n', '\r']).to_string())
}

/// Prints the line for `user`, or writes it into `file`.
pub fn run(user: &str, file: Option<&Path>) -> Result<(), CtlError> {
    // SAFETY: isatty only looks at the descriptor.
    let terminal = unsafe { libc::isatty(0) } == 1;
    let password = if terminal {
        let first = read_hidden(&format!("password for {user}: "))?;
        let again = read_hidden("the same again: ")?;
        if first != again {
            return Err(CtlError::Usage(
                "the two passwords differ; nothing was made".into(),
            ));
        }
        first
    } else {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .map_err(|e| CtlError::Usage(format!("cannot read the password from standard input: {e}")))?;
        line.trim_end_matches(['\n', '\r']).to_string()
    };
    if password.chars().count() < 8 {
        return Err(CtlError::Usage(
            "the password is shorter than 8 characters: choose a longer one".into(),
        ));
    }
    let line = crate::arbiters::passwd_line(user, &password).map_err(CtlError::Usage)?;
    let Some(file) = file else {
        println!("{line}");
        return Ok(());
    };
    let w = crate::arbiters::write_line(file, &line).map_err(CtlError::Refused)?;
    let shown = file.display();
    let did = match (w.made, w.replaced) {
        (true, _) => format!("{shown} made with {user}'s line (mode {:04o})", w.mode),
        (false, true) => format!("{user}'s line replaced in {shown}"),
        (false, false) => format!("{user}'s line added to {shown}"),
    };
    eprintln!("{did}");
    if let Some(was) = w.closed_from {
        eprintln!(
            "{shown} could be read or changed by every user of this machine (mode {was:04o}): it is mode {:04o} now",
            w.mode
        );
    }
    if w.made {
        eprintln!(
            "the service reads it as the group eboard-bridge: `sudo chown root:eboard-bridge {shown}` if it is not that group's"
        );
    }
    Ok(())
}
