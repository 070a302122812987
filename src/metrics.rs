//! Counters for the Prometheus endpoint (`GET /metrics`), kept with atomics and
//! rendered in the text exposition format. Labels are small sets: verdicts, outcomes,
//! and the chat platforms running (by key, under the label `channel`, the name
//! dashboards already use).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::approval::{PlatformId, Status};
use crate::limits::Quota;
use crate::serve::{Connections, Listener, Timeout};

/// Upper bounds (seconds) of the decision-latency histogram buckets.
const LATENCY_BUCKETS: [f64; 12] = [
    1.0, 5.0, 15.0, 30.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 14_400.0, 43_200.0, 86_400.0,
];

/// One chat platform's counters.
#[derive(Debug, Default, Clone, Copy)]
struct ChatCounts {
    /// Failed calls, and those that were 429s.
    errors: u64,
    rate_limited: u64,
    /// Messages posted: a subject's card, or a digest.
    cards: u64,
    digests: u64,
    /// Updates (presses, commands, messages) handled, and ignored.
    handled: u64,
    ignored: u64,
}

/// One chat platform's counters as they are now ([`Metrics::chat_counts`]): what
/// `gatebot_chat_*_total` show for it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ChatCountsNow {
    /// Failed calls of delivery (429s among them).
    pub send_errors: u64,
    /// Calls the platform answered 429, by anyone.
    pub rate_limited: u64,
    pub cards: u64,
    pub digests: u64,
    pub handled: u64,
    pub ignored: u64,
}

#[derive(Debug, Default)]
pub struct Metrics {
    /// allowed, ask (pending), blocked.
    verdicts: [AtomicU64; 3],
    /// approved, rejected, expired, cancelled.
    outcomes: [AtomicU64; 4],
    latency_buckets: [AtomicU64; LATENCY_BUCKETS.len()],
    latency_count: AtomicU64,
    latency_sum_ms: AtomicU64,
    /// By platform key. Chat traffic is rare next to the map lookup, so a lock is fine.
    chat: Mutex<BTreeMap<String, ChatCounts>>,
    /// Expiry passes that failed (each is retried after a pause).
    expiry_failures: AtomicU64,
    /// The listeners' connections; shared with their accept loops ([`crate::serve`]).
    pub connections: Arc<Connections>,
    /// The inbox's counters.
    inbox: InboxCounts,
    /// Workflow runs and their check-ins.
    workflow: WorkflowCounts,
    /// Agents' calls refused for a limit, by [`Quota`] (in [`Quota::ALL`]'s order).
    limited: [AtomicU64; 5],
    /// Agents' writes refused because agents filled their share of the database.
    held_back: AtomicU64,
    /// Agents' attempts refused for a per-agent cap or a pause (`engine::gate`).
    agent_refusals: AgentRefusals,
}

/// Why an agent's attempt was refused: one of [`AgentRefusal`], by index.
#[derive(Debug, Default)]
struct AgentRefusals([AtomicU64; 3]);

/// What an agent was refused for, for [`Metrics::agent_refused`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentRefusal {
    /// At `[queue] max_connections_per_agent`.
    Connections,
    /// At `[queue] max_waits_per_agent`.
    Waits,
    /// Paused: an attempt refused, or a wait it held closed.
    Paused,
}

impl AgentRefusal {
    pub const ALL: [AgentRefusal; 3] = [
        AgentRefusal::Connections,
        AgentRefusal::Waits,
        AgentRefusal::Paused,
    ];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            AgentRefusal::Connections => "connections",
            AgentRefusal::Waits => "waits",
            AgentRefusal::Paused => "paused",
        }
    }
}

/// The inbox's counters: tasks handed over, how they were classified (and why the
/// model classifier fell back to keywords), how they ended.
#[derive(Debug, Default)]
struct InboxCounts {
    /// Tasks created, classified by keywords, by the model.
    classified: [AtomicU64; 2],
    /// Timeout, error, unparsable.
    fallbacks: [AtomicU64; 3],
    /// Completed, failed, rejected, cancelled.
    finished: [AtomicU64; 4],
}

