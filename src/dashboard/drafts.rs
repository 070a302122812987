//! The drafts page: what draft-only agents would have sent (their write and destructive
//! calls, blocked and kept), newest first, each as its request's card; an owner
//! discards one, or hands it to an agent as an inbox task ("send this draft"), which
//! then runs under that agent's own tier and gates.

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Form;
use maud::html;
use serde::Deserialize;

use super::page::{shell, Menu, Outcome};
use super::signin::Signed;
use super::DashState;
use crate::approval::Via;
use crate::chat::conversation::approval::render_request;

/// Drafts on one page.
const PAGE: usize = 50;

#[derive(Deserialize)]
pub(super) struct DraftsQuery {
    #[serde(default)]
    agent: String,
    #[serde(default)]
    after: String,
}

/// `GET /drafts`.
pub(super) async fn page(
    State(state): State<DashState>,
    Signed(session): Signed,
    Query(q): Query<DraftsQuery>,
) -> Response {
    let engine = &state.engine;
    let some = |s: &str| Some(s.trim().to_string()).filter(|s| !s.is_empty());
    let drafts = match engine.drafts(some(&q.agent), some(&q.after), PAGE).await {
        Ok(d) => d,
        Err(e) => return super::failed(&e),
    };
    let config = engine.config();
    let agents: Vec<&String> = config.agents.keys().collect();
    let mut cards = Vec::with_capacity(drafts.len());
    for a in &drafts {
        match render_request(engine, a).await {
            Ok(r) => cards.push((a, super::card::render(&r.card, &config, &session.csrf))),
            Err(e) => return super::failed(&e),
        }
    }
    let inbox = config.inbox.is_some();
    let body = html! {
        h1 { "Drafts" }
        p.note { "What draft-only agents would have sent: kept for you instead of lost. \
                  Hand one to an agent as a task (it then runs under that agent's own tier \
                  and asks you as usual), or discard it." }
        @if !inbox { p.note { "The inbox is off, so drafts cannot be handed on as tasks: \
                               add an [inbox] table to bot.toml." } }
        @if cards.is_empty() { p.count { "No drafts." } }
        @for (a, card) in &cards {
            article.item data-id=(a.id) {
                (card)
                div.actions {
                    @if inbox {
                        form.decide method="post" action="/drafts/hand" {
                            input type="hidden" name="csrf" value=(session.csrf);
                            input type="hidden" name="id" value=(a.id);
                            label { "Hand to "
                                select name="agent" {
                                    @for name in &agents {
                                        option value=(name) { (name) }
                                    }
                                }
                            }
                            button.primary type="submit" { "Hand on as a task" }
                        }
                    }
                    form.decide method="post" action="/drafts/discard" {
                        input type="hidden" name="csrf" value=(session.csrf);
                        input type="hidden" name="id" value=(a.id);
                        button.danger type="submit" { "Discard" }
                    }
                }
            }
        }
        @if drafts.len() == PAGE {
            @if let Some(last) = drafts.last() {
                a.next href=(format!("/drafts?{}", serde_urlencoded::to_string([("agent", q.agent.as_str()), ("after", last.id.as_str())]).unwrap_or_default())) { "Next page" }
            }
        }
    };
    shell("Drafts", Some(&session), Menu::Drafts, body).into_response()
}

#[derive(Deserialize)]
pub(super) struct DraftForm {
    csrf: String,
    id: String,
    #[serde(default)]
    agent: String,
}

/// `POST /drafts/discard`.
pub(super) async fn discard(
    State(state): State<DashState>,
    signed: Signed,
    headers: HeaderMap,
    Form(form): Form<DraftForm>,
) -> Response {
    if let Err(r) = signed.check(&state, &headers, &form.csrf).await {
        return r;
    }
    let outcome: Outcome = match state
        .engine
        .discard_draft(&form.id, &signed.0.person, Via::Dashboard)
        .await
    {
        Ok(a) => Ok(vec![format!(
            "Discarded the draft {} ({} from {}).",
            a.short_id, a.tool, a.agent
        )]),
        Err(e) => Err(super::forms::engine_words(&e)),
    };
    super::page::answered(&headers, outcome, "/drafts")
}

/// `POST /drafts/hand`.
pub(super) async fn hand(
    State(state): State<DashState>,
    signed: Signed,
    headers: HeaderMap,
    Form(form): Form<DraftForm>,
) -> Response {
    if let Err(r) = signed.check(&state, &headers, &form.csrf).await {
        return r;
    }
    let outcome: Outcome = match state
        .engine
        .hand_draft(
            &form.id,
            form.agent.trim(),
            &signed.0.person,
            Via::Dashboard,
        )
        .await
    {
        Ok((a, t)) => Ok(vec![format!(
            "Handed the draft {} to {} as task {}.",
            a.short_id, t.agent, t.short_id
        )]),
        Err(e) => Err(super::forms::engine_words(&e)),
    };
    super::page::answered(&headers, outcome, "/drafts")
}
