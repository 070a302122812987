//! The web dashboard's sign-in: single-use links and server-side sessions
//! (`dashboard_links`, `dashboard_sessions`). Only tokens' SHA-256 are stored; the
//! engine makes the tokens and hashes them. Signing in uses up its link and starts the
//! session in one transaction, with its audit row; so does ending sessions.

use serde_json::json;

use super::audit::audit_tx;
use super::sql::{params, Row, Tx};
use super::{Result, Store};
use crate::approval::{new_short_id, Via};

/// A sign-in link to record.
#[derive(Debug)]
pub struct NewLink<'a> {
    pub token_hash: &'a str,
    pub person: &'a str,
    /// Where it was asked for.
    pub via: &'a Via,
    /// Who asked, as their chat platform knows them (`telegram:111`); `None` from the
    /// control socket.
    pub identity: Option<&'a str>,
    pub now: i64,
    pub expires_at: i64,
    /// The dashboard page it leads to once used (a path); `None`: the front page.
    pub next: Option<&'a str>,
}

/// A session to start when a link is used.
#[derive(Debug)]
pub struct NewSession<'a> {
    pub token_hash: &'a str,
    pub csrf: &'a str,
    pub user_agent: Option<&'a str>,
    pub now: i64,
    /// When it ends however used (`session_max` after now).
    pub expires_at: i64,
}

/// A signed-in browser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// 8 characters, shown by `gatebot dashboard sessions`.
    pub id: String,
    pub person: String,
    /// The token its forms carry.
    pub csrf: String,
    pub user_agent: Option<String>,
    pub created_at: i64,
    pub last_seen_at: i64,
    pub expires_at: i64,
    /// Who signed in, as their chat platform knows them (`telegram:111`), when the link
    /// came from a chat: the session lasts only while that identity is an approver.
    pub identity: Option<String>,
}

/// What using a link came to.
#[derive(Debug)]
pub enum LinkUse {
    /// The link was good: it is used up and this session started; the page it leads
    /// to, if not the front page.
    SignedIn(Session, Option<String>),
    /// No link has this token.
    Unknown,
    /// The link was used before (by a sign-in at `at`).
    Used { person: String },
    /// The link's time ran out.
    Expired { person: String },
}

/// Which sessions to end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionEnd {
    /// The session with this id.
    One(String),
    /// Every session of this person ("sign out everywhere").
    Person(String),
    /// Every session.
    All,
}

const SESSION_COLUMNS: &str =
    "id, person, csrf, user_agent, created_at, last_seen_at, expires_at, identity";

fn session_row(r: &Row<'_>) -> Result<Session> {
    Ok(Session {
        id: r.get(0)?,
        person: r.get(1)?,
        csrf: r.get(2)?,
        user_agent: r.get(3)?,
        created_at: r.get(4)?,
        last_seen_at: r.get(5)?,
        expires_at: r.get(6)?,
        identity: r.get(7)?,
    })
}

/// A session's `last_seen_at` is written at most this often (a page load is no write).
const TOUCH_EVERY_MS: i64 = 60_000;

