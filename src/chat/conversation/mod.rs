//! The kinds of conversation gatebot has in chats, one module each, and the registry
//! that dispatches to them (as mini-redis dispatches commands to `cmd/`).
//!
//! A kind is a type implementing [`Kind`]: its buttons' actions ([`Press`]: encoded
//! as `gb1:…` data of at most 64 bytes, decoded back, who may take each, what each
//! does), its commands ([`Run`], read by [`Kind::parse`] and [`Kind::parse_words`],
//! listed in [`Kind::COMMANDS`] for `/help`, a platform's command menu and Slack's
//! manifest), the subjects whose cards it draws ([`Kind::SUBJECT`], [`Kind::render`]),
//! the questions whose answers it takes ([`Kind::PURPOSES`]), replies it reads
//! itself, and its part of `/pending`. Everything acts **through the engine**.
//!
//! The registry is the one list in [`kinds!`](self) below: it makes [`Action`] and
//! [`Command`] (one variant per kind) and every dispatch from them. The inbound layer
//! refuses and audits whoever may not take an action before a kind sees it. A card
//! names its subject with one typed tag ([`crate::chat::card::Tag`]), read back by one
//! parser; no kind parses text of its own.
//!
//! To add a kind: write its module (its card, a type implementing [`Kind`], its action
//! and command types implementing [`Press`] and [`Run`]), then add one line to
//! `kinds!`. A kind whose subjects are a new kind of subject also adds the variant to
//! [`SubjectKind`] (and the store records it).

pub mod agents;
pub mod approval;
pub mod batch;
pub mod checkin;
pub mod digest;
pub mod grants;
pub mod help;
pub mod owner;
pub mod pending;
pub mod proposal;
pub mod signin;
pub mod task;

use std::fmt::Debug;
use std::future::Future;

use crate::chat::card::Card;
use crate::chat::command::{self, Typed};
use crate::chat::exchange::{Actor, Answer, At, Said, Written};
use crate::chat::Context;
use crate::engine::{Engine, EngineError};
use crate::subject::Purpose;
use crate::subject::{Subject, SubjectKind};
use owner::{Decided, Listed, Listing, OwnerDecision, Refused};

/// Every button's data starts with this (and a version, so old buttons can be told apart).
pub const DATA_PREFIX: &str = "gb1:";
/// Telegram's limit on callback data, in bytes; gatebot holds every platform to it.
pub const MAX_DATA: usize = 64;

/// The full id a button names (requests, check-ins, tasks, proposals, grants and agents'
/// handles are all ULIDs: 26 letters and digits), or `None` for anything else.
#[must_use]
pub fn full_id(s: &str) -> Option<String> {
    (s.len() == 26 && s.bytes().all(|b| b.is_ascii_alphanumeric())).then(|| s.to_string())
}

/// The full id the kinds' example actions name (the registry's tests).
#[cfg(test)]
pub(crate) const EXAMPLE_ID: &str = "01HZZZZZZZZZZZZZZZZZZZZZZZ";

/// Who may take an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who {
    /// Only the platform's approvers.
    Approvers,
    /// Anyone who can write to the bot.
    Anyone,
}

/// A slash command a kind answers, as people are told about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlashCommand {
    /// Its name, without the slash (`approve`).
    pub name: &'static str,
    /// Its line in a platform's command menu (Telegram's `setMyCommands`).
    pub menu: &'static str,
    /// Its line in `/help`: how it is typed and what it does; `None` where another
    /// command's line covers it (`/resume` is on `/pause`'s).
    pub help: Option<(&'static str, &'static str)>,
}

