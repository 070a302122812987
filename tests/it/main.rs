//! Integration tests: one binary so the crate links once.
//! The daemon runs in-process (`helpers::spawn_app`) or as the real binary (`cli`).

mod api;
mod cli;
mod fake_slack;
mod helpers;
mod lifecycle;
mod slack;
