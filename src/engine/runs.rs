//! Workflow runs in the engine: the only code that changes a run or a check-in.
//!
//! 1. [`Engine::start_run`] stores a run for an authenticated agent (an idempotency key
//!    returns the same run).
//! 2. [`Engine::run_event`] validates an event, normalizes its problems and has the store
//!    evaluate and record it in one transaction, against the agent's settings in force
//!    (a reload applies from the next event). A check-in that asks is a new subject:
//!    it is published as [`Event::Subject`], so delivery posts its cards, and the
//!    expiry task is woken for its deadline.
//! 3. The owner answers with [`Engine::answer_check_in`] (CLI, Telegram, Slack): the
//!    first answer wins, and one after the deadline loses to it (the check-in expires
//!    then and there). The answer, and [`Engine::run_expiry`]'s expiry of a check-in
//!    nobody answered (which stops the run), are published as [`Event::Subject`] too.
//! 4. The agent long-polls with [`Engine::wait_run`], woken by those events.

use std::time::Duration;

use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use tracing::{info, info_span, warn, Instrument};

use super::{Engine, EngineError, Event, What};
use crate::metrics::CheckInEnd;
use crate::names::valid_agent_name;
use crate::store::{NewEvent, NewRun, RunInserted, RunLookup};
use crate::time::now_ms;
use crate::wire::MAX_KEY_LEN;
use crate::workflow::evaluate::{normalize, IssueKind, ResultHandling, StepResult};
use crate::workflow::run::Answered;
use crate::workflow::run::{CheckIn, CheckInAnswer, CheckInStatus, Run, RunIssue, RunStatus};
use crate::workflow::wire::{
    valid_phase, EventBody, MAX_ARTIFACTS, MAX_ARTIFACT_NAME_CHARS, MAX_ISSUES_PER_EVENT,
    MAX_ISSUE_CHARS, MAX_TITLE_CHARS, MAX_URL_LEN,
};
use crate::workflow::StopCause;

pub use crate::store::{EventOutcome, Recorded, RunFilter};

/// A run as an agent starts it.
#[derive(Debug, Clone)]
pub struct RunStart {
    pub agent: String,
    pub title: String,
    pub workflow: Option<String>,
    pub idempotency_key: Option<String>,
}

