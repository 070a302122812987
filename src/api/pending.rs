//! `GET /v1/pending?agent=&limit=&after=` (owners' socket): what waits for an owner,
//! filled kind by kind from the registry ([`conversation::listed`]): one page of
//! pending requests (`requests`, `next`), and on the first page the waiting
//! check-ins (`check_ins`) and open proposals (`proposals`); `said` holds the lines
//! `gatebot pending` prints.

use axum::extract::State;
use axum::Json;
use serde_json::{json, Map, Value};

use super::error::ApiResult;
use super::extract::ApiQuery;
use super::list::page_limit;
use super::ApiState;
use crate::chat::conversation::{self, owner::Listing};

#[derive(serde::Deserialize)]
pub(super) struct PendingQuery {
    agent: Option<String>,
    limit: Option<String>,
    after: Option<String>,
}

pub(super) async fn pending(
    State(state): State<ApiState>,
    ApiQuery(q): ApiQuery<PendingQuery>,
) -> ApiResult<Json<Value>> {
    let limit = page_limit(q.limit.as_deref())?;
    let listing = Listing {
        agent: q.agent.filter(|a| !a.is_empty()),
        after: q.after.filter(|a| !a.is_empty()),
        limit,
    };
    let mut answer = Map::new();
    let mut said = Vec::new();
    for part in conversation::listed(&state.engine, &listing).await? {
        answer.extend(part.fields);
        said.extend(part.said);
    }
    // A section's blank line before it is for the sections above it.
    let blank = said.iter().take_while(|l| l.is_empty()).count();
    said.drain(..blank);
    if said.is_empty() {
        said.push("Nothing is waiting for you.".into());
    }
    answer.insert("said".into(), json!(said));
    Ok(Json(Value::Object(answer)))
}
