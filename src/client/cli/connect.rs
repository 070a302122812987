//! `gatebot connect telegram [--write]`: finds the owner's Telegram user id and chat by
//! waiting for them to send `/start CODE` to the bot (the link it prints does that in
//! one tap), then prints the `approvers` and `chats` lines for `[telegram]`, or writes
//! them into the config with `--write`.
//!
//! The code comes from this terminal, so only who sees it can become an approver: a
//! stranger's `/start` (a bot's username is easy to find) is ignored and named. The
//! bot's token and API URL are read from the config's `[telegram]` table without the
//! rest of it, so a table with no approvers yet (as `gatebot init` writes it) works.
//! While `gatebot run` polls the same bot, Telegram gives its updates to one of the two
//! only: the command says so and stops.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use rand::Rng;
use serde::Deserialize;
use teloxide::payloads::GetUpdatesSetters;
use teloxide::types::{AllowedUpdate, ChatId, Update, UpdateKind};
use teloxide::{ApiError, Bot, RequestError};

use super::flag_duration;
use super::out::outln;
use super::writing::{target, write_whole};
use super::EXIT_GO;
use crate::config::Config;
use crate::retry::backoff;
use crate::secret::{scrub, Secret};
use crate::settings::Resolve;
use crate::telegram::api::BotApi;
use crate::time::{range, words};

#[derive(Debug, Subcommand)]
pub enum ConnectCommand {
    /// Find your Telegram user id and chat: send /start to your bot when asked, and get
    /// the `approvers` and `chats` lines for bot.toml's [telegram] table.
    Telegram(TelegramArgs),
}

#[derive(Debug, Args)]
pub struct TelegramArgs {
    /// Write the ids into the config file's [telegram] table (adding to what is there).
    #[arg(long)]
    pub write: bool,
    /// How long to wait for your /start, e.g. 10m.
    #[arg(long, default_value = "10m")]
    pub wait: String,
}

pub(super) async fn run(command: ConnectCommand, config: &Path) -> Result<u8, String> {
    match command {
        ConnectCommand::Telegram(args) => telegram(args, config).await,
    }
}

/// `[telegram]` as far as connecting needs it; every other key is ignored here.
#[derive(Debug, Deserialize)]
struct Doc {
    telegram: Option<Table>,
}

#[derive(Debug, Deserialize)]
struct Table {
    token: Option<String>,
    token_env: Option<String>,
    token_file: Option<PathBuf>,
    api_url: Option<String>,
    approvers: Option<toml::Spanned<Vec<u64>>>,
    chats: Option<toml::Spanned<Vec<i64>>>,
}

/// Who sent the code, from where.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Owner {
    user: u64,
    name: String,
    chat: i64,
    private: bool,
}

async fn telegram(args: TelegramArgs, path: &Path) -> Result<u8, String> {
    let wait = flag_duration("--wait", &args.wait, range::CLIENT_WAIT)?;
    let (raw, table) = read_table(path)?;
    let (api, token) = bot(&raw, &table, path)?;
    let me = api
        .get_me()
        .await
        .map_err(|e| crate::telegram::explain_get_me(&e, token.expose()))?;
    let bot = me.user.username.clone().unwrap_or_default();
    let code = code();
    eprintln!(
        "Waiting up to {} for you on Telegram. Open https://t.me/{bot}?start={code} and press \
         Start, or send @{bot} this message:\n  /start {code}",
        words(wait)
    );
    let owner = wait_for_code(&api, &token, &code, wait).await?;
    let _ = api
        .send_message(
            ChatId(owner.chat),
            format!(
                "gatebot: found you ({}, user id {}). Once gatebot runs with the new \
                 settings, its approval requests come here.",
                owner.name, owner.user
            ),
        )
        .await;
    let (approvers, chats) = ids_with(&table, &owner);
    outln!(
        "Found {}, user id {}, in {}.",
        owner.name,
        owner.user,
        if owner.private {
            format!("your private chat with @{bot}")
        } else {
            format!("the group {}", owner.chat)
        }
    );
    let lines = format!("approvers = {}\nchats = {}", list(&approvers), list(&chats));
    if !args.write {
        outln!("For the [telegram] table of {}:\n{lines}", path.display());
        outln!("(or run this again with --write to have them written there)");
        return Ok(EXIT_GO);
    }
    write_ids(path, &raw, &table, (&approvers, &chats), &lines)?;
    Ok(EXIT_GO)
}

