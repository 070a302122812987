//! Evidence: how an agent has done, counted from its requests, and the seed's
//! measures (handled, correction, positive, escalation) mapped onto those counts.
//!
//! # Only a human (or an owner's grant) makes evidence
//! An agent's own word is not evidence: it chooses what to call, and it writes its own
//! reports. So a call counts only where a human stood behind it: a human decided it, or
//! it ran under a grant an owner made ("Always allow") and the agent reported how it
//! went. Calls the policy let through without asking anyone (low risk at the agent's
//! tier, `tool_approval_mode = "none"`, the agent's configured `always_allow`) and the
//! outcomes the agent reported for them are shown beside the evidence, never in it.
//!
//! # The mapping (layer2 step 6 → gatebot)
//! The seed counts "conversations", "owner corrections", "positive sentiment" and
//! "escalations". gatebot has requests and what became of them, so:
//! - **handled**: requests a human decided (approved or denied), and requests an
//!   owner's grant let run whose outcome the agent reported (succeeded or failed), each
//!   counted once;
//! - **correction**: a human denial;
//! - **positive**: a handled request that went well: approved by a human (and not
//!   reported failed afterwards), or run under an owner's grant and reported succeeded;
//! - **escalation**: a request the agent itself was unsure of (confidence below its
//!   `ask_human` threshold in force when it was sent, so the policy blocked it) or one
//!   nobody decided in time (expired);
//! - the correction and positive rates are over handled requests, the escalation rate
//!   over handled and escalated ones (so calls nobody was asked about dilute nothing).

use serde::{Deserialize, Serialize};

/// Counts over an agent's requests (all time, or a rolling window).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Every request the agent sent.
    pub requests: u64,
    /// Verdicts at submission: let through without asking a human (by the policy, or
    /// by an owner's grant), refused by the policy, or asked a human.
    pub allowed: u64,
    pub blocked: u64,
    pub asked: u64,
    /// Human decisions.
    pub approved: u64,
    pub denied: u64,
    /// Asked, and nobody decided in time; withdrawn by the agent; still waiting.
    pub expired: u64,
    pub cancelled: u64,
    pub pending: u64,
    /// Executions the agent reported, of every request.
    pub succeeded: u64,
    pub failed: u64,
    /// Requests sent with a confidence below the agent's `ask_human` threshold in force
    /// when they were sent.
    pub low_confidence: u64,
    /// Of `allowed`: let through by an owner's grant.
    #[serde(default)]
    pub granted: u64,
    /// Of those: the executions the agent reported.
    #[serde(default)]
    pub granted_succeeded: u64,
    #[serde(default)]
    pub granted_failed: u64,
    /// Executions the agent reported of calls nobody was asked about (allowed, and not
    /// by a grant): its own word, not evidence.
    #[serde(default)]
    pub unvouched_reports: u64,
    /// Decided by a human, or run under a grant and reported (see the module docs).
    pub handled: u64,
    /// Handled and went well (see the module docs).
    pub positive: u64,
}

/// What the handled requests are made of, and what was left out: the figures a
/// proposal or an agent's page shows beside the rates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Basis {
    /// Human decisions (a denial by a pause's "deny pending" counts).
    pub approved: u64,
    pub denied: u64,
    /// Calls an owner's grant let run, by what the agent reported of them.
    pub granted_succeeded: u64,
    pub granted_failed: u64,
    /// Calls let through with nobody asked and no grant, and the outcomes the agent
    /// reported for them: not counted.
    pub unvouched: u64,
    pub unvouched_reports: u64,
}

/// The seed's measures, from [`Counts`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Measures {
    pub handled: u64,
    pub corrections: u64,
    pub positives: u64,
    pub escalations: u64,
    pub requests: u64,
    /// corrections ÷ handled (0 when nothing was handled).
    pub correction_rate: f64,
    /// positives ÷ handled (0 when nothing was handled).
    pub positive_rate: f64,
    /// escalations ÷ (handled + escalations) (0 when there were none).
    pub escalation_rate: f64,
    /// What `handled` is made of; `None` in proposals recorded before gatebot kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basis: Option<Basis>,
}

/// One agent whose summaries differed from its requests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Differed {
    pub agent: String,
    /// All time: what the summaries held, and what its requests say.
    pub kept: Counts,
    pub counted: Counts,
    /// Its counts per hour differed (the rolling window and the dashboard's chart),
    /// whether or not the all-time ones did.
    pub hours: bool,
}

/// What counting every agent's evidence from its requests again found, and did
/// (`gatebot agents recount`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recount {
    /// Requests and agents counted again.
    pub requests: u64,
    pub agents: u64,
    /// The agents whose summaries differed, by name.
    pub differed: Vec<Differed>,
    /// The summaries were rebuilt from the requests (only when something differed, and
    /// not when only checking).
    pub rebuilt: bool,
}

