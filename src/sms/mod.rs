//! The SMS platform adapter: compact cards by text message, answered by text.
//!
//! 1. [`run`] builds the gateway ([`twilio::Twilio`], behind the [`provider::Gateway`]
//!    trait), and runs delivery ([`crate::chat::delivery`] with [`platform::Sms`]: one
//!    text per card, drawn by [`render`] within two segments where it can be) and, when
//!    `listen` is set, the webhook listener ([`webhook`]).
//! 2. Every webhook's signature is checked before it is read; forged ones are refused
//!    (403) and audited.
//! 3. An inbound text ([`Texts::text`]) is, in order: a repeat of a message already
//!    handled (ignored: the gateway retries); a carrier keyword (STOP and its synonyms,
//!    START, HELP: answered for anyone, STOP kept in the database until START); from a number
//!    that is no approver (refused and audited); `/command …`; `ID words` (the words as
//!    a reply to that subject's card: `ID yes`, `ID no [reason]`); or words without an
//!    id, which answer the sender's only open request or ask which.
//! 4. The answer goes back in the webhook's own answer.
//!
//! Approvers are phone numbers (`[sms] approvers`, re-read on every text so a reload
//! applies). The numbers cards go to are the chats; a text's sender is its chat.

pub mod platform;
pub mod provider;
pub mod render;
pub mod twilio;
pub mod webhook;

use std::path::Path;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tracing::{debug, error, info, warn};

pub use crate::config::sms::SmsConfig;

use crate::approval::PlatformId;
use crate::chat::conversation;
use crate::chat::exchange::{Actor, Answer};
use crate::chat::inbound::{self, Inbound, Replied, Seen};
use crate::chat::Context;
use crate::engine::Engine;
use crate::settings::PlatformSettings;
use provider::{Gateway, Params};

/// The platform's key.
pub const PLATFORM: PlatformId = PlatformId::new(<SmsConfig as PlatformSettings>::KEY);

/// What carriers require every number to answer, in any case.
const STOP_WORDS: &[&str] = &[
    "STOP",
    "STOPALL",
    "UNSUBSCRIBE",
    "CANCEL",
    "END",
    "QUIT",
    "OPTOUT",
    "REVOKE",
];
const START_WORDS: &[&str] = &["START", "UNSTOP", "OPTIN"];
const HELP_WORDS: &[&str] = &["HELP", "INFO"];

/// The answer to STOP.
pub const STOPPED: &str =
    "gatebot: you will get no more texts from this number. Text START to get them again.";
/// The answer to START.
pub const STARTED: &str =
    "gatebot: you will get approval requests by text again. Text STOP to end them, HELP for help.";
/// The answer to HELP.
pub const HELP: &str = "gatebot sends approval requests from AI agents that its owner set up. \
     Reply \"ID yes\" or \"ID no reason\" (the id is in the request), or /approve ID, /deny ID reason. \
     Text STOP to end these texts.";

/// Runs the adapter until `stop` fires. Never fails: problems reaching the gateway
/// are logged (without the token) and retried by delivery.
pub async fn run(engine: Arc<Engine>, config: SmsConfig, stop: CancellationToken) {
    let gateway = match twilio::Twilio::new(&config, engine.metrics.clone()) {
        Ok(g) => Arc::new(g),
        Err(e) => {
            error!(error = %e, "sms: cannot build the HTTP client; SMS is off");
            return;
        }
    };
    import_stops(&engine, &engine.config().store.path).await;
    let platform = Arc::new(platform::Sms {
        gateway: gateway.clone(),
        engine: engine.clone(),
    });
    info!(numbers = config.chat.destinations.len(), "sms: starting");
    crate::chat::run(engine, platform, None, stop.clone(), |cx| async move {
        let Some(listen) = config.listen.clone() else {
            info!("sms: no listen address, so texts are sent but replies are not read");
            stop.cancelled().await;
            return;
        };
        let texts = Arc::new(Texts::new(cx, gateway));
        webhook::run(texts, &listen, stop).await;
    })
    .await;
    info!("sms: stopped");
}

/// The inbound side: texts and delivery statuses, once their signature is checked.
pub struct Texts<G> {
    cx: Context,
    pub gateway: Arc<G>,
}

