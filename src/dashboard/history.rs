//! The history page: every request, whatever became of it, newest first: its outcome,
//! who decided and how long it waited; searched by words and filtered by agent, tool,
//! outcome, risk and time (all kept in the URL), a page at a time through any number of
//! rows (keyset pages, see `store::history`), and exported whole as CSV or JSON. Each
//! request opens on a page of its own with its card ([`request`]).

use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use maud::{html, Markup};
use serde::Deserialize;

use super::forms::{given, not_found, when};
use super::page::{shell, Menu};
use super::signin::Signed;
use super::DashState;
use crate::approval::{Approval, Status};
use crate::engine::{Cursor, EngineError, HistoryFilter};
use crate::names::visible;
use crate::policy::RiskScore;
use crate::time::now_ms;
use crate::wire::ApprovalView;
use crate::words::{clock, span};

/// Requests on one page.
const PAGE: usize = 50;
/// Requests read from the database for one piece of an export.
const EXPORT_PAGE: usize = 500;
/// Most words a search takes (each must appear).
const MAX_WORDS: usize = 8;
/// Longest word searched for, in characters.
const MAX_WORD: usize = 200;

/// The page's query as the URL has it: every value a string, so that a malformed one
/// is said on the page rather than refused.
#[derive(Debug, Default, Deserialize)]
pub(super) struct HistoryQuery {
    #[serde(default)]
    q: String,
    #[serde(default)]
    agent: String,
    #[serde(default)]
    tool: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    risk: String,
    #[serde(default)]
    since: String,
    /// Older than this request (the next page).
    #[serde(default)]
    after: String,
    /// Newer than this request (the previous page).
    #[serde(default)]
    before: String,
}

/// The outcomes the filter offers: its value in the URL, its words, the statuses it
/// stands for.
const OUTCOMES: [(&str, &str, &[Status]); 7] = [
    ("pending", "Waiting", &[Status::Pending]),
    (
        "approved",
        "Approved",
        &[
            Status::Approved,
            Status::Executing,
            Status::Succeeded,
            Status::Failed,
        ],
    ),
    ("rejected", "Denied", &[Status::Rejected]),
    ("expired", "Expired", &[Status::Expired]),
    ("cancelled", "Cancelled", &[Status::Cancelled]),
    ("allowed", "Allowed by policy", &[Status::Allowed]),
    ("blocked", "Blocked by policy", &[Status::Blocked]),
];

const RISKS: [(RiskScore, &str); 4] = [
    (RiskScore::Low, "Any risk"),
    (RiskScore::Medium, "Medium or higher"),
    (RiskScore::High, "High or critical"),
    (RiskScore::Critical, "Critical"),
];

/// The time spans the filter offers.
const SINCE: [(&str, &str); 5] = [
    ("", "Any time"),
    ("1h", "Last hour"),
    ("24h", "Last 24 hours"),
    ("7d", "Last 7 days"),
    ("30d", "Last 30 days"),
];

