//! The recipes of README.md and docs/*.md, as a reader copies them: every `sh`, `bash`
//! and `python` block is run verbatim against a daemon on the example `bot.toml`, in a
//! checkout-like directory of a user's machine in a temp dir ([`Sandbox`]), while an owner
//! answers yes to whatever waits (approve, continue). A block that cannot run here (it
//! needs Telegram, Slack, Claude Code, systemd or root, or it is a synopsis) carries
//! `<!-- not run: why -->` on the line before its fence, and is listed as skipped; any
//! other block that fails fails the test. The Claude Code Stop hook of
//! docs/workflows.md is run as Claude Code runs it, turn by turn; docs/inbox.md's card is
//! compared with the card gatebot draws; and the words owners read name no design
//! document.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

use crate::helpers::eventually;
use crate::sandbox::{stderr, stdout, write, Sandbox};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The marker that skips a block, on the line before its fence.
const NOT_RUN: &str = "<!-- not run:";

/// One fenced block of a document.
#[derive(Debug, Clone)]
struct Block {
    doc: String,
    /// The fence's line, from 1.
    line: usize,
    lang: String,
    body: String,
    /// Why it is not run, from its marker.
    not_run: Option<String>,
}

impl Block {
    fn at(&self) -> String {
        format!("{}:{}", self.doc, self.line)
    }
}

