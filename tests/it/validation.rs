//! Input agents send that gatebot must refuse with a clear error (and lose nothing
//! else over): names that could pose as other names, confidences that are no number
//! between 0 and 1, lifetimes under a second. At the API, and through `gatebot ask`.

use std::process::Output;

use serde_json::json;
use tokio::process::Command;

use crate::helpers::spawn_app;

const BIN: &str = env!("CARGO_BIN_EXE_gatebot");

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[tokio::test]
async fn names_with_hidden_characters_are_refused_with_where_they_are() {
    let app = spawn_app("").await;
    for (agent, tool, says) in [
        (
            "mailer",
            "send\u{200B}_email",
            "`tool` contains an invisible or control character (U+200B at character 5)",
        ),
        ("mailer", "send_\u{202E}liame", "(U+202E at character 6)"),
        (
            "mailer",
            "send\u{2066}_email\u{2069}",
            "(U+2066 at character 5)",
        ),
        ("mailer", "send\u{00A0}email", "(U+00A0 at character 5)"),
        ("mailer", "\u{FEFF}send_email", "(U+FEFF at character 1)"),
        (
            "mail\u{200B}er",
            "send_email",
            "`agent` contains an invisible or control character (U+200B at character 5)",
        ),
        ("mail\u{202E}er", "send_email", "(U+202E at character 5)"),
    ] {
        let res = app
            .submit(json!({"agent": agent, "tool": tool, "args": {}}))
            .await;
        assert_eq!(res.status, 422, "{agent:?} {tool:?}: {:?}", res.body);
        assert_eq!(res.body["error"]["code"], "invalid_request");
        let message = res.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{message}");
    }
    // Nothing of it was stored, so nothing poses in `pending`.
    let pending = app.owner.get("/v1/requests?status=pending").await.unwrap();
    assert_eq!(pending.body["requests"], json!([]));
    // Any script, with plain spaces, is fine.
    let res = app
        .submit(json!({"agent": "intern", "tool": "écrire fichier", "args": {}}))
        .await;
    assert_eq!(res.status, 201, "{:?}", res.body);
}

#[tokio::test]
async fn confidences_and_ttls_out_of_range_are_refused_at_the_api() {
    let app = spawn_app("").await;
    let submit = |extra: &str| {
        let body =
            format!(r#"{{"agent": "intern", "tool": "create_contact", "args": {{}}, {extra}}}"#);
        let agent = app.agent.clone();
        async move {
            agent
                .send(hyper::Method::POST, "/v1/requests", Some(body.into_bytes()))
                .await
                .unwrap()
        }
    };
    for (extra, status, says) in [
        (r#""confidence": 1e999"#, 400, "number out of range"),
        (
            r#""confidence": "NaN""#,
            400,
            "`confidence`: invalid type: string \"NaN\", expected a number",
        ),
        (
            r#""confidence": 1.5"#,
            422,
            "`confidence` must be between 0.0 and 1.0",
        ),
        (
            r#""confidence": -0.1"#,
            422,
            "`confidence` must be between 0.0 and 1.0",
        ),
        (
            r#""ttl": "500ms""#,
            422,
            "`ttl` must be from 1 second to 7 days",
        ),
        (r#""ttl": "8000y""#, 422, "8000 years is longer"),
        (r#""ttl": "0s""#, 422, "`ttl`"),
    ] {
        let res = submit(extra).await;
        assert_eq!(res.status, status, "{extra}: {:?}", res.body);
        let message = res.body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{extra}: {message}");
    }
    let res = submit(r#""ttl": "1s", "confidence": 0.0"#).await;
    assert_eq!(res.status, 201, "{:?}", res.body);
}

async fn ask(socket: &std::path::Path, extra: &[&str]) -> Output {
    Command::new(BIN)
        .args([
            "ask",
            "--agent",
            "intern",
            "--tool",
            "create_contact",
            "--wait",
            "1s",
        ])
        .args(extra)
        .arg("--socket")
        .arg(socket)
        .output()
        .await
        .unwrap()
}

#[tokio::test]
async fn ask_refuses_a_confidence_that_is_no_number_and_a_ttl_under_a_second() {
    let app = spawn_app("").await;
    let socket = app.path().join("gatebot.sock");
    for (extra, says) in [
        (["--confidence", "NaN"], "is not a number from 0.0 to 1.0"),
        (["--confidence", "inf"], "is not a number from 0.0 to 1.0"),
        (
            ["--confidence=-inf", "--env=x"],
            "is not a number from 0.0 to 1.0",
        ),
        (["--confidence", "1.01"], "is not a number from 0.0 to 1.0"),
        (["--ttl", "500ms"], "`ttl` must be from 1 second to 7 days"),
        (["--ttl", "8000y"], "8000 years is longer"),
    ] {
        let out = ask(&socket, &extra).await;
        assert_eq!(
            out.status.code(),
            Some(2),
            "{extra:?}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains(says),
            "{extra:?}: {}",
            text(&out.stderr)
        );
    }
    let pending = app.owner.get("/v1/requests?status=pending").await.unwrap();
    assert_eq!(pending.body["requests"], json!([]), "nothing was queued");
    // A real confidence still gates: a supervised agent's call waits (exit 3).
    let out = ask(&socket, &["--confidence", "0.9"]).await;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
}
