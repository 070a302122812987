//! Workflow check-ins end to end, in-process: the runs API, the owner's decision route,
//! the in-memory chat platform (cards, buttons, commands, replies), durability across a
//! restart, expiry, limits, and what agents may not do.

use std::sync::Arc;

use gatebot::chat::conversation::checkin::{button_data, ButtonKind};
use gatebot::chat::exchange::Answer;
use gatebot::chat::memory::{Memory, Message};
use gatebot::client::{Client, Response};
use serde_json::{json, Value};

use crate::helpers::{
    alice, eventually, mallory, spawn_app, spawn_app_in, spawn_app_with_memory, TestApp,
};

const CHAT: &str = "ops";

/// Agents with workflow settings on top of `BASE_CONFIG`: `mailer` has the defaults
/// (per-phase, warnings low, errors none); `stepper` is on the legacy `dry-run` level;
/// `asker` asks at a warning beyond tolerance only if the event says so.
const WORKFLOW_CONFIG: &str = r#"
[agents.stepper]
tier = "supervised"

[agents.stepper.workflow]
level = "dry-run"

[agents.truncator]
tier = "supervised"

[agents.truncator.workflow]
max_total_warnings = 2
on_limit_reached = "truncate"

[agents.limited]
tier = "supervised"

[agents.limited.workflow]
warning_tolerance = "high"
max_total_warnings = 3
"#;

async fn app() -> TestApp {
    spawn_app(WORKFLOW_CONFIG).await
}

async fn with_memory() -> (TestApp, Arc<Memory>) {
    let memory = Memory::new(&[CHAT], 5);
    let app = spawn_app_with_memory(tempfile::tempdir().unwrap(), WORKFLOW_CONFIG, &memory).await;
    (app, memory)
}

/// Starts a run as `agent` on the agents' socket, expecting success: its view.
async fn start(client: &Client, agent: &str, title: &str) -> Value {
    let res = client
        .post("/v1/runs", &json!({"agent": agent, "title": title}))
        .await
        .unwrap();
    assert_eq!(res.status, 201, "{:?}", res.body);
    res.body
}

/// An event body: `kind` in `phase`, with `warnings` and `errors` as `(text, severity)`.
fn ev(kind: &str, phase: &str, warnings: &[(&str, &str)], errors: &[(&str, &str)]) -> Value {
    let list = |l: &[(&str, &str)]| -> Vec<Value> {
        l.iter()
            .map(|(t, s)| json!({"text": t, "severity": s}))
            .collect()
    };
    json!({"type": kind, "phase": phase, "step": "s1", "warnings": list(warnings), "errors": list(errors)})
}

async fn post_event(client: &Client, run: &str, body: Value) -> Response {
    client
        .post(&format!("/v1/runs/{run}/events"), &body)
        .await
        .unwrap()
}

async fn event_ok(client: &Client, run: &str, body: Value) -> Value {
    let res = post_event(client, run, body).await;
    assert_eq!(res.status, 200, "{:?}", res.body);
    res.body
}

/// The run as the agent sees it after waiting up to `wait` seconds.
async fn run_after(client: &Client, run: &str, wait: f64) -> Value {
    let res = client
        .get(&format!("/v1/runs/{run}?wait={wait}"))
        .await
        .unwrap();
    assert_eq!(res.status, 200, "{:?}", res.body);
    res.body
}

async fn answer(app: &TestApp, id: &str, decision: &str, reason: Option<&str>) -> Response {
    app.decide(id, decision, reason).await
}

/// The card of check-in `short` in the chat, once delivery posted it.
async fn card_of(memory: &Memory, short: &str) -> Message {
    eventually(&format!("the card of check-in {short}"), async || {
        memory.find(CHAT, &format!("id {short}"))
    })
    .await
}

async fn shows(memory: &Memory, id: &str, needle: &str) -> Message {
    eventually(&format!("message {id} showing {needle:?}"), async || {
        memory
            .message(CHAT, id)
            .filter(|m| m.card.plain().contains(needle))
    })
    .await
}

fn str_of<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    path.iter()
        .fold(v, |v, k| &v[*k])
        .as_str()
        .unwrap_or_else(|| panic!("{path:?} in {v}"))
}

