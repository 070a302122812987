//! `gatebot man [--dir DIR]`: the man pages, made from the same definitions as
//! `--help` (clap_mangen), so they never drift from the commands. gatebot(1) holds
//! every option and command, then what `--help` cannot say: exit codes, files, the
//! environment; each command has its own page too (gatebot-decide(1), and
//! gatebot-task-add(1) for a command's own commands).
//!
//! Without `--dir`, gatebot(1) is printed (`gatebot man | man -l -`); with it, every
//! page is written there as NAME.1, which the Debian package compresses into
//! /usr/share/man/man1.

use std::path::Path;

use clap::CommandFactory;
use clap_mangen::Man;

use super::out::outln;
use super::{Cli, EXIT_GO};

/// What gatebot(1) says after the options and commands, in roff.
const MORE: &str = r#".SH "EXIT STATUS"
\fBask\fR and \fBstatus\fR: 0 allowed or approved; 1 rejected, blocked, expired or
cancelled (the reason on standard error); 2 an error (bad input, unknown agent, daemon
unreachable); 3 still pending when \fB\-\-wait\fR ran out (the request stays queued).
\fBworkflow event\fR and \fBworkflow status\fR: 0 continue, 1 stop, 2 error, 3 still
waiting. \fBdecide\fR exits 1 when what it names was already decided.
.SH FILES
.TP
\fI/etc/gatebot/bot.toml\fR
The system's config file (the Debian package's, readable by group \fBgatebot\fR).
Commands take the first of \fI./bot.toml\fR, \fI~/.config/gatebot/bot.toml\fR and it.
.TP
\fI/var/lib/gatebot/gatebot.db\fR
The system install's database (SQLite), the gatebot user's alone.
.TP
\fI/run/gatebot/gatebot.sock\fR
The agents' socket (group \fBgatebot\-agents\fR).
.TP
\fI/run/gatebot/gatebot\-control.sock\fR
The owners' socket (group \fBgatebot\fR): \fBpending\fR, \fBdecide\fR and the other
owner's commands talk to it.
.SH ENVIRONMENT
.TP
\fBGATEBOT_CONFIG\fR, \fBGATEBOT_SOCKET\fR
As \fB\-\-config\fR and \fB\-\-socket\fR.
.TP
\fBGATEBOT_URL\fR
For the agents' commands: gatebot over TCP, one or more
\fIhttp://HOST:PORT\fR or \fIhttps://HOST:PORT\fR separated by commas, as
\fB\-\-url\fR; a call goes on to the next when one is down or answers 503.
.TP
\fBGATEBOT_CA_FILE\fR
As \fB\-\-ca\-file\fR: the CA certificates https:// endpoints are checked against.
.TP
\fBGATEBOT_TOKEN\fR, \fBGATEBOT_AGENT\fR, \fBGATEBOT_TASK_ID\fR
An agent's token, name and inbox task, for the agents' commands.
.TP
\fBNO_COLOR\fR
Plain log lines, even on a terminal.
.SH "SEE ALSO"
The README and docs in \fI/usr/share/doc/gatebot/\fR; \fBgatebot completions \-\-help\fR
for shell completion.
"#;

/// Every page: gatebot(1) first, then one per command, as (file name, roff).
#[must_use]
pub fn pages() -> Vec<(String, Vec<u8>)> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut pages = Vec::new();
    add(cmd, &mut pages);
    pages
}

fn add(cmd: clap::Command, pages: &mut Vec<(String, Vec<u8>)>) {
    let top = pages.is_empty();
    let man = Man::new(cmd.clone());
    let mut roff = Vec::new();
    man.render(&mut roff).expect("writing to memory");
    roff.extend_from_slice(if top {
        MORE.as_bytes()
    } else {
        b".SH \"SEE ALSO\"\n\\fBgatebot\\fR(1)\n"
    });
    pages.push((man.get_filename(), roff));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        add(sub.clone(), pages);
    }
}

/// `gatebot man [--dir DIR]`.
pub(super) fn run(dir: Option<&Path>) -> Result<u8, String> {
    let pages = pages();
    let Some(dir) = dir else {
        outln!("{}", String::from_utf8_lossy(&pages[0].1).trim_end());
        return Ok(EXIT_GO);
    };
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for (name, roff) in &pages {
        let path = dir.join(name);
        std::fs::write(&path, roff).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    eprintln!("{} man pages written to {}", pages.len(), dir.display());
    Ok(EXIT_GO)
}
