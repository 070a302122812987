//! A property test of the approval state machine under any interleaving (moved here
//! from `tests/it/properties.rs` when the store became private to the crate).

use proptest::prelude::*;
use serde_json::json;

use super::{Inserted, NewApproval, Store, Transition};
use crate::approval::{Asked, Decision, Status, Verb, Via};
use crate::policy::{Risk, RiskScore, ToolClass};

#[derive(Debug, Clone)]
enum Op {
    /// A decision by owner N, `late` = after the deadline (before any expiry pass).
    Decide(Verb, u8, bool),
    Expire,
    /// The agent cancels, `late` = after the deadline.
    Cancel(bool),
    Report(bool),
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (
            prop_oneof![
                Just(Verb::Approve),
                Just(Verb::ApproveAlways),
                Just(Verb::Deny)
            ],
            0u8..3,
            any::<bool>()
        )
            .prop_map(|(v, who, late)| Op::Decide(v, who, late)),
        Just(Op::Expire),
        any::<bool>().prop_map(Op::Cancel),
        any::<bool>().prop_map(Op::Report),
        Just(Op::Restart),
    ]
}

fn new_request() -> NewApproval {
    NewApproval {
        asked: Asked {
            agent: "mailer".into(),
            tool: "send_email".into(),
            args: json!({"to": "a@example.com"}),
            ..Asked::default()
        },
        content_hash: None,
        status: Status::Pending,
        risk: Risk {
            score: RiskScore::High,
            tool_class: ToolClass::Destructive,
            factors: vec![],
        },
        policy_reason: "test".into(),
        checkpoint: false,
        always_allow_offered: true,
        ttl_ms: Some(1000),
        created_at: 0,
        expires_at: Some(1000),
        offer: None,
        grant_id: None,
        draft: false,
        route: None,
        audience: Vec::new(),
        low_confidence: false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Any interleaving of decisions, expiry, cancel, results and restarts leaves
    /// exactly one way out of `pending`, and the audit trail records that one. A
    /// decision or cancel after the deadline expires the request instead.
    /// (Time is per step: a late op runs far past the deadline, the others before it.)
    #[test]
    fn every_interleaving_has_exactly_one_terminal_outcome(ops in proptest::collection::vec(op(), 1..12)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.db");
        let mut store = Store::open(&path).unwrap();
        let Inserted::New(a) = store.insert(&new_request()).unwrap() else { panic!() };
        let mut first: Option<Status> = None;
        for (step, op) in ops.iter().enumerate() {
            let now = 10 + step as i64;
            match op {
                Op::Decide(verb, who, late) => {
                    let d = Decision { verb: *verb, actor: format!("owner{who}"), via: Via::Cli, reason: None, factor: false };
                    let at = if *late { 10_000 + now } else { now };
                    match store.decide(&a.id, &d, at).unwrap() {
                        Transition::Done(x) => {
                            prop_assert!(first.is_none(), "second transition out of pending: {op:?}");
                            prop_assert!(!late, "a late decision won over the deadline");
                            first = Some(x.status);
                        }
                        Transition::Expired(x) => {
                            prop_assert!(first.is_none() && *late, "unexpected expiry: {op:?}");
                            prop_assert_eq!(x.status, Status::Expired);
                            first = Some(Status::Expired);
                        }
                        Transition::AlreadySettled(_) => prop_assert!(first.is_some()),
                        Transition::NotFound | Transition::OverBudget(..) => {
                            prop_assert!(false, "lost the request")
                        }
                    }
                }
                Op::Expire => {
                    // Far past the deadline.
                    let expired = store.expire_due(10_000 + now).unwrap();
                    if expired.is_empty() {
                        prop_assert!(first.is_some());
                    } else {
                        prop_assert!(first.is_none());
                        first = Some(Status::Expired);
                    }
                }
                Op::Cancel(late) => match store.cancel(&a.id, "mailer", if *late { 10_000 + now } else { now }).unwrap() {
                    Transition::Done(_) => {
                        prop_assert!(first.is_none() && !late);
                        first = Some(Status::Cancelled);
                    }
                    Transition::Expired(_) => {
                        prop_assert!(first.is_none() && *late);
                        first = Some(Status::Expired);
                    }
                    Transition::AlreadySettled(_) => prop_assert!(first.is_some()),
                    Transition::NotFound | Transition::OverBudget(..) => prop_assert!(false),
                },
                Op::Report(ok) => {
                    let to = if *ok { Status::Succeeded } else { Status::Failed };
                    let already = reported(&store, &a.id);
                    let r = store.report(&a.id, to, None, now).unwrap();
                    // Only an approved request can report a result, and only once.
                    prop_assert_eq!(matches!(r, Transition::Done(_)), first == Some(Status::Approved) && !already);
                }
                Op::Restart => {
                    drop(store);
                    store = Store::open(&path).unwrap();
                }
            }
        }
        let now = store.get(&a.id).unwrap().unwrap();
        let exits: Vec<String> = store
            .audit_rows(Some(&a.id), None)
            .unwrap()
            .into_iter()
            .map(|r| r.event)
            .filter(|e| matches!(e.as_str(), "decided" | "expired" | "cancelled"))
            .collect();
        match first {
            None => {
                prop_assert_eq!(now.status, Status::Pending);
                prop_assert!(exits.is_empty());
            }
            Some(s) => {
                prop_assert_eq!(exits.len(), 1, "audit: {:?}", exits);
                let expected_event = match s {
                    Status::Expired => "expired",
                    Status::Cancelled => "cancelled",
                    _ => "decided",
                };
                prop_assert_eq!(exits[0].as_str(), expected_event);
                if s == Status::Approved {
                    prop_assert!(matches!(now.status, Status::Approved | Status::Succeeded | Status::Failed));
                } else {
                    prop_assert_eq!(now.status, s);
                }
            }
        }
        prop_assert!(store.verify_audit().unwrap().problems.is_empty());
    }
}

fn reported(store: &Store, id: &str) -> bool {
    matches!(
        store.get(id).unwrap().unwrap().status,
        Status::Succeeded | Status::Failed
    )
}
