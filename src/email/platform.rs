//! E-mail as a platform delivery drives: a "chat" is an address, a "message" is a mail
//! (its id is the mail's `Message-ID`). A card is mailed with a single-use sign-in link
//! to its item on the dashboard; replies in a thread (a task's request under the task's
//! mail) carry `In-Reply-To` and `References`, so a mail client keeps them together.
//! A mail cannot be edited: a change is mailed only as the outcome of a request, as a
//! reply to its first mail, and only with `notify_outcomes`.

use std::sync::Arc;
use std::time::Duration;

use lettre::message::{header::ContentType, Mailbox, MultiPart, SinglePart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use super::render::{render, Link};
use crate::approval::{PlatformId, Via};
use crate::chat::card::{Card, Tag};
use crate::chat::platform::{Platform, SendError};
use crate::config::email::{EmailConfig, Security};
use crate::engine::Engine;
use crate::subject::{SubjectKind, Thread};

/// The platform's key.
pub const PLATFORM: PlatformId = PlatformId::new("email");
/// How long a mail's sign-in link works: mail is read later than a chat.
pub const LINK_TTL: Duration = Duration::from_secs(24 * 3600);
/// How long one SMTP exchange may take.
const SMTP_TIMEOUT: Duration = Duration::from_secs(30);

/// The e-mail platform.
pub struct Email {
    engine: Arc<Engine>,
    mailer: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    notify_outcomes: bool,
}

impl Email {
    /// The SMTP transport for `config` (connections are made per mail).
    pub fn new(engine: Arc<Engine>, config: &EmailConfig) -> Result<Email, String> {
        let builder = match config.security {
            Security::Starttls => {
                AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&config.smtp_host)
                    .map_err(|e| e.to_string())?
            }
            Security::Tls => AsyncSmtpTransport::<Tokio1Executor>::relay(&config.smtp_host)
                .map_err(|e| e.to_string())?,
            Security::None => {
                AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(config.smtp_host.clone())
            }
        };
        let mut builder = builder.port(config.smtp_port).timeout(Some(SMTP_TIMEOUT));
        if let (Some(user), Some(password)) = (&config.username, &config.password) {
            builder = builder.credentials(Credentials::new(
                user.clone(),
                password.expose().to_string(),
            ));
        }
        let from: Mailbox = config
            .from
            .parse()
            .map_err(|e| format!("the From address: {e}"))?;
        Ok(Email {
            engine,
            mailer: builder.build(),
            from,
            notify_outcomes: config.notify_outcomes,
        })
    }

    /// The dashboard link for `card` mailed to `address`: to answer it (`answer`), a
    /// single-use sign-in link to its item's page for a person of `[people]`; else the
    /// page itself; none when the dashboard is off.
    async fn link(&self, address: &str, card: &Card, answer: bool) -> Option<Link> {
        let dashboard = self.engine.dashboard().ok()?;
        let next = match subject_tag(card) {
            Some((SubjectKind::Approval, short)) => format!("/requests/{short}"),
            Some((SubjectKind::Task, _)) => "/tasks".to_string(),
            _ => "/".to_string(),
        };
        let config = self.engine.config();
        let person = config.people.named("email", address).filter(|_| answer);
        let Some(person) = person else {
            return Some(Link {
                url: format!("{}{next}", dashboard.public_url),
                expires: None,
            });
        };
        match self
            .engine
            .sign_in_link_for(person, Via::Chat(PLATFORM), None, Some(next), LINK_TTL)
            .await
        {
            Ok(link) => Some(Link {
                url: link.url,
                expires: Some(crate::words::relative(
                    link.expires_at,
                    crate::time::now_ms(),
                )),
            }),
            Err(e) => {
                tracing::warn!(error = %e, "email: cannot make a sign-in link; the mail goes without");
                None
            }
        }
    }

    /// Sends `card` to `to`, as a reply to `thread` if given; its Message-ID.
    async fn send(&self, to: &str, card: &Card, thread: Option<&str>) -> Result<String, SendError> {
        let mailbox: Mailbox = to
            .parse()
            .map_err(|e| SendError::Permanent(format!("the address {to}: {e}")))?;
        // Only a card that waits for an answer carries a sign-in link.
        let link = self.link(to, card, !card.buttons.is_empty()).await;
        let mail = render(card, link.as_ref());
        let domain = self.from.email.domain().to_string();
        let id = format!("<{}@{domain}>", ulid::Ulid::new());
        let mut builder = Message::builder()
            .from(self.from.clone())
            .to(mailbox)
            .subject(mail.subject)
            .message_id(Some(id.clone()));
        if let Some(parent) = thread {
            builder = builder
                .in_reply_to(parent.to_string())
                .references(parent.to_string());
        }
        let message = builder
            .multipart(
                MultiPart::alternative()
                    .singlepart(
                        SinglePart::builder()
                            .header(ContentType::TEXT_PLAIN)
                            .body(mail.text),
                    )
                    .singlepart(
                        SinglePart::builder()
                            .header(ContentType::TEXT_HTML)
                            .body(mail.html),
                    ),
            )
            .map_err(|e| SendError::Permanent(format!("cannot build the mail: {e}")))?;
        match self.mailer.send(message).await {
            Ok(_) => Ok(id),
            // A 4xx, a refused or dropped connection before DATA: nothing was sent.
            Err(e) if e.is_transient() => Err(SendError::Transient(e.to_string())),
            Err(e) if e.is_permanent() => Err(SendError::Permanent(e.to_string())),
            // A timeout or a broken connection: the mail may have gone.
            Err(e) => Err(SendError::Unknown(e.to_string())),
        }
    }
}

/// The subject a card shows (its kind and short id), from its heading's tag.
fn subject_tag(card: &Card) -> Option<(SubjectKind, String)> {
    card.blocks.iter().find_map(|b| match b {
        crate::chat::card::Block::Heading {
            tag: Some(Tag::Subject { kind, short }),
            ..
        } => Some((*kind, short.clone())),
        _ => None,
    })
}

impl Platform for Email {
    fn id(&self) -> PlatformId {
        PLATFORM
    }

    /// One mail a second to an address: a burst becomes a digest, not a flood.
    fn pace(&self, _chat: &str) -> Duration {
        Duration::from_secs(1)
    }

    async fn post(
        &self,
        chat: &str,
        card: &Card,
        thread: Option<&Thread>,
    ) -> Result<String, SendError> {
        self.send(chat, card, thread.map(|t| t.reply_to.as_str()))
            .await
    }

    /// A mail cannot change: a settled card (no buttons left) is mailed as a reply to
    /// the first when `notify_outcomes` asks for it; any other change is not mailed.
    async fn edit(&self, chat: &str, message: &str, card: &Card) -> Result<(), SendError> {
        if !self.notify_outcomes || !card.buttons.is_empty() || subject_tag(card).is_none() {
            return Ok(());
        }
        self.send(chat, card, Some(message)).await.map(|_| ())
    }
}
