//! The pending page: everything that waits for an owner, of every kind, riskiest and
//! newest first, filtered by kind, agent, tool and risk (kept in the URL), a page at a
//! time. Each subject's card is drawn by its kind ([`conversation::render`]), so a new
//! kind shows here with no code of the dashboard's; its buttons are decided by
//! [`decide`] through the kind's owner decision, as `gatebot decide` is.

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Form;
use maud::{html, Markup};
use serde::Deserialize;

use super::page::{shell, Menu};
use super::signin::Signed;
use super::DashState;
use crate::approval::Via;
use crate::chat::conversation::{self, owner::Refused, Action};
use crate::engine::EngineError;
use crate::policy::RiskScore;
use crate::subject::{OpenFilter, OpenPage, SubjectKind};

/// Subjects on one page.
pub(super) const PAGE: usize = 50;

/// The filters as the URL has them.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Filters {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    agent: String,
    #[serde(default)]
    tool: String,
    #[serde(default)]
    risk: String,
    #[serde(default)]
    after: String,
}

/// The kinds the filter offers, as people call them.
const KINDS: [(SubjectKind, &str); 4] = [
    (SubjectKind::Approval, "Requests"),
    (SubjectKind::CheckIn, "Check-ins"),
    (SubjectKind::Proposal, "Proposals"),
    (SubjectKind::Task, "Tasks"),
];

const RISKS: [(RiskScore, &str); 4] = [
    (RiskScore::Low, "Any risk"),
    (RiskScore::Medium, "Medium or higher"),
    (RiskScore::High, "High or critical"),
    (RiskScore::Critical, "Critical"),
];

impl Filters {
    /// Sets the filter a form's field `key` names (other fields are not filters).
    pub(super) fn set(&mut self, key: &str, value: String) {
        match key {
            "kind" => self.kind = value,
            "agent" => self.agent = value,
            "tool" => self.tool = value,
            "risk" => self.risk = value,
            _ => {}
        }
    }

    pub(super) fn open_filter(&self) -> OpenFilter {
        let some = |s: &str| Some(s.trim().to_string()).filter(|s| !s.is_empty());
        OpenFilter {
            kind: SubjectKind::parse(&self.kind),
            agent: some(&self.agent),
            tool: some(&self.tool),
            risk_at_least: RISKS
                .iter()
                .find(|(r, _)| r.as_str() == self.risk && *r != RiskScore::Low)
                .map(|(r, _)| *r),
            after: some(&self.after),
            limit: PAGE,
        }
    }

    /// The query string of these filters, without the page cursor.
    fn query(&self) -> String {
        let pairs = [
            ("kind", &self.kind),
            ("agent", &self.agent),
            ("tool", &self.tool),
            ("risk", &self.risk),
        ];
        super::forms::query(&pairs)
    }
}

/// `GET /`: the pending page.
pub(super) async fn page(
    State(state): State<DashState>,
    Signed(session): Signed,
    Query(f): Query<Filters>,
) -> Response {
    let list = match list_markup(&state, &session.csrf, &f).await {
        Ok(m) => m,
        Err(e) => return super::failed(&e),
    };
    let body = html! {
        h1 { "Pending" }
        (filters_form(&f))
        p.keys { "Keys: " kbd{"j"} "/" kbd{"k"} " move, " kbd{"a"} " allow once, "
            kbd{"d"} " deny (type a reason, then Enter), " kbd{"x"} " select." }
        (batch_form(&session.csrf, &f))
        p #said role="status" aria-live="polite" {}
        div #pending data-query=(f.query()) { (list) }
    };
    shell("Pending", Some(&session), Menu::Pending, body).into_response()
}

/// `GET /pending/list`: the list alone, for the page's live updates.
pub(super) async fn list(
    State(state): State<DashState>,
    Signed(session): Signed,
    Query(f): Query<Filters>,
) -> Response {
    match list_markup(&state, &session.csrf, &f).await {
        Ok(m) => m.into_response(),
        Err(e) => super::failed(&e),
    }
}

/// The batch bar: the ticked requests (their boxes are in the list, `form="batch"`), or
/// all that the filter shows, approved or denied after a confirmation ([`super::batch`]).
fn batch_form(csrf: &str, f: &Filters) -> Markup {
    html! {
        form #batch.batch method="post" action="/batch" {
            input type="hidden" name="csrf" value=(csrf);
            @for (k, v) in [("kind", &f.kind), ("agent", &f.agent), ("tool", &f.tool), ("risk", &f.risk)] {
                @if !v.is_empty() { input type="hidden" name=(k) value=(v); }
            }
            label { input type="checkbox" name="all" value="1"; " all requests this filter shows" }
            input type="text" name="reason" maxlength="2000" placeholder="Reason for a denial" aria-label="Reason for a denial";
            button.plain type="submit" name="verb" value="approve" { "Approve selected…" }
            button.danger type="submit" name="verb" value="deny" { "Deny selected…" }
        }
    }
}

fn filters_form(f: &Filters) -> Markup {
    html! {
        form.filters method="get" action="/" {
            label { "Kind "
                select name="kind" {
                    option value="" { "All" }
                    @for (k, words) in KINDS {
                        option value=(k.as_str()) selected[f.kind == k.as_str()] { (words) }
                    }
                }
            }
            label { "Agent " input name="agent" value=(f.agent) size="12"; }
            label { "Tool " input name="tool" value=(f.tool) size="12"; }
            label { "Risk "
                select name="risk" {
                    @for (r, words) in RISKS {
                        option value=(r.as_str()) selected[f.risk == r.as_str()] { (words) }
                    }
                }
            }
            button type="submit" { "Filter" }
        }
    }
}

