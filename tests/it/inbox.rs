//! The inbox through its API: an in-process daemon with real SQLite, owners on the
//! control socket, agents on theirs (with tokens), every transition of a task.

use gatebot::client::{Client, Response};
use serde_json::{json, Value};

use crate::helpers::{eventually, spawn_app, spawn_app_in, TestApp};

/// Agents and routes every inbox test uses, on top of `BASE_CONFIG`.
pub const INBOX: &str = r#"
[agents.claude-code]
tier = "supervised"

[agents.researcher]
tier = "supervised"
token = "researcher-token-789"

[inbox]
progress_every = "1s"

[inbox.routes]
default = "claude-code"
research = "researcher"
"#;

pub const RESEARCHER_TOKEN: &str = "researcher-token-789";

/// A daemon with the inbox on, and `extra` TOML after it (`[inbox]` keys go in
/// `inbox_keys`, which lands inside the `[inbox]` table).
pub async fn start(inbox_keys: &str, extra: &str) -> TestApp {
    spawn_app(&with_inbox(inbox_keys, extra)).await
}

pub fn with_inbox(inbox_keys: &str, extra: &str) -> String {
    INBOX.replace(
        "[inbox]\nprogress_every = \"1s\"\n",
        &format!("[inbox]\nprogress_every = \"1s\"\n{inbox_keys}\n"),
    ) + extra
}

/// The agents' client acting as `agent` (with the researcher's token for it).
pub fn agent(app: &TestApp, agent: &str) -> Client {
    let token = (agent == "researcher").then(|| RESEARCHER_TOKEN.to_string());
    app.agent.clone().with_token(token)
}

/// Hands over a task as the owner `alice`.
pub async fn add(app: &TestApp, body: Value) -> Response {
    app.owner_as("alice")
        .post("/v1/tasks", &body)
        .await
        .unwrap()
}

/// Hands over `text`, expecting it accepted.
pub async fn add_ok(app: &TestApp, text: &str) -> Value {
    let res = add(app, json!({"text": text})).await;
    assert_eq!(res.status, 201, "{:?}", res.body);
    res.body
}

/// One claim as `agent`, waiting up to `wait` seconds: the claimed task or null.
pub async fn claim(app: &TestApp, who: &str, wait: f64) -> Value {
    let res = agent(app, who)
        .post("/v1/tasks/claim", &json!({"agent": who, "wait": wait}))
        .await
        .unwrap();
    assert!(res.status.is_success(), "{:?}", res.body);
    res.body["task"].clone()
}

pub async fn report(app: &TestApp, who: &str, id: &str, what: &str, body: Value) -> Response {
    agent(app, who)
        .post(&format!("/v1/tasks/{id}/{what}"), &body)
        .await
        .unwrap()
}

pub async fn task(app: &TestApp, id: &str) -> Value {
    let res = app.owner.get(&format!("/v1/tasks/{id}")).await.unwrap();
    assert!(res.status.is_success(), "{:?}", res.body);
    res.body
}

pub async fn wait_status(app: &TestApp, id: &str, want: &str) -> Value {
    eventually(&format!("task {id} to become {want}"), async || {
        let t = task(app, id).await;
        (t["status"] == want).then_some(t)
    })
    .await
}

async fn events(app: &TestApp, id: &str) -> Vec<String> {
    app.audit_events(id).await
}

