//! Per-agent quotas: how much each agent may send, as token buckets.
//!
//! 1. Every route an agent writes through takes tokens before it does anything else:
//!    one from the bucket of its kind ([`Quota::Requests`], [`Quota::Runs`],
//!    [`Quota::Events`], [`Quota::Tasks`]) and as many as its body has bytes from
//!    [`Quota::Bytes`]. Both are checked before either is taken, so a refused call
//!    costs nothing.
//! 2. A bucket holds `amount` tokens ([`Rate`]: `"3000/min"`) and refills `amount`
//!    per `per`, continuously: a burst of `amount` at once, then `amount` per period
//!    on average. A new bucket starts full.
//! 3. A call the buckets cannot pay for is refused ([`Limited`]) with the time until
//!    they can, which the API sends as `429` with `Retry-After`.
//!
//! The buckets live in memory: a restart refills them, which is fine for limits whose
//! point is to stop floods, not to bill. The rates are read from the config in force
//! at each call, so a reload applies at once. Agents without an `[agents.NAME]`
//! table (accepted by `unknown_agents = "supervised"`) share one set of buckets, so
//! made-up names neither escape the limits nor fill memory.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What a bucket counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Quota {
    /// Submitted requests (`POST /v1/requests`, the hooks, the MCP tool).
    Requests,
    /// Workflow runs started.
    Runs,
    /// Workflow events, over all of the agent's runs.
    Events,
    /// Task claims and reports (progress, complete, fail, needs-input).
    Tasks,
    /// Bytes of every body above.
    Bytes,
}

impl Quota {
    pub const ALL: [Quota; 5] = [
        Quota::Requests,
        Quota::Runs,
        Quota::Events,
        Quota::Tasks,
        Quota::Bytes,
    ];

    /// Its key in `[limits]` (and its metric label).
    #[must_use]
    pub fn key(self) -> &'static str {
        match self {
            Quota::Requests => "requests",
            Quota::Runs => "runs",
            Quota::Events => "events",
            Quota::Tasks => "tasks",
            Quota::Bytes => "bytes",
        }
    }

    /// What it counts, in words: "requests", "workflow runs started".
    fn noun(self) -> &'static str {
        match self {
            Quota::Requests => "requests",
            Quota::Runs => "workflow runs started",
            Quota::Events => "workflow events",
            Quota::Tasks => "task claims and reports",
            Quota::Bytes => "of request, run, event and task bodies",
        }
    }
}

/// `amount` per `per`: a bucket that holds `amount` and refills that many per period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub amount: u64,
    pub per: Duration,
}

impl Rate {
    #[must_use]
    pub const fn new(amount: u64, per: Duration) -> Rate {
        Rate { amount, per }
    }

    /// Tokens added per second.
    fn per_sec(self) -> f64 {
        self.amount as f64 / self.per.as_secs_f64()
    }

    /// "3000 requests a minute", "256 MiB of … an hour".
    #[must_use]
    pub fn describe(self, quota: Quota) -> String {
        let per = match self.per.as_secs() {
            1 if self.per.subsec_nanos() == 0 => "a second".to_string(),
            60 if self.per.subsec_nanos() == 0 => "a minute".to_string(),
            3600 if self.per.subsec_nanos() == 0 => "an hour".to_string(),
            86_400 if self.per.subsec_nanos() == 0 => "a day".to_string(),
            _ => format!("every {}", crate::words::span(self.per)),
        };
        match quota {
            Quota::Bytes => format!("{} {} {per}", bytes(self.amount), quota.noun()),
            _ => format!("{} {} {per}", self.amount, quota.noun()),
        }
    }
}

/// `262144000` as "250 MiB", `1500` as "1500 bytes".
fn bytes(n: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (size, unit) in UNITS {
        if n >= size && n % size == 0 {
            return format!("{} {unit}", n / size);
        }
    }
    format!("{n} bytes")
}

/// One agent's limits, resolved from `[limits]` and `[agents.NAME.limits]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub requests: Rate,
    pub runs: Rate,
    pub events: Rate,
    pub tasks: Rate,
    pub bytes: Rate,
}

const MINUTE: Duration = Duration::from_secs(60);
const HOUR: Duration = Duration::from_secs(3600);

