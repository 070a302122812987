//! Step-up (docs/teams.md): approving a request whose rule needs a second factor takes a
//! code from the person's authenticator app. Approve in chat does not decide: in the
//! person's private chat it answers with a single-use link to the dashboard's confirm
//! page (elsewhere, where to ask for one); there a wrong code is refused, a used code is
//! refused, the right one decides and opens a window in which the next needs none. The
//! CLI asks for a code; a person without a factor is told how to enroll, and their deny
//! counts. Wrong codes are counted and, past a few, refused for a while.

use serde_json::{json, Value};

use crate::dashboard::Browser;
use crate::fake_telegram::{FakeTelegram, User};
use crate::helpers::{eventually, free_port, spawn_app, TestApp};

const TOKEN: &str = "424242:AAE-fake-secret-token-for-step-up";
const ALICE: User = (42, "Alice");

fn config(fake: &FakeTelegram) -> String {
    format!(
        "[telegram]\ntoken = \"{TOKEN}\"\napi_url = \"{}\"\nchats = [7001]\napprovers = [42, 43]\n\
         [dashboard]\nlisten = \"{}\"\n\
         [people.alice]\ntelegram = 42\nunix = \"alice\"\n[people.bob]\ntelegram = 43\nunix = \"bob\"\n\
         [groups.oncall]\npeople = [\"alice\", \"bob\"]\n\
         [[approval_rules]]\nname = \"mail\"\ntool = \"send_email\"\nask = \"oncall\"\nstep_up = true\n",
        fake.url,
        free_port()
    )
}