#[tokio::test]
async fn an_owner_hands_over_a_task_and_its_agent_runs_it_to_done() {
    let app = start("", "").await;
    let t = add_ok(
        &app,
        "research what our three competitors charge for the Pro tier",
    )
    .await;
    assert_eq!(t["intent"], "research");
    assert_eq!(t["agent"], "researcher");
    assert_eq!(t["status"], "queued");
    assert_eq!(t["level"], 2);
    assert_eq!(t["classifier"], "keywords");
    assert_eq!(t["created_by"], "alice");
    let summary = t["summary"].as_str().unwrap();
    assert!(
        summary.chars().count() <= 30 && !summary.is_empty(),
        "{summary}"
    );
    assert!(t["prompt"].as_str().unwrap().contains("Pro tier"));
    let id = t["id"].as_str().unwrap();

    // Another agent gets nothing; the researcher gets it, with a lease.
    assert!(claim(&app, "claude-code", 0.0).await.is_null());
    let c = claim(&app, "researcher", 0.0).await;
    assert_eq!(c["id"], id);
    assert_eq!(c["attempt"], 1);
    assert_eq!(c["timeout_secs"], 1800.0, "research: 30 minutes");
    let lease = c["lease"].as_str().unwrap().to_string();
    assert_eq!(task(&app, id).await["status"], "running");
    // Nothing more to claim.
    assert!(claim(&app, "researcher", 0.0).await.is_null());

    let p = report(
        &app,
        "researcher",
        id,
        "progress",
        json!({"lease": lease, "text": "\u{1b}[1mreading pricing pages\u{1b}[0m"}),
    )
    .await;
    assert_eq!(p.status, 200, "{:?}", p.body);
    assert_eq!(
        p.body["progress"], "reading pricing pages",
        "colours removed"
    );
    let done = report(
        &app,
        "researcher",
        id,
        "complete",
        json!({"lease": lease, "result": "A: $20, B: $25, C: $30", "cost_usd": 0.12, "session_id": "s-1"}),
    )
    .await;
    assert_eq!(done.status, 200, "{:?}", done.body);
    assert_eq!(done.body["status"], "completed");
    assert_eq!(done.body["result"], "A: $20, B: $25, C: $30");
    assert_eq!(done.body["cost_usd"], 0.12);
    // The lease is spent.
    let again = report(&app, "researcher", id, "progress", json!({"lease": lease})).await;
    assert_eq!(again.status, 409, "{:?}", again.body);
    assert_eq!(
        events(&app, id).await,
        ["task_created", "task_claimed", "task_completed"]
    );
    // The owner finds it by short id, and in the full list but not the open one.
    let short = t["short_id"].as_str().unwrap();
    assert_eq!(task(&app, short).await["id"], id);
    let open = app.owner.get("/v1/tasks").await.unwrap().body;
    assert_eq!(open["tasks"], json!([]));
    let all = app.owner.get("/v1/tasks?all=true").await.unwrap().body;
    assert_eq!(all["tasks"][0]["id"], id);
}

#[tokio::test]
async fn bad_tasks_are_refused_with_a_reason_and_nothing_is_stored() {
    let app = start("", "").await;
    let cases: &[(Value, u16, &str)] = &[
        (json!({"text": "   "}), 422, "empty"),
        (json!({"text": "x".repeat(4001)}), 422, "4001 characters"),
        (json!({"text": "do\u{0}it"}), 422, "control characters"),
        (
            json!({"text": "do it", "intent": "email"}),
            422,
            "unknown intent",
        ),
        (
            json!({"text": "do it", "agent": "ghost"}),
            422,
            "not configured",
        ),
        (
            json!({"text": "do it", "agent": "no spaces"}),
            422,
            "letters, digits",
        ),
        (
            json!({"text": "do it", "priority": 1}),
            400,
            "unknown field",
        ),
        (json!({"agent": "claude-code"}), 400, "missing field `text`"),
    ];
    for (body, status, why) in cases {
        let res = add(&app, body.clone()).await;
        assert_eq!(res.status, *status, "{body}: {:?}", res.body);
        assert!(res.error_message().contains(why), "{body}: {:?}", res.body);
    }
    let bad = app
        .owner
        .send(
            hyper::Method::POST,
            "/v1/tasks",
            Some(b"{not json".to_vec()),
        )
        .await
        .unwrap();
    assert_eq!(bad.error_code(), Some("malformed_json"));
    let all = app.owner.get("/v1/tasks?all=true").await.unwrap().body;
    assert_eq!(all["tasks"], json!([]));
    let audit = app.owner.get("/v1/audit").await.unwrap().body;
    assert!(
        !audit.to_string().contains("task_created"),
        "nothing audited as created"
    );
}

#[tokio::test]
async fn without_an_inbox_table_tasks_are_refused() {
    let app = spawn_app("").await;
    let res = add(&app, json!({"text": "research pricing"})).await;
    assert_eq!(res.status, 422);
    assert!(
        res.error_message().contains("the inbox is off"),
        "{:?}",
        res.body
    );
}

