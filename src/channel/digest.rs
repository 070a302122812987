//! Digests: one message for a burst of requests, and a way to go through them.
//!
//! When more requests wait for a prompt in one chat than the channel's `digest_after`,
//! delivery posts one digest instead of a prompt each (a runaway agent must not bury
//! the owner in messages or run into the platform's rate limits). A digest message
//! has three views, kept in the `digests` table:
//! 1. **summary**: how many requests, by agent and tool with their highest risk, and
//!    a "Review one by one" button;
//! 2. **review**: one pending request in full (the same content as its own prompt)
//!    with its decision buttons, plus "Next" and "Summary". When the request shown is
//!    settled (here or anywhere else), the view moves on to the next pending one;
//! 3. **closed**: once nothing in it is pending, the final tally, without buttons.
//!
//! Buttons only change the database; the channel's delivery draws the message, so a
//! message has one writer and follows its pacing.

use serde_json::json;

use crate::approval::{Approval, Channel};
use crate::channel::handle::{not_allowed, Actor, Reply};
use crate::engine::{Engine, EngineError};
use crate::store::{DigestState, DigestSummary, Store, StoreError};

/// What a digest message shows.
#[derive(Debug, Clone, PartialEq)]
pub enum DigestView {
    Summary(DigestSummary),
    /// One pending request; `position` is its 1-based place among the digest's requests.
    Review {
        summary: DigestSummary,
        approval: Box<Approval>,
        position: usize,
    },
    Closed(DigestSummary),
}

impl DigestView {
    /// The view for the digest `message`'s stored state, moving on from a request
    /// under review that is no longer pending, and closing once nothing is pending.
    /// Returns the view and the state to store if it changed.
    pub fn load(
        store: &Store,
        channel: Channel,
        chat: &str,
        message: &str,
    ) -> Result<Option<(DigestView, Option<DigestState>)>, StoreError> {
        let Some(state) = store.digest(channel, chat, message)? else {
            return Ok(None);
        };
        let summary = store.digest_summary(channel, chat, message)?;
        if summary.pending == 0 {
            let new = DigestState {
                showing: None,
                closed: true,
            };
            let changed = (new != state).then_some(new);
            return Ok(Some((DigestView::Closed(summary), changed)));
        }
        let Some(showing) = &state.showing else {
            return Ok(Some((DigestView::Summary(summary), None)));
        };
        // Show the same request while it is pending; otherwise the next pending one.
        let current = store.get(showing)?;
        let (approval, position) = match current {
            Some(a) if a.status == crate::approval::Status::Pending => {
                let position = store.digest_position(channel, chat, message, &a.id)?;
                (a, position)
            }
            _ => match store.digest_next(channel, chat, message, Some(showing))? {
                Some(next) => next,
                None => return Ok(Some((DigestView::Summary(summary), None))),
            },
        };
        let changed =
            (state.showing.as_deref() != Some(approval.id.as_str())).then(|| DigestState {
                showing: Some(approval.id.clone()),
                closed: false,
            });
        Ok(Some((
            DigestView::Review {
                summary,
                approval: Box::new(approval),
                position,
            },
            changed,
        )))
    }

    #[must_use]
    pub fn summary(&self) -> &DigestSummary {
        match self {
            DigestView::Summary(s) | DigestView::Closed(s) => s,
            DigestView::Review { summary, .. } => summary,
        }
    }
}

/// A digest's title line: "12 of 137 requests in this digest need a decision".
#[must_use]
pub fn title(s: &DigestSummary) -> String {
    if s.pending == 0 {
        format!("Digest of {} requests: all settled", s.total)
    } else {
        format!(
            "{} of {} requests in this digest need a decision",
            s.pending, s.total
        )
    }
}

/// Most agent/tool lines a summary lists.
pub const MAX_GROUPS: usize = 10;

/// One line per agent and tool (raw text; the channel escapes it), at most
/// [`MAX_GROUPS`], then how many kinds more.
#[must_use]
pub fn group_lines(s: &DigestSummary) -> Vec<String> {
    let mut lines: Vec<String> = s
        .groups
        .iter()
        .take(MAX_GROUPS)
        .map(|g| {
            let (agent, _) = crate::channel::prompt::truncate(&g.agent, 40);
            let (tool, _) = crate::channel::prompt::truncate(&g.tool, 60);
            format!(
                "{agent} · {tool} × {} ({} pending, up to {} risk)",
                g.count,
                g.pending,
                g.max_risk.as_str()
            )
        })
        .collect();
    if s.groups.len() > MAX_GROUPS {
        lines.push(format!(
            "… and {} more agent/tool pairs",
            s.groups.len() - MAX_GROUPS
        ));
    }
    lines
}

