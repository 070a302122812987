//! gatebot: a daemon that stands between AI agents and the actions they want to take.
//!
//! # Layout
//! The domain, pure and shared:
//! - [`approval`]: the approval record, its statuses, verbs and where a decision came from;
//!   `approval::votes`, team approvals: the approval rule stored with a routed request, who
//!   may vote on it, where its votes leave it (N of M, deny wins), its progress in words.
//! - [`budget`]: spend limits (credit gating): the day and month in the budget's time
//!   zone, the check a declared cost must pass, the warnings, their words.
//! - [`policy`]: pure risk scoring and the allow / ask / block decision; `policy::shell`
//!   reads shell commands as bash does and knows which only read.
//! - [`wire`]: the API's JSON shapes and limits, shared by the daemon and its clients.
//! - [`hooks`]: agent hook payloads and answers, and the submit-wait-answer loop within a
//!   hook's timeout, over any transport.
//! - [`inbox`]: tasks owners hand to agents: intents, the keyword classifier and the
//!   optional model classifier, the lifecycle table, failure and pending-input detection,
//!   how the worker reads output, and the task API's JSON shapes.
//! - [`workflow`]: workflow check-ins: runs, their events, frequency and tolerances,
//!   and the pure evaluation of each event.
//! - [`trust`]: agent trust from evidence: the evidence and the promotion assessment,
//!   proposals, tier overrides, pauses, and grants with their scopes and matching.
//! - [`factor`]: second factors for step-up approvals: TOTP secrets, their `otpauth://`
//!   URI and QR code, checking a code.
//! - [`words`]: how gatebot says things to people (durations, instants, tiers, risk), the
//!   one human-text layer cards, the CLI and the dashboard share.
//! - [`time`], [`names`], [`secret`], [`retry`], [`https`]: durations and timestamps; which
//!   names are accepted; tokens that never reach a log (and the one scrubber); the one
//!   backoff; the one connector outbound API clients build on.
//!
//! The daemon:
//! - [`config`]: `bot.toml`, validated with key paths and lines; a module per section,
//!   each chat platform's table among them (`config::telegram`, `config::slack`,
//!   `config::sms`, `config::whatsapp`, `config::discord`).
//! - [`settings`]: what reading any table of `bot.toml` takes (the error naming a key
//!   and its line, secrets, paths, ranges), shared by `config`'s sections and the
//!   platforms' tables; it uses neither.
//! - `store` (private to the crate): SQLite (WAL), or PostgreSQL with `[store] url`:
//!   approvals, the audit chain, chat bookkeeping, workflow runs, tasks, trust, and the
//!   evidence's running counts per agent and hour. Only [`engine`] uses it, and
//!   `gatebot store copy` (`store::copy`, offline: a SQLite file into PostgreSQL). Its schema
//!   is `migrations/sqlite/` and `migrations/postgres/`. Its table files speak SQL
//!   through `store::sql`, a layer that does not name the database; `store::pg` holds
//!   PostgreSQL's connections and migrations, `store::pg_tls` TLS to it; `store::nodes` the nodes' rows and leases,
//!   `store::fence` what a write carries from its work. `engine::cluster` is the node
//!   among others on one PostgreSQL database: it follows what they change, and leads
//!   (chat delivery, Telegram's poller, Discord's Gateway, the timers) while it holds
//!   the lease; every node hears the chats' webhooks and Slack's connections.
//! - [`subject`]: what chats show and owners act on, of every kind: subject kinds,
//!   homes and threads, which message shows what, digests, the questions asked.
//! - [`engine`]: the only code that changes state: submit, decide, expire; workflow runs
//!   and check-ins; tasks (create, claim under leases, report, answer, time out); trust
//!   (tiers, pauses, grants, assessments and their schedule); the gate every agent
//!   passes (its pause, what it may hold open at once); the event bus; typed reads
//!   for the API; chat state for conversations and delivery.
//! - [`api`]: the HTTP/JSON API on Unix sockets (and optional TCP), a file per route.
//! - [`chat`]: one conversation mechanism for every platform: cards and the subject tag,
//!   the conversation kinds and their registry (which the API's decide and pending routes
//!   use too: one place per kind), the exchange vocabulary they share with
//!   the inbound layer, durable delivery, the platform trait, and an in-memory platform
//!   for tests.
//! - [`dashboard`]: the web dashboard on its own listener: sign-in links and sessions,
//!   the pending page (every kind's card, drawn through the registry, its buttons taken
//!   through the kinds' owner decisions), batch decisions, edit-then-approve, drafts,
//!   the agents, tasks, runs, history, audit and system pages, second factors and the
//!   step-up confirm page, live updates from the engine's bus.
//! - [`email`]: prompts by e-mail, a platform with no inbound side: a mail per card
//!   with a single-use sign-in link into the dashboard, where the person answers.
//! - [`telegram`], [`slack`], [`sms`], [`discord`]: platform adapters: rendering cards,
//!   translating updates; each platform's settings (in `config`) describe it
//!   ([`settings::PlatformSettings`]). `sms` sends through a gateway trait (Twilio first);
//!   `discord` is a bot on the Gateway (twilight), with no public URL.
//! - [`whatsapp`]: the WhatsApp Cloud API adapter: interactive cards with reply buttons
//!   within the 24-hour window, the approved template outside it, signed webhooks.
//! - [`platforms`]: the registry, the one list that names the adapters; the daemon
//!   starts the platforms `bot.toml` turns on from it.
//! - [`daemon`]: builds the pieces, runs them, shuts them down gracefully.
//! - [`limits`]: per-agent quotas: token buckets for requests, runs, events, task calls
//!   and bytes, taken by every route an agent writes through (kept in memory).
//! - [`serve`], [`peer`]: each listener's accept loop (connection caps, timeouts,
//!   graceful shutdown); who is on the other end of a Unix socket.
//! - [`files`]: the modes of the files, directories and sockets gatebot creates.
//! - [`diff`]: a line diff (the set-up commands' `--dry-run`, the dashboard's edit page).
//! - [`systemd`], [`metrics`], [`telemetry`], [`guidance`]: socket activation and notify;
//!   Prometheus counters; logging; what an agent's prompt should say about its tier.
//!
//! The client side:
//! - [`client`]: everything that talks to the daemon over its sockets or TCP: the API
//!   client (failing over between several daemons' endpoints), where every command finds
//!   the daemon, the `gatebot` command line (a file per command,
//!   `gatebot worker` and the set-up commands among them; its shell completion and man
//!   pages, made from the same definitions), the hook process, the MCP tool.
//!
//! [`api`] and [`client`] both build on [`hooks`], [`wire`] and [`inbox`], and none of those uses
//! the daemon's modules, so the client side cannot depend on the daemon's insides.
//! `docs/architecture.md` draws the flow and says where to add a conversation kind or a
//! chat platform.