/// The config file's text and its `[telegram]` table, read without checking the rest
/// (a file `gatebot init` just wrote has no approvers yet).
fn read_table(path: &Path) -> Result<(String, Table), String> {
    let raw = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "cannot read the config file {}: {}",
            path.display(),
            crate::files::io_words(&e)
        )
    })?;
    // toml's own text draws the line with a caret under it: the line and its words say it.
    let doc: Doc = toml::from_str(&raw).map_err(|e| {
        let line = e
            .span()
            .map(|s| {
                let before = &raw.as_bytes()[..s.start.min(raw.len())];
                format!(":{}", before.iter().filter(|b| **b == b'\n').count() + 1)
            })
            .unwrap_or_default();
        format!(
            "{}{line}: {} (`gatebot check-config` says every mistake)",
            path.display(),
            e.message().trim()
        )
    })?;
    let table = doc.telegram.ok_or_else(|| {
        format!(
            "{} has no [telegram] table: add one with `gatebot init --telegram` (a new \
             file) or by hand (README, \"Telegram\")",
            path.display()
        )
    })?;
    Ok((raw, table))
}

/// The bot the table names: its API (at `api_url`) and its token.
fn bot(raw: &str, table: &Table, path: &Path) -> Result<(BotApi, Secret), String> {
    let r = Resolve::new(raw, path);
    let token = r
        .secret(
            "telegram",
            "token",
            table.token.clone(),
            table.token_env.clone(),
            table.token_file.clone(),
        )
        .map_err(|e| {
            let mut e = e.to_string();
            if e.contains("token_file") && e.contains("cannot read") {
                e.push_str(": put the bot token from @BotFather there first");
            }
            if e.contains("${CREDENTIALS_DIRECTORY}") {
                e.push_str(
                    ". For the README's service install, where systemd loads the token from \
                     /etc/gatebot/telegram-token: sudo CREDENTIALS_DIRECTORY=/etc/gatebot \
                     gatebot connect telegram",
                );
            }
            e
        })?
        .ok_or_else(|| {
            format!(
                "{}: [telegram] has no token: set `token_file` (or `token_env`) to the bot \
                 token from @BotFather",
                path.display()
            )
        })?;
    let api_url = r
        .url(
            "telegram",
            table
                .api_url
                .as_deref()
                .unwrap_or("https://api.telegram.org"),
        )
        .map_err(|e| e.to_string())?;
    let url = url::Url::parse(&api_url).map_err(|e| format!("telegram.api_url: {e}"))?;
    Ok((
        BotApi::new(Bot::new(token.expose()).set_api_url(url)),
        token,
    ))
}

/// The table's approvers and chats with the owner found added.
fn ids_with(table: &Table, owner: &Owner) -> (Vec<u64>, Vec<i64>) {
    let approvers = merged(
        table.approvers.as_ref().map(|s| s.get_ref().as_slice()),
        owner.user,
    );
    let old_chats = table
        .chats
        .as_ref()
        .map(|s| s.get_ref().clone())
        .unwrap_or_default();
    // An empty `chats` sends prompts to each approver's private chat, this one too.
    let chats = if owner.private && old_chats.is_empty() {
        old_chats
    } else {
        merged(Some(&old_chats), owner.chat)
    };
    (approvers, chats)
}

/// Writes the ids into the file's `[telegram]` table in place, then checks the file as
/// `check-config` does and says what it still finds.
fn write_ids(
    path: &Path,
    raw: &str,
    table: &Table,
    (approvers, chats): (&[u64], &[i64]),
    lines: &str,
) -> Result<(), String> {
    let file = target(path)?;
    let edited = set_ids(raw, table, approvers, chats).map_err(|e| {
        format!(
            "{e}; {} was left as it is. The lines:\n{lines}",
            path.display()
        )
    })?;
    write_whole(&file, &edited, 0o600)?;
    outln!(
        "Wrote to the [telegram] table of {}:\n{lines}",
        path.display()
    );
    match Config::check(path) {
        Ok(_) => outln!(
            "gatebot check-config: ok. A running gatebot takes the change up on reload \
             (systemctl reload gatebot, or SIGHUP); start it otherwise: gatebot run"
        ),
        Err(errors) => {
            outln!("gatebot check-config still finds:");
            for e in errors {
                outln!("  {e}");
            }
        }
    }
    Ok(())
}

