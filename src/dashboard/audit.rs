//! The audit page: the trail, newest first, a page at a time, filtered by event, the
//! request (or other subject) a row is about, the actor and time (kept in the URL);
//! each row's detail shown as the data it is. Above it, the state of the hash chain
//! (checked with [`Engine::verify_audit`], as `gatebot audit verify` does) and its head,
//! with how to keep the head and check against it later.
//!
//! Checking the chain reads the whole trail, so a check is reused for a minute (per
//! database) instead of being run again on every page of the trail.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use maud::{html, Markup};
use serde::Deserialize;

use super::page::{shell, Menu};
use super::signin::Signed;
use super::DashState;
use crate::approval::{who, Via};
use crate::engine::{AuditFilter, Cursor, Engine, EngineError};
use crate::names::visible;
use crate::store::{AuditCheck, AuditRow};
use crate::time::now_ms;
use crate::words::relative;

/// Rows on one page.
const PAGE: usize = 100;
/// How long a check of the chain is shown before the page checks again.
const CHECK_FOR_MS: i64 = 60_000;

#[derive(Debug, Default, Deserialize)]
pub(super) struct AuditQuery {
    #[serde(default)]
    event: String,
    /// A request's id (full or short), or another subject's or a run's.
    #[serde(default)]
    request: String,
    #[serde(default)]
    actor: String,
    #[serde(default)]
    since: String,
    /// Older than this seq (the next page).
    #[serde(default)]
    after: String,
    /// Newer than this seq (the previous page).
    #[serde(default)]
    before: String,
}

impl AuditQuery {
    fn query(&self) -> String {
        let pairs = [
            ("event", &self.event),
            ("request", &self.request),
            ("actor", &self.actor),
            ("since", &self.since),
        ];
        super::forms::query(&pairs)
    }

    fn link(&self, extra: Option<(&str, String)>) -> String {
        let mut q = self.query();
        if let Some((k, v)) = extra {
            if !q.is_empty() {
                q.push('&');
            }
            q.push_str(&format!("{k}={v}"));
        }
        if q.is_empty() {
            "/audit".into()
        } else {
            format!("/audit?{q}")
        }
    }

    /// The filter, and what in the query was not understood.
    async fn filter(
        &self,
        engine: &Engine,
        now: i64,
    ) -> Result<(AuditFilter, Vec<String>), EngineError> {
        let mut notes = Vec::new();
        let some = |s: &str| Some(s.trim().to_string()).filter(|s| !s.is_empty());
        let subject = match some(&self.request) {
            None => None,
            Some(typed) => Some(subject_id(engine, &typed, &mut notes).await?),
        };
        let since = super::history::since(&self.since, now, "rows", &mut notes);
        let seq = |s: &str| s.trim().parse::<i64>().ok().filter(|n| *n > 0);
        let cursor = super::history::cursor(&self.after, &self.before, seq, "rows", &mut notes);
        Ok((
            AuditFilter {
                event: some(&self.event),
                subject,
                actor: some(&self.actor),
                since,
                cursor,
                limit: PAGE,
            },
            notes,
        ))
    }
}

/// The id whose rows `typed` asks for: a request's (full or short id), else another
/// subject's, else what was typed (a run's id, say).
async fn subject_id(
    engine: &Engine,
    typed: &str,
    notes: &mut Vec<String>,
) -> Result<String, EngineError> {
    match engine.lookup(typed, false).await {
        Ok(a) => return Ok(a.id),
        Err(EngineError::NotFound { .. }) => {}
        Err(e @ EngineError::Ambiguous { .. }) => {
            notes.push(e.to_string());
            return Ok(typed.to_string());
        }
        Err(e) => return Err(e),
    }
    Ok(engine
        .identify(typed)
        .await
        .map_or_else(|_| typed.to_string(), |s| s.id))
}

/// The last check of each database's chain, and when it was made.
type Checks = Mutex<HashMap<PathBuf, (i64, Arc<AuditCheck>)>>;

fn checks() -> &'static Checks {
    static CHECKS: std::sync::OnceLock<Checks> = std::sync::OnceLock::new();
    CHECKS.get_or_init(Checks::default)
}

/// The chain checked now, or the check made less than [`CHECK_FOR_MS`] ago; and when.
async fn chain_check(engine: &Engine, now: i64) -> Result<(i64, Arc<AuditCheck>), EngineError> {
    let db = engine.config().store.path.clone();
    let last = checks()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&db)
        .cloned();
    if let Some((at, check)) = last.filter(|(at, _)| now - at < CHECK_FOR_MS) {
        return Ok((at, check));
    }
    let check = Arc::new(engine.verify_audit(None).await?);
    checks()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(db, (now, check.clone()));
    Ok((now, check))
}