/// The defaults: far above what a working agent does (a busy coding agent makes a few
/// calls a second at most), far below a flood (thousands a second).
pub const DEFAULT_LIMITS: Limits = Limits {
    requests: Rate::new(3000, MINUTE),
    runs: Rate::new(300, MINUTE),
    events: Rate::new(3000, MINUTE),
    tasks: Rate::new(3000, MINUTE),
    bytes: Rate::new(64 << 20, HOUR),
};

impl Limits {
    #[must_use]
    pub fn rate(&self, quota: Quota) -> Rate {
        match quota {
            Quota::Requests => self.requests,
            Quota::Runs => self.runs,
            Quota::Events => self.events,
            Quota::Tasks => self.tasks,
            Quota::Bytes => self.bytes,
        }
    }
}

/// A call refused for a limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Limited {
    pub agent: String,
    /// The bucket that was short.
    pub quota: Quota,
    pub rate: Rate,
    /// When the buckets can pay for the call (rounded up to whole seconds, at least 1s).
    pub retry_after: Duration,
    /// The call alone needs more than the bucket holds: waiting does not help.
    pub never: bool,
    /// The agent has no `[agents.NAME]` table: it shares `[limits]` with every such agent.
    pub shared: bool,
}

impl Limited {
    /// The `bot.toml` keys that raise the limit.
    #[must_use]
    pub fn keys(&self) -> String {
        if self.shared {
            return format!(
                "limits.{}, shared by every agent without an [agents.NAME] table",
                self.quota.key()
            );
        }
        format!(
            "limits.{k} for every agent, agents.{a}.limits.{k} for this one",
            k = self.quota.key(),
            a = self.agent
        )
    }
}

impl std::fmt::Display for Limited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.never {
            return write!(
                f,
                "this call is larger than agent `{}` may send at all ({}); raise it in bot.toml ({})",
                self.agent,
                self.rate.describe(self.quota),
                self.keys()
            );
        }
        write!(
            f,
            "agent `{}` is over its limit of {}: try again in {}, or raise the limit in \
             bot.toml ({})",
            self.agent,
            self.rate.describe(self.quota),
            crate::words::span(self.retry_after),
            self.keys()
        )
    }
}

/// A token bucket.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// The tokens at `now` under `rate` (full when new).
    fn level(bucket: Option<&Bucket>, rate: Rate, now: Instant) -> f64 {
        let cap = rate.amount as f64;
        match bucket {
            None => cap,
            Some(b) => {
                let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
                (b.tokens + elapsed * rate.per_sec()).min(cap)
            }
        }
    }
}

/// The time `rate` takes to refill `missing` tokens, in whole seconds (at least 1s).
fn refill_time(rate: Rate, missing: f64) -> Duration {
    let secs = (missing / rate.per_sec()).ceil().max(1.0);
    Duration::from_secs(secs.min(rate.per.as_secs_f64().ceil()) as u64)
}

/// An agent's buckets, and when its last refusal was logged.
#[derive(Debug, Default)]
struct AgentBuckets {
    buckets: HashMap<Quota, Bucket>,
    warned: Option<Instant>,
}

/// Every agent's buckets (see the module docs).
#[derive(Debug, Default)]
pub struct Quotas {
    agents: Mutex<HashMap<String, AgentBuckets>>,
}

/// What [`Quotas::take`] decided.
#[derive(Debug)]
pub enum Taken {
    Ok,
    /// Refused; `log` is true at most once a minute per agent, for the WARN line.
    Refused {
        limited: Limited,
        log: bool,
    },
}