impl<G: Gateway> Texts<G> {
    #[must_use]
    pub fn new(cx: Context, gateway: Arc<G>) -> Self {
        Texts { cx, gateway }
    }

    /// `true` the first time message `id` from `from` is seen (the database remembers
    /// a week of ids, across restarts). When the database cannot tell, the text is
    /// handled: what it asks for is settled by the engine once either way.
    async fn first_time(&self, id: &str, from: &str) -> bool {
        match self.cx.engine.chat().heard(&PLATFORM, from, id).await {
            Ok(first) => first,
            Err(e) => {
                warn!(message = id, error = %e, "sms: cannot tell whether this text was seen before");
                true
            }
        }
    }

    /// Records STOP (`true`) or START from `from`.
    async fn set_stopped(&self, from: &str, stop: bool) {
        if let Err(e) = self
            .cx
            .engine
            .chat()
            .set_stopped(&PLATFORM, from, stop)
            .await
        {
            error!(from, error = %e, "sms: cannot record STOP or START; it holds once recorded");
        }
    }

    /// A webhook without a good signature: audited, naming the number it claims.
    pub async fn forged(&self, params: &Params) {
        let claimed = params
            .iter()
            .find(|(k, _)| k == "From")
            .map_or("unknown", |(_, v)| v.as_str());
        warn!(
            claimed,
            "sms: webhook with a missing or bad signature refused"
        );
        let actor = Actor {
            id: claimed.to_string(),
            name: "unsigned webhook".into(),
            approver: false,
            person: None,
        };
        let _ = inbound::refuse(&self.cx, &actor, None, "webhook with a bad signature").await;
    }

    /// A delivery status: a failed text is logged and counted.
    pub fn status(&self, id: &str, to: &str, status: &str, error: Option<&str>) {
        if matches!(status, "failed" | "undelivered") {
            warn!(
                message = id,
                to, status, error, "sms: a text was not delivered"
            );
            self.cx.engine.metrics.chat_error(&PLATFORM);
        } else {
            debug!(message = id, to, status, "sms: delivery status");
        }
    }

    /// An inbound text from `from`: what to text back, if anything (see the module docs).
    pub async fn text(&self, id: &str, from: &str, body: &str) -> Option<String> {
        if !self.first_time(id, from).await {
            debug!(message = id, "sms: a retried webhook ignored");
            return None;
        }
        let word = body.trim().to_ascii_uppercase();
        if STOP_WORDS.contains(&word.as_str()) {
            info!(
                from,
                "sms: STOP: nothing more is sent to this number until START"
            );
            self.set_stopped(from, true).await;
            return Some(STOPPED.into());
        }
        if START_WORDS.contains(&word.as_str()) {
            info!(from, "sms: START: texts to this number resume");
            self.set_stopped(from, false).await;
            return Some(STARTED.into());
        }
        if HELP_WORDS.contains(&word.as_str()) {
            return Some(HELP.into());
        }
        let actor = self.cx.actor(from, from);
        if !actor.approver {
            // The request the text names, if it names one, for the audit row.
            let first = body.split_whitespace().next().unwrap_or_default();
            let named = if looks_like_id(first) {
                self.cx.engine.chat().lookup(first).await.ok().map(|s| s.id)
            } else {
                None
            };
            let refused = inbound::refuse(&self.cx, &actor, named, "text message").await;
            return shown(&refused);
        }
        let message = match self.read(id, from, body).await {
            Ok(m) => m,
            Err(said) => return Some(said),
        };
        let answer = match inbound::handle(&self.cx, &actor, message).await {
            // No form to ask in, and a later text cannot be told for an answer.
            Answer::Ask(q) => {
                conversation::answer(&self.cx, &actor, &q.subject, q.purpose, None).await
            }
            other => other,
        };
        shown(&answer)
    }

