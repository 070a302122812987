//! What owners do away from a chat, kind by kind: `gatebot decide ID VERB` (the API's
//! decide route) and `gatebot pending` (`GET /v1/pending`); the web dashboard will take
//! them too. Each kind with subjects takes its own verbs ([`Kind::decide`]) and lists its
//! own waiting subjects ([`Kind::listed`]); the surfaces find the kind from the id
//! through the registry and name none.
//!
//! [`Kind::decide`]: super::Kind::decide
//! [`Kind::listed`]: super::Kind::listed

use serde_json::{Map, Value};

use crate::approval::Via;
use crate::engine::EngineError;

/// An owner's decision on a subject, as typed (`gatebot decide ID VERB …`).
#[derive(Debug, Clone)]
pub struct OwnerDecision {
    /// The verb as typed: each kind says which it takes.
    pub verb: String,
    pub reason: Option<String>,
    /// What an approval grants: commands starting with this (`""`: the prefix offered).
    pub prefix: Option<String>,
    /// What an approval grants: only this exact command.
    pub exact: bool,
    /// A time-boxed grant, as typed (`1h`).
    pub for_: Option<String>,
    /// The call's arguments as the owner edited them: approve the call as edited.
    pub args: Option<serde_json::Value>,
    /// Who decided: the caller's account, never what a body claims.
    pub actor: String,
    pub via: Via,
    /// Whether the surface confirmed the person's second factor for it (step-up).
    pub factor: bool,
}

impl OwnerDecision {
    /// The reason, unless it is blank.
    #[must_use]
    pub fn reason(&self) -> Option<String> {
        self.reason.clone().filter(|r| !r.trim().is_empty())
    }

    /// Whether it asks for a grant (a scope or a time box), which only requests give.
    #[must_use]
    pub fn asks_grant(&self) -> bool {
        self.prefix.is_some() || self.exact || self.for_.is_some()
    }

    /// Refuses choices only a request takes (a grant's scope or time box, edited
    /// arguments), for the kinds that are no request.
    pub fn refuse_request_choices(&self) -> Result<(), Refused> {
        if self.asks_grant() || self.args.is_some() {
            return Err(Refused::Unclear(
                "--prefix, --exact, --for and --args are for requests; this is no request".into(),
            ));
        }
        Ok(())
    }

    /// The verb, trimmed and in lower case.
    #[must_use]
    pub fn verb(&self) -> String {
        self.verb.trim().to_ascii_lowercase()
    }
}

/// A button of a kind's card as an owner's decision away from a chat ([`Press::offered`]):
/// the web dashboard shows the same buttons as the chats and takes each through the
/// kind's [`Kind::decide`], as `gatebot decide` would.
///
/// [`Press::offered`]: super::Press::offered
/// [`Kind::decide`]: super::Kind::decide
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offered {
    /// The subject's full id.
    pub subject: String,
    /// The verb, as `gatebot decide` takes it.
    pub verb: &'static str,
    pub prefix: Option<String>,
    pub exact: bool,
    /// A time box, as typed (`1h`).
    pub for_: Option<String>,
    /// Whether the button asks why (a deny, a stop): the dashboard offers a field for
    /// the reason, which the agent reads.
    pub asks_reason: bool,
}

impl Offered {
    /// A plain verb on `subject`.
    #[must_use]
    pub fn verb(subject: &str, verb: &'static str) -> Offered {
        Offered {
            subject: subject.to_string(),
            verb,
            prefix: None,
            exact: false,
            for_: None,
            asks_reason: false,
        }
    }

    /// The same, asking why.
    #[must_use]
    pub fn asking_why(mut self) -> Offered {
        self.asks_reason = true;
        self
    }

    /// The decision it is, taken by `actor` via `via` with `reason`.
    #[must_use]
    pub fn decision(&self, actor: String, via: Via, reason: Option<String>) -> OwnerDecision {
        OwnerDecision {
            verb: self.verb.to_string(),
            reason: reason.filter(|_| self.asks_reason),
            prefix: self.prefix.clone(),
            exact: self.exact,
            for_: self.for_.clone(),
            args: None,
            actor,
            via,
            factor: false,
        }
    }
}

/// A decision that took effect.
#[derive(Debug)]
pub struct Decided {
    /// The subject as it is now (its API view; every kind's but a request's says its
    /// `kind`).
    pub view: Value,
    /// What the owner is told, a line each.
    pub said: Vec<String>,
}

/// A decision that did not.
#[derive(Debug)]
pub enum Refused {
    /// The verb or a choice does not fit the subject's kind: the words say what does.
    Unclear(String),
    /// Someone decided first (or time did): the words say who and how; `shown` is the
    /// subject as it is now, under its kind's key, where the kind gives it.
    Settled {
        message: String,
        shown: Option<(&'static str, Value)>,
    },
    /// What the engine refused or failed at.
    Engine(EngineError),
}

impl From<EngineError> for Refused {
    fn from(e: EngineError) -> Self {
        Refused::Engine(e)
    }
}

/// Which waiting subjects an owner lists (`gatebot pending`).
#[derive(Debug, Clone, Default)]
pub struct Listing {
    /// Only this agent's.
    pub agent: Option<String>,
    /// The page after this request id (kinds that are few list everything on the first
    /// page and nothing after it).
    pub after: Option<String>,
    /// At most this many requests on a page.
    pub limit: usize,
}

impl Listing {
    /// Whether this is the first page.
    #[must_use]
    pub fn first_page(&self) -> bool {
        self.after.is_none()
    }

    /// Whether `agent`'s subjects are listed.
    #[must_use]
    pub fn shows(&self, agent: &str) -> bool {
        self.agent.as_deref().is_none_or(|a| a == agent)
    }
}

/// A kind's part of `gatebot pending`.
#[derive(Debug, Default)]
pub struct Listed {
    /// Its fields in the answer's JSON (`requests` and `next`, `check_ins`, …).
    pub fields: Map<String, Value>,
    /// Its lines for people, a section of the text `gatebot pending` prints.
    pub said: Vec<String>,
}
