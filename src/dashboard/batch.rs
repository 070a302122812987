//! Batch decisions: approve or deny several pending requests in one step, the ones
//! ticked on the pending page or all that its filter shows. The first POST only counts:
//! a confirmation page lists exactly what will be decided (and what is left out, and
//! why); its own POST decides those and no others. A critical request is never approved
//! in a batch (it is left out, to be approved on its own card); a denial may include it.
//! Each decision goes through the request kind's owner decision, as one press does.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::{html, Markup};

use super::page::{shell, Menu, Outcome};
use super::signin::Signed;
use super::DashState;
use crate::approval::{Approval, Status, Via};
use crate::chat::conversation::owner::{OwnerDecision, Refused};
use crate::chat::conversation::{self, full_id};
use crate::engine::EngineError;
use crate::policy::RiskScore;
use crate::subject::{OpenFilter, SubjectKind};

/// The most requests one batch decides.
pub(super) const MOST: usize = 1000;

/// What a batch's form sent.
#[derive(Debug, Default)]
struct Asked {
    csrf: String,
    approve: bool,
    reason: Option<String>,
    /// The requests ticked (or, confirmed, the ones the confirmation listed).
    ids: Vec<String>,
    /// "All shown by this filter", with the filter's fields.
    all: Option<OpenFilter>,
    confirmed: bool,
}

fn read(body: &[u8]) -> Result<Asked, String> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(body)
        .map_err(|_| "This form could not be read.".to_string())?;
    let mut a = Asked::default();
    let mut filter = super::pending::Filters::default();
    let mut all = false;
    let mut verb = None;
    for (k, v) in pairs {
        match k.as_str() {
            "csrf" => a.csrf = v,
            "verb" => verb = Some(v),
            "reason" => a.reason = Some(v.trim().to_string()).filter(|r| !r.is_empty()),
            "id" => a.ids.push(v),
            "all" => all = v == "1",
            "confirmed" => a.confirmed = v == "1",
            _ => filter.set(&k, v),
        }
    }
    a.approve = match verb.as_deref() {
        Some("approve") => true,
        Some("deny") => false,
        _ => return Err("Choose Approve or Deny.".into()),
    };
    if all && !a.confirmed {
        let mut f = filter.open_filter();
        f.kind = Some(SubjectKind::Approval);
        f.after = None;
        f.limit = MOST;
        a.all = Some(f);
    }
    if a.ids.len() > MOST {
        return Err(format!("At most {MOST} requests are decided in one batch."));
    }
    if a.ids.iter().any(|id| full_id(id).is_none()) {
        return Err("This form names something that is not a request.".into());
    }
    Ok(a)
}

/// The requests of a batch, sorted by what will happen to each.
#[derive(Default)]
struct Sorted {
    decided: Vec<Approval>,
    /// Critical requests an approval leaves out.
    critical: Vec<Approval>,
    /// No longer pending.
    settled: Vec<Approval>,
    /// Ids that name no request.
    unknown: usize,
}

async fn sort(state: &DashState, asked: &Asked) -> Result<Sorted, EngineError> {
    let engine = &state.engine;
    let mut ids = asked.ids.clone();
    if let Some(f) = &asked.all {
        let page = engine.open_subjects(f.clone()).await?;
        ids.extend(page.subjects.into_iter().map(|s| s.id));
    }
    ids.sort();
    ids.dedup();
    let mut sorted = Sorted::default();
    for id in ids {
        match engine.get(&id).await {
            Ok(a) if a.status != Status::Pending => sorted.settled.push(a),
            Ok(a) if asked.approve && a.risk.score == RiskScore::Critical => {
                sorted.critical.push(a)
            }
            Ok(a) => sorted.decided.push(a),
            Err(EngineError::NotFound { .. }) => sorted.unknown += 1,
            Err(e) => return Err(e),
        }
    }
    Ok(sorted)
}

/// `POST /batch`: counts (the confirmation page), or, confirmed, decides.
pub(super) async fn batch(
    State(state): State<DashState>,
    signed: Signed,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let asked = match read(&body) {
        Ok(a) => a,
        Err(why) => {
            return super::page::answered(&headers, Err((StatusCode::BAD_REQUEST, why)), "/")
        }
    };
    if let Err(r) = signed.check(&state, &headers, &asked.csrf).await {
        return r;
    }
    let sorted = match sort(&state, &asked).await {
        Ok(s) => s,
        Err(e) => return super::failed(&e),
    };
    if !asked.confirmed {
        return confirmation(&signed, &asked, &sorted).into_response();
    }
    let outcome = decide(&state, &signed, &asked, &sorted).await;
    match outcome {
        Ok(said) if !wants_json(&headers) => {
            let body = html! {
                section.message {
                    h1 { "Done" }
                    ul { @for l in &said { li { (l) } } }
                    a href="/" { "Back to the pending page" }
                }
            };
            shell("Done", Some(&signed.0), Menu::Pending, body).into_response()
        }
        other => super::page::answered(&headers, other, "/"),
    }
}

