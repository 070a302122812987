//! The dashboard's agents pages over HTTP: every agent's tier and where it comes from,
//! pauses, evidence per day, grants; and the owner's changes taken there (tier, reset,
//! proposal, pause with deny-pending, resume, revoke) as the CLI takes them, recorded
//! as the person on the dashboard, refused without the form's token.

use serde_json::{json, Value};

use crate::dashboard::{signed_in, start, Browser, Page};
use crate::helpers::TestApp;
use crate::trust::{assess, trust};

/// The trail's rows of `event`, oldest first.
pub(crate) async fn audited(app: &TestApp, event: &str) -> Vec<Value> {
    let rows = app.owner.get("/v1/audit").await.unwrap().body["audit"].clone();
    rows.as_array()
        .unwrap()
        .iter()
        .filter(|r| r["event"] == event)
        .cloned()
        .collect()
}

/// The person and the surface an audit row names.
pub(crate) fn by(row: &Value) -> (&str, &str) {
    (
        row["actor"].as_str().unwrap_or_default(),
        row["channel"].as_str().unwrap_or_default(),
    )
}

async fn agent_page(b: &Browser, name: &str) -> Page {
    let page = b.get(&format!("/agents/{name}")).await;
    assert_eq!(page.status, 200, "{page:?}");
    page
}

#[tokio::test]
async fn the_agents_pages_show_tiers_pauses_evidence_and_unknown_names_are_not_found() {
    let app = start().await;
    let b = signed_in(&app).await;
    for (i, verb) in ["approve", "approve", "deny"].into_iter().enumerate() {
        let (id, _) = app
            .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"n": i}}))
            .await;
        app.decide_ok(&id, verb, None).await;
    }
    let list = b.get("/agents").await;
    assert_eq!(list.status, 200);
    for needle in [
        r#"<a href="/agents/mailer">mailer</a>"#,
        "semi-autonomous, as bot.toml sets it",
        "draft-only, as bot.toml sets it",
        r#"aria-current="page">Agents</a>"#,
    ] {
        assert!(list.body.contains(needle), "{needle}: {}", list.body);
    }
    let page = agent_page(&b, "mailer").await;
    // The chart: today's bar, its numbers in words for screen readers and in a table.
    assert!(page.body.contains("<svg"), "{}", page.body);
    assert!(
        page.body
            .contains("Over the last 30 days: 2 approved, 1 denied, 0 escalated"),
        "{}",
        page.body
    );
    assert!(page.body.contains(r#"<rect class="denied""#));
    assert!(!page.body.contains("style="), "no inline style");
    assert!(page.body.contains("3 request(s)"), "{}", page.body);

    // Names gatebot does not know, or that are no names at all.
    for path in [
        "/agents/nobody",
        "/agents/%3Cimg%20src%3Dx%3E",
        "/agents/a%2Fb",
    ] {
        let p = b.get(path).await;
        assert_eq!(p.status, 404, "{path}: {p:?}");
        assert!(!p.body.contains("<img"), "{}", p.body);
    }
    // Signed out: to the sign-in page.
    assert_eq!(Browser::new(&app).get("/agents/mailer").await.status, 303);
}

#[tokio::test]
async fn the_tier_is_set_and_reset_here_as_the_cli_does_by_the_person_on_the_dashboard() {
    let app = start().await;
    let b = signed_in(&app).await;
    let csrf = agent_page(&b, "boss").await.csrf();
    let hostile = "<img src=x onerror=alert(1)> javascript:alert(1) \u{202e}gnp.exe";
    let set = b
        .post(
            "/agents/boss/tier",
            &[("csrf", &csrf), ("tier", "supervised"), ("reason", hostile)],
        )
        .await;
    assert_eq!(
        (set.status, set.header("location").as_deref()),
        (303, Some("/agents/boss")),
        "{set:?}"
    );
    let v = trust(&app, "boss").await;
    assert_eq!(
        (v["tier"].as_str(), v["source"].as_str()),
        (Some("supervised"), Some("override"))
    );
    assert_eq!(v["tier_override"]["by"]["name"], "alice");
    assert_eq!(v["tier_override"]["by"]["via"], "dashboard");
    // As the CLI's tier: the next call follows it.
    let asks = app.submit_ok("boss", "query_org_data", json!({})).await;
    assert_eq!(asks["status"], "pending");
    let page = agent_page(&b, "boss").await;
    assert!(
        page.body.contains("Set by alice on the dashboard"),
        "{}",
        page.body
    );
    assert!(page.body.contains("&lt;img src=x onerror=alert(1)&gt;"));
    assert!(!page.body.contains("<img") && !page.body.contains('\u{202e}'));
    assert!(page.body.contains("\\u202e") && !page.body.contains("href=\"javascript"));
    let row = audited(&app, "tier_changed").await.pop().unwrap();
    assert_eq!(by(&row), ("alice", "dashboard"), "{row}");

    // Without the page's token: refused, nothing changes.
    let forged = b
        .post(
            "/agents/boss/tier",
            &[("csrf", "0".repeat(64).as_str()), ("reset", "1")],
        )
        .await;
    assert_eq!(forged.status, 403);
    assert_eq!(trust(&app, "boss").await["tier"], "supervised");
    // A tier that is not one: said in words, nothing changes.
    let bad = b
        .post(
            "/agents/boss/tier",
            &[("csrf", &csrf), ("tier", "god_mode")],
        )
        .await;
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("Choose one of the tiers"), "{}", bad.body);

    // Back to bot.toml's.
    let reset = b
        .post("/agents/boss/tier", &[("csrf", &csrf), ("reset", "1")])
        .await;
    assert_eq!(reset.status, 303, "{reset:?}");
    let v = trust(&app, "boss").await;
    assert_eq!(
        (v["tier"].as_str(), v["source"].as_str()),
        (Some("autonomous"), Some("config"))
    );
    assert_eq!(audited(&app, "tier_changed").await.len(), 2);
    // An agent gatebot does not know.
    let unknown = b
        .post(
            "/agents/nobody/tier",
            &[("csrf", &csrf), ("tier", "supervised")],
        )
        .await;
    assert_eq!(unknown.status, 404, "{unknown:?}");
}

