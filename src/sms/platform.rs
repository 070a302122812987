//! SMS's outbound side: a card is one text ([`super::render`]) sent through the
//! gateway, to a number that has not texted STOP. A text cannot be edited: a card's
//! later states (its outcome) are not sent again; whoever decides by text gets the
//! outcome as the answer to their text, and the dashboard shows it to everyone.

use std::sync::Arc;
use std::time::Duration;

use super::provider::Gateway;
use super::{render, PLATFORM};
use crate::approval::PlatformId;
use crate::chat::card::Card;
use crate::chat::platform::{Platform, SendError};
use crate::engine::Engine;
use crate::subject::Thread;

pub struct Sms<G> {
    pub gateway: Arc<G>,
    /// For the dashboard's URL, as the config in force says.
    pub engine: Arc<Engine>,
}

impl<G: Gateway> Platform for Sms<G> {
    fn id(&self) -> PlatformId {
        PLATFORM
    }

    /// The gateway paces its sending number itself; this keeps one recipient's
    /// texts apart too.
    fn pace(&self, _chat: &str) -> Duration {
        super::twilio::SEND_INTERVAL
    }

    /// Texts have no threads: `thread` is ignored.
    async fn post(
        &self,
        chat: &str,
        card: &Card,
        _thread: Option<&Thread>,
    ) -> Result<String, SendError> {
        let contact = self.engine.chat().contact(&PLATFORM, chat).await;
        if contact
            .map_err(|e| SendError::Transient(e.to_string()))?
            .stopped
        {
            return Err(SendError::Permanent(
                "this number texted STOP; nothing is sent to it until it texts START".into(),
            ));
        }
        let dashboard = self
            .engine
            .config()
            .dashboard
            .as_ref()
            .map(|d| d.public_url.clone());
        let body = render::render(card, dashboard.as_deref());
        self.gateway.send(chat, &body).await
    }

    /// A text cannot change once sent: nothing is sent (see the module docs).
    async fn edit(&self, _chat: &str, _message: &str, _card: &Card) -> Result<(), SendError> {
        Ok(())
    }
}
