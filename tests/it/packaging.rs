//! What gatebot ships besides the daemon, tested as installed: `--version`, the shell
//! completions (in a real bash), the man pages (rendered by man and groff, which the
//! test needs: without them it prints one line saying it skipped;
//! `GATEBOT_PACKAGE_TESTS=require`, set by `.ci/run`, makes that a failure instead).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Once;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_gatebot");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const REQUIRE_VAR: &str = "GATEBOT_PACKAGE_TESTS";

/// True when every tool is on PATH; otherwise says once which are missing and returns
/// false (or fails, under `GATEBOT_PACKAGE_TESTS=require`).
fn have(tools: &[&str], what: &str) -> bool {
    let missing: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|t| {
            !Command::new("sh")
                .args(["-c", &format!("command -v {t}")])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
        .collect();
    if missing.is_empty() {
        return true;
    }
    let line = format!(
        "{what} skipped: {} not installed (apt-get install man-db groff-base)",
        missing.join(", ")
    );
    assert!(
        std::env::var(REQUIRE_VAR).as_deref() != Ok("require"),
        "{line}"
    );
    static SAID: Once = Once::new();
    SAID.call_once(|| eprintln!("{line}"));
    false
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let out = text(&run(Command::new(BIN).arg("--version")));
    let commit = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(ROOT)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| text(&o).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    // The binary may be a commit behind the checkout (built, then committed): the form
    // is what is pinned; the commit must be one git knows, or `unknown` without git.
    let re =
        regex::Regex::new(r"^gatebot \d+\.\d+\.\d+ \(rev ([0-9a-f]{4,40}|unknown)\)\n$").unwrap();
    let rev = re
        .captures(&out)
        .unwrap_or_else(|| panic!("{out:?}"))
        .get(1)
        .unwrap()
        .as_str();
    if commit != "unknown" && rev != "unknown" {
        run(Command::new("git")
            .args(["cat-file", "-e", &format!("{rev}^{{commit}}")])
            .current_dir(ROOT));
    }
}

/// Loads `gatebot completions bash` in a bash and completes `line` (the cursor at its
/// end) as the shell would at a Tab: the words it offers.
fn bash_complete(line: &str, env: &[(&str, &str)]) -> Vec<String> {
    let dir = Path::new(BIN).parent().unwrap();
    let script = r#"
        source <(gatebot completions bash)
        read -ra COMP_WORDS <<< "$LINE"
        [[ "$LINE" == *" " ]] && COMP_WORDS+=("")
        COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
        COMP_LINE="$LINE"; COMP_POINT=${#LINE}; COMP_TYPE=9
        fn=$(complete -p gatebot | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
        "$fn" gatebot "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
        printf '%s\n' "${COMPREPLY[@]}"
    "#;
    let mut cmd = Command::new("bash");
    cmd.args(["--norc", "-c", script])
        .env("PATH", format!("{}:/usr/bin:/bin", dir.display()))
        .env("LINE", line)
        .env_remove("GATEBOT_SOCKET")
        .env_remove("GATEBOT_CONFIG")
        .current_dir(std::env::temp_dir());
    for (k, v) in env {
        cmd.env(k, v);
    }
    text(&run(&mut cmd))
        .lines()
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

#[tokio::test]
async fn bash_completes_commands_and_the_ids_that_wait() {
    let line = |l: &str| l.to_string();
    assert_eq!(
        tokio::task::spawn_blocking(move || bash_complete(&line("gatebot dec"), &[]))
            .await
            .unwrap(),
        ["decide"]
    );

    let app = crate::helpers::spawn_app("").await;
    let (_, short) = app
        .submit_pending(serde_json::json!({"agent": "intern", "tool": "send_email", "args": {}}))
        .await;
    let control = app.path().join("gatebot-control.sock");
    let socket = control.display().to_string();
    let offered = tokio::task::spawn_blocking({
        let socket = socket.clone();
        move || bash_complete("gatebot decide ", &[("GATEBOT_SOCKET", &socket)])
    })
    .await
    .unwrap();
    assert!(offered.contains(&short), "{short} not in {offered:?}");
    let after_id = tokio::task::spawn_blocking({
        let socket = socket.clone();
        let short = short.clone();
        move || {
            bash_complete(
                &format!("gatebot decide {short} app"),
                &[("GATEBOT_SOCKET", &socket)],
            )
        }
    })
    .await
    .unwrap();
    assert_eq!(after_id, ["approve", "approve-always"]);

    // No daemon there: no ids, and at once.
    let t = Instant::now();
    let none = tokio::task::spawn_blocking(|| {
        bash_complete(
            "gatebot decide ",
            &[("GATEBOT_SOCKET", "/nonexistent/gatebot-control.sock")],
        )
    })
    .await
    .unwrap();
    assert!(none.iter().all(|w| w.starts_with('-')), "{none:?}");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    app.stop().await;
}

#[test]
fn zsh_fish_and_powershell_scripts_call_back_into_gatebot() {
    for (shell, marker) in [
        ("zsh", "#compdef gatebot"),
        (
            "fish",
            "complete --keep-order --exclusive --command gatebot",
        ),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let out = text(&run(Command::new(BIN).args(["completions", shell])));
        assert!(out.contains(marker), "{shell}: {out}");
        assert!(out.contains("GATEBOT_COMPLETE"), "{shell}: {out}");
    }
}

/// Renders a man page as lintian does; the warnings groff and man print.
fn man_warnings(page: &Path) -> String {
    let out = Command::new("man")
        .args(["--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z"])
        .arg(page)
        .env("LC_ALL", "C.UTF-8")
        .env("MANROFFSEQ", "")
        .env("MANWIDTH", "80")
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}: {:?}", page.display(), out);
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn every_man_page_renders_without_warnings() {
    if !have(&["man", "groff"], "man page tests") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    run(Command::new(BIN).args(["man", "--dir"]).arg(dir.path()));
    let mut pages: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    pages.sort();
    // gatebot(1) and one per command, nested ones too.
    for name in [
        "gatebot.1",
        "gatebot-decide.1",
        "gatebot-task-add.1",
        "gatebot-man.1",
    ] {
        assert!(pages.iter().any(|p| p.ends_with(name)), "{name}: {pages:?}");
    }
    let warnings: Vec<String> = pages
        .iter()
        .map(|p| (p, man_warnings(p)))
        .filter(|(_, w)| !w.trim().is_empty())
        .map(|(p, w)| format!("{}: {w}", p.display()))
        .collect();
    assert!(warnings.is_empty(), "{}", warnings.join("\n"));
    // The page says what --help says.
    let page = std::fs::read_to_string(dir.path().join("gatebot-decide.1")).unwrap();
    assert!(page.contains("approve\\-always"), "{page}");
}