/// The documents a reader follows: README.md and every docs/*.md.
fn documents() -> Vec<String> {
    let mut docs: Vec<String> = std::fs::read_dir(Path::new(ROOT).join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    docs.sort();
    docs.insert(0, "README.md".into());
    docs
}

/// The fenced blocks of `doc`, each with the marker of the line before its fence.
fn blocks_of(doc: &str) -> Vec<Block> {
    let text = std::fs::read_to_string(Path::new(ROOT).join(doc)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(lang) = lines[i].trim_start().strip_prefix("```") else {
            i += 1;
            continue;
        };
        let indent = lines[i].len() - lines[i].trim_start().len();
        let not_run = i
            .checked_sub(1)
            .map(|p| lines[p].trim())
            .and_then(|l| l.strip_prefix(NOT_RUN))
            .map(|r| r.trim_end_matches("-->").trim().to_string());
        let mut body = String::new();
        let mut j = i + 1;
        while j < lines.len() && !lines[j].trim_start().starts_with("```") {
            body.push_str(lines[j].get(indent..).unwrap_or(lines[j].trim_start()));
            body.push('\n');
            j += 1;
        }
        out.push(Block {
            doc: doc.to_string(),
            line: i + 1,
            lang: lang.trim().to_string(),
            body,
            not_run,
        });
        i = j + 1;
    }
    out
}

fn runnable(lang: &str) -> bool {
    matches!(lang, "sh" | "bash" | "python")
}

/// The stand-ins for the project's own tools the recipes call: a build that warns as gcc
/// does, a test suite and ESLint that say what the files `.tests-fail` and
/// `.eslint-output` in the working directory tell them, and `./deploy.sh`.
fn stand_ins(sandbox: &Sandbox) {
    let script = |name: &str, body: &str| {
        let path = sandbox.bin().join(name);
        write(&path, &format!("#!/bin/sh\n{body}"));
        chmod_x(&path);
    };
    script(
        "make",
        "echo 'cc -Wall -c w.c'\n\
         echo \"w.c:2:16: warning: unused variable 'x' [-Wunused-variable]\" >&2\n\
         echo \"w.c:3:9: warning: control reaches end of non-void function [-Wreturn-type]\" >&2\n",
    );
    script(
        "npm",
        "if [ -e .tests-fail ]; then echo '1 failing'; exit 1; fi\necho '12 passing'\n",
    );
    script(
        "npx",
        "[ \"$1\" = eslint ] || exit 127\n[ -s .eslint-output ] || exit 0\ncat .eslint-output\nexit 1\n",
    );
    let deploy = sandbox.project().join("deploy.sh");
    write(&deploy, "#!/bin/sh\necho \"deployed to $1\"\n");
    chmod_x(&deploy);
}

fn chmod_x(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A user's machine with the example `bot.toml` in the directory the recipes run in (a
/// checkout), its daemon running, and the stand-ins on PATH.
struct Machine {
    sandbox: Sandbox,
    daemon: Child,
}

impl Machine {
    async fn start() -> Machine {
        let sandbox = Sandbox::new();
        crate::helpers::example_config_at(&sandbox.project().join("bot.toml"));
        stand_ins(&sandbox);
        let log = std::fs::File::create(sandbox.dir.path().join("daemon.log")).unwrap();
        let mut c = sandbox.gatebot(&["run"]);
        c.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log));
        let daemon = c.spawn().unwrap();
        let m = Machine { sandbox, daemon };
        eventually("the daemon's sockets", async || {
            m.control().exists().then_some(())
        })
        .await;
        m
    }

    fn project(&self) -> PathBuf {
        self.sandbox.project()
    }

    fn control(&self) -> PathBuf {
        self.project().join("gatebot-control.sock")
    }

    /// The owners' client, acting for alice.
    fn owner(&self) -> gatebot::client::Client {
        gatebot::client::Client::new(self.control())
            .with_header(gatebot::peer::SUDO_USER_HEADER, "alice")
    }

    fn daemon_log(&self) -> String {
        std::fs::read_to_string(self.sandbox.dir.path().join("daemon.log")).unwrap_or_default()
    }

    /// An owner who approves every request and continues every check-in as they come.
    fn owner_says_yes(&self) -> JoinHandle<()> {
        let owner = self.owner();
        tokio::spawn(async move {
            loop {
                if let Ok(res) = owner.get("/v1/pending").await {
                    let ids = |key: &str| -> Vec<String> {
                        res.body[key]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|v| v["id"].as_str().map(str::to_string))
                            .collect()
                    };
                    for id in ids("requests") {
                        let _ = owner
                            .post(
                                &format!("/v1/requests/{id}/decision"),
                                &json!({"decision": "approve"}),
                            )
                            .await;
                    }
                    for id in ids("check_ins") {
                        let _ = owner
                            .post(
                                &format!("/v1/requests/{id}/decision"),
                                &json!({"decision": "continue", "reason": "go on"}),
                            )
                            .await;
                    }
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    }

    /// Runs `program args…` in the checkout with the machine's environment, in a process
    /// group of its own that is killed when it ends (a recipe's background `&` jobs too).
    async fn run(&self, program: &str, args: &[&str], stdin: &str) -> std::process::Output {
        let mut c = Command::new(program);
        c.args(args);
        self.sandbox.env(&mut c);
        let tmp = self.sandbox.dir.path().join("tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        c.env("TMPDIR", tmp)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = c.spawn().unwrap();
        let group = child.id().unwrap() as i32;
        let mut input = child.stdin.take().unwrap();
        input.write_all(stdin.as_bytes()).await.unwrap();
        drop(input);
        let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output()).await;
        // SAFETY: kill(2) on the group this test started; nothing else is in it.
        unsafe {
            libc::kill(-group, libc::SIGKILL);
        }
        out.unwrap_or_else(|_| panic!("`{program} {args:?}` did not end within 30 s"))
            .unwrap()
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        let _ = self.daemon.start_kill();
    }
}

/// Whether `program` is on the machine's PATH (the stand-ins', then /usr/bin and /bin).
fn on_path(sandbox: &Sandbox, program: &str) -> bool {
    [sandbox.bin(), "/usr/bin".into(), "/bin".into()]
        .iter()
        .any(|d| d.join(program).exists())
}

/// The programs besides the shell a block needs that a bare machine may lack.
fn needs(block: &Block) -> Vec<&'static str> {
    let mut needs = Vec::new();
    if block.lang == "python" {
        needs.push("python3");
    }
    for tool in ["jq", "curl"] {
        if block.body.lines().any(|l| {
            l.split_whitespace()
                .any(|w| w == tool || w.ends_with(&format!("({tool}")))
        }) {
            needs.push(tool);
        }
    }
    needs
}

#[tokio::test]
async fn every_recipe_runs_as_written_against_the_example_config() {
    let machine = Machine::start().await;
    let owner = machine.owner_says_yes();
    let scripts = machine.sandbox.dir.path().join("recipes");
    std::fs::create_dir_all(&scripts).unwrap();
    let (mut ran, mut skipped, mut failed) = (Vec::new(), Vec::new(), Vec::new());
    for doc in documents() {
        for (n, block) in blocks_of(&doc).into_iter().enumerate() {
            if !runnable(&block.lang) {
                continue;
            }
            if let Some(why) = &block.not_run {
                skipped.push(format!("{}: {why}", block.at()));
                continue;
            }
            let missing: Vec<_> = needs(&block)
                .into_iter()
                .filter(|p| !on_path(&machine.sandbox, p))
                .collect();
            if !missing.is_empty() {
                skipped.push(format!("{}: this machine lacks {missing:?}", block.at()));
                continue;
            }
            let file = scripts.join(format!("{}-{n}", doc.replace('/', "-")));
            std::fs::write(&file, &block.body).unwrap();
            let file = file.to_str().unwrap();
            let out = match block.lang.as_str() {
                "python" => machine.run("python3", &[file], "").await,
                // A script keeps its own error handling; a list of commands stops at
                // the first that fails.
                _ if block.body.starts_with("#!") => machine.run("bash", &[file], "").await,
                _ => {
                    machine
                        .run("bash", &["-e", "-o", "pipefail", file], "")
                        .await
                }
            };
            if std::env::var_os("RECIPES_SHOW").is_some() {
                eprintln!("== {}\n{}{}", block.at(), stdout(&out), stderr(&out));
            }
            if out.status.success() {
                ran.push(block.at());
            } else {
                failed.push(format!(
                    "== {} exited {:?}\n{}\n-- stdout:\n{}-- stderr:\n{}",
                    block.at(),
                    out.status.code(),
                    block.body,
                    stdout(&out),
                    stderr(&out)
                ));
            }
        }
    }
    owner.abort();
    eprintln!("recipes run: {ran:#?}\nnot run: {skipped:#?}");
    assert!(
        failed.is_empty(),
        "{}\n== the daemon's log:\n{}",
        failed.join("\n"),
        machine.daemon_log()
    );
    // What this test is for: the quick start, the hooks, the workflow pipelines, the
    // Python examples, the inbox and the audit anchor.
    for want in [
        "README.md",
        "docs/audit.md",
        "docs/inbox.md",
        "docs/integrations.md",
        "docs/workflows.md",
    ] {
        assert!(
            ran.iter().any(|r| r.starts_with(&format!("{want}:"))),
            "no recipe of {want} ran: {ran:?} {skipped:?}"
        );
    }
}

/// The agents the docs' examples use, by name: `--agent NAME`, `"agent": "NAME"` and
/// `[agents.NAME…]` (capitals are a synopsis's placeholders).
fn agents_used() -> Vec<(String, String)> {
    let re = regex::Regex::new(
        r#"--agent ([a-z][a-z0-9_-]*)|"agent": ?"([a-z][a-z0-9_-]*)"|\[agents\.([a-z][a-z0-9_-]*)"#,
    )
    .unwrap();
    let mut found = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(Path::new(ROOT).join(&doc)).unwrap();
        for c in re.captures_iter(&text) {
            let name = (1..=3).find_map(|i| c.get(i)).unwrap().as_str();
            found.push((doc.clone(), name.to_string()));
        }
    }
    found
}

#[test]
fn every_agent_the_docs_use_is_in_the_example_bot_toml() {
    let config = gatebot::config::Config::load(&Path::new(ROOT).join("bot.toml")).unwrap();
    let used = agents_used();
    assert!(used.iter().any(|(_, a)| a == "deployer"), "{used:?}");
    let missing: Vec<_> = used
        .iter()
        .filter(|(_, a)| config.agent(a).is_none())
        .collect();
    assert!(
        missing.is_empty(),
        "agents the docs use that the example bot.toml lacks: {missing:?}"
    );
}

/// ESLint 10's `-f unix` output for a file with three warnings and two errors, as it
/// prints it: the findings, a blank line and a count.
const ESLINT_UNIX: &str = "\
/p/src/a.js:1:10: Missing semicolon. [Warning/semi]
/p/src/a.js:2:7: Expected '===' and instead saw '=='. [Warning/eqeqeq]
/p/src/a.js:2:15: `eval` can be harmful. [Error/no-eval]
/p/src/a.js:2:24: Missing semicolon. [Warning/semi]
/p/src/a.js:3:1: 'foo' is not defined. [Error/no-undef]

5 problems
";

/// docs/workflows.md's Stop hook, installed as the doc says.
fn install_checkin_hook(machine: &Machine) -> PathBuf {
    let block = blocks_of("docs/workflows.md")
        .into_iter()
        .find(|b| b.body.contains("# .claude/hooks/checkin.sh"))
        .expect("the checkin.sh recipe");
    let path = machine.project().join(".claude/hooks/checkin.sh");
    write(&path, &block.body);
    chmod_x(&path);
    path
}

/// One end of a turn: the hook run as Claude Code runs it (the command through a shell,
/// in the project, the hook's input on stdin).
async fn stop(machine: &Machine, turn_continued: bool) -> std::process::Output {
    let input = json!({
        "session_id": "5f1c0e4e-1b7d-4d2b-9a55-0c8f6f1f2a10",
        "transcript_path": "/home/ann/.claude/projects/shop/5f1c0e4e.jsonl",
        "cwd": machine.project(),
        "permission_mode": "default",
        "hook_event_name": "Stop",
        "stop_hook_active": turn_continued,
    });
    let out = machine
        .run(
            "sh",
            &["-c", ".claude/hooks/checkin.sh"],
            &input.to_string(),
        )
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    out
}

/// The one waiting check-in, once there is one.
async fn waiting_check_in(owner: &gatebot::client::Client) -> serde_json::Value {
    eventually("a waiting check-in", async || {
        let res = owner.get("/v1/pending").await.ok()?;
        res.body["check_ins"].as_array()?.first().cloned()
    })
    .await
}

async fn decide(owner: &gatebot::client::Client, id: &str, decision: &str, reason: &str) {
    let res = owner
        .post(
            &format!("/v1/requests/{id}/decision"),
            &json!({"decision": decision, "reason": reason}),
        )
        .await
        .unwrap();
    assert!(res.status.is_success(), "{:?}", res.body);
}

#[tokio::test]
async fn the_stop_hook_recipe_goes_on_only_when_an_owner_said_continue() {
    if !on_path(&Sandbox::new(), "jq") {
        eprintln!("skipped: this machine has no jq, which the recipe uses");
        return;
    }
    let machine = Machine::start().await;
    install_checkin_hook(&machine);
    let owner = machine.owner();
    let lint = machine.project().join(".eslint-output");

    // A clean turn is a report nobody saw: Claude stops, told nothing.
    let out = stop(&machine, false).await;
    assert_eq!(stdout(&out), "", "a clean turn lets Claude stop");
    let runs = owner.get("/v1/runs?agent=claude-code").await.unwrap().body;
    let id = runs["runs"][0]["id"].as_str().unwrap();
    let run = owner.get(&format!("/v1/runs/{id}")).await.unwrap().body;
    assert_eq!(run["events"], 1, "{run}");
    assert_eq!(run["check_in"]["status"], "reported", "{run}");

    // Lint findings: the turn waits for the owner, with ESLint's findings (its warnings
    // low, its errors medium, the blank line and the count left out); the owner's
    // Continue and note are what Claude reads next.
    std::fs::write(&lint, ESLINT_UNIX).unwrap();
    let (out, ()) = tokio::join!(stop(&machine, false), async {
        let c = waiting_check_in(&owner).await;
        let severities: Vec<(&str, &str)> = c["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| (w["text"].as_str().unwrap(), w["severity"].as_str().unwrap()))
            .collect();
        assert_eq!(
            severities,
            [
                ("/p/src/a.js:1:10: Missing semicolon. [Warning/semi]", "low"),
                (
                    "/p/src/a.js:2:7: Expected '===' and instead saw '=='. [Warning/eqeqeq]",
                    "low"
                ),
                (
                    "/p/src/a.js:2:15: `eval` can be harmful. [Error/no-eval]",
                    "medium"
                ),
                ("/p/src/a.js:2:24: Missing semicolon. [Warning/semi]", "low"),
                (
                    "/p/src/a.js:3:1: 'foo' is not defined. [Error/no-undef]",
                    "medium"
                ),
            ],
            "{c}"
        );
        assert_eq!(c["phase"], "turn 2 (Stop)");
        decide(
            &owner,
            c["id"].as_str().unwrap(),
            "continue",
            "fix the semicolons first",
        )
        .await;
    });
    let said: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        said,
        json!({
            "decision": "block",
            "reason": "The owner (alice) reviewed this turn and says continue: fix the semicolons first. Go on with the plan."
        })
    );

    // The turn Claude went on with (stop_hook_active) ends clean: it stops; no loop.
    std::fs::remove_file(&lint).unwrap();
    let out = stop(&machine, true).await;
    assert_eq!(stdout(&out), "", "a continued clean turn lets Claude stop");

    // Failing tests are asked about at once (not a stopped run); the owner's Stop lets
    // Claude stop.
    std::fs::write(machine.project().join(".tests-fail"), "").unwrap();
    let (out, ()) = tokio::join!(stop(&machine, true), async {
        let c = waiting_check_in(&owner).await;
        assert_eq!(c["phase"], "turn 4 (Stop, after your continue)", "{c}");
        assert_eq!(c["errors"][0]["text"], "tests fail", "{c}");
        decide(
            &owner,
            c["id"].as_str().unwrap(),
            "stop",
            "enough for today",
        )
        .await;
    });
    assert_eq!(stdout(&out), "", "a stopped turn lets Claude stop");
    let runs = owner.get("/v1/runs?agent=claude-code").await.unwrap().body;
    assert_eq!(
        runs["runs"].as_array().unwrap().len(),
        1,
        "one run per session"
    );
    assert_eq!(runs["runs"][0]["events"], 4, "{runs}");
}

/// docs/inbox.md's example card is the card gatebot draws for that task, line by line
/// (the id, the times and the layout are the doc's own).
#[tokio::test]
async fn the_inbox_docs_card_is_the_card_gatebot_draws() {
    use gatebot::chat::memory::Memory;
    let block = blocks_of("docs/inbox.md")
        .into_iter()
        .find(|b| b.body.contains("gatebot: task"))
        .expect("the task card of docs/inbox.md");
    let memory = Memory::new(&["ops"], 5);
    let example = std::fs::read_to_string(Path::new(ROOT).join("bot.toml")).unwrap();
    let app = crate::helpers::spawn_app_with(
        tempfile::tempdir().unwrap(),
        &example,
        vec![memory.runner()],
    )
    .await;
    let t = app
        .owner_as("alice")
        .post(
            "/v1/tasks",
            &json!({"text": "research what our three competitors charge for the Pro tier"}),
        )
        .await
        .unwrap();
    assert!(t.status.is_success(), "{:?}", t.body);
    let claimed = app
        .agent
        .post(
            "/v1/tasks/claim",
            &json!({"agent": "researcher", "wait": 5}),
        )
        .await
        .unwrap()
        .body;
    let id = claimed["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{claimed} {:?}", t.body))
        .to_string();
    let short = claimed["task"]["short_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{claimed}"))
        .to_string();
    let lease = claimed["task"]["lease"]
        .as_str()
        .or(claimed["lease"].as_str())
        .unwrap_or_else(|| panic!("{claimed}"))
        .to_string();
    let p = app
        .agent
        .post(
            &format!("/v1/tasks/{id}/progress"),
            &json!({"lease": lease, "text": "reading the pricing pages of B"}),
        )
        .await
        .unwrap();
    assert!(p.status.is_success(), "{:?}", p.body);
    let message = eventually("the task's card with its progress", async || {
        memory.find("ops", "reading the pricing pages of B")
    })
    .await;
    let buttons: Vec<String> = message
        .card
        .buttons
        .iter()
        .map(|row| {
            row.iter()
                .map(|b| format!("[{}]", b.label))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let drawn = format!("{}\n{}\n", message.card.plain(), buttons.join("\n"));
    let times = regex::Regex::new(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC").unwrap();
    // The doc indents and spaces the card as a phone shows it; lines and words must match.
    let as_in_doc = |s: &str| {
        times
            .replace_all(s, "(a time)")
            .replace(&short, "t7m2x9qa")
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(as_in_doc(&block.body), as_in_doc(&drawn));
}

/// Where a rule came from (the design documents' names) is no word for an owner.
#[test]
fn no_owner_facing_text_names_where_a_rule_came_from() {
    let words = regex::Regex::new(r"(?i)\bseeds?\b|seed's|praktikant|\blayer ?[12]\b").unwrap();
    let mut files: Vec<String> = documents();
    files.extend(
        [
            "bot.toml",
            "slack/manifest.yml",
            "systemd/gatebot.service",
            "systemd/gatebot.socket",
            "systemd/gatebot-control.socket",
        ]
        .map(String::from),
    );
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(Path::new(ROOT).join(f)).unwrap();
        for (n, line) in text.lines().enumerate() {
            if words.is_match(line) {
                found.push(format!("{f}:{}: {line}", n + 1));
            }
        }
    }
    // And the strings of the program (what it prints, logs, answers and posts), outside
    // comments and tests.
    let literal = regex::Regex::new(r#""(?:[^"\\]|\\.)*""#).unwrap();
    let mut sources = Vec::new();
    walk(&Path::new(ROOT).join("src"), &mut sources);
    for path in sources {
        let text = std::fs::read_to_string(&path).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (n, line) in code.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for s in literal.find_iter(line) {
                if words.is_match(s.as_str()) {
                    found.push(format!("{}:{}: {}", path.display(), n + 1, s.as_str()));
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}
