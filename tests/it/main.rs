//! Integration tests: one binary so the crate links once.
//! The daemon runs in-process (`helpers::spawn_app`) or as the real binary (`cli`).
//! Chat channels run against fakes on loopback (`fake_telegram`).

mod api;
mod cli;
mod failure;
mod fake_slack;
mod fake_telegram;
mod helpers;
mod hooks;
mod integrations;
mod lifecycle;
mod properties;
mod slack;
mod systemd;
mod telegram;
