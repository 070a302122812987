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
        "Needs {} handled requests (has {}), at most {} denied (at {}), at least {} gone \
         well (at {}), at most {} escalated (at {})",
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

/// " 200 calls let through with nobody asked are not counted, nor what the agent
/// reported of them." when there were any.
fn not_counted(m: &Measures) -> String {
    match m.basis.filter(|b| b.unvouched > 0) {
        Some(b) => format!(
            " {} call(s) let through with nobody asked are not counted, nor what the agent \
             reported of them.",
            b.unvouched
        ),
        None => String::new(),
    }
}

/// "57 requests (50 approved and 2 denied by a human, 5 reported by the agent under
/// an owner's grant)".
fn handled_words(m: &Measures) -> String {
    let Some(b) = m.basis else {
        return format!("{} requests", m.handled);
    };
    let mut s = format!(
        "{} requests ({} approved and {} denied by a human",
        m.handled, b.approved, b.denied
    );
    let granted = b.granted_succeeded + b.granted_failed;
    if granted > 0 {
        s.push_str(&format!(
            ", {granted} reported on by the agent under an owner's grant"
        ));
    }
    s.push(')');
    s
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
        "{agent} has handled {}: {} went well, {} denied",
        handled_words(m),
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
                (
                    false,
                    None,
                    format!("Not yet eligible. {}.{}", needs(t, m), not_counted(m)),
                )
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
                reason.push_str(&not_counted(m));
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

    /// Measures for `handled` requests (all decided by a human) of which `denied` were
    /// denied and `positive` went well, and `escalations` more that were escalated.
    fn m(handled: u64, denied: u64, positive: u64, escalations: u64) -> Measures {
        Counts {
            requests: handled + escalations,
            asked: handled,
            handled,
            approved: handled - denied,
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
            (Supervised, m(57, 1, 55, 2), 0, Some(SemiAutonomous)),
            (Supervised, m(50, 0, 35, 0), 0, Some(SemiAutonomous)),
            (Supervised, m(49, 0, 49, 0), 0, None),
            (Supervised, m(100, 6, 94, 0), 0, None),
            (Supervised, m(100, 5, 95, 0), 0, Some(SemiAutonomous)),
            (Supervised, m(100, 0, 69, 0), 0, None),
            // Escalations are a share of handled and escalated requests.
            (Supervised, m(85, 0, 85, 15), 0, Some(SemiAutonomous)),
            (Supervised, m(84, 0, 84, 16), 0, None),
            // Declined proposals do not hold back the first step.
            (Supervised, m(60, 0, 60, 0), 3, Some(SemiAutonomous)),
            // semi_autonomous → autonomous: ≥ 200, ≤ 2 %, ≥ 80 %, ≤ 10 %, none declined.
            (SemiAutonomous, m(200, 4, 190, 22), 0, Some(Autonomous)),
            (SemiAutonomous, m(199, 0, 199, 0), 0, None),
            (SemiAutonomous, m(200, 5, 190, 0), 0, None),
            (SemiAutonomous, m(200, 0, 159, 0), 0, None),
            (SemiAutonomous, m(200, 0, 190, 23), 0, None),
            (SemiAutonomous, m(300, 0, 300, 0), 1, None),
            // The ends of the path.
            (Autonomous, m(1000, 0, 1000, 0), 0, None),
            (DraftOnly, m(1000, 0, 1000, 0), 0, None),
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

    /// The case of issue 18: no human approval, two denials, and 200 calls the policy
    /// let through that the agent reported done. Nothing of it is evidence of good work.
    #[test]
    fn calls_nobody_was_asked_about_and_their_reports_are_no_evidence() {
        let c = Counts {
            requests: 202,
            allowed: 200,
            asked: 2,
            denied: 2,
            succeeded: 200,
            unvouched_reports: 200,
            handled: 2,
            ..Counts::default()
        };
        let a = assess(
            "scout",
            Tier::SemiAutonomous,
            &c.measures(),
            0,
            &Rules::default(),
        );
        assert_eq!(a.suggested, None);
        assert_eq!(
            a.reason,
            "Not yet eligible for full autonomy. Needs 200 handled requests (has 2), at most 2 % \
             denied (at 100 %), at least 80 % gone well (at 0 %), at most 10 % escalated (at \
             0 %). 200 call(s) let through with nobody asked are not counted, nor what the \
             agent reported of them."
        );
    }

    #[test]
    fn the_reason_states_the_figures() {
        let rules = Rules::default();
        let a = assess("mailer", Tier::Supervised, &m(57, 1, 55, 2), 0, &rules);
        assert_eq!(
            a.reason,
            "mailer has handled 57 requests (56 approved and 1 denied by a human): 96 % went \
             well, 2 % denied, 3 % escalated. Ready for semi-autonomous mode."
        );
        // Runs under an owner's grant the agent reported on are named apart.
        let granted = Counts {
            requests: 12,
            allowed: 4,
            asked: 8,
            approved: 8,
            granted: 4,
            granted_succeeded: 3,
            granted_failed: 1,
            handled: 12,
            positive: 11,
            ..Counts::default()
        };
        let low = Rules {
            to_semi_autonomous: Thresholds {
                min_handled: 10,
                ..Thresholds::TO_SEMI_AUTONOMOUS
            },
            ..rules
        };
        assert_eq!(
            assess("m", Tier::Supervised, &granted.measures(), 0, &low).reason,
            "m has handled 12 requests (8 approved and 0 denied by a human, 4 reported on by \
             the agent under an owner's grant): 92 % went well, 0 % denied, 0 % escalated. \
             Ready for semi-autonomous mode."
        );
        let a = assess("mailer", Tier::Supervised, &m(31, 0, 31, 0), 0, &rules);
        assert_eq!(
            a.reason,
            "Not yet eligible. Needs 50 handled requests (has 31), at most 5 % denied (at 0 %), \
             at least 70 % gone well (at 100 %), at most 15 % escalated (at 0 %)."
        );
        let a = assess("m", Tier::SemiAutonomous, &m(300, 0, 300, 0), 2, &rules);
        assert!(
            a.reason
                .ends_with("and no recently declined proposal (has 2)."),
            "{}",
            a.reason
        );
        assert_eq!(
            assess("m", Tier::DraftOnly, &m(0, 0, 0, 0), 0, &rules).reason,
            "Draft-only mode is manual — promotion not applicable."
        );
        assert_eq!(
            assess("m", Tier::Autonomous, &m(0, 0, 0, 0), 0, &rules).reason,
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
