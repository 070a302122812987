//! `gatebot workflow start|event|status` (an agent's runs, for scripts and pipelines)
//! and `gatebot workflows` (the owner's list).
//!
//! Exit codes of `workflow event` and `workflow status`: 0 continue (or completed);
//! 1 stop (the reason on stderr); 2 error; 3 still waiting for the owner when `--wait`
//! ran out (the check-in stays open; `workflow status RUN --wait D` waits again).

use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::{json, Value};

use super::out::outln;
use super::{encode, expect_ok, pretty, EXIT_GO, EXIT_NO, EXIT_PENDING};
use crate::client::Client;
use crate::time::range;
use crate::workflow::run::{Action, RunStatus};
use crate::workflow::wire::{
    CheckInView, EventAnswer, EventBody, HandlingBody, ReportedIssue, RunView,
};
use crate::workflow::{EventType, Handling, Severity};

#[derive(Debug, Subcommand)]
pub enum WorkflowCommand {
    /// Start a workflow run as an agent; prints the run's id.
    Start(StartArgs),
    /// Report a step, phase or workflow complete; exit 0 continue, 1 stop, 3 still
    /// waiting for the owner.
    Event(EventArgs),
    /// Show a run; with --wait, wait for the owner to answer its check-in.
    Status {
        /// The run's id (or short id).
        run: String,
        /// Wait up to this long for the check-in's answer, e.g. 30s or 10m.
        #[arg(long)]
        wait: Option<String>,
        /// The agent's token, if it has one.
        #[arg(long, env = "GATEBOT_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// Print the data as JSON (what the API answers) instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct StartArgs {
    /// The agent whose run it is.
    #[arg(long)]
    pub agent: String,
    /// What the run does, for the owner.
    #[arg(long)]
    pub title: String,
    /// The kind of workflow, a plain name (release, migration).
    #[arg(long)]
    pub workflow: Option<String>,
    /// The same key returns the same run instead of starting another.
    #[arg(long)]
    pub idempotency_key: Option<String>,
    /// The agent's token, if it has one.
    #[arg(long, env = "GATEBOT_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Print the API's JSON instead of the id.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct EventArgs {
    /// The run's id (or short id).
    pub run: String,
    /// step_complete, phase_complete or workflow_complete.
    #[arg(long = "type")]
    pub event: String,
    /// The phase the event belongs to (`build`, `review`).
    #[arg(long)]
    pub phase: String,
    /// The step within the phase, if any (`lint`).
    #[arg(long)]
    pub step: Option<String>,
    /// A warning, `TEXT` or `TEXT:SEVERITY` (low, medium, high; without one, the
    /// severity is detected from the text). Repeat for more.
    #[arg(long = "warning")]
    pub warnings: Vec<String>,
    /// An error, like --warning.
    #[arg(long = "error")]
    pub errors: Vec<String>,
    /// Something the step produced: `NAME` or `NAME=URL`. Repeat for more.
    #[arg(long = "artifact")]
    pub artifacts: Vec<String>,
    /// What a warning beyond tolerance does: stop (default), ask or continue.
    #[arg(long)]
    pub on_warning: Option<String>,
    /// What an error beyond tolerance does: stop (default), ask or continue.
    #[arg(long)]
    pub on_failure: Option<String>,
    /// The same key for the same run returns the first answer (safe to retry).
    #[arg(long)]
    pub idempotency_key: Option<String>,
    /// How long to wait for the owner at a check-in (default: until answered or expired).
    #[arg(long)]
    pub wait: Option<String>,
    /// The agent's token, if it has one.
    #[arg(long, env = "GATEBOT_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Print the API's JSON: the event's answer, or the run after waiting.
    #[arg(long)]
    pub json: bool,
}

/// `gatebot workflows`: the owner's list of runs.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only this agent's runs.
    #[arg(long)]
    pub agent: Option<String>,
    /// Only runs that are running, waiting, stopped or completed.
    #[arg(long)]
    pub status: Option<String>,
    /// At most this many (1-1000), newest first.
    #[arg(long, default_value_t = 100)]
    pub limit: usize,
    /// Print the data as JSON (what the API answers) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `TEXT[:SEVERITY]`: the part after the last `:` is a severity only if it names one,
/// so texts with colons of their own ("error: x", URLs) stay whole.
#[must_use]
pub fn parse_issue(s: &str) -> ReportedIssue {
    if let Some((text, severity)) = s.rsplit_once(':') {
        if Severity::parse(severity).is_some() && !text.trim().is_empty() {
            return ReportedIssue {
                text: text.to_string(),
                severity: Some(severity.trim().to_ascii_lowercase()),
            };
        }
    }
    ReportedIssue {
        text: s.to_string(),
        severity: None,
    }
}

fn parse_handling(flag: &str, v: Option<&str>) -> Result<Option<Handling>, String> {
    match v.map(|v| v.trim().to_ascii_lowercase()) {
        None => Ok(None),
        Some(v) if v == "stop" => Ok(Some(Handling::Stop)),
        Some(v) if v == "ask" => Ok(Some(Handling::Ask)),
        Some(v) if v == "continue" => Ok(Some(Handling::Continue)),
        Some(v) => Err(format!("{flag} must be stop, ask or continue, got `{v}`")),
    }
}

/// The event's body, from the flags; bad flags are errors before anything is sent.
fn event_body(a: &EventArgs) -> Result<EventBody, String> {
    let event = EventType::parse(a.event.trim()).ok_or_else(|| {
        format!(
            "--type must be step_complete, phase_complete or workflow_complete, got `{}`",
            a.event
        )
    })?;
    let on_warning = parse_handling("--on-warning", a.on_warning.as_deref())?;
    let on_failure = parse_handling("--on-failure", a.on_failure.as_deref())?;
    let result_handling = (on_warning.is_some() || on_failure.is_some()).then_some(HandlingBody {
        on_failure,
        on_warning,
    });
    Ok(EventBody {
        event,
        phase: a.phase.clone(),
        step: a.step.clone(),
        warnings: a.warnings.iter().map(|w| parse_issue(w)).collect(),
        errors: a.errors.iter().map(|e| parse_issue(e)).collect(),
        artifacts: a
            .artifacts
            .iter()
            .map(|s| match s.split_once('=') {
                Some((name, url)) => crate::workflow::run::Artifact {
                    name: name.to_string(),
                    url: Some(url.to_string()),
                },
                None => crate::workflow::run::Artifact {
                    name: s.clone(),
                    url: None,
                },
            })
            .collect(),
        result_handling,
        idempotency_key: a.idempotency_key.clone(),
    })
}

/// `workflow start`: prints the run's id (or its JSON).
pub(super) async fn start(client: &Client, a: StartArgs) -> Result<u8, String> {
    let mut body = json!({"agent": a.agent, "title": a.title});
    if let Some(w) = a.workflow {
        body["workflow"] = w.into();
    }
    // Without a key of the caller's, one of this invocation's own: a call resent to the
    // next endpoint then finds the run the first one started.
    body["idempotency_key"] = a
        .idempotency_key
        .unwrap_or_else(crate::client::fresh_idempotency_key)
        .into();
    let res = expect_ok(client.post("/v1/runs", &body).await)?;
    let run: RunView = parse(res.body.clone())?;
    if a.json {
        outln!("{}", pretty(&res.body));
    } else {
        outln!("{}", run.id);
        eprintln!(
            "run {} started: report events with `gatebot workflow event {} --type … --phase …`",
            run.short_id, run.id
        );
    }
    Ok(EXIT_GO)
}

/// `workflow event`: reports the event, waits at a check-in, exits by the action.
pub(super) async fn event(client: &Client, a: EventArgs) -> Result<u8, String> {
    let mut body = event_body(&a)?;
    // Resent to the next endpoint, the event must get the first answer, not count twice.
    body.idempotency_key
        .get_or_insert_with(crate::client::fresh_idempotency_key);
    let wait = a
        .wait
        .as_deref()
        .map(|w| super::flag_duration("--wait", w, range::CLIENT_WAIT))
        .transpose()?;
    let path = format!("/v1/runs/{}", encode(&a.run));
    let res = client
        .post_made(
            &format!("{path}/events"),
            &serde_json::to_value(&body).unwrap_or_default(),
        )
        .await
        .map_err(|e| e.to_string())?;
    // A run someone already stopped tells the pipeline to stop, as an answer would.
    if res.error_code() == Some("run_finished") {
        let run: Option<RunView> = serde_json::from_value(res.body["run"].clone()).ok();
        if let Some(run) = run.filter(|r| r.status == RunStatus::Stopped) {
            eprintln!("{}", res.error_message());
            return Ok(report(&run, a.json, None));
        }
    }
    let res = expect_ok(Ok(res))?;
    let answer: EventAnswer = parse(res.body.clone())?;
    if answer.action != Action::Wait {
        if a.json {
            outln!("{}", pretty(&res.body));
        }
        if let Some(r) = answer.check_in.as_ref().filter(|_| !a.json) {
            eprintln!("check-in: {} (a report; nothing to answer)", r.reason);
        }
        return Ok(exit_for(answer.action, answer.reason.as_deref(), a.json));
    }
    if let Some(c) = &answer.check_in {
        let short = c.short_id.as_deref().unwrap_or("?");
        // The reason is the check-in's own sentence ("… Continue?"): no second stop.
        let reason = c.reason.trim();
        let end = if reason.ends_with(['.', '?', '!']) {
            ""
        } else {
            "."
        };
        eprintln!(
            "waiting for the owner at check-in {short}: {reason}{end} They answer in chat, or \
             with `gatebot decide {short} continue|stop`."
        );
    }
    let run = wait_run(client, &format!("/v1/runs/{}", answer.run.id), wait).await?;
    Ok(report(&run, a.json, Some(&a.run)))
}

/// `workflow status`: shows the run; with --wait, waits while it waits at a check-in.
pub(super) async fn status(
    client: &Client,
    run: &str,
    wait: Option<&str>,
    json: bool,
) -> Result<u8, String> {
    let wait = wait
        .map(|w| super::flag_duration("--wait", w, range::CLIENT_WAIT))
        .transpose()?;
    let path = format!("/v1/runs/{}", encode(run));
    let view = match wait {
        Some(_) => wait_run(client, &path, wait).await?,
        None => parse(expect_ok(client.get_made(&path).await)?.body)?,
    };
    if !json {
        print_run(&view);
    }
    Ok(report(&view, json, Some(run)))
}

/// Long-polls run `path` until it no longer waits, or `total` passes (`None`: until
/// the check-in is answered or expires); a daemon restarting meanwhile is waited for
/// within the same wait ([`super::long_poll`]): the check-in survives it.
async fn wait_run(client: &Client, path: &str, total: Option<Duration>) -> Result<RunView, String> {
    let total = total.unwrap_or(Duration::MAX);
    super::long_poll(client, path, total, |r: &RunView| {
        r.status != RunStatus::Waiting
    })
    .await
}

/// Prints the run (JSON) and returns the exit code its action means.
fn report(run: &RunView, json: bool, resume: Option<&str>) -> u8 {
    if json {
        outln!("{}", pretty(&serde_json::to_value(run).unwrap_or_default()));
    }
    if run.action == Action::Wait {
        let short = run
            .check_in
            .as_ref()
            .and_then(|c| c.short_id.clone())
            .unwrap_or_default();
        eprintln!(
            "still waiting: check-in {short} is open; wait again with `gatebot workflow status {} --wait 10m`",
            resume.unwrap_or(&run.id)
        );
        return EXIT_PENDING;
    }
    exit_for(run.action, run.reason.as_deref(), json)
}

/// 0 continue (the owner's note, if any, on stdout), 1 stop (the reason on stderr).
fn exit_for(action: Action, reason: Option<&str>, json: bool) -> u8 {
    match action {
        Action::Continue => {
            if !json {
                match reason {
                    Some(r) => outln!("continue: {r}"),
                    None => outln!("continue"),
                }
            }
            EXIT_GO
        }
        Action::Stop => {
            if !json {
                outln!("stop");
            }
            eprintln!("{}", reason.unwrap_or("stopped"));
            EXIT_NO
        }
        Action::Wait => EXIT_PENDING,
    }
}

fn parse<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, String> {
    serde_json::from_value(v).map_err(|e| format!("unexpected answer from gatebot: {e}"))
}

/// A run, for people.
fn print_run(r: &RunView) {
    let workflow = r
        .workflow
        .as_deref()
        .map(|w| format!(" [{w}]"))
        .unwrap_or_default();
    outln!(
        "{}  run {} ({})  {}{workflow}  agent {}",
        r.status.as_str(),
        r.short_id,
        r.id,
        r.title,
        r.agent
    );
    let place = match (&r.phase, &r.step) {
        (Some(p), Some(s)) => format!("{p} / {s}"),
        (Some(p), None) => p.clone(),
        _ => "-".into(),
    };
    let mut totals = format!(
        "{} warning(s), {} error(s) collected",
        r.totals.warnings, r.totals.errors
    );
    if !r.not_collected.is_empty() {
        totals.push_str(&format!(
            "; {} warning(s), {} error(s) not collected (limit reached)",
            r.not_collected.warnings, r.not_collected.errors
        ));
    }
    outln!("  at {place}, {} event(s), {totals}", r.events);
    if let Some(c) = &r.check_in {
        print_check_in("  ", c);
    }
    if r.status != RunStatus::Waiting {
        if let Some(reason) = &r.reason {
            outln!("  {reason}");
        }
    }
}

/// A check-in in a line, its problems below it.
fn print_check_in(indent: &str, c: &CheckInView) {
    outln!(
        "{indent}check-in {} {}: {}{}",
        c.short_id.as_deref().unwrap_or("-"),
        c.status.as_str(),
        c.reason,
        c.expires_at
            .as_deref()
            .filter(|_| c.status == crate::workflow::run::CheckInStatus::Waiting)
            .map(|e| format!("  expires {e}"))
            .unwrap_or_default()
    );
    for (kind, list) in [("warning", &c.warnings), ("error", &c.errors)] {
        for i in list {
            let step = i
                .step
                .as_deref()
                .map(|s| format!("/{s}"))
                .unwrap_or_default();
            let beyond = if i.exceeded {
                " (beyond tolerance)"
            } else {
                ""
            };
            outln!(
                "{indent}  {:<6} {kind:<7} {}{step}: {}{beyond}",
                i.severity.as_str(),
                i.phase,
                i.text
            );
        }
    }
}

/// `gatebot workflows`: runs, newest first.
pub(super) async fn list(client: &Client, a: ListArgs) -> Result<u8, String> {
    let mut path = format!("/v1/runs?limit={}", a.limit);
    if let Some(agent) = &a.agent {
        path.push_str(&format!("&agent={}", encode(agent)));
    }
    if let Some(s) = &a.status {
        path.push_str(&format!("&status={}", encode(s)));
    }
    let res = expect_ok(client.get(&path).await)?;
    if a.json {
        outln!("{}", pretty(&res.body));
        return Ok(EXIT_GO);
    }
    let runs: Vec<RunView> = parse(res.body["runs"].clone())?;
    if runs.is_empty() {
        outln!("No workflow runs.");
    }
    for r in &runs {
        // Within 80 columns; the waiting check-in, if any, on a line of its own.
        outln!(
            "{:<8}  {:<14} {:<9} {:<20} {:<12} {:>3}w {:>3}e",
            r.short_id,
            crate::words::cut(&r.agent, 14),
            r.status.as_str(),
            crate::words::cut(&r.title, 20),
            crate::words::cut(r.phase.as_deref().unwrap_or("-"), 12),
            r.totals.warnings,
            r.totals.errors,
        );
        if let Some(s) = r.check_in.as_ref().and_then(|c| c.short_id.as_deref()) {
            outln!("          waits at check-in {s}: gatebot decide {s} continue|stop");
        }
    }
    if res.body["next"].is_string() {
        outln!("… more runs: narrow with --agent or --status, or raise --limit");
    }
    Ok(EXIT_GO)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issues_take_a_severity_after_the_last_colon_only_if_it_names_one() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            ("Style issue:low", "Style issue", Some("low")),
            ("Deprecated API:MEDIUM", "Deprecated API", Some("medium")),
            ("Security hole: high", "Security hole", Some("high")),
            ("error: disk full", "error: disk full", None),
            (
                "see https://ci.example.com/1",
                "see https://ci.example.com/1",
                None,
            ),
            ("ratio 3:1", "ratio 3:1", None),
            (":high", ":high", None),
            ("plain text", "plain text", None),
        ];
        for (input, text, severity) in cases {
            let got = parse_issue(input);
            assert_eq!(
                (got.text.as_str(), got.severity.as_deref()),
                (*text, *severity),
                "{input}"
            );
        }
    }

    #[test]
    fn bad_flags_are_errors_before_anything_is_sent() {
        let args = |event: &str, on_warning: Option<&str>| EventArgs {
            run: "r".into(),
            event: event.into(),
            phase: "p".into(),
            step: None,
            warnings: vec![],
            errors: vec![],
            artifacts: vec!["log=https://x".into(), "report".into()],
            on_warning: on_warning.map(str::to_string),
            on_failure: None,
            idempotency_key: None,
            wait: None,
            token: None,
            json: false,
        };
        assert!(event_body(&args("step_done", None))
            .unwrap_err()
            .contains("--type"));
        assert!(event_body(&args("step_complete", Some("retry")))
            .unwrap_err()
            .contains("--on-warning"));
        let ok = event_body(&args("phase_complete", Some("ASK"))).unwrap();
        assert_eq!(ok.result_handling.unwrap().on_warning, Some(Handling::Ask));
        assert_eq!(ok.artifacts[0].url.as_deref(), Some("https://x"));
        assert_eq!(ok.artifacts[1].url, None);
    }
}
