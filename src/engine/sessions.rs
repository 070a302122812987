//! The web dashboard's sign-in, for the owners who may decide: single-use links
//! (`/login` in a private chat, `gatebot dashboard login`), used up only by the POST of
//! the page they open (so a link preview cannot burn one), and server-side sessions
//! with idle and absolute expiry. Tokens are random (256 bits), given to the person
//! once, and stored only as their SHA-256.

use serde_json::json;
use sha2::{Digest, Sha256};

use super::{Engine, EngineError, Refusal};
use crate::approval::Via;
use crate::config::dashboard::DashboardConfig;
use crate::store::{LinkUse, NewLink, NewSession, Session, SessionEnd};
use crate::time::now_ms;

/// A sign-in link made for a person.
#[derive(Debug, Clone)]
pub struct SignInLink {
    /// The whole link: `public_url` + `/login/` + the token.
    pub url: String,
    pub expires_at: i64,
}

/// Why a link signed no one in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignInRefused {
    /// No link has this token (mistyped, cut, or forged).
    Unknown,
    /// The link was used before.
    Used,
    /// The link's time ran out.
    Expired,
}

impl SignInRefused {
    /// What the person is told, with what to do.
    #[must_use]
    pub fn words(self) -> &'static str {
        match self {
            SignInRefused::Unknown => {
                "This sign-in link is not one gatebot made (it may be cut short or mistyped)."
            }
            SignInRefused::Used => "This sign-in link was used already: each link signs in once.",
            SignInRefused::Expired => "This sign-in link has expired.",
        }
    }

    fn reason(self) -> &'static str {
        match self {
            SignInRefused::Unknown => "no such link",
            SignInRefused::Used => "link used before",
            SignInRefused::Expired => "link expired",
        }
    }
}

/// A session begun: its row, and the cookie's token (never stored).
#[derive(Debug)]
pub struct SignedIn {
    pub session: Session,
    pub cookie: String,
    /// The dashboard page the link leads to (a path), if not the front page.
    pub next: Option<String>,
}

