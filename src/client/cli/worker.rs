//! `gatebot worker --agent A [--concurrency N] [--once] -- COMMAND [ARGS…]`: claims
//! the agent's tasks and runs COMMAND for each.
//!
//! For each task, on the agents' socket or endpoints:
//! 1. claim (`POST /v1/tasks/claim`, long-polling 30 s at a time);
//! 2. start COMMAND in a process group of its own, with the execution prompt on stdin
//!    (and, when the task comes back after the owner answered its questions, the
//!    questions and the answer after it), and `GATEBOT_TASK_ID`, `GATEBOT_TASK_INTENT`,
//!    `GATEBOT_AGENT`, where gatebot is (`GATEBOT_SOCKET`, or `GATEBOT_URL` and
//!    `GATEBOT_CA_FILE` for endpoints), `GATEBOT_TOKEN` (and `GATEBOT_SESSION_ID` when
//!    resuming) in its environment, so gatebot's hooks inside it reach the same gatebot
//!    as the same agent and tag their requests with the task;
//! 3. while it runs: its output lines become progress, sent at most every
//!    [`PROGRESS_EVERY`]; with no output, an empty report renews the lease (a third of
//!    the lease's length apart at most); a report refused because the task was
//!    cancelled (or its lease lost) stops the command;
//! 4. at the intent's timeout: SIGTERM to the group, SIGKILL [`KILL_AFTER`] later,
//!    and the task fails saying so;
//! 5. at exit: 0 completes the task with the output's tail (or the `result` of a
//!    Claude Code JSON answer, with its session and cost; see
//!    [`crate::inbox::output`]) as result, anything else fails it with the end of
//!    stderr. The daemon then reads the result for failure patterns and pending
//!    questions, so a "success" can still fail or wait for the owner.
//!
//! While the agent is paused (claims and reports answered `409 agent_paused`), the
//! worker says so once, with who paused it and why, stops a command under way (its
//! task was queued again), and claims again every [`PAUSED_RETRY`] until an owner
//! resumes the agent; then it says so and goes on.
//!
//! SIGTERM or SIGINT stops the worker: commands under way are stopped (SIGTERM, then
//! SIGKILL) and not reported, so their leases lapse and the tasks are queued again
//! (once) for the next worker. `--once` runs one task and exits: 0 when it completed,
//! 1 when it did not (failed, timed out, waits for the owner, cancelled), 2 on errors.

use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{EXIT_ERROR, EXIT_GO, EXIT_NO};
use crate::client::discover::SOCKET_ENV;
use crate::client::endpoint::{CA_FILE_ENV, URL_ENV};
use crate::client::{Client, ClientError, Endpoint, Response};
use crate::inbox::output::{self, Line};
use crate::inbox::wire::{ClaimAnswer, ClaimedView, TaskView};
use crate::inbox::{tail, TaskStatus};

/// Progress goes out at most this often (the daemon edits cards less often still).
pub const PROGRESS_EVERY: Duration = Duration::from_secs(2);
/// After SIGTERM, how long a command has before SIGKILL.
pub const KILL_AFTER: Duration = Duration::from_secs(5);
/// How long one claim waits for a task (below the client's call timeout).
const CLAIM_WAIT: Duration = Duration::from_secs(30);
/// While the agent is paused, how often the worker asks again.
pub const PAUSED_RETRY: Duration = Duration::from_secs(2);
/// How much of the output is kept for the result, in characters.
const OUTPUT_TAIL: usize = 4000;
/// The most of a result sent, in characters: even at four bytes a character it stays
/// well within the daemon's default body limit (64 KiB).
const RESULT_MAX: usize = 8000;
/// The most of one progress report sent, in characters (the daemon keeps 500).
const PROGRESS_MAX: usize = 2000;
/// How much of stderr a failure quotes.
const STDERR_TAIL: usize = 1500;
/// After the command exits, how long its output pipes may take to close (a child it
/// left behind may hold them open).
const DRAIN: Duration = Duration::from_secs(2);
/// Attempts for a final report, and the longest wait between two.
const REPORT_ATTEMPTS: u32 = 6;

