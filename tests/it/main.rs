//! Integration tests: one binary so the crate links once.
//! The daemon runs in-process (`helpers::spawn_app`) or as the real binary (`cli`).
//! Chat channels run against fakes on loopback (`fake_telegram`, `fake_slack`).
//! Whatever happens in the background is waited for with `helpers::eventually`.
//! The in-process daemons' logs are recorded (`helpers::log_text`, to check no token
//! leaks into them); `TEST_LOG=1 cargo test` also prints them with each test's output.

mod api;
mod cli;
mod failure;
mod fake_slack;
mod fake_telegram;
mod helpers;
mod hooks;
mod integrations;
mod lifecycle;
mod memory;
mod properties;
mod slack;
mod systemd;
mod telegram;
mod trust;
mod trust_chat;