impl Store {
    /// Records a sign-in link, with its audit row (`dashboard_link`).
    pub fn make_link(&self, l: &NewLink<'_>) -> Result<()> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO dashboard_links (token_hash, person, via, created_at, expires_at, \
                 identity, next) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    l.token_hash,
                    l.person,
                    l.via.as_str(),
                    l.now,
                    l.expires_at,
                    l.identity,
                    l.next
                ],
            )?;
            audit_tx(
                tx,
                l.now,
                None,
                "dashboard_link",
                Some(l.person),
                Some(l.via),
                &json!({"expires_at": l.expires_at}),
            )
        })
    }

    /// Uses up the link whose token hashes to `token_hash` and starts a session, if the
    /// link is good (one transaction, audited as `dashboard_sign_in`); a refused link
    /// changes nothing (the engine audits the refusal, coalesced).
    pub fn use_link(&self, token_hash: &str, s: &NewSession<'_>) -> Result<LinkUse> {
        self.write(|tx| {
            type LinkRow = (String, i64, Option<i64>, Option<String>, Option<String>);
            let link: Option<LinkRow> = tx.query_opt(
                "SELECT person, expires_at, used_at, identity, next FROM dashboard_links \
                 WHERE token_hash = ?1",
                params![token_hash],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )?;
            let (person, expires_at, used_at, identity, next) = match link {
                None => {
                    tx.discard();
                    return Ok(LinkUse::Unknown);
                }
                Some(l) => l,
            };
            if used_at.is_some() {
                tx.discard();
                return Ok(LinkUse::Used { person });
            }
            if s.now >= expires_at {
                tx.discard();
                return Ok(LinkUse::Expired { person });
            }
            tx.execute(
                "UPDATE dashboard_links SET used_at = ?2 WHERE token_hash = ?1",
                params![token_hash, s.now],
            )?;
            let id = start_session(tx, &person, identity.as_deref(), s)?;
            audit_tx(
                tx,
                s.now,
                None,
                "dashboard_sign_in",
                Some(&person),
                Some(&Via::Dashboard),
                &json!({"session": id, "user_agent": s.user_agent}),
            )?;
            let session = tx.query_row(
                &format!("SELECT {SESSION_COLUMNS} FROM dashboard_sessions WHERE id = ?1"),
                params![id],
                session_row,
            )?;
            Ok(LinkUse::SignedIn(session, next))
        })
    }

    /// The live session whose cookie token hashes to `token_hash`: not ended, not past
    /// its end, and used within `idle_ms`. Notes that it was used now (at most once a
    /// minute).
    pub fn session(&self, token_hash: &str, now: i64, idle_ms: i64) -> Result<Option<Session>> {
        self.writer(|w| {
            let found = w.query_opt(
                &format!(
                    "SELECT {SESSION_COLUMNS} FROM dashboard_sessions \
                     WHERE token_hash = ?1 AND ended_at IS NULL AND expires_at > ?2 \
                     AND last_seen_at > ?2 - ?3"
                ),
                params![token_hash, now, idle_ms],
                session_row,
            )?;
            if let Some(s) = &found {
                if now - s.last_seen_at >= TOUCH_EVERY_MS {
                    w.write(|tx| {
                        tx.execute(
                            "UPDATE dashboard_sessions SET last_seen_at = ?2 WHERE id = ?1",
                            params![s.id, now],
                        )
                    })?;
                }
            }
            Ok(found)
        })
    }

    /// Every live session (as [`Store::session`] counts them), newest first.
    pub fn sessions(&self, now: i64, idle_ms: i64) -> Result<Vec<Session>> {
        self.writer(|c| {
            c.query_map(
                &format!(
                    "SELECT {SESSION_COLUMNS} FROM dashboard_sessions \
                     WHERE ended_at IS NULL AND expires_at > ?1 AND last_seen_at > ?1 - ?2 \
                     ORDER BY created_at DESC, id"
                ),
                params![now, idle_ms],
                session_row,
            )
        })
    }

    /// Ends the sessions `which` names that have not ended (signed out, or revoked by
    /// `by`), audited as `dashboard_sign_out`; returns their ids.
    pub fn end_sessions(
        &self,
        which: &SessionEnd,
        by: &str,
        via: &Via,
        now: i64,
    ) -> Result<Vec<String>> {
        let (filter, value) = match which {
            SessionEnd::One(id) => ("id = ?3", Some(id.as_str())),
            SessionEnd::Person(p) => ("person = ?3", Some(p.as_str())),
            SessionEnd::All => ("?3 IS NULL", None),
        };
        self.write(|tx| {
            let ended: Vec<String> = tx.once().query_map(
                &format!(
                    "UPDATE dashboard_sessions SET ended_at = ?1, ended_by = ?2 \
                     WHERE ended_at IS NULL AND {filter} RETURNING id"
                ),
                params![now, by, value],
                |r| r.get(0),
            )?;
            if !ended.is_empty() {
                audit_tx(
                    tx,
                    now,
                    None,
                    "dashboard_sign_out",
                    Some(by),
                    Some(via),
                    &json!({"sessions": ended}),
                )?;
            }
            Ok(ended)
        })
    }

    /// Forgets links and sessions that ended more than `keep_ms` ago (the housekeeping
    /// pass); returns how many rows went.
    pub fn forget_sessions(&self, now: i64, keep_ms: i64) -> Result<usize> {
        let before = now - keep_ms;
        self.writer(|w| {
            let links = w.write(|tx| {
                tx.execute(
                    "DELETE FROM dashboard_links WHERE expires_at < ?1 OR used_at < ?1",
                    params![before],
                )
            })?;
            let sessions = w.write(|tx| {
                tx.execute(
                    "DELETE FROM dashboard_sessions WHERE ended_at < ?1 OR expires_at < ?1",
                    params![before],
                )
            })?;
            Ok(links + sessions)
        })
    }
}