    /// What a text from an approver is; `Err`: what to answer instead.
    async fn read(&self, id: &str, from: &str, body: &str) -> Result<Inbound, String> {
        let text = body.trim();
        let as_command = |text: &str| Inbound::Text {
            chat: from.to_string(),
            text: text.to_string(),
            reply_to: None,
            addressed: true,
            direct: false,
            private: true,
            origin: None,
        };
        if text.starts_with('/') {
            return Ok(as_command(text));
        }
        let (first, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
        if looks_like_id(first) && self.cx.engine.chat().lookup(first).await.is_ok() {
            return Ok(self.reply(id, from, &first.to_ascii_lowercase(), rest.trim()));
        }
        if !is_answer(text) {
            return Ok(as_command(text));
        }
        let open = self.open_for(from).await;
        match open.as_slice() {
            [] => Err("Nothing is waiting for your answer. Text /pending to see what is.".into()),
            [one] => Ok(self.reply(id, from, one, text)),
            many => Err(format!(
                "Which request? Text its id first, like \"{} yes\". Waiting: {}",
                many[0],
                many.join(", ")
            )),
        }
    }

    /// `words` as a reply to the card of subject `short`: texts have no replies, so
    /// the card is named as its first line does.
    fn reply(&self, id: &str, from: &str, short: &str, words: &str) -> Inbound {
        Inbound::Text {
            chat: from.to_string(),
            text: words.to_string(),
            reply_to: Some(Replied {
                message: format!("sms:{id}"),
                seen: Seen::Ours(format!("> gatebot: card · id {short}")),
            }),
            addressed: true,
            direct: false,
            private: true,
            origin: None,
        }
    }

    /// The short ids of the pending requests whose cards went to `number`.
    async fn open_for(&self, number: &str) -> Vec<String> {
        let pending = match self.cx.engine.pending_page(100).await {
            Ok((p, _)) => p,
            Err(e) => {
                error!(error = %e, "sms: cannot list the pending requests");
                return Vec::new();
            }
        };
        let mut open = Vec::new();
        for a in pending {
            let shown = self
                .cx
                .engine
                .chat()
                .shown_in(&a.id, &PLATFORM, number)
                .await;
            if matches!(shown, Ok(Some(_))) {
                open.push(a.short_id.clone());
            }
        }
        open
    }
}

/// Moves the numbers that texted STOP from the file the first SMS release kept beside
/// the database (`<database>.sms-stopped`, one a line) into the database, once.
async fn import_stops(engine: &Engine, database: &Path) {
    let mut name = database.file_name().unwrap_or_default().to_os_string();
    name.push(".sms-stopped");
    let file = database.with_file_name(name);
    let Ok(text) = tokio::fs::read_to_string(&file).await else {
        return;
    };
    for number in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Err(e) = engine.chat().set_stopped(&PLATFORM, number, true).await {
            error!(error = %e, "sms: cannot move the numbers that texted STOP into the database");
            return;
        }
    }
    match tokio::fs::remove_file(&file).await {
        Ok(()) => {
            info!(file = %file.display(), "sms: numbers that texted STOP moved into the database")
        }
        Err(e) => warn!(file = %file.display(), error = %e, "sms: cannot remove the old STOP file"),
    }
}

/// Whether `word` has the form of a short id.
fn looks_like_id(word: &str) -> bool {
    let lower = word.to_ascii_lowercase();
    lower.len() == crate::approval::SHORT_ID_LEN
        && lower
            .bytes()
            .all(|b| crate::approval::SHORT_ID_ALPHABET.contains(&b))
}

/// Whether `text` is an answer that names no request (`yes`, `no too risky`).
fn is_answer(text: &str) -> bool {
    let first = text
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    matches!(
        first.as_str(),
        "yes" | "no" | "ok" | "approve" | "approved" | "allow" | "deny" | "reject"
    )
}

/// An answer as one text.
fn shown(answer: &Answer) -> Option<String> {
    let cards = answer.cards();
    if cards.is_empty() {
        return None;
    }
    let text = cards
        .iter()
        .map(|c| render::render(c, None))
        .collect::<Vec<_>>()
        .join("\n\n");
    Some(text.chars().take(render::MAX_BODY_CHARS).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_without_an_id_are_told_from_other_text() {
        for yes in ["yes", "No too risky", "approve", "deny"] {
            assert!(is_answer(yes), "{yes}");
        }
        for other in ["hello", "/pending", "k7m2abcd yes", ""] {
            assert!(!is_answer(other), "{other}");
        }
        assert!(looks_like_id("K7M2ABCD") && !looks_like_id("approved"));
    }

    #[test]
    fn keywords_are_what_carriers_list() {
        assert!(STOP_WORDS.contains(&"STOP") && START_WORDS.contains(&"START"));
        assert!(HELP.contains("STOP"));
    }
}
