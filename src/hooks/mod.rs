//! Agent integrations: Claude Code, Codex and Gemini CLI hooks, and the shared
//! "submit, wait within a budget, answer" loop the MCP server uses too.
//!
//! A hook is a short-lived process (or, for Claude Code's `type: "http"` hooks, a
//! request to the daemon) that must answer before the agent's own hook timeout:
//! every agent treats a timed-out hook as "no opinion", which lets the action run.
//! So every integration here works to a **budget** shorter than that timeout:
//!
//! 1. Map the hook's JSON (`tool_name`, `tool_input`, …) to a [`ToolCall`].
//! 2. Submit it as the agent (`Gate::submit`); any error is a deny that says why.
//! 3. While it is pending, long-poll in slices (`Gate::wait`) until the
//!    [`Budget`]'s decision time ends. When gatebot cannot be reached mid-wait (a
//!    restart: the request survives it), try again with backoff
//!    ([`crate::retry::reconnect_delay`]) within the same budget.
//! 4. If nobody decided in time, withdraw the request (`Gate::cancel`, retried the same
//!    way) so it cannot be approved after the agent was told no, and deny with a
//!    "still queued" message. If the withdrawal loses a race with a decision, that
//!    decision is the answer.
//! 5. Render the [`Verdict`] in the agent's own JSON shape.
//!
//! Steps 2–4 together run under one hard deadline, [`Budget::answer_by`]: a call to
//! gatebot still unanswered then is dropped and the answer is a deny. Checking the
//! time only after a call returns is not enough, because a daemon that accepts a
//! connection and never answers would hold the hook past the agent's timeout, and
//! the agent would then run the action. The last part of the budget is kept for
//! withdrawing the request and for printing the answer.
//!
//! Nothing here knows how a request reaches the daemon: a `Gate` does. The hook
//! process and the MCP server use one over the agents' socket, the daemon's http
//! hook route one over its engine, so both sides share this code and neither
//! depends on the other.

pub mod claude_code;
pub mod codex;
pub mod gemini;
mod kind;

use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};
use tokio::time::{timeout, timeout_at, Instant};
use tokio_util::sync::CancellationToken;

use crate::approval::Status;
use crate::retry::reconnect_delay;
use crate::wire::{ApprovalView, SubmitBody, MAX_KEY_LEN};

pub use kind::{parse, render, Kind, Parsed};

/// Default budget for Claude Code and Codex hooks: their hook timeout defaults to
/// 600 s, and a timed-out hook fails open, so answer a minute before that.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(540);
/// Default budget for Gemini CLI hooks, whose timeout defaults to 60 000 ms.
pub const GEMINI_DEFAULT_BUDGET: Duration = Duration::from_secs(55);
/// Longest single long-poll; also how often a waiting MCP call reports progress.
pub const WAIT_SLICE: Duration = Duration::from_secs(15);
/// Longest summary a hook derives from the tool input, in characters.
const SUMMARY_CHARS: usize = 300;
/// Shortest budget: less leaves no time to submit, let alone to ask anyone.
pub const MIN_BUDGET: Duration = Duration::from_secs(1);
/// Kept at the end of a budget to print or send the answer (at most a quarter of it).
const ANSWER_RESERVE: Duration = Duration::from_millis(500);
/// Kept before that to withdraw an undecided request (at most a quarter of the budget).
const WITHDRAW_RESERVE: Duration = Duration::from_secs(2);
/// Once a hook is told to stop: how long a submit under way may still take to say
/// which request it made, and how long withdrawing that request may take. Together
/// under a second, well within Gemini CLI's 5 s between SIGTERM and SIGKILL.
pub const STOP_SUBMIT_GRACE: Duration = Duration::from_millis(300);
pub const STOP_WITHDRAW: Duration = Duration::from_millis(500);

/// The time one hook call may take, from when it started. On tokio's clock, so tests
/// can pause it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// The whole budget, as configured (at least [`MIN_BUDGET`]).
    pub total: Duration,
    pub started: Instant,
}