fn mail(n: u32) -> Value {
    json!({"agent": "mailer", "tool": "send_email", "args": {"to": "ann@example.com", "n": n}})
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Enrolls a factor for `person` through the control socket; its secret and the code
/// that confirmed it.
async fn enroll(app: &TestApp, person: &str) -> (String, String) {
    let owner = app.owner_as(person);
    let res = owner
        .post("/v1/factors", &json!({"label": "phone"}))
        .await
        .unwrap();
    assert_eq!(res.status, 201, "{:?}", res.body);
    let secret = res.body["secret"].as_str().unwrap().to_string();
    assert!(res.body["uri"]
        .as_str()
        .unwrap()
        .starts_with(&format!("otpauth://totp/gatebot:{person}?")));
    let id = res.body["id"].as_str().unwrap();
    let code = gatebot::factor::code_at(&secret, now_secs()).unwrap();
    let done = owner
        .post(&format!("/v1/factors/{id}/confirm"), &json!({"code": code}))
        .await
        .unwrap();
    assert_eq!(done.status, 200, "{:?}", done.body);
    (secret, code)
}

/// A code of `secret` that no one has used yet: the next time step's (accepted one
/// step either side).
fn next_code(secret: &str) -> String {
    gatebot::factor::code_at(secret, now_secs() + 30).unwrap()
}

#[tokio::test]
async fn approve_in_chat_links_to_a_confirm_page_where_only_a_fresh_right_code_decides() {
    let fake = FakeTelegram::start(TOKEN).await;
    let app = spawn_app(&config(&fake)).await;
    let (secret, used) = enroll(&app, "alice").await;
    let (id, short) = app.submit_pending(mail(1)).await;
    let (_, message, params) = eventually("the prompt in alice's chat", async || {
        fake.prompts_of(Some(42), &short).pop()
    })
    .await;
    let data = params["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
        .as_str()
        .unwrap()
        .to_string();
    // Approve in her private chat: no decision, a link.
    fake.press(ALICE, 42, message, &data);
    let link = eventually("the confirm link", async || {
        fake.ok_calls("sendMessage").into_iter().find_map(|p| {
            let text = p["text"].as_str()?.to_string();
            text.contains("needs your second factor")
                .then(|| {
                    text.split_whitespace()
                        .find(|w| w.contains("/login/"))
                        .map(str::to_string)
                })
                .flatten()
        })
    })
    .await;
    assert_eq!(app.get(&id, 0.0).await.body["status"], "pending");
    // The link signs her in once and leads to the request's confirm page.
    let mut b = Browser::new(&app);
    let signed = b.sign_in(&link).await;
    assert_eq!(signed.status, 303, "{signed:?}");
    let confirm = signed.header("location").unwrap();
    assert_eq!(confirm, format!("/requests/{short}/confirm"));
    let page = b.get(&confirm).await;
    assert_eq!(page.status, 200, "{page:?}");
    assert!(
        page.body.contains("with your second factor"),
        "{}",
        page.body
    );
    let csrf = page.csrf();
    let post = |code: String| {
        let (b, confirm, csrf) = (&b, confirm.clone(), csrf.clone());
        async move { b.post(&confirm, &[("csrf", &csrf), ("code", &code)]).await }
    };
    // A wrong code, then the code that confirmed the enrolment: refused, nothing decided.
    let wrong = post("000000".into()).await;
    assert_eq!(wrong.status, 403, "{wrong:?}");
    assert!(wrong.body.contains("not right"), "{}", wrong.body);
    let reused = post(used).await;
    assert_eq!(reused.status, 403, "{reused:?}");
    assert!(reused.body.contains("used already"), "{}", reused.body);
    assert_eq!(app.get(&id, 0.0).await.body["status"], "pending");
    // The right, fresh code decides.
    let ok = post(next_code(&secret)).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    let done = app.wait_for_status(&id, "approved").await;
    assert_eq!(done["decided_by"], "alice");
    let vote = app
        .audit_rows(&id)
        .await
        .into_iter()
        .find(|r| r["event"] == "vote")
        .unwrap();
    assert_eq!(vote["detail"]["factor"], true, "{vote}");
    // Within the window, a second request is confirmed on the dashboard without a code.
    let (second, _) = app.submit_pending(mail(2)).await;
    let page = b.get(&format!("/requests/{second}/confirm")).await;
    let again = b
        .post(
            &format!("/requests/{second}/confirm"),
            &[("csrf", &page.csrf()), ("code", "")],
        )
        .await;
    assert_eq!(again.status, 200, "{}", again.body);
    app.wait_for_status(&second, "approved").await;
    // The window is the browser's: the CLI still asks for a code.
    let (third, third_short) = app.submit_pending(mail(3)).await;
    let cli = app
        .owner_as("alice")
        .post(
            &format!("/v1/requests/{third}/decision"),
            &json!({"decision": "approve"}),
        )
        .await
        .unwrap();
    assert_eq!(cli.status, 403, "{:?}", cli.body);
    assert_eq!(cli.error_code(), Some("step_up_required"));
    // The pending page's Approve leads to the confirm page too.
    let pending = b.get("/").await;
    let go = b
        .post(
            "/decide",
            &[
                ("csrf", &pending.csrf()),
                ("button", &format!("gb1:a:{third}")),
            ],
        )
        .await;
    assert_eq!(go.status, 303, "{go:?}");
    assert_eq!(
        go.header("location").unwrap(),
        format!("/requests/{third_short}/confirm")
    );
    assert_eq!(app.get(&third, 0.0).await.body["status"], "pending");
}

#[tokio::test]
async fn in_a_group_no_link_the_cli_takes_a_code_and_without_a_factor_only_a_deny_counts() {
    let fake = FakeTelegram::start(TOKEN).await;
    // The same team, asked in a group chat.
    let config = config(&fake).replace(
        "people = [\"alice\", \"bob\"]\n",
        "people = [\"alice\", \"bob\"]\ntelegram_chat = -5001\n",
    );
    let app = spawn_app(&config).await;
    let (secret, _) = enroll(&app, "alice").await;
    let (id, short) = app.submit_pending(mail(1)).await;
    let (_, message, params) = eventually("the prompt in the group", async || {
        fake.prompts_of(Some(-5001), &short).pop()
    })
    .await;
    let data = params["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
        .as_str()
        .unwrap()
        .to_string();
    fake.press(ALICE, -5001, message, &data);
    let told = eventually("the answer to the press", async || {
        fake.ok_calls("answerCallbackQuery")
            .into_iter()
            .find_map(|p| p["text"].as_str().map(str::to_string))
    })
    .await;
    assert!(told.contains("private chat"), "{told}");
    assert!(
        !fake
            .ok_calls("sendMessage")
            .iter()
            .any(|p| p["text"].as_str().unwrap_or_default().contains("/login/")),
        "no sign-in link in a group"
    );
    // bob has no factor: his approval is refused with how to enroll; his deny counts.
    let bob = app.owner_as("bob");
    let path = format!("/v1/requests/{id}/decision");
    let refused = bob
        .post(&path, &json!({"decision": "approve"}))
        .await
        .unwrap();
    assert_eq!(refused.status, 403, "{:?}", refused.body);
    assert_eq!(refused.error_code(), Some("no_factor"));
    assert!(refused.error_message().contains("gatebot factor enroll"));
    // alice on the CLI: a wrong code is refused; the right one decides.
    let alice = app.owner_as("alice");
    let wrong = alice
        .post(&path, &json!({"decision": "approve", "code": "123456"}))
        .await
        .unwrap();
    assert_eq!(wrong.error_code(), Some("wrong_code"), "{:?}", wrong.body);
    let ok = alice
        .post(
            &path,
            &json!({"decision": "approve", "code": next_code(&secret)}),
        )
        .await
        .unwrap();
    assert_eq!(ok.status, 200, "{:?}", ok.body);
    app.wait_for_status(&id, "approved").await;
    // Within her CLI window, the next needs no code.
    let (second, _) = app.submit_pending(mail(2)).await;
    let res = alice
        .post(
            &format!("/v1/requests/{second}/decision"),
            &json!({"decision": "approve"}),
        )
        .await
        .unwrap();
    assert_eq!(res.status, 200, "{:?}", res.body);
    // A deny from bob, who has no factor, decides.
    let (third, _) = app.submit_pending(mail(3)).await;
    let denied = bob
        .post(
            &format!("/v1/requests/{third}/decision"),
            &json!({"decision": "deny", "reason": "not today"}),
        )
        .await
        .unwrap();
    assert_eq!(denied.status, 200, "{:?}", denied.body);
    app.wait_for_status(&third, "rejected").await;
    // Wrong codes in a row: past five, every code is refused for a while.
    let (fourth, _) = app.submit_pending(mail(4)).await;
    let path = format!("/v1/requests/{fourth}/decision");
    let mut codes = Vec::new();
    for _ in 0..6 {
        let r = alice
            .post(&path, &json!({"decision": "approve", "code": "000000"}))
            .await
            .unwrap();
        codes.push(r.error_code().unwrap_or_default().to_string());
    }
    assert_eq!(
        codes,
        [
            "wrong_code",
            "wrong_code",
            "wrong_code",
            "wrong_code",
            "wrong_code",
            "codes_locked"
        ]
    );
    let locked = alice
        .post(
            &path,
            &json!({"decision": "approve", "code": gatebot::factor::code_at(&secret, now_secs()).unwrap()}),
        )
        .await
        .unwrap();
    assert_eq!(locked.status, 429, "{:?}", locked.body);
    assert_eq!(app.get(&fourth, 0.0).await.body["status"], "pending");
}

#[tokio::test]
async fn factors_are_listed_removed_with_a_fresh_code_and_never_show_their_secret() {
    let fake = FakeTelegram::start(TOKEN).await;
    let app = spawn_app(&config(&fake)).await;
    let (secret, used) = enroll(&app, "alice").await;
    let owner = app.owner_as("alice");
    let list = owner.get("/v1/factors").await.unwrap();
    let factors = list.body["factors"].as_array().unwrap().clone();
    assert_eq!(factors.len(), 1, "{:?}", list.body);
    assert_eq!(factors[0]["confirmed"], true);
    assert!(!list.body.to_string().contains(&secret));
    let id = factors[0]["id"].as_str().unwrap();
    // Someone who is not in [people] has no factors to enroll.
    let stranger = app
        .owner_as("mallory")
        .post("/v1/factors", &json!({}))
        .await
        .unwrap();
    assert_eq!(stranger.status, 422, "{:?}", stranger.body);
    // A used code does not remove it; a fresh one does.
    let path = format!("/v1/factors/{id}/remove");
    let stale = owner.post(&path, &json!({"code": used})).await.unwrap();
    assert_eq!(stale.error_code(), Some("wrong_code"), "{:?}", stale.body);
    let gone = owner
        .post(&path, &json!({"code": next_code(&secret)}))
        .await
        .unwrap();
    assert_eq!(gone.status, 200, "{:?}", gone.body);
    let list = owner.get("/v1/factors").await.unwrap();
    assert!(list.body["factors"].as_array().unwrap().is_empty());
    let rows = app.owner.get("/v1/audit").await.unwrap().body.to_string();
    assert!(rows.contains("factor_enrolled") && rows.contains("factor_removed"));
}

/// Without `step_up` in the rule, critical requests need a factor once anyone has
/// enrolled one; other risks never do.
#[tokio::test]
async fn by_default_critical_risk_needs_a_factor_once_anyone_has_one() {
    let fake = FakeTelegram::start(TOKEN).await;
    let config = config(&fake).replace(
        "tool = \"send_email\"\nask = \"oncall\"\nstep_up = true\n",
        "ask = \"oncall\"\n",
    );
    let app = spawn_app(&config).await;
    let critical = || json!({"agent": "mailer", "tool": "Bash", "args": {"command": "rm -rf /"}});
    let approve = |id: String| {
        let app = &app;
        async move {
            app.owner_as("alice")
                .post(
                    &format!("/v1/requests/{id}/decision"),
                    &json!({"decision": "approve"}),
                )
                .await
                .unwrap()
        }
    };
    // No one has a factor: a critical request is approved as before.
    let (before, _) = app.submit_pending(critical()).await;
    assert_eq!(
        app.get(&before, 0.0).await.body["risk"]["score"],
        "critical"
    );
    assert_eq!(approve(before).await.status, 200);
    // Once alice has one, critical requests made from then on need it; others do not.
    enroll(&app, "alice").await;
    let (after, _) = app.submit_pending(critical()).await;
    let res = approve(after).await;
    assert_eq!(res.error_code(), Some("step_up_required"), "{:?}", res.body);
    let (mail, _) = app.submit_pending(mail(1)).await;
    assert_eq!(approve(mail).await.status, 200);
}