#[tokio::test]
async fn a_low_warning_continues_and_the_phase_end_checks_in_until_the_owner_continues() {
    let app = app().await;
    let run = start(&app.agent, "mailer", "Release 2.4").await;
    let id = str_of(&run, &["id"]).to_string();
    assert_eq!(
        (run["status"].as_str(), run["action"].as_str()),
        (Some("running"), Some("continue"))
    );

    // Example 1: a low warning under `low` tolerance: collected, the run goes on.
    let a = event_ok(
        &app.agent,
        &id,
        ev("step_complete", "build", &[("Style issue", "low")], &[]),
    )
    .await;
    assert_eq!(a["action"], "continue", "{a}");
    assert!(a["check_in"].is_null());
    assert_eq!(a["run"]["totals"], json!({"warnings": 1, "errors": 0}));

    // The phase end is a check-in point with something to show: the run waits.
    let a = event_ok(&app.agent, &id, ev("phase_complete", "build", &[], &[])).await;
    assert_eq!(a["action"], "wait", "{a}");
    assert_eq!(a["reason"], "Check-in: build complete. Continue?");
    let check_in = a["check_in"].clone();
    assert_eq!(check_in["status"], "waiting");
    assert_eq!(check_in["warnings"][0]["text"], "Style issue");
    assert_eq!(check_in["warnings"][0]["step"], "s1");
    let (cid, short) = (
        str_of(&check_in, &["id"]).to_string(),
        str_of(&check_in, &["short_id"]).to_string(),
    );

    // No events while it waits; the agent is told to long-poll.
    let refused = post_event(&app.agent, &id, ev("step_complete", "test", &[], &[])).await;
    assert_eq!(refused.status, 409);
    assert_eq!(refused.body["error"]["code"], "check_in_waiting");
    assert_eq!(refused.body["run"]["check_in"]["short_id"], short.as_str());

    let waiter = {
        let agent = app.agent.clone();
        let id = id.clone();
        tokio::spawn(async move { run_after(&agent, &id, 30.0).await })
    };
    let decided = answer(
        &app,
        &short[..5],
        "continue",
        Some("fine, fix the lint later"),
    )
    .await;
    assert_eq!(decided.status, 200, "{:?}", decided.body);
    assert_eq!(decided.body["kind"], "checkin");
    assert_eq!(decided.body["status"], "continued");
    assert_eq!(decided.body["decided_by"], "alice");
    let got = waiter.await.unwrap();
    assert_eq!(got["status"], "running", "{got}");
    assert_eq!(got["action"], "continue");
    assert_eq!(
        got["reason"],
        format!(
            "check-in {short} continued by alice on the command line: fine, fix the lint later"
        )
    );
    // The first answer wins.
    let again = answer(&app, &cid, "stop", None).await;
    assert_eq!(again.status, 409);
    assert_eq!(again.body["error"]["code"], "already_decided");
    assert!(str_of(&again.body, &["error", "message"]).contains("already continued by alice"));

    // The next phase starts clean: its end is a report, and the run goes on.
    event_ok(&app.agent, &id, ev("step_complete", "test", &[], &[])).await;
    let a = event_ok(&app.agent, &id, ev("phase_complete", "test", &[], &[])).await;
    assert_eq!(
        (a["action"].as_str(), a["check_in"]["status"].as_str()),
        (Some("continue"), Some("reported"))
    );
    let a = event_ok(&app.agent, &id, ev("workflow_complete", "test", &[], &[])).await;
    assert_eq!(
        (a["action"].as_str(), a["run"]["status"].as_str()),
        (Some("continue"), Some("completed"))
    );
    let after = post_event(&app.agent, &id, ev("step_complete", "x", &[], &[])).await;
    assert_eq!(
        (after.status.as_u16(), after.body["error"]["code"].as_str()),
        (409, Some("run_finished"))
    );

    let trail = app.audit_events(&id).await;
    assert_eq!(trail.first().map(String::as_str), Some("run_started"));
    assert_eq!(trail.last().map(String::as_str), Some("run_completed"));
    assert_eq!(
        app.audit_events(&cid).await,
        ["check_in_asked", "check_in_answered"]
    );
    let metrics = app.metrics().await;
    assert!(
        metrics.contains("gatebot_check_ins_asked_total 1"),
        "{metrics}"
    );
    assert!(metrics.contains("gatebot_check_ins_settled_total{outcome=\"continued\"} 1"));
    app.stop().await;
}