impl Budget {
    /// A budget of `total` (raised to [`MIN_BUDGET`]) that started at `started`.
    #[must_use]
    pub fn new(total: Duration, started: Instant) -> Budget {
        Budget {
            total: total.max(MIN_BUDGET),
            started,
        }
    }

    /// Every call to gatebot must have answered by then; what is left is for the answer.
    #[must_use]
    pub fn answer_by(&self) -> Instant {
        self.started + self.total - ANSWER_RESERVE.min(self.total / 4)
    }

    /// Waiting for a human stops then, leaving time to withdraw the request.
    #[must_use]
    pub fn decide_by(&self) -> Instant {
        self.answer_by() - WITHDRAW_RESERVE.min(self.total / 4)
    }
}

/// A tool call as gatebot sees it, derived from a hook's payload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCall {
    pub tool: String,
    pub args: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

impl ToolCall {
    /// Builds a call from a hook's tool name and input; `tool_use_id` becomes the
    /// idempotency key, so a hook that is re-run for the same call finds the same request.
    #[must_use]
    pub fn new(tool: &str, input: Value, tool_use_id: Option<&str>) -> ToolCall {
        let input = match input {
            Value::Null => json!({}),
            other => other,
        };
        ToolCall {
            tool: tool.to_string(),
            summary: summarize(tool, &input),
            args: input,
            idempotency_key: tool_use_id
                .filter(|k| !k.is_empty() && k.len() <= MAX_KEY_LEN)
                .map(str::to_string),
        }
    }

    /// The `POST /v1/requests` body for `agent`.
    #[must_use]
    pub fn submit_body(&self, agent: &str) -> SubmitBody {
        SubmitBody {
            agent: agent.to_string(),
            tool: self.tool.clone(),
            args: self.args.clone(),
            summary: self.summary.clone(),
            confidence: None,
            environment: None,
            ttl: None,
            idempotency_key: self.idempotency_key.clone(),
            task_id: None,
            accepts_edits: false,
            // No hook payload (Claude Code's, Codex's) carries what a call costs.
            cost: None,
        }
    }
}

/// One line for the owner: the input's `description` if the agent gave one,
/// else a short rendering of the command, path or arguments.
#[must_use]
pub fn summarize(tool: &str, input: &Value) -> Option<String> {
    let text = |k: &str| {
        input
            .get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let line = if let Some(d) = text("description") {
        d.to_string()
    } else if let Some(c) = text("command") {
        format!("{tool}: {c}")
    } else if let Some(p) = text("file_path").or_else(|| text("path")) {
        format!("{tool} {p}")
    } else if let Some(u) = text("url") {
        format!("{tool} {u}")
    } else {
        match input {
            Value::Object(m) if m.is_empty() => return None,
            other => format!("{tool} {other}"),
        }
    };
    Some(truncate(&line.replace(['\n', '\r'], " "), SUMMARY_CHARS))
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
    t.push('…');
    t
}

/// The answer for the agent: run it or not, and the sentence its model reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub allow: bool,
    pub message: String,
    /// What to run instead: the call as an owner edited and approved it, for clients
    /// that take an edited call back (Claude Code's `updatedInput`, the MCP tool's).
    pub updated_input: Option<serde_json::Value>,
}

impl Verdict {
    /// The verdict a settled request carries ([`crate::approval::Approval::message`]).
    #[must_use]
    pub fn from_view(v: &ApprovalView) -> Verdict {
        Verdict {
            allow: v.status.is_go(),
            message: v.message.clone(),
            updated_input: v.edited_args.clone().filter(|_| v.status.is_go()),
        }
    }

    /// gatebot could not be asked: deny, because an unchecked action must not run.
    #[must_use]
    pub fn unreachable(tool: &str, error: &str) -> Verdict {
        Verdict {
            allow: false,
            message: format!(
                "[Action not checked] {tool}: gatebot could not be asked ({error}). \
                 The action was not run."
            ),
            updated_input: None,
        }
    }

