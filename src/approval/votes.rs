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
    /// Whether approving needs a second factor (step-up; denying never does).
    #[serde(default)]
    pub step_up: bool,
    /// Who handed over the task the request belongs to, if it belongs to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handed_by: Option<String>,
    /// The rule's deadline, in milliseconds from the request's creation: unanswered by
    /// then, it is denied ("no one answered within …").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<i64>,
    /// Where the rule's groups are asked, and who of them in each place.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub places: Vec<Place>,
    /// When the people asked are reminded, in milliseconds from the request's creation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remind_after_ms: Option<i64>,
    /// The rule's escalation levels, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<Level>,
    /// How many of them were reached (their people are in `asked` now).
    #[serde(default)]
    pub escalated: usize,
    /// The route's timers (reminders, levels, repeats) are handled up to this many
    /// milliseconds from the request's creation: each is acted on once.
    #[serde(default)]
    pub handled_ms: i64,
}

/// A chat where some of a request's people are asked: a group's chat or channel, or
/// one person's private chat with the bot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Place {
    pub platform: String,
    pub chat: String,
    /// The people asked there, sorted.
    pub people: Vec<String>,
}

/// An escalation level as stored with a request: when, who, and where they are asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Level {
    /// Milliseconds from the request's creation.
    pub after_ms: i64,
    pub asked: Vec<String>,
    pub places: Vec<Place>,
    /// Once reached, its people are reminded this often (milliseconds) until the
    /// deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_ms: Option<i64>,
}

/// A reminder waiting to be posted: in one chat, to the people asked there who had
/// not voted when it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reminder {
    pub id: i64,
    pub approval_id: String,
    pub platform: String,
    pub chat: String,
    pub people: Vec<String>,
    /// Whether its request still waits (a settled request's reminder is dropped).
    pub open: bool,
}

/// What a route's timers due by some time call for ([`Route::advance`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Due {
    /// Levels reached: their people are asked too, in their places.
    pub levels: Vec<Level>,
    /// Places whose people are reminded (those of them who have not voted).
    pub reminders: Vec<Place>,
}

impl Route {
    /// The first timer after `handled_ms`, in milliseconds from the request's
    /// creation: the reminder, a level, or a reached level's repeat (before the
    /// deadline). `None`: nothing more will happen until the deadline.
    #[must_use]
    pub fn next_due(&self) -> Option<i64> {
        let t = self.handled_ms;
        let before_deadline = |x: i64| self.deadline_ms.is_none_or(|d| x < d);
        let mut next: Option<i64> = None;
        let mut consider = |x: i64| {
            if x > t && before_deadline(x) {
                next = Some(next.map_or(x, |n| n.min(x)));
            }
        };
        if let Some(r) = self.remind_after_ms {
            consider(r);
        }
        for l in &self.levels {
            consider(l.after_ms);
            if let Some(r) = l.repeat_ms.filter(|r| *r > 0) {
                // The first repeat after `t`: after + k·repeat, k ≥ 1.
                let k = if t < l.after_ms + r {
                    1
                } else {
                    (t - l.after_ms) / r + 1
                };
                consider(l.after_ms.saturating_add(k.saturating_mul(r)));
            }
        }
        next
    }

    /// Acts on every timer due by `at_ms` (from the request's creation) not yet acted
    /// on: levels reached (their people join `asked`), and one reminder per place due
    /// one however many repeats fell due meanwhile (gatebot was down, or busy).
    pub fn advance(&mut self, at_ms: i64) -> Due {
        let from = self.handled_ms;
        let due = |x: i64| x > from && x <= at_ms && self.deadline_ms.is_none_or(|d| x < d);
        let mut out = Due::default();
        // A level reached now posts its prompt: no reminder of it on top.
        let reached_before = self.escalated;
        if self.remind_after_ms.is_some_and(due) {
            out.reminders.extend(self.places.iter().cloned());
        }
        for (i, l) in self.levels.iter().enumerate() {
            if i == self.escalated && due(l.after_ms) {
                out.levels.push(l.clone());
                self.escalated += 1;
            }
        }
        for l in &self.levels[..reached_before] {
            let Some(r) = l.repeat_ms.filter(|r| *r > 0) else {
                continue;
            };
            // The last repeat point at or before `at_ms`.
            if at_ms < l.after_ms + r {
                continue;
            }
            let last = l.after_ms + (at_ms - l.after_ms) / r * r;
            if due(last) {
                out.reminders.extend(l.places.iter().cloned());
            }
        }
        for l in &out.levels {
            for p in &l.asked {
                if !self.asked.contains(p) {
                    self.asked.push(p.clone());
                }
            }
        }
        self.asked.sort();
        self.handled_ms = self.handled_ms.max(at_ms);
        out
    }

