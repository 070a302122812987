//! Votes: a request an approval rule routes (`[[approval_rules]]`, docs/teams.md) is
//! decided by the people it asks, each once, N of them to approve and M to deny (deny
//! wins). Pure: the store records votes and settles the request in the vote's own
//! transaction; this says who may vote, where a request stands, and how to say it.

use serde::{Deserialize, Serialize};

use crate::approval::Via;

/// What the rule that matched a request asks, fixed when the request is made (a later
/// change of `bot.toml` does not move a vote under way).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    /// The rule's name ("deploys", or "rule 2").
    pub rule: String,
    /// The people asked (of `[people]`), sorted: only they may vote.
    pub asked: Vec<String>,
    /// Distinct people whose approval approves it.
    pub approvals: u32,
    /// Distinct people whose denial denies it.
    pub denials: u32,
    /// Whether the person who handed over the request's task may approve it.
    pub self_approval: bool,
    /// Who handed over the task the request belongs to, if it belongs to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handed_by: Option<String>,
    /// The rule's deadline, in milliseconds from the request's creation: unanswered by
    /// then, it is denied ("no one answered within …").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<i64>,
    /// The rule's escalation levels, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<Level>,
    /// How many of them were reached (their people are in `asked` now).
    #[serde(default)]
    pub escalated: usize,
}

/// An escalation level as stored with a request: when, who, and where they are asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Level {
    /// Milliseconds from the request's creation.
    pub after_ms: i64,
    pub asked: Vec<String>,
    /// (platform, chat) the level's prompts go to.
    pub chats: Vec<(String, String)>,
}

impl Route {
    /// The next level to reach, if any.
    #[must_use]
    pub fn next_level(&self) -> Option<&Level> {
        self.levels.get(self.escalated)
    }

    /// Reaches the next level: its people are asked too. Returns it.
    pub fn escalate(&mut self) -> Option<Level> {
        let level = self.levels.get(self.escalated)?.clone();
        for p in &level.asked {
            if !self.asked.contains(p) {
                self.asked.push(p.clone());
            }
        }
        self.asked.sort();
        self.escalated += 1;
        Some(level)
    }
}

/// One person's vote on a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vote {
    pub person: String,
    pub via: Via,
    pub approve: bool,
    pub reason: Option<String>,
    /// Unix milliseconds.
    pub at: i64,
}

/// Where a routed request stands after its votes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    Open,
    Approved,
    Denied,
}

/// Why a person's vote is not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VoteRefused {
    /// The rule does not ask them.
    NotAsked { rule: String, asked: Vec<String> },
    /// They handed over the request's task and the rule forbids approving one's own.
    OwnTask { rule: String },
}

impl Route {
    /// Whether `person` may cast this vote (`approve` or deny).
    pub fn may_vote(&self, person: &str, approve: bool) -> Result<(), VoteRefused> {
        if !self.asked.iter().any(|p| p == person) {
            return Err(VoteRefused::NotAsked {
                rule: self.rule.clone(),
                asked: self.asked.clone(),
            });
        }
        if approve && !self.self_approval && self.handed_by.as_deref() == Some(person) {
            return Err(VoteRefused::OwnTask {
                rule: self.rule.clone(),
            });
        }
        Ok(())
    }

    /// Where the request stands after `votes` (deny wins: enough denials deny it even
    /// when enough approvals were cast too).
    #[must_use]
    pub fn standing(&self, votes: &[Vote]) -> Standing {
        let denied = votes.iter().filter(|v| !v.approve).count();
        let approved = votes.iter().filter(|v| v.approve).count();
        if denied >= self.denials as usize {
            Standing::Denied
        } else if approved >= self.approvals as usize {
            Standing::Approved
        } else {
            Standing::Open
        }
    }

    /// The request's progress in words: "1 of 2 approvals: alice ✓. Waiting for bob or
    /// carol."
    #[must_use]
    pub fn progress(&self, votes: &[Vote]) -> String {
        let names = |approve: bool| {
            votes
                .iter()
                .filter(|v| v.approve == approve)
                .map(|v| format!("{} {}", v.person, if approve { "✓" } else { "✗" }))
                .collect::<Vec<_>>()
        };
        let (yes, no) = (names(true), names(false));
        let mut said = Vec::new();
        if self.approvals > 1 || !yes.is_empty() {
            let mut s = format!("{} of {} approvals", yes.len(), self.approvals);
            if !yes.is_empty() {
                s.push_str(": ");
                s.push_str(&yes.join(", "));
            }
            said.push(s);
        }
        if !no.is_empty() {
            let mut s = format!("{} of {} denials: ", no.len(), self.denials);
            s.push_str(&no.join(", "));
            said.push(s);
        }
        let waiting: Vec<&str> = self
            .asked
            .iter()
            .filter(|p| !votes.iter().any(|v| &v.person == *p))
            .map(String::as_str)
            .collect();
        let mut out = said.join("; ");
        if !out.is_empty() {
            out.push_str(". ");
        }
        if !waiting.is_empty() {
            out.push_str(&format!("Waiting for {}.", either(&waiting)));
        }
        out.trim_end().to_string()
    }
}

