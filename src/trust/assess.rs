//! The promotion assessment (layer2 step 6) and the demotion check: pure functions
//! from an agent's tier and evidence to what gatebot proposes to its owner.
//!
//! Nothing here changes a tier: an eligible agent gets a **proposal**, which an owner
//! approves or declines.
//!
//! # Promotion
//! - `supervised` → `semi_autonomous` when every threshold of
//!   `[promotion.to_semi_autonomous]` holds (defaults: ≥ 50 handled, ≤ 5 % corrections,
//!   ≥ 70 % positive, ≤ 15 % escalations);
//! - `semi_autonomous` → `autonomous` with `[promotion.to_autonomous]` (≥ 200, ≤ 2 %,
//!   ≥ 80 %, ≤ 10 %) and no proposal of the agent's declined within
//!   `[promotion] decline_quiet` (30 days);
//! - `draft_only` is chosen by hand ("promotion not applicable"); `autonomous` is the
//!   top ("already at maximum").
//!
//! # Demotion
//! An agent that acts on its own (`semi_autonomous`, `autonomous`) whose last
//! `demote_window` human decisions (10) hold at least `demote_denials` denials (3) gets
//! a proposal one tier down. A supervised agent already waits for a human on every
//! call; to stop one, pause it.

use serde::{Deserialize, Serialize};

use super::evidence::{percent, Measures};
use crate::policy::Tier;

/// The thresholds of one promotion step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    pub min_handled: u64,
    pub max_correction_rate: f64,
    pub min_positive_rate: f64,
    pub max_escalation_rate: f64,
}

impl Thresholds {
    /// The seed's supervised → semi_autonomous step.
    pub const TO_SEMI_AUTONOMOUS: Thresholds = Thresholds {
        min_handled: 50,
        max_correction_rate: 0.05,
        min_positive_rate: 0.70,
        max_escalation_rate: 0.15,
    };
    /// The seed's semi_autonomous → autonomous step.
    pub const TO_AUTONOMOUS: Thresholds = Thresholds {
        min_handled: 200,
        max_correction_rate: 0.02,
        min_positive_rate: 0.80,
        max_escalation_rate: 0.10,
    };
}

/// Everything the assessment and the demotion check are configured with.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rules {
    pub to_semi_autonomous: Thresholds,
    pub to_autonomous: Thresholds,
    /// Most declined proposals (within the quiet period) that still allow
    /// semi_autonomous → autonomous (the seed: none).
    pub max_declined: u64,
    /// A run of denials: this many …
    pub demote_denials: usize,
    /// … among this many latest human decisions.
    pub demote_window: usize,
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            to_semi_autonomous: Thresholds::TO_SEMI_AUTONOMOUS,
            to_autonomous: Thresholds::TO_AUTONOMOUS,
            max_declined: 0,
            demote_denials: 3,
            demote_window: 10,
        }
    }
}

/// The outcome of [`assess`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Assessment {
    pub current: Tier,
    pub eligible: bool,
    /// The tier proposed, when eligible.
    pub suggested: Option<Tier>,
    /// The figures, as the seed words them.
    pub reason: String,
    pub measures: Measures,
    /// Proposals of this agent declined within the quiet period.
    pub declined_recently: u64,
}

/// Tier names as people read them in sentences.
#[must_use]
pub fn tier_words(t: Tier) -> &'static str {
    match t {
        Tier::DraftOnly => "draft-only",
        Tier::Supervised => "supervised",
        Tier::SemiAutonomous => "semi-autonomous",
        Tier::Autonomous => "autonomous",
    }
}

/// Whether `m` meets `t`.
fn meets(t: &Thresholds, m: &Measures) -> bool {
    m.handled >= t.min_handled
        && m.correction_rate <= t.max_correction_rate
        && m.positive_rate >= t.min_positive_rate
        && m.escalation_rate <= t.max_escalation_rate
}

/// "Needs 50 handled requests (has 31), at most 5 % denied (at 2 %), …".
fn needs(t: &Thresholds, m: &Measures) -> String {
    format!(
        "Needs {} handled requests (has {}), at most {} denied (at {}), at least {} approved \
         (at {}), at most {} escalated (at {})",
        t.min_handled,
        m.handled,
        percent(t.max_correction_rate),
        percent(m.correction_rate),
        percent(t.min_positive_rate),
        percent(m.positive_rate),
        percent(t.max_escalation_rate),
        percent(m.escalation_rate),
    )
}