#[tokio::test]
async fn a_medium_warning_under_low_tolerance_stops_the_run_with_the_seeds_reason() {
    let app = app().await;
    let id = start(&app.agent, "mailer", "Migrate").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let a = event_ok(
        &app.agent,
        &id,
        ev(
            "step_complete",
            "build",
            &[("Deprecated API", "medium")],
            &[],
        ),
    )
    .await;
    assert_eq!(a["action"], "stop", "{a}");
    assert_eq!(a["reason"], "Warning exceeds tolerance: Deprecated API");
    assert_eq!(a["exceeded"][0]["text"], "Deprecated API");
    assert_eq!(
        (a["run"]["status"].as_str(), a["run"]["stopped_by"].as_str()),
        (Some("stopped"), Some("tolerance"))
    );
    // Examples 3 and 4: errors beyond tolerance stop too.
    let id2 = start(&app.agent, "mailer", "Audit").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let a = event_ok(
        &app.agent,
        &id2,
        ev(
            "step_complete",
            "scan",
            &[],
            &[("Minor validation error", "low")],
        ),
    )
    .await;
    assert_eq!(
        a["reason"],
        "Error exceeds tolerance: Minor validation error"
    );
    assert!(app
        .metrics()
        .await
        .contains("gatebot_runs_stopped_total{cause=\"tolerance\"} 2"));

    // `ask` in result_handling asks the owner instead; Stop makes the run stop with the
    // owner's reason.
    let id3 = start(&app.agent, "mailer", "Ask me").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut body = ev(
        "step_complete",
        "build",
        &[("Deprecated API", "medium")],
        &[],
    );
    body["result_handling"] = json!({"on_warning": "ask"});
    let a = event_ok(&app.agent, &id3, body).await;
    assert_eq!(
        (a["action"].as_str(), a["check_in"]["why"].as_str()),
        (Some("wait"), Some("tolerance"))
    );
    assert_eq!(a["check_in"]["warnings"][0]["exceeded"], true);
    let cid = str_of(&a, &["check_in", "id"]).to_string();
    let decided = answer(&app, &cid, "stop", Some("not before Monday")).await;
    assert_eq!(decided.body["status"], "stopped", "{:?}", decided.body);
    let got = run_after(&app.agent, &id3, 0.0).await;
    assert_eq!(
        (got["action"].as_str(), got["stopped_by"].as_str()),
        (Some("stop"), Some("owner"))
    );
    assert!(
        str_of(&got, &["reason"])
            .ends_with("stopped by alice on the command line: not before Monday"),
        "{got}"
    );
}

#[tokio::test]
async fn the_dry_run_level_checks_in_per_step_and_limits_stop_or_truncate() {
    let app = app().await;
    // dry-run: per step, nothing tolerated. A clean step is a check-in point (a report).
    let id = start(&app.agent, "stepper", "Careful").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let a = event_ok(&app.agent, &id, ev("step_complete", "plan", &[], &[])).await;
    assert_eq!(a["check_in"]["status"], "reported", "{a}");
    assert_eq!(
        a["check_in"]["reason"],
        "Check-in: step s1 of plan complete. Continue?"
    );
    let a = event_ok(&app.agent, &id, ev("phase_complete", "plan", &[], &[])).await;
    assert!(
        a["check_in"].is_null(),
        "per-step: a phase end is no check-in point: {a}"
    );
    // With `ask`, a step's warning makes it ask at once.
    let mut body = ev("step_complete", "plan", &[("Style issue", "low")], &[]);
    body["result_handling"] = json!({"on_warning": "ask"});
    assert_eq!(event_ok(&app.agent, &id, body).await["action"], "wait");

    // truncate: the run goes on, and stops collecting warnings at the limit.
    let id = start(&app.agent, "truncator", "Noisy").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    event_ok(
        &app.agent,
        &id,
        ev("step_complete", "p", &[("a", "low")], &[]),
    )
    .await;
    let a = event_ok(
        &app.agent,
        &id,
        ev("step_complete", "p", &[("b", "low"), ("c", "low")], &[]),
    )
    .await;
    assert_eq!(a["action"], "continue", "{a}");
    assert_eq!(a["truncated"], json!(["warning"]));
    assert_eq!(a["run"]["totals"]["warnings"], 1);
    assert_eq!(a["run"]["not_collected"]["warnings"], 2);

    // stop: the limit stops the run, naming it.
    let id = start(&app.agent, "limited", "Capped").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    event_ok(
        &app.agent,
        &id,
        ev("step_complete", "p", &[("a", "high"), ("b", "high")], &[]),
    )
    .await;
    let a = event_ok(
        &app.agent,
        &id,
        ev("step_complete", "p", &[("c", "low")], &[]),
    )
    .await;
    assert_eq!(a["reason"], "Global limit reached: 3/3 warnings", "{a}");
    assert_eq!(a["run"]["stopped_by"], "limit");
    assert!(app
        .metrics()
        .await
        .contains("gatebot_runs_stopped_total{cause=\"limit\"} 1"));
    assert!(
        crate::helpers::log_text().contains("Limit reached, truncating collection: warnings"),
        "truncation is logged"
    );
}

