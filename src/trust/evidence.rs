//! Evidence: how an agent has done, counted from its requests, and the seed's
//! measures (handled, correction, positive, escalation) mapped onto those counts.
//!
//! # The mapping (layer2 step 6 → gatebot)
//! The seed counts "conversations", "owner corrections", "positive sentiment" and
//! "escalations". gatebot has requests and what became of them, so:
//! - **handled**: requests a human decided (approved or denied) or whose execution the
//!   agent reported (succeeded or failed), each counted once;
//! - **correction**: a human denial;
//! - **positive**: a handled request that went well: approved by a human (and not
//!   reported failed afterwards) or reported succeeded;
//! - **escalation**: a request the agent itself was unsure of (confidence below its
//!   `ask_human` threshold, so the policy blocked it) or one nobody decided in time
//!   (expired);
//! - the correction and positive rates are over handled requests, the escalation rate
//!   over every request the agent sent.

use serde::{Deserialize, Serialize};

/// Counts over an agent's requests (all time, or a rolling window).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Every request the agent sent.
    pub requests: u64,
    /// Verdicts at submission: let through by the policy, refused by it, or asked a human.
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
    /// Executions the agent reported.
    pub succeeded: u64,
    pub failed: u64,
    /// Requests sent with a confidence below the agent's `ask_human` threshold.
    pub low_confidence: u64,
    /// Decided by a human or reported by the agent (see the module docs).
    pub handled: u64,
    /// Handled and went well (see the module docs).
    pub positive: u64,
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
    /// escalations ÷ requests (0 when there were none).
    pub escalation_rate: f64,
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
            escalation_rate: rate(escalations, self.requests),
        }
    }
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
        assert_eq!(m.escalation_rate, 0.05);
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
}
