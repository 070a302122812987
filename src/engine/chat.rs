//! Chat state: what conversations and delivery read and record about chats, through
//! typed calls (the store stays behind the engine). Approval state itself changes only
//! through the [`Engine`](super::Engine)'s transitions; this records which messages
//! show what, what digests show, and the questions gatebot asked.

use std::sync::Arc;

use super::{blocking, EngineError, What};
use crate::approval::votes::Reminder;
use crate::approval::{Approval, PlatformId, Status};
pub use crate::store::Contact;
use crate::store::{Store, SubjectLookup};
use crate::subject::{
    DigestState, DigestSummary, Purpose, Question, Shown, ShownBy, Subject, Thread, Unposted,
};
use crate::time::now_ms;

type Result<T> = std::result::Result<T, EngineError>;

/// What a chat needs done ([`ChatState::work`]).
#[derive(Debug, Clone, Default)]
pub struct ChatWork {
    /// Open subjects that belong in the chat and have no message there, oldest first:
    /// every one of other kinds, and the oldest requests up to the cap
    /// [`ChatState::work`] was given.
    pub unposted: Vec<Unposted>,
    /// How many requests have no message there, listed in `unposted` or not.
    pub requests: usize,
    /// Messages showing a subject at an older revision, with the revision now.
    pub stale: Vec<(Shown, String)>,
    /// Reminders to post there, oldest first.
    pub reminders: Vec<Reminder>,
}

/// What a digest message shows now ([`ChatState::digest`]).
#[derive(Debug, Clone)]
pub struct DigestNow {
    pub state: DigestState,
    pub summary: DigestSummary,
    /// The pending request to show under review, and its 1-based place in the digest.
    pub review: Option<(Approval, usize)>,
}

/// Where an owner turns a digest ([`ChatState::turn_digest`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DigestPage {
    /// Its counts.
    Summary,
    /// The first pending request in it.
    First,
    /// The pending request after this one.
    After(String),
}

/// What a message someone replied to is ([`ChatState::replied_to`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepliedTo {
    /// A question gatebot asked; the reply's text is the answer.
    Question(Question),
    /// A card of this subject, or its thread.
    Subject(Subject),
    /// None that gatebot has a record of.
    Nothing,
}

/// What a button pressed on a message gatebot has no record of belongs to
/// ([`ChatState::adopt_pressed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pressed {
    /// A digest's button.
    Digest,
    /// A button of `subject`'s card, whose text names `tag` (its short id).
    Card { subject: String, tag: String },
}

/// The engine's handle on chat bookkeeping.
#[derive(Debug)]
pub struct ChatState {
    store: Arc<Store>,
}

impl ChatState {
    pub(super) fn new(store: Arc<Store>) -> ChatState {
        ChatState { store }
    }

