//! Golden files of the chat answers built from the engine's data (`/agents`, `/agent
//! NAME`, `/grants`), as Telegram and Slack show them: `tests/golden/answers/<renderer>/`.
//! The cards that kinds draw from a subject alone are the library's golden files
//! (`chat::golden`); these need a daemon with agents, evidence and a grant. Times and
//! ids that differ from run to run are written as `<time>` and `<id>`.
//! `GATEBOT_BLESS=1 cargo test golden` writes the files anew.

use std::path::PathBuf;

use gatebot::chat::card::Card;
use gatebot::chat::memory::Memory;
use serde_json::json;

use crate::helpers::{alice, spawn_app_with_memory};

const CHAT: &str = "ops";

/// `text` with what differs between runs written as placeholders.
fn steady(text: &str, ids: &[String]) -> String {
    let clock = regex::Regex::new(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC").unwrap();
    let mut text = clock.replace_all(text, "<time>").into_owned();
    for id in ids {
        text = text.replace(id.as_str(), "<id>");
    }
    text
}

fn check(drawn: &[(&str, Card)], ids: &[String]) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/answers");
    let bless = std::env::var_os("GATEBOT_BLESS").is_some();
    let mut differ = String::new();
    for (name, card) in drawn {
        for (renderer, text) in [
            ("telegram", gatebot::telegram::render::shown(card)),
            ("slack", gatebot::slack::render::shown(card)),
        ] {
            let path = dir.join(renderer).join(format!("{name}.txt"));
            let text = steady(&text, ids);
            if bless {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, &text).unwrap();
            } else if std::fs::read_to_string(&path).unwrap_or_default() != text {
                differ.push_str(&format!(
                    "\n== {} differs; drawn now:\n{text}",
                    path.display()
                ));
            }
        }
    }
    assert!(
        differ.is_empty(),
        "golden answers differ (GATEBOT_BLESS=1 cargo test golden writes them):{differ}"
    );
}

#[tokio::test]
async fn golden_agents_and_grants_answers_read_as_kept() {
    let memory = Memory::new(&[CHAT], 5);
    let app = spawn_app_with_memory(tempfile::tempdir().unwrap(), "", &memory).await;
    // One request approved with a grant: evidence, and a grant in force.
    let (id, short) = app
        .submit_pending(
            json!({"agent": "mailer", "tool": "send_email", "args": {"to": "ann@example.com"}}),
        )
        .await;
    let decided = app
        .owner_as("alice")
        .post(
            &format!("/v1/requests/{id}/decision"),
            &json!({"decision": "approve-always"}),
        )
        .await
        .unwrap();
    assert_eq!(decided.status, 200, "{:?}", decided.body);
    let grant = decided.body["grant"]["short_id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut drawn = Vec::new();
    for (name, said) in [
        ("agents", "/agents"),
        ("agent", "/agent mailer"),
        ("grants", "/grants"),
    ] {
        let answer = memory.say(&alice(), CHAT, said, None).await;
        let card = answer
            .card()
            .unwrap_or_else(|| panic!("{said}: {answer:?}"))
            .clone();
        drawn.push((name, card));
    }
    check(&drawn, &[short, grant]);
    app.stop().await;
}