#[tokio::test]
async fn a_task_no_agent_takes_is_refused() {
    let app = spawn_app("[inbox]\n[inbox.routes]\nresearch = \"boss\"\n").await;
    let res = add(&app, json!({"text": "say hello to the team"})).await;
    assert_eq!(res.status, 422);
    assert!(
        res.error_message().contains("no agent takes other tasks"),
        "{:?}",
        res.body
    );
    let ok = add(&app, json!({"text": "research pricing"})).await;
    assert_eq!(ok.status, 201);
    assert_eq!(ok.body["agent"], "boss");
}

#[tokio::test]
async fn agents_cannot_hand_over_tasks_nor_touch_each_others() {
    let app = start("", "").await;
    // Handing over on the agents' socket: refused and audited.
    let res = app
        .agent
        .clone()
        .with_token(Some("other-token-456".into()))
        .post("/v1/tasks", &json!({"text": "research pricing"}))
        .await
        .unwrap();
    assert_eq!(res.status, 403, "{:?}", res.body);
    let audit = app.owner.get("/v1/audit").await.unwrap().body;
    let refused: Vec<&Value> = audit["audit"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["event"] == "unauthorised_attempt")
        .collect();
    assert_eq!(refused.len(), 1, "{audit}");
    assert_eq!(refused[0]["actor"], "other");

    let t = add_ok(&app, "research pricing").await;
    let id = t["id"].as_str().unwrap();
    // Claiming as the researcher without its token, or with another's: refused.
    for token in [None, Some("other-token-456")] {
        let res = app
            .agent
            .clone()
            .with_token(token.map(str::to_string))
            .post("/v1/tasks/claim", &json!({"agent": "researcher"}))
            .await
            .unwrap();
        assert_eq!(res.status, 401, "{:?}", res.body);
    }
    // Another agent claims nothing, cannot read it or report on it.
    assert!(claim(&app, "claude-code", 0.0).await.is_null());
    let c = claim(&app, "researcher", 0.0).await;
    let lease = c["lease"].as_str().unwrap();
    let other = app.agent.clone().with_token(Some("other-token-456".into()));
    let read = other.get(&format!("/v1/tasks/{id}")).await.unwrap();
    assert_eq!(read.status, 401, "{:?}", read.body);
    let forged = other
        .post(
            &format!("/v1/tasks/{id}/complete"),
            &json!({"lease": lease, "result": "done"}),
        )
        .await
        .unwrap();
    assert_eq!(forged.status, 401, "{:?}", forged.body);
    assert_eq!(task(&app, id).await["status"], "running");
    let listed = other.get("/v1/tasks?agent=researcher").await.unwrap();
    assert_eq!(listed.status, 401);
    // Its own list shows it.
    let mine = agent(&app, "researcher")
        .get("/v1/tasks?agent=researcher")
        .await
        .unwrap();
    assert_eq!(mine.body["tasks"][0]["id"], id);
    // Agents cannot cancel or answer tasks.
    for what in ["cancel", "retry", "answer"] {
        let res = agent(&app, "researcher")
            .post(&format!("/v1/tasks/{id}/{what}"), &json!({"text": "x"}))
            .await
            .unwrap();
        assert_eq!(res.status, 403, "{what}: {:?}", res.body);
    }
    // A forged lease is refused.
    let res = report(
        &app,
        "researcher",
        id,
        "progress",
        json!({"lease": "forged"}),
    )
    .await;
    assert_eq!(res.error_code(), Some("lease_lost"), "{:?}", res.body);
}