/// A cursor in the URL: a request's id (letters and digits).
fn cursor_id(s: &str) -> Option<String> {
    let s = s.trim();
    (!s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then(|| s.to_string())
}

/// The search's words, each cut to [`MAX_WORD`] characters, at most [`MAX_WORDS`].
fn words(q: &str, notes: &mut Vec<String>) -> Vec<String> {
    let mut words: Vec<String> = q
        .split_whitespace()
        .map(|w| w.chars().take(MAX_WORD).collect())
        .collect();
    if words.len() > MAX_WORDS {
        notes.push(format!(
            "Only the first {MAX_WORDS} words of the search are used."
        ));
        words.truncate(MAX_WORDS);
    }
    words
}

/// The statuses an outcome of the filter (or a status's own name) stands for.
fn outcome(typed: &str, notes: &mut Vec<String>) -> Vec<Status> {
    let s = typed.trim();
    if s.is_empty() {
        return Vec::new();
    }
    if let Some((_, _, statuses)) = OUTCOMES.iter().find(|(v, _, _)| *v == s) {
        return statuses.to_vec();
    }
    match s.parse::<Status>() {
        Ok(status) => vec![status],
        Err(_) => {
            notes.push(format!(
                "“{}” is not an outcome gatebot knows, so requests of every outcome are shown.",
                visible(s)
            ));
            Vec::new()
        }
    }
}

/// The lowest risk a request must have, if any.
fn risk(typed: &str, notes: &mut Vec<String>) -> Option<RiskScore> {
    match typed.trim() {
        "" | "low" => None,
        r => {
            let found = RISKS.iter().find(|(s, _)| s.as_str() == r).map(|(s, _)| *s);
            if found.is_none() {
                notes.push(format!(
                    "“{}” is not a risk level (low, medium, high, critical), so requests of \
                     every risk are shown.",
                    visible(r)
                ));
            }
            found
        }
    }
}

/// `typed` as an instant ([`since_ms`]), or a note that says it is not one (`what`: the
/// rows a page shows, "requests").
pub(super) fn since(typed: &str, now: i64, what: &str, notes: &mut Vec<String>) -> Option<i64> {
    let s = typed.trim();
    if s.is_empty() {
        return None;
    }
    let at = since_ms(s, now);
    if at.is_none() {
        notes.push(format!(
            "“{}” is not a time gatebot can read (a span like 24h or 7d, or a day like \
             2026-11-20), so {what} of any time are shown.",
            visible(s)
        ));
    }
    at
}

/// The page a URL's `after` (older than) or `before` (newer than) asks for, keys read by
/// `key`; the newest, with a note, when neither is one gatebot made.
pub(super) fn cursor<K: PartialEq>(
    after: &str,
    before: &str,
    key: fn(&str) -> Option<K>,
    what: &str,
    notes: &mut Vec<String>,
) -> Cursor<K> {
    let cursor = match (after.trim(), before.trim()) {
        ("", "") => return Cursor::Newest,
        (a, "") => key(a).map_or(Cursor::Newest, Cursor::Older),
        ("", b) => key(b).map_or(Cursor::Newest, Cursor::Newer),
        _ => Cursor::Newest,
    };
    if cursor == Cursor::Newest {
        notes.push(format!(
            "The page link was not one gatebot made, so the newest {what} are shown."
        ));
    }
    cursor
}

/// `since` as an instant: a span back from `now` ("24h", "7d"), a day ("2026-11-20",
/// from its midnight UTC) or an RFC 3339 instant.
pub(super) fn since_ms(s: &str, now: i64) -> Option<i64> {
    let s = s.trim();
    if let Ok(d) = crate::time::parse_duration(s) {
        return Some(now.saturating_sub(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)));
    }
    if s.len() == 10 {
        return crate::time::parse_ms(&format!("{s}T00:00:00Z"));
    }
    crate::time::parse_ms(s)
}

/// How the page says a `since` it understood: the filter's words, or the instant.
fn since_words(s: &str, at: i64) -> String {
    SINCE
        .iter()
        .find(|(v, _)| *v == s.trim())
        .map_or_else(|| format!("Since {}", clock(at)), |(_, w)| (*w).to_string())
}

impl HistoryQuery {
    /// The filter this query asks for, and what in it was not understood (said on the
    /// page; the rest of the filter still applies).
    fn filter(&self, now: i64) -> (HistoryFilter, Vec<String>) {
        let mut notes = Vec::new();
        let filter = HistoryFilter {
            words: words(&self.q, &mut notes),
            agent: given(&self.agent),
            tool: given(&self.tool),
            statuses: outcome(&self.status, &mut notes),
            risk_at_least: risk(&self.risk, &mut notes),
            since: since(&self.since, now, "requests", &mut notes),
            cursor: cursor(&self.after, &self.before, cursor_id, "requests", &mut notes),
            limit: PAGE,
        };
        (filter, notes)
    }

    /// The query string of the filters, without the page cursor.
    fn query(&self) -> String {
        let pairs = [
            ("q", &self.q),
            ("agent", &self.agent),
            ("tool", &self.tool),
            ("status", &self.status),
            ("risk", &self.risk),
            ("since", &self.since),
        ];
        super::forms::query(&pairs)
    }

    /// `path` with the filters and one more pair (a cursor).
    fn link(&self, path: &str, extra: Option<(&str, &str)>) -> String {
        let mut q = self.query();
        if let Some((k, v)) = extra {
            let pair = serde_urlencoded::to_string([(k, v)]).unwrap_or_default();
            if !q.is_empty() {
                q.push('&');
            }
            q.push_str(&pair);
        }
        if q.is_empty() {
            path.to_string()
        } else {
            format!("{path}?{q}")
        }
    }

