//! What an SMS gateway does for gatebot: send a text, tell a genuine webhook from a
//! forged one, read what a webhook says, and answer it. Twilio ([`super::twilio`]) is
//! the first; another gateway is one file implementing [`Gateway`].

use std::future::Future;

use axum::http::HeaderMap;

use crate::chat::platform::SendError;

/// A webhook's form parameters, in the order they came.
pub type Params = Vec<(String, String)>;

/// What a genuine webhook says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Webhook {
    /// A text someone sent to gatebot's number.
    Message {
        /// The gateway's id of the message: a retried webhook repeats it.
        id: String,
        /// The sender's number (E.164).
        from: String,
        body: String,
    },
    /// What became of a text gatebot sent.
    Status {
        id: String,
        to: String,
        status: String,
        /// The gateway's error code, when it failed.
        error: Option<String>,
    },
    /// Anything else.
    Other,
}

/// An SMS gateway.
pub trait Gateway: Send + Sync + 'static {
    /// Sends `body` to `to` (E.164); the gateway's id of the message.
    fn send(&self, to: &str, body: &str) -> impl Future<Output = Result<String, SendError>> + Send;

    /// Whether a webhook with these headers and parameters was sent by the gateway
    /// (checked before anything in it is acted on).
    fn genuine(&self, headers: &HeaderMap, params: &Params) -> bool;

    /// What a genuine webhook says.
    fn read(&self, params: &Params) -> Webhook;

    /// The HTTP body that answers a webhook, with its content type: `text` sent back
    /// to whoever texted, or nothing.
    fn answer(&self, text: Option<&str>) -> (&'static str, String);
}