fn wants_json(headers: &HeaderMap) -> bool {
    headers
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/json"))
}

/// The page that says exactly what a batch will do, with the form that does it.
fn confirmation(signed: &Signed, asked: &Asked, s: &Sorted) -> Markup {
    let verb = if asked.approve { "Approve" } else { "Deny" };
    let n = s.decided.len();
    let body = html! {
        h1 { (verb) " " (requests(n)) "?" }
        @if n > 0 {
            ul.batch {
                @for a in &s.decided {
                    li { code { (a.short_id) } " " code { (crate::names::visible(&a.agent)) } " wants to run "
                        code { (crate::names::visible(&a.tool)) } " · risk " (a.risk.score.as_str()) }
                }
            }
        }
        @if !s.critical.is_empty() {
            p.note { (requests(s.critical.len())) " of critical risk "
                (if s.critical.len() == 1 { "is" } else { "are" })
                " left out: a critical request is approved only on its own card." }
        }
        @if !s.settled.is_empty() {
            p.note { (requests(s.settled.len())) " left out: decided already." }
        }
        @if s.unknown > 0 {
            p.note { (s.unknown) " left out: no such request." }
        }
        @if let Some(r) = &asked.reason { p { "Reason the agents read: " q { (r) } } }
        @if n > 0 {
            form method="post" action="/batch" {
                input type="hidden" name="csrf" value=(signed.0.csrf);
                input type="hidden" name="verb" value=(if asked.approve { "approve" } else { "deny" });
                input type="hidden" name="confirmed" value="1";
                @if let Some(r) = &asked.reason { input type="hidden" name="reason" value=(r); }
                @for a in &s.decided { input type="hidden" name="id" value=(a.id); }
                button class=(if asked.approve { "primary" } else { "danger" }) type="submit" {
                    (verb) " " (requests(n))
                }
                " "
                a href="/" { "Cancel" }
            }
        } @else {
            p { "Nothing to decide. " a href="/" { "Back to the pending page" } }
        }
    };
    shell("Confirm", Some(&signed.0), Menu::Pending, body)
}

fn requests(n: usize) -> String {
    match n {
        1 => "1 request".into(),
        n => format!("{n} requests"),
    }
}

/// Decides every request the confirmation listed (critical ones never approved).
async fn decide(state: &DashState, signed: &Signed, asked: &Asked, s: &Sorted) -> Outcome {
    let engine = &state.engine;
    let verb = if asked.approve { "approve" } else { "deny" };
    let (mut done, mut counted, mut first) = (0, 0, Vec::new());
    for a in &s.decided {
        let subject = engine.identify(&a.id).await.ok();
        let decision = OwnerDecision {
            verb: verb.into(),
            reason: asked.reason.clone(),
            prefix: None,
            exact: false,
            for_: None,
            args: None,
            actor: signed.0.person.clone(),
            via: Via::Dashboard,
            factor: false,
        };
        match conversation::decide(engine, subject.as_ref(), &a.id, decision).await {
            // Under an approval rule, a vote that leaves the request waiting for more.
            Ok(d) if d.view["status"] == "pending" => counted += 1,
            Ok(_) => done += 1,
            Err(Refused::Settled { message, .. }) => first.push(message),
            Err(Refused::Unclear(m)) => return Err((StatusCode::BAD_REQUEST, m)),
            Err(Refused::Engine(EngineError::AlreadySettled(x))) => {
                first.push(format!("request {} was decided already", x.short_id));
            }
            // Over a budget, or not this person's vote to cast: it stays pending, and the
            // others go on.
            Err(Refused::Engine(
                e @ (EngineError::Conflict(crate::engine::Conflict::OverBudget { .. })
                | EngineError::VoteRefused { .. }
                | EngineError::VotedAlready { .. }
                | EngineError::StepUpRequired { .. }),
            )) => first.push(e.to_string()),
            Err(Refused::Engine(e)) => {
                tracing::warn!(error = %e, "dashboard: a batch decision failed");
                return Err((
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("gatebot stopped after {done} decisions: {e}"),
                ));
            }
        }
    }
    let mut said = vec![format!(
        "{} {}.",
        if asked.approve { "Approved" } else { "Denied" },
        requests(done)
    )];
    if counted > 0 {
        said.push(format!(
            "Your vote counted on {}: more people must answer (their approval rules ask \
             for them).",
            requests(counted)
        ));
    }
    said.extend(first);
    let left = s.critical.len() + s.settled.len() + s.unknown;
    if left > 0 {
        said.push(format!(
            "{} left out (see the confirmation).",
            requests(left)
        ));
    }
    Ok(said)
}
