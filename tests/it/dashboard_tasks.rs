//! The dashboard's tasks page over HTTP: tasks by status and agent, their progress,
//! result and the requests made inside them; a task handed over, cancelled and retried
//! there as `gatebot task add|cancel|retry` do, by the person on the dashboard.

use serde_json::json;

use crate::dashboard::{signed_in, Browser};
use crate::dashboard_agents::{audited, by};
use crate::helpers::{spawn_app, TestApp};
use crate::inbox::{claim, report, task, with_inbox};

async fn start() -> TestApp {
    spawn_app(&format!(
        "{}\n{}",
        crate::dashboard::config(),
        with_inbox("", "")
    ))
    .await
}

const HOSTILE: &str = "<img src=x onerror=alert(1)> javascript:alert(1) \u{202e}gnp.exe";

#[tokio::test]
async fn a_task_is_handed_over_here_as_the_cli_does_and_its_text_stays_text() {
    let app = start().await;
    let b = signed_in(&app).await;
    let page = b.get("/tasks").await;
    assert_eq!(page.status, 200, "{page:?}");
    assert!(page.body.contains("Hand over a task"), "{}", page.body);
    let csrf = page.csrf();
    let text = format!("look into the flaky deploy {HOSTILE}");
    let forged = b
        .post("/tasks", &[("csrf", "0"), ("text", text.as_str())])
        .await;
    assert_eq!(forged.status, 403);
    let added = b
        .post(
            "/tasks",
            &[
                ("csrf", csrf.as_str()),
                ("text", text.as_str()),
                ("agent", "claude-code"),
                ("intent", "code_change"),
            ],
        )
        .await;
    assert_eq!(
        (added.status, added.header("location").as_deref()),
        (303, Some("/tasks")),
        "{added:?}"
    );
    let listed = app.owner.get("/v1/tasks").await.unwrap().body["tasks"].clone();
    let t = &listed[0];
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(t["agent"], "claude-code");
    assert_eq!(t["intent"], "code_change");
    let row = audited(&app, "task_created").await.pop().unwrap();
    assert_eq!(by(&row), ("alice", "dashboard"), "{row}");

    let page = b.get("/tasks").await;
    let short = t["short_id"].as_str().unwrap();
    assert!(page.body.contains(short), "{}", page.body);
    assert!(page.body.contains("&lt;img src=x onerror=alert(1)&gt;"));
    assert!(!page.body.contains("<img") && !page.body.contains('\u{202e}'));
    assert!(!page.body.contains("href=\"javascript") && !page.body.contains("style="));
    assert!(page.body.contains("by alice"), "{}", page.body);

    // Bad input: said in words, nothing handed over.
    for (form, needle) in [
        (vec![("text", "   ")], "empty"),
        (
            vec![("text", "x"), ("intent", "world_domination")],
            "unknown intent",
        ),
        (vec![("text", "x"), ("agent", "<b>")], "letters, digits"),
    ] {
        let mut form = form;
        form.push(("csrf", csrf.as_str()));
        let p = b.post("/tasks", &form).await;
        assert!(p.status == 400 || p.status == 409, "{p:?}");
        assert!(p.body.contains(needle), "{needle}: {}", p.body);
        assert!(!p.body.contains("<b>"));
    }
    assert_eq!(
        app.owner.get("/v1/tasks").await.unwrap().body["tasks"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn tasks_are_filtered_show_progress_results_and_their_requests_and_are_cancelled_and_retried()
{
    let app = start().await;
    let b = signed_in(&app).await;
    let one = crate::inbox::add_ok(&app, "write the release notes").await;
    let two = crate::inbox::add_ok(&app, "tidy the changelog").await;
    let (one_id, two_id) = (
        one["id"].as_str().unwrap().to_string(),
        two["id"].as_str().unwrap().to_string(),
    );
    // The agent claims the first, reports progress, and asks something inside it.
    let claimed = claim(&app, "claude-code", 5.0).await;
    assert_eq!(claimed["id"], one_id.as_str());
    let lease = claimed["lease"].as_str().unwrap();
    let r = report(
        &app,
        "claude-code",
        &one_id,
        "progress",
        json!({"lease": lease, "text": format!("halfway {HOSTILE}")}),
    )
    .await;
    assert!(r.status.is_success(), "{:?}", r.body);
    let asked = app
        .submit(json!({"agent": "claude-code", "tool": "send_email", "args": {"to": "a@example.com"}, "task_id": one_id}))
        .await;
    assert_eq!(asked.status, 201, "{:?}", asked.body);
    let request_short = asked.body["short_id"].as_str().unwrap().to_string();

    let page = b.get("/tasks?status=running").await;
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains(one["short_id"].as_str().unwrap()),
        "{}",
        page.body
    );
    assert!(!page.body.contains(two["short_id"].as_str().unwrap()));
    assert!(page.body.contains("halfway &lt;img"), "{}", page.body);
    assert!(
        page.body.contains("Requests made inside it (1)"),
        "{}",
        page.body
    );
    assert!(page.body.contains(&request_short));
    assert!(!page.body.contains("<img"));
    let page = b.get("/tasks?status=queued&agent=claude-code").await;
    assert!(page.body.contains(two["short_id"].as_str().unwrap()));
    assert!(!page.body.contains(one["short_id"].as_str().unwrap()));
    // Filter values that are not the page's words: a note, never a failure.
    for q in [
        "status=bogus",
        "agent=%3Cscript%3E",
        "after=abc",
        "status=%E2%80%AE",
    ] {
        let p = b.get(&format!("/tasks?{q}")).await;
        assert_eq!(p.status, 200, "{q}: {p:?}");
        assert!(
            !p.body.contains("<script>") && !p.body.contains('\u{202e}'),
            "{q}"
        );
    }
    assert!(b
        .get("/tasks?status=bogus")
        .await
        .body
        .contains("not one this page knows"));

    // Cancel the running one (its waiting request is withdrawn, as for the CLI's cancel).
    let csrf = page.csrf();
    let back = "/tasks?status=running";
    let forged = b
        .post(
            &format!("/tasks/{one_id}/cancel"),
            &[("csrf", "x"), ("back", back)],
        )
        .await;
    assert_eq!(forged.status, 403);
    let cancelled = b
        .post(
            &format!("/tasks/{one_id}/cancel"),
            &[("csrf", csrf.as_str()), ("back", back)],
        )
        .await;
    assert_eq!(
        (cancelled.status, cancelled.header("location").as_deref()),
        (303, Some(back)),
        "{cancelled:?}"
    );
    assert_eq!(task(&app, &one_id).await["status"], "cancelled");
    let row = audited(&app, "task_cancelled").await.pop().unwrap();
    assert_eq!(by(&row), ("alice", "dashboard"), "{row}");
    let withdrawn = app.get(asked.body["id"].as_str().unwrap(), 0.0).await.body;
    assert_eq!(withdrawn["status"], "cancelled", "{withdrawn}");
    // Twice: said in words.
    let again = b
        .post(
            &format!("/tasks/{one_id}/cancel"),
            &[("csrf", csrf.as_str())],
        )
        .await;
    assert_eq!(again.status, 409, "{again:?}");
    // Done, with Retry; retried, it is queued again.
    let done = b.get("/tasks?status=done").await;
    assert!(
        done.body.contains(&format!("/tasks/{one_id}/retry")),
        "{}",
        done.body
    );
    let retried = b
        .post(
            &format!("/tasks/{one_id}/retry"),
            &[("csrf", csrf.as_str()), ("back", "https://evil.example/")],
        )
        .await;
    assert_eq!(
        (retried.status, retried.header("location").as_deref()),
        (303, Some("/tasks")),
        "{retried:?}"
    );
    assert_eq!(task(&app, &one_id).await["status"], "queued");
    let row = audited(&app, "task_retried").await.pop().unwrap();
    assert_eq!(by(&row), ("alice", "dashboard"), "{row}");
    // An id that names no task.
    let missing = b
        .post("/tasks/nothing/cancel", &[("csrf", csrf.as_str())])
        .await;
    assert_eq!(missing.status, 404, "{missing:?}");
    let _ = two_id;
    // Signed out: no page, no change.
    assert_eq!(Browser::new(&app).get("/tasks").await.status, 303);
    assert_eq!(
        Browser::new(&app)
            .post(
                &format!("/tasks/{one_id}/cancel"),
                &[("csrf", csrf.as_str())]
            )
            .await
            .status,
        401
    );
}

#[tokio::test]
async fn without_the_inbox_the_page_says_how_to_turn_it_on() {
    let app = crate::dashboard::start().await;
    let b = signed_in(&app).await;
    let page = b.get("/tasks").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("The inbox is off"), "{}", page.body);
    let csrf = page.csrf();
    let p = b
        .post("/tasks", &[("csrf", csrf.as_str()), ("text", "x")])
        .await;
    assert_ne!(p.status, 303);
    assert!(p.body.contains("inbox is off"), "{}", p.body);
}

#[tokio::test]
async fn a_tasks_question_is_answered_on_the_pending_page_and_the_tasks_page() {
    let app = start().await;
    let b = signed_in(&app).await;
    let ask = async |text: &str| {
        let t = crate::inbox::add_ok(&app, text).await;
        let id = t["id"].as_str().unwrap().to_string();
        let c = claim(&app, "claude-code", 0.0).await;
        let res = report(
            &app,
            "claude-code",
            &id,
            "needs-input",
            json!({"lease": c["lease"], "questions": [format!("Which team? {HOSTILE}")]}),
        )
        .await;
        assert_eq!(res.body["status"], "waiting", "{:?}", res.body);
        id
    };
    let first = ask("say hello to the team").await;
    // On the pending page: its card, and a field for the answer.
    let page = b.get("/?kind=task").await;
    let form = format!("action=\"/tasks/{first}/answer\"");
    assert!(page.body.contains(&form), "{}", page.body);
    assert!(page.body.contains("Which team? &lt;img"), "{}", page.body);
    let csrf = page.csrf();
    // An empty answer, or another site's form: refused, nothing answered.
    let empty = b
        .post(
            &format!("/tasks/{first}/answer"),
            &[
                ("csrf", csrf.as_str()),
                ("text", "  "),
                ("back", "/?kind=task"),
            ],
        )
        .await;
    assert_eq!(empty.status, 400, "{empty:?}");
    let forged = b
        .post(
            &format!("/tasks/{first}/answer"),
            &[("csrf", "nope"), ("text", "ops"), ("back", "/")],
        )
        .await;
    assert_eq!(forged.status, 403, "{forged:?}");
    let res = b
        .post(
            &format!("/tasks/{first}/answer"),
            &[
                ("csrf", csrf.as_str()),
                ("text", "the ops team"),
                ("back", "https://evil.example/?kind=task"),
            ],
        )
        .await;
    // Back to the dashboard's own page whatever the form says.
    assert_eq!(res.status, 303, "{res:?}");
    assert_eq!(res.header("location").as_deref(), Some("/tasks"));
    let c = claim(&app, "claude-code", 0.0).await;
    assert_eq!(c["input"], "the ops team");
    let rows = audited(&app, "task_answered").await;
    assert_eq!(by(&rows[0]), ("alice", "dashboard"), "{rows:?}");
    // A second answer to a question answered already says so.
    let again = b
        .post(
            &format!("/tasks/{first}/answer"),
            &[("csrf", csrf.as_str()), ("text", "again"), ("back", "/")],
        )
        .await;
    assert_eq!(again.status, 409, "{again:?}");
    // On the tasks page too, back to the page as filtered.
    let second = ask("post the notes").await;
    let page = b.get("/tasks?status=waiting").await;
    assert!(page
        .body
        .contains(&format!("action=\"/tasks/{second}/answer\"")));
    let res = b
        .post(
            &format!("/tasks/{second}/answer"),
            &[
                ("csrf", csrf.as_str()),
                ("text", "#ops"),
                ("back", "/tasks?status=waiting"),
            ],
        )
        .await;
    assert_eq!(
        res.header("location").as_deref(),
        Some("/tasks?status=waiting")
    );
    assert_eq!(audited(&app, "task_answered").await.len(), 2);
}