#[tokio::test]
async fn a_level_one_task_waits_for_the_owners_go() {
    let app = start("", "").await;
    let t = add_ok(&app, "fix the off-by-one in src/retry.rs backoff").await;
    assert_eq!(t["intent"], "code_change");
    assert_eq!(
        (t["status"].as_str(), t["level"].as_i64()),
        (Some("pending"), Some(1))
    );
    let id = t["id"].as_str().unwrap();
    assert!(claim(&app, "claude-code", 0.0).await.is_null());
    let queued = app
        .owner_as("alice")
        .post(
            &format!("/v1/requests/{}/decision", t["short_id"].as_str().unwrap()),
            &json!({"decision": "queue"}),
        )
        .await
        .unwrap();
    assert_eq!(queued.status, 200, "{:?}", queued.body);
    assert_eq!(queued.body["kind"], "task");
    assert_eq!(queued.body["status"], "queued");
    assert_eq!(queued.body["decided_by"], "alice");
    assert_eq!(claim(&app, "claude-code", 0.0).await["id"], id);

    // A second one is rejected instead: it never runs.
    let t = add_ok(&app, "rename parse_config to load_config").await;
    let id = t["id"].as_str().unwrap();
    let res = app
        .owner
        .post(
            &format!("/v1/requests/{id}/decision"),
            &json!({"decision": "reject"}),
        )
        .await
        .unwrap();
    assert_eq!(res.body["status"], "rejected");
    let again = app
        .owner
        .post(
            &format!("/v1/requests/{id}/decision"),
            &json!({"decision": "queue"}),
        )
        .await
        .unwrap();
    assert_eq!(again.status, 409);
    assert!(
        again.error_message().contains("is rejected"),
        "{:?}",
        again.body
    );
    let bad = app
        .owner
        .post(
            &format!("/v1/requests/{id}/decision"),
            &json!({"decision": "approve-always"}),
        )
        .await
        .unwrap();
    assert_eq!(bad.status, 400, "{:?}", bad.body);
}

#[tokio::test]
async fn a_vague_task_waits_for_a_clarifying_answer() {
    let app = start("", "").await;
    let t = add_ok(&app, "refactor everything").await;
    assert_eq!(t["status"], "waiting");
    let q = &t["question"];
    assert_eq!(q["purpose"], "clarify");
    assert_eq!(q["choices"].as_array().unwrap().len(), 2);
    let id = t["id"].as_str().unwrap();
    assert!(claim(&app, "claude-code", 0.0).await.is_null());
    let res = app
        .owner_as("alice")
        .post(
            &format!("/v1/tasks/{id}/answer"),
            &json!({"text": "only src/chat/delivery.rs: one call per pass"}),
        )
        .await
        .unwrap();
    assert_eq!(res.status, 200, "{:?}", res.body);
    // Still a code change: the owner's go comes next.
    assert_eq!(res.body["status"], "pending");
    assert_eq!(
        res.body["clarification"],
        "only src/chat/delivery.rs: one call per pass"
    );
    assert!(res.body["prompt"]
        .as_str()
        .unwrap()
        .contains("one call per pass"));
    assert!(res.body.get("question").is_none());
    // Answering again: nothing is asked now.
    let again = app
        .owner
        .post(&format!("/v1/tasks/{id}/answer"), &json!({"text": "x"}))
        .await
        .unwrap();
    assert_eq!(again.status, 409, "{:?}", again.body);
    assert_eq!(
        events(&app, id).await,
        ["task_created", "task_asked", "task_answered"]
    );
}

#[tokio::test]
async fn an_agent_runs_at_most_its_bound_of_tasks_at_once() {
    let app = start("[inbox.concurrency]\nclaude-code = 2\n", "").await;
    let mut ids = Vec::new();
    for i in 0..3 {
        let t = add_ok(&app, &format!("say hello to team {i}")).await;
        ids.push(t["id"].as_str().unwrap().to_string());
    }
    let a = claim(&app, "claude-code", 0.0).await;
    let b = claim(&app, "claude-code", 0.0).await;
    assert!(!a.is_null() && !b.is_null());
    assert!(
        claim(&app, "claude-code", 0.0).await.is_null(),
        "the bound holds"
    );
    // A waiting claim gets the third as soon as a slot frees.
    let waiter = {
        let client = agent(&app, "claude-code");
        tokio::spawn(async move {
            client
                .post(
                    "/v1/tasks/claim",
                    &json!({"agent": "claude-code", "wait": 20}),
                )
                .await
                .unwrap()
        })
    };
    let res = report(
        &app,
        "claude-code",
        a["id"].as_str().unwrap(),
        "complete",
        json!({"lease": a["lease"], "result": "hi"}),
    )
    .await;
    assert_eq!(res.body["status"], "completed");
    let got = waiter.await.unwrap();
    let third = &got.body["task"];
    assert!(ids.contains(&third["id"].as_str().unwrap().to_string()));
    assert_ne!(third["id"], a["id"]);
    assert_ne!(third["id"], b["id"]);
}