    /// Every place asked so far: the rule's, then the levels' reached.
    #[must_use]
    pub fn places_asked(&self) -> Vec<&Place> {
        self.places
            .iter()
            .chain(self.levels[..self.escalated].iter().flat_map(|l| &l.places))
            .collect()
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
    /// Whether the person confirmed it with a second factor (step-up).
    #[serde(default)]
    pub factor: bool,
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
            step_up: false,
            handed_by: Some("carol".into()),
            deadline_ms: None,
            places: Vec::new(),
            remind_after_ms: None,
            levels: Vec::new(),
            escalated: 0,
            handled_ms: 0,
        }
    }

    fn place(chat: &str, people: &[&str]) -> Place {
        Place {
            platform: "telegram".into(),
            chat: chat.into(),
            people: people.iter().map(|p| (*p).to_string()).collect(),
        }
    }

    /// A rule reminding at 10 s, escalating to carol at 20 s (repeated every 15 s)
    /// and to dave at 60 s, denying at 90 s.
    fn timed() -> Route {
        Route {
            asked: vec!["alice".into(), "bob".into()],
            places: vec![place("-100", &["alice", "bob"])],
            remind_after_ms: Some(10_000),
            deadline_ms: Some(90_000),
            levels: vec![
                Level {
                    after_ms: 20_000,
                    asked: vec!["carol".into()],
                    places: vec![place("3", &["carol"])],
                    repeat_ms: Some(15_000),
                },
                Level {
                    after_ms: 60_000,
                    asked: vec!["dave".into()],
                    places: vec![place("4", &["dave"])],
                    repeat_ms: None,
                },
            ],
            ..route(1, 1)
        }
    }

    #[test]
    fn timers_fire_once_each_in_order_and_repeats_stop_at_the_deadline() {
        let mut r = timed();
        let mut fired = Vec::new();
        while let Some(t) = r.next_due() {
            let due = r.advance(t);
            let chats = |ps: &[Place]| ps.iter().map(|p| p.chat.clone()).collect::<Vec<_>>();
            let levels: Vec<String> = due.levels.iter().flat_map(|l| chats(&l.places)).collect();
            fired.push((t / 1000, levels, chats(&due.reminders)));
        }
        let s = |v: &[&str]| v.iter().map(|x| (*x).to_string()).collect::<Vec<_>>();
        assert_eq!(
            fired,
            vec![
                (10, s(&[]), s(&["-100"])),
                (20, s(&["3"]), s(&[])),
                (35, s(&[]), s(&["3"])),
                (50, s(&[]), s(&["3"])),
                (60, s(&["4"]), s(&[])),
                (65, s(&[]), s(&["3"])),
                (80, s(&[]), s(&["3"])),
            ]
        );
        assert_eq!(r.asked, ["alice", "bob", "carol", "dave"]);
        assert_eq!(r.places_asked().len(), 3);
    }

    #[test]
    fn timers_missed_while_down_act_once_and_nothing_acts_twice() {
        let mut r = timed();
        // Down from 5 s to 58 s: the reminder, the level and two repeats fell due.
        r.advance(5_000);
        let due = r.advance(58_000);
        assert_eq!(due.levels.len(), 1);
        // The first reminder; the level reached now is prompted, not reminded.
        assert_eq!(due.reminders.len(), 1, "{due:?}");
        assert_eq!(r.advance(58_000), Due::default());
        assert_eq!(r.next_due(), Some(60_000));
        // Serialised and read back (a restart), the route goes on where it was.
        let mut back: Route = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back.advance(59_000), Due::default());
        assert_eq!(back.advance(60_000).levels.len(), 1);
    }

    fn vote(person: &str, approve: bool) -> Vote {
        Vote {
            person: person.into(),
            via: Via::Cli,
            approve,
            reason: None,
            at: 0,
            factor: false,
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