#[tokio::test]
async fn pause_with_deny_pending_and_resume_are_the_clis_and_audited_as_the_person() {
    let app = start().await;
    let b = signed_in(&app).await;
    let (first, _) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"n": 1}}))
        .await;
    let (second, _) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"n": 2}}))
        .await;
    let page = agent_page(&b, "mailer").await;
    assert!(
        page.body.contains("Also deny its pending requests (2)"),
        "{}",
        page.body
    );
    let csrf = page.csrf();
    let refused = b
        .post("/agents/mailer/pause", &[("csrf", "nope"), ("reason", "x")])
        .await;
    assert_eq!(refused.status, 403);
    assert!(trust(&app, "mailer").await["pause"].is_null());

    let paused = b
        .post(
            "/agents/mailer/pause",
            &[
                ("csrf", &csrf),
                ("reason", "runaway loop"),
                ("deny_pending", "1"),
            ],
        )
        .await;
    assert_eq!(paused.status, 303, "{paused:?}");
    for id in [&first, &second] {
        let r = app.get(id, 0.0).await.body;
        assert_eq!(r["status"], "rejected", "{r}");
    }
    let v = trust(&app, "mailer").await;
    assert_eq!(v["pause"]["by"]["name"], "alice");
    assert_eq!(v["pause"]["by"]["via"], "dashboard");
    assert_eq!(v["pause"]["reason"], "runaway loop");
    let blocked = app.submit_ok("mailer", "query_org_data", json!({})).await;
    assert_eq!(blocked["status"], "blocked");
    let row = audited(&app, "agent_paused").await.pop().unwrap();
    assert_eq!(by(&row), ("alice", "dashboard"), "{row}");
    let page = agent_page(&b, "mailer").await;
    assert!(
        page.body.contains("Paused by alice on the dashboard") && page.body.contains("Resume"),
        "{}",
        page.body
    );
    assert!(b.get("/agents").await.body.contains("paused</span>"));

    let resumed = b
        .post("/agents/mailer/resume", &[("csrf", csrf.as_str())])
        .await;
    assert_eq!(resumed.status, 303, "{resumed:?}");
    assert!(trust(&app, "mailer").await["pause"].is_null());
    let row = audited(&app, "agent_resumed").await.pop().unwrap();
    assert_eq!(by(&row), ("alice", "dashboard"), "{row}");
}