#[tokio::test]
async fn a_lapsed_lease_queues_the_task_again_once_then_fails_it() {
    let app = start("lease = \"1s\"\n", "").await;
    let t = add_ok(&app, "say hello to the team").await;
    let id = t["id"].as_str().unwrap();
    let first = claim(&app, "claude-code", 0.0).await;
    // The worker dies: no report.
    let t = wait_status(&app, id, "queued").await;
    assert_eq!(t["attempts"], 1);
    let second = claim(&app, "claude-code", 5.0).await;
    assert_eq!(
        (second["id"].as_str(), second["attempt"].as_i64()),
        (Some(id), Some(2))
    );
    // The first worker comes back too late: its lease is not the task's any more.
    let late = report(
        &app,
        "claude-code",
        id,
        "complete",
        json!({"lease": first["lease"], "result": "done"}),
    )
    .await;
    assert_eq!(late.error_code(), Some("lease_lost"), "{:?}", late.body);
    // The second dies as well: failed, with a reason.
    let t = wait_status(&app, id, "failed").await;
    assert!(
        t["error"].as_str().unwrap().contains("lease lapsed twice"),
        "{t}"
    );
    assert_eq!(
        events(&app, id).await,
        [
            "task_created",
            "task_claimed",
            "task_requeued",
            "task_claimed",
            "task_lease_lapsed"
        ]
    );
    // The owner retries: queued afresh.
    let res = app
        .owner
        .post(&format!("/v1/tasks/{id}/retry"), &json!({}))
        .await
        .unwrap();
    assert_eq!(res.body["status"], "queued", "{:?}", res.body);
    assert_eq!(claim(&app, "claude-code", 0.0).await["attempt"], 1);
}

#[tokio::test]
async fn a_run_past_its_intents_timeout_is_failed_by_gatebot() {
    // The lease outlasts the deadline, so only the timeout can end the run.
    let app = start(
        "lease = \"60s\"\ntimeout_grace = \"1s\"\n[inbox.timeouts]\nquestion = \"1s\"\n",
        "",
    )
    .await;
    let t = add_ok(&app, "what time is it in Tokyo?").await;
    assert_eq!(t["intent"], "question");
    let id = t["id"].as_str().unwrap();
    let c = claim(&app, "claude-code", 0.0).await;
    assert_eq!(c["timeout_secs"], 1.0);
    let failed = wait_status(&app, id, "failed").await;
    assert_eq!(failed["status"], "failed");
    assert!(
        failed["error"].as_str().unwrap().contains("timed out"),
        "{failed}"
    );
    assert!(events(&app, id)
        .await
        .contains(&"task_timed_out".to_string()));
}

#[tokio::test]
async fn a_task_that_needs_input_resumes_with_the_answer_and_its_session() {
    let app = start("", "").await;
    let t = add_ok(&app, "say hello to the team").await;
    let id = t["id"].as_str().unwrap();
    let c = claim(&app, "claude-code", 0.0).await;
    let bad = report(
        &app,
        "claude-code",
        id,
        "needs-input",
        json!({"lease": c["lease"], "questions": []}),
    )
    .await;
    assert_eq!(bad.status, 422, "{:?}", bad.body);
    let res = report(
        &app,
        "claude-code",
        id,
        "needs-input",
        json!({"lease": c["lease"], "questions": ["Which team?", "Which channel?"], "session_id": "sess-42"}),
    )
    .await;
    assert_eq!(res.body["status"], "waiting", "{:?}", res.body);
    assert_eq!(res.body["question"]["purpose"], "input");
    assert_eq!(
        res.body["question"]["questions"],
        json!(["Which team?", "Which channel?"])
    );
    // Its slot is free while it waits; nothing to claim.
    assert!(claim(&app, "claude-code", 0.0).await.is_null());
    let res = app
        .owner
        .post(
            &format!("/v1/tasks/{id}/answer"),
            &json!({"text": "the ops team, in #ops"}),
        )
        .await
        .unwrap();
    assert_eq!(res.body["status"], "queued", "{:?}", res.body);
    let c = claim(&app, "claude-code", 0.0).await;
    assert_eq!(c["input"], "the ops team, in #ops");
    assert_eq!(c["session_id"], "sess-42");
    assert_eq!(c["questions"], json!(["Which team?", "Which channel?"]));
}