async fn list_markup(state: &DashState, csrf: &str, f: &Filters) -> Result<Markup, EngineError> {
    let engine = &state.engine;
    let page: OpenPage = engine.open_subjects(f.open_filter()).await?;
    let config = engine.config();
    let query = f.query();
    let back = if query.is_empty() {
        "/".to_string()
    } else {
        format!("/?{query}")
    };
    let mut cards = Vec::with_capacity(page.subjects.len());
    for s in &page.subjects {
        if let Some(r) = conversation::render(engine, s).await? {
            let mut card = super::card::render(&r.card, &config, csrf);
            if s.kind == SubjectKind::Task {
                // A question its agent asks takes words: answered here, as in the chat.
                if let Ok(t) = engine.task(&s.id).await {
                    if t.status == crate::inbox::TaskStatus::Waiting && t.question.is_some() {
                        card = html! { (card) (super::tasks::answer_form(&t, csrf, &back)) };
                    }
                }
            }
            cards.push((s, r.deadline, card));
        }
    }
    Ok(html! {
        p.count { (count_words(page.total)) }
        @for (s, deadline, card) in &cards {
            article.item data-id=(s.id) data-kind=(s.kind.as_str()) tabindex="-1" {
                @if let Some(at) = deadline {
                    // Counted down by the page's script; without it, the card's own words.
                    span.countdown data-deadline=(at) {}
                }
                @if s.kind == SubjectKind::Approval {
                    label.select { input type="checkbox" name="id" value=(s.id) form="batch"; " select" }
                }
                (card)
                @if s.kind == SubjectKind::Approval {
                    p.edit { a href=(format!("/requests/{}/edit", s.id)) { "Edit, then approve" } }
                }
            }
        }
        @if let Some(next) = &page.next {
            @let sep = if query.is_empty() { "" } else { "&" };
            a.next href=(format!("/?{query}{sep}after={next}")) { "Next page" }
        }
    })
}

fn count_words(n: usize) -> String {
    match n {
        0 => "Nothing is waiting for you.".into(),
        1 => "1 waits for you.".into(),
        n => format!("{n} wait for you."),
    }
}

#[derive(Deserialize)]
pub(super) struct DecideForm {
    csrf: String,
    /// The button's data, as on the card.
    button: String,
    #[serde(default)]
    reason: String,
}

/// `POST /decide`: a card's button, taken as the owner's decision on its subject.
/// A script asks for JSON (`Accept: application/json`): `{"said": [...]}` or
/// `{"error": "..."}`; a plain form is sent back to the page.
pub(super) async fn decide(
    State(state): State<DashState>,
    signed: Signed,
    headers: HeaderMap,
    Form(form): Form<DecideForm>,
) -> Response {
    if let Err(r) = signed.check(&state, &headers, &form.csrf).await {
        return r;
    }
    let outcome = match take(&state, &signed, &form).await {
        // An approval that needs the person's second factor: its confirm page asks for a
        // code (the page's script goes there; a plain form is sent there).
        Err(Taken::StepUp(request)) => {
            let go = format!("/requests/{request}/confirm");
            return super::page::go_to(&headers, &go);
        }
        Err(Taken::Refused(why)) => Err(why),
        Ok(said) => Ok(said),
    };
    // Back to the page the button was on: the pending page, or a request's own.
    let back = super::forms::referring_page(&headers).unwrap_or_else(|| "/".into());
    super::page::answered(&headers, outcome, &back)
}

/// Why a button's decision was not taken.
enum Taken {
    /// It needs the person's second factor, on this request's confirm page.
    StepUp(String),
    Refused((StatusCode, String)),
}

impl From<(StatusCode, String)> for Taken {
    fn from(why: (StatusCode, String)) -> Taken {
        Taken::Refused(why)
    }
}

/// Takes the decision the button stands for; the lines said, or why not.
async fn take(state: &DashState, signed: &Signed, form: &DecideForm) -> Result<Vec<String>, Taken> {
    let engine = &state.engine;
    let config = engine.config();
    let offered = Action::decode(&form.button)
        .ok()
        .and_then(|a| a.offered(&config))
        .ok_or((
            StatusCode::BAD_REQUEST,
            "That button is not one gatebot offers here.".to_string(),
        ))?;
    let reason = Some(form.reason.trim().to_string()).filter(|r| !r.is_empty());
    let decision = offered.decision(signed.0.person.clone(), Via::Dashboard, reason);
    let subject = engine.identify(&offered.subject).await.ok();
    match conversation::decide(engine, subject.as_ref(), &offered.subject, decision).await {
        Ok(d) => Ok(d.said),
        Err(Refused::Unclear(m)) => Err((StatusCode::BAD_REQUEST, m).into()),
        Err(Refused::Settled { message, .. }) => Err((StatusCode::CONFLICT, message).into()),
        Err(Refused::Engine(EngineError::StepUpRequired {
            request,
            enrolled: true,
        })) => Err(Taken::StepUp(request)),
        Err(Refused::Engine(e)) => Err(super::forms::engine_words(&e).into()),
    }
}