/// Assesses `agent` at tier `current` on `m`; `declined_recently` counts its proposals
/// declined within the quiet period.
#[must_use]
pub fn assess(
    agent: &str,
    current: Tier,
    m: &Measures,
    declined_recently: u64,
    rules: &Rules,
) -> Assessment {
    let handled = format!(
        "{agent} has handled {} requests with {} approved and {} denied",
        m.handled,
        percent(m.positive_rate),
        percent(m.correction_rate)
    );
    let (eligible, suggested, reason) = match current {
        Tier::Supervised => {
            let t = &rules.to_semi_autonomous;
            if meets(t, m) {
                (
                    true,
                    Some(Tier::SemiAutonomous),
                    format!(
                        "{handled}, {} escalated. Ready for semi-autonomous mode.",
                        percent(m.escalation_rate)
                    ),
                )
            } else {
                (false, None, format!("Not yet eligible. {}.", needs(t, m)))
            }
        }
        Tier::SemiAutonomous => {
            let t = &rules.to_autonomous;
            let quiet = declined_recently <= rules.max_declined;
            if meets(t, m) && quiet {
                (
                    true,
                    Some(Tier::Autonomous),
                    format!(
                        "{handled}, {} escalated, and no proposal declined recently. Ready for \
                         full autonomy.",
                        percent(m.escalation_rate)
                    ),
                )
            } else {
                let mut reason = format!("Not yet eligible for full autonomy. {}", needs(t, m));
                if !quiet {
                    reason.push_str(&format!(
                        ", and no recently declined proposal (has {declined_recently})"
                    ));
                }
                reason.push('.');
                (false, None, reason)
            }
        }
        Tier::Autonomous => (
            false,
            None,
            "Already at maximum autonomy level.".to_string(),
        ),
        Tier::DraftOnly => (
            false,
            None,
            "Draft-only mode is manual — promotion not applicable.".to_string(),
        ),
    };
    Assessment {
        current,
        eligible,
        suggested,
        reason,
        measures: *m,
        declined_recently,
    }
}

/// A proposal to lower an agent's tier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Demotion {
    pub to: Tier,
    pub denials: usize,
    pub of: usize,
    pub reason: String,
}

/// The tier one step down for a demotion, if `current` acts on its own.
#[must_use]
pub fn demoted(current: Tier) -> Option<Tier> {
    match current {
        Tier::Autonomous => Some(Tier::SemiAutonomous),
        Tier::SemiAutonomous => Some(Tier::Supervised),
        Tier::Supervised | Tier::DraftOnly => None,
    }
}

