//! Integration tests: one binary so the crate links once.
//! The daemon runs in-process (`helpers::spawn_app`) or as the real binary (`cli`).

mod api;
mod cli;
mod failure;
mod helpers;
mod hooks;
mod integrations;
mod lifecycle;
mod properties;
mod systemd;