impl Counts {
    /// Each figure as people call it, beside its value, in [`Counts::words`]' order.
    fn named(&self) -> [(&'static str, u64); 18] {
        [
            ("requests", self.requests),
            ("let through without asking a human", self.allowed),
            ("let through by an owner's grant", self.granted),
            ("blocked", self.blocked),
            ("asked a human", self.asked),
            ("approved", self.approved),
            ("denied", self.denied),
            ("expired", self.expired),
            ("cancelled", self.cancelled),
            ("pending", self.pending),
            ("reported succeeded", self.succeeded),
            ("reported failed", self.failed),
            ("reported done under a grant", self.granted_succeeded),
            ("reported failed under a grant", self.granted_failed),
            (
                "reports on calls nobody was asked about",
                self.unvouched_reports,
            ),
            ("blocked for low confidence", self.low_confidence),
            ("handled", self.handled),
            ("went well", self.positive),
        ]
    }

    /// The figures that differ from `counted`, in words: "denied: 3 kept, 4 counted
    /// from its requests".
    #[must_use]
    pub fn differences(&self, counted: &Counts) -> Vec<String> {
        self.named()
            .into_iter()
            .zip(counted.named())
            .filter(|((_, kept), (_, counted))| kept != counted)
            .map(|((what, kept), (_, counted))| {
                format!("{what}: {kept} kept, {counted} counted from its requests")
            })
            .collect()
    }
}

impl Differed {
    /// What differed, in a line for people: the all-time figures that differ, and
    /// whether the counts per hour (the rolling window, the dashboard's chart) did.
    #[must_use]
    pub fn words(&self) -> String {
        let mut parts = self.kept.differences(&self.counted);
        if self.hours {
            parts.push(if parts.is_empty() {
                "its counts per hour (the recent window and the dashboard's chart) differed \
                 from its requests, its all-time figures did not"
                    .to_string()
            } else {
                "its counts per hour differed too".to_string()
            });
        }
        format!("{}: {}", self.agent, parts.join("; "))
    }
}

fn rate(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

impl Counts {
    /// The seed's measures from these counts.
    #[must_use]
    pub fn measures(&self) -> Measures {
        let escalations = self.low_confidence + self.expired;
        Measures {
            handled: self.handled,
            corrections: self.denied,
            positives: self.positive,
            escalations,
            requests: self.requests,
            correction_rate: rate(self.denied, self.handled),
            positive_rate: rate(self.positive, self.handled),
            escalation_rate: rate(escalations, self.handled + escalations),
            basis: Some(Basis {
                approved: self.approved,
                denied: self.denied,
                granted_succeeded: self.granted_succeeded,
                granted_failed: self.granted_failed,
                unvouched: self.allowed.saturating_sub(self.granted),
                unvouched_reports: self.unvouched_reports,
            }),
        }
    }
}

impl Counts {
    /// Every count in one line, as `gatebot agent NAME` and `/agent NAME` show it: what
    /// went through without asking a human apart from what a human decided, and the
    /// agent's reports named as its reports.
    #[must_use]
    pub fn words(&self) -> String {
        format!(
            "{} request(s): {} let through without asking a human ({} by an owner's grant), \
             {} blocked, {} asked ({} approved, {} denied, {} expired, {} cancelled, {} \
             pending); the agent reported {} succeeded and {} failed; {} blocked for low confidence",
            self.requests,
            self.allowed,
            self.granted,
            self.blocked,
            self.asked,
            self.approved,
            self.denied,
            self.expired,
            self.cancelled,
            self.pending,
            self.succeeded,
            self.failed,
            self.low_confidence
        )
    }
}

impl Measures {
    /// "57 handled, 96 % went well, 2 % denied, 3 % escalated".
    #[must_use]
    pub fn rates(&self) -> String {
        format!(
            "{} handled, {} went well, {} denied, {} escalated",
            self.handled,
            percent(self.positive_rate),
            percent(self.correction_rate),
            percent(self.escalation_rate)
        )
    }

    /// What the evidence is made of, one figure a line, as (label, words): the rates,
    /// the human decisions, the reported runs under grants (when there are any), and
    /// what was not counted (when there is any). Cards show them as fields, the
    /// command line as lines; self-reported outcomes are never called approved.
    #[must_use]
    pub fn figures(&self) -> Vec<(&'static str, String)> {
        let Some(b) = self.basis else {
            return vec![(
                "Evidence",
                format!(
                    "{} ({} requests; recorded before gatebot kept what the evidence is \
                     made of)",
                    self.rates(),
                    self.requests
                ),
            )];
        };
        let mut out = vec![
            ("Evidence", self.rates()),
            (
                "By a human",
                format!("{} approved, {} denied", b.approved, b.denied),
            ),
        ];
        if b.granted_succeeded + b.granted_failed > 0 {
            out.push((
                "Granted",
                format!(
                    "{} reported done, {} reported failed by the agent, on calls an owner's \
                     grant let run",
                    b.granted_succeeded, b.granted_failed
                ),
            ));
        }
        if b.unvouched > 0 {
            out.push(("Not counted", unvouched_words(&b)));
        }
        out
    }

    /// One line for lists: "57 handled: 50 approved and 2 denied by a human, 5 reported
    /// under grants, 96 % went well; 200 call(s) nobody was asked about, not counted".
    #[must_use]
    pub fn brief(&self) -> String {
        let Some(b) = self.basis else {
            return format!(
                "{} handled, {} went well",
                self.handled,
                percent(self.positive_rate)
            );
        };
        let mut s = format!(
            "{} handled: {} approved and {} denied by a human",
            self.handled, b.approved, b.denied
        );
        let granted = b.granted_succeeded + b.granted_failed;
        if granted > 0 {
            s.push_str(&format!(", {granted} reported under grants"));
        }
        s.push_str(&format!(", {} went well", percent(self.positive_rate)));
        if b.unvouched > 0 {
            s.push_str(&format!(
                "; {} call(s) nobody was asked about, not counted",
                b.unvouched
            ));
        }
        s
    }
}

/// "200 calls let through with nobody asked, and the 200 outcomes the agent reported
/// for them (its own word)".
fn unvouched_words(b: &Basis) -> String {
    format!(
        "{} call(s) let through with nobody asked and no grant, and {} outcome(s) the agent \
         reported for them (its own word)",
        b.unvouched, b.unvouched_reports
    )
}

/// A rate as people read it: `96 %` (rounded to the nearest percent).
#[must_use]
pub fn percent(rate: f64) -> String {
    format!("{:.0} %", rate * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_follow_the_documented_mapping() {
        let c = Counts {
            requests: 100,
            handled: 50,
            denied: 2,
            positive: 45,
            low_confidence: 3,
            expired: 2,
            ..Counts::default()
        };
        let m = c.measures();
        assert_eq!(
            (m.handled, m.corrections, m.positives, m.escalations),
            (50, 2, 45, 5)
        );
        assert_eq!(m.correction_rate, 0.04);
        assert_eq!(m.positive_rate, 0.9);
        // Over handled and escalated requests, not over every request.
        assert_eq!(m.escalation_rate, 5.0 / 55.0);
        assert_eq!(percent(m.positive_rate), "90 %");
    }

    #[test]
    fn nothing_handled_means_zero_rates_not_nan() {
        let m = Counts::default().measures();
        assert_eq!(
            (m.correction_rate, m.positive_rate, m.escalation_rate),
            (0.0, 0.0, 0.0)
        );
    }

    /// What the evidence is made of, as cards and the command line show it: human
    /// decisions, reports under grants, and what was not counted, each apart.
    #[test]
    fn the_figures_name_what_the_evidence_is_made_of() {
        let c = Counts {
            requests: 260,
            allowed: 205,
            granted: 5,
            asked: 55,
            approved: 50,
            denied: 2,
            succeeded: 204,
            failed: 1,
            granted_succeeded: 4,
            granted_failed: 1,
            unvouched_reports: 200,
            handled: 57,
            positive: 54,
            ..Counts::default()
        };
        let m = c.measures();
        let figures: Vec<String> = m
            .figures()
            .into_iter()
            .map(|(label, words)| format!("{label}: {words}"))
            .collect();
        assert_eq!(
            figures,
            [
                "Evidence: 57 handled, 95 % went well, 4 % denied, 0 % escalated",
                "By a human: 50 approved, 2 denied",
                "Granted: 4 reported done, 1 reported failed by the agent, on calls an owner's \
                 grant let run",
                "Not counted: 200 call(s) let through with nobody asked and no grant, and 200 \
                 outcome(s) the agent reported for them (its own word)",
            ]
        );
        assert_eq!(
            m.brief(),
            "57 handled: 50 approved and 2 denied by a human, 5 reported under grants, 95 % \
             went well; 200 call(s) nobody was asked about, not counted"
        );
        assert_eq!(
            c.words(),
            "260 request(s): 205 let through without asking a human (5 by an owner's grant), 0 \
             blocked, 55 asked (50 approved, 2 denied, 0 expired, 0 cancelled, 0 pending); the \
             agent reported 204 succeeded and 1 failed; 0 blocked for low confidence"
        );
        // Only human decisions: no lines for grants or for what was not counted.
        let plain = Counts {
            requests: 3,
            asked: 3,
            approved: 3,
            handled: 3,
            positive: 3,
            ..Counts::default()
        }
        .measures();
        assert_eq!(
            plain.figures(),
            [
                (
                    "Evidence",
                    "3 handled, 100 % went well, 0 % denied, 0 % escalated".to_string()
                ),
                ("By a human", "3 approved, 0 denied".to_string()),
            ]
        );
    }

    /// A proposal recorded before gatebot kept the basis reads back without one, and
    /// says so rather than inventing figures.
    #[test]
    fn measures_recorded_without_a_basis_say_so() {
        let old = r#"{"handled": 57, "corrections": 1, "positives": 55, "escalations": 2,
            "requests": 60, "correction_rate": 0.0175, "positive_rate": 0.9649,
            "escalation_rate": 0.0333}"#;
        let m: Measures = serde_json::from_str(old).unwrap();
        assert_eq!(m.basis, None);
        assert_eq!(
            m.figures(),
            [(
                "Evidence",
                "57 handled, 96 % went well, 2 % denied, 3 % escalated (60 requests; recorded \
                 before gatebot kept what the evidence is made of)"
                    .to_string()
            )]
        );
        assert_eq!(m.brief(), "57 handled, 96 % went well");
    }
}
