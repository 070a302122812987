//! What Telegram and Slack share: command parsing and button data ([`command`]),
//! prompt content ([`prompt`]), authorisation and replies ([`handle`]), durable
//! delivery of prompts and their final edits ([`delivery`]), and digests for bursts
//! ([`digest`]).
//!
//! A channel module (`telegram`, `slack`) only translates: platform updates into
//! [`handle`] calls, and [`prompt::PromptContent`] into the platform's markup.

pub mod command;
pub mod delivery;
pub mod digest;
pub mod handle;
pub mod prompt;