impl Quotas {
    /// Takes one `quota` token and `bytes` byte tokens from `agent`'s buckets, or
    /// neither. `shared`: the agent has no table of its own, and shares one set of
    /// buckets with every such agent.
    pub fn take(
        &self,
        agent: &str,
        shared: bool,
        limits: &Limits,
        quota: Quota,
        bytes: u64,
        now: Instant,
    ) -> Taken {
        // Not a valid agent name, so no configured agent's buckets.
        let key = if shared { "*" } else { agent };
        let mut agents = self.agents.lock().unwrap_or_else(|e| e.into_inner());
        let entry = match agents.get_mut(key) {
            Some(e) => e,
            None => agents.entry(key.to_string()).or_default(),
        };
        let wants = [(quota, 1.0), (Quota::Bytes, bytes as f64)];
        let mut levels = [0.0; 2];
        for (i, (q, need)) in wants.iter().enumerate() {
            let rate = limits.rate(*q);
            let level = Bucket::level(entry.buckets.get(q), rate, now);
            if level < *need {
                let limited = Limited {
                    agent: agent.to_string(),
                    quota: *q,
                    rate,
                    retry_after: refill_time(rate, need - level),
                    never: *need > rate.amount as f64,
                    shared,
                };
                let log = entry
                    .warned
                    .is_none_or(|at| now.saturating_duration_since(at) >= MINUTE);
                if log {
                    entry.warned = Some(now);
                }
                return Taken::Refused { limited, log };
            }
            levels[i] = level;
        }
        for (i, (q, need)) in wants.iter().enumerate() {
            entry.buckets.insert(
                *q,
                Bucket {
                    tokens: levels[i] - need,
                    at: now,
                },
            );
        }
        Taken::Ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(requests: Rate, bytes: Rate) -> Limits {
        Limits {
            requests,
            bytes,
            ..DEFAULT_LIMITS
        }
    }

    fn refused(t: Taken) -> Limited {
        match t {
            Taken::Refused { limited, .. } => limited,
            Taken::Ok => panic!("taken"),
        }
    }

    #[test]
    fn a_bucket_allows_its_burst_then_its_rate() {
        let q = Quotas::default();
        let l = limits(Rate::new(3, Duration::from_secs(3)), DEFAULT_LIMITS.bytes);
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(matches!(
                q.take("a", false, &l, Quota::Requests, 10, t0),
                Taken::Ok
            ));
        }
        let no = refused(q.take("a", false, &l, Quota::Requests, 10, t0));
        assert_eq!(no.quota, Quota::Requests);
        assert_eq!(no.retry_after, Duration::from_secs(1));
        assert!(!no.never);
        // One token a second comes back.
        let t1 = t0 + Duration::from_millis(1000);
        assert!(matches!(
            q.take("a", false, &l, Quota::Requests, 10, t1),
            Taken::Ok
        ));
        assert!(matches!(
            q.take("a", false, &l, Quota::Requests, 10, t1),
            Taken::Refused { .. }
        ));
        // Another agent has buckets of its own.
        assert!(matches!(
            q.take("b", false, &l, Quota::Requests, 10, t1),
            Taken::Ok
        ));
        // Other kinds are counted apart.
        assert!(matches!(
            q.take("a", false, &l, Quota::Events, 10, t1),
            Taken::Ok
        ));
    }

    #[test]
    fn bytes_are_counted_over_every_kind_and_a_refusal_takes_nothing() {
        let q = Quotas::default();
        let l = limits(
            Rate::new(100, MINUTE),
            Rate::new(1000, Duration::from_secs(10)),
        );
        let t0 = Instant::now();
        assert!(matches!(
            q.take("a", false, &l, Quota::Requests, 600, t0),
            Taken::Ok
        ));
        let no = refused(q.take("a", false, &l, Quota::Events, 600, t0));
        assert_eq!(no.quota, Quota::Bytes);
        // 200 bytes missing at 100 bytes a second.
        assert_eq!(no.retry_after, Duration::from_secs(2));
        // The refused event took no event token: the 400 bytes left still pay for one.
        assert!(matches!(
            q.take("a", false, &l, Quota::Events, 400, t0),
            Taken::Ok
        ));
        // A call larger than the whole bucket can never pass.
        let never = refused(q.take("b", false, &l, Quota::Requests, 5000, t0));
        assert!(never.never);
        assert!(never.to_string().contains("larger than"), "{never}");
    }

    /// Calls `n` times, evenly over `over`, as `agent`: how many got through.
    fn flood(q: &Quotas, quota: Quota, bytes: u64, n: u32, over: Duration) -> u32 {
        let t0 = Instant::now();
        (0..n)
            .filter(|i| {
                let at = t0 + over.mul_f64(f64::from(*i) / f64::from(n));
                matches!(
                    q.take("flood", false, &DEFAULT_LIMITS, quota, bytes, at),
                    Taken::Ok
                )
            })
            .count() as u32
    }