    fn filtered(&self) -> bool {
        !self.query().is_empty()
    }
}

/// Requests the search index reads in one pass.
const INDEX_BATCH: usize = 5_000;

/// Keeps the history's search index up to date while the dashboard runs: a pass every
/// two seconds, at once again while requests are left to read. A search never waits for
/// it (what the index has not read is read directly), so this only keeps searches fast.
pub async fn keep_index(
    engine: std::sync::Arc<crate::engine::Engine>,
    stop: tokio_util::sync::CancellationToken,
) {
    loop {
        let pause = match engine.index_history(INDEX_BATCH).await {
            Ok(n) if n >= INDEX_BATCH => Duration::ZERO,
            Ok(_) => Duration::from_secs(2),
            Err(e) => {
                tracing::warn!(error = %e, "the history's search index could not be brought up to date; will retry");
                Duration::from_secs(60)
            }
        };
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(pause) => {}
        }
    }
}

/// `GET /history`: the page.
pub(super) async fn page(
    State(state): State<DashState>,
    Signed(session): Signed,
    Query(q): Query<HistoryQuery>,
) -> Response {
    let now = now_ms();
    let (filter, notes) = q.filter(now);
    let first_page = filter.cursor == Cursor::Newest;
    let page = match state.engine.history(filter).await {
        Ok(p) => p,
        Err(e) => return super::failed(&e),
    };
    let body = html! {
        h1 { "History" }
        (filters_form(&q, now))
        @for n in &notes { p.note role="status" { (n) } }
        p.export {
            "Export " @if q.filtered() { "every request that matches" } @else { "every request" }
            " (all pages, not only this one): "
            a href=(q.link("/history.csv", None)) download { "CSV" } " · "
            a href=(q.link("/history.json", None)) download { "JSON" }
        }
        @if page.rows.is_empty() {
            p.count {
                @if first_page && !q.filtered() { "No request yet." }
                @else if first_page { "No request matches." }
                @else { "No more requests." }
            }
        } @else {
            div.scroll { (table(&page.rows, now)) }
        }
        nav.pages {
            @if let Some(newer) = &page.newer {
                a href=(q.link("/history", Some(("before", newer)))) rel="prev" { "Newer" }
                a href=(q.link("/history", None)) { "Newest" }
            }
            @if let Some(older) = &page.older {
                a href=(q.link("/history", Some(("after", older)))) rel="next" { "Older" }
            }
        }
    };
    shell("History", Some(&session), Menu::History, body).into_response()
}

fn filters_form(q: &HistoryQuery, now: i64) -> Markup {
    let since_known = SINCE.iter().any(|(v, _)| *v == q.since.trim());
    let since_other = (!since_known)
        .then(|| since_ms(&q.since, now).map(|at| since_words(&q.since, at)))
        .flatten();
    html! {
        form.filters method="get" action="/history" {
            label.search { "Search "
                input type="search" name="q" value=(q.q) size="24"
                    placeholder="tool, agent, summary, arguments, reason, id";
            }
            label { "Agent " input name="agent" value=(q.agent) size="12"; }
            label { "Tool " input name="tool" value=(q.tool) size="12"; }
            label { "Outcome "
                select name="status" {
                    option value="" { "Any" }
                    @for (v, words, _) in OUTCOMES {
                        option value=(v) selected[q.status.trim() == v] { (words) }
                    }
                }
            }
            label { "Risk "
                select name="risk" {
                    @for (r, words) in RISKS {
                        option value=(r.as_str()) selected[q.risk.trim() == r.as_str()] { (words) }
                    }
                }
            }
            label { "When "
                select name="since" {
                    @for (v, words) in SINCE {
                        option value=(v) selected[q.since.trim() == v] { (words) }
                    }
                    @if let Some(words) = since_other {
                        option value=(q.since.trim()) selected { (words) }
                    }
                }
            }
            button type="submit" { "Search" }
            @if q.filtered() { a href="/history" { "Clear" } }
        }
    }
}