    async fn run<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Store) -> crate::store::Result<T> + Send + 'static,
    {
        blocking(&self.store, f).await
    }

    /// What `chat` needs done for the subjects `known` (or, with `rescan`, for every
    /// subject whose presence there needs work: start, missed events): those open
    /// ones that belong there and have no message yet, oldest first (requests only up
    /// to `requests`, with their number: a burst is shown by a digest, which SQLite
    /// makes from the database, so the burst is never held here), and the messages
    /// showing one at an older revision. `destination`: the chat is one of the
    /// platform's destinations, where subjects without a home go; otherwise only
    /// subjects at home there.
    pub async fn work(
        &self,
        platform: &PlatformId,
        chat: &str,
        known: &[String],
        destination: bool,
        rescan: bool,
        requests: usize,
    ) -> Result<ChatWork> {
        let (p, c) = (platform.to_string(), chat.to_string());
        // With a rescan every subject is looked at, `known` among them.
        let ids: Option<Vec<String>> = (!rescan).then(|| known.to_vec());
        self.run(move |s| {
            let (unposted, requests) =
                s.unposted_in(&p, &c, ids.as_deref(), destination, requests)?;
            Ok(ChatWork {
                unposted,
                requests,
                stale: s.stale_in(&p, &c, ids.as_deref())?,
                reminders: s.reminders_in(&p, &c)?,
            })
        })
        .await
    }

    /// Begins a digest post in `chat` of every request waiting for a message there
    /// ([`Store::begin_digest`]); returns how many it shows and how many of them are
    /// posted again after an unknown outcome.
    pub async fn begin_digest(
        &self,
        platform: &PlatformId,
        chat: &str,
        destination: bool,
        begun: i64,
    ) -> Result<(usize, usize)> {
        let (p, c) = (platform.to_string(), chat.to_string());
        self.run(move |s| s.begin_digest(&p, &c, destination, begun))
            .await
    }

    /// The counts of the digest post in flight begun at `begun`.
    pub async fn summarize_digest(
        &self,
        platform: &PlatformId,
        chat: &str,
        begun: i64,
    ) -> Result<DigestSummary> {
        let (p, c) = (platform.to_string(), chat.to_string());
        self.run(move |s| s.summarize_in_flight(&p, &c, begun))
            .await
    }

    /// The digest post begun at `begun` succeeded as `message` (each request audited
    /// as `prompted`); returns how many it recorded.
    pub async fn finish_digest(
        &self,
        platform: &PlatformId,
        chat: &str,
        begun: i64,
        message: &str,
    ) -> Result<usize> {
        let (p, c, m) = (platform.to_string(), chat.to_string(), message.to_string());
        self.run(move |s| s.finish_digest(&p, &c, begun, &m, now_ms()))
            .await
    }

    /// The digest post begun at `begun` certainly did not happen.
    pub async fn abandon_digest(
        &self,
        platform: &PlatformId,
        chat: &str,
        begun: i64,
    ) -> Result<()> {
        let (p, c) = (platform.to_string(), chat.to_string());
        self.run(move |s| s.abandon_digest(&p, &c, begun)).await
    }

    /// Where a card of `subject` goes in `chat`: under its home message, or its
    /// parent's card; `None`: top-level.
    pub async fn anchor(
        &self,
        subject: &str,
        platform: &PlatformId,
        chat: &str,
    ) -> Result<Option<Thread>> {
        let (id, p, c) = (subject.to_string(), platform.to_string(), chat.to_string());
        self.run(move |s| s.anchor(&id, &p, &c)).await
    }

    /// The thread of the message showing `subject` in `chat`, if one is posted there.
    pub async fn shown_in(
        &self,
        subject: &str,
        platform: &PlatformId,
        chat: &str,
    ) -> Result<Option<Thread>> {
        let (id, p, c) = (subject.to_string(), platform.to_string(), chat.to_string());
        self.run(move |s| s.shown_in(&id, &p, &c)).await
    }

    /// Takes reminder `id` to post it now (`false`: taken already); from then on it
    /// is never posted again unless [`ChatState::put_back_reminder`] returns it.
    pub async fn take_reminder(&self, id: i64) -> Result<bool> {
        self.run(move |s| s.take_reminder(id)).await
    }

    /// Returns a taken reminder the platform refused without posting it.
    pub async fn put_back_reminder(&self, r: Reminder) -> Result<()> {
        self.run(move |s| s.put_back_reminder(&r)).await
    }

    /// An inbound message `message` (its provider's id) from `address` on `platform`:
    /// `true` the first time, `false` for a webhook delivered again. Either way the
    /// sender is noted as having written now (WhatsApp's 24-hour window).
    pub async fn heard(&self, platform: &PlatformId, address: &str, message: &str) -> Result<bool> {
        let (p, a, m) = (
            platform.to_string(),
            address.to_string(),
            message.to_string(),
        );
        self.run(move |s| s.heard(&p, &a, &m, now_ms())).await
    }

    /// What `platform` knows of `address`: when they last wrote, whether they stopped.
    pub async fn contact(&self, platform: &PlatformId, address: &str) -> Result<Contact> {
        let (p, a) = (platform.to_string(), address.to_string());
        self.run(move |s| s.contact(&p, &a)).await
    }

    /// Records (and audits) that `address` asked for no more messages on `platform`
    /// (`stop`), or for them again. `false`: it already stood so.
    pub async fn set_stopped(
        &self,
        platform: &PlatformId,
        address: &str,
        stop: bool,
    ) -> Result<bool> {
        let (p, a) = (platform.to_string(), address.to_string());
        self.run(move |s| s.set_stopped(&p, &a, stop, now_ms()))
            .await
    }

    /// Takes the outcome reply of card `message` on a platform that cannot edit
    /// (WhatsApp): `true` the first time. From then on it is never sent again unless
    /// [`ChatState::put_back_outcome`] returns it.
    pub async fn take_outcome(
        &self,
        platform: &PlatformId,
        chat: &str,
        message: &str,
    ) -> Result<bool> {
        let (p, c, m) = (platform.to_string(), chat.to_string(), message.to_string());
        self.run(move |s| s.take_outcome(&p, &c, &m, now_ms()))
            .await
    }

    /// Returns a taken outcome reply the platform refused without sending it.
    pub async fn put_back_outcome(
        &self,
        platform: &PlatformId,
        chat: &str,
        message: &str,
    ) -> Result<()> {
        let (p, c, m) = (platform.to_string(), chat.to_string(), message.to_string());
        self.run(move |s| s.put_back_outcome(&p, &c, &m)).await
    }

    /// The home chats on `platform` of subjects that need work.
    pub async fn home_chats(&self, platform: &PlatformId) -> Result<Vec<String>> {
        let p = platform.to_string();
        self.run(move |s| s.home_chats(&p)).await
    }

    /// A subject's home chat on `platform`, if it has one there.
    pub async fn home_on(&self, subject: &str, platform: &PlatformId) -> Result<Option<String>> {
        let (id, p) = (subject.to_string(), platform.to_string());
        let home = self.run(move |s| s.home_of(&id)).await?;
        Ok(home.filter(|(hp, _)| *hp == p).map(|(_, chat)| chat))
    }

    /// The chats on `platform` a subject lives in besides the destinations: its home
    /// chat there, and its audience's chats there (a routed request's).
    pub async fn chats_on(&self, subject: &str, platform: &PlatformId) -> Result<Vec<String>> {
        let (id, p) = (subject.to_string(), platform.to_string());
        self.run(move |s| {
            let mut chats = s.audience_on(&id, &p)?;
            if let Some((hp, chat)) = s.home_of(&id)? {
                if hp == p {
                    chats.push(chat);
                }
            }
            Ok(chats)
        })
        .await
    }

    /// Records, before posting, that `subjects` (id, revision shown) are about to be
    /// shown in `chat` by one message, in the thread `thread` starts if any.
    /// `repost`: an earlier post of them has an unknown outcome and they are posted
    /// again (audited as `prompt_reposted` first).
    pub async fn begin_post(
        &self,
        platform: &PlatformId,
        chat: &str,
        subjects: &[(String, String)],
        by: ShownBy,
        thread: Option<&str>,
        repost: bool,
    ) -> Result<()> {
        let (p, c, i) = (platform.to_string(), chat.to_string(), subjects.to_vec());
        let t = thread.map(str::to_string);
        self.run(move |s| {
            if repost {
                let ids: Vec<String> = i.iter().map(|(id, _)| id.clone()).collect();
                s.card_reposted(&p, &c, &ids, now_ms())?;
            }
            s.begin_post(&p, &c, &i, by, t.as_deref(), now_ms())
        })
        .await
    }

    /// The post succeeded as `message` (audited as `prompted` for each subject);
    /// returns the subjects recorded, those a reply or press had not already tied to
    /// a message ([`ChatState::adopt`]).
    pub async fn finish_post(
        &self,
        platform: &PlatformId,
        chat: &str,
        ids: &[String],
        by: ShownBy,
        message: &str,
    ) -> Result<Vec<String>> {
        let (p, c, i, m) = (
            platform.to_string(),
            chat.to_string(),
            ids.to_vec(),
            message.to_string(),
        );
        self.run(move |s| s.finish_post(&p, &c, &i, by, &m, now_ms()))
            .await
    }

    /// `message`, one of gatebot's messages in `chat` that someone replied to or
    /// pressed a button on, shows what a post in flight there shows (`subject`'s card,
    /// or a digest): record it as that post's message, since the platform's answer has
    /// not come (slow) or never will (lost). Returns the subjects it now records.
    pub async fn adopt(
        &self,
        platform: &PlatformId,
        chat: &str,
        message: &str,
        subject: Option<&str>,
        by: ShownBy,
    ) -> Result<Vec<String>> {
        let (p, c, m, id) = (
            platform.to_string(),
            chat.to_string(),
            message.to_string(),
            subject.map(str::to_string),
        );
        self.run(move |s| s.adopt_post(&p, &c, &m, id.as_deref(), by, now_ms()))
            .await
    }

    /// The post certainly did not happen.
    pub async fn abandon_post(
        &self,
        platform: &PlatformId,
        chat: &str,
        ids: &[String],
    ) -> Result<()> {
        let (p, c, i) = (platform.to_string(), chat.to_string(), ids.to_vec());
        self.run(move |s| s.abandon_post(&p, &c, &i)).await
    }

    /// The message showing `subject` in `chat` now shows `revision`.
    pub async fn drawn(
        &self,
        subject: &str,
        platform: &PlatformId,
        chat: &str,
        revision: &str,
    ) -> Result<()> {
        let (id, p, c, r) = (
            subject.to_string(),
            platform.to_string(),
            chat.to_string(),
            revision.to_string(),
        );
        self.run(move |s| s.card_drawn(&id, &p, &c, &r)).await
    }

    /// What `message` shows: a subject's card, or the request a digest shows.
    pub async fn shown_at(
        &self,
        platform: &PlatformId,
        chat: &str,
        message: &str,
    ) -> Result<Option<Shown>> {
        let (p, c, m) = (platform.to_string(), chat.to_string(), message.to_string());
        self.run(move |s| s.shown_at(&p, &c, &m)).await
    }

    /// The subject `typed` names (a full id, a short id or a unique prefix of 4+
    /// characters), of any kind; an open one first, as for requests.
    pub async fn lookup(&self, typed: &str) -> Result<Subject> {
        lookup(&self.store, typed).await
    }

    /// Whether a subject is still open (`None`: no such subject).
    pub async fn is_open(&self, id: &str) -> Result<Option<bool>> {
        let id = id.to_string();
        self.run(move |s| Ok(s.subject(&id)?.map(|(_, open)| open)))
            .await
    }

    /// What the digest `message` shows now, `None` if it is no digest: its stored
    /// state, its counts and, while requests are pending and it shows one under review,
    /// the request to show (the one shown while it is pending, else the next pending
    /// one after it) with its 1-based place.
    pub async fn digest(
        &self,
        platform: &PlatformId,
        chat: &str,
        message: &str,
    ) -> Result<Option<DigestNow>> {
        let (p, c, m) = (platform.to_string(), chat.to_string(), message.to_string());
        self.run(move |s| {
            let Some(state) = s.digest(&p, &c, &m)? else {
                return Ok(None);
            };
            let summary = s.digest_summary(&p, &c, &m)?;
            let review = match &state.showing {
                Some(showing) if summary.pending > 0 => match s.get(showing).ok().flatten() {
                    Some(a) if a.status == Status::Pending => {
                        let position = s.digest_position(&p, &c, &m, &a.id)?;
                        Some((a, position))
                    }
                    _ => s.digest_next(&p, &c, &m, Some(showing))?,
                },
                _ => None,
            };
            Ok(Some(DigestNow {
                state,
                summary,
                review,
            }))
        })
        .await
    }

    /// Turns the digest `message` to `to` (unless every request in it is settled) and
    /// returns its state: as it was if closed, else as stored now; `None` if `message`
    /// is no digest.
    pub async fn turn_digest(
        &self,
        platform: &PlatformId,
        chat: &str,
        message: &str,
        to: DigestPage,
    ) -> Result<Option<DigestState>> {
        let (p, c, m) = (platform.to_string(), chat.to_string(), message.to_string());
        self.run(move |s| {
            let Some(state) = s.digest(&p, &c, &m)? else {
                return Ok(None);
            };
            if state.closed {
                return Ok(Some(state));
            }
            let showing = match &to {
                DigestPage::Summary => None,
                DigestPage::First => s.digest_next(&p, &c, &m, None)?.map(|(a, _)| a.id),
                DigestPage::After(after) => {
                    s.digest_next(&p, &c, &m, Some(after))?.map(|(a, _)| a.id)
                }
            };
            let state = DigestState {
                showing,
                closed: false,
            };
            s.set_digest(&p, &c, &m, &state)?;
            Ok(Some(state))
        })
        .await
    }

    /// Sets what a digest message shows.
    pub async fn set_digest(
        &self,
        platform: &PlatformId,
        chat: &str,
        message: &str,
        state: &DigestState,
    ) -> Result<()> {
        let (p, c, m, st) = (
            platform.to_string(),
            chat.to_string(),
            message.to_string(),
            state.clone(),
        );
        self.run(move |s| s.set_digest(&p, &c, &m, &st)).await
    }

    /// Counts the requests `ids` (for a digest about to be posted).
    pub async fn summarize(&self, ids: &[String]) -> Result<DigestSummary> {
        let ids = ids.to_vec();
        self.run(move |s| s.summarize(&ids)).await
    }

    /// Remembers that `message` asks a question about `subject`, so a reply to it
    /// counts, also after a restart.
    pub async fn ask(
        &self,
        platform: &PlatformId,
        chat: &str,
        message: &str,
        subject: &str,
        purpose: Purpose,
    ) -> Result<()> {
        let (p, c, m, id) = (
            platform.to_string(),
            chat.to_string(),
            message.to_string(),
            subject.to_string(),
        );
        self.run(move |s| s.record_question(&p, &c, &m, &id, purpose.as_str(), now_ms()))
            .await
    }

    /// What the message `message` in `chat` that someone replied to is, in gatebot's
    /// records, looked at in this order: a question gatebot asked (its subject instead
    /// when the reply's text is no answer, `answers` false, and the subject is known);
    /// a subject's card; the thread a subject lives in.
    pub async fn replied_to(
        &self,
        platform: &PlatformId,
        chat: &str,
        message: &str,
        answers: bool,
    ) -> Result<RepliedTo> {
        let (p, c, m) = (platform.to_string(), chat.to_string(), message.to_string());
        self.run(move |s| {
            let question = s.question(&p, &c, &m)?.and_then(|a| {
                Purpose::parse(&a.purpose).map(|purpose| Question {
                    subject: a.subject,
                    purpose,
                })
            });
            if let Some(q) = question {
                if answers {
                    return Ok(RepliedTo::Question(q));
                }
                if let Some((subject, _)) = s.subject(&q.subject)? {
                    return Ok(RepliedTo::Subject(subject));
                }
            }
            if let Some(card) = s.shown_at(&p, &c, &m)? {
                return Ok(RepliedTo::Subject(card.subject));
            }
            Ok(s.threaded(&p, &c, &m)?
                .map_or(RepliedTo::Nothing, RepliedTo::Subject))
        })
        .await
    }

    /// A press on `message` in `chat`, which gatebot has no record of, on a button of
    /// `pressed`: if the message is that of a post in flight there, records it as such
    /// (see [`ChatState::adopt`]). Returns the subjects it now records.
    pub async fn adopt_pressed(
        &self,
        platform: &PlatformId,
        chat: &str,
        message: &str,
        pressed: Pressed,
    ) -> Result<Vec<String>> {
        let (p, c, m) = (platform.to_string(), chat.to_string(), message.to_string());
        self.run(move |s| match pressed {
            Pressed::Digest => {
                if s.digest(&p, &c, &m)?.is_some() {
                    return Ok(Vec::new());
                }
                s.adopt_post(&p, &c, &m, None, ShownBy::Digest, now_ms())
            }
            Pressed::Card { subject, tag } => {
                if s.shown_at(&p, &c, &m)?.is_some() {
                    return Ok(Vec::new());
                }
                let named = match s.lookup_subject(&tag, true)? {
                    SubjectLookup::NotFound => s.lookup_subject(&tag, false)?,
                    other => other,
                };
                if !matches!(named, SubjectLookup::Found(n) if n.id == subject) {
                    return Ok(Vec::new());
                }
                s.adopt_post(&p, &c, &m, Some(&subject), ShownBy::Card, now_ms())
            }
        })
        .await
    }
}

/// The subject `typed` names (a full id, a short id or a unique prefix of 4+
/// characters), of any kind; an open one first, as for requests.
pub(super) async fn lookup(store: &Arc<Store>, typed: &str) -> Result<Subject> {
    let t = typed.to_string();
    let found = blocking(store, move |s| match s.lookup_subject(&t, true)? {
        SubjectLookup::NotFound => s.lookup_subject(&t, false),
        other => Ok(other),
    })
    .await?;
    match found {
        SubjectLookup::Found(s) => Ok(s),
        SubjectLookup::Ambiguous(candidates) => Err(EngineError::Ambiguous {
            what: What::Subject,
            typed: typed.to_string(),
            candidates,
        }),
        SubjectLookup::NotFound => Err(EngineError::not_found(What::Subject, typed)),
    }
}