/// What `gatebot worker` was asked to do.
#[derive(Debug, Clone)]
pub struct Worker {
    pub agent: String,
    pub concurrency: usize,
    pub once: bool,
    pub command: Vec<String>,
    /// The agents' socket or endpoints (its token and timeout are set here).
    pub client: Client,
    /// `--ca-file` / `GATEBOT_CA_FILE`, passed on to the command's hooks.
    pub ca_file: Option<PathBuf>,
    pub token: Option<String>,
}

/// How a task ended, for this worker.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    /// The daemon's status after the final report.
    Reported(TaskStatus),
    /// Stopped without a report: cancelled, lease lost, or the worker stopping.
    Abandoned(String),
}

/// Runs the worker until it is stopped (or, with `--once`, after one task).
pub(super) async fn run(w: Worker) -> Result<u8, String> {
    if w.agent.trim().is_empty() {
        return Err("--agent is empty".into());
    }
    if w.concurrency == 0 || w.concurrency > 64 {
        return Err(format!(
            "--concurrency must be 1 to 64, got {}",
            w.concurrency
        ));
    }
    let stop = CancellationToken::new();
    tokio::spawn(stop_on_signal(stop.clone()));
    let client = w
        .client
        .clone()
        .with_token(w.token.clone())
        .with_timeout(CLAIM_WAIT + Duration::from_secs(30));
    let w = Arc::new(w);
    eprintln!(
        "worker: agent {} runs `{}` for its tasks ({} at a time{})",
        w.agent,
        w.command.join(" "),
        if w.once { 1 } else { w.concurrency },
        if w.once { ", once" } else { "" }
    );
    if w.once {
        return match slot(&client, &w, &stop).await? {
            Some(Outcome::Reported(TaskStatus::Completed)) => Ok(EXIT_GO),
            Some(_) => Ok(EXIT_NO),
            None => Ok(EXIT_ERROR),
        };
    }
    let mut slots = Vec::new();
    for _ in 0..w.concurrency {
        let (client, w, stop) = (client.clone(), w.clone(), stop.clone());
        slots.push(tokio::spawn(async move {
            loop {
                match slot(&client, &w, &stop).await {
                    Ok(Some(_)) => {}
                    Ok(None) => return Ok(()),
                    Err(e) => {
                        stop.cancel();
                        return Err(e);
                    }
                }
            }
        }));
    }
    let mut first_error = None;
    for s in slots {
        if let Ok(Err(e)) = s.await {
            first_error.get_or_insert(e);
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(EXIT_GO),
    }
}

async fn stop_on_signal(stop: CancellationToken) {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut term) = signal(SignalKind::terminate()) else {
        return;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    eprintln!("worker: stopping; tasks under way are stopped and will be queued again");
    stop.cancel();
}

/// Claims one task (waiting as long as it takes) and runs it. `None` once stopped;
/// `Err` when the daemon refuses this worker (unknown agent, bad token, inbox off).
async fn slot(
    client: &Client,
    w: &Worker,
    stop: &CancellationToken,
) -> Result<Option<Outcome>, String> {
    let Some(task) = claim(client, w, stop).await? else {
        return Ok(None);
    };
    eprintln!(
        "worker: task {} ({}, attempt {}) claimed: {}",
        task.short_id, task.intent, task.attempt, task.summary
    );
    let outcome = run_task(client, w, &task, stop).await;
    match &outcome {
        Outcome::Reported(s) => eprintln!("worker: task {} {s}", task.short_id),
        Outcome::Abandoned(why) => eprintln!("worker: task {} stopped: {why}", task.short_id),
    }
    Ok(Some(outcome))
}

/// Claims one of the agent's tasks, asking again for as long as it takes: while the agent
/// is paused (saying so once, and when it is resumed), over its limit, or while gatebot
/// cannot be reached. `None` once stopped; `Err` when the daemon refuses this worker.
async fn claim(
    client: &Client,
    w: &Worker,
    stop: &CancellationToken,
) -> Result<Option<ClaimedView>, String> {
    let mut failures = 0u32;
    let mut paused = false;
    loop {
        if stop.is_cancelled() {
            return Ok(None);
        }
        let body = json!({"agent": w.agent, "wait": CLAIM_WAIT.as_secs_f64()});
        let call = client.post("/v1/tasks/claim", &body);
        let res = tokio::select! {
            _ = stop.cancelled() => return Ok(None),
            r = call => r,
        };
        // How long to wait before claiming again.
        let wait = match res {
            Ok(r) if r.status.is_success() => {
                failures = 0;
                if std::mem::take(&mut paused) {
                    eprintln!(
                        "worker: agent {} was resumed; claiming its tasks again",
                        w.agent
                    );
                }
                let answer: ClaimAnswer = serde_json::from_value(r.body)
                    .map_err(|e| format!("unexpected answer from gatebot: {e}"))?;
                match answer.task {
                    Some(t) => return Ok(Some(t)),
                    None => continue,
                }
            }
            // Paused: wait for an owner to resume the agent, saying so once.
            Ok(r) if r.error_code() == Some("agent_paused") => {
                if !paused {
                    eprintln!("worker: {}", paused_line(&w.agent, &r.body["error"]));
                    paused = true;
                }
                PAUSED_RETRY
            }
            // Over the agent's limit: wait as long as gatebot says, then claim again.
            Ok(r) if r.retry_after().is_some() => {
                let wait = r.retry_after().unwrap_or(Duration::from_secs(1));
                eprintln!("worker: {}; claiming again in {wait:?}", r.error_message());
                wait
            }
            // Refused for good: this worker cannot work as this agent. (A 429 without a
            // Retry-After passes: it is retried below.)
            Ok(r) if r.status.is_client_error() && r.status.as_u16() != 429 => {
                return Err(format!(
                    "gatebot refuses this worker: {} ({})",
                    r.error_message(),
                    r.error_code().unwrap_or("error")
                ))
            }
            other => {
                let why = match other {
                    Ok(r) => r.error_message(),
                    Err(e) => e.to_string(),
                };
                let wait = crate::retry::backoff(failures).min(Duration::from_secs(30));
                failures += 1;
                eprintln!("worker: cannot claim a task ({why}); retrying in {wait:?}");
                wait
            }
        };
        tokio::select! {
            _ = stop.cancelled() => return Ok(None),
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

/// The text COMMAND reads on stdin.
fn stdin_text(t: &ClaimedView) -> String {
    let Some(input) = &t.input else {
        return t.prompt.clone();
    };
    let mut s = t.prompt.clone();
    s.push_str("\n\nEarlier in this task you asked the owner:\n");
    for q in &t.questions {
        s.push_str(&format!("- {q}\n"));
    }
    s.push_str(&format!(
        "The owner answered (between the markers):\n<<<\n{input}\n>>>\nContinue the task with this answer."
    ));
    s
}

/// What the command said so far.
#[derive(Debug, Default)]
struct Output {
    /// Lines not yet sent as progress.
    fresh: Vec<String>,
    /// The end of the output, for the result.
    tail: String,
    /// The end of stderr, for a failure.
    stderr: String,
    /// A Claude Code `"type": "result"` line, if one came.
    last: Option<output::Final>,
    session_id: Option<String>,
}

fn push_tail(buf: &mut String, line: &str, max: usize) {
    buf.push_str(line);
    buf.push('\n');
    if buf.len() > max * 4 {
        *buf = tail(buf, max);
    }
}

/// Signals the command's whole process group.
fn signal_group(pid: Option<u32>, signal: i32) {
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        // SAFETY: kill(2) with a negative pid signals that process group; it has no
        // memory effects, and an already-gone group only makes it return ESRCH.
        unsafe {
            libc::kill(-pid, signal);
        }
    }
}

/// Runs COMMAND for `t` and reports the outcome; see the module docs.
async fn run_task(
    client: &Client,
    w: &Worker,
    t: &ClaimedView,
    stop: &CancellationToken,
) -> Outcome {
    let mut cmd = command(w, t);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let error = format!("the worker cannot start `{}`: {e}", w.command[0]);
            return finish(client, t, Finish::Fail(error, None, None)).await;
        }
    };
    let pid = child.id();
    if let Some(stdin) = child.stdin.take() {
        write_stdin(stdin, stdin_text(t));
    }
    let out = Arc::new(Mutex::new(Output::default()));
    let stdout = child.stdout.take().map(|s| read_stdout(s, out.clone()));
    let stderr = child
        .stderr
        .take()
        .map(|s| read_stderr(s, out.clone(), t.short_id.clone()));

    let (timeout, beat) = clocks(t);
    let deadline = tokio::time::Instant::now() + timeout;
    let mut ticker = tokio::time::interval(beat);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_progress = tokio::time::Instant::now();
    let status = loop {
        tokio::select! {
            s = child.wait() => break s,
            _ = ticker.tick() => {
                // Lines at most every PROGRESS_EVERY; a bare renewal whenever the lease
                // needs one.
                let now = tokio::time::Instant::now();
                let text = {
                    let mut o = out.lock().await;
                    (!o.fresh.is_empty() && now - last_progress >= PROGRESS_EVERY)
                        .then(|| tail(&std::mem::take(&mut o.fresh).join("\n"), PROGRESS_MAX))
                };
                if text.is_some() {
                    last_progress = now;
                }
                if let Err(why) = progress(client, t, text).await {
                    stop_group(pid, &mut child).await;
                    return Outcome::Abandoned(why);
                }
            }
            _ = tokio::time::sleep_until(deadline) => {
                stop_group(pid, &mut child).await;
                drain(stdout, stderr).await;
                let o = out.lock().await;
                let error = format!(
                    "timed out: the run took longer than the {} its intent allows; the worker \
                     stopped the command (SIGTERM, then SIGKILL)\n{}",
                    crate::words::span(timeout),
                    tail(o.tail.trim(), 500)
                );
                return finish(client, t, Finish::Fail(error, None, o.session_id.clone())).await;
            }
            _ = stop.cancelled() => {
                stop_group(pid, &mut child).await;
                return Outcome::Abandoned("the worker was stopped; the lease will lapse".into());
            }
        }
    };
    drain(stdout, stderr).await;
    let o = out.lock().await;
    let how = finished(&status, &o, &w.command[0]);
    drop(o);
    finish(client, t, how).await
}

/// How long `t` may run, and how often the worker reports on it: often enough to
/// renew its lease (a third of it), and at most every [`PROGRESS_EVERY`].
fn clocks(t: &ClaimedView) -> (Duration, Duration) {
    // The daemon keeps a task's timeout within its range (at most 7 days); a value
    // from elsewhere is held to that too, rather than overflow the clock.
    let timeout = Duration::try_from_secs_f64(t.timeout_secs)
        .unwrap_or(Duration::MAX)
        .min(crate::time::range::TASK_TIMEOUT.max);
    let beat = Duration::try_from_secs_f64(t.lease_secs / 3.0)
        .unwrap_or(PROGRESS_EVERY)
        .clamp(Duration::from_millis(200), PROGRESS_EVERY);
    (timeout, beat)
}

/// Writes `text` to the command's standard input, then closes it. A command that
/// does not read it closes it early: that is fine.
fn write_stdin(mut stdin: ChildStdin, text: String) {
    tokio::spawn(async move {
        let _ = stdin.write_all(text.as_bytes()).await;
        let _ = stdin.shutdown().await;
    });
}

/// COMMAND for `t`, with the task's environment, in a process group of its own.
fn command(w: &Worker, t: &ClaimedView) -> Command {
    let mut cmd = Command::new(&w.command[0]);
    cmd.args(&w.command[1..])
        .env("GATEBOT_TASK_ID", &t.id)
        .env("GATEBOT_TASK_INTENT", t.intent.as_str())
        .env("GATEBOT_AGENT", &w.agent)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    match &t.session_id {
        Some(s) if t.input.is_some() => cmd.env("GATEBOT_SESSION_ID", s),
        _ => cmd.env_remove("GATEBOT_SESSION_ID"),
    };
    // The hooks the command starts reach the same gatebot as the worker.
    match w.client.endpoints() {
        [Endpoint::Unix(socket)] => cmd.env(SOCKET_ENV, socket).env_remove(URL_ENV),
        list => cmd
            .env(
                URL_ENV,
                list.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
            )
            .env_remove(SOCKET_ENV),
    };
    if let Some(ca) = &w.ca_file {
        cmd.env(CA_FILE_ENV, ca);
    }
    // The hooks the command starts act as the same agent, so they need its token
    // however the worker was given it (`--token` or GATEBOT_TOKEN).
    match &w.token {
        Some(token) => cmd.env("GATEBOT_TOKEN", token),
        None => cmd.env_remove("GATEBOT_TOKEN"),
    };
    cmd
}

/// Reads the command's standard output into `out`: progress lines, the final
/// result, the session id.
fn read_stdout(s: ChildStdout, out: Arc<Mutex<Output>>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut lines = Lines::new(s);
        while let Some(line) = lines.next().await {
            let mut o = out.lock().await;
            match output::read(&line) {
                Line::Progress(p) => {
                    push_tail(&mut o.tail, &p, OUTPUT_TAIL);
                    o.fresh.push(p);
                }
                Line::Final(f) => {
                    o.session_id = f.session_id.clone().or(o.session_id.take());
                    o.last = Some(f);
                }
                Line::Skip { session_id } => {
                    if session_id.is_some() {
                        o.session_id = session_id;
                    }
                }
            }
        }
    })
}

