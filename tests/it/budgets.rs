//! Budgets (credit gating) against a daemon with real SQLite: a declared cost over
//! what is left is blocked with the figures, an approval into overdraft is refused and
//! the request stays pending, the warning is posted once, results' and tasks' costs
//! count, the month rolls over, and a restart keeps the spend.

use std::sync::Arc;

use gatebot::chat::conversation::approval::{button_data, ButtonKind};
use gatebot::chat::memory::Memory;
use gatebot::config::Config;
use serde_json::{json, Value};

use crate::helpers::{
    eventually, gatebot_at, spawn_app, spawn_app_in, spawn_app_with_memory, TestApp,
};

/// mailer may spend 5 a day; everyone together 50 a day and 100 a month.
const BUDGETS: &str = r#"
[budgets]
currency = "USD"
daily = 50
monthly = 100
[budgets.agents.mailer]
daily = 5
"#;

/// A read-only call mailer makes without asking anyone, declaring `cost`.
async fn allowed_call(app: &TestApp, cost: f64) -> Value {
    let res = app
        .submit(json!({"agent": "mailer", "tool": "query_org_data", "args": {"q": cost.to_string()}, "cost": cost}))
        .await;
    assert!(res.status.is_success(), "{:?}", res.body);
    res.body
}

/// mailer's spend lines, as `gatebot agent mailer` shows them.
async fn spend_of(app: &TestApp, agent: &str) -> Vec<String> {
    let res = app
        .owner
        .get(&format!("/v1/agents/{agent}/trust"))
        .await
        .unwrap();
    assert!(res.status.is_success(), "{:?}", res.body);
    res.body["spend"]
        .as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_declared_cost_over_what_is_left_today_is_blocked_with_the_figures() {
    let app = spawn_app(BUDGETS).await;
    assert_eq!(allowed_call(&app, 3.0).await["status"], "allowed");
    let over = allowed_call(&app, 2.5).await;
    assert_eq!(over["status"], "blocked", "{over:?}");
    let reason = over["policy_reason"].as_str().unwrap();
    assert_eq!(
        reason,
        "over budget: it would cost 2.50 USD, and mailer's daily budget has 2.00 USD left \
         (3.00 USD of 5.00 USD spent today)"
    );
    // A call that asks a human is blocked too: never queued to be approved into overdraft.
    let res = app
        .submit(json!({"agent": "mailer", "tool": "send_email", "args": {"to": "a@example.com"}, "cost": 2.5}))
        .await;
    assert_eq!(res.body["status"], "blocked", "{:?}", res.body);
    let id = res.body["id"].as_str().unwrap();
    let audit = app.audit_rows(id).await;
    let evaluated = audit.iter().find(|r| r["event"] == "evaluated").unwrap();
    assert_eq!(evaluated["detail"]["outcome"], "blocked", "{evaluated:?}");
    assert!(evaluated["detail"]["reason"]
        .as_str()
        .unwrap()
        .starts_with("over budget"));
    // What is left still fits exactly; the blocked ones spent nothing.
    assert_eq!(allowed_call(&app, 2.0).await["status"], "allowed");
    assert_eq!(
        spend_of(&app, "mailer").await[0],
        "5.00 USD of 5.00 USD today"
    );
    // An agent without a budget of its own meets everyone's only.
    let boss = app
        .submit(json!({"agent": "boss", "tool": "query_org_data", "args": {}, "cost": 45.5}))
        .await;
    assert_eq!(boss.body["status"], "blocked", "{:?}", boss.body);
    assert!(boss.body["policy_reason"].as_str().unwrap().contains(
        "everyone's daily budget has 45.00 USD left (5.00 USD of 50.00 USD spent today)"
    ));
}

#[tokio::test]
async fn gatebot_ask_over_budget_exits_1_with_the_figures() {
    let app = spawn_app(BUDGETS).await;
    let socket = Config::load(&app.config_path).unwrap().queue.socket;
    let ask = |cost: &'static str| {
        let socket = socket.clone();
        async move {
            let cost = format!("--cost={cost}");
            gatebot_at(
                &socket,
                &[
                    "ask",
                    "--agent",
                    "mailer",
                    "--tool",
                    "query_org_data",
                    &cost,
                ],
            )
            .output()
            .await
            .unwrap()
        }
    };
    let ok = ask("4").await;
    assert_eq!(ok.status.code(), Some(0), "{ok:?}");
    let over = ask("1.5").await;
    assert_eq!(over.status.code(), Some(1), "{over:?}");
    let said =
        String::from_utf8_lossy(&over.stdout).to_string() + &String::from_utf8_lossy(&over.stderr);
    assert!(said.contains("1.00 USD left"), "{said}");
    // `gatebot decide` of an approval a budget refuses exits 1 with the figures.
    let control = Config::load(&app.config_path).unwrap().queue.control_socket;
    let (id, _) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {}, "cost": 1}))
        .await;
    allowed_call(&app, 0.5).await;
    let decide = gatebot_at(&control, &["decide", &id, "approve"])
        .output()
        .await
        .unwrap();
    assert_eq!(decide.status.code(), Some(1), "{decide:?}");
    let said = String::from_utf8_lossy(&decide.stderr);
    assert!(said.contains("stays pending: over budget"), "{said}");
    assert!(said.contains("0.50 USD left"), "{said}");
    // A cost that is no cost is refused by the command itself.
    for bad in ["-1", "NaN", "inf", "1e300", "lots"] {
        let out = ask(bad).await;
        assert_eq!(out.status.code(), Some(2), "{bad}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("is not a cost"),
            "{bad}: {out:?}"
        );
    }
}

