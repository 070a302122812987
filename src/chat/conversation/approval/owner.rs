//! A request decided away from a chat (`gatebot decide ID approve|approve-always|deny
//! [--prefix [P] | --exact] [--for D]`), and the pending requests `gatebot pending`
//! lists, a page at a time.

use serde_json::{json, Value};
use tracing::Span;

use crate::approval::{Decision, ListFilter, Status, Verb};
use crate::chat::conversation::owner::{Decided, Listed, Listing, OwnerDecision, Refused};
use crate::engine::{record_request, Engine, EngineError, GrantChoice, ScopeChoice};
use crate::time::{now_ms, parse_duration};
use crate::wire::ApprovalView;

/// Decides the request `typed` names (a full id, a short id or a unique prefix).
/// `approve-always` (and `approve` with `for`) also makes a grant, scoped by `prefix`
/// or `exact` for a shell-like tool; the view carries it as `grant`.
pub(super) async fn decide(
    engine: &Engine,
    typed: &str,
    d: OwnerDecision,
) -> Result<Decided, Refused> {
    let verb: Verb = d.verb.parse().map_err(Refused::Unclear)?;
    if let Some(args) = d.args.clone() {
        return approve_edited(engine, typed, verb, args, d).await;
    }
    let choice = grant_choice(&d)?;
    let decision = Decision {
        verb,
        reason: d.reason(),
        actor: d.actor,
        via: d.via,
        factor: d.factor,
    };
    let result = engine.decide_granting(typed, decision, choice).await;
    // The surface's span (the API call) names a request decided before, too (one
    // decided now is named from its view, like every kind's).
    if let Err(EngineError::AlreadySettled(a)) = &result {
        record_request(&Span::current(), a);
    }
    let a = result?;
    let view = ApprovalView::from(&a);
    if a.status == Status::Pending {
        // A vote under an approval rule: the request waits for more.
        let votes = engine.votes(&a.id).await?;
        let said = vec![super::vote_counted(&a, &votes)];
        return Ok(Decided {
            view: serde_json::to_value(&view).unwrap_or_default(),
            said,
        });
    }
    let mut said = vec![view.decided_line()];
    let mut view = serde_json::to_value(&view).unwrap_or_default();
    if a.always_allowed {
        if let Some(g) = engine.grant_of_approval(&a.id).await? {
            said.push(g.granted_line(now_ms()));
            view["grant"] = serde_json::to_value(g).unwrap_or_default();
        }
    }
    Ok(Decided { view, said })
}

/// Approves the request as the owner edited its arguments (`--args`): only `approve`,
/// without a grant (what an edited call may do later is asked again).
async fn approve_edited(
    engine: &Engine,
    typed: &str,
    verb: Verb,
    args: serde_json::Value,
    d: OwnerDecision,
) -> Result<Decided, Refused> {
    if verb != Verb::Approve || d.asks_grant() {
        return Err(Refused::Unclear(
            "--args goes with approve alone: an edited call is approved once, granting nothing"
                .into(),
        ));
    }
    let result = engine
        .approve_edited(typed, args, d.actor, d.via, d.factor)
        .await;
    if let Err(EngineError::AlreadySettled(a)) = &result {
        record_request(&Span::current(), a);
    }
    let a = result?;
    let view = ApprovalView::from(&a);
    let mut said = vec![if a.status == Status::Rejected {
        // Its client cannot take an edited call back: denied with the call to make.
        format!(
            "{}: its client cannot take an edited call back, so it was told the exact call to make",
            view.decided_line()
        )
    } else {
        format!("{} as edited", view.decided_line())
    }];
    let mut view = serde_json::to_value(&view).unwrap_or_default();
    if let Some(g) = engine.grant_of_approval(&a.id).await? {
        said.push(g.granted_line(now_ms()));
        view["grant"] = serde_json::to_value(g).unwrap_or_default();
    }
    Ok(Decided { view, said })
}

/// What the decision asks an approval to grant.
fn grant_choice(d: &OwnerDecision) -> Result<GrantChoice, Refused> {
    let scope = match (&d.prefix, d.exact) {
        (Some(_), true) => {
            return Err(Refused::Unclear(
                "use either --prefix or --exact, not both".into(),
            ))
        }
        (Some(p), false) if p.trim().is_empty() => ScopeChoice::Prefix(None),
        (Some(p), false) => ScopeChoice::Prefix(Some(p.clone())),
        (None, true) => ScopeChoice::Exact,
        (None, false) => ScopeChoice::Default,
    };
    let for_ = d
        .for_
        .as_deref()
        .map(|t| parse_duration(t).map_err(|e| Refused::Unclear(format!("`for`: {e}"))))
        .transpose()?;
    Ok(GrantChoice { scope, for_ })
}

/// One page of pending requests, oldest first (`requests`, and `next`: the cursor of
/// the page after it, if there may be one).
pub(super) async fn listed(engine: &Engine, l: &Listing) -> Result<Option<Listed>, EngineError> {
    let filter = ListFilter {
        status: Some(Status::Pending),
        agent: l.agent.clone(),
        after: l.after.clone(),
        limit: l.limit,
    };
    let rows = engine.list(filter).await?;
    let views: Vec<ApprovalView> = rows.iter().map(ApprovalView::from).collect();
    let next = (rows.len() == l.limit)
        .then(|| rows.last().map(|a| a.id.clone()))
        .flatten();
    let now = now_ms();
    let mut said = Vec::new();
    if !views.is_empty() {
        said.push("Pending requests (gatebot decide ID approve|deny):".into());
        said.push(ApprovalView::LIST_HEADING.into());
        said.extend(views.iter().flat_map(|v| v.listed_lines(now)));
    }
    if let Some(next) = &next {
        said.push(format!("… more pending: gatebot pending --after {next}"));
    }
    let mut fields = serde_json::Map::new();
    fields.insert("requests".into(), json!(views));
    fields.insert("next".into(), next.map_or(Value::Null, Value::from));
    Ok(Some(Listed { fields, said }))
}