/// A kind of conversation. See the module docs.
pub trait Kind {
    /// A press on one of its buttons ([`Never`] for a kind without buttons).
    type Action: Press;
    /// A command it answers ([`Never`] for a kind that answers none).
    type Command: Run;
    /// The kind of subject whose cards it draws, if any.
    const SUBJECT: Option<SubjectKind> = None;
    /// The questions whose answers it takes ([`Kind::answer`]).
    const PURPOSES: &'static [Purpose] = &[];
    /// Its slash commands, in the order `/help` lists them.
    const COMMANDS: &'static [SlashCommand] = &[];
    /// Whether text written in reply to one of its subjects' cards (or in its thread)
    /// that is no command is its own to read ([`Kind::reply`]), rather than words for
    /// a command.
    const READS_REPLIES: bool = false;
    /// Whether it decides ids that name no subject (requests that never asked a
    /// human: it looks them up and says they are settled). One kind at most.
    const DECIDES_UNSHOWN: bool = false;

    /// Reads a typed command (`/name args`) as one of its own. `in_reply`: the message
    /// replies to (or is in the thread of) a card, so a decision may omit the id.
    fn parse(_typed: &Typed<'_>, _in_reply: bool) -> Option<Self::Command> {
        None
    }

    /// Reads plain words written in reply to a card as one of its commands.
    fn parse_words(_text: &str) -> Option<Self::Command> {
        None
    }

    /// Takes text written where gatebot reads it that no kind read as a command: as
    /// one of its commands, or with an answer of its own; `None`: not its to take.
    fn written(_cx: &Context, _w: &Written<'_>) -> Option<Taken<Self::Command>> {
        None
    }

    /// The card that shows `subject` (of [`Kind::SUBJECT`]) now; `None` if it is gone.
    /// Drawn from the engine alone, so every surface shows the same card: the chats'
    /// delivery and the web dashboard.
    fn render(
        _engine: &Engine,
        _subject: &Subject,
    ) -> impl Future<Output = Result<Option<Rendered>, EngineError>> + Send {
        async { Ok(None) }
    }

    /// Takes the answer to a question it asked (one of [`Kind::PURPOSES`]): `text` is
    /// what the person wrote (`None`: nothing).
    fn answer(
        _cx: &Context,
        _actor: &Actor,
        _subject: &str,
        _purpose: Purpose,
        _text: Option<String>,
    ) -> impl Future<Output = Answer> + Send {
        async { Answer::Nothing }
    }

    /// Reads text written in reply to one of its subjects (where
    /// [`Kind::READS_REPLIES`]). The caller has checked the writer is an approver.
    fn reply(
        _cx: &Context,
        _actor: &Actor,
        _subject: &Subject,
        _text: &str,
    ) -> impl Future<Output = Answer> + Send {
        async { Answer::Nothing }
    }

    /// Its part of `/pending` (blocks and button rows; the first part's fallback is the
    /// list's), if it lists anything there.
    fn pending(_cx: &Context) -> impl Future<Output = Result<Option<Card>, EngineError>> + Send {
        async { Ok(None) }
    }

    /// Takes an owner's decision on one of its subjects away from a chat (`gatebot
    /// decide ID VERB`; the web dashboard, when it comes): the verbs and choices are its
    /// own. `id` is the subject's full id (or, where [`Kind::DECIDES_UNSHOWN`], the id as
    /// typed).
    fn decide(
        _engine: &Engine,
        _id: &str,
        _decision: OwnerDecision,
    ) -> impl Future<Output = Result<Decided, Refused>> + Send {
        async {
            Err(Refused::Unclear(
                "there is nothing to decide about this".into(),
            ))
        }
    }

    /// Its part of `gatebot pending` (and of the web dashboard's list when it comes), if it
    /// lists anything.
    fn listed(
        _engine: &Engine,
        _listing: &Listing,
    ) -> impl Future<Output = Result<Option<Listed>, EngineError>> + Send {
        async { Ok(None) }
    }

    /// A representative card of each of its states, named (`pending`, `approved`), as
    /// an owner would see it: the renderers' golden files ([`crate::chat::golden`]).
    #[cfg(test)]
    fn golden_cards() -> Vec<(&'static str, Card)> {
        Vec::new()
    }

    /// Its cards at their largest and in each state, for the renderers' tests (each
    /// renderer checks every kind's cards against its platform's limits).
    #[cfg(test)]
    fn example_cards() -> Vec<Card> {
        Vec::new()
    }
}