#[tokio::test]
async fn bad_input_gets_a_clear_error_and_stores_nothing() {
    let app = app().await;
    // Starts: (body, status, code, words in the message)
    let cases: &[(Value, u16, &str, &str)] = &[
        (
            json!({"agent": "nobody", "title": "t"}),
            403,
            "unknown_agent",
            "nobody",
        ),
        (json!({"agent": "mailer"}), 400, "invalid_request", "title"),
        (
            json!({"agent": "mailer", "title": "t", "tone": "x"}),
            400,
            "invalid_request",
            "tone",
        ),
        (
            json!({"agent": "mailer", "title": "   "}),
            422,
            "invalid_request",
            "`title`",
        ),
        (
            json!({"agent": "mailer", "title": "t", "workflow": "a/b"}),
            422,
            "invalid_request",
            "`workflow`",
        ),
        (
            json!({"agent": "secure", "title": "t"}),
            401,
            "unauthorized",
            "token",
        ),
    ];
    for (body, status, code, words) in cases {
        let res = app.agent.post("/v1/runs", body).await.unwrap();
        assert_eq!(res.status.as_u16(), *status, "{body}: {:?}", res.body);
        assert_eq!(res.body["error"]["code"], *code, "{body}");
        assert!(
            res.error_message().contains(words),
            "{body}: {}",
            res.error_message()
        );
    }
    let listed = app.owner.get("/v1/runs").await.unwrap();
    assert_eq!(listed.body["runs"], json!([]), "no run was stored");

    let id = start(&app.agent, "mailer", "t").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let many: Vec<Value> = (0..501).map(|i| json!({"text": format!("w{i}")})).collect();
    let events: &[(Value, u16, &str, &str)] = &[
        (
            json!({"type": "step_done", "phase": "p"}),
            400,
            "invalid_request",
            "step_done",
        ),
        (json!({"phase": "p"}), 400, "invalid_request", "type"),
        (
            json!({"type": "step_complete", "phase": ""}),
            422,
            "invalid_request",
            "`phase`",
        ),
        (
            json!({"type": "step_complete", "phase": "p", "warnings": [{"text": ""}]}),
            422,
            "invalid_request",
            "`warnings[0].text`",
        ),
        (
            json!({"type": "step_complete", "phase": "p", "warnings": many}),
            422,
            "invalid_request",
            "at most 500",
        ),
        (
            json!({"type": "step_complete", "phase": "p", "result_handling": {"on_warning": "retry"}}),
            400,
            "invalid_request",
            "retry",
        ),
        (
            json!({"type": "step_complete", "phase": "p", "artifacts": [{"name": "log", "size": 1}]}),
            400,
            "invalid_request",
            "size",
        ),
    ];
    for (body, status, code, words) in events {
        let res = post_event(&app.agent, &id, body.clone()).await;
        assert_eq!(res.status.as_u16(), *status, "{body}: {:?}", res.body);
        assert_eq!(res.body["error"]["code"], *code, "{body}");
        assert!(
            res.error_message().contains(words),
            "{body}: {}",
            res.error_message()
        );
    }
    let raw = app
        .agent
        .send(
            hyper::Method::POST,
            &format!("/v1/runs/{id}/events"),
            Some(b"{not json".to_vec()),
        )
        .await
        .unwrap();
    assert_eq!(raw.body["error"]["code"], "malformed_json");
    assert_eq!(
        run_after(&app.agent, &id, 0.0).await["events"],
        0,
        "no event was stored"
    );
    let missing = post_event(
        &app.agent,
        "01JD3X4Y5Z6A7B8C9D0E1F2G3H",
        ev("step_complete", "p", &[], &[]),
    )
    .await;
    assert_eq!(
        (
            missing.status.as_u16(),
            missing.body["error"]["code"].as_str()
        ),
        (404, Some("not_found"))
    );
    for q in ["status=paused", "limit=0", "limit=x"] {
        let res = app.owner.get(&format!("/v1/runs?{q}")).await.unwrap();
        assert_eq!(res.status, 400, "{q}: {:?}", res.body);
    }
    let res = app
        .agent
        .get(&format!("/v1/runs/{id}?wait=soon"))
        .await
        .unwrap();
    assert_eq!(res.status, 400);
}

