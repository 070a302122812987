//! E-mail: prompts mailed to the people asked, with a link into the web dashboard
//! (docs/email.md). Outbound only: a mail carries what the card shows and a single-use
//! sign-in link to the item's page, where the person presses Approve or Deny (and gives
//! a code where a rule needs one). **A link never decides by itself**: mail scanners
//! fetch links, and the link's page signs in only when its button is pressed.
//!
//! - [`platform`]: the [`crate::chat::platform::Platform`] delivery drives: a mail per
//!   card (a digest per address in a burst, as in chats), threaded by request; cards
//!   cannot be edited, so a change is mailed only as the outcome, when asked
//!   (`notify_outcomes`).
//! - [`render`]: a card as a mail: its subject, a plain-text part and an HTML part, agent
//!   text escaped in both.
//!
//! The platform's table is `config::email`; its line in `crate::platforms` starts it.

pub mod platform;
pub mod render;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tracing::{error, info};

use crate::config::email::EmailConfig;
use crate::engine::Engine;

/// Runs e-mail delivery until `stop`. It has no inbound side: people answer on the
/// dashboard the mails link to.
pub async fn run(engine: Arc<Engine>, config: EmailConfig, stop: CancellationToken) {
    let platform = match platform::Email::new(engine.clone(), &config) {
        Ok(p) => Arc::new(p),
        Err(e) => {
            error!(error = %e, "email: cannot set up the SMTP connection; e-mail is off");
            return;
        }
    };
    info!(
        server = %config.smtp_host, port = config.smtp_port,
        addresses = config.chat.destinations.len(), "email: starting"
    );
    let until = stop.clone();
    crate::chat::run(engine, platform, None, stop, |_cx| async move {
        until.cancelled().await;
    })
    .await;
    info!("email: stopped");
}