/// What a kind makes of text it takes ([`Kind::written`]).
#[derive(Debug)]
pub enum Taken<C> {
    /// One of its commands, run like a typed one.
    Command(C),
    /// An answer of its own.
    Answer(Box<Answer>),
}

/// A press on one of a kind's buttons.
pub trait Press: Sized + Clone + Debug + PartialEq + Eq + Send + Sync + 'static {
    /// Reads button data (after [`DATA_PREFIX`]) as one of its actions.
    fn decode(data: &str) -> Option<Self>;
    /// The data after [`DATA_PREFIX`].
    fn encode(&self) -> String;
    /// Who may take it.
    fn who(&self) -> Who {
        Who::Approvers
    }
    /// What was tried, for the audit row of a refusal.
    fn attempted(&self) -> String;
    /// The subject it is about (its full id), if it names one.
    fn subject(&self) -> Option<&str> {
        None
    }
    /// Whether its buttons are on digests (rather than on its subject's card): a press
    /// on a message gatebot has no record of then shows that message is a digest.
    fn on_digest(&self) -> bool {
        false
    }
    /// What it is as an owner's decision away from a chat, if it is one (the web
    /// dashboard shows the buttons that are; one that only shows something, or asks in
    /// the chat, is not). `config` is the config in force.
    fn offered(&self, _config: &crate::config::Config) -> Option<owner::Offered> {
        None
    }
    /// Runs it, for someone allowed to take it. `at` is where the pressed button is.
    fn press(self, cx: &Context, actor: &Actor, at: &At) -> impl Future<Output = Answer> + Send;
    /// One of each of its actions, for the registry's tests.
    #[cfg(test)]
    fn examples() -> Vec<Self>;
}

/// A command of a kind's, typed or written as words in a reply.
pub trait Run: Sized + Clone + Debug + PartialEq + Eq + Send + Sync + 'static {
    /// Who may give it.
    fn who(&self) -> Who {
        Who::Approvers
    }
    /// The subject it names, as typed (an id or a prefix), if it names one.
    fn subject(&self) -> Option<&str> {
        None
    }
    /// What was tried, for the audit row of a refusal.
    fn attempted(&self) -> String;
    /// Whether it acts on the subject of the card it replies to (it names none): in
    /// reply to a message of gatebot's that shows no subject it can find, it is
    /// answered with `UNMATCHED_REPLY` (in the inbound layer) instead.
    fn wants_replied(&self) -> bool {
        false
    }
    /// Runs it, for someone allowed to give it, where it was said.
    fn run(
        self,
        cx: &Context,
        actor: &Actor,
        said: &Said<'_>,
    ) -> impl Future<Output = Answer> + Send;
}

/// The action or command of a kind that has none: no value of it exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Never {}

impl Press for Never {
    fn decode(_: &str) -> Option<Never> {
        None
    }
    fn encode(&self) -> String {
        match *self {}
    }
    fn attempted(&self) -> String {
        match *self {}
    }
    async fn press(self, _: &Context, _: &Actor, _: &At) -> Answer {
        match self {}
    }
    #[cfg(test)]
    fn examples() -> Vec<Never> {
        Vec::new()
    }
}

impl Run for Never {
    fn attempted(&self) -> String {
        match *self {}
    }
    async fn run(self, _: &Context, _: &Actor, _: &Said<'_>) -> Answer {
        match self {}
    }
}