#[tokio::test]
async fn runs_belong_to_their_agent_and_agents_cannot_answer_check_ins() {
    let app = app().await;
    let secure =
        Client::new(app.path().join("gatebot.sock")).with_token(Some("secure-token-123".into()));
    let other =
        Client::new(app.path().join("gatebot.sock")).with_token(Some("other-token-456".into()));
    let run = start(&secure, "secure", "Mine").await;
    let id = str_of(&run, &["id"]).to_string();
    let short = str_of(&run, &["short_id"]).to_string();
    // Without the token, or with another agent's, the run is out of reach.
    for client in [&app.agent, &other] {
        let res = client.get(&format!("/v1/runs/{id}")).await.unwrap();
        assert_eq!(res.status, 401, "{:?}", res.body);
        let res = post_event(client, &id, ev("step_complete", "p", &[], &[])).await;
        assert_eq!(res.status, 401, "{:?}", res.body);
    }
    // Agents get no prefixes (an ambiguity would name others' runs); the owner does.
    assert_eq!(
        secure
            .get(&format!("/v1/runs/{}", &short[..5]))
            .await
            .unwrap()
            .status,
        404
    );
    assert_eq!(
        app.owner
            .get(&format!("/v1/runs/{}", &short[..5]))
            .await
            .unwrap()
            .status,
        200
    );
    // Agents list only their own runs, and must say who they are.
    assert_eq!(other.get("/v1/runs").await.unwrap().status, 400);
    let mine = other.get("/v1/runs?agent=other").await.unwrap();
    assert_eq!(mine.body["runs"], json!([]));
    assert_eq!(
        other.get("/v1/runs?agent=secure").await.unwrap().status,
        401
    );

    let a = event_ok(
        &secure,
        &id,
        ev("phase_complete", "p", &[("Style issue", "low")], &[]),
    )
    .await;
    let cid = str_of(&a, &["check_in", "id"]).to_string();
    // The decision route on the agents' socket refuses, and the attempt is audited.
    let res = secure
        .post(
            &format!("/v1/requests/{cid}/decision"),
            &json!({"decision": "continue"}),
        )
        .await
        .unwrap();
    assert_eq!(res.status, 403);
    let rows = app.audit_rows(&cid).await;
    let refused = rows
        .iter()
        .find(|r| r["event"] == "unauthorised_attempt")
        .expect("audited");
    assert_eq!(refused["actor"], "secure");
    // A request's verbs do not answer a check-in.
    let res = answer(&app, &cid, "approve", None).await;
    assert_eq!(res.status, 400);
    assert!(
        res.error_message().contains("continue or stop"),
        "{}",
        res.error_message()
    );
    assert_eq!(run_after(&secure, &id, 0.0).await["status"], "waiting");
}

#[tokio::test]
async fn idempotency_keys_return_the_same_run_and_the_same_answer() {
    let app = app().await;
    let body = json!({"agent": "mailer", "title": "Release", "idempotency_key": "rel-1"});
    let first = app.agent.post("/v1/runs", &body).await.unwrap();
    let again = app.agent.post("/v1/runs", &body).await.unwrap();
    assert_eq!((first.status.as_u16(), again.status.as_u16()), (201, 200));
    assert_eq!(first.body["id"], again.body["id"]);
    let mut other = body.clone();
    other["title"] = "Something else".into();
    let conflict = app.agent.post("/v1/runs", &other).await.unwrap();
    assert_eq!(conflict.body["error"]["code"], "idempotency_conflict");

    let id = str_of(&first.body, &["id"]).to_string();
    let mut e = ev("step_complete", "build", &[("Style issue", "low")], &[]);
    e["idempotency_key"] = "build-1".into();
    let a = event_ok(&app.agent, &id, e.clone()).await;
    let b = event_ok(&app.agent, &id, e).await;
    assert_eq!(
        (a["seq"].clone(), b["seq"].clone(), b["repeated"].clone()),
        (json!(1), json!(1), json!(true))
    );
    assert_eq!(b["run"]["totals"]["warnings"], 1, "counted once");
}

