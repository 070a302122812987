//! The dashboard's runs pages over HTTP: workflow runs by status and agent, and one
//! run's events and problems as a timeline with its check-ins and their answers.

use serde_json::{json, Value};

use crate::dashboard::{signed_in, Browser};
use crate::helpers::TestApp;

async fn event(app: &TestApp, run: &str, body: Value) -> Value {
    let res = app
        .agent
        .post(&format!("/v1/runs/{run}/events"), &body)
        .await
        .unwrap();
    assert_eq!(res.status, 200, "{:?}", res.body);
    res.body
}

const HOSTILE: &str = "<img src=x onerror=alert(1)> \u{202e}gnp.exe";

#[tokio::test]
async fn a_runs_timeline_shows_its_events_problems_and_check_ins_with_their_answers() {
    let app = crate::dashboard::start().await;
    let b = signed_in(&app).await;
    let started = app
        .agent
        .post(
            "/v1/runs",
            &json!({"agent": "mailer", "title": format!("Release {HOSTILE}")}),
        )
        .await
        .unwrap();
    assert_eq!(started.status, 201, "{:?}", started.body);
    let id = started.body["id"].as_str().unwrap().to_string();
    let short = started.body["short_id"].as_str().unwrap().to_string();
    event(
        &app,
        &id,
        json!({"type": "step_complete", "phase": "build", "step": "lint",
               "warnings": [{"text": format!("style {HOSTILE}"), "severity": "low"}],
               "artifacts": [{"name": "report", "url": "javascript:alert(1)"},
                             {"name": "log", "url": "https://ci.example/1"}]}),
    )
    .await;
    let waits = event(
        &app,
        &id,
        json!({"type": "phase_complete", "phase": "build"}),
    )
    .await;
    assert_eq!(waits["action"], "wait", "{waits}");
    let check_in = waits["check_in"]["short_id"].as_str().unwrap().to_string();

    let list = b.get("/runs").await;
    assert_eq!(list.status, 200);
    assert!(list.body.contains(&short), "{}", list.body);
    assert!(
        list.body.contains("waiting for you at a check-in"),
        "{}",
        list.body
    );
    assert!(list.body.contains("Release &lt;img"), "{}", list.body);
    let page = b.get(&format!("/runs/{id}")).await;
    assert_eq!(page.status, 200, "{page:?}");
    for needle in [
        "#1",
        "step complete",
        "build › lint",
        "style &lt;img src=x onerror=alert(1)&gt;",
        "Check-in: build complete. Continue?",
        "waiting for the owner",
        r#"<a href="https://ci.example/1""#,
        "answer it",
    ] {
        assert!(page.body.contains(needle), "{needle}: {}", page.body);
    }
    assert!(page.body.contains(&check_in));
    assert!(!page.body.contains("<img") && !page.body.contains('\u{202e}'));
    assert!(!page.body.contains("href=\"javascript"), "{}", page.body);
    assert!(!page.body.contains("style="));

    // Answered on the command line: the page says who, when and why.
    app.decide_ok(&check_in, "continue", Some("ship it")).await;
    let page = b.get(&format!("/runs/{short}")).await;
    assert_eq!(page.status, 200);
    assert!(
        page.body
            .contains("continued by alice on the command line: ship it"),
        "{}",
        page.body
    );
    // Filters in the URL; values that are not the page's words say so.
    assert!(b.get("/runs?status=running").await.body.contains(&short));
    assert!(!b.get("/runs?status=stopped").await.body.contains(&short));
    assert!(!b.get("/runs?agent=boss").await.body.contains(&short));
    for q in ["status=bogus", "agent=%3Cscript%3E", "after=%00"] {
        let p = b.get(&format!("/runs?{q}")).await;
        assert_eq!(p.status, 200, "{q}: {p:?}");
        assert!(!p.body.contains("<script>"));
    }
    assert!(b
        .get("/runs?status=bogus")
        .await
        .body
        .contains("not one this page knows"));
    // Ids that name nothing.
    for path in ["/runs/nothing", "/runs/%3Cimg%3E"] {
        let p = b.get(path).await;
        assert_eq!(p.status, 404, "{path}: {p:?}");
        assert!(!p.body.contains("<img"));
    }
    assert_eq!(Browser::new(&app).get("/runs").await.status, 303);
}