/// Passes the command's standard error on (each line marked with the task's short
/// id) and keeps its tail in `out`.
fn read_stderr(s: ChildStderr, out: Arc<Mutex<Output>>, short: String) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut lines = Lines::new(s);
        while let Some(line) = lines.next().await {
            eprintln!("[{short}] {line}");
            push_tail(&mut out.lock().await.stderr, &line, STDERR_TAIL);
        }
    })
}

/// How a command that ended with `status` finished, from what it wrote. A failure says
/// the agent's own words when its JSON result reported an error (Claude Code's `claude`
/// exits 1 with the reason only in that result), then the end of stderr.
fn finished(status: &std::io::Result<ExitStatus>, o: &Output, program: &str) -> Finish {
    let session_id = o.session_id.clone();
    let cost = o.last.as_ref().and_then(|f| f.cost_usd);
    let said = o.last.as_ref().and_then(output::Final::error);
    let result = o
        .last
        .as_ref()
        .and_then(|f| f.result.clone())
        .unwrap_or_else(|| o.tail.trim().to_string());
    let how = match status {
        Ok(s) if s.success() && !o.last.as_ref().is_some_and(|f| f.is_error) => {
            Finish::Complete(tail(&result, RESULT_MAX), cost, session_id)
        }
        Ok(s) if s.success() => Finish::Fail(
            format!(
                "the agent reported an error: {}",
                tail(said.as_deref().unwrap_or(&result), 2000)
            ),
            cost,
            session_id,
        ),
        Ok(s) => {
            let code = s.code().map_or_else(
                || "was killed by a signal".to_string(),
                |c| format!("exited with status {c}"),
            );
            let mut detail = Vec::new();
            if let Some(said) = &said {
                detail.push(format!("the agent reported an error: {}", tail(said, 2000)));
            }
            if !o.stderr.trim().is_empty() {
                detail.push(tail(o.stderr.trim(), 1000));
            } else if said.is_none() {
                detail.push(tail(o.tail.trim(), 1000));
            }
            Finish::Fail(
                format!("`{program}` {code}\n{}", detail.join("\n"))
                    .trim()
                    .to_string(),
                cost,
                session_id,
            )
        }
        Err(e) => Finish::Fail(
            format!("cannot wait for the command: {e}"),
            cost,
            session_id,
        ),
    };
    how
}

