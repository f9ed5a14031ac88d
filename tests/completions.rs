//! The shell completions the Debian package installs, made as the package's
//! generator makes them, and run as each shell runs them: bash with `COMP_WORDS` as it sets them on a TAB, zsh and
//! fish read without running (`zsh -n`, `fish --no-execute`).

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{Need, need};

/// The completions the package ships, made as its generator makes them
/// (`examples/package-docs.rs`: clap_complete, the bash script mended by
/// `cli::mend_bash_completion`), in a fresh folder.
fn generated() -> tempfile::TempDir {
    use clap::CommandFactory;
    use clap_complete::Shell;
    let out = tempfile::tempdir().unwrap();
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        let mut cmd = eboard_bridge::cli::Cli::command();
        let path = clap_complete::generate_to(shell, &mut cmd, "eboard-bridge", out.path()).unwrap();
        if shell == Shell::Bash {
            let text = std::fs::read_to_string(&path).unwrap();
            std::fs::write(
                &path,
                eboard_bridge::cli::mend_bash_completion(&text, "eboard-bridge"),
            )
            .unwrap();
        }
    }
    out
}

/// The words bash offers after `words` (the last one being completed), with the
/// package's script loaded as bash-completion loads it.
fn bash_offers(script: &Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cword = words.len() - 1;
    let program = format!(
        "source '{}'\nCOMP_WORDS=({})\nCOMP_CWORD={cword}\n_eboard__bridge eboard-bridge '{}' '{}'\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        script.display(),
        quoted.join(" "),
        words[cword],
        words[cword - 1],
    );
    let out = Command::new("bash").arg("-c").arg(program).output().unwrap();
    assert!(
        out.status.success(),
        "bash: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// `eboard-bridge ctl <TAB>` offers ctl's commands and `run --<TAB>` run's
/// options; before, only the first word completed (issue 49: the script's `case`
/// labels were named `eboard__subcmd__bridge__...`, which `cmd` never is).
#[test]
fn bash_completes_ctl_commands_and_run_options() {
    let out = generated();
    let script = out.path().join("eboard-bridge.bash");
    let first = bash_offers(&script, &["eboard-bridge", ""]);
    for word in ["run", "ctl", "replay", "demo"] {
        assert!(first.contains(&word.to_string()), "{word} not in {first:?}");
    }
    let ctl = bash_offers(&script, &["eboard-bridge", "ctl", ""]);
    for word in ["boards", "result", "players", "watch", "add-time", "--bus"] {
        assert!(ctl.contains(&word.to_string()), "ctl: {word} not in {ctl:?}");
    }
    let run = bash_offers(&script, &["eboard-bridge", "run", "--"]);
    for word in ["--device", "--config"] {
        assert!(run.contains(&word.to_string()), "run: {word} not in {run:?}");
    }
    assert!(
        run.iter().all(|w| w.starts_with("--")),
        "run --: only options: {run:?}"
    );
    // A third level: a ctl command's own options.
    let result = bash_offers(&script, &["eboard-bridge", "ctl", "boards", "--"]);
    assert!(
        result.contains(&"--json".to_string()),
        "ctl boards --: {result:?}"
    );
}

/// The zsh and fish completions parse in their shells.
#[test]
fn zsh_and_fish_completions_parse() {
    if !need(&[Need::Tool("zsh", "zsh"), Need::Tool("fish", "fish")]) {
        return;
    }
    let out = generated();
    let dir = out.path();
    for (shell, check, file) in [
        ("zsh", "-n", "_eboard-bridge"),
        ("fish", "--no-execute", "eboard-bridge.fish"),
    ] {
        let parsed = Command::new(shell)
            .arg(check)
            .arg(dir.join(file))
            .output()
            .unwrap();
        assert!(
            parsed.status.success() && parsed.stderr.is_empty(),
            "{shell} {check}: {}",
            String::from_utf8_lossy(&parsed.stderr)
        );
    }
}
