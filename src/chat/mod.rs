//! Chat: one conversation mechanism for every chat platform.
//!
//! ```text
//!  engine events ─▶ delivery ─(Card)─▶ Platform::post / edit ─▶ the chat
//!                      ▲                                          │ press, command, reply
//!                      │ redraw                                   ▼
//!  engine ◀── conversation kinds ◀── inbound ◀── the platform adapter translates its update
//! ```
//!
//! - [`card`]: the platform-neutral message model, and the [`card::Tag`] that names the
//!   subject a card shows (written in one form, read back by one parser); [`text`]: the
//!   one escape, measure and fit every renderer uses; [`command`]: reading `/name args`.
//! - [`conversation`]: the kinds of conversation (the approval prompt with its "why
//!   deny?" question, batches of an agent's requests, the digest, `/pending`, `/help`,
//!   check-ins, tasks, proposals, agents, grants), each a type implementing [`conversation::Kind`], listed once in
//!   its registry: what cards it draws, which actions it offers, who may take them, and
//!   what each does through the engine.
//! - [`exchange`]: what the inbound layer and the kinds share: who acts
//!   ([`exchange::Actor`]), where, and what gatebot answers ([`exchange::Answer`]).
//! - [`inbound`]: a platform-neutral press, command or text (with the message it
//!   replies to) becomes an answer: the approver check, the routing and the auditing of
//!   refusals happen there, once.
//! - [`failure`]: an engine error in an owner's words, for every kind.
//! - [`delivery`]: makes every chat match the database, durably: cards posted (one per
//!   subject, or a digest for a burst) where their subject belongs and in its thread,
//!   edited when their subject changes, redrawn on request.
//! - [`platform`]: what a platform adapter implements ([`platform::Platform`]) and the
//!   error type its calls return; [`run`] runs one (its delivery and its inbound loop).
//!   The platforms the daemon runs are listed in [`crate::platforms`]: chat names none.
//! - [`memory`]: an in-memory platform, for tests: the whole flow without a network.
//!
//! A platform adapter (`telegram`, `slack`) only translates: its updates into
//! [`inbound::Inbound`], [`exchange::Answer`]s and [`card::Card`]s into its API calls.

pub mod card;
pub mod command;
pub mod conversation;
pub mod delivery;
pub mod exchange;
pub mod failure;
#[cfg(test)]
pub mod golden;
pub mod inbound;
pub mod memory;
pub mod platform;
pub mod text;

use std::future::Future;
use std::sync::Arc;

use crate::approval::PlatformId;
use crate::engine::Engine;
use platform::Platform;
use tokio_util::sync::CancellationToken;

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
            person: self.person(id),
        }
    }

    /// The person `[people]` names for user `id` on this platform, if any (re-read each
    /// time, like the approvers).
    #[must_use]
    pub fn person(&self, id: &str) -> Option<String> {
        self.engine
            .config()
            .people
            .named(self.platform.as_str(), id)
            .map(str::to_string)
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

/// Runs a platform until `stop` fires: its delivery, and `inbound` (the adapter's
/// receiving loop), given the context conversations need. `bot_username` is the
/// platform's name for the bot, where commands may be addressed to it (`/cmd@bot`).
///
/// It runs on every node. Delivery delivers while this node leads
/// ([`delivery`]); `inbound` runs throughout, so a webhook or connection on any node is
/// heard: an adapter whose updates only one reader may take (Telegram's poller)
/// reads them within [`Engine::while_leading`].
pub async fn run<P, F, Fut>(
    engine: Arc<Engine>,
    platform: Arc<P>,
    bot_username: Option<String>,
    stop: CancellationToken,
    inbound: F,
) where
    P: Platform,
    F: FnOnce(Context) -> Fut,
    Fut: Future<Output = ()>,
{
    let (handle, delivery) = delivery::start(engine.clone(), platform.clone(), stop);
    let cx = Context {
        engine,
        platform: platform.id(),
        delivery: handle,
        bot_username,
        reader: platform,
    };
    tokio::join!(delivery, inbound(cx));
}