/// The registry: each kind once, as `Variant => module::Type`. It makes [`Action`]
/// and [`Command`] with a variant per kind, and every dispatch over kinds. Button data
/// and command names are each a kind's own (a test checks no two kinds read the same).
macro_rules! kinds {
    ($($variant:ident => $kind:ty),+ $(,)?) => {
        /// A button press, decoded: a kind's [`Press`].
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum Action {
            $($variant(<$kind as Kind>::Action)),+
        }

        /// A command, decoded: a kind's [`Run`].
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum Command {
            $($variant(<$kind as Kind>::Command)),+
        }

        impl Action {
            fn decode_kind(rest: &str) -> Option<Action> {
                $(if let Some(a) = <<$kind as Kind>::Action as Press>::decode(rest) {
                    return Some(Action::$variant(a));
                })+
                None
            }

            fn encode_kind(&self) -> String {
                match self { $(Action::$variant(a) => Press::encode(a)),+ }
            }

            /// Who may take this action.
            #[must_use]
            pub fn who(&self) -> Who {
                match self { $(Action::$variant(a) => Press::who(a)),+ }
            }

            /// What was tried, for the audit row of a refusal.
            #[must_use]
            pub fn attempted(&self) -> String {
                match self { $(Action::$variant(a) => Press::attempted(a)),+ }
            }

            /// The subject the action is about, if it names one.
            #[must_use]
            pub fn subject(&self) -> Option<&str> {
                match self { $(Action::$variant(a) => Press::subject(a)),+ }
            }

            /// What the button is as an owner's decision ([`Press::offered`]).
            #[must_use]
            pub fn offered(&self, config: &crate::config::Config) -> Option<owner::Offered> {
                match self { $(Action::$variant(a) => Press::offered(a, config)),+ }
            }

            /// Whether the button is on a digest ([`Press::on_digest`]).
            #[must_use]
            pub fn on_digest(&self) -> bool {
                match self { $(Action::$variant(a) => Press::on_digest(a)),+ }
            }

            /// Runs the press, for someone allowed to take it.
            pub async fn press(self, cx: &Context, actor: &Actor, at: &At) -> Answer {
                match self { $(Action::$variant(a) => Press::press(a, cx, actor, at).await),+ }
            }

            /// One of each action of every kind (the registry's tests).
            #[cfg(test)]
            fn examples() -> Vec<(&'static str, Action)> {
                let mut all = Vec::new();
                $(all.extend(
                    <<$kind as Kind>::Action as Press>::examples()
                        .into_iter()
                        .map(|a| (stringify!($variant), Action::$variant(a))),
                );)+
                all
            }
        }

        impl Command {
            fn parse_kind(typed: &Typed<'_>, in_reply: bool) -> Option<Command> {
                $(if let Some(c) = <$kind as Kind>::parse(typed, in_reply) {
                    return Some(Command::$variant(c));
                })+
                None
            }

            fn parse_words_kind(text: &str) -> Option<Command> {
                $(if let Some(c) = <$kind as Kind>::parse_words(text) {
                    return Some(Command::$variant(c));
                })+
                None
            }

            /// Text that no kind read as a command, taken by the first kind that
            /// takes it ([`Kind::written`]); `None`: no kind's, so not for gatebot.
            pub fn written(cx: &Context, w: &Written<'_>) -> Option<Taken<Command>> {
                $(match <$kind as Kind>::written(cx, w) {
                    Some(Taken::Command(c)) => return Some(Taken::Command(Command::$variant(c))),
                    Some(Taken::Answer(a)) => return Some(Taken::Answer(a)),
                    None => {}
                })+
                None
            }

            /// Whether it acts on the subject of the card it replies to.
            #[must_use]
            pub fn wants_replied(&self) -> bool {
                match self { $(Command::$variant(c) => Run::wants_replied(c)),+ }
            }

            /// Who may give this command.
            #[must_use]
            pub fn who(&self) -> Who {
                match self { $(Command::$variant(c) => Run::who(c)),+ }
            }

            /// The subject the command names, as typed (an id or a prefix), if any.
            #[must_use]
            pub fn subject(&self) -> Option<&str> {
                match self { $(Command::$variant(c) => Run::subject(c)),+ }
            }

            /// What was tried, for the audit row of a refusal.
            #[must_use]
            pub fn attempted(&self) -> String {
                match self { $(Command::$variant(c) => Run::attempted(c)),+ }
            }

            /// Runs the command, for someone allowed to give it, where it was said.
            pub async fn run(self, cx: &Context, actor: &Actor, said: &Said<'_>) -> Answer {
                match self { $(Command::$variant(c) => Run::run(c, cx, actor, said).await),+ }
            }
        }

        /// Every kind's slash commands, in registry order.
        #[must_use]
        pub fn commands() -> Vec<SlashCommand> {
            let mut all = Vec::new();
            $(all.extend_from_slice(<$kind as Kind>::COMMANDS);)+
            all
        }

        /// Runs the answer to a question gatebot asked (the reply to a "why deny?" or
        /// "why stop?" question, or the form it opened), by the kind that asked it.
        pub async fn answer(
            cx: &Context,
            actor: &Actor,
            subject: &str,
            purpose: Purpose,
            text: Option<String>,
        ) -> Answer {
            $(if <$kind as Kind>::PURPOSES.contains(&purpose) {
                return <$kind as Kind>::answer(cx, actor, subject, purpose, text).await;
            })+
            Answer::Nothing
        }

        /// Whether text written in reply to `subject` (to its card, in its thread) that
        /// is no command is for its kind to read ([`reply`]).
        #[must_use]
        pub fn reads_replies(subject: &Subject) -> bool {
            $(if <$kind as Kind>::SUBJECT == Some(subject.kind) {
                return <$kind as Kind>::READS_REPLIES;
            })+
            false
        }

        /// Runs text written in reply to a subject's card (or in its thread) that is
        /// no command, where the subject's kind reads such text itself
        /// ([`reads_replies`]). The caller has checked the writer is an approver.
        pub async fn reply(cx: &Context, actor: &Actor, subject: &Subject, text: &str) -> Answer {
            $(if <$kind as Kind>::SUBJECT == Some(subject.kind) {
                return <$kind as Kind>::reply(cx, actor, subject, text).await;
            })+
            Answer::Nothing
        }

        /// The card that shows `subject` now, drawn by its kind; `None` if the subject
        /// is gone.
        pub async fn render(engine: &Engine, subject: &Subject) -> Result<Option<Rendered>, EngineError> {
            $(if <$kind as Kind>::SUBJECT == Some(subject.kind) {
                return <$kind as Kind>::render(engine, subject).await;
            })+
            Ok(None)
        }

        /// `/pending`: every kind's part, in registry order.
        pub(crate) async fn pending_parts(cx: &Context) -> Result<Vec<Card>, EngineError> {
            let mut parts = Vec::new();
            $(if let Some(part) = <$kind as Kind>::pending(cx).await? {
                parts.push(part);
            })+
            Ok(parts)
        }

        /// Takes an owner's decision on what `typed` names, by its kind: `subject` is
        /// what the id was identified as (`None`: no subject; the kind that
        /// [decides unshown ids](Kind::DECIDES_UNSHOWN) looks it up).
        pub async fn decide(
            engine: &Engine,
            subject: Option<&Subject>,
            typed: &str,
            decision: OwnerDecision,
        ) -> Result<Decided, Refused> {
            $(match subject {
                Some(s) if <$kind as Kind>::SUBJECT == Some(s.kind) => {
                    return <$kind as Kind>::decide(engine, &s.id, decision).await;
                }
                None if <$kind as Kind>::DECIDES_UNSHOWN => {
                    return <$kind as Kind>::decide(engine, typed, decision).await;
                }
                _ => {}
            })+
            Err(Refused::Engine(EngineError::not_found(
                crate::engine::What::Subject,
                typed,
            )))
        }

        /// `gatebot pending`: every kind's part, in registry order.
        pub async fn listed(engine: &Engine, listing: &Listing) -> Result<Vec<Listed>, EngineError> {
            let mut parts = Vec::new();
            $(if let Some(part) = <$kind as Kind>::listed(engine, listing).await? {
                parts.push(part);
            })+
            Ok(parts)
        }

        /// Every kind's golden cards, named `<kind>-<state>` ([`crate::chat::golden`]).
        #[cfg(test)]
        pub(crate) fn golden_cards() -> Vec<(String, Card)> {
            let mut all = Vec::new();
            $(all.extend(
                <$kind as Kind>::golden_cards()
                    .into_iter()
                    .map(|(state, c)| (format!("{}-{state}", stringify!($variant).to_lowercase()), c)),
            );)+
            all
        }

        /// Every kind's example cards, with the kind's name (the renderers' tests).
        #[cfg(test)]
        pub(crate) fn example_cards() -> Vec<(&'static str, Card)> {
            let mut all = Vec::new();
            $(all.extend(
                <$kind as Kind>::example_cards()
                    .into_iter()
                    .map(|c| (stringify!($variant), c)),
            );)+
            all
        }

        /// Every kind whose buttons read `rest` (button data after the prefix): one at
        /// most, or the first in the list would hide the others.
        #[cfg(test)]
        fn readers(rest: &str) -> Vec<&'static str> {
            let mut all = Vec::new();
            $(if <<$kind as Kind>::Action as Press>::decode(rest).is_some() {
                all.push(stringify!($variant));
            })+
            all
        }

        /// The kinds that draw cards of a subject of theirs.
        #[cfg(test)]
        fn drawing_kinds() -> Vec<&'static str> {
            let mut all = Vec::new();
            $(if <$kind as Kind>::SUBJECT.is_some() {
                all.push(stringify!($variant));
            })+
            all
        }

        /// The kinds that decide ids no subject has, and whether each has subjects.
        #[cfg(test)]
        fn deciding_unshown() -> Vec<(&'static str, bool)> {
            let mut all = Vec::new();
            $(if <$kind as Kind>::DECIDES_UNSHOWN {
                all.push((stringify!($variant), <$kind as Kind>::SUBJECT.is_some()));
            })+
            all
        }

        /// The subject kinds that have a kind drawing their cards.
        #[cfg(test)]
        fn drawn_subjects() -> Vec<SubjectKind> {
            let mut all = Vec::new();
            $(all.extend(<$kind as Kind>::SUBJECT);)+
            all
        }
    };
}