#[tokio::test]
async fn in_chat_review_shows_every_issue_and_asks_again_and_continue_lets_the_agent_go_on() {
    let (app, memory) = with_memory().await;
    let id = start(&app.agent, "mailer", "Release 2.4").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let warnings: Vec<(String, &str)> = (0..7)
        .map(|i| (format!("Style issue {i}"), "low"))
        .collect();
    let w: Vec<(&str, &str)> = warnings.iter().map(|(t, s)| (t.as_str(), *s)).collect();
    event_ok(&app.agent, &id, ev("step_complete", "build", &w, &[])).await;
    let a = event_ok(&app.agent, &id, ev("phase_complete", "build", &[], &[])).await;
    let (cid, short) = (
        str_of(&a, &["check_in", "id"]).to_string(),
        str_of(&a, &["check_in", "short_id"]).to_string(),
    );
    let card = card_of(&memory, &short).await;
    let text = card.card.plain();
    for part in [
        "workflow check-in",
        "Agent: mailer",
        "Run: Release 2.4",
        "Why asking: phase build complete",
        "7 warnings, 0 errors",
        "… and 2 more",
    ] {
        assert!(text.contains(part), "{part} in {text}");
    }
    assert_eq!(
        card.card.button_data(),
        [
            button_data(ButtonKind::Continue, &cid),
            button_data(ButtonKind::Review, &cid),
            button_data(ButtonKind::Stop, &cid)
        ]
    );

    // Review issues: every issue, then Continue and Stop again.
    let Answer::Cards(mut review) = memory
        .press(
            &alice(),
            CHAT,
            &card.id,
            &button_data(ButtonKind::Review, &cid),
        )
        .await
    else {
        panic!("review answers with its cards")
    };
    assert_eq!(review.len(), 1, "a few issues fit one message");
    let review = review.remove(0);
    assert!(
        review.plain().contains("Style issue 6"),
        "{}",
        review.plain()
    );
    assert_eq!(
        review.button_data(),
        [
            button_data(ButtonKind::Continue, &cid),
            button_data(ButtonKind::Stop, &cid)
        ]
    );
    assert_eq!(
        run_after(&app.agent, &id, 0.0).await["status"],
        "waiting",
        "review decides nothing"
    );

    // /pending lists the check-in with its buttons.
    let Answer::Card(list) = memory.say(&alice(), CHAT, "/pending", None).await else {
        panic!()
    };
    assert!(
        list.plain().contains("1 workflow check-in(s) waiting"),
        "{}",
        list.plain()
    );
    assert!(list
        .button_data()
        .contains(&button_data(ButtonKind::Continue, &cid).as_str()));

    let waiter = {
        let agent = app.agent.clone();
        let id = id.clone();
        tokio::spawn(async move { run_after(&agent, &id, 30.0).await })
    };
    // Continue on the review's own button.
    let done = memory
        .press(&alice(), CHAT, "review", review.button_data()[0])
        .await;
    assert!(matches!(done, Answer::Done(_)), "{done:?}");
    let got = waiter.await.unwrap();
    assert_eq!(
        (got["status"].as_str(), got["action"].as_str()),
        (Some("running"), Some("continue"))
    );
    assert_eq!(got["check_in"]["decided_via"], "memory");
    let edited = shows(&memory, &card.id, "Continued by Alice (42) on Memory").await;
    assert!(edited.card.buttons.is_empty(), "buttons gone: {edited:?}");
    app.stop().await;
}