    /// The call is bigger than the daemon accepts, so no owner could be shown it.
    /// `bytes` is its size when known; `limit` is `[queue] max_body_bytes` when known.
    #[must_use]
    pub fn too_large(tool: &str, bytes: Option<usize>, limit: Option<usize>) -> Verdict {
        let size = match bytes {
            Some(n) => format!("the tool call is {n} bytes, "),
            None => "the tool call is ".to_string(),
        };
        let cap = match limit {
            Some(n) => format!("gatebot's limit of {n} bytes ([queue] max_body_bytes)"),
            None => "gatebot's limit ([queue] max_body_bytes)".to_string(),
        };
        Verdict {
            allow: false,
            message: format!(
                "[Action not checked] {tool}: {size}more than {cap}, so it could not be shown \
                 to the owner for approval. The action was not run. To approve calls this \
                 large, the owner must raise max_body_bytes in gatebot's config; until then, \
                 do it in smaller steps or ask the user to do it."
            ),
            updated_input: None,
        }
    }

    /// The hook was stopped (its agent gave up on it, or the user pressed Ctrl-C)
    /// before anyone decided; `request` is the short id when one was made.
    #[must_use]
    pub fn stopped(tool: &str, request: Option<&ApprovalView>, withdrawn: bool) -> Verdict {
        let what = match request {
            Some(v) if withdrawn => format!("so gatebot withdrew request {}", v.short_id),
            Some(v) if v.status == Status::Pending => {
                format!("and request {} may still be queued", v.short_id)
            }
            Some(v) => format!("and request {} ({}) came too late", v.short_id, v.status),
            None => "and a request it made may still be queued".to_string(),
        };
        Verdict {
            allow: false,
            message: format!(
                "[Action not decided] {tool}: gatebot's hook was stopped before anyone \
                 decided, {what}. The action was not run."
            ),
            updated_input: None,
        }
    }

    /// gatebot could not be reached to learn the decision (every endpoint down, or
    /// none that knows the request), up to the end of the budget.
    #[must_use]
    pub fn lost(v: &ApprovalView, error: &str) -> Verdict {
        Verdict {
            allow: false,
            message: format!(
                "[Action still queued] {}: gatebot could not be reached to learn whether \
                 request {} was decided ({error}); it is still queued where it was made. The \
                 action was not run. Do not run it until a later request is approved.",
                v.tool, v.short_id
            ),
            updated_input: None,
        }
    }

    /// Nobody decided within the budget.
    #[must_use]
    pub fn still_queued(v: &ApprovalView, budget: Duration, withdrawn: bool) -> Verdict {
        let tool = &v.tool;
        let wait = crate::words::span(budget);
        let message = if withdrawn {
            format!(
                "[Action not decided in time] {tool}: no human decided within {wait}, so gatebot \
                 withdrew request {}. The action was not run. Tell the user it needs their \
                 approval, and try again when they are available.",
                v.short_id
            )
        } else {
            format!(
                "[Action still queued] {tool}: no human decided within {wait}; request {} is \
                 still queued. The action was not run. Do not run it until a later request \
                 is approved.",
                v.short_id
            )
        };
        Verdict {
            allow: false,
            message,
            updated_input: None,
        }
    }
}

/// Why a call to gatebot did not give a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GateError {
    /// gatebot refused the call, or answered nonsense.
    Failed(String),
    /// gatebot could not be reached, or dropped the connection: worth another try.
    Unreachable(String),
    /// The call is larger than `[queue] max_body_bytes` (HTTP 413).
    TooLarge {
        bytes: Option<usize>,
        limit: Option<usize>,
    },
}

impl GateError {
    fn verdict(&self, tool: &str) -> Verdict {
        match self {
            GateError::Failed(e) | GateError::Unreachable(e) => Verdict::unreachable(tool, e),
            GateError::TooLarge { bytes, limit } => Verdict::too_large(tool, *bytes, *limit),
        }
    }
}

impl From<String> for GateError {
    fn from(e: String) -> Self {
        GateError::Failed(e)
    }
}

