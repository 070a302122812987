//! `GET /v1/agents/{name}`: an agent's tier (the one in force: an owner's override
//! over `bot.toml`'s), lists and system-prompt guidance.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::Json;

use super::error::ApiResult;
use super::extract::{authenticate, ApiPath};
use super::ApiState;
use crate::engine::EngineError;
use crate::guidance::{for_agent, with_scoped_grants, AgentGuidance, OrgRules};

pub(super) async fn guidance(
    State(state): State<ApiState>,
    ApiPath(name): ApiPath<String>,
    headers: HeaderMap,
) -> ApiResult<Json<AgentGuidance>> {
    let config = state.engine.config();
    let cfg = if state.owner {
        config
            .agent(&name)
            .ok_or_else(|| EngineError::UnknownAgent(name.clone()))?
    } else {
        authenticate(&state, &name, &headers, "read its tier guidance", None).await?
    };
    let added = state.engine.always_allowed_tools(&name).await?;
    let org = OrgRules::of(&config.policy);
    let mut rules = cfg.rules;
    rules.tier = state.engine.effective_tier(&name).await?.0;
    let mut g = for_agent(&name, &rules, &added, &org);
    with_scoped_grants(
        &mut g,
        &rules,
        &state.engine.grants(Some(name.clone()), false).await?,
    );
    Ok(Json(g))
}
