//! Integration tests: one binary so the crate links once.
//! The daemon runs in-process (`helpers::spawn_app`) or as the real binary (`cli`).
//! Chat channels run against fakes on loopback (`fake_telegram`).

mod api;
mod cli;
mod fake_telegram;
mod helpers;
mod lifecycle;
mod telegram;