fn table(rows: &[Approval], now: i64) -> Markup {
    html! {
        table.rows.history {
            thead { tr {
                th { "When" } th { "Request" } th { "Agent" } th { "Tool" } th { "Risk" }
                th { "Outcome" } th { "Decided by" } th { "Waited" }
            } }
            tbody {
                @for a in rows {
                    tr {
                        td data-label="When" {
                            (when(a.created_at, now))
                        }
                        td data-label="Request" {
                            a href=(format!("/requests/{}", a.id)) { code { (a.short_id) } }
                            @if let Some(s) = &a.summary {
                                span.summary { (visible(&crate::words::cut(s, 160))) }
                            }
                        }
                        td data-label="Agent" { (visible(&a.agent)) }
                        td data-label="Tool" { code { (visible(&a.tool)) } }
                        td data-label="Risk" { span class=(format!("risk {}", a.risk.score.as_str())) { (a.risk.score.as_str()) } }
                        td data-label="Outcome" {
                            (a.status.words())
                            @if let Some(r) = a.decision_reason.as_ref().filter(|_| a.status != Status::Pending) {
                                span.reason { (visible(&crate::words::cut(r, 160))) }
                            }
                        }
                        td data-label="Decided by" { (decider(a)) }
                        td data-label="Waited" { (waited(a, now)) }
                    }
                }
            }
        }
    }
}

/// Who decided, as people read it: "alice on the dashboard", "the policy".
fn decider(a: &Approval) -> String {
    match a.status {
        Status::Pending => "nobody yet".into(),
        Status::Allowed | Status::Blocked => "the policy".into(),
        _ => visible(&a.decider()).into_owned(),
    }
}

/// How long it waited for a human: from its making to its decision, in words.
fn waited(a: &Approval, now: i64) -> String {
    let gap =
        |from: i64, to: i64| span(Duration::from_millis(to.saturating_sub(from).max(0) as u64));
    match (a.status, a.decided_at) {
        (Status::Pending, _) => format!("{} so far", gap(a.created_at, now)),
        (Status::Allowed | Status::Blocked, _) => "did not wait".into(),
        (_, Some(at)) => gap(a.created_at, at),
        (_, None) => "—".into(),
    }
}

/// `GET /requests/{id}`: one request's card (with its buttons while it waits), and
/// where its trail is.
pub(super) async fn request(
    State(state): State<DashState>,
    Signed(session): Signed,
    Path(typed): Path<String>,
) -> Response {
    let engine = &state.engine;
    let a = match engine.lookup(&typed, false).await {
        Ok(a) => a,
        Err(e @ (EngineError::NotFound { .. } | EngineError::Ambiguous { .. })) => {
            return not_found(
                &session,
                Menu::History,
                &e.to_string(),
                ("/history", "History"),
            )
        }
        Err(e) => return super::failed(&e),
    };
    let rendered = match crate::chat::conversation::approval::render_request(engine, &a).await {
        Ok(r) => r,
        Err(e) => return super::failed(&e),
    };
    let config = engine.config();
    let now = now_ms();
    let body = html! {
        h1 { "Request " code { (a.short_id) } }
        article.item data-id=(a.id) {
            (super::card::render(&rendered.card, &config, &session.csrf))
        }
        dl.fields.facts {
            div { dt { "Outcome" } dd { (a.status.words()) } }
            div { dt { "Asked" } dd { (crate::words::deadline(a.created_at, now)) } }
            @if let Some(at) = a.decided_at {
                div { dt { "Decided" } dd { (crate::words::deadline(at, now)) } }
            }
            div { dt { "Decided by" } dd { (decider(&a)) } }
            div { dt { "Waited" } dd { (waited(&a, now)) } }
            div { dt { "Id" } dd { code { (a.id) } } }
        }
        p {
            @if a.status == crate::approval::Status::Pending {
                a href=(format!("/requests/{}/edit", a.id)) { "Edit, then approve" } " · "
            }
            a href=(format!("/audit?request={}", a.id)) { "Its rows in the audit trail" }
            " · " a href="/history" { "History" }
        }
    };
    shell(
        &format!("Request {}", a.short_id),
        Some(&session),
        Menu::History,
        body,
    )
    .into_response()
}

/// The two formats of an export.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Csv,
    Json,
}