/// A new random token: 32 bytes, as 64 hex digits.
fn new_token() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    hex(&bytes)
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// The SHA-256 of a token, as stored.
fn hashed(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

/// Whether `token` has the shape of one gatebot makes (so a garbled one is not even
/// looked up).
#[must_use]
pub fn token_shaped(token: &str) -> bool {
    token.len() == 64
        && token
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

impl Engine {
    /// The dashboard's settings in force, or the error that says how to turn it on.
    pub fn dashboard(&self) -> Result<DashboardConfig, EngineError> {
        self.config()
            .dashboard
            .clone()
            .ok_or(EngineError::Conflict(super::Conflict::DashboardOff))
    }

    /// Makes a single-use sign-in link for `person`, asked for `via` (audited). From a
    /// chat, `identity` names who asked as the platform knows them (`telegram:111`):
    /// the session it starts lasts only while they are one of its approvers.
    pub async fn sign_in_link(
        &self,
        person: &str,
        via: Via,
        identity: Option<String>,
    ) -> Result<SignInLink, EngineError> {
        self.sign_in_link_to(person, via, identity, None).await
    }

    /// [`Engine::sign_in_link`] leading to `next`, a dashboard page (a path starting
    /// with `/`), once used.
    pub async fn sign_in_link_to(
        &self,
        person: &str,
        via: Via,
        identity: Option<String>,
        next: Option<String>,
    ) -> Result<SignInLink, EngineError> {
        let ttl = self.dashboard()?.login_link_ttl;
        self.sign_in_link_for(person, via, identity, next, ttl)
            .await
    }

    /// [`Engine::sign_in_link_to`] working for `ttl` (a mailed link, read later than a
    /// chat's).
    pub async fn sign_in_link_for(
        &self,
        person: &str,
        via: Via,
        identity: Option<String>,
        next: Option<String>,
        ttl: std::time::Duration,
    ) -> Result<SignInLink, EngineError> {
        let next = next.filter(|n| n.starts_with('/') && !n.starts_with("//"));
        let d = self.dashboard()?;
        let token = new_token();
        let now = now_ms();
        let expires_at = now + i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX / 2);
        let (hash, person) = (hashed(&token), person.to_string());
        self.blocking(move |s| {
            s.make_link(&NewLink {
                token_hash: &hash,
                person: &person,
                via: &via,
                identity: identity.as_deref(),
                now,
                expires_at,
                next: next.as_deref(),
            })
        })
        .await?;
        Ok(SignInLink {
            url: format!("{}/login/{token}", d.public_url),
            expires_at,
        })
    }

    /// Signs in with the link token `token`: uses the link up and starts a session.
    /// A refused link is audited (coalesced, like every refusal) and changes nothing.
    pub async fn sign_in(
        &self,
        token: &str,
        user_agent: Option<&str>,
    ) -> Result<Result<SignedIn, SignInRefused>, EngineError> {
        let d = self.dashboard()?;
        let outcome = if token_shaped(token) {
            let cookie = new_token();
            let csrf = new_token();
            let now = now_ms();
            let expires_at = now + d.session_max.as_millis() as i64;
            let (link, session_hash) = (hashed(token), hashed(&cookie));
            let agent: Option<String> = user_agent.map(|u| super::cut(u).into_owned());
            let used = self
                .blocking(move |s| {
                    s.use_link(
                        &link,
                        &NewSession {
                            token_hash: &session_hash,
                            csrf: &csrf,
                            user_agent: agent.as_deref(),
                            now,
                            expires_at,
                        },
                    )
                })
                .await?;
            match used {
                LinkUse::SignedIn(session, next) => {
                    return Ok(Ok(SignedIn {
                        session,
                        cookie,
                        next,
                    }))
                }
                LinkUse::Unknown => (SignInRefused::Unknown, None),
                LinkUse::Used { person } => (SignInRefused::Used, Some(person)),
                LinkUse::Expired { person } => (SignInRefused::Expired, Some(person)),
            }
        } else {
            (SignInRefused::Unknown, None)
        };
        let (why, person) = outcome;
        self.record_unauthorised(Refusal {
            approval_id: None,
            actor: person.unwrap_or_else(|| "unknown".into()),
            via: Via::Dashboard,
            transport: None,
            kind: "sign in to the dashboard".into(),
            reason: Some(why.reason().into()),
            detail: json!({}),
        })
        .await?;
        Ok(Err(why))
    }

    /// The live session a browser's cookie token names, if any.
    pub async fn session(&self, cookie: &str) -> Result<Option<Session>, EngineError> {
        let Some(d) = self.config().dashboard.clone() else {
            return Ok(None);
        };
        if !token_shaped(cookie) {
            return Ok(None);
        }
        let hash = hashed(cookie);
        let idle = d.session_idle.as_millis() as i64;
        let found = self
            .blocking(move |s| s.session(&hash, now_ms(), idle))
            .await?;
        match found {
            Some(s) if !self.still_approver(&s) => {
                self.end_for_approvers(vec![s]).await?;
                Ok(None)
            }
            other => Ok(other),
        }
    }

    /// Whether the person of session `s` may still use it: a session from a chat's link
    /// lasts while its identity is one of that platform's approvers in the config in
    /// force (a reload that removes them ends it); one from the control socket, while
    /// its account can reach the socket (the files' modes say who can).
    fn still_approver(&self, s: &Session) -> bool {
        let Some((platform, id)) = s.identity.as_deref().and_then(|i| i.split_once(':')) else {
            return true;
        };
        self.config()
            .chat(&crate::approval::PlatformId::owned(platform))
            .is_some_and(|c| c.approvers.contains(id))
    }

    /// Ends `sessions`, whose people are no longer approvers (audited as gatebot's).
    async fn end_for_approvers(&self, sessions: Vec<Session>) -> Result<(), EngineError> {
        for s in sessions {
            tracing::info!(session = %s.id, person = %s.person,
                "dashboard session ended: its person is no longer an approver");
            let which = SessionEnd::One(s.id);
            self.blocking(move |st| {
                st.end_sessions(
                    &which,
                    "gatebot (no longer an approver)",
                    &Via::System,
                    now_ms(),
                )
            })
            .await?;
        }
        Ok(())
    }

    /// Every live session, newest first.
    pub async fn sessions(&self) -> Result<Vec<Session>, EngineError> {
        let idle = self
            .config()
            .dashboard
            .as_ref()
            .map_or(0, |d| d.session_idle.as_millis() as i64);
        let all = self.blocking(move |s| s.sessions(now_ms(), idle)).await?;
        let (live, gone): (Vec<Session>, Vec<Session>) =
            all.into_iter().partition(|s| self.still_approver(s));
        self.end_for_approvers(gone).await?;
        Ok(live)
    }

    /// Ends the sessions `which` names (signing out, or an owner revoking), audited
    /// with who did it; returns the ids ended. Naming one session that is not live is
    /// an error.
    pub async fn end_sessions(
        &self,
        which: SessionEnd,
        by: &str,
        via: Via,
    ) -> Result<Vec<String>, EngineError> {
        let by = by.to_string();
        let asked = which.clone();
        let ended = self
            .blocking(move |s| s.end_sessions(&which, &by, &via, now_ms()))
            .await?;
        match asked {
            SessionEnd::One(id) if ended.is_empty() => {
                Err(EngineError::not_found(super::What::Session, id))
            }
            _ => Ok(ended),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_hex_and_only_their_shape_is_looked_up() {
        let (a, b) = (new_token(), new_token());
        assert_ne!(a, b);
        assert!(token_shaped(&a) && token_shaped(&b));
        assert!(!token_shaped(&a[1..]));
        assert!(!token_shaped(&a.to_uppercase()));
        assert!(!token_shaped("<script>"));
        assert_eq!(hashed(&a).len(), 64);
        assert_ne!(hashed(&a), a);
    }
}