#[tokio::test]
async fn a_completion_is_read_for_failures_and_pending_questions() {
    let app = start("", "").await;
    let run = async |result: &str| {
        let t = add_ok(&app, "say hello to the team").await;
        let id = t["id"].as_str().unwrap().to_string();
        let c = claim(&app, "claude-code", 0.0).await;
        report(
            &app,
            "claude-code",
            &id,
            "complete",
            json!({"lease": c["lease"], "result": result}),
        )
        .await
        .body
    };
    let failed = run("Tried to post.\nError: authentication failed for slack.com").await;
    assert_eq!(failed["status"], "failed");
    assert!(
        failed["error"]
            .as_str()
            .unwrap()
            .contains("authentication failed for slack.com"),
        "{failed}"
    );
    let waiting =
        run("Before I post:\n1. Which team?\n2. Which channel?\n3. Now or tomorrow?").await;
    assert_eq!(waiting["status"], "waiting");
    assert_eq!(
        waiting["question"]["questions"].as_array().unwrap().len(),
        3
    );
    let done = run("Posted. Anything else?").await;
    assert_eq!(done["status"], "completed");
}

#[tokio::test]
async fn a_cost_out_of_range_is_refused_and_the_task_keeps_running() {
    let app = start("", "").await;
    let t = add_ok(&app, "say hello to the team").await;
    let id = t["id"].as_str().unwrap();
    let c = claim(&app, "claude-code", 0.0).await;
    for (path, cost) in [
        ("complete", json!(1e308)),
        ("complete", json!(-0.01)),
        ("fail", json!(100_000.01)),
    ] {
        let res = report(
            &app,
            "claude-code",
            id,
            path,
            if path == "complete" {
                json!({"lease": c["lease"], "result": "done", "cost_usd": cost})
            } else {
                json!({"lease": c["lease"], "error": "no", "cost_usd": cost})
            },
        )
        .await;
        assert_eq!(res.status, 422, "{cost}: {:?}", res.body);
        assert!(
            res.error_message()
                .contains("`cost_usd` must be from 0 to 100000"),
            "{}",
            res.error_message()
        );
    }
    // Nothing was lost: the task still runs under its lease, and a sane cost is kept.
    assert_eq!(task(&app, id).await["status"], "running");
    let done = report(
        &app,
        "claude-code",
        id,
        "complete",
        json!({"lease": c["lease"], "result": "done", "cost_usd": 12.5}),
    )
    .await;
    assert_eq!(done.body["status"], "completed", "{:?}", done.body);
    assert_eq!(done.body["cost_usd"], 12.5);
}

#[tokio::test]
async fn a_cancelled_task_tells_its_worker_to_stop_and_can_be_retried() {
    let app = start("", "").await;
    let t = add_ok(&app, "say hello to the team").await;
    let id = t["id"].as_str().unwrap();
    let c = claim(&app, "claude-code", 0.0).await;
    let res = app
        .owner_as("alice")
        .post(&format!("/v1/tasks/{id}/cancel"), &json!({}))
        .await
        .unwrap();
    assert_eq!(res.body["status"], "cancelled");
    let p = report(
        &app,
        "claude-code",
        id,
        "progress",
        json!({"lease": c["lease"], "text": "still going"}),
    )
    .await;
    assert_eq!(p.error_code(), Some("task_cancelled"), "{:?}", p.body);
    let again = app
        .owner
        .post(&format!("/v1/tasks/{id}/cancel"), &json!({}))
        .await
        .unwrap();
    assert_eq!(again.status, 409);
    let r = app
        .owner
        .post(&format!("/v1/tasks/{id}/retry"), &json!({}))
        .await
        .unwrap();
    assert_eq!(r.body["status"], "queued");
}