kinds! {
    Approval => approval::Approvals,
    Batch => batch::Batches,
    Digest => digest::Digests,
    Pending => pending::Pending,
    CheckIn => checkin::CheckIns,
    Proposal => proposal::Proposals,
    Task => task::Tasks,
    Agents => agents::Agents,
    Grants => grants::Grants,
    SignIn => signin::SignIn,
    Help => help::Help,
}

impl Action {
    /// Decodes button data; anything gatebot did not produce is an error (forged or
    /// stale data), whose text says so without echoing the data.
    pub fn decode(data: &str) -> Result<Action, String> {
        let bad = || format!("unrecognised button data ({} bytes)", data.len());
        if data.len() > MAX_DATA {
            return Err(bad());
        }
        let rest = data.strip_prefix(DATA_PREFIX).ok_or_else(bad)?;
        Action::decode_kind(rest).ok_or_else(bad)
    }

    /// The button data for this action.
    #[must_use]
    pub fn encode(&self) -> String {
        let data = format!("{DATA_PREFIX}{}", self.encode_kind());
        debug_assert!(data.len() <= MAX_DATA, "{data}");
        data
    }
}

impl Command {
    /// Reads a message as a command. `bot_username` is the bot's own username
    /// on Telegram, used to ignore `/cmd@otherbot`; `in_reply` says the message replies
    /// to (or is in the thread of) a card, which lets a decision omit the id and be
    /// plain words. `None` when the message is not for gatebot.
    #[must_use]
    pub fn parse(text: &str, bot_username: Option<&str>, in_reply: bool) -> Option<Command> {
        match command::parse(text, bot_username) {
            Some(typed) => Command::parse_kind(&typed, in_reply),
            None if in_reply => Command::parse_words_kind(text),
            None => None,
        }
    }
}

