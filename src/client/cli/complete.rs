//! Shell completion, made from the same definitions as `--help` (clap_complete's dynamic
//! engine), so it never drifts from the commands:
//!
//! 1. `gatebot completions SHELL` prints a short script for bash, zsh, fish or
//!    PowerShell (the Debian package installs the first three in their system
//!    directories). It defines no words itself: at each Tab it runs
//!    `GATEBOT_COMPLETE=SHELL gatebot -- WORDS…`.
//! 2. [`complete_if_asked`], first thing in `main`, answers that call with the candidates
//!    for the word under the cursor and exits.
//! 3. `gatebot decide <Tab>` asks the daemon on the control socket (found as every
//!    command finds it: `--socket`, `--config` on the line or their variables, then the
//!    usual places) for the ids that wait (`GET /v1/pending`) and offers them; the
//!    word after an id offers the decisions. An unreachable daemon, or one that takes
//!    more than [`ASK_FOR`] to answer, gives no ids.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{CommandFactory, Parser, ValueEnum};
use clap_complete::env::{Bash, EnvCompleter, Fish, Powershell, Zsh};
use clap_complete::{CompleteEnv, CompletionCandidate};
use serde_json::Value;

use super::out::outln;
use super::{Cli, Command, EXIT_GO};
use crate::client::discover::{self, Places, Which};
use crate::client::Client;

/// The variable the scripts set to ask for completions (clap's default, `COMPLETE`, is
/// too common a name to take over).
const VAR: &str = "GATEBOT_COMPLETE";

/// How long `decide <Tab>` waits for the daemon before offering nothing.
pub const ASK_FOR: Duration = Duration::from_millis(300);

/// The shells `gatebot completions` writes a script for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
    Powershell,
}

/// `gatebot completions SHELL`: the script that hooks gatebot's completion into the shell.
pub(super) fn script(shell: Shell) -> Result<u8, String> {
    let completer: &dyn EnvCompleter = match shell {
        Shell::Bash => &Bash,
        Shell::Zsh => &Zsh,
        Shell::Fish => &Fish,
        Shell::Powershell => &Powershell,
    };
    let mut out = Vec::new();
    completer
        .write_registration(VAR, "gatebot", "gatebot", "gatebot", &mut out)
        .map_err(|e| e.to_string())?;
    outln!("{}", String::from_utf8_lossy(&out).trim_end());
    Ok(EXIT_GO)
}

/// When a completion script asks (`GATEBOT_COMPLETE` is set), prints the candidates
/// and exits; otherwise returns at once.
pub fn complete_if_asked() {
    CompleteEnv::with_factory(Cli::command)
        .var(VAR)
        .bin("gatebot")
        .completer("gatebot")
        .complete();
}

/// The words of `decide` (its ID and DECISION): the ids that wait, then the decisions.
pub(super) fn decide_words(current: &OsStr) -> Vec<CompletionCandidate> {
    let current = current.to_string_lossy();
    let before = words_before_cursor();
    let words: Vec<String> = if wants_decision(&before) {
        [
            "approve",
            "approve-always",
            "deny",
            "continue",
            "stop",
            "queue",
            "reject",
            "cancel",
            "retry",
        ]
        .map(String::from)
        .to_vec()
    } else {
        pending_ids(&before)
    };
    words
        .into_iter()
        .filter(|w| w.starts_with(current.as_ref()))
        .map(CompletionCandidate::new)
        .collect()
}

/// The command line's words before the one being completed, as the script passed them
/// (`gatebot -- gatebot decide …`): bash and zsh say which word is under the cursor
/// (`_CLAP_COMPLETE_INDEX`); fish and PowerShell pass the words up to it.
fn words_before_cursor() -> Vec<String> {
    let mut words: Vec<String> = std::env::args().skip_while(|a| a != "--").skip(1).collect();
    let at = std::env::var("_CLAP_COMPLETE_INDEX")
        .ok()
        .and_then(|i| i.parse::<usize>().ok())
        .unwrap_or(words.len().saturating_sub(1));
    words.truncate(at);
    words
}

/// Whether the word under the cursor is a decision: after `decide ID`, or in a batch
/// (`decide --agent A`).
fn wants_decision(before: &[String]) -> bool {
    if before
        .iter()
        .any(|w| w == "--agent" || w.starts_with("--agent="))
    {
        return true;
    }
    matches!(
        Cli::try_parse_from(before),
        Ok(Cli { command: Command::Decide { what, .. }, .. }) if what.len() == 1
    )
}

/// The short ids of what waits for an owner, from the daemon; none when it cannot be
/// reached within [`ASK_FOR`].
fn pending_ids(before: &[String]) -> Vec<String> {
    let flag = |long: &str, short: Option<&str>, var: &str| {
        let from_line = before.windows(2).rev().find_map(|w| {
            (w[0] == long || Some(w[0].as_str()) == short).then(|| PathBuf::from(&w[1]))
        });
        from_line.or_else(|| std::env::var_os(var).map(PathBuf::from))
    };
    let socket = flag("--socket", None, "GATEBOT_SOCKET");
    let config = flag("--config", Some("-c"), "GATEBOT_CONFIG");
    let Ok(found) = discover::socket(
        socket.as_deref(),
        config.as_deref(),
        Which::Control,
        &Places::from_env(),
    ) else {
        return Vec::new();
    };
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return Vec::new();
    };
    let client = Client::new(found.socket).with_timeout(ASK_FOR);
    let answer = runtime.block_on(async {
        tokio::time::timeout(ASK_FOR, client.get("/v1/pending?limit=1000")).await
    });
    match answer {
        Ok(Ok(res)) if res.status.is_success() => ids_in(&res.body),
        _ => Vec::new(),
    }
}

/// The short ids of the requests, check-ins and proposals of a `GET /v1/pending` answer.
fn ids_in(body: &Value) -> Vec<String> {
    ["requests", "check_ins", "proposals"]
        .iter()
        .filter_map(|key| body.get(key).and_then(Value::as_array))
        .flatten()
        .filter_map(|item| {
            item.get("short_id")
                .or_else(|| item.get("id"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split(' ').map(String::from).collect()
    }

    #[test]
    fn the_word_after_an_id_is_a_decision() {
        assert!(!wants_decision(&words("gatebot decide")));
        assert!(wants_decision(&words("gatebot decide k7m2")));
        assert!(wants_decision(&words("gatebot decide --agent mailer")));
        assert!(!wants_decision(&words("gatebot decide --reason because")));
    }

    #[test]
    fn ids_come_from_every_kind_that_waits() {
        let body = serde_json::json!({
            "requests": [{"id": "01J", "short_id": "k7m2"}],
            "check_ins": [{"short_id": "c3p0"}],
            "proposals": [{"id": "p9x1"}],
            "next": null,
        });
        assert_eq!(ids_in(&body), ["k7m2", "c3p0", "p9x1"]);
    }
}
