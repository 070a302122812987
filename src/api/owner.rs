//! Who an owner's route acts for: the caller the kernel names on the control socket
//! ([`crate::peer`]), never what a body or the daemon's environment says. Every owner's
//! route that changes something (decisions, tasks, trust) asks here.

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use tracing::info;

use super::error::{ApiError, ApiResult};
use super::ApiState;
use crate::peer::{check_sudo_user, Caller, SUDO_USER_HEADER};

/// Who is acting on the control socket ([`decider`]), for every owner's route that
/// changes something: the person `[people]` names for that account (`unix = …`), else
/// the account itself. Takes what it needs from `req` at once, so the request is not
/// held across the lookup (a body is not `Sync`).
pub(super) fn owner_of(
    state: &ApiState,
    req: &Request<Body>,
) -> impl std::future::Future<Output = ApiResult<String>> + Send + 'static {
    let caller = req.extensions().get::<Caller>().copied();
    let headers = req.headers().clone();
    let engine = state.engine.clone();
    async move {
        let account = decider(caller, &headers).await?;
        let person = engine
            .config()
            .people
            .named("unix", &account)
            .map(str::to_string);
        Ok(person.unwrap_or(account))
    }
}

/// Refuses a body that names who acts: gatebot records the caller the kernel names.
pub(super) fn refuse_actor(actor: Option<&serde_json::Value>) -> ApiResult<()> {
    match actor {
        None => Ok(()),
        Some(_) => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "`actor` is not accepted: gatebot records who acts from the control socket's \
             peer credentials (the caller's own account)",
        )),
    }
}

/// Who is deciding: the kernel's caller of this connection (see the module docs).
pub(super) async fn decider(caller: Option<Caller>, headers: &HeaderMap) -> ApiResult<String> {
    let bad = |m: String| ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", m);
    let sudo_user = match headers.get(SUDO_USER_HEADER) {
        None => None,
        Some(v) => {
            let v = v
                .to_str()
                .map_err(|_| bad(format!("`{SUDO_USER_HEADER}` must be a user name")))?;
            Some(check_sudo_user(v).map_err(bad)?.to_string())
        }
    };
    let Some(caller) = caller else {
        // Every Unix connection carries one; the control socket is only ever Unix.
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "decisions are taken only from a caller the kernel can name (the control socket)",
        ));
    };
    // getpwuid_r may ask NSS (a directory service): not on the async threads.
    let (name, account) = tokio::task::spawn_blocking(move || {
        (caller.owner_name(sudo_user.as_deref()), caller.account())
    })
    .await
    .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))?;
    if name != account {
        info!(by = %name, account = %account, uid = caller.uid, pid = ?caller.pid, "decision through a shared account, for the person sudo named");
    }
    Ok(name)
}