/// The longest line read as one, in bytes; a longer one is read in pieces.
const MAX_LINE: u64 = 64 * 1024;

/// A command's output, line by line, whatever it writes: bytes that are not UTF-8 are
/// replaced (a reader that stopped at them would leave the command blocked on a full
/// pipe), and a line is at most [`MAX_LINE`] bytes (a command printing one endless
/// line must not exhaust the worker's memory).
struct Lines<R> {
    reader: BufReader<R>,
    buf: Vec<u8>,
}

impl<R: tokio::io::AsyncRead + Unpin> Lines<R> {
    fn new(r: R) -> Self {
        Lines {
            reader: BufReader::new(r),
            buf: Vec::new(),
        }
    }

    /// The next line without its line break; `None` at the end.
    async fn next(&mut self) -> Option<String> {
        self.buf.clear();
        let read = (&mut self.reader)
            .take(MAX_LINE)
            .read_until(b'\n', &mut self.buf)
            .await;
        match read {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(
                String::from_utf8_lossy(&self.buf)
                    .trim_end_matches(['\n', '\r'])
                    .to_string(),
            ),
        }
    }
}

/// SIGTERM to the command's group, SIGKILL after [`KILL_AFTER`].
async fn stop_group(pid: Option<u32>, child: &mut tokio::process::Child) {
    signal_group(pid, libc::SIGTERM);
    if tokio::time::timeout(KILL_AFTER, child.wait())
        .await
        .is_err()
    {
        signal_group(pid, libc::SIGKILL);
        let _ = child.wait().await;
    }
}