/// "alice", "alice or bob", "alice, bob or carol".
fn either(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// The revision of a pending routed request's cards after `votes` votes and
/// `escalated` escalation levels (each changes what its cards say, so delivery edits
/// them).
#[must_use]
pub fn pending_revision(votes: usize, escalated: usize) -> String {
    match (votes, escalated) {
        (0, 0) => "pending".into(),
        (v, 0) => format!("pending-{v}"),
        (v, e) => format!("pending-{v}-{e}"),
    }
}

impl VoteRefused {
    /// What the person is told.
    #[must_use]
    pub fn words(&self, request: &str) -> String {
        match self {
            VoteRefused::NotAsked { rule, asked } => {
                let asked: Vec<&str> = asked.iter().map(String::as_str).collect();
                format!(
                    "You are not asked about request {request}: its approval rule \"{rule}\" \
                     asks {}.",
                    either(&asked)
                )
            }
            VoteRefused::OwnTask { rule } => format!(
                "You handed over the task request {request} belongs to, so you cannot approve \
                 it (approval rule \"{rule}\" asks someone else to); a deny from you counts."
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(approvals: u32, denials: u32) -> Route {
        Route {
            rule: "deploys".into(),
            asked: vec!["alice".into(), "bob".into(), "carol".into()],
            approvals,
            denials,
            self_approval: false,
            handed_by: Some("carol".into()),
            deadline_ms: None,
            levels: Vec::new(),
            escalated: 0,
        }
    }

    fn vote(person: &str, approve: bool) -> Vote {
        Vote {
            person: person.into(),
            via: Via::Cli,
            approve,
            reason: None,
            at: 0,
        }
    }

    #[test]
    fn n_of_m_approves_and_deny_wins() {
        let r = route(2, 1);
        assert_eq!(r.standing(&[]), Standing::Open);
        assert_eq!(r.standing(&[vote("alice", true)]), Standing::Open);
        assert_eq!(
            r.standing(&[vote("alice", true), vote("bob", true)]),
            Standing::Approved
        );
        assert_eq!(
            r.standing(&[vote("alice", true), vote("bob", false)]),
            Standing::Denied
        );
        let two_denials = route(1, 2);
        assert_eq!(two_denials.standing(&[vote("bob", false)]), Standing::Open);
        assert_eq!(
            two_denials.standing(&[vote("bob", false), vote("alice", false)]),
            Standing::Denied
        );
    }

    #[test]
    fn progress_is_said_in_words() {
        let r = route(2, 1);
        assert_eq!(
            r.progress(&[]),
            "0 of 2 approvals. Waiting for alice, bob or carol."
        );
        assert_eq!(
            r.progress(&[vote("alice", true)]),
            "1 of 2 approvals: alice ✓. Waiting for bob or carol."
        );
        let one = route(1, 2);
        assert_eq!(one.progress(&[]), "Waiting for alice, bob or carol.");
        assert_eq!(
            one.progress(&[vote("bob", false)]),
            "1 of 2 denials: bob ✗. Waiting for alice or carol."
        );
    }

    #[test]
    fn only_the_people_asked_vote_and_never_to_approve_their_own_task() {
        let r = route(2, 1);
        assert!(r.may_vote("alice", true).is_ok());
        let refused = r.may_vote("mallory", false).unwrap_err();
        assert_eq!(
            refused.words("k7m2"),
            "You are not asked about request k7m2: its approval rule \"deploys\" asks alice, \
             bob or carol."
        );
        assert!(matches!(
            r.may_vote("carol", true),
            Err(VoteRefused::OwnTask { .. })
        ));
        assert!(r.may_vote("carol", false).is_ok());
        let own_allowed = Route {
            self_approval: true,
            ..r
        };
        assert!(own_allowed.may_vote("carol", true).is_ok());
    }
}