/// `GET /audit`: the page.
pub(super) async fn page(
    State(state): State<DashState>,
    Signed(session): Signed,
    Query(q): Query<AuditQuery>,
) -> Response {
    let engine = &state.engine;
    let now = now_ms();
    let (filter, notes) = match q.filter(engine, now).await {
        Ok(f) => f,
        Err(e) => return super::failed(&e),
    };
    let first_page = filter.cursor == Cursor::Newest;
    let (checked_at, check) = match chain_check(engine, now).await {
        Ok(c) => c,
        Err(e) => return super::failed(&e),
    };
    let page = match engine.audit_history(filter).await {
        Ok(p) => p,
        Err(e) => return super::failed(&e),
    };
    let body = html! {
        h1 { "Audit trail" }
        (chain(&check, checked_at, now))
        (filters_form(&q))
        @for n in &notes { p.note role="status" { (n) } }
        @if page.rows.is_empty() {
            p.count {
                @if first_page && q.query().is_empty() { "The trail is empty." }
                @else if first_page { "No row matches." }
                @else { "No more rows." }
            }
        } @else {
            div.scroll { (rows(&page.rows, now)) }
        }
        nav.pages {
            @if let Some(newer) = page.newer {
                a href=(q.link(Some(("before", newer.to_string())))) rel="prev" { "Newer" }
                a href=(q.link(None)) { "Newest" }
            }
            @if let Some(older) = page.older {
                a href=(q.link(Some(("after", older.to_string())))) rel="next" { "Older" }
            }
        }
    };
    shell("Audit trail", Some(&session), Menu::Audit, body).into_response()
}

/// The chain's state in words, and its head with what to do with it.
fn chain(check: &AuditCheck, checked_at: i64, now: i64) -> Markup {
    let rows = match check.rows {
        1 => "1 row".to_string(),
        n => format!("{n} rows"),
    };
    let when = relative(checked_at, now);
    html! {
        section.chain.ok[check.problems.is_empty()].broken[!check.problems.is_empty()] {
            @if check.problems.is_empty() {
                h2 { "The trail is intact" }
                p { "gatebot checked the hash chain " (when) ": " (rows)
                    @if check.unchained > 0 {
                        " (" (check.unchained) " of them written before the chain existed, which cannot be checked)"
                    }
                    ", none changed, removed or reordered, and the trail is still protected against edits." }
            } @else {
                h2 { "The trail is broken" }
                p { "gatebot checked the hash chain " (when) " (" (rows) ") and found:" }
                ul { @for p in &check.problems { li { (visible(p)) } } }
                p { "Find out who could write gatebot's database, and compare it with a backup "
                    "and with a head hash kept elsewhere." }
            }
            @if let Some(head) = &check.head {
                @if let Some(hash) = &head.hash {
                    p { "Its head (row " (head.seq) "):" }
                    pre.hash { code { (hash) } }
                    p { "Keep this hash somewhere this machine's users cannot change (a ticket, "
                        "another host, a printed log). Later, check that the trail still holds it: " }
                    pre { code { "gatebot audit verify --head " (hash) } }
                    p { "That check fails if any row up to this one was changed, removed or "
                        "reordered since, even if the whole file was rewritten to verify." }
                }
            }
        }
    }
}

fn filters_form(q: &AuditQuery) -> Markup {
    html! {
        form.filters method="get" action="/audit" {
            label { "Event " input name="event" value=(q.event) size="16" placeholder="decided"; }
            label { "Request " input name="request" value=(q.request) size="14" placeholder="id or short id"; }
            label { "Actor " input name="actor" value=(q.actor) size="12"; }
            label { "Since " input name="since" value=(q.since) size="12" placeholder="24h or 2026-11-20"; }
            button type="submit" { "Filter" }
            @if !q.query().is_empty() { a href="/audit" { "Clear" } }
        }
    }
}

fn rows(rows: &[AuditRow], now: i64) -> Markup {
    html! {
        table.rows.audit {
            thead { tr { th { "When" } th { "Event" } th { "About" } th { "By" } th { "Detail" } } }
            tbody {
                @for r in rows {
                    tr {
                        td data-label="When" {
                            (super::forms::when(r.at, now))
                            span.seq { "row " (r.seq) }
                        }
                        td data-label="Event" { code { (visible(&r.event)) } }
                        td data-label="About" {
                            @if let Some(id) = &r.approval_id {
                                a href=(format!("/audit?request={}", urlencode(id))) { code { (visible(id)) } }
                            }
                        }
                        td data-label="By" { (actor(r)) }
                        td data-label="Detail" { (detail(&r.detail)) }
                    }
                }
            }
        }
    }
}

fn urlencode(s: &str) -> String {
    serde_urlencoded::to_string([("", s)])
        .unwrap_or_default()
        .trim_start_matches('=')
        .to_string()
}

/// Who, and where: "alice on the dashboard", "gatebot".
fn actor(r: &AuditRow) -> String {
    let via = r.channel.as_deref().and_then(|c| c.parse::<Via>().ok());
    match (&r.actor, &via) {
        (None, None) => String::new(),
        (None, Some(Via::System)) => "gatebot".into(),
        _ => visible(&who(r.actor.as_deref(), via.as_ref())).into_owned(),
    }
}

/// A row's detail: its JSON, indented, as text.
fn detail(d: &serde_json::Value) -> Markup {
    match d {
        serde_json::Value::Null => html! {},
        serde_json::Value::Object(m) if m.is_empty() => html! {},
        d => {
            let text = serde_json::to_string_pretty(d).unwrap_or_default();
            html! { pre.detail { code { (visible(&text)) } } }
        }
    }
}