async fn drain(
    stdout: Option<tokio::task::JoinHandle<()>>,
    stderr: Option<tokio::task::JoinHandle<()>>,
) {
    for h in [stdout, stderr].into_iter().flatten() {
        let _ = tokio::time::timeout(DRAIN, h).await;
    }
}

/// Sends progress (or only renews the lease). `Err` when the task is no longer this
/// worker's to run: cancelled, or its lease lost.
async fn progress(client: &Client, t: &ClaimedView, text: Option<String>) -> Result<(), String> {
    let mut body = json!({"lease": t.lease});
    if let Some(text) = text {
        body["text"] = json!(text);
    }
    match client
        .post_made(&format!("/v1/tasks/{}/progress", t.id), &body)
        .await
    {
        Ok(r) if r.status.as_u16() == 409 => Err(r.error_message()),
        Ok(r) if r.status.as_u16() == 404 => Err(r.error_message()),
        // A daemon restarting, a slow answer: the lease has slack; try again next tick.
        _ => Ok(()),
    }
}

/// The final report.
enum Finish {
    Complete(String, Option<f64>, Option<String>),
    Fail(String, Option<f64>, Option<String>),
}

/// Sends the final report, retrying while the daemon cannot be reached.
async fn finish(client: &Client, t: &ClaimedView, how: Finish) -> Outcome {
    let (path, body) = match how {
        Finish::Complete(result, cost, session) => (
            "complete",
            json!({"lease": t.lease, "result": if result.is_empty() { "(no output)".to_string() } else { result },
                   "cost_usd": cost, "session_id": session}),
        ),
        Finish::Fail(error, cost, session) => (
            "fail",
            json!({"lease": t.lease, "error": error, "cost_usd": cost, "session_id": session}),
        ),
    };
    let body = strip_nulls(body);
    let url = format!("/v1/tasks/{}/{path}", t.id);
    for attempt in 0..REPORT_ATTEMPTS {
        match client.post_made(&url, &body).await {
            Ok(r) if r.status.is_success() => {
                return match serde_json::from_value::<TaskView>(r.body) {
                    Ok(v) => Outcome::Reported(v.status),
                    Err(e) => Outcome::Abandoned(format!("unexpected answer from gatebot: {e}")),
                };
            }
            // Over the agent's limit: wait as long as gatebot says (the lease has slack).
            Ok(r) if r.retry_after().is_some() => {
                let wait = r.retry_after().unwrap_or(Duration::from_secs(1));
                eprintln!("worker: {}; reporting again in {wait:?}", r.error_message());
                tokio::time::sleep(wait).await;
                continue;
            }
            Ok(r) if r.status.is_client_error() => return Outcome::Abandoned(refused(&r)),
            Ok(r) => eprintln!("worker: cannot report: {}", r.error_message()),
            Err(e) if e.is_transient() || matches!(e, ClientError::TimedOut(_)) => {
                eprintln!("worker: cannot reach gatebot to report ({e}); retrying");
            }
            Err(e) => eprintln!("worker: cannot report: {e}"),
        }
        tokio::time::sleep(crate::retry::backoff(attempt).min(Duration::from_secs(10))).await;
    }
    Outcome::Abandoned("gatebot could not be told; the lease will lapse".into())
}

