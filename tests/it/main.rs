//! Integration tests: one binary so the crate links once.
//! The daemon runs in-process (`helpers::spawn_app`) or as the real binary (`cli`).
//! Chat channels run against fakes on loopback (`fake_telegram`, `fake_slack`,
//! `fake_twilio`, `fake_discord`), the
//! inbox's model classifier against `fake_model`. The PostgreSQL schema is checked
//! against SQLite's on a throwaway cluster (`pg_cluster`, `postgres_schema`).
//! Whatever happens in the background is waited for with `helpers::eventually`.
//! The in-process daemons' logs are recorded (`helpers::log_text`, to check no token
//! leaks into them); `TEST_LOG=1 cargo test` also prints them with each test's output.

mod api;
mod audit;
mod budgets;
mod chat_batch;
mod classifier;
mod cli;
mod cli_output;
mod config_errors;
mod connections;
mod dashboard;
mod dashboard_agents;
mod dashboard_audit;
mod dashboard_edit;
mod dashboard_history;
mod dashboard_runs;
mod dashboard_system;
mod dashboard_tasks;
mod discord;
mod discovery;
mod durations;
mod email;
mod failover;
mod failure;
mod fake_discord;
mod fake_model;
mod fake_slack;
mod fake_smtp;
mod fake_telegram;
mod fake_twilio;
mod fake_whatsapp;
mod files;
mod golden_answers;
mod helpers;
mod hooks;
mod idempotency;
mod inbox;
mod inbox_chat;
mod integrations;
mod layout;
mod lifecycle;
mod memory;
mod node_chat;
mod nodes;
mod packaging;
mod pause;
mod pg_cluster;
mod ports;
mod postgres_faults;
mod postgres_schema;
mod postgres_tls;
mod prefix_grants;
mod properties;
mod quotas;
mod recipes;
mod reload;
mod sandbox;
mod setup;
mod slack;
mod sms;
mod startup;
mod step_up;
mod storage;
mod store_copy;
mod systemd;
mod teams;
mod telegram;
mod telegram_faults;
mod trust;
mod trust_chat;
mod unconfirmed_posts;
mod validation;
mod wait;
mod waits;
mod whatsapp;
mod worker;
mod workflow;
mod workflow_chat;
mod workflow_cli;