/// Where requests go: the daemon over its socket, or the engine in-process.
pub(crate) trait Gate {
    async fn submit(&self, body: &SubmitBody) -> Result<ApprovalView, GateError>;
    /// The request after waiting up to `up_to` for it to leave `pending`.
    async fn wait(&self, id: &str, up_to: Duration) -> Result<ApprovalView, GateError>;
    /// Withdraws a pending request; if it was settled meanwhile, returns it as it is.
    async fn cancel(&self, id: &str) -> Result<ApprovalView, GateError>;
}

/// Submits `body`, waits for a decision within `budget`, and returns what the agent
/// should do, always by [`Budget::answer_by`] (see the module docs).
/// `on_wait` runs before every wait slice (the MCP server reports progress there).
pub(crate) async fn resolve<G: Gate>(
    gate: &G,
    body: &SubmitBody,
    budget: Budget,
    on_wait: impl FnMut(&ApprovalView, Duration),
) -> Verdict {
    resolve_until_stopped(gate, body, budget, on_wait, &CancellationToken::new()).await
}

/// [`resolve`], for a process that can be told to stop (an agent killing its hook):
/// once `stop` fires, a submit under way gets [`STOP_SUBMIT_GRACE`] to say which
/// request it made, that request is withdrawn within [`STOP_WITHDRAW`], and the
/// answer is a deny, all within a second of the signal.
pub(crate) async fn resolve_until_stopped<G: Gate>(
    gate: &G,
    body: &SubmitBody,
    budget: Budget,
    mut on_wait: impl FnMut(&ApprovalView, Duration),
    stop: &CancellationToken,
) -> Verdict {
    let (answer_by, decide_by) = (budget.answer_by(), budget.decide_by());
    let tool = &body.tool;
    let silent = || {
        format!(
            "it did not answer within {}",
            crate::words::span(budget.total)
        )
    };
    let submit = timeout_at(answer_by, gate.submit(body));
    tokio::pin!(submit);
    let submitted = tokio::select! {
        r = &mut submit => r,
        _ = stop.cancelled() => match timeout(STOP_SUBMIT_GRACE, &mut submit).await {
            Ok(r) => r,
            // Whatever the daemon does with it, nobody is waiting for the answer.
            Err(_) => return Verdict::stopped(tool, None, false),
        },
    };
    let mut view = match submitted {
        Err(_) => return Verdict::unreachable(tool, &silent()),
        Ok(Err(e)) => return e.verdict(tool),
        Ok(Ok(v)) => v,
    };
    // Told to stop: whatever the verdict, the agent is no longer there to act on it.
    if stop.is_cancelled() && view.status != Status::Pending {
        return Verdict::stopped(tool, Some(&view), false);
    }
    // Reconnection attempts since the last answer, and why the last one failed.
    let mut failures = 0u32;
    let mut lost: Option<String> = None;
    while view.status == Status::Pending {
        if stop.is_cancelled() {
            return withdraw_when_stopped(gate, &view).await;
        }
        let now = Instant::now();
        if now >= decide_by {
            return withdraw(gate, &view, budget, lost.as_deref()).await;
        }
        if failures == 0 {
            on_wait(&view, now - budget.started);
        }
        let slice = (decide_by - now).min(WAIT_SLICE);
        let waited = tokio::select! {
            r = timeout_at(answer_by, gate.wait(&view.id, slice)) => r,
            _ = stop.cancelled() => continue,
        };
        view = match waited {
            // The daemon stopped answering mid-wait: the request may still be queued.
            Err(_) => return Verdict::still_queued(&view, budget.total, false),
            Ok(Err(GateError::Unreachable(e))) => {
                lost = Some(e);
                let pause = reconnect_delay(failures);
                failures = failures.saturating_add(1);
                tokio::select! {
                    _ = tokio::time::sleep_until((Instant::now() + pause).min(decide_by)) => {}
                    _ = stop.cancelled() => {}
                }
                continue;
            }
            Ok(Err(e)) => return e.verdict(tool),
            Ok(Ok(v)) => {
                failures = 0;
                lost = None;
                v
            }
        };
    }
    Verdict::from_view(&view)
}