/// Inserts a session for `person` with an id no session has; returns the id.
fn start_session(
    tx: &Tx<'_>,
    person: &str,
    identity: Option<&str>,
    s: &NewSession<'_>,
) -> Result<String> {
    loop {
        let id = new_short_id();
        let inserted = tx.execute(
            "INSERT INTO dashboard_sessions \
             (id, token_hash, csrf, person, user_agent, created_at, last_seen_at, expires_at, \
             identity) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7, ?8) ON CONFLICT DO NOTHING",
            params![
                id,
                s.token_hash,
                s.csrf,
                person,
                s.user_agent,
                s.now,
                s.expires_at,
                identity
            ],
        )?;
        if inserted == 1 {
            return Ok(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> Store {
        Store::open_in_memory().unwrap()
    }

    fn link(s: &Store, hash: &str, now: i64) {
        s.make_link(&NewLink {
            token_hash: hash,
            person: "alice",
            via: &Via::Cli,
            identity: None,
            now,
            expires_at: now + 600_000,
            next: None,
        })
        .unwrap();
    }

    fn new_session(hash: &str, now: i64) -> NewSession<'_> {
        NewSession {
            token_hash: hash,
            csrf: "c",
            user_agent: Some("test"),
            now,
            expires_at: now + 3_600_000,
        }
    }

    #[test]
    fn a_link_signs_in_once_before_it_expires_and_never_after() {
        let s = store();
        link(&s, "L1", 1_000);
        let LinkUse::SignedIn(session, _) = s.use_link("L1", &new_session("S1", 2_000)).unwrap()
        else {
            panic!("first use signs in")
        };
        assert_eq!(session.person, "alice");
        assert!(matches!(
            s.use_link("L1", &new_session("S2", 3_000)).unwrap(),
            LinkUse::Used { .. }
        ));
        link(&s, "L2", 1_000);
        assert!(matches!(
            s.use_link("L2", &new_session("S3", 601_000)).unwrap(),
            LinkUse::Expired { .. }
        ));
        assert!(matches!(
            s.use_link("nope", &new_session("S4", 2_000)).unwrap(),
            LinkUse::Unknown
        ));
        // Only the good use started a session.
        assert_eq!(s.sessions(3_000, 3_600_000).unwrap().len(), 1);
    }

    #[test]
    fn a_session_lapses_when_idle_past_its_end_or_ended() {
        let s = store();
        link(&s, "L1", 0);
        s.use_link("L1", &new_session("S1", 0)).unwrap();
        assert!(s.session("S1", 59_000, 60_000).unwrap().is_some());
        // Used at 59 s is not written (under a minute); idle from 0 counts.
        assert!(s.session("S1", 61_000, 60_000).unwrap().is_none());
        assert!(s.session("S1", 61_000, 120_000).unwrap().is_some());
        // Used at 61 s was written: idle counts from there.
        assert!(s.session("S1", 170_000, 120_000).unwrap().is_some());
        assert!(
            s.session("S1", 3_600_000, 10_000_000).unwrap().is_none(),
            "past its end"
        );
        link(&s, "L2", 0);
        let LinkUse::SignedIn(two, _) = s.use_link("L2", &new_session("S2", 0)).unwrap() else {
            panic!()
        };
        let ended = s
            .end_sessions(
                &SessionEnd::Person("alice".into()),
                "alice",
                &Via::Dashboard,
                1,
            )
            .unwrap();
        assert!(ended.contains(&two.id), "{ended:?}");
        assert!(s.session("S2", 2, 60_000).unwrap().is_none());
        let rows = s.audit_rows(None, None).unwrap();
        let events: Vec<&str> = rows.iter().map(|r| r.event.as_str()).collect();
        assert!(events.contains(&"dashboard_sign_in") && events.contains(&"dashboard_sign_out"));
        assert!(s.verify_audit().unwrap().problems.is_empty());
    }
}