#[tokio::test]
async fn requests_name_the_task_of_their_agent_only() {
    let app = start("", "").await;
    let t = add_ok(&app, "say hello to the team").await;
    let id = t["id"].as_str().unwrap();
    let res = app
        .submit(json!({"agent": "claude-code", "tool": "send_email", "args": {"to": "a@example.com"}, "task_id": id}))
        .await;
    assert_eq!(res.status, 201, "{:?}", res.body);
    assert_eq!(res.body["task_id"], id);
    assert_eq!(res.body["status"], "pending");
    let request = res.body["id"].as_str().unwrap().to_string();
    // Another agent cannot hang its requests on this task, nor learn that it exists.
    for (agent, task_id) in [("mailer", id), ("mailer", "01NOTATASK0000000000000000")] {
        let res = app
            .submit(json!({"agent": agent, "tool": "send_email", "args": {}, "task_id": task_id}))
            .await;
        assert_eq!(res.status, 422, "{:?}", res.body);
        assert!(
            res.error_message()
                .contains("is not a task of agent `mailer`"),
            "{:?}",
            res.body
        );
    }
    // When the task ends, its request that still waits for a human is withdrawn.
    app.owner
        .post(&format!("/v1/tasks/{id}/cancel"), &json!({}))
        .await
        .unwrap();
    app.wait_for_status(&request, "cancelled").await;
    // It says who ended the task, not that the agent gave up on it.
    let got = app.get(&request, 0.0).await.body;
    let short = t["short_id"].as_str().unwrap();
    let who = got["decided_by"].as_str().unwrap().to_string();
    assert_ne!(who, "claude-code", "{got}");
    assert_eq!(
        got["reason"],
        format!("withdrawn: its task {short} was cancelled by {who}"),
        "{got}"
    );
    assert!(
        got["message"]
            .as_str()
            .unwrap()
            .contains("withdrawn, because its task"),
        "{got}"
    );
}

#[tokio::test]
async fn tasks_in_every_state_survive_a_restart() {
    let extra = "";
    let keys = "lease = \"3s\"\n";
    let app = start(keys, extra).await;
    let pending = add_ok(&app, "fix the off-by-one in src/retry.rs").await;
    let waiting = add_ok(&app, "refactor everything").await;
    let completed = add_ok(&app, "say hello to A").await;
    let failed = add_ok(&app, "say hello to B").await;
    let cancelled = add_ok(&app, "say hello to C").await;
    let running = add_ok(&app, "say hello to D").await;
    let rejected = add_ok(&app, "rename parse_config to load_config").await;
    let queued = add_ok(&app, "say hello to E").await;
    let id = |t: &Value| t["id"].as_str().unwrap().to_string();
    app.owner
        .post(&format!("/v1/tasks/{}/cancel", id(&cancelled)), &json!({}))
        .await
        .unwrap();
    app.owner
        .post(
            &format!("/v1/requests/{}/decision", id(&rejected)),
            &json!({"decision": "reject"}),
        )
        .await
        .unwrap();
    for (t, outcome) in [
        (&completed, Some(json!({"result": "ok"}))),
        (&failed, Some(json!({"error": "no"}))),
        (&running, None),
    ] {
        let c = claim(&app, "claude-code", 0.0).await;
        assert_eq!(c["id"], t["id"]);
        if let Some(mut body) = outcome {
            body["lease"] = c["lease"].clone();
            let what = if body.get("result").is_some() {
                "complete"
            } else {
                "fail"
            };
            let res = report(&app, "claude-code", &id(t), what, body).await;
            assert!(res.status.is_success(), "{:?}", res.body);
        }
    }
    let want = [
        (&pending, "pending"),
        (&waiting, "waiting"),
        (&completed, "completed"),
        (&failed, "failed"),
        (&cancelled, "cancelled"),
        (&running, "running"),
        (&rejected, "rejected"),
        (&queued, "queued"),
    ];
    for (t, status) in want {
        assert_eq!(task(&app, &id(t)).await["status"], status);
    }
    let dir = app.stop().await;
    let app = spawn_app_in(dir, &with_inbox(keys, extra)).await;
    for (t, status) in want {
        let now = task(&app, &id(t)).await;
        // The running task's worker died with the daemon: it may have lapsed already.
        if status == "running" {
            assert!(["running", "queued"].contains(&now["status"].as_str().unwrap()));
            continue;
        }
        assert_eq!(now["status"], status, "{now}");
    }
    assert_eq!(
        task(&app, &id(&waiting)).await["question"]["purpose"],
        "clarify"
    );
    // The queued one and the lapsed one are claimed after the restart.
    let mut claimed = Vec::new();
    for _ in 0..2 {
        let c = claim(&app, "claude-code", 10.0).await;
        claimed.push(c["id"].as_str().unwrap().to_string());
    }
    claimed.sort();
    let mut want = vec![id(&queued), id(&running)];
    want.sort();
    assert_eq!(claimed, want);
}
