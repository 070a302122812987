//! Signing in and out.
//!
//! A link (`/login/TOKEN`, made by `/login` in a private chat or `gatebot dashboard
//! login`) opens a page with a Sign in button; only the POST from it uses the link up,
//! so a chat app's link preview or a mail scanner cannot burn it. Signing in starts a
//! server-side session whose token is the `gatebot_session` cookie (`HttpOnly`,
//! `SameSite=Lax` so a link from a chat app opens signed in, `Secure` when
//! `public_url` is https). Every page takes [`Signed`]; every form carries the
//! session's CSRF token, checked by [`Signed::check`].

use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use maud::html;
use serde::Deserialize;

use super::page::{how_to_sign_in, message};
use super::DashState;
use crate::approval::Via;
use crate::engine::{Refusal, Session, SessionEnd, SignInRefused};

/// The session cookie's name.
pub const COOKIE: &str = "gatebot_session";

/// The person signed in on this browser, and their session.
pub struct Signed(pub Session);

impl FromRequestParts<DashState> for Signed {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &DashState) -> Result<Self, Response> {
        let token = cookie(&parts.headers, COOKIE);
        let session = match token {
            Some(t) => state
                .engine
                .session(&t)
                .await
                .map_err(|e| super::failed(&e))?,
            None => None,
        };
        match session {
            Some(s) => Ok(Signed(s)),
            None if parts.method == Method::GET => Err(Redirect::to("/signin").into_response()),
            None => Err(message(
                StatusCode::UNAUTHORIZED,
                "Signed out",
                "This browser is not signed in (or its session ended), so nothing was done.",
                Some(how_to_sign_in()),
            )),
        }
    }
}

impl Signed {
    /// Refuses a state change whose form does not carry this session's CSRF token, or
    /// that comes from another site (its `Origin`); audited like every refusal.
    pub async fn check(
        &self,
        state: &DashState,
        headers: &HeaderMap,
        csrf: &str,
    ) -> Result<(), Response> {
        let same_site = match headers.get(header::ORIGIN).and_then(|o| o.to_str().ok()) {
            None => true,
            Some(origin) => {
                let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
                let public = state
                    .engine
                    .config()
                    .dashboard
                    .as_ref()
                    .map(|d| d.public_url.clone());
                host.is_some_and(|h| origin.ends_with(&format!("://{h}")))
                    || public.is_some_and(|p| p.starts_with(origin))
            }
        };
        if same_site && equal(csrf.as_bytes(), self.0.csrf.as_bytes()) {
            return Ok(());
        }
        let refusal = Refusal {
            approval_id: None,
            actor: self.0.person.clone(),
            via: Via::Dashboard,
            transport: None,
            kind: "a dashboard form without its token".into(),
            reason: Some(
                if same_site {
                    "wrong form token"
                } else {
                    "another site's form"
                }
                .into(),
            ),
            detail: serde_json::json!({}),
        };
        if let Err(e) = state.engine.record_unauthorised(refusal).await {
            return Err(super::failed(&e));
        }
        Err(message(
            StatusCode::FORBIDDEN,
            "Refused",
            "This form did not come from this dashboard page (or the page is from an \
             earlier session), so nothing was done. Reload the page and try again.",
            None,
        ))
    }
}

/// Compares two secrets in time that does not depend on where they differ.
fn equal(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The value of cookie `name`, if the request carries it.
fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
}

/// `GET /signin`: how to sign in.
pub(super) async fn signed_out() -> Response {
    message(
        StatusCode::OK,
        "Sign in",
        "This browser is not signed in to gatebot.",
        Some(how_to_sign_in()),
    )
}

/// `GET /login/TOKEN`: the page with the Sign in button. It changes nothing, so a
/// preview that opens the link does not use it up.
pub(super) async fn link_page(Path(token): Path<String>) -> Response {
    let body = html! {
        section.message {
            h1 { "Sign in to gatebot" }
            p { "This link signs this browser in to gatebot's dashboard, once." }
            form method="post" action="/login" {
                input type="hidden" name="token" value=(token);
                button.primary type="submit" autofocus { "Sign in" }
            }
        }
    };
    super::page::shell("Sign in", None, super::page::Menu::None, body).into_response()
}

#[derive(Deserialize)]
pub(super) struct LinkForm {
    token: String,
}

/// `POST /login`: uses the link up and starts a session.
pub(super) async fn sign_in(
    State(state): State<DashState>,
    headers: HeaderMap,
    Form(form): Form<LinkForm>,
) -> Response {
    let agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok());
    let d = match state.engine.dashboard() {
        Ok(d) => d,
        Err(e) => return super::failed(&e),
    };
    match state.engine.sign_in(form.token.trim(), agent).await {
        Ok(Ok(signed)) => {
            let cookie = format!(
                "{COOKIE}={}; Path=/; HttpOnly; SameSite=Lax; Max-Age={}{}",
                signed.cookie,
                d.session_max.as_secs(),
                if d.https() { "; Secure" } else { "" }
            );
            // A link may lead to one page of the dashboard (a step-up's confirm page).
            let to = signed
                .next
                .filter(|n| n.starts_with('/') && !n.starts_with("//"))
                .unwrap_or_else(|| "/".to_string());
            let mut r = Redirect::to(&to).into_response();
            if let Ok(v) = HeaderValue::from_str(&cookie) {
                r.headers_mut().insert(header::SET_COOKIE, v);
            }
            r
        }
        Ok(Err(why)) => refused(why),
        Err(e) => super::failed(&e),
    }
}

fn refused(why: SignInRefused) -> Response {
    message(
        StatusCode::FORBIDDEN,
        "Not signed in",
        why.words(),
        Some(how_to_sign_in()),
    )
}

#[derive(Deserialize)]
pub(super) struct SignOutForm {
    csrf: String,
    /// Any value: sign out every session of this person.
    everywhere: Option<String>,
}

/// `POST /logout`: ends this session (or, with `everywhere`, all of this person's).
pub(super) async fn sign_out(
    State(state): State<DashState>,
    signed: Signed,
    headers: HeaderMap,
    Form(form): Form<SignOutForm>,
) -> Response {
    if let Err(r) = signed.check(&state, &headers, &form.csrf).await {
        return r;
    }
    let s = &signed.0;
    let which = match form.everywhere {
        Some(_) => SessionEnd::Person(s.person.clone()),
        None => SessionEnd::One(s.id.clone()),
    };
    if let Err(e) = state
        .engine
        .end_sessions(which, &s.person, Via::Dashboard)
        .await
    {
        return super::failed(&e);
    }
    let mut r = message(
        StatusCode::OK,
        "Signed out",
        "This browser is signed out of gatebot.",
        Some(how_to_sign_in()),
    );
    r.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("gatebot_session=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_found_by_name_and_secrets_compared_whole() {
        let mut h = HeaderMap::new();
        h.append(
            header::COOKIE,
            HeaderValue::from_static("a=1; gatebot_session=abc"),
        );
        assert_eq!(cookie(&h, COOKIE).as_deref(), Some("abc"));
        assert_eq!(cookie(&h, "b"), None);
        assert!(equal(b"abc", b"abc"));
        assert!(!equal(b"abc", b"abd") && !equal(b"abc", b"ab"));
    }
}
