//! Edit, then approve, on the dashboard: the arguments in a text box, checked (JSON, an
//! object, within the request size) with the edited call's risk, the policy's words and
//! a diff, then approved as edited through the request kind's owner decision. Bad text
//! decides nothing; only the preview's own button approves, with the call it showed.

use serde_json::{json, Value};

use crate::dashboard::{signed_in, start, Page};

fn edit_path(id: &str) -> String {
    format!("/requests/{id}/edit")
}

/// The value of the preview's hidden `args` field (what "Approve as edited" sends).
fn previewed_args(page: &Page) -> Value {
    let at = page
        .body
        .find(r#"name="args" value=""#)
        .expect("the preview's approve form")
        + r#"name="args" value=""#.len();
    let end = at + page.body[at..].find('"').unwrap();
    let raw = page.body[at..end]
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str(&raw).unwrap()
}

#[tokio::test]
async fn bad_text_is_refused_with_where_it_went_wrong_and_decides_nothing() {
    let app = start().await;
    let b = signed_in(&app).await;
    let (id, short) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email",
            "args": {"to": "<script>window.pwned=1</script>", "body": "hi \u{202e}gnp.exe"}}))
        .await;
    let page = b.get(&edit_path(&short)).await;
    assert_eq!(page.status, 200, "{page:?}");
    // The agent's arguments are text in the box: escaped, never markup.
    assert!(page
        .body
        .contains("&lt;script&gt;window.pwned=1&lt;/script&gt;"));
    assert!(!page.body.contains("<script>window"));
    let csrf = page.csrf();
    let path = edit_path(&id);
    let cases: [(&str, &str); 4] = [
        ("{\"to\": \"bob\",\n \"body\": }", "This is not JSON"),
        ("[\"to\", \"bob\"]", "must be a JSON object"),
        ("", "This is not JSON"),
        ("{\"to\": \"bob\"} trailing", "This is not JSON"),
    ];
    for (text, said) in cases {
        let page = b
            .post(&path, &[("csrf", &csrf), ("step", "check"), ("args", text)])
            .await;
        assert_eq!(page.status, 400, "{text:?}: {page:?}");
        assert!(page.body.contains(said), "{text:?}: {}", page.body);
        assert!(page.body.contains("Nothing was decided"), "{}", page.body);
        assert!(!page.body.contains("Approve as edited"));
    }
    // Where it went wrong, and the text kept as typed.
    let page = b
        .post(
            &path,
            &[("csrf", &csrf), ("step", "check"), ("args", "{\n\"to\": }")],
        )
        .await;
    assert!(page.body.contains("line 2, column"), "{}", page.body);
    assert!(page.body.contains("{\n&quot;to&quot;: }") || page.body.contains("{\n\"to\": }"));
    // Larger than a request may be.
    let big = json!({"body": "x".repeat(70_000)}).to_string();
    let page = b
        .post(
            &path,
            &[("csrf", &csrf), ("step", "approve"), ("args", &big)],
        )
        .await;
    assert_eq!(
        page.status,
        400,
        "{}",
        &page.body[..page.body.len().min(400)]
    );
    assert!(
        page.body.contains("a request may hold at most"),
        "{}",
        &page.body[..2000]
    );
    // A form without the session's token: refused, nothing decided.
    let page = b
        .post(
            &path,
            &[
                ("csrf", "0".repeat(64).as_str()),
                ("step", "approve"),
                ("args", "{\"to\": \"bob\"}"),
            ],
        )
        .await;
    assert_eq!(page.status, 403, "{page:?}");
    assert_eq!(app.get(&id, 0.0).await.body["status"], "pending");
    // No such request, or one decided already: said so, nothing decided.
    let page = b.get("/requests/zzzzzzzz/edit").await;
    assert_eq!(page.status, 404, "{page:?}");
    app.decide_ok(&id, "deny", Some("no")).await;
    let page = b.get(&edit_path(&id)).await;
    assert_eq!(page.status, 409, "{page:?}");
    assert!(page.body.contains("already denied"), "{}", page.body);
    let page = b
        .post(
            &path,
            &[
                ("csrf", &csrf),
                ("step", "approve"),
                ("args", "{\"to\": \"bob\"}"),
            ],
        )
        .await;
    assert_eq!(page.status, 409, "{page:?}");
    assert_eq!(app.get(&id, 0.0).await.body["status"], "rejected");
}