/// A subject's card as things stand, for delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub card: Card,
    /// When the subject stops waiting by itself, if it does (Unix ms): the dashboard
    /// counts down to it.
    pub deadline: Option<i64>,
    /// The subject's revision the card shows.
    pub revision: String,
    /// Whether the subject still waits for people (new cards are posted only then).
    pub open: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_kind_with_subjects_decides_ids_no_subject_has() {
        // More than one, and the first in the list would hide the others; none, and
        // `gatebot decide` on a request that never asked would say "no subject".
        assert_eq!(deciding_unshown(), [("Approval", true)]);
    }

    #[test]
    fn a_button_offered_as_an_owners_decision_is_about_its_own_subject() {
        let config = crate::config::parse_in_etc("").unwrap();
        let mut offered = Vec::new();
        for (kind, action) in Action::examples() {
            if let Some(o) = action.offered(&config) {
                assert_eq!(
                    Some(o.subject.as_str()),
                    action.subject(),
                    "{kind}: {action:?}"
                );
                offered.push(kind);
            }
        }
        // Every kind whose cards wait for an owner offers its decisions off the chat too.
        for kind in ["Approval", "CheckIn", "Proposal", "Task"] {
            assert!(
                offered.contains(&kind),
                "{kind} offers no decision: {offered:?}"
            );
        }
    }

    #[test]
    fn every_action_of_every_kind_round_trips_through_the_one_decoder() {
        let all = Action::examples();
        for kind in [
            "Approval", "Batch", "Digest", "CheckIn", "Proposal", "Task", "Agents", "Grants",
        ] {
            assert!(
                all.iter().any(|(k, _)| *k == kind),
                "{kind} has buttons but gives no examples"
            );
        }
        for (kind, action) in all {
            let data = action.encode();
            assert!(
                data.len() <= MAX_DATA,
                "{kind}: {data} is over {MAX_DATA} bytes"
            );
            assert_eq!(Action::decode(&data), Ok(action.clone()), "{kind}: {data}");
            // No other kind reads the same data.
            assert_eq!(readers(&data[DATA_PREFIX.len()..]), [kind], "{data}");
        }
    }

    #[test]
    fn forged_and_oversize_data_is_refused_without_echoing_it() {
        for data in [
            "gb1:zz:01HZZZZZZZZZZZZZZZZZZZZZZZ".to_string(),
            "gb2:a:01HZZZZZZZZZZZZZZZZZZZZZZZ".to_string(),
            format!("gb1:a:{}", "0".repeat(80)),
            "gb1:a:<script>".to_string(),
        ] {
            let err = Action::decode(&data).unwrap_err();
            assert!(!err.contains("script") && !err.contains("01HZ"), "{err}");
        }
    }

    #[test]
    fn command_names_are_unique_and_each_is_read_by_its_kind() {
        let all = commands();
        let mut names: Vec<&str> = all.iter().map(|c| c.name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(names.len(), before, "a command name is listed twice");
        for c in &all {
            let text = format!("/{} k7m2abcd", c.name);
            assert!(
                Command::parse(&text, None, false).is_some(),
                "/{} is listed but no kind reads it",
                c.name
            );
            assert!(c.menu.len() <= 256, "/{}'s menu line is too long", c.name);
        }
    }

    #[test]
    fn every_kind_that_draws_a_subject_gives_example_cards_that_name_it() {
        let cards = example_cards();
        for kind in drawing_kinds() {
            let own: Vec<&Card> = cards
                .iter()
                .filter(|(k, _)| *k == kind)
                .map(|(_, c)| c)
                .collect();
            assert!(!own.is_empty(), "{kind} draws cards but gives no examples");
            assert!(
                own.iter()
                    .any(|c| crate::chat::card::Tag::read(&c.plain()).is_some()),
                "{kind}'s cards carry no subject tag"
            );
        }
    }

    #[test]
    fn every_kind_of_subject_has_one_kind_drawing_its_cards() {
        let drawn = drawn_subjects();
        for kind in SubjectKind::ALL {
            assert_eq!(drawn.iter().filter(|k| **k == kind).count(), 1, "{kind:?}");
        }
    }
}
