//! What the daemon and its clients agree on: the JSON shapes of the API
//! (docs/api.md describes them for users) and the limits the daemon enforces, so a
//! client can stay within them instead of being refused.

use serde::{Deserialize, Serialize};

use crate::approval::{Approval, Status, Via};
use crate::policy::Risk;
use crate::time::format_ms;
use crate::words;

/// Longest tool name accepted.
pub const MAX_TOOL_LEN: usize = 128;
/// Longest summary accepted, in characters.
pub const MAX_SUMMARY_CHARS: usize = 2000;
/// Longest idempotency key accepted.
pub const MAX_KEY_LEN: usize = 200;

/// `POST /v1/requests`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubmitBody {
    pub agent: String,
    pub tool: String,
    pub args: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    /// A duration like `30m`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// The inbox task the agent is running (`GATEBOT_TASK_ID`), so the owner sees the
    /// request under the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The client takes an edited call back (an owner's edit-then-approve): the
    /// answer's `edited_args` then holds what to run instead.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub accepts_edits: bool,
    /// What the call costs, in the currency of `[budgets]`: a number from 0 to
    /// [`crate::budget::MAX_COST`]. Checked against what is left of the agent's budgets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

impl From<SubmitBody> for crate::approval::Asked {
    /// The request's fields; `ttl` is read on its own (it is parsed, and not kept).
    fn from(b: SubmitBody) -> Self {
        crate::approval::Asked {
            agent: b.agent,
            tool: b.tool,
            args: b.args,
            summary: b.summary,
            confidence: b.confidence,
            environment: b.environment,
            idempotency_key: b.idempotency_key,
            task_id: b.task_id,
            accepts_edits: b.accepts_edits,
            cost: b.cost,
        }
    }
}

/// `POST /v1/requests/{id}/result`: `{ok, detail?}` or `{executing: true}`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResultBody {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ok: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executing: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// What the call cost, in the currency of `[budgets]`: it takes the place of the
    /// cost the request declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

/// `POST /v1/requests/{id}/decision` (control socket only).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecisionBody {
    /// `approve`, `approve-always` or `deny` (for a proposal: `approve` or `deny`).
    pub decision: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Refused when present: who decided is the caller's own account (the control
    /// socket's peer credentials), not something a body can claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<serde_json::Value>,
    /// What an approval of a shell-like tool's call grants: commands starting with
    /// this prefix (`""`: the prefix the prompt offered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// What an approval of a shell-like tool's call grants: only this exact command.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exact: bool,
    /// A time-boxed grant, like `1h`: `approve` with it allows the same call for that
    /// long; `approve-always` with it grants for that long instead of for good.
    #[serde(default, rename = "for", skip_serializing_if = "Option::is_none")]
    pub for_: Option<String>,
    /// `approve` only: the call's arguments as the owner edited them (a JSON object);
    /// the request is approved as edited (see the request object's `edited_args`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<serde_json::Value>,
    /// A code from the decider's authenticator app, for an approval that needs a second
    /// factor (step-up): a right one opens their step-up window on the CLI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// A request as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalView {
    pub id: String,
    pub short_id: String,
    pub agent: String,
    pub tool: String,
    pub status: Status,
    pub risk: Risk,
    /// Why it has this status: the owner's reason, the expiry, or the policy's reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The policy's reason, always present.
    pub policy_reason: String,
    /// One sentence for the agent's model, distinct per outcome.
    pub message: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub checkpoint: bool,
    pub always_allow_offered: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    pub args: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_via: Option<Via>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub always_allowed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_detail: Option<String>,
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The call as an owner edited and approved it: what to run instead of `args`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_args: Option<serde_json::Value>,
    /// What the call costs, as the agent declared it (`[budgets]`' currency).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

impl ApprovalView {
    /// "denied k7m2abcd (send_email from mailer)": the request after a decision.
    #[must_use]
    pub fn decided_line(&self) -> String {
        format!(
            "{} {} ({} from {})",
            self.status.words(),
            self.short_id,
            self.tool,
            self.agent
        )
    }

