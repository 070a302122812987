//! Telegram failing as Slack does, handled as Slack's failures are: a 5xx is retried
//! after gatebot's own backoff (about a second, then longer), not after a fixed sleep
//! inside the client library; a 429 is waited out as Telegram asks, and counted.

use std::time::Duration;

use serde_json::json;

use crate::fake_telegram::{Failure, FakeTelegram, User};
use crate::helpers::{eventually, spawn_app, TestApp};

const TOKEN: &str = "616161:AAE-faults-test-token";
const ALICE: User = (42, "Alice");
const CHAT: i64 = 7201;
/// teloxide's `Bot` slept this long after every 5xx before returning the error.
const TELOXIDE_SERVER_ERROR_SLEEP: Duration = Duration::from_secs(10);

async fn start() -> (TestApp, FakeTelegram) {
    let fake = FakeTelegram::start(TOKEN).await;
    let app = spawn_app(&format!(
        "[telegram]\ntoken = \"{TOKEN}\"\napi_url = \"{}\"\nchats = [{CHAT}]\napprovers = [{}]\n",
        fake.url, ALICE.0
    ))
    .await;
    (app, fake)
}

/// The sendMessage calls whose text contains `needle`, once one succeeded.
async fn sends_until_ok(fake: &FakeTelegram, needle: &str) -> Vec<crate::fake_telegram::Call> {
    eventually(&format!("a send containing {needle:?}"), async || {
        let calls: Vec<_> = fake
            .calls("sendMessage")
            .into_iter()
            .filter(|c| {
                c.params["text"]
                    .as_str()
                    .unwrap_or_default()
                    .contains(needle)
            })
            .collect();
        calls.iter().any(|c| c.ok).then_some(calls)
    })
    .await
}

fn rate_limited(metrics: &str) -> Option<u64> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix("gatebot_chat_rate_limited_total{channel=\"telegram\"} "))
        .map(|n| n.parse().unwrap())
}

#[tokio::test]
async fn a_server_error_is_retried_after_about_a_second() {
    let (app, fake) = start().await;
    // A prompt: delivery's backoff.
    fake.fail_next_sends(&[Failure::ServerError]);
    let (_, short) = app
        .submit_pending(json!({"agent": "intern", "tool": "create_contact", "args": {}}))
        .await;
    let calls = sends_until_ok(&fake, &short).await;
    assert_eq!(calls.len(), 2, "one 500, then the prompt");
    let waited = calls[1].at - calls[0].at;
    assert!(
        waited >= Duration::from_secs(1) && waited < TELOXIDE_SERVER_ERROR_SLEEP,
        "retried after {waited:?}"
    );

    // An answer to a command: the reply's own retries.
    fake.fail_next_sends(&[Failure::ServerError]);
    fake.say(ALICE, CHAT, "/help", None);
    let calls = sends_until_ok(&fake, "gatebot asks you before agents take risky actions").await;
    assert_eq!(calls.len(), 2, "one 500, then the answer");
    let waited = calls[1].at - calls[0].at;
    assert!(
        waited >= Duration::from_secs(1) && waited < TELOXIDE_SERVER_ERROR_SLEEP,
        "retried after {waited:?}"
    );
}

#[tokio::test]
async fn a_rate_limit_is_waited_out_and_counted() {
    let (app, fake) = start().await;
    assert_eq!(rate_limited(&app.metrics().await), Some(0));
    // Longer than the first backoff step: only retry_after explains the wait.
    fake.fail_next_sends(&[Failure::RetryAfter(3)]);
    let (id, short) = app
        .submit_pending(json!({"agent": "intern", "tool": "create_contact", "args": {}}))
        .await;
    let calls = sends_until_ok(&fake, &short).await;
    assert_eq!(calls.len(), 2, "one 429, then the prompt");
    let waited = calls[1].at - calls[0].at;
    assert!(waited >= Duration::from_secs(3), "retried after {waited:?}");
    assert_eq!(rate_limited(&app.metrics().await), Some(1));

    // An edit answered 429 is waited out and counted too.
    fake.fail_next_edits(&[Failure::RetryAfter(1)]);
    app.decide_ok(&id, "approve", None).await;
    eventually("the prompt edited to the decision", async || {
        fake.ok_calls("editMessageText")
            .into_iter()
            .find(|p| p["text"].as_str().unwrap().contains("Approved by alice"))
    })
    .await;
    assert_eq!(rate_limited(&app.metrics().await), Some(2));
    let failed_edits = fake
        .calls("editMessageText")
        .iter()
        .filter(|c| !c.ok)
        .count();
    assert_eq!(failed_edits, 1);
}