#[tokio::test]
async fn in_chat_stop_asks_why_and_the_owners_reason_reaches_the_agent_and_strangers_are_refused() {
    let (app, memory) = with_memory().await;
    let id = start(&app.agent, "mailer", "Release").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let a = event_ok(
        &app.agent,
        &id,
        ev("phase_complete", "build", &[("Style issue", "low")], &[]),
    )
    .await;
    let (cid, short) = (
        str_of(&a, &["check_in", "id"]).to_string(),
        str_of(&a, &["check_in", "short_id"]).to_string(),
    );
    let card = card_of(&memory, &short).await;

    // A stranger's press, command and reply decide nothing, and each is audited.
    let refused = memory
        .press(
            &mallory(),
            CHAT,
            &card.id,
            &button_data(ButtonKind::Continue, &cid),
        )
        .await;
    assert!(refused.text().contains("not allowed"), "{refused:?}");
    let refused = memory
        .say(&mallory(), CHAT, &format!("/stop {short} mine now"), None)
        .await;
    assert!(refused.text().contains("not allowed"), "{refused:?}");
    let refused = memory
        .say(&mallory(), CHAT, "continue", Some(&card.id))
        .await;
    assert!(refused.text().contains("not allowed"), "{refused:?}");
    let audited: Vec<Value> = app
        .audit_rows(&cid)
        .await
        .into_iter()
        .filter(|r| r["event"] == "unauthorised_attempt")
        .collect();
    assert_eq!(audited.len(), 3, "{audited:?}");
    assert_eq!(audited[0]["detail"]["user_id"], "66");
    assert_eq!(run_after(&app.agent, &id, 0.0).await["status"], "waiting");
    // A request's words in reply to a check-in are explained, not applied.
    let told = memory.say(&alice(), CHAT, "approve", Some(&card.id)).await;
    assert!(
        told.text()
            .contains("continue [note], stop [reason] or review"),
        "{told:?}"
    );

    // Stop asks why; the reply is the reason the agent reads.
    let Answer::Ask(q) = memory
        .press(
            &alice(),
            CHAT,
            &card.id,
            &button_data(ButtonKind::Stop, &cid),
        )
        .await
    else {
        panic!("stop asks why")
    };
    assert_eq!(q.subject, cid);
    assert_eq!(
        q.skip.as_ref().unwrap().data,
        button_data(ButtonKind::StopNoReason, &cid)
    );
    let question = memory
        .messages(CHAT)
        .into_iter()
        .find(|m| m.reply_to.as_deref() == Some(card.id.as_str()))
        .unwrap();
    assert!(
        question
            .card
            .plain()
            .starts_with("Alice, why stop Release of mailer"),
        "{}",
        question.card.plain()
    );
    memory
        .say(&alice(), CHAT, "wrong branch, use main", Some(&question.id))
        .await;
    let got = run_after(&app.agent, &id, 10.0).await;
    assert_eq!(
        (got["action"].as_str(), got["stopped_by"].as_str()),
        (Some("stop"), Some("owner"))
    );
    assert!(
        str_of(&got, &["reason"])
            .ends_with("stopped by Alice (42) on Memory: wrong branch, use main"),
        "{got}"
    );
    shows(&memory, &card.id, "Stopped by Alice (42) on Memory").await;

    // `/continue` and replies work too, by short id or prefix.
    let id2 = start(&app.agent, "mailer", "Second").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let a = event_ok(
        &app.agent,
        &id2,
        ev("phase_complete", "build", &[("Style issue", "low")], &[]),
    )
    .await;
    let short2 = str_of(&a, &["check_in", "short_id"]).to_string();
    let card2 = card_of(&memory, &short2).await;
    let done = memory
        .say(
            &alice(),
            CHAT,
            &format!("/continue {} ship it", &short2[..4]),
            None,
        )
        .await;
    assert!(matches!(done, Answer::Done(_)), "{done:?}");
    assert!(str_of(&run_after(&app.agent, &id2, 10.0).await, &["reason"]).ends_with(": ship it"));
    let late = memory.say(&alice(), CHAT, "stop", Some(&card2.id)).await;
    assert!(
        late.text()
            .contains("already continued by Alice (42) on Memory"),
        "{late:?}"
    );
    let unknown = memory.say(&alice(), CHAT, "/continue zzzz9999", None).await;
    assert!(
        unknown.text().contains("No check-in matches"),
        "{unknown:?}"
    );
    app.stop().await;
}

#[tokio::test]
async fn a_restart_keeps_a_waiting_check_in_its_deadline_and_its_card() {
    let memory = Memory::new(&[CHAT], 5);
    let app = spawn_app_with_memory(tempfile::tempdir().unwrap(), WORKFLOW_CONFIG, &memory).await;
    let id = start(&app.agent, "mailer", "Long job").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let a = event_ok(
        &app.agent,
        &id,
        ev("phase_complete", "build", &[("Style issue", "low")], &[]),
    )
    .await;
    let (cid, short) = (
        str_of(&a, &["check_in", "id"]).to_string(),
        str_of(&a, &["check_in", "short_id"]).to_string(),
    );
    let expires = a["check_in"]["expires_at"].clone();
    let card = card_of(&memory, &short).await;
    let dir = app.stop().await;

    // The same chat (its messages outlive the process, as Telegram's and Slack's do).
    let app = spawn_app_with_memory(dir, WORKFLOW_CONFIG, &memory).await;
    let run = run_after(&app.agent, &id, 0.0).await;
    assert_eq!(run["status"], "waiting");
    assert_eq!(run["check_in"]["expires_at"], expires, "the same deadline");
    let waiting = app.owner.get("/v1/runs?status=waiting").await.unwrap();
    assert_eq!(waiting.body["runs"][0]["check_in"]["id"], cid.as_str());
    // The answer given after the restart edits the card posted before it.
    answer(&app, &cid, "continue", None).await;
    shows(&memory, &card.id, "Continued by alice on the command line").await;
    let cards = memory
        .messages(CHAT)
        .into_iter()
        .filter(|m| m.card.plain().contains(&format!("id {short}")))
        .count();
    assert_eq!(cards, 1, "not posted twice");
    assert_eq!(run_after(&app.agent, &id, 0.0).await["status"], "running");
    app.stop().await;
}