    /// The heading of [`ApprovalView::listed_lines`]' columns.
    pub const LIST_HEADING: &'static str =
        "ID        AGENT          TOOL                 RISK      EXPIRES";

    /// A pending request's lines in a list, within 80 columns: short id, agent, tool,
    /// risk and when it expires (`in 24 h`), then, indented, the agent's summary and the
    /// arguments that say what the call does (a command in full).
    #[must_use]
    pub fn listed_lines(&self, now: i64) -> Vec<String> {
        let expires = self
            .expires_ms()
            .map_or_else(|| "never".to_string(), |at| words::relative(at, now));
        let mut lines = vec![format!(
            "{:<8}  {:<14} {:<20} {:<9} {expires}",
            self.short_id,
            words::cut(&self.agent, 14),
            words::cut(&self.tool, 20),
            self.risk.score.as_str(),
        )];
        let indent = "          ";
        if let Some(s) = self.summary.as_deref().filter(|s| !s.trim().is_empty()) {
            lines.push(format!("{indent}{}", words::cut(&s.replace('\n', " "), 70)));
        }
        lines.extend(
            words::key_arguments(&self.args)
                .into_iter()
                .map(|a| format!("{indent}{a}")),
        );
        lines
    }

    /// The request for `gatebot status` and `gatebot ask`: its status and ids, then who
    /// asks for what, the agent's summary, the arguments that say what it does, the
    /// risk in words, when it expires (while pending) and the task it belongs to.
    #[must_use]
    pub fn described(&self, now: i64) -> Vec<String> {
        let mut lines = vec![
            format!(
                "{}  id {} ({})",
                self.status.words(),
                self.short_id,
                self.id
            ),
            format!("  {} wants to run {}", self.agent, self.tool),
        ];
        if let Some(s) = self.summary.as_deref().filter(|s| !s.trim().is_empty()) {
            lines.push(format!("  summary: {}", s.replace('\n', " ")));
        }
        lines.extend(
            words::key_arguments(&self.args)
                .into_iter()
                .map(|a| format!("  {a}")),
        );
        lines.push(format!("  risk: {}", words::risk(&self.risk)));
        if let (Status::Pending, Some(at)) = (self.status, self.expires_ms()) {
            lines.push(format!("  expires {}", words::deadline(at, now)));
        }
        if let Some(t) = &self.task_id {
            lines.push(format!("  part of task {t}"));
        }
        lines
    }

    /// `expires_at` as Unix milliseconds.
    fn expires_ms(&self) -> Option<i64> {
        crate::time::parse_ms(self.expires_at.as_deref()?)
    }
}

impl From<&Approval> for ApprovalView {
    fn from(a: &Approval) -> Self {
        let reason = match a.status {
            Status::Rejected
            | Status::Expired
            | Status::Approved
            | Status::Executing
            | Status::Succeeded
            | Status::Failed => a.decision_reason.clone(),
            Status::Cancelled => Some(a.decision_reason.as_ref().map_or_else(
                || "cancelled by the agent".into(),
                |why| format!("withdrawn: {why}"),
            )),
            Status::Pending | Status::Allowed | Status::Blocked => Some(a.policy_reason.clone()),
        };
        ApprovalView {
            id: a.id.clone(),
            short_id: a.short_id.clone(),
            agent: a.agent.clone(),
            tool: a.tool.clone(),
            status: a.status,
            risk: a.risk.clone(),
            reason,
            policy_reason: a.policy_reason.clone(),
            message: a.message(),
            checkpoint: a.checkpoint,
            always_allow_offered: a.always_allow_offered,
            summary: a.summary.clone(),
            args: a.args.clone(),
            decided_by: a.decided_by.clone(),
            decided_via: a.decided_via.clone(),
            always_allowed: a.always_allowed,
            result_detail: a.result_detail.clone(),
            created_at: format_ms(a.created_at),
            decided_at: a.decided_at.map(format_ms),
            expires_at: a.expires_at.map(format_ms),
            task_id: a.task_id.clone(),
            edited_args: a.edited_args.clone(),
            cost: a.cost,
        }
    }
}