#[tokio::test]
async fn the_preview_shows_the_new_risk_and_a_diff_and_approves_exactly_that_call() {
    let app = start().await;
    let b = signed_in(&app).await;
    // A client that takes the edited call back.
    let res = app
        .submit(
            json!({"agent": "mailer", "tool": "send_email", "accepts_edits": true,
            "args": {"to": "team@example.com", "subject": "Report", "body": "All <b>good</b>"}}),
        )
        .await;
    assert_eq!(res.body["status"], "pending", "{:?}", res.body);
    let id = res.body["id"].as_str().unwrap().to_string();
    let page = b.get("/").await;
    assert!(
        page.body.contains(&format!("href=\"{}\"", edit_path(&id))),
        "{}",
        page.body
    );
    let csrf = page.csrf();
    let path = edit_path(&id);
    // The same arguments: nothing to approve as edited.
    let same = json!({"to": "team@example.com", "subject": "Report", "body": "All <b>good</b>"});
    let page = b
        .post(
            &path,
            &[
                ("csrf", &csrf),
                ("step", "check"),
                ("args", &same.to_string()),
            ],
        )
        .await;
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains("These are the arguments as asked"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("Approve as edited"));
    // Edited: the preview says the risk, what the policy would do, and what changes.
    let edited = json!({"to": "alice@example.com", "subject": "Report", "body": "All <b>good</b>"});
    let text = serde_json::to_string_pretty(&edited).unwrap();
    let page = b
        .post(
            &path,
            &[("csrf", &csrf), ("step", "check"), ("args", &text)],
        )
        .await;
    assert_eq!(page.status, 200, "{page:?}");
    assert!(
        page.body.contains("as asked") || page.body.contains("(was "),
        "{}",
        page.body
    );
    assert!(page.body.contains("gatebot would"), "{}", page.body);
    assert!(
        page.body.contains(
            r#"<span class="del">-  &quot;to&quot;: &quot;team@example.com&quot;</span>"#
        ),
        "{}",
        page.body
    );
    assert!(
        page.body.contains(
            r#"<span class="add">+  &quot;to&quot;: &quot;alice@example.com&quot;</span>"#
        ),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("runs the call as edited, at once"),
        "{}",
        page.body
    );
    assert_eq!(previewed_args(&page), edited);
    assert_eq!(app.get(&id, 0.0).await.body["status"], "pending");
    // Approve as edited: the request is approved with the edited call, by alice here.
    let page = b
        .post(
            &path,
            &[
                ("csrf", &csrf),
                ("step", "approve"),
                ("args", &previewed_args(&page).to_string()),
            ],
        )
        .await;
    assert_eq!(page.status, 200, "{page:?}");
    assert!(page.body.contains("as edited"), "{}", page.body);
    let done = app.wait_for_status(&id, "approved").await;
    assert_eq!(done["edited_args"], edited);
    assert_eq!(done["decided_by"], "alice");
    assert_eq!(done["decided_via"], "dashboard");
    let rows = app.audit_rows(&id).await;
    let decided = rows.iter().find(|r| r["event"] == "decided").unwrap();
    assert_eq!(decided["detail"]["edited_args"], edited);
    assert_eq!(decided["detail"]["asked_args"]["to"], "team@example.com");
}

#[tokio::test]
async fn a_client_that_cannot_take_the_edit_is_denied_with_the_call_which_then_runs_once() {
    let app = start().await;
    let b = signed_in(&app).await;
    let (id, _) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email",
            "args": {"to": "team@example.com", "body": "hi"}}))
        .await;
    let page = b.get(&edit_path(&id)).await;
    let csrf = page.csrf();
    let edited = json!({"to": "alice@example.com", "body": "hi"});
    let page = b
        .post(
            &edit_path(&id),
            &[
                ("csrf", &csrf),
                ("step", "check"),
                ("args", &edited.to_string()),
            ],
        )
        .await;
    assert!(
        page.body.contains("cannot take an edited call back") && page.body.contains("runs once"),
        "{}",
        page.body
    );
    let page = b
        .post(
            &edit_path(&id),
            &[
                ("csrf", &csrf),
                ("step", "approve"),
                ("args", &edited.to_string()),
            ],
        )
        .await;
    assert_eq!(page.status, 200, "{page:?}");
    assert!(
        page.body.contains("told the exact call to make"),
        "{}",
        page.body
    );
    assert!(page.body.contains("once, until"), "{}", page.body);
    let done = app.wait_for_status(&id, "rejected").await;
    assert!(
        done["reason"]
            .as_str()
            .unwrap()
            .contains(r#"{"body":"hi","to":"alice@example.com"}"#)
            || done["reason"]
                .as_str()
                .unwrap()
                .contains(&edited.to_string()),
        "{done}"
    );
    // The agent makes exactly that call: it runs, once.
    let first = app.submit_ok("mailer", "send_email", edited.clone()).await;
    assert_eq!(first["status"], "allowed", "{first}");
    let second = app.submit_ok("mailer", "send_email", edited).await;
    assert_eq!(second["status"], "pending", "{second}");
}