    #[test]
    fn the_defaults_stop_the_floods_seen_and_no_working_agent() {
        // 16 279 requests of 60 KB in 10 s: the bytes run out after about 1 100 of them
        // (64 MiB), and the database grows by a few KiB a second from then on.
        let q = Quotas::default();
        let passed = flood(&q, Quota::Requests, 60_000, 16_279, Duration::from_secs(10));
        assert!(passed <= 1_130, "{passed} requests passed");
        // Small requests: the count stops them at the burst plus 50 a second.
        let q = Quotas::default();
        let passed = flood(&q, Quota::Requests, 300, 16_279, Duration::from_secs(10));
        assert!((3_000..=3_501).contains(&passed), "{passed}");
        // 19 699 events of one run in 15 s, and 3 000 runs started in 2.4 s.
        let q = Quotas::default();
        let passed = flood(&q, Quota::Events, 500, 19_699, Duration::from_secs(15));
        assert!(passed <= 3_751, "{passed} events passed");
        let q = Quotas::default();
        let passed = flood(&q, Quota::Runs, 200, 3_000, Duration::from_millis(2400));
        assert!(passed <= 313, "{passed} runs passed");

        // A busy agent: a tool call of a few KB every second for a day, with bursts of
        // 100 calls (parallel subagents) every ten minutes, and a workflow event every
        // 10 s: never refused.
        let q = Quotas::default();
        let t0 = Instant::now();
        for s in 0..86_400u64 {
            let at = t0 + Duration::from_secs(s);
            let calls = if s % 600 == 0 { 100 } else { 1 };
            for _ in 0..calls {
                assert!(
                    matches!(
                        q.take("busy", false, &DEFAULT_LIMITS, Quota::Requests, 4_000, at),
                        Taken::Ok
                    ),
                    "refused at {s}s"
                );
            }
            if s % 10 == 0 {
                assert!(matches!(
                    q.take("busy", false, &DEFAULT_LIMITS, Quota::Events, 2_000, at),
                    Taken::Ok
                ));
            }
        }
    }

    #[test]
    fn agents_without_a_table_share_one_set_of_buckets() {
        let q = Quotas::default();
        let l = limits(Rate::new(2, MINUTE), DEFAULT_LIMITS.bytes);
        let t0 = Instant::now();
        assert!(matches!(
            q.take("x1", true, &l, Quota::Requests, 1, t0),
            Taken::Ok
        ));
        assert!(matches!(
            q.take("x2", true, &l, Quota::Requests, 1, t0),
            Taken::Ok
        ));
        let no = refused(q.take("x3", true, &l, Quota::Requests, 1, t0));
        assert!(
            no.to_string().contains("shared by every agent without"),
            "{no}"
        );
        // A configured agent of the same name as nobody's key is apart.
        assert!(matches!(
            q.take("x1", false, &l, Quota::Requests, 1, t0),
            Taken::Ok
        ));
    }

    #[test]
    fn a_lowered_limit_applies_at_once() {
        let q = Quotas::default();
        let t0 = Instant::now();
        let high = limits(Rate::new(1000, MINUTE), DEFAULT_LIMITS.bytes);
        assert!(matches!(
            q.take("a", false, &high, Quota::Requests, 1, t0),
            Taken::Ok
        ));
        let low = limits(Rate::new(1, MINUTE), DEFAULT_LIMITS.bytes);
        assert!(matches!(
            q.take("a", false, &low, Quota::Requests, 1, t0),
            Taken::Ok
        ));
        assert!(matches!(
            q.take("a", false, &low, Quota::Requests, 1, t0),
            Taken::Refused { .. }
        ));
    }

    #[test]
    fn a_refusal_names_the_limit_and_the_keys_that_raise_it() {
        let q = Quotas::default();
        let l = limits(Rate::new(2, MINUTE), DEFAULT_LIMITS.bytes);
        let t0 = Instant::now();
        let _ = q.take("mailer", false, &l, Quota::Requests, 1, t0);
        let _ = q.take("mailer", false, &l, Quota::Requests, 1, t0);
        let Taken::Refused { limited, log } = q.take("mailer", false, &l, Quota::Requests, 1, t0)
        else {
            panic!("taken")
        };
        assert!(log, "the first refusal is logged");
        assert_eq!(
            limited.to_string(),
            "agent `mailer` is over its limit of 2 requests a minute: try again in 30 s, or \
             raise the limit in bot.toml (limits.requests for every agent, \
             agents.mailer.limits.requests for this one)"
        );
        let Taken::Refused { log, .. } = q.take("mailer", false, &l, Quota::Requests, 1, t0) else {
            panic!("taken")
        };
        assert!(!log, "at most one WARN a minute per agent");
        assert_eq!(
            DEFAULT_LIMITS.bytes.describe(Quota::Bytes),
            "64 MiB of request, run, event and task bodies an hour"
        );
    }
}