#[tokio::test]
async fn bad_costs_are_refused_and_nothing_is_stored() {
    let app = spawn_app(BUDGETS).await;
    for (cost, status) in [
        (json!(-1), 422),
        (json!(1e300), 422),
        (json!("NaN"), 400),
        (json!("12"), 400),
    ] {
        let res = app
            .submit(json!({"agent": "mailer", "tool": "query_org_data", "args": {}, "cost": cost}))
            .await;
        assert_eq!(res.status, status, "{cost}: {:?}", res.body);
        assert!(
            res.body.to_string().contains("cost"),
            "{cost}: {:?}",
            res.body
        );
    }
    let list = app.owner.get("/v1/requests?limit=10").await.unwrap();
    assert_eq!(
        list.body["requests"].as_array().map(Vec::len),
        Some(0),
        "{:?}",
        list.body
    );
    // A result's cost is checked before the result is recorded.
    let a = allowed_call(&app, 1.0).await;
    let id = a["id"].as_str().unwrap();
    let res = app
        .agent
        .post(
            &format!("/v1/requests/{id}/result"),
            &json!({"ok": true, "cost": -3}),
        )
        .await
        .unwrap();
    assert_eq!(res.status, 422, "{:?}", res.body);
    assert_eq!(app.get(id, 0.0).await.body["status"], "allowed");
}

#[tokio::test]
async fn two_pending_requests_that_fit_alone_cannot_both_be_approved() {
    let app = spawn_app(BUDGETS).await;
    let send =
        |n: u32| json!({"agent": "mailer", "tool": "send_email", "args": {"n": n}, "cost": 3});
    let (first, _) = app.submit_pending(send(1)).await;
    let (second, short) = app.submit_pending(send(2)).await;
    app.decide_ok(&first, "approve", None).await;
    let refused = app.decide(&second, "approve", None).await;
    assert_eq!(refused.status, 409, "{:?}", refused.body);
    assert_eq!(refused.body["error"]["code"], "over_budget");
    assert_eq!(
        refused.body["error"]["message"],
        format!(
            "request {short} cannot be approved, and stays pending: over budget: it would cost \
             3.00 USD, and mailer's daily budget has 2.00 USD left (3.00 USD of 5.00 USD spent \
             today)"
        )
    );
    assert_eq!(app.get(&second, 0.0).await.body["status"], "pending");
    let audit = app.audit_rows(&second).await;
    let refusal = audit
        .iter()
        .find(|r| r["event"] == "decision_refused")
        .expect("the refusal is audited");
    assert_eq!(
        refusal["detail"]["budget"], "agent:mailer:day",
        "{refusal:?}"
    );
    // A denial is never refused for money.
    app.decide_ok(&second, "deny", Some("too dear")).await;
}