pub mod api;
pub mod approval;
pub mod budget;
pub mod chat;
pub mod client;
pub mod config;
pub mod daemon;
pub mod dashboard;
pub mod diff;
pub mod discord;
pub mod email;
pub mod engine;
pub mod factor;
pub mod files;
pub mod guidance;
pub mod hooks;
pub mod https;
pub mod inbox;
pub mod limits;
pub mod metrics;
pub mod names;
pub mod peer;
pub mod platforms;
pub mod policy;
pub mod retry;
pub mod secret;
pub mod serve;
pub mod settings;
pub mod slack;
pub mod sms;
pub(crate) mod store;
pub mod subject;
pub mod systemd;
pub mod telegram;
pub mod telemetry;
pub mod time;
pub mod trust;
pub mod whatsapp;

pub mod wire;
pub mod words;
pub mod workflow;

/// The store's pieces `benches/gatebot.rs` times directly (an event's one durable
/// transaction, the content hash), and `tests/it/postgres_schema.rs` opens (a new
/// database, for its schema). Not an API: only the engine uses the store.
#[doc(hidden)]
pub mod bench_internals {
    pub use crate::store::{
        content_hash, Inserted, NewApproval, NewEvent, NewRun, Recorded, RunInserted, Store, Voted,
    };
}
