//! The approval prompt's golden cards ([`crate::chat::golden`]): a request as an agent
//! sends it, pending (with what the prompt offers), approved for a while, and denied.

use crate::approval::{Approval, Status, Via};
use crate::chat::card::Card;
use crate::policy::{Risk, RiskScore, ToolClass};
use crate::time::now_ms;
use crate::trust::grants::OfferRow;
use crate::trust::{Actor, Grant, Scope};

use super::{prompt, Extras};

/// A pricing mail to a customer, the agent's first, waiting almost a day.
fn request() -> Approval {
    let now = now_ms();
    Approval {
        short_id: "k7m2abcd".into(),
        agent: "mailer".into(),
        tool: "send_email".into(),
        summary: Some("Reply to Ann's question about the Pro plan's price".into()),
        args: serde_json::json!({
            "to": ["ann@example.com"],
            "subject": "Re: Pro plan",
            "body": "Hi Ann, the Pro plan is $49 a month. Best, Mailer"
        }),
        risk: Risk {
            score: RiskScore::High,
            tool_class: ToolClass::Write,
            factors: vec!["pricing_content".into(), "first_time_usage".into()],
        },
        policy_reason:
            "a semi-autonomous agent asks a human from medium risk up; this is high risk".into(),
        created_at: now - 1000,
        expires_at: Some(now + 86_399_000),
        ..super::sample()
    }
}

pub(super) fn cards() -> Vec<(&'static str, Card)> {
    let now = now_ms();
    let pending = request();
    let extras = Extras {
        offer: Some(OfferRow::default()),
        allow_for: Some(std::time::Duration::from_secs(3600)),
        grant: None,
        votes: Vec::new(),
    };
    let mut approved = request();
    approved.status = Status::Approved;
    approved.always_allowed = true;
    approved.decided_by = Some("alice".into());
    approved.decided_via = Some(Via::Chat(crate::approval::PlatformId::new("telegram")));
    approved.decided_at = Some(now - 60_000);
    approved.decision_reason = None;
    let grant = Grant {
        id: "01JD3X4Y5Z6A7B8C9D0E1F2G4G".into(),
        short_id: "g4n8abcd".into(),
        agent: approved.agent.clone(),
        tool: approved.tool.clone(),
        scope: Scope::Tool,
        by: Actor {
            name: "alice".into(),
            via: Via::Chat(crate::approval::PlatformId::new("telegram")),
        },
        reason: None,
        approval: Some(approved.id.clone()),
        created_at: now - 60_000,
        expires_at: Some(now + 3_540_000),
        revoked: None,
        max_risk: RiskScore::High,
        uses_left: None,
    };
    let with_grant = Extras {
        grant: Some(grant),
        ..extras.clone()
    };
    let mut denied = request();
    denied.status = Status::Rejected;
    denied.decided_by = Some("bob".into());
    denied.decided_via = Some(Via::Chat(crate::approval::PlatformId::new("slack")));
    denied.decided_at = Some(now - 60_000);
    denied.decision_reason = Some("we don't quote prices by mail".into());
    let mut other = request();
    other.short_id = "q9r4wxyz".into();
    other.tool = "delete_contact".into();
    other.risk.score = RiskScore::Critical;
    other.expires_at = Some(now + 3_599_000);
    let mut routed = request();
    routed.route = Some(crate::approval::votes::Route {
        rule: "deploys".into(),
        asked: vec!["alice".into(), "bob".into(), "carol".into()],
        approvals: 2,
        denials: 1,
        self_approval: false,
        step_up: false,
        handed_by: None,
        deadline_ms: Some(3_600_000),
        places: Vec::new(),
        remind_after_ms: Some(600_000),
        levels: vec![crate::approval::votes::Level {
            after_ms: 900_000,
            asked: vec!["carol".into()],
            places: Vec::new(),
            repeat_ms: None,
        }],
        escalated: 0,
        handled_ms: 0,
    });
    let mut escalated = routed.clone();
    if let Some(r) = escalated.route.as_mut() {
        r.asked.retain(|p| p != "carol");
        r.advance(900_000);
    }
    let one_vote = Extras {
        votes: vec![crate::approval::votes::Vote {
            person: "alice".into(),
            via: Via::Chat(crate::approval::PlatformId::new("telegram")),
            approve: true,
            reason: None,
            at: now - 30_000,
            factor: false,
        }],
        ..extras.clone()
    };
    vec![
        ("pending", prompt(&pending, &extras)),
        ("pending-votes", prompt(&routed, &one_vote)),
        ("pending-escalated", prompt(&escalated, &one_vote)),
        (
            "reminder",
            super::reminder(
                &escalated,
                &one_vote.votes,
                &[
                    ("bob".into(), Some("43".into())),
                    ("carol".into(), Some("U0CAROL".into())),
                    ("<dave>".into(), None),
                ],
                now,
            ),
        ),
        ("list", super::pending_card(&[pending.clone(), other], 2)),
        ("approved-for-a-while", prompt(&approved, &with_grant)),
        ("denied", prompt(&denied, &extras)),
    ]
}