const FALLBACK_REASONS: [&str; 3] = ["timeout", "error", "unparsable"];
const TASK_ENDS: [&str; 4] = ["completed", "failed", "rejected", "cancelled"];

/// Workflow counters: runs started, check-ins asked and how they ended, runs stopped
/// by cause.
#[derive(Debug, Default)]
struct WorkflowCounts {
    runs_started: AtomicU64,
    asked: AtomicU64,
    /// continued, stopped, expired.
    settled: [AtomicU64; 3],
    /// tolerance, limit, owner, expiry.
    stopped: [AtomicU64; 4],
}

/// How a check-in that asked ended, for [`Metrics::check_in_settled`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckInEnd {
    Continued,
    Stopped,
    Expired,
}

impl Metrics {
    /// A request was submitted and got this status.
    pub fn submitted(&self, status: Status) {
        let i = match status {
            Status::Allowed => 0,
            Status::Pending => 1,
            Status::Blocked => 2,
            _ => return,
        };
        self.verdicts[i].fetch_add(1, Ordering::Relaxed);
    }

    /// A pending request left `pending` after `waited_ms`.
    pub fn settled(&self, status: Status, waited_ms: i64) {
        let i = match status {
            Status::Approved => 0,
            Status::Rejected => 1,
            Status::Expired => 2,
            Status::Cancelled => 3,
            _ => return,
        };
        self.outcomes[i].fetch_add(1, Ordering::Relaxed);
        if matches!(status, Status::Approved | Status::Rejected) {
            let secs = waited_ms.max(0) as f64 / 1000.0;
            for (b, bound) in self.latency_buckets.iter().zip(LATENCY_BUCKETS) {
                if secs <= bound {
                    b.fetch_add(1, Ordering::Relaxed);
                }
            }
            self.latency_count.fetch_add(1, Ordering::Relaxed);
            self.latency_sum_ms
                .fetch_add(waited_ms.max(0) as u64, Ordering::Relaxed);
        }
    }