fn invalid(field: &'static str, message: impl Into<String>) -> EngineError {
    EngineError::invalid(field, message)
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// Checks a run's start; bad input stores nothing.
fn validate_start(start: &RunStart) -> Result<(), EngineError> {
    if !valid_agent_name(&start.agent) {
        return Err(invalid(
            "agent",
            "`agent` must be 1-64 letters, digits, '-', '_' or '.'",
        ));
    }
    let title = start.title.trim();
    if title.is_empty() || chars(&start.title) > MAX_TITLE_CHARS {
        return Err(invalid(
            "title",
            format!("`title` must be 1-{MAX_TITLE_CHARS} characters and not blank"),
        ));
    }
    if start.title.chars().any(char::is_control) {
        return Err(invalid(
            "title",
            "`title` must not contain control characters",
        ));
    }
    if let Some(w) = &start.workflow {
        if !valid_agent_name(w) {
            return Err(invalid(
                "workflow",
                "`workflow` must be 1-64 letters, digits, '-', '_' or '.' (a name like `release`)",
            ));
        }
    }
    if let Some(k) = &start.idempotency_key {
        if k.is_empty() || k.len() > MAX_KEY_LEN {
            return Err(invalid(
                "idempotency_key",
                format!("`idempotency_key` must be 1-{MAX_KEY_LEN} bytes"),
            ));
        }
    }
    Ok(())
}

/// An event's warnings or errors, checked and normalized (severity read from the text
/// where none is given).
fn normalized(
    kind: IssueKind,
    list: &[crate::workflow::wire::ReportedIssue],
) -> Result<Vec<crate::workflow::Issue>, EngineError> {
    list.iter()
        .enumerate()
        .map(|(i, r)| {
            let field = format!("{}[{i}]", kind.plural());
            if r.text.trim().is_empty() || chars(&r.text) > MAX_ISSUE_CHARS {
                return Err(invalid(
                    "issues",
                    format!("`{field}.text` must be 1-{MAX_ISSUE_CHARS} characters and not blank"),
                ));
            }
            if r.severity.as_ref().is_some_and(|s| s.len() > 32) {
                return Err(invalid(
                    "issues",
                    format!("`{field}.severity` must be low, medium or high"),
                ));
            }
            Ok(normalize(kind, &r.text, r.severity.as_deref()))
        })
        .collect::<Result<Vec<_>, _>>()
}

/// An event's artifacts: how many, their names and links.
fn check_artifacts(artifacts: &[crate::workflow::run::Artifact]) -> Result<(), EngineError> {
    if artifacts.len() > MAX_ARTIFACTS {
        return Err(invalid(
            "artifacts",
            format!("an event may carry at most {MAX_ARTIFACTS} artifacts"),
        ));
    }
    for (i, a) in artifacts.iter().enumerate() {
        if a.name.trim().is_empty()
            || chars(&a.name) > MAX_ARTIFACT_NAME_CHARS
            || a.name.chars().any(char::is_control)
        {
            return Err(invalid("artifacts", format!(
                "`artifacts[{i}].name` must be 1-{MAX_ARTIFACT_NAME_CHARS} characters without control characters"
            )));
        }
        if let Some(url) = &a.url {
            if url.is_empty() || url.len() > MAX_URL_LEN || url.chars().any(char::is_control) {
                return Err(invalid(
                    "artifacts",
                    format!(
                    "`artifacts[{i}].url` must be 1-{MAX_URL_LEN} bytes without control characters"
                ),
                ));
            }
        }
    }
    Ok(())
}

/// Checks an event and turns it into what the store evaluates; bad input stores nothing.
fn validate_event(body: EventBody) -> Result<NewEvent, EngineError> {
    // The whole event as the agent sent it (but its key): a repeat of the key must match
    // it all, or a new error sent under an old key would be dropped.
    let content_hash = body.idempotency_key.as_ref().map(|_| {
        let content = EventBody {
            idempotency_key: None,
            ..body.clone()
        };
        crate::store::content_hash(&serde_json::to_value(&content).unwrap_or_default())
    });
    if !valid_phase(&body.phase) {
        return Err(invalid(
            "phase",
            "`phase` must be 1-128 characters, not blank, without control characters",
        ));
    }
    if let Some(step) = &body.step {
        if !valid_phase(step) {
            return Err(invalid(
                "step",
                "`step` must be 1-128 characters, not blank, without control characters",
            ));
        }
    }
    let reported = body.warnings.len() + body.errors.len();
    if reported > MAX_ISSUES_PER_EVENT {
        return Err(invalid("issues", format!(
            "an event may carry at most {MAX_ISSUES_PER_EVENT} warnings and errors together, got {reported}"
        )));
    }
    let warnings = normalized(IssueKind::Warning, &body.warnings)?;
    let errors = normalized(IssueKind::Error, &body.errors)?;
    check_artifacts(&body.artifacts)?;
    if let Some(k) = &body.idempotency_key {
        if k.is_empty() || k.len() > MAX_KEY_LEN {
            return Err(invalid(
                "idempotency_key",
                format!("`idempotency_key` must be 1-{MAX_KEY_LEN} bytes"),
            ));
        }
    }
    let handling = body.result_handling.unwrap_or_default();
    let defaults = ResultHandling::default();
    Ok(NewEvent {
        step: StepResult {
            event: body.event,
            phase: body.phase,
            step: body.step,
            warnings,
            errors,
            handling: ResultHandling {
                on_failure: handling.on_failure.unwrap_or(defaults.on_failure),
                on_warning: handling.on_warning.unwrap_or(defaults.on_warning),
            },
        },
        artifacts: body.artifacts,
        idempotency_key: body.idempotency_key,
        content_hash,
    })
}

impl Engine {
    /// Starts a run for `start.agent`, which the caller has authenticated. Returns the
    /// run and whether it is new (false: an earlier start with the same key).
    pub async fn start_run(&self, start: RunStart) -> Result<(Run, bool), EngineError> {
        validate_start(&start)?;
        let _acting = self.acting(&start.agent).await?;
        let new = NewRun {
            agent: start.agent,
            title: start.title.trim().to_string(),
            workflow: start.workflow,
            idempotency_key: start.idempotency_key.clone(),
            created_at: now_ms(),
        };
        match self.count_held_back(self.blocking(move |s| s.start_run(&new)).await)? {
            RunInserted::New(run) => {
                info!(run = %run.id, short_id = %run.short_id, agent = %run.agent, "run started");
                self.metrics.run_started();
                Ok((run, true))
            }
            RunInserted::Existing(run) => Ok((run, false)),
            RunInserted::Conflict(run) => Err(EngineError::IdempotencyConflict {
                key: start.idempotency_key.unwrap_or_default(),
                what: What::Run,
                id: run.short_id,
            }),
        }
    }

    /// A run by its full id.
    pub async fn get_run(&self, id: &str) -> Result<Run, EngineError> {
        let i = id.to_string();
        self.blocking(move |s| s.run(&i))
            .await?
            .ok_or_else(|| EngineError::not_found(What::Run, id))
    }

    /// A run by full id or short id, and with `prefixes` by a unique prefix (4+).
    pub async fn lookup_run(&self, typed: &str, prefixes: bool) -> Result<Run, EngineError> {
        let t = typed.to_string();
        match self.blocking(move |s| s.lookup_run(&t, prefixes)).await? {
            RunLookup::Found(run) => Ok(*run),
            RunLookup::Ambiguous(candidates) => Err(EngineError::Ambiguous {
                what: What::Run,
                typed: typed.to_string(),
                candidates,
            }),
            RunLookup::NotFound => Err(EngineError::not_found(What::Run, typed)),
        }
    }

    /// One page of runs, newest first.
    pub async fn list_runs(&self, filter: RunFilter) -> Result<Vec<Run>, EngineError> {
        self.blocking(move |s| s.list_runs(&filter)).await
    }

    /// A check-in by its full id.
    pub async fn check_in(&self, id: &str) -> Result<CheckIn, EngineError> {
        let i = id.to_string();
        self.blocking(move |s| s.check_in(&i))
            .await?
            .ok_or_else(|| EngineError::not_found(What::CheckIn, id))
    }

    /// The problems check-in `id` shows.
    pub async fn check_in_issues(&self, id: &str) -> Result<Vec<RunIssue>, EngineError> {
        let i = id.to_string();
        self.blocking(move |s| s.check_in_issues(&i)).await
    }

    /// The oldest `limit` waiting check-ins (of `agent`, if given) with their runs.
    pub async fn waiting_check_ins(
        &self,
        agent: Option<String>,
        limit: usize,
    ) -> Result<Vec<(CheckIn, Run)>, EngineError> {
        self.blocking(move |s| s.waiting_check_ins(agent.as_deref(), limit))
            .await
    }

    /// How many check-ins wait for their owner.
    pub async fn count_waiting_check_ins(&self) -> Result<usize, EngineError> {
        self.blocking(|s| s.count_waiting_check_ins()).await
    }

    /// Records and evaluates one event of `run` (which the caller has authorised).
    pub async fn run_event(&self, run: &Run, body: EventBody) -> Result<Recorded, EngineError> {
        let new = validate_event(body)?;
        let acting = self.acting(&run.agent).await?;
        let config = self.config();
        let workflow = config.workflow.for_agent(&run.agent).clone();
        let ttl_ms = i64::try_from(workflow.check_in_ttl.as_millis()).unwrap_or(i64::MAX);
        let id = run.id.clone();
        let recorded = self.count_held_back(
            self.blocking(move |s| s.record_event(&id, &new, &workflow.settings, ttl_ms, now_ms()))
                .await,
        )?;
        drop(acting);
        if let Recorded::Evaluated(outcome) = &recorded {
            self.announce_event(outcome);
        }
        Ok(recorded)
    }

    /// Logs, counts and publishes what an evaluated event did.
    fn announce_event(&self, o: &EventOutcome) {
        let run = &o.run;
        let _span = info_span!("run", run = %run.id, agent = %run.agent).entered();
        for kind in &o.truncated {
            info!(
                run = %run.id, kind = kind.plural(),
                "Limit reached, truncating collection: {}", kind.plural()
            );
        }
        info!(
            run = %run.id, seq = o.seq, action = o.action.as_str(),
            reason = o.reason.as_deref().unwrap_or(""), "run event evaluated"
        );
        if let Some(cause) = run.stopped_by.filter(|_| run.status == RunStatus::Stopped) {
            self.metrics.run_stopped(cause);
        }
        if let Some(c) = o
            .check_in
            .as_ref()
            .filter(|c| c.status == CheckInStatus::Waiting)
        {
            info!(
                check_in = %c.id, short_id = c.short_id.as_deref().unwrap_or(""),
                run = %run.id, "check-in asks the owner"
            );
            self.metrics.check_in_asked();
            self.deadlines_changed.notify_one();
            self.publish(Event::Subject(c.id.clone()));
        }
    }

    /// Applies an owner's answer to check-in `id` (a full id). Channels must check that
    /// the actor is an approver before calling this.
    pub async fn answer_check_in(
        &self,
        id: &str,
        answer: CheckInAnswer,
    ) -> Result<Answered, EngineError> {
        // Its own span, as for requests: chat platforms call this as well as the API.
        let span = info_span!(
            "decide", id = %id, by = %answer.actor, via = answer.via.as_str()
        );
        let (i, a) = (id.to_string(), answer.clone());
        let answered = self
            .blocking(move |s| s.answer_check_in(&i, &a, now_ms()))
            .instrument(span.clone())
            .await?;
        let _span = span.entered();
        match &answered {
            Answered::Done(c, run) => {
                info!(
                    check_in = %c.id, run = %run.id, answer = answer.answer.as_str(),
                    by = %answer.actor, via = answer.via.as_str(), "check-in answered"
                );
                self.metrics.check_in_settled(match c.status {
                    CheckInStatus::Stopped => CheckInEnd::Stopped,
                    _ => CheckInEnd::Continued,
                });
                if run.status == RunStatus::Stopped {
                    self.metrics.run_stopped(StopCause::Owner);
                }
                self.deadlines_changed.notify_one();
                self.publish(Event::Subject(c.id.clone()));
            }
            Answered::Expired(c, run) => {
                self.announce_check_in_expired(c, run);
                self.deadlines_changed.notify_one();
            }
            Answered::Already(..) | Answered::NotFound => {}
        }
        Ok(answered)
    }

    /// Logs, counts and publishes a check-in's expiry. Called once per expiry, by
    /// whichever transition made it.
    pub(super) fn announce_check_in_expired(&self, c: &CheckIn, run: &Run) {
        warn!(
            check_in = %c.id, short_id = c.short_id.as_deref().unwrap_or(""), run = %run.id,
            agent = %run.agent, "check-in expired unanswered; the run stops"
        );
        self.metrics.check_in_settled(CheckInEnd::Expired);
        self.metrics.run_stopped(StopCause::Expiry);
        self.publish(Event::Subject(c.id.clone()));
    }

    /// Waits until run `id` no longer waits at a check-in, `timeout` passes, or `stop`
    /// fires; returns the run as it is then.
    pub async fn wait_run(
        &self,
        id: &str,
        timeout: Duration,
        stop: &CancellationToken,
    ) -> Result<Run, EngineError> {
        // Subscribe before reading, so an answer between the read and the wait is seen.
        let mut rx = self.subscribe();
        let run = self.get_run(id).await?;
        if run.status != RunStatus::Waiting || timeout.is_zero() {
            return Ok(run);
        }
        let check_in = run.check_in.clone();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => return self.get_run(id).await,
                _ = stop.cancelled() => return self.get_run(id).await,
                ev = rx.recv() => match ev {
                    Ok(Event::Subject(s)) if Some(&s) == check_in.as_ref() => {
                        let run = self.get_run(id).await?;
                        if run.status != RunStatus::Waiting {
                            return Ok(run);
                        }
                    }
                    Ok(_) => {}
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let run = self.get_run(id).await?;
                        if run.status != RunStatus::Waiting {
                            return Ok(run);
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return self.get_run(id).await,
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workflow::run::Artifact;
    use crate::workflow::wire::ReportedIssue;
    use crate::workflow::EventType;

    fn body(phase: &str) -> EventBody {
        EventBody {
            event: EventType::StepComplete,
            phase: phase.into(),
            step: None,
            warnings: vec![],
            errors: vec![],
            artifacts: vec![],
            result_handling: None,
            idempotency_key: None,
        }
    }

    #[test]
    fn bad_events_are_refused_with_the_field_named() {
        let issue = |text: &str| ReportedIssue {
            text: text.into(),
            severity: None,
        };
        let many = || (0..=MAX_ISSUES_PER_EVENT).map(|_| issue("w")).collect();
        // (event, words in the error)
        let cases: Vec<(EventBody, &str)> = vec![
            (body(""), "`phase`"),
            (body("a\u{7}b"), "`phase`"),
            (
                EventBody {
                    step: Some(" ".into()),
                    ..body("p")
                },
                "`step`",
            ),
            (
                EventBody {
                    warnings: vec![issue("ok"), issue("  ")],
                    ..body("p")
                },
                "`warnings[1].text`",
            ),
            (
                EventBody {
                    errors: vec![issue(&"x".repeat(MAX_ISSUE_CHARS + 1))],
                    ..body("p")
                },
                "`errors[0].text`",
            ),
            (
                EventBody {
                    warnings: many(),
                    ..body("p")
                },
                "at most 500",
            ),
            (
                EventBody {
                    artifacts: vec![Artifact {
                        name: "".into(),
                        url: None,
                    }],
                    ..body("p")
                },
                "`artifacts[0].name`",
            ),
            (
                EventBody {
                    artifacts: vec![Artifact {
                        name: "log".into(),
                        url: Some("".into()),
                    }],
                    ..body("p")
                },
                "`artifacts[0].url`",
            ),
            (
                EventBody {
                    idempotency_key: Some(String::new()),
                    ..body("p")
                },
                "`idempotency_key`",
            ),
        ];
        for (b, words) in cases {
            let e = validate_event(b).unwrap_err().to_string();
            assert!(e.contains(words), "{words}: {e}");
        }
        let ok = validate_event(EventBody {
            warnings: vec![ReportedIssue {
                text: "Style issue".into(),
                severity: None,
            }],
            errors: vec![ReportedIssue {
                text: "x".into(),
                severity: Some("bogus".into()),
            }],
            ..body("build")
        })
        .unwrap();
        assert_eq!(ok.step.warnings[0].severity, crate::workflow::Severity::Low);
        assert_eq!(
            ok.step.errors[0].severity,
            crate::workflow::Severity::Medium
        );
        assert_eq!(ok.step.handling, ResultHandling::default());
    }

    #[test]
    fn bad_starts_are_refused() {
        let start = |agent: &str, title: &str, workflow: Option<&str>| RunStart {
            agent: agent.into(),
            title: title.into(),
            workflow: workflow.map(str::to_string),
            idempotency_key: None,
        };
        for (s, words) in [
            (start("bad name", "t", None), "`agent`"),
            (start("a", "  ", None), "`title`"),
            (start("a", &"t".repeat(201), None), "`title`"),
            (start("a", "line\nbreak", None), "control"),
            (start("a", "t", Some("re lease")), "`workflow`"),
        ] {
            let e = validate_start(&s).unwrap_err().to_string();
            assert!(e.contains(words), "{words}: {e}");
        }
        assert!(validate_start(&start("a", "Release 2.4", Some("release"))).is_ok());
    }
}
