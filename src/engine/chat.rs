//! Chat state: what conversations and delivery read and record about chats, through
//! typed calls (the store stays behind the engine). Approval state itself changes only
//! through the [`Engine`](super::Engine)'s transitions; this records which messages
//! show what, what digests show, and the questions gatebot asked.

use std::sync::Arc;

use super::{blocking, EngineError, What};
use crate::approval::{Approval, PlatformId};
use crate::store::{Store, SubjectLookup};
use crate::subject::{
    DigestState, DigestSummary, Purpose, Question, Shown, ShownBy, Subject, Thread, Unposted,
};
use crate::time::now_ms;

type Result<T> = std::result::Result<T, EngineError>;

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

    /// Subjects whose presence in `chat` needs work (start, missed events).
    /// `destination`: the chat is one of the platform's destinations, where subjects
    /// without a home go; otherwise only subjects at home there.
    pub async fn backlog(
        &self,
        platform: &PlatformId,
        chat: &str,
        destination: bool,
    ) -> Result<Vec<String>> {
        let (p, c) = (platform.to_string(), chat.to_string());
        self.run(move |s| s.chat_backlog(&p, &c, destination)).await
    }

    /// The open subjects among `ids` that belong in `chat` and have no message there,
    /// oldest first.
    pub async fn unposted(
        &self,
        platform: &PlatformId,
        chat: &str,
        ids: &[String],
        destination: bool,
    ) -> Result<Vec<Unposted>> {
        let (p, c, i) = (platform.to_string(), chat.to_string(), ids.to_vec());
        self.run(move |s| s.unposted(&p, &c, &i, destination)).await
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

    /// The subject whose home thread `root` starts in `chat`, if any.
    pub async fn threaded(
        &self,
        platform: &PlatformId,
        chat: &str,
        root: &str,
    ) -> Result<Option<Subject>> {
        let (p, c, r) = (platform.to_string(), chat.to_string(), root.to_string());
        self.run(move |s| s.threaded(&p, &c, &r)).await
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

    /// Messages in `chat` showing subjects among `ids` at an older revision, with the
    /// revision now.
    pub async fn stale(
        &self,
        platform: &PlatformId,
        chat: &str,
        ids: &[String],
    ) -> Result<Vec<(Shown, String)>> {
        let (p, c, i) = (platform.to_string(), chat.to_string(), ids.to_vec());
        self.run(move |s| s.stale_cards(&p, &c, &i)).await
    }

    /// Records, before posting, that `subjects` (id, revision shown) are about to be
    /// shown in `chat` by one message, in the thread `thread` starts if any.
    pub async fn begin_post(
        &self,
        platform: &PlatformId,
        chat: &str,
        subjects: &[(String, String)],
        by: ShownBy,
        thread: Option<&str>,
    ) -> Result<()> {
        let (p, c, i) = (platform.to_string(), chat.to_string(), subjects.to_vec());
        let t = thread.map(str::to_string);
        self.run(move |s| s.begin_post(&p, &c, &i, by, t.as_deref(), now_ms()))
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

    /// An earlier post of `ids` has an unknown outcome and they are posted again
    /// (audited as `prompt_reposted`).
    pub async fn reposted(&self, platform: &PlatformId, chat: &str, ids: &[String]) -> Result<()> {
        let (p, c, i) = (platform.to_string(), chat.to_string(), ids.to_vec());
        self.run(move |s| s.card_reposted(&p, &c, &i, now_ms()))
            .await
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

    /// A subject by id.
    pub async fn subject(&self, id: &str) -> Result<Option<Subject>> {
        let id = id.to_string();
        self.run(move |s| Ok(s.subject(&id)?.map(|(subject, _)| subject)))
            .await
    }

    /// Whether a subject is still open (`None`: no such subject).
    pub async fn is_open(&self, id: &str) -> Result<Option<bool>> {
        let id = id.to_string();
        self.run(move |s| Ok(s.subject(&id)?.map(|(_, open)| open)))
            .await
    }

    /// What a digest message shows, if `message` is a digest.
    pub async fn digest(
        &self,
        platform: &PlatformId,
        chat: &str,
        message: &str,
    ) -> Result<Option<DigestState>> {
        let (p, c, m) = (platform.to_string(), chat.to_string(), message.to_string());
        self.run(move |s| s.digest(&p, &c, &m)).await
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

    /// Counts what a digest covers, now.
    pub async fn digest_summary(
        &self,
        platform: &PlatformId,
        chat: &str,
        message: &str,
    ) -> Result<DigestSummary> {
        let (p, c, m) = (platform.to_string(), chat.to_string(), message.to_string());
        self.run(move |s| s.digest_summary(&p, &c, &m)).await
    }

    /// Counts the requests `ids` (for a digest about to be posted).
    pub async fn summarize(&self, ids: &[String]) -> Result<DigestSummary> {
        let ids = ids.to_vec();
        self.run(move |s| s.summarize(&ids)).await
    }

    /// The pending request a digest shows next after `after`, and its position.
    pub async fn digest_next(
        &self,
        platform: &PlatformId,
        chat: &str,
        message: &str,
        after: Option<&str>,
    ) -> Result<Option<(Approval, usize)>> {
        let (p, c, m, a) = (
            platform.to_string(),
            chat.to_string(),
            message.to_string(),
            after.map(str::to_string),
        );
        self.run(move |s| s.digest_next(&p, &c, &m, a.as_deref()))
            .await
    }

    /// The 1-based place of request `id` in a digest.
    pub async fn digest_position(
        &self,
        platform: &PlatformId,
        chat: &str,
        message: &str,
        id: &str,
    ) -> Result<usize> {
        let (p, c, m, i) = (
            platform.to_string(),
            chat.to_string(),
            message.to_string(),
            id.to_string(),
        );
        self.run(move |s| s.digest_position(&p, &c, &m, &i)).await
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

    /// The question `message` asks, if it is one of gatebot's.
    pub async fn question(
        &self,
        platform: &PlatformId,
        chat: &str,
        message: &str,
    ) -> Result<Option<Question>> {
        let (p, c, m) = (platform.to_string(), chat.to_string(), message.to_string());
        let asked = self.run(move |s| s.question(&p, &c, &m)).await?;
        Ok(asked.and_then(|a| {
            Purpose::parse(&a.purpose).map(|purpose| Question {
                subject: a.subject,
                purpose,
            })
        }))
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