/// Checks `agent`'s latest human decisions (`latest`, newest first, `true` for a
/// denial) for a run of denials.
#[must_use]
pub fn demotion(agent: &str, current: Tier, latest: &[bool], rules: &Rules) -> Option<Demotion> {
    let to = demoted(current)?;
    let window = &latest[..latest.len().min(rules.demote_window)];
    let denials = window.iter().filter(|d| **d).count();
    if rules.demote_denials == 0 || denials < rules.demote_denials {
        return None;
    }
    Some(Demotion {
        to,
        denials,
        of: window.len(),
        reason: format!(
            "Owners denied {denials} of {agent}'s last {} decided requests. Back to {} mode \
             until it earns trust again?",
            window.len(),
            tier_words(to)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trust::evidence::Counts;

    /// Measures for `handled` requests of which `denied` were denied and `positive`
    /// went well, out of `requests` with `escalations`.
    fn m(handled: u64, denied: u64, positive: u64, requests: u64, escalations: u64) -> Measures {
        Counts {
            requests,
            handled,
            denied,
            positive,
            low_confidence: escalations,
            ..Counts::default()
        }
        .measures()
    }

    #[test]
    fn promotion_follows_the_seeds_thresholds() {
        use Tier::*;
        let rules = Rules::default();
        // (tier, measures, declined recently, eligible → suggested)
        let cases: &[(Tier, Measures, u64, Option<Tier>)] = &[
            // supervised → semi_autonomous: ≥ 50, ≤ 5 %, ≥ 70 %, ≤ 15 %.
            (Supervised, m(57, 1, 55, 60, 2), 0, Some(SemiAutonomous)),
            (Supervised, m(50, 0, 35, 50, 0), 0, Some(SemiAutonomous)),
            (Supervised, m(49, 0, 49, 49, 0), 0, None),
            (Supervised, m(100, 6, 94, 100, 0), 0, None),
            (Supervised, m(100, 5, 95, 100, 0), 0, Some(SemiAutonomous)),
            (Supervised, m(100, 0, 69, 100, 0), 0, None),
            (Supervised, m(100, 0, 70, 100, 15), 0, Some(SemiAutonomous)),
            (Supervised, m(100, 0, 90, 100, 16), 0, None),
            // Declined proposals do not hold back the first step.
            (Supervised, m(60, 0, 60, 60, 0), 3, Some(SemiAutonomous)),
            // semi_autonomous → autonomous: ≥ 200, ≤ 2 %, ≥ 80 %, ≤ 10 %, none declined.
            (SemiAutonomous, m(200, 4, 190, 200, 20), 0, Some(Autonomous)),
            (SemiAutonomous, m(199, 0, 199, 199, 0), 0, None),
            (SemiAutonomous, m(200, 5, 190, 200, 0), 0, None),
            (SemiAutonomous, m(200, 0, 159, 200, 0), 0, None),
            (SemiAutonomous, m(200, 0, 190, 200, 21), 0, None),
            (SemiAutonomous, m(300, 0, 300, 300, 0), 1, None),
            // The ends of the path.
            (Autonomous, m(1000, 0, 1000, 1000, 0), 0, None),
            (DraftOnly, m(1000, 0, 1000, 1000, 0), 0, None),
        ];
        for (tier, measures, declined, want) in cases {
            let a = assess("mailer", *tier, measures, *declined, &rules);
            assert_eq!(
                a.suggested, *want,
                "{tier:?} {measures:?} {declined}: {}",
                a.reason
            );
            assert_eq!(a.eligible, want.is_some());
        }
    }

    #[test]
    fn the_reason_states_the_figures() {
        let rules = Rules::default();
        let a = assess("mailer", Tier::Supervised, &m(57, 1, 55, 60, 2), 0, &rules);
        assert_eq!(
            a.reason,
            "mailer has handled 57 requests with 96 % approved and 2 % denied, 3 % escalated. \
             Ready for semi-autonomous mode."
        );
        let a = assess("mailer", Tier::Supervised, &m(31, 0, 31, 31, 0), 0, &rules);
        assert_eq!(
            a.reason,
            "Not yet eligible. Needs 50 handled requests (has 31), at most 5 % denied (at 0 %), \
             at least 70 % approved (at 100 %), at most 15 % escalated (at 0 %)."
        );
        let a = assess(
            "m",
            Tier::SemiAutonomous,
            &m(300, 0, 300, 300, 0),
            2,
            &rules,
        );
        assert!(
            a.reason
                .ends_with("and no recently declined proposal (has 2)."),
            "{}",
            a.reason
        );
        assert_eq!(
            assess("m", Tier::DraftOnly, &m(0, 0, 0, 0, 0), 0, &rules).reason,
            "Draft-only mode is manual — promotion not applicable."
        );
        assert_eq!(
            assess("m", Tier::Autonomous, &m(0, 0, 0, 0, 0), 0, &rules).reason,
            "Already at maximum autonomy level."
        );
    }

    #[test]
    fn a_run_of_denials_proposes_one_tier_down() {
        use Tier::*;
        let rules = Rules::default();
        let d = true;
        let a = false;
        let cases: &[(Tier, Vec<bool>, Option<Tier>)] = &[
            (SemiAutonomous, vec![d, d, d], Some(Supervised)),
            (
                Autonomous,
                vec![d, a, d, a, a, a, a, a, a, d],
                Some(SemiAutonomous),
            ),
            (Autonomous, vec![d, d], None),
            // Only the latest ten count.
            (Autonomous, vec![d, d, a, a, a, a, a, a, a, a, d, d], None),
            (Supervised, vec![d, d, d, d], None),
            (DraftOnly, vec![d, d, d, d], None),
            (SemiAutonomous, vec![], None),
        ];
        for (tier, latest, want) in cases {
            let got = demotion("mailer", *tier, latest, &rules);
            assert_eq!(got.as_ref().map(|d| d.to), *want, "{tier:?} {latest:?}");
        }
        let got = demotion("mailer", SemiAutonomous, &[d, a, d, d], &rules).unwrap();
        assert_eq!(
            got.reason,
            "Owners denied 3 of mailer's last 4 decided requests. Back to supervised mode until \
             it earns trust again?"
        );
        let off = Rules {
            demote_denials: 0,
            ..rules
        };
        assert!(demotion("m", Autonomous, &[d; 10], &off).is_none());
    }
}
