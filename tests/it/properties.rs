//! Property tests: arbitrary bytes against every parser that takes outside input (a
//! stand-in for cargo fuzz that runs in CI: no panic, ever). The approval state
//! machine's property test is a unit test of the store (`src/store/properties.rs`).

use gatebot::chat::conversation::{Action, Command};
use proptest::prelude::*;
use serde_json::json;

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn chat_command_parsing_never_panics(text in ".{0,300}", reply in any::<bool>()) {
        let _ = Command::parse(&text, Some("gatebot"), reply);
        let _ = Command::parse(&text, None, reply);
    }

    #[test]
    fn button_data_decoding_never_panics_and_accepts_only_ours(data in ".{0,80}") {
        if let Ok(action) = Action::decode(&data) {
            prop_assert!(data.starts_with("gb1:"));
            if let Action::Approval(a) = &action {
                prop_assert_eq!(a.id.len(), 26);
            }
            // Only ours decode, and they round-trip.
            prop_assert_eq!(action.encode(), data);
        }
    }

    #[test]
    fn hook_payload_parsing_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let text = String::from_utf8_lossy(&bytes);
        for kind in [gatebot::hooks::Kind::ClaudeCode, gatebot::hooks::Kind::Codex, gatebot::hooks::Kind::Gemini] {
            let _ = gatebot::hooks::parse(kind, &text);
        }
    }

    #[test]
    fn request_bodies_never_panic_the_parser(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = serde_json::from_slice::<gatebot::wire::SubmitBody>(&bytes);
        let _ = serde_json::from_slice::<gatebot::wire::DecisionBody>(&bytes);
        let _ = serde_json::from_slice::<gatebot::wire::ResultBody>(&bytes);
    }
}

/// Random bytes against the live daemon's submit route: always a 4xx JSON error,
/// never a 5xx, and the daemon keeps answering.
#[tokio::test]
async fn random_bodies_against_the_daemon_get_4xx_and_store_nothing() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let app = crate::helpers::spawn_app("").await;
    let mut runner = TestRunner::deterministic();
    let strategy = proptest::collection::vec(any::<u8>(), 0..600);
    for _ in 0..200 {
        let body = strategy.new_tree(&mut runner).unwrap().current();
        let res = app
            .agent
            .send(hyper::Method::POST, "/v1/requests", Some(body.clone()))
            .await
            .unwrap();
        assert!(
            res.status.is_client_error(),
            "{} for {:?}",
            res.status,
            String::from_utf8_lossy(&body)
        );
        assert!(res.error_code().is_some());
    }
    let all = app.owner.get("/v1/requests").await.unwrap();
    assert!(all.body["requests"].as_array().unwrap().is_empty());
    app.submit_ok("mailer", "query_org_data", json!({})).await;
}