/// A code to send with `/start`: 8 letters and digits (a deep link's `start` parameter).
fn code() -> String {
    const ALPHABET: &[u8] = b"abcdefghijkmnpqrstuvwxyz23456789";
    let mut rng = rand::rng();
    (0..8)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// True when `text` is `/start CODE` (or `/start@bot CODE`, or the code alone).
fn carries(text: &str, code: &str) -> bool {
    let mut words = text.split_whitespace();
    match words.next() {
        Some(w) if w == code => words.next().is_none(),
        Some(w) if w == "/start" || w.starts_with("/start@") => {
            words.next() == Some(code) && words.next().is_none()
        }
        _ => false,
    }
}

/// Long-polls `getUpdates` until someone sends the code, or `wait` passes.
async fn wait_for_code(
    api: &BotApi,
    token: &Secret,
    code: &str,
    wait: Duration,
) -> Result<Owner, String> {
    let start = Instant::now();
    let mut offset: i32 = 0;
    let mut failures = 0u32;
    loop {
        let left = wait.saturating_sub(start.elapsed());
        if left.is_zero() {
            return Err(format!(
                "nobody sent /start {code} within {}; run this again when you are ready",
                words(wait)
            ));
        }
        let poll = left.min(crate::telegram::POLL_TIMEOUT).as_secs().max(1);
        let res = api
            .get_updates()
            .offset(offset)
            .timeout(u32::try_from(poll).unwrap_or(10))
            .allowed_updates([AllowedUpdate::Message])
            .send()
            .await;
        let updates = match res {
            Ok(u) => {
                failures = 0;
                u
            }
            Err(RequestError::Api(ApiError::TerminatedByOtherGetUpdates)) => {
                return Err(
                    "another program is reading this bot's messages (Telegram gives them to \
                     one reader only): stop it while you connect, for gatebot itself \
                     `systemctl stop gatebot` or Ctrl-C on `gatebot run`, then start it again"
                        .into(),
                )
            }
            Err(RequestError::Api(ApiError::InvalidToken)) => {
                return Err(
                    "Telegram refused the bot token (Unauthorized): check [telegram] token".into(),
                )
            }
            Err(e) => {
                let pause = backoff(failures).min(left);
                failures += 1;
                eprintln!(
                    "asking Telegram failed ({}); trying again in {}",
                    scrub(&e.to_string(), &[token.expose()]),
                    words(pause)
                );
                tokio::time::sleep(pause).await;
                continue;
            }
        };
        if let Some(owner) = owner_in(updates, code, &mut offset) {
            return Ok(owner);
        }
    }
}

/// Who sent `/start CODE` in `updates`, if anyone did; a `/start` without the code is
/// named and ignored. `offset` moves past every update read.
fn owner_in(updates: Vec<Update>, code: &str, offset: &mut i32) -> Option<Owner> {
    for u in updates {
        *offset = (*offset).max(i32::try_from(u.id.0).unwrap_or(i32::MAX).saturating_add(1));
        let UpdateKind::Message(m) = u.kind else {
            continue;
        };
        let (Some(text), Some(from)) = (m.text(), m.from.as_ref()) else {
            continue;
        };
        let name = match &from.username {
            Some(u) => format!("{} (@{u})", from.full_name()),
            None => from.full_name(),
        };
        if carries(text, code) {
            return Some(Owner {
                user: from.id.0,
                name,
                chat: m.chat.id.0,
                private: m.chat.is_private(),
            });
        }
        if text.starts_with("/start") {
            eprintln!(
                "ignored a /start from {name} (user id {}): it does not carry this code",
                from.id.0
            );
        }
    }
    None
}

/// `old` with `id` added (once), in order.
fn merged<T: Copy + PartialEq>(old: Option<&[T]>, id: T) -> Vec<T> {
    let mut out: Vec<T> = old.unwrap_or(&[]).to_vec();
    if !out.contains(&id) {
        out.push(id);
    }
    out
}

fn list<T: std::fmt::Display>(ids: &[T]) -> String {
    let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
    format!("[{}]", ids.join(", "))
}

/// `raw` with `[telegram]`'s `approvers` and `chats` set: each value replaced where it
/// is written, a missing key added under the table's header; comments and every other
/// line stay as they are. Checked by reading the result back.
fn set_ids(raw: &str, table: &Table, approvers: &[u64], chats: &[i64]) -> Result<String, String> {
    let mut edits: Vec<(Range<usize>, String)> = Vec::new();
    let mut missing = Vec::new();
    match &table.approvers {
        Some(s) => edits.push((s.span(), list(approvers))),
        None => missing.push(format!("approvers = {}\n", list(approvers))),
    }
    match &table.chats {
        Some(s) => edits.push((s.span(), list(chats))),
        None => missing.push(format!("chats = {}\n", list(chats))),
    }
    if !missing.is_empty() {
        let at = header_end(raw).ok_or(
            "the [telegram] table is not written as a `[telegram]` header line, so gatebot \
             cannot add to it",
        )?;
        edits.push((at..at, missing.concat()));
    }
    edits.sort_by_key(|(r, _)| std::cmp::Reverse(r.start));
    let mut out = raw.to_string();
    for (r, text) in edits {
        out.replace_range(r, &text);
    }
    let back: Doc = toml::from_str(&out).map_err(|e| format!("the edit went wrong ({e})"))?;
    let t = back.telegram.ok_or("the edit went wrong")?;
    let ok = t.approvers.map(toml::Spanned::into_inner).as_deref() == Some(approvers)
        && t.chats.map(toml::Spanned::into_inner).as_deref() == Some(chats);
    if !ok {
        return Err("the edit did not give the values meant".into());
    }
    Ok(out)
}

/// Where the line after the `[telegram]` header starts.
fn header_end(raw: &str) -> Option<usize> {
    let mut at = 0;
    for line in raw.split_inclusive('\n') {
        let t = line.trim();
        let header = t
            .strip_prefix("[telegram]")
            .is_some_and(|rest| rest.trim().is_empty() || rest.trim_start().starts_with('#'));
        at += line.len();
        if header {
            if !line.ends_with('\n') {
                return None;
            }
            return Some(at);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(raw: &str) -> Table {
        toml::from_str::<Doc>(raw).unwrap().telegram.unwrap()
    }

    #[test]
    fn only_the_code_counts() {
        assert!(carries("/start k3m9x2pa", "k3m9x2pa"));
        assert!(carries("/start@gatebot_bot k3m9x2pa", "k3m9x2pa"));
        assert!(carries(" k3m9x2pa ", "k3m9x2pa"));
        assert!(!carries("/start", "k3m9x2pa"));
        assert!(!carries("/start k3m9x2pb", "k3m9x2pa"));
        assert!(!carries("/start k3m9x2pa and more", "k3m9x2pa"));
        assert!(!carries("/started k3m9x2pa", "k3m9x2pa"));
        let c = code();
        assert_eq!(c.len(), 8);
        assert!(c.chars().all(|ch| ch.is_ascii_alphanumeric()));
    }

    #[test]
    fn the_values_are_replaced_where_they_are_written() {
        let raw = "# mine\n[store]\npath = \"x.db\"\n\n[telegram]\n# who decides\napprovers = [ 1 ,\n  2 ] # two\nchats = []\ntoken_file = \"t\"\n";
        let out = set_ids(raw, &table(raw), &[1, 2, 42], &[]).unwrap();
        assert_eq!(
            out,
            "# mine\n[store]\npath = \"x.db\"\n\n[telegram]\n# who decides\napprovers = [1, 2, 42] # two\nchats = []\ntoken_file = \"t\"\n"
        );
    }

    #[test]
    fn missing_keys_go_under_the_header() {
        let raw = "[telegram] # the bot\ntoken_file = \"t\"\n\n[slack]\n";
        let out = set_ids(raw, &table(raw), &[42], &[-100]).unwrap();
        assert_eq!(
            out,
            "[telegram] # the bot\napprovers = [42]\nchats = [-100]\ntoken_file = \"t\"\n\n[slack]\n"
        );
        // A table written inline cannot be added to: the caller prints the lines instead.
        let raw = "telegram = { token_file = \"t\" }\n";
        assert!(set_ids(raw, &table(raw), &[42], &[]).is_err());
    }

    #[test]
    fn ids_are_added_once() {
        assert_eq!(merged(Some(&[1, 2][..]), 2), vec![1, 2]);
        assert_eq!(merged(None, 7), vec![7]);
    }
}