/// The tally of settled outcomes: "3 approved, 1 denied, 2 expired".
#[must_use]
pub fn tally(s: &DigestSummary) -> String {
    let parts: Vec<String> = [
        (s.approved, "approved"),
        (s.rejected, "denied"),
        (s.expired, "expired"),
        (s.cancelled, "cancelled"),
        (s.pending, "pending"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, w)| format!("{n} {w}"))
    .collect();
    parts.join(", ")
}

/// Where an approver wants a digest to go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Nav {
    /// Show the first pending request.
    Review,
    /// Show the pending request after this one.
    Next(String),
    /// Back to the summary.
    Summary,
}

/// Encodes a digest button: `gb1:v:r`, `gb1:v:s`, `gb1:v:n:<request id>` (≤ 64 bytes).
#[must_use]
pub fn encode_nav(nav: &Nav) -> String {
    match nav {
        Nav::Review => "gb1:v:r".into(),
        Nav::Summary => "gb1:v:s".into(),
        Nav::Next(id) => format!("gb1:v:n:{id}"),
    }
}

/// Decodes a digest button; `None` for anything else (try the decision buttons).
#[must_use]
pub fn decode_nav(data: &str) -> Option<Nav> {
    match data.strip_prefix("gb1:v:")? {
        "r" => Some(Nav::Review),
        "s" => Some(Nav::Summary),
        rest => {
            let id = rest.strip_prefix("n:")?;
            (id.len() == 26 && id.bytes().all(|b| b.is_ascii_alphanumeric()))
                .then(|| Nav::Next(id.to_string()))
        }
    }
}

/// An approver pressed a digest button on `message` in `chat`: store where the digest
/// goes and ask delivery to draw it. Returns what to tell the presser.
pub async fn navigate(
    engine: &Engine,
    via: Channel,
    actor: &Actor,
    chat: &str,
    message: &str,
    nav: Nav,
) -> Reply {
    if !actor.approver {
        let detail = json!({"user_id": actor.id, "name": actor.name, "attempted": "review digest"});
        if let Err(e) = engine
            .record_unauthorised(None, actor.label(), via, detail)
            .await
        {
            tracing::error!(error = %e, "cannot audit an unauthorised attempt");
        }
        return Reply::NotAllowed(not_allowed(actor));
    }
    let (c, m) = (chat.to_string(), message.to_string());
    let result = engine
        .blocking(move |s| {
            let Some(state) = s.digest(via, &c, &m)? else {
                return Ok(None);
            };
            if state.closed {
                return Ok(Some("Every request in this digest is settled.".to_string()));
            }
            let showing = match &nav {
                Nav::Summary => None,
                Nav::Review => s.digest_next(via, &c, &m, None)?.map(|(a, _)| a.id),
                Nav::Next(after) => s.digest_next(via, &c, &m, Some(after))?.map(|(a, _)| a.id),
            };
            s.set_digest(
                via,
                &c,
                &m,
                &DigestState {
                    showing,
                    closed: false,
                },
            )?;
            Ok(Some(String::new()))
        })
        .await;
    match result {
        Ok(Some(text)) => {
            engine.redraw(via, chat, message);
            Reply::Text(text)
        }
        Ok(None) => Reply::Text("This message is not a digest gatebot knows.".into()),
        Err(e @ EngineError::Store(_)) | Err(e) => {
            tracing::error!(error = %e, "cannot move the digest");
            Reply::Text("Something went wrong; see the gatebot log.".into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nav_buttons_round_trip_within_64_bytes() {
        let id = "01JD3X4Y5Z6A7B8C9D0E1F2G3H";
        for nav in [Nav::Review, Nav::Summary, Nav::Next(id.into())] {
            let data = encode_nav(&nav);
            assert!(data.len() <= crate::channel::command::MAX_BUTTON_DATA);
            assert_eq!(decode_nav(&data), Some(nav));
        }
        for forged in [
            "gb1:v:x",
            "gb1:v:n:short",
            "gb1:a:01JD3X4Y5Z6A7B8C9D0E1F2G3H",
            "gb1:v:n:01JD3X4Y5Z6A7B8C9D0E1F2G3H' --",
        ] {
            assert_eq!(decode_nav(forged), None, "{forged}");
        }
    }

    #[test]
    fn tallies_name_only_what_happened() {
        let s = DigestSummary {
            total: 6,
            approved: 3,
            rejected: 1,
            expired: 2,
            ..DigestSummary::default()
        };
        assert_eq!(tally(&s), "3 approved, 1 denied, 2 expired");
        assert_eq!(title(&s), "Digest of 6 requests: all settled");
    }
}