#[tokio::test]
async fn an_approval_refused_in_chat_says_the_figures_and_the_request_stays_pending() {
    let memory = Memory::new(&["ops"], 5);
    let app = spawn_app_with_memory(tempfile::tempdir().unwrap(), BUDGETS, &memory).await;
    let send =
        |n: u32| json!({"agent": "mailer", "tool": "send_email", "args": {"n": n}, "cost": 4});
    let (first, _) = app.submit_pending(send(1)).await;
    let (second, short) = app.submit_pending(send(2)).await;
    app.decide_ok(&first, "approve", None).await;
    let card = eventually("the second card", async || {
        memory.find("ops", &format!("id {short}"))
    })
    .await;
    // The approver sees what it costs.
    assert!(
        card.card.plain().contains("4.00 USD"),
        "{:?}",
        card.card.plain()
    );
    let approve = button_data(ButtonKind::Approve, &second);
    let answer = memory
        .press(&crate::helpers::alice(), "ops", &card.id, &approve)
        .await;
    let said = format!("{answer:?}");
    assert!(said.contains("over budget"), "{said}");
    assert!(said.contains("1.00 USD left"), "{said}");
    assert_eq!(app.get(&second, 0.0).await.body["status"], "pending");
}

#[tokio::test]
async fn owners_are_warned_once_per_budget_and_day() {
    let memory = Memory::new(&["ops"], 5);
    let app = spawn_app_with_memory(tempfile::tempdir().unwrap(), BUDGETS, &memory).await;
    let warnings = |m: &Arc<Memory>| {
        m.messages("ops")
            .into_iter()
            .filter(|m| m.card.plain().contains("Budget warning"))
            .map(|m| m.card.plain())
            .collect::<Vec<_>>()
    };
    allowed_call(&app, 3.9).await;
    allowed_call(&app, 0.1).await;
    let posted = eventually("the warning", async || {
        let w = warnings(&memory);
        (!w.is_empty()).then_some(w)
    })
    .await;
    assert_eq!(
        posted,
        [
            "Budget warning: mailer's daily budget is 80 % spent: 4.00 USD of 5.00 USD today, \
          1.00 USD left."
        ]
    );
    // More spend the same day tells nobody again.
    allowed_call(&app, 0.5).await;
    allowed_call(&app, 0.2).await;
    // A notice posted after the first would be in the chat by the time a card is.
    let (_, short) = app
        .submit_pending(json!({"agent": "intern", "tool": "query_org_data", "args": {}}))
        .await;
    eventually("the intern's card", async || {
        memory.find("ops", &format!("id {short}"))
    })
    .await;
    assert_eq!(warnings(&memory).len(), 1, "{:?}", warnings(&memory));
    let audit = app.owner.get("/v1/audit?limit=200").await.unwrap();
    let given = audit.body["audit"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["event"] == "budget_warning")
        .count();
    assert_eq!(given, 1);
}

#[tokio::test]
async fn a_results_reported_cost_takes_the_place_of_the_declared_one() {
    let app = spawn_app(BUDGETS).await;
    let a = allowed_call(&app, 1.0).await;
    let id = a["id"].as_str().unwrap();
    // A call that declared nothing counts what its result reports.
    let b = app
        .submit_ok("mailer", "query_org_data", json!({"q": "free?"}))
        .await;
    let b_id = b["id"].as_str().unwrap();
    for (id, cost) in [(id, 2.5), (b_id, 0.5)] {
        let res = app
            .agent
            .post(
                &format!("/v1/requests/{id}/result"),
                &json!({"ok": true, "cost": cost}),
            )
            .await
            .unwrap();
        assert!(res.status.is_success(), "{:?}", res.body);
    }
    assert_eq!(
        spend_of(&app, "mailer").await,
        [
            "3.00 USD of 5.00 USD today",
            "3.00 USD of 50.00 USD today (everyone together)",
            "3.00 USD of 100.00 USD this month (everyone together)"
        ]
    );
    assert!(app
        .audit_events(id)
        .await
        .contains(&"cost_reported".to_string()));
    // Another agent cannot report a cost on mailer's request.
    let res = app
        .agent
        .clone()
        .with_token(Some("other-token-456".into()))
        .post(
            &format!("/v1/requests/{id}/result"),
            &json!({"ok": true, "cost": 0}),
        )
        .await
        .unwrap();
    assert!(!res.status.is_success(), "{:?}", res.body);
}