/// `GET /history.csv`: every request the filters match, as CSV.
pub(super) async fn csv(
    State(state): State<DashState>,
    Signed(_): Signed,
    Query(q): Query<HistoryQuery>,
) -> Response {
    export(state, &q, Format::Csv)
}

/// `GET /history.json`: every request the filters match, as JSON.
pub(super) async fn json(
    State(state): State<DashState>,
    Signed(_): Signed,
    Query(q): Query<HistoryQuery>,
) -> Response {
    export(state, &q, Format::Json)
}

/// An export of every request `q`'s filters match (whatever page it was asked from),
/// newest first, streamed a database page at a time so that neither side holds it
/// whole. A filter that is not understood is left out, as the page does; an export
/// with one says so (CSV: a `# ` first line; JSON: `notes`).
fn export(state: DashState, q: &HistoryQuery, format: Format) -> Response {
    let (mut filter, notes) = q.filter(now_ms());
    filter.cursor = Cursor::Newest;
    filter.limit = EXPORT_PAGE;
    let notes: Vec<String> = notes
        .into_iter()
        .filter(|n| !n.starts_with("The page link"))
        .collect();
    let pieces = Pieces {
        state,
        filter,
        format,
        notes,
        started: false,
        done: false,
    };
    let (kind, name) = match format {
        Format::Csv => ("text/csv; charset=utf-8", "gatebot-history.csv"),
        Format::Json => ("application/json", "gatebot-history.json"),
    };
    let body = Body::from_stream(futures_util::stream::unfold(pieces, Pieces::next));
    (
        [
            (header::CONTENT_TYPE, kind.to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
        ],
        body,
    )
        .into_response()
}

/// Where a streamed export is.
struct Pieces {
    state: DashState,
    filter: HistoryFilter,
    format: Format,
    notes: Vec<String>,
    started: bool,
    done: bool,
}

/// The CSV's columns.
const CSV_HEADER: [&str; 17] = [
    "id",
    "short_id",
    "created_at",
    "agent",
    "tool",
    "status",
    "outcome",
    "risk",
    "tool_class",
    "risk_factors",
    "decided_by",
    "decided_via",
    "decided_at",
    "waited_seconds",
    "summary",
    "reason",
    "arguments",
];

impl Pieces {
    /// The next piece: the opening, a page of rows, or the closing.
    async fn next(mut self) -> Option<(Result<Bytes, Infallible>, Pieces)> {
        if self.done {
            return None;
        }
        let mut out = String::new();
        if !self.started {
            match self.format {
                Format::Csv => {
                    for n in &self.notes {
                        out.push_str(&format!("# {}\r\n", n.replace(['\r', '\n'], " ")));
                    }
                    out.push_str(&csv_line(CSV_HEADER.iter().map(|h| (*h).to_string())));
                }
                Format::Json => {
                    out.push('{');
                    if !self.notes.is_empty() {
                        out.push_str("\"notes\":");
                        out.push_str(&serde_json::to_string(&self.notes).unwrap_or_default());
                        out.push(',');
                    }
                    out.push_str("\"requests\":[");
                }
            }
        }
        match self.state.engine.history(self.filter.clone()).await {
            Ok(page) => {
                for a in &page.rows {
                    match self.format {
                        Format::Csv => out.push_str(&csv_line(csv_cells(a))),
                        Format::Json => {
                            if self.started {
                                out.push(',');
                            }
                            out.push_str(
                                &serde_json::to_string(&ApprovalView::from(a)).unwrap_or_default(),
                            );
                        }
                    }
                    self.started = true;
                }
                match page.older {
                    Some(older) => self.filter.cursor = Cursor::Older(older),
                    None => {
                        self.done = true;
                        if self.format == Format::Json {
                            out.push_str("]}");
                        }
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "dashboard: an export could not be read to the end");
                self.done = true;
                let said = "the history could not be read to the end; gatebot's log says why";
                match self.format {
                    Format::Csv => out.push_str(&format!("# {said}\r\n")),
                    Format::Json => {
                        out.push_str("],\"error\":");
                        out.push_str(&serde_json::to_string(said).unwrap_or_default());
                        out.push('}');
                    }
                }
            }
        }
        self.started = true;
        Some((Ok(Bytes::from(out)), self))
    }
}

/// A request's cells in [`CSV_HEADER`]'s order.
fn csv_cells(a: &Approval) -> Vec<String> {
    let opt = |o: &Option<String>| o.clone().unwrap_or_default();
    let waited = match (a.status, a.decided_at) {
        (Status::Allowed | Status::Blocked | Status::Pending, _) | (_, None) => String::new(),
        (_, Some(at)) => format!("{:.3}", (at - a.created_at).max(0) as f64 / 1000.0),
    };
    vec![
        a.id.clone(),
        a.short_id.clone(),
        crate::time::format_ms(a.created_at),
        a.agent.clone(),
        a.tool.clone(),
        a.status.as_str().to_string(),
        a.status.words().to_string(),
        a.risk.score.as_str().to_string(),
        a.risk.tool_class.as_str().to_string(),
        a.risk.factors.join(" "),
        opt(&a.decided_by),
        a.decided_via
            .as_ref()
            .map(|v| v.as_str().to_string())
            .unwrap_or_default(),
        a.decided_at.map(crate::time::format_ms).unwrap_or_default(),
        waited,
        opt(&a.summary),
        opt(&a.decision_reason),
        a.args.to_string(),
    ]
}

/// One CSV record (RFC 4180): every field quoted, quotes doubled, ended by CRLF. A
/// field a spreadsheet would read as a formula (it starts with `=`, `+`, `-`, `@`, a
/// tab or a carriage return) gets a leading `'`, so agent text opened in a spreadsheet
/// stays text.
fn csv_line(cells: impl IntoIterator<Item = String>) -> String {
    let mut line = String::new();
    for (i, cell) in cells.into_iter().enumerate() {
        if i > 0 {
            line.push(',');
        }
        line.push('"');
        if cell.starts_with(['=', '+', '-', '@', '\t', '\r']) {
            line.push('\'');
        }
        line.push_str(&cell.replace('"', "\"\""));
        line.push('"');
    }
    line.push_str("\r\n");
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_and_formulas_neutralised() {
        let line = csv_line(
            [
                "=HYPERLINK(\"http://x\")",
                "+1",
                "-2",
                "@SUM(A1)",
                "\tx",
                "plain, with \"quotes\"\nand a line",
                "",
            ]
            .map(String::from),
        );
        assert_eq!(
            line,
            "\"'=HYPERLINK(\"\"http://x\"\")\",\"'+1\",\"'-2\",\"'@SUM(A1)\",\"'\tx\",\
             \"plain, with \"\"quotes\"\"\nand a line\",\"\"\r\n"
        );
    }

    #[test]
    fn since_reads_spans_days_and_instants() {
        let now = 1_800_000_000_000;
        assert_eq!(since_ms("24h", now), Some(now - 86_400_000));
        assert_eq!(since_ms("2026-11-20", now), Some(1_795_132_800_000));
        assert_eq!(
            since_ms("2026-11-20T10:00:00Z", now),
            Some(1_795_132_800_000 + 36_000_000)
        );
        assert_eq!(since_ms("yesterday", now), None);
        assert_eq!(since_ms("0s", now), None);
    }

    #[test]
    fn a_query_not_understood_is_said_and_the_rest_applies() {
        let q = HistoryQuery {
            status: "maybe".into(),
            risk: "huge".into(),
            since: "soon".into(),
            after: "abc;drop".into(),
            agent: "mailer".into(),
            ..HistoryQuery::default()
        };
        let (f, notes) = q.filter(0);
        assert_eq!(notes.len(), 4, "{notes:?}");
        assert_eq!(f.agent.as_deref(), Some("mailer"));
        assert!(f.statuses.is_empty() && f.risk_at_least.is_none() && f.since.is_none());
        assert_eq!(f.cursor, Cursor::Newest);
        let (f, notes) = HistoryQuery {
            status: "approved".into(),
            risk: "high".into(),
            after: "01ARZ3NDEKTSV4RRFFQ69G5FAV".into(),
            ..HistoryQuery::default()
        }
        .filter(0);
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(f.statuses.len(), 4);
        assert_eq!(f.risk_at_least, Some(RiskScore::High));
        assert_eq!(f.cursor, Cursor::Older("01ARZ3NDEKTSV4RRFFQ69G5FAV".into()));
    }
}