#[tokio::test]
async fn an_unanswered_check_in_expires_and_counts_as_stop() {
    let app = spawn_app("[workflow]\ncheck_in_ttl = \"1s\"\n").await;
    let id = start(&app.agent, "mailer", "Quick").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let a = event_ok(
        &app.agent,
        &id,
        ev("phase_complete", "build", &[("Style issue", "low")], &[]),
    )
    .await;
    let cid = str_of(&a, &["check_in", "id"]).to_string();
    let got = eventually("the run to stop", async || {
        let run = run_after(&app.agent, &id, 5.0).await;
        (run["status"] == "stopped").then_some(run)
    })
    .await;
    assert_eq!(
        (got["action"].as_str(), got["stopped_by"].as_str()),
        (Some("stop"), Some("expiry"))
    );
    assert!(
        str_of(&got, &["reason"])
            .contains("expired: no answer within 1 s; an unanswered check-in counts as stop"),
        "{got}"
    );
    assert_eq!(got["check_in"]["status"], "expired");
    assert!(app
        .audit_events(&cid)
        .await
        .contains(&"check_in_expired".to_string()));
    let late = answer(&app, &cid, "continue", None).await;
    assert_eq!(late.body["error"]["code"], "already_decided");
    let metrics = app.metrics().await;
    assert!(
        metrics.contains("gatebot_check_ins_settled_total{outcome=\"expired\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("gatebot_runs_stopped_total{cause=\"expiry\"} 1"));
    // Restarted, it stays stopped.
    let dir = app.stop().await;
    let app = spawn_app_in(dir, "[workflow]\ncheck_in_ttl = \"1s\"\n").await;
    assert_eq!(run_after(&app.agent, &id, 0.0).await["status"], "stopped");
}

#[tokio::test]
async fn a_reply_or_press_on_a_check_in_whose_post_was_never_confirmed_reaches_it() {
    let (app, memory) = with_memory().await;
    // The card reaches the chat, but the platform's answer is slow, and then lost.
    memory.hold_answers();
    memory.lose_next_answers(1);
    let id = start(&app.agent, "mailer", "Unconfirmed").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let a = event_ok(
        &app.agent,
        &id,
        ev("phase_complete", "build", &[("Style issue", "low")], &[]),
    )
    .await;
    let (cid, short) = (
        str_of(&a, &["check_in", "id"]).to_string(),
        str_of(&a, &["check_in", "short_id"]).to_string(),
    );
    let card = card_of(&memory, &short).await;
    // A stranger's press is refused; the owner's reply, read back from the card's text,
    // answers it.
    let refused = memory
        .press(
            &mallory(),
            CHAT,
            &card.id,
            &button_data(ButtonKind::Continue, &cid),
        )
        .await;
    assert!(refused.text().contains("not allowed"), "{refused:?}");
    let done = memory
        .say(&alice(), CHAT, "continue saw it early", Some(&card.id))
        .await;
    assert!(matches!(done, Answer::Done(_)), "{done:?}");
    let got = run_after(&app.agent, &id, 0.0).await;
    assert!(
        str_of(&got, &["reason"]).ends_with("continued by Alice (42) on Memory: saw it early"),
        "{got}"
    );
    // The message the reply found is the card: it shows the outcome, posted once.
    memory.release_answers();
    shows(&memory, &card.id, "Continued by Alice (42) on Memory").await;
    let copies = memory
        .messages(CHAT)
        .into_iter()
        .filter(|m| m.card.plain().contains(&format!("id {short}")))
        .count();
    assert_eq!(copies, 1, "posted once");
    app.stop().await;
}