/// Withdraws `view`'s request because the hook was stopped, within [`STOP_WITHDRAW`].
async fn withdraw_when_stopped<G: Gate>(gate: &G, view: &ApprovalView) -> Verdict {
    match timeout(STOP_WITHDRAW, gate.cancel(&view.id)).await {
        Ok(Ok(v)) => Verdict::stopped(&view.tool, Some(&v), v.status == Status::Cancelled),
        _ => Verdict::stopped(&view.tool, Some(view), false),
    }
}

/// Withdraws `view`'s request at the end of the decision time, trying again while
/// gatebot cannot be reached, until [`Budget::answer_by`]. `lost` is why the last
/// waits could not reach gatebot, if they could not: a deny then says so.
async fn withdraw<G: Gate>(
    gate: &G,
    view: &ApprovalView,
    budget: Budget,
    lost: Option<&str>,
) -> Verdict {
    let answer_by = budget.answer_by();
    let mut failures = 0u32;
    let queued = || match lost {
        Some(e) => Verdict::lost(view, e),
        None => Verdict::still_queued(view, budget.total, false),
    };
    loop {
        match timeout_at(answer_by, gate.cancel(&view.id)).await {
            Ok(Ok(v)) if v.status == Status::Cancelled => {
                return Verdict::still_queued(&v, budget.total, true)
            }
            Ok(Ok(v)) if v.status != Status::Pending => return Verdict::from_view(&v),
            Ok(Err(GateError::Unreachable(_))) => {
                let next = Instant::now() + reconnect_delay(failures);
                failures = failures.saturating_add(1);
                if next >= answer_by {
                    return queued();
                }
                tokio::time::sleep_until(next).await;
            }
            _ => return queued(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a fake gatebot does with one kind of call.
    #[derive(Clone, Copy, PartialEq)]
    enum Does {
        /// Accepts the call and never answers.
        Hang,
        /// Answers with the request still pending (a wait takes its whole slice).
        Pending,
        /// Answers with the request withdrawn.
        Cancelled,
        /// Answers with the request approved.
        Approved,
        /// Cannot be reached (a daemon restarting).
        Unreachable,
    }

    struct FakeGate {
        submit: Does,
        wait: Does,
        cancel: Does,
        /// The first this many waits find gatebot unreachable.
        down_for: u32,
        waits: std::sync::atomic::AtomicU32,
    }

    impl Default for FakeGate {
        fn default() -> Self {
            FakeGate {
                submit: Does::Hang,
                wait: Does::Hang,
                cancel: Does::Hang,
                down_for: 0,
                waits: Default::default(),
            }
        }
    }

    fn view(status: Status) -> ApprovalView {
        serde_json::from_value(json!({
            "id": "01J", "short_id": "k7m2x9qa", "agent": "a", "tool": "Bash",
            "status": status, "risk": {"score": "high", "tool_class": "write", "factors": []},
            "policy_reason": "r", "message": "m", "always_allow_offered": false,
            "args": {}, "created_at": "2026-01-01T00:00:00Z"
        }))
        .unwrap()
    }

    async fn act(does: Does, slice: Duration) -> Result<ApprovalView, GateError> {
        match does {
            Does::Hang => std::future::pending().await,
            Does::Pending => {
                tokio::time::sleep(slice).await;
                Ok(view(Status::Pending))
            }
            Does::Cancelled => Ok(view(Status::Cancelled)),
            Does::Approved => Ok(view(Status::Approved)),
            Does::Unreachable => Err(GateError::Unreachable("connection refused".into())),
        }
    }

    impl Gate for FakeGate {
        async fn submit(&self, _: &SubmitBody) -> Result<ApprovalView, GateError> {
            act(self.submit, Duration::ZERO).await
        }
        async fn wait(&self, _: &str, up_to: Duration) -> Result<ApprovalView, GateError> {
            let n = self
                .waits
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if n < self.down_for {
                return act(Does::Unreachable, up_to).await;
            }
            act(self.wait, up_to).await
        }
        async fn cancel(&self, _: &str) -> Result<ApprovalView, GateError> {
            act(self.cancel, Duration::ZERO).await
        }
    }

    /// Resolves against `gate` with a 10 s budget; the verdict and when it came.
    async fn resolve_10s(gate: FakeGate) -> (Verdict, Duration) {
        let start = Instant::now();
        let budget = Budget::new(Duration::from_secs(10), start);
        let body = ToolCall::new("Bash", json!({"command": "ls"}), None).submit_body("a");
        let v = resolve(&gate, &body, budget, |_, _| {}).await;
        assert!(
            Instant::now() <= budget.answer_by(),
            "answered after answer_by"
        );
        (v, start.elapsed())
    }

    #[tokio::test(start_paused = true)]
    async fn a_gatebot_that_never_answers_the_submit_gets_a_deny_in_time() {
        use Does::*;
        let (v, took) = resolve_10s(FakeGate {
            submit: Hang,
            wait: Hang,
            cancel: Hang,
            ..FakeGate::default()
        })
        .await;
        assert!(!v.allow);
        assert!(
            v.message.contains("did not answer within 10 s"),
            "{}",
            v.message
        );
        assert!(v.message.contains("was not run"), "{}", v.message);
        assert_eq!(
            took,
            Duration::from_millis(9_500),
            "the answer reserve is kept"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_gatebot_that_stops_answering_mid_wait_gets_a_still_queued_deny() {
        use Does::*;
        let (v, _) = resolve_10s(FakeGate {
            submit: Pending,
            wait: Hang,
            cancel: Hang,
            ..FakeGate::default()
        })
        .await;
        assert!(!v.allow);
        assert!(v.message.contains("still queued"), "{}", v.message);
    }

    #[tokio::test(start_paused = true)]
    async fn an_undecided_request_is_withdrawn_before_the_answer_reserve() {
        use Does::*;
        let (v, took) = resolve_10s(FakeGate {
            submit: Pending,
            wait: Pending,
            cancel: Cancelled,
            ..FakeGate::default()
        })
        .await;
        assert!(
            v.message.contains("withdrew request k7m2x9qa"),
            "{}",
            v.message
        );
        // Waiting stopped at decide_by: 10 s − 0.5 s answer − 2 s withdraw reserve.
        assert_eq!(took, Duration::from_millis(7_500));

        let (v, took) = resolve_10s(FakeGate {
            submit: Pending,
            wait: Pending,
            cancel: Hang,
            ..FakeGate::default()
        })
        .await;
        assert!(v.message.contains("still queued"), "{}", v.message);
        assert_eq!(took, Duration::from_millis(9_500));
    }

    /// Resolves against `gate` with a 10 s budget, told to stop after 3 s; the verdict
    /// and how long after the stop it came.
    async fn stopped_after_3s(gate: FakeGate) -> (Verdict, Duration) {
        let stop = CancellationToken::new();
        let budget = Budget::new(Duration::from_secs(10), Instant::now());
        let body = ToolCall::new("Bash", json!({"command": "ls"}), None).submit_body("a");
        let signal = {
            let stop = stop.clone();
            async move {
                tokio::time::sleep(Duration::from_secs(3)).await;
                stop.cancel();
                Instant::now()
            }
        };
        let (v, stopped_at) = tokio::join!(
            resolve_until_stopped(&gate, &body, budget, |_, _| {}, &stop),
            signal
        );
        (v, stopped_at.elapsed())
    }

    #[tokio::test(start_paused = true)]
    async fn a_stopped_hook_withdraws_its_request_and_denies_within_a_second() {
        use Does::*;
        let (v, took) = stopped_after_3s(FakeGate {
            submit: Pending,
            wait: Pending,
            cancel: Cancelled,
            ..FakeGate::default()
        })
        .await;
        assert!(!v.allow);
        assert!(
            v.message
                .contains("stopped before anyone decided, so gatebot withdrew request k7m2x9qa"),
            "{}",
            v.message
        );
        assert_eq!(took, Duration::ZERO);

        // A daemon that does not answer the withdrawal: the deny still comes in time.
        let (v, took) = stopped_after_3s(FakeGate {
            submit: Pending,
            wait: Pending,
            cancel: Hang,
            ..FakeGate::default()
        })
        .await;
        assert!(v.message.contains("may still be queued"), "{}", v.message);
        assert_eq!(took, STOP_WITHDRAW);

        // Stopped while the submit hangs: it gets its grace, then the deny.
        let (v, took) = stopped_after_3s(FakeGate::default()).await;
        assert!(!v.allow);
        assert!(v.message.contains("may still be queued"), "{}", v.message);
        assert_eq!(took, STOP_SUBMIT_GRACE);
        assert!(STOP_SUBMIT_GRACE + STOP_WITHDRAW < Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn a_restart_mid_wait_is_waited_out_within_the_budget() {
        use Does::*;
        let (v, took) = resolve_10s(FakeGate {
            submit: Pending,
            wait: Approved,
            down_for: 4,
            ..FakeGate::default()
        })
        .await;
        assert!(v.allow, "{}", v.message);
        // Reconnected after 100 + 200 + 400 + 800 ms.
        assert_eq!(took, Duration::from_millis(1_500));

        // Down for good: waiting ends at decide_by, the withdrawal is tried until
        // answer_by, and the deny says the request may still be queued.
        let (v, took) = resolve_10s(FakeGate {
            submit: Pending,
            wait: Unreachable,
            cancel: Unreachable,
            ..FakeGate::default()
        })
        .await;
        assert!(!v.allow);
        assert!(v.message.contains("still queued"), "{}", v.message);
        // And why: the last error, which names every endpoint tried.
        assert!(v.message.contains("connection refused"), "{}", v.message);
        assert!(took <= Duration::from_millis(9_500), "{took:?}");
    }

    #[test]
    fn small_budgets_are_raised_to_the_minimum_and_keep_reserves_in_proportion() {
        let t0 = Instant::now();
        let b = Budget::new(Duration::ZERO, t0);
        assert_eq!(b.total, MIN_BUDGET);
        assert_eq!(b.answer_by() - t0, Duration::from_millis(750));
        assert_eq!(b.decide_by() - t0, Duration::from_millis(500));
        let b = Budget::new(Duration::from_secs(540), t0);
        assert_eq!(b.decide_by() - t0, Duration::from_millis(537_500));
    }

    #[test]
    fn an_oversize_call_is_denied_with_the_limit_and_the_fix() {
        let v = Verdict::too_large("Write", Some(100_000), Some(65_536));
        assert!(!v.allow);
        assert!(v.message.contains("100000 bytes"), "{}", v.message);
        assert!(
            v.message.contains("65536 bytes ([queue] max_body_bytes)"),
            "{}",
            v.message
        );
        assert!(v.message.contains("raise max_body_bytes"), "{}", v.message);
        assert!(v.message.contains("was not run"), "{}", v.message);
    }

    #[test]
    fn the_description_is_the_summary_when_given() {
        let s = summarize(
            "Bash",
            &json!({"command": "ls", "description": "List files"}),
        );
        assert_eq!(s.as_deref(), Some("List files"));
    }

    #[test]
    fn a_command_or_path_is_rendered_when_there_is_no_description() {
        assert_eq!(
            summarize("Bash", &json!({"command": "git push\norigin"})).as_deref(),
            Some("Bash: git push origin")
        );
        assert_eq!(
            summarize("Edit", &json!({"file_path": "/a/b.rs", "old_string": "x"})).as_deref(),
            Some("Edit /a/b.rs")
        );
        assert_eq!(summarize("T", &json!({})), None);
    }

    #[test]
    fn long_summaries_are_cut_on_a_character_boundary() {
        let long = "é".repeat(1000);
        let s = summarize("Bash", &json!({ "description": long })).unwrap();
        assert_eq!(s.chars().count(), SUMMARY_CHARS);
        assert!(s.ends_with('…'));
    }

    #[test]
    fn an_oversize_tool_use_id_is_not_used_as_a_key() {
        let long = "x".repeat(MAX_KEY_LEN + 1);
        assert_eq!(
            ToolCall::new("T", json!({}), Some(&long)).idempotency_key,
            None
        );
        assert_eq!(
            ToolCall::new("T", Value::Null, Some("toolu_1")).idempotency_key,
            Some("toolu_1".into())
        );
    }
}
