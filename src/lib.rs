//! gatebot: a daemon that stands between AI agents and the actions they want to take.
//!
//! # Layout
//! - [`policy`]: pure risk scoring and the allow / ask / block decision.
//! - [`approval`]: the approval record, its statuses and verbs.
//! - [`config`]: `bot.toml`, validated with key paths and line numbers; one module per
//!   section (the `[telegram]` and `[slack]` tables are read by those channels).
//! - [`time`]: durations as the config writes them, Unix milliseconds, timestamps.
//! - [`names`]: which agent names gatebot accepts.
//! - [`secret`]: tokens that never reach a log line.
//! - [`store`]: SQLite (WAL), a file per concern: approvals (with always-allow additions),
//!   the append-only audit chain, chat bookkeeping (which message shows which request).
//! - [`engine`]: the only code that changes an approval's state; the event bus; expiry.
//! - [`api`]: the HTTP/JSON API on Unix sockets (and optional TCP), the daemon's side.
//! - [`channel`]: what the chat channels share: commands, prompts, replies, delivery.
//! - [`telegram`]: the Telegram channel (prompts, buttons, commands over the Bot API).
//! - [`slack`]: the Slack channel (Socket Mode or HTTP events), on top of [`channel`].
//! - [`daemon`]: builds the pieces, runs them, shuts them down gracefully.
//! - [`systemd`]: socket activation and the notify protocol, without libsystemd.
//! - [`metrics`]: counters for the Prometheus endpoint.
//! - [`telemetry`]: logging, plain or JSON lines on stderr.
//! - [`guidance`]: what an agent's system prompt should say about its tier.
//! - [`wire`]: the API's JSON shapes and limits, shared by the daemon and its clients.
//! - [`hooks`]: Claude Code, Codex and Gemini CLI hooks, over any transport: payloads,
//!   answers, and the submit-wait-answer loop within the agent's hook timeout.
//! - [`client`]: everything that talks to the daemon over its sockets: the socket
//!   client, the `gatebot` command line, the hook process and the MCP approval tool.
//!
//! [`api`] and [`client`] both build on [`hooks`] and [`wire`], and neither of those
//! uses the daemon's modules, so the client side cannot depend on the daemon's insides.

pub mod api;
pub mod approval;
pub mod chat;
pub mod client;
pub mod config;
pub mod daemon;
pub mod engine;
pub mod guidance;
pub mod hooks;
pub mod metrics;
pub mod names;
pub mod policy;
pub mod retry;
pub mod secret;
pub mod slack;
pub mod store;
pub mod systemd;
pub mod telegram;
pub mod telemetry;
pub mod time;
pub mod wire;