    /// An expiry pass failed (a store error); the expiry task retries it later.
    pub fn expiry_pass_failed(&self) {
        self.expiry_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// A task was handed over and classified (`model`: by the model classifier).
    pub fn task_created(&self, model: bool) {
        self.inbox.classified[usize::from(model)].fetch_add(1, Ordering::Relaxed);
    }

    /// The model classifier's answer was not used (`timeout`, `error`, `unparsable`).
    pub fn classifier_fallback(&self, reason: &str) {
        if let Some(i) = FALLBACK_REASONS.iter().position(|r| *r == reason) {
            self.inbox.fallbacks[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// How many times the model classifier fell back to keywords for `reason`.
    #[must_use]
    pub fn classifier_fallbacks(&self, reason: &str) -> u64 {
        FALLBACK_REASONS
            .iter()
            .position(|r| *r == reason)
            .map_or(0, |i| self.inbox.fallbacks[i].load(Ordering::Relaxed))
    }

    /// A task ended (`completed`, `failed`, `rejected`, `cancelled`).
    pub fn task_finished(&self, status: &str) {
        if let Some(i) = TASK_ENDS.iter().position(|s| *s == status) {
            self.inbox.finished[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A workflow run was started.
    pub fn run_started(&self) {
        self.workflow.runs_started.fetch_add(1, Ordering::Relaxed);
    }

    /// A check-in asked its owner.
    pub fn check_in_asked(&self) {
        self.workflow.asked.fetch_add(1, Ordering::Relaxed);
    }

    /// A check-in that asked was answered or expired.
    pub fn check_in_settled(&self, end: CheckInEnd) {
        let i = match end {
            CheckInEnd::Continued => 0,
            CheckInEnd::Stopped => 1,
            CheckInEnd::Expired => 2,
        };
        self.workflow.settled[i].fetch_add(1, Ordering::Relaxed);
    }

    /// A run stopped, for this cause.
    pub fn run_stopped(&self, cause: crate::workflow::StopCause) {
        use crate::workflow::StopCause;
        let i = match cause {
            StopCause::Tolerance => 0,
            StopCause::Limit => 1,
            StopCause::Owner => 2,
            StopCause::Expiry => 3,
        };
        self.workflow.stopped[i].fetch_add(1, Ordering::Relaxed);
    }

    /// An agent's attempt was refused (or its wait closed) for `why`.
    pub fn agent_refused(&self, why: AgentRefusal) {
        self.agent_refusals.0[why as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// How many of an agent's attempts were refused for `why`.
    #[must_use]
    pub fn agent_refusals(&self, why: AgentRefusal) -> u64 {
        self.agent_refusals.0[why as usize].load(Ordering::Relaxed)
    }

    /// An agent's call was refused for `quota` ([`crate::limits`]).
    pub fn limited(&self, quota: Quota) {
        if let Some(i) = Quota::ALL.iter().position(|q| *q == quota) {
            self.limited[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// An agent's write was refused: agents filled their share of the database
    /// (`store.reserve` is kept for owners).
    pub fn held_back(&self) {
        self.held_back.fetch_add(1, Ordering::Relaxed);
    }

    /// How many expiry passes have failed.
    #[must_use]
    pub fn expiry_pass_failures(&self) -> u64 {
        self.expiry_failures.load(Ordering::Relaxed)
    }

    fn chat(&self, platform: &PlatformId, count: impl FnOnce(&mut ChatCounts)) {
        let mut chat = self.chat.lock().unwrap_or_else(|e| e.into_inner());
        count(chat.entry(platform.to_string()).or_default());
    }

    /// A platform is running: its counters show from now on, zeros included.
    pub fn chat_platform(&self, platform: &PlatformId) {
        self.chat(platform, |_| {});
    }

    /// A chat API call of delivery failed (a 429 among them).
    pub fn chat_error(&self, platform: &PlatformId) {
        self.chat(platform, |c| c.errors += 1);
    }

    /// The platform answered a call 429, whoever made it and whether it was then
    /// waited out or failed: counted by each platform's API client, where every call
    /// passes.
    pub fn chat_rate_limited(&self, platform: &PlatformId) {
        self.chat(platform, |c| c.rate_limited += 1);
    }

    /// A message was posted: a subject's card, or a digest.
    pub fn chat_posted(&self, platform: &PlatformId, digest: bool) {
        self.chat(platform, |c| {
            if digest {
                c.digests += 1;
            } else {
                c.cards += 1;
            }
        });
    }

    /// An update from a chat was handled, or ignored (a chat gatebot does not serve).
    pub fn chat_update(&self, platform: &PlatformId, handled: bool) {
        self.chat(platform, |c| {
            if handled {
                c.handled += 1;
            } else {
                c.ignored += 1;
            }
        });
    }

    /// Each running chat platform's counters since start, by platform key (the web
    /// dashboard's system page).
    #[must_use]
    pub fn chat_counts(&self) -> Vec<(String, ChatCountsNow)> {
        let chat = self.chat.lock().unwrap_or_else(|e| e.into_inner());
        chat.iter()
            .map(|(platform, c)| {
                let now = ChatCountsNow {
                    send_errors: c.errors,
                    rate_limited: c.rate_limited,
                    cards: c.cards,
                    digests: c.digests,
                    handled: c.handled,
                    ignored: c.ignored,
                };
                (platform.clone(), now)
            })
            .collect()
    }

    /// The exposition text; `pending` is read from the store at scrape time.
    #[must_use]
    pub fn render(&self, pending: usize) -> String {
        let mut o = String::new();
        self.render_requests(&mut o, pending);
        self.render_latency(&mut o);
        render_connections(&self.connections, &mut o);
        self.render_inbox(&mut o);
        self.render_workflow(&mut o);
        self.render_agent_refusals(&mut o);
        self.render_limits(&mut o);
        self.render_chat(&mut o);
        o
    }
}

/// This node among those sharing a database (docs/scale-out.md), appended to the
/// exposition: its name (`[store] node`, validated as a name, so it needs no escaping)
/// and version, and whether it leads. Prometheus scrapes each node, so every other
/// series is this node's own; these say which node a scrape came from.
pub fn render_node(o: &mut String, name: &str, leader: bool) {
    family(
        o,
        "gatebot_node_info",
        "gauge",
        "This node: its name and gatebot's version (always 1).",
    );
    let version = env!("CARGO_PKG_VERSION");
    let _ = writeln!(
        o,
        "gatebot_node_info{{node=\"{name}\",version=\"{version}\"}} 1"
    );
    single(
        o,
        "gatebot_node_leader",
        "gauge",
        "1 while this node leads (it sends the chats' messages and runs the timers), else 0.",
        u8::from(leader),
    );
}

/// A counter's value now.
fn get(a: &AtomicU64) -> u64 {
    a.load(Ordering::Relaxed)
}

/// A family's `# HELP` and `# TYPE` lines.
fn family(o: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(o, "# HELP {name} {help}");
    let _ = writeln!(o, "# TYPE {name} {kind}");
}

/// A counter family with one series per value of `label`.
fn counters<'a>(
    o: &mut String,
    name: &str,
    help: &str,
    label: &str,
    series: impl IntoIterator<Item = (&'a str, u64)>,
) {
    family(o, name, "counter", help);
    for (value, n) in series {
        let _ = writeln!(o, "{name}{{{label}=\"{value}\"}} {n}");
    }
}

/// A family with one series and no labels.
fn single(o: &mut String, name: &str, kind: &str, help: &str, n: impl std::fmt::Display) {
    family(o, name, kind, help);
    let _ = writeln!(o, "{name} {n}");
}

impl Metrics {
    /// Requests by verdict, pending, settled by outcome, expired; failed expiry passes.
    fn render_requests(&self, o: &mut String, pending: usize) {
        let verdicts = ["allow", "ask", "block"].into_iter();
        counters(
            o,
            "gatebot_requests_total",
            "Requests submitted, by the policy's verdict.",
            "verdict",
            verdicts.zip(self.verdicts.iter().map(get)),
        );
        single(
            o,
            "gatebot_pending",
            "gauge",
            "Requests waiting for a human.",
            pending,
        );
        let outcomes = ["approved", "rejected", "expired", "cancelled"].into_iter();
        counters(
            o,
            "gatebot_outcomes_total",
            "Pending requests settled, by outcome.",
            "outcome",
            outcomes.zip(self.outcomes.iter().map(get)),
        );
        single(
            o,
            "gatebot_expired_total",
            "counter",
            "Requests that expired unanswered.",
            get(&self.outcomes[2]),
        );
        single(
            o,
            "gatebot_expiry_pass_failures_total",
            "counter",
            "Expiry passes that failed on a store error (each is retried 5 s later).",
            get(&self.expiry_failures),
        );
    }

    /// The decision-latency histogram.
    fn render_latency(&self, o: &mut String) {
        let name = "gatebot_decision_latency_seconds";
        family(
            o,
            name,
            "histogram",
            "Time from submission to a human decision.",
        );
        for (b, bound) in self.latency_buckets.iter().zip(LATENCY_BUCKETS) {
            let _ = writeln!(o, "{name}_bucket{{le=\"{bound}\"}} {}", get(b));
        }
        let count = get(&self.latency_count);
        let _ = writeln!(o, "{name}_bucket{{le=\"+Inf\"}} {count}");
        let sum = get(&self.latency_sum_ms) as f64 / 1000.0;
        let _ = writeln!(o, "{name}_sum {sum}");
        let _ = writeln!(o, "{name}_count {count}");
    }

    fn render_inbox(&self, o: &mut String) {
        let i = &self.inbox;
        counters(
            o,
            "gatebot_inbox_tasks_created_total",
            "Tasks owners handed to agents, by the classifier that classified them.",
            "classifier",
            ["keywords", "model"]
                .into_iter()
                .zip(i.classified.iter().map(get)),
        );
        counters(
            o,
            "gatebot_inbox_classifier_fallbacks_total",
            "Tasks the model classifier failed to classify (classified by keywords instead), by reason.",
            "reason",
            FALLBACK_REASONS.into_iter().zip(i.fallbacks.iter().map(get)),
        );
        counters(
            o,
            "gatebot_inbox_tasks_finished_total",
            "Tasks that ended, by how.",
            "status",
            TASK_ENDS.into_iter().zip(i.finished.iter().map(get)),
        );
    }

    fn render_agent_refusals(&self, o: &mut String) {
        counters(
            o,
            "gatebot_agent_refusals_total",
            "Agents' attempts refused for a per-agent cap ([queue] max_connections_per_agent, max_waits_per_agent) or a pause (waits it held closed included), by reason.",
            "reason",
            AgentRefusal::ALL.map(|why| (why.as_str(), self.agent_refusals(why))),
        );
    }

    fn render_limits(&self, o: &mut String) {
        counters(
            o,
            "gatebot_rate_limited_total",
            "Agents' calls refused (429) for a per-agent limit ([limits]), by limit.",
            "limit",
            Quota::ALL
                .iter()
                .map(|q| q.key())
                .zip(self.limited.iter().map(get)),
        );
        single(
            o,
            "gatebot_storage_reserve_refusals_total",
            "counter",
            "Agents' writes refused (503 storage_full) because agents filled their share of the database; store.reserve is kept for owners.",
            get(&self.held_back),
        );
    }

    fn render_workflow(&self, o: &mut String) {
        let w = &self.workflow;
        single(
            o,
            "gatebot_runs_started_total",
            "counter",
            "Workflow runs started.",
            get(&w.runs_started),
        );
        single(
            o,
            "gatebot_check_ins_asked_total",
            "counter",
            "Workflow check-ins that asked the owner.",
            get(&w.asked),
        );
        counters(
            o,
            "gatebot_check_ins_settled_total",
            "Check-ins that asked, by how they ended (an expired one stops its run).",
            "outcome",
            ["continued", "stopped", "expired"]
                .into_iter()
                .zip(w.settled.iter().map(get)),
        );
        counters(
            o,
            "gatebot_runs_stopped_total",
            "Workflow runs stopped, by cause: a problem beyond tolerance, a global limit, the owner, an unanswered check-in.",
            "cause",
            ["tolerance", "limit", "owner", "expiry"].into_iter().zip(w.stopped.iter().map(get)),
        );
    }

    /// Each running chat platform's series, labelled `channel`.
    fn render_chat(&self, o: &mut String) {
        let chat = self.chat.lock().unwrap_or_else(|e| e.into_inner()).clone();
        type Pick = fn(&ChatCounts) -> u64;
        // (name, help on the first series of a name, label, its value, the count)
        let series: [(&str, &str, &str, &str, Pick); 6] = [
            (
                "gatebot_chat_send_errors_total",
                "Failed chat API calls.",
                "",
                "",
                |c| c.errors,
            ),
            (
                "gatebot_chat_rate_limited_total",
                "Chat API calls answered 429 (waited out or failed).",
                "",
                "",
                |c| c.rate_limited,
            ),
            (
                "gatebot_chat_posts_total",
                "Messages posted to chats: one card per subject, or a digest for a burst.",
                "kind",
                "prompt",
                |c| c.cards,
            ),
            ("gatebot_chat_posts_total", "", "kind", "digest", |c| {
                c.digests
            }),
            (
                "gatebot_chat_updates_total",
                "Button presses and messages received from chats.",
                "outcome",
                "handled",
                |c| c.handled,
            ),
            (
                "gatebot_chat_updates_total",
                "",
                "outcome",
                "ignored",
                |c| c.ignored,
            ),
        ];
        for (name, help, label, value, pick) in series {
            if !help.is_empty() {
                family(o, name, "counter", help);
            }
            for (platform, counts) in &chat {
                let extra = if label.is_empty() {
                    String::new()
                } else {
                    format!(",{label}=\"{value}\"")
                };
                let _ = writeln!(
                    o,
                    "{name}{{channel=\"{platform}\"{extra}}} {}",
                    pick(counts)
                );
            }
        }
    }
}

/// The listeners' series, from their accept loops' counters.
fn render_connections(c: &Connections, o: &mut String) {
    let name = "gatebot_connections";
    family(o, name, "gauge", "Open connections, by listener.");
    for l in Listener::ALL {
        let _ = writeln!(o, "{name}{{listener=\"{}\"}} {}", l.as_str(), c.open(l));
    }
    counters(
        o,
        "gatebot_connection_cap_reached_total",
        "Times a listener had no room for another connection ([queue] max_connections); new ones waited.",
        "listener",
        Listener::ALL.map(|l| (l.as_str(), c.caps_reached(l))),
    );
    let name = "gatebot_connection_timeouts_total";
    family(
        o,
        name,
        "counter",
        "Connections closed for waiting too long for a request (idle) or sending its head too slowly (header).",
    );
    for l in Listener::ALL {
        for why in [Timeout::Idle, Timeout::Header] {
            let (l, n, why) = (l.as_str(), c.timeouts(l, why), why.as_str());
            let _ = writeln!(o, "{name}{{listener=\"{l}\",reason=\"{why}\"}} {n}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_histogram_is_cumulative_and_counts_only_human_decisions() {
        let m = Metrics::default();
        m.settled(Status::Approved, 2_000);
        m.settled(Status::Rejected, 100_000);
        m.settled(Status::Expired, 86_400_000);
        let text = m.render(3);
        assert!(text.contains("gatebot_decision_latency_seconds_bucket{le=\"1\"} 0"));
        assert!(text.contains("gatebot_decision_latency_seconds_bucket{le=\"5\"} 1"));
        assert!(text.contains("gatebot_decision_latency_seconds_bucket{le=\"300\"} 2"));
        assert!(text.contains("gatebot_decision_latency_seconds_count 2"));
        assert!(text.contains("gatebot_decision_latency_seconds_sum 102"));
        assert!(text.contains("gatebot_expired_total 1"));
        assert!(text.contains("gatebot_pending 3"));
    }

    #[test]
    fn workflow_counters_are_rendered_by_outcome_and_cause() {
        let m = Metrics::default();
        m.check_in_asked();
        m.check_in_asked();
        m.check_in_settled(CheckInEnd::Expired);
        m.run_stopped(crate::workflow::StopCause::Expiry);
        m.run_stopped(crate::workflow::StopCause::Limit);
        let text = m.render(0);
        assert!(text.contains("gatebot_check_ins_asked_total 2"), "{text}");
        assert!(text.contains("gatebot_check_ins_settled_total{outcome=\"expired\"} 1"));
        assert!(text.contains("gatebot_check_ins_settled_total{outcome=\"continued\"} 0"));
        assert!(text.contains("gatebot_runs_stopped_total{cause=\"limit\"} 1"));
        assert!(text.contains("gatebot_runs_stopped_total{cause=\"tolerance\"} 0"));
    }

    #[test]
    fn every_series_follows_its_family_s_help_and_type_once() {
        let m = Metrics::default();
        m.chat_platform(&crate::approval::PlatformId::new("telegram"));
        let mut text = m.render(0);
        render_node(&mut text, "gate-1", true);
        assert!(
            text.contains("gatebot_node_info{node=\"gate-1\",version=\""),
            "{text}"
        );
        assert!(text.contains("\ngatebot_node_leader 1\n"), "{text}");
        let mut typed: Vec<&str> = Vec::new();
        let mut helped: Vec<&str> = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let name = rest.split(' ').next().unwrap();
                assert!(!helped.contains(&name), "two HELP lines for {name}");
                helped.push(name);
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                let name = rest.split(' ').next().unwrap();
                assert_eq!(helped.last(), Some(&name), "TYPE without its HELP: {line}");
                assert!(!typed.contains(&name), "two TYPE lines for {name}");
                typed.push(name);
            } else {
                let name = line.split(['{', ' ']).next().unwrap();
                let family = ["_bucket", "_sum", "_count"]
                    .iter()
                    .find_map(|s| name.strip_suffix(s))
                    .filter(|f| typed.last() == Some(f))
                    .unwrap_or(name);
                assert_eq!(typed.last(), Some(&family), "{line} outside its family");
            }
        }
        assert!(typed.len() >= 20, "{typed:?}");
    }
}
