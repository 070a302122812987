//! `gatebot store copy --to postgres://USER@HOST/DB`: this installation's SQLite file
//! copied into a fresh PostgreSQL database (the daemon stopped). This file parses, calls
//! the store's copy (`store::copy_to_postgres`, where the SQL is) and says what it did.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Subcommand};

use super::out::outln;
use super::{EXIT_GO, EXIT_NO};
use crate::config::{Config, ConfigError};
use crate::store::{copy_to_postgres, Copied};

#[derive(Debug, Subcommand)]
pub enum StoreAction {
    /// Copy everything this installation keeps (requests, grants, tiers, tasks, runs,
    /// the audit trail…) from its SQLite file (the config's [store] path) into a new,
    /// empty PostgreSQL database, to run gatebot there (docs/scale-out.md, "Moving from
    /// SQLite").
    ///
    /// Stop gatebot first (with its sockets): a gatebot that has the file open is
    /// refused, and the file is kept to the copy while it runs. The file is only read;
    /// the copy is one transaction, so a copy that fails leaves the database empty.
    /// Then set `url` in bot.toml's [store] (with its password_file or password_env)
    /// and start gatebot. Exits 1 when the copy's audit trail does not verify (nor did
    /// the file's), 2 when nothing was copied.
    Copy(CopyArgs),
}

#[derive(Debug, Args)]
pub struct CopyArgs {
    /// The PostgreSQL database to copy into: postgres://USER@HOST[:PORT]/DB, without
    /// the password (it would show in `ps` and shell histories).
    #[arg(long, value_name = "URL")]
    pub to: String,
    /// A file holding the database's password.
    #[arg(long, value_name = "FILE", conflicts_with = "password_env")]
    pub password_file: Option<PathBuf>,
    /// The environment variable holding the database's password.
    #[arg(long, value_name = "NAME")]
    pub password_env: Option<String>,
}

pub(super) async fn run(action: StoreAction, config: &Path) -> Result<u8, String> {
    let StoreAction::Copy(args) = action;
    let loaded = Config::load(config).map_err(|e| e.to_string())?;
    let target = crate::config::postgres_target(&args.to, args.password_env, args.password_file)
        .map_err(|errors| {
            errors
                .iter()
                .map(option_words)
                .collect::<Vec<_>>()
                .join("\nerror: ")
        })?;
    let file = loaded.store.path.clone();
    let copied = tokio::task::spawn_blocking(move || {
        let password = target.password.as_ref().map(|p| p.expose());
        copy_to_postgres(&file, &target.url, password)
    })
    .await
    .map_err(|e| format!("the copy stopped: {e}"))?
    .map_err(|e| format!("{e}"))?;
    report(&loaded.store.path, &args.to, &copied);
    // Copied as it was: a trail that does not verify did not in the file either.
    Ok(if copied.check.problems.is_empty() {
        EXIT_GO
    } else {
        EXIT_NO
    })
}

/// A refusal of `[store]`'s rules, in the words of this command's options.
fn option_words(e: &ConfigError) -> String {
    let option = match e.key.as_str() {
        "store.url" => "--to",
        "store.password_env" => "--password-env",
        "store.password_file" => "--password-file",
        _ => "--password-file or --password-env",
    };
    let message = e
        .message
        .replace(
            "the file `store.password_file` names, or in `store.password_env`",
            "a file (--password-file) or an environment variable (--password-env)",
        )
        .replace("${CREDENTIALS_DIRECTORY}", "$CREDENTIALS_DIRECTORY");
    format!("{option}: {message}")
}

/// Each kind of row, as people call it: the tables that hold what an owner knows.
const KINDS: &[(&str, &str, &str)] = &[
    ("approvals", "request", "requests"),
    ("grants", "grant", "grants"),
    ("tier_overrides", "tier change", "tier changes"),
    ("pauses", "pause", "pauses"),
    ("proposals", "tier proposal", "tier proposals"),
    ("tasks", "task", "tasks"),
    ("runs", "workflow run", "workflow runs"),
    ("check_ins", "check-in", "check-ins"),
    ("votes", "vote", "votes"),
    ("reminders", "reminder", "reminders"),
    ("factors", "second factor", "second factors"),
    ("contacts", "contact", "contacts"),
    ("audit", "audit row", "audit rows"),
];

/// What was copied, the audit head on both sides, and what to do next.
fn report(file: &Path, url: &str, c: &Copied) {
    outln!(
        "Copied {} into {} in {}:",
        file.display(),
        c.database,
        took(c.took)
    );
    let mut named = 0;
    let mut kinds = Vec::new();
    for (table, one, many) in KINDS {
        let n = c.rows_of(table);
        named += n;
        // Requests and the trail always; the rest when there are any.
        if n > 0 || ["approvals", "audit"].contains(table) {
            kinds.push(format!("{} {}", count(n), if n == 1 { one } else { many }));
        }
    }
    outln!("  {},", kinds.join(", "));
    let rest = c.rows() - named;
    outln!(
        "  and {} {} of chat, evidence, budget and sign-in bookkeeping.",
        count(rest),
        if rest == 1 { "row" } else { "rows" }
    );
    outln!("  audit head, SQLite:     {}", head(&c.source_head));
    outln!("  audit head, PostgreSQL: {}", head(&c.copy_head));
    if c.check.problems.is_empty() {
        outln!(
            "  the copy's audit trail verifies: {} {} checked.",
            count(c.check.rows as u64),
            if c.check.rows == 1 { "row" } else { "rows" }
        );
    } else {
        outln!("  the copy's audit trail does not verify:");
        for p in &c.check.problems {
            outln!("    {p}");
        }
    }
    outln!("Next: set `url = \"{url}\"` in bot.toml's [store] (with password_file or");
    outln!("password_env for the password), start gatebot, and check the trail still holds");
    match &c.copy_head.hash {
        Some(hash) => outln!("this head: gatebot audit verify --head {hash}"),
        None => outln!("what was copied: gatebot audit verify"),
    }
    outln!("Keep {} until you are content.", file.display());
}

/// `row 42, hash 0123456789ab…`, or that the trail is empty.
fn head(h: &crate::store::AuditHead) -> String {
    match &h.hash {
        Some(hash) => format!(
            "row {}, hash {}…",
            count(h.seq.unsigned_abs()),
            hash.get(..12).unwrap_or(hash)
        ),
        None if h.seq == 0 => "no rows yet".into(),
        None => format!("row {}, without a hash", count(h.seq.unsigned_abs())),
    }
}

/// How long the copy took: to the tenth of a second under a minute.
fn took(d: Duration) -> String {
    if d < Duration::from_secs(60) {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        crate::words::span(d)
    }
}

/// `1 204 567`: thousands set apart, as the rest of gatebot's words write them.
fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(' ');
        }
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_set_thousands_apart() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_204), "1 204");
        assert_eq!(count(1_204_567), "1 204 567");
    }

    #[test]
    fn store_refusals_name_this_commands_options() {
        let e = ConfigError {
            file: PathBuf::from("x"),
            key: "store.url".into(),
            line: None,
            message: "must not hold the password (it would show in logs): put it in the file \
                      `store.password_file` names, or in `store.password_env`"
                .into(),
        };
        let words = option_words(&e);
        assert!(
            words.starts_with("--to: must not hold the password"),
            "{words}"
        );
        assert!(words.contains("--password-file"), "{words}");
        assert!(!words.contains("store."), "{words}");
    }
}
