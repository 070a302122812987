//! Chat: one conversation mechanism for every chat platform.
//!
//! ```text
//!  engine events ─▶ delivery ─(Card)─▶ Platform::post / edit ─▶ the chat
//!                      ▲                                          │ press, command, reply
//!                      │ redraw                                   ▼
//!  engine ◀── conversation kinds ◀── inbound ◀── the platform adapter translates its update
//! ```
//!
//! - [`card`]: the platform-neutral message model; [`text`]: the one escape, measure
//!   and fit every renderer uses.
//! - [`conversation`]: the kinds of conversation (approval prompt, digest, deny-reason
//!   question, `/pending`, `/help`, tasks): each says what card it shows, which actions
//!   it offers, who may take them, and what each does through the engine.
//! - [`inbound`]: a platform-neutral press, command or text (with the message it
//!   replies to) from an [`inbound::Actor`] becomes an [`inbound::Answer`]: the approver
//!   check, the routing and the auditing of refusals happen there, once.
//! - [`delivery`]: makes every chat match the database, durably: cards posted (one per
//!   subject, or a digest for a burst) where their subject belongs and in its thread,
//!   edited when their subject changes, redrawn on request.
//! - [`platform`]: what a platform adapter implements ([`platform::Platform`]), the
//!   error type its calls return, and the registry of platforms the daemon runs.
//! - [`memory`]: an in-memory platform, for tests: the whole flow without a network.
//!
//! A platform adapter (`telegram`, `slack`) only translates: its updates into
//! [`inbound::Inbound`], [`inbound::Answer`]s and [`card::Card`]s into its API calls.

pub mod card;
pub mod command;
pub mod conversation;
pub mod delivery;
pub mod exchange;
pub mod failure;
pub mod inbound;
pub mod memory;
pub mod platform;
pub mod text;

use std::sync::Arc;

use crate::approval::PlatformId;
use crate::engine::Engine;

/// What a conversation needs to act: the engine, the platform it happens on, and that
/// platform's delivery (to draw a message again after a change of view).
#[derive(Clone)]
pub struct Context {
    pub engine: Arc<Engine>,
    pub platform: PlatformId,
    pub delivery: delivery::Handle,
    /// The bot's username where commands may name it (Telegram's `/approve@bot`).
    pub bot_username: Option<String>,
    /// Reads the platform's messages back, for replies to messages gatebot has no
    /// record of ([`platform::Platform::read`]).
    pub reader: Arc<dyn platform::ReadBack>,
}

impl Context {
    /// The person with platform user id `id`: an approver if the platform's table in
    /// the config in force lists them (re-read each time, so a reload applies at once).
    #[must_use]
    pub fn actor(&self, id: &str, name: &str) -> exchange::Actor {
        let approver = self
            .engine
            .config()
            .chat(&self.platform)
            .is_some_and(|c| c.approvers.contains(id));
        exchange::Actor {
            id: id.to_string(),
            name: name.to_string(),
            approver,
        }
    }

    /// The chats cards go to, per the config in force.
    #[must_use]
    pub fn destinations(&self) -> Vec<String> {
        self.engine
            .config()
            .chat(&self.platform)
            .map(|c| c.destinations.clone())
            .unwrap_or_default()
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("platform", &self.platform)
            .finish_non_exhaustive()
    }
}