/// "agent claude-code is paused by alice on the command line since 2026-…Z: runaway loop; waiting
/// until an owner resumes it", from an `agent_paused` error.
fn paused_line(agent: &str, error: &Value) -> String {
    let mut s = format!("agent {agent} is paused");
    if let Some(by) = error["paused_by"].as_str() {
        s.push_str(&format!(" by {by}"));
    }
    if let Some(at) = error["paused_at"].as_str() {
        s.push_str(&format!(" since {at}"));
    }
    if let Some(why) = error["reason"].as_str() {
        s.push_str(&format!(": {why}"));
    }
    s.push_str("; waiting until an owner resumes it");
    s
}

fn refused(r: &Response) -> String {
    format!(
        "{} ({})",
        r.error_message(),
        r.error_code().unwrap_or("error")
    )
}

fn strip_nulls(mut v: Value) -> Value {
    if let Value::Object(m) = &mut v {
        m.retain(|_, x| !x.is_null());
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbox::Intent;

    fn claimed(input: Option<&str>) -> ClaimedView {
        ClaimedView {
            id: "01J".into(),
            short_id: "k7m2".into(),
            intent: Intent::Question,
            summary: "s".into(),
            prompt: "Answer this.".into(),
            lease: "l".into(),
            lease_secs: 60.0,
            timeout_secs: 300.0,
            attempt: 1,
            questions: input
                .map(|_| vec!["Which branch?".into()])
                .unwrap_or_default(),
            input: input.map(str::to_string),
            session_id: None,
        }
    }

    #[test]
    fn a_resumed_task_carries_the_questions_and_the_answer() {
        assert_eq!(stdin_text(&claimed(None)), "Answer this.");
        let s = stdin_text(&claimed(Some("main")));
        assert!(
            s.starts_with("Answer this.\n\nEarlier in this task you asked"),
            "{s}"
        );
        assert!(s.contains("- Which branch?\n"), "{s}");
        assert!(s.contains("<<<\nmain\n>>>"), "{s}");
    }

    #[tokio::test]
    async fn output_is_read_whatever_its_bytes_and_line_lengths() {
        let mut bytes = b"plain\r\nbad \xff byte\n".to_vec();
        bytes.extend(std::iter::repeat_n(b'x', MAX_LINE as usize + 10));
        bytes.extend(b"\nlast");
        let mut lines = Lines::new(&bytes[..]);
        assert_eq!(lines.next().await.as_deref(), Some("plain"));
        assert_eq!(lines.next().await.as_deref(), Some("bad \u{fffd} byte"));
        assert_eq!(lines.next().await.map(|l| l.len()), Some(MAX_LINE as usize));
        assert_eq!(lines.next().await.as_deref(), Some("xxxxxxxxxx"));
        assert_eq!(lines.next().await.as_deref(), Some("last"));
        assert_eq!(lines.next().await, None);
    }

    #[test]
    fn the_output_tail_stays_bounded() {
        let mut buf = String::new();
        for i in 0..10_000 {
            push_tail(&mut buf, &format!("line {i}"), 100);
        }
        assert!(buf.len() <= 100 * 4 + 20, "{}", buf.len());
        assert!(buf.contains("line 9999"));
    }
}