#[tokio::test]
async fn a_proposal_is_answered_here_through_the_decide_code_and_a_second_answer_says_who_was_first(
) {
    let app = start().await;
    let b = signed_in(&app).await;
    for i in 0..3 {
        let (id, _) = app
            .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"n": i}}))
            .await;
        app.decide_ok(&id, "deny", Some("wrong recipient")).await;
    }
    let o = assess(&app, "mailer").await;
    let (pid, short) = (
        o["proposal"]["id"].as_str().unwrap().to_string(),
        o["proposal"]["short_id"].as_str().unwrap().to_string(),
    );
    let page = agent_page(&b, "mailer").await;
    assert!(
        page.body.contains("Demote mailer to supervised?"),
        "{}",
        page.body
    );
    assert!(page.body.contains(&short));
    let csrf = page.csrf();
    let form = |verb: &'static str| {
        [
            ("csrf", csrf.clone()),
            ("proposal", pid.clone()),
            ("verb", verb.to_string()),
            ("reason", "it was a bad day".to_string()),
        ]
    };
    let pairs = form("decline");
    let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let declined = b.post("/agents/mailer/proposal", &pairs).await;
    assert_eq!(declined.status, 303, "{declined:?}");
    let v = trust(&app, "mailer").await;
    assert_eq!(v["tier"], "semi_autonomous");
    assert!(v["proposal"].is_null(), "{v}");
    let row = audited(&app, "proposal_declined").await.pop().unwrap();
    assert_eq!(by(&row), ("alice", "dashboard"), "{row}");
    // Again (another tab): nothing changes, and it says who answered first.
    let pairs = form("approve");
    let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let again = b.post("/agents/mailer/proposal", &pairs).await;
    assert_eq!(again.status, 409, "{again:?}");
    assert!(
        again
            .body
            .contains("already declined by alice on the dashboard"),
        "{}",
        again.body
    );
    assert_eq!(trust(&app, "mailer").await["tier"], "semi_autonomous");
    // Only a proposal about this agent, and only approve or decline.
    let pairs = [
        ("csrf", csrf.as_str()),
        ("proposal", pid.as_str()),
        ("verb", "approve"),
    ];
    assert_eq!(b.post("/agents/boss/proposal", &pairs).await.status, 400);
    let pairs = [
        ("csrf", csrf.as_str()),
        ("proposal", pid.as_str()),
        ("verb", "approve-always"),
    ];
    assert_eq!(b.post("/agents/mailer/proposal", &pairs).await.status, 400);
}

#[tokio::test]
async fn a_grant_is_listed_and_revoked_here_and_the_agent_asks_again() {
    let app = start().await;
    let b = signed_in(&app).await;
    let (id, _) = app
        .submit_pending(json!({"agent": "mailer", "tool": "create_contact", "args": {"n": 0}}))
        .await;
    let made = app.decide_ok(&id, "approve-always", None).await;
    let (grant, short) = (
        made["grant"]["id"].as_str().unwrap().to_string(),
        made["grant"]["short_id"].as_str().unwrap().to_string(),
    );
    let page = agent_page(&b, "mailer").await;
    assert!(page.body.contains(&short), "{}", page.body);
    assert!(
        page.body.contains("the whole tool, until revoked"),
        "{}",
        page.body
    );
    let csrf = page.csrf();
    let forged = b
        .post("/agents/mailer/revoke", &[("csrf", "x"), ("grant", &grant)])
        .await;
    assert_eq!(forged.status, 403);
    let revoked = b
        .post(
            "/agents/mailer/revoke",
            &[("csrf", &csrf), ("grant", &grant)],
        )
        .await;
    assert_eq!(revoked.status, 303, "{revoked:?}");
    let asks = app
        .submit_ok("mailer", "create_contact", json!({"n": 1}))
        .await;
    assert_eq!(asks["status"], "pending", "{asks}");
    let row = audited(&app, "grant_revoked").await.pop().unwrap();
    assert_eq!(by(&row), ("alice", "dashboard"), "{row}");
    assert!(!agent_page(&b, "mailer").await.body.contains(&short));
    // Twice: it says by whom, and changes nothing.
    let again = b
        .post(
            "/agents/mailer/revoke",
            &[("csrf", &csrf), ("grant", &grant)],
        )
        .await;
    assert_eq!(again.status, 409, "{again:?}");
    assert!(
        again.body.contains("alice on the dashboard"),
        "{}",
        again.body
    );
}

#[tokio::test]
async fn assess_now_runs_the_assessment_as_the_cli_does_and_its_proposal_shows() {
    let app = start().await;
    let b = signed_in(&app).await;
    for i in 0..3 {
        let (id, _) = app
            .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"n": i}}))
            .await;
        app.decide_ok(&id, "deny", Some("wrong recipient")).await;
    }
    let page = agent_page(&b, "mailer").await;
    assert!(page.body.contains("Assess now"), "{}", page.body);
    assert!(!page.body.contains("Demote mailer to supervised?"));
    let csrf = page.csrf();
    let forged = b.post("/agents/mailer/assess", &[("csrf", "nope")]).await;
    assert_eq!(forged.status, 403, "{forged:?}");
    let unknown = b.post("/agents/nobody/assess", &[("csrf", &csrf)]).await;
    assert_eq!(unknown.status, 404, "{unknown:?}");
    let done = b.post("/agents/mailer/assess", &[("csrf", &csrf)]).await;
    assert_eq!(done.status, 303, "{done:?}");
    assert_eq!(done.header("location").as_deref(), Some("/agents/mailer"));
    let page = agent_page(&b, "mailer").await;
    assert!(
        page.body.contains("Demote mailer to supervised?"),
        "{}",
        page.body
    );
    assert_eq!(audited(&app, "proposal_created").await.len(), 1);
}