#[tokio::test]
async fn a_tasks_reported_cost_counts_against_its_agents_budget() {
    let config = crate::inbox::with_inbox(
        "",
        "[budgets]\n[budgets.agents.researcher]\ndaily = 1\nmonthly = 10\n",
    );
    let app = spawn_app(&config).await;
    let t = crate::inbox::add_ok(&app, "research what our competitors charge").await;
    let id = t["id"].as_str().unwrap();
    let c = crate::inbox::claim(&app, "researcher", 0.0).await;
    let done = crate::inbox::report(
        &app,
        "researcher",
        id,
        "complete",
        json!({"lease": c["lease"], "result": "A: $20", "cost_usd": 0.25}),
    )
    .await;
    assert_eq!(done.status, 200, "{:?}", done.body);
    assert_eq!(
        spend_of(&app, "researcher").await,
        [
            "0.25 USD of 1.00 USD today",
            "0.25 USD of 10.00 USD this month"
        ]
    );
}

/// Moves every spend of the database at `db` back by `days`, as if it happened then
/// (the requests' times and the days they were added up in).
fn spent_days_ago(db: &std::path::Path, days: i64) {
    let c = rusqlite::Connection::open(db).unwrap();
    c.execute(
        "UPDATE approvals SET spent_at = spent_at - ?1 WHERE spent_at IS NOT NULL",
        [days * 86_400_000],
    )
    .unwrap();
    c.execute(
        "UPDATE spend_days SET day = date(day, ?1)",
        [format!("-{days} days")],
    )
    .unwrap();
}

#[tokio::test]
async fn spend_survives_a_restart_and_the_month_rolls_over() {
    if !crate::helpers::sqlite_only("spend_survives_a_restart_and_the_month_rolls_over") {
        return;
    }
    let app = spawn_app(BUDGETS).await;
    let db = Config::load(&app.config_path).unwrap().store.path;
    allowed_call(&app, 4.0).await;
    let dir = app.stop().await;

    let app = spawn_app_in(dir, BUDGETS).await;
    let over = allowed_call(&app, 1.5).await;
    assert_eq!(over["status"], "blocked", "the spend was kept: {over:?}");
    let dir = app.stop().await;

    // Another time zone: the days are counted again in it, and what was spent just now
    // is still today's.
    let kiritimati = BUDGETS.replace(
        "[budgets]\n",
        "[budgets]\ntimezone = \"Pacific/Kiritimati\"\n",
    );
    let app = spawn_app_in(dir, &kiritimati).await;
    assert_eq!(
        spend_of(&app, "mailer").await[0],
        "4.00 USD of 5.00 USD today"
    );
    assert_eq!(allowed_call(&app, 1.5).await["status"], "blocked");
    let dir = app.stop().await;

    // Yesterday's spend is not today's; last month's is not this month's.
    spent_days_ago(&db, 1);
    let app = spawn_app_in(dir, BUDGETS).await;
    assert_eq!(allowed_call(&app, 5.0).await["status"], "allowed");
    let dir = app.stop().await;
    spent_days_ago(&db, 40);
    let app = spawn_app_in(dir, BUDGETS).await;
    assert_eq!(
        spend_of(&app, "boss").await,
        [
            "0.00 USD of 50.00 USD today (everyone together)",
            "0.00 USD of 100.00 USD this month (everyone together)"
        ]
    );
    assert_eq!(allowed_call(&app, 5.0).await["status"], "allowed");
}

#[tokio::test]
async fn agents_cannot_read_spend_and_a_bad_budget_stops_the_config() {
    let app = spawn_app(BUDGETS).await;
    let res = app.agent.get("/v1/agents/mailer/trust").await.unwrap();
    assert_eq!(res.status, 404, "owners only: {:?}", res.body);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bot.toml");
    std::fs::write(
        &path,
        format!(
            "{}\n[budgets]\ntimezone = \"Nowhere/Special\"\n",
            crate::helpers::BASE_CONFIG
        ),
    )
    .unwrap();
    let errors = Config::check(&path).unwrap_err();
    assert!(
        errors
            .iter()
            .any(|e| e.key == "budgets.timezone" && e.message.contains("IANA")),
        "{errors:?}"
    );
}
