//! The web dashboard in a real browser: a daemon started as a process on a config of
//! its own, an agent waiting on a request, and Chromium signing in from a link and
//! answering with the keys. `GATEBOT_SCREENSHOTS=DIR` also writes the pending page at
//! phone and desktop width into DIR (docs/screenshots is made so).

use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;

use crate::daemon::{sign_in, Daemon};
use crate::fake_telegram::FakeTelegram;
use crate::harness::{Browser, DESKTOP, PHONE, WAIT};

fn item(id: &str) -> String {
    format!("article.item[data-id='{id}']")
}

#[tokio::test]
async fn sign_in_from_a_link_once_with_a_cookie_no_script_can_read() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let daemon = Daemon::start().await;
    let link = daemon.link().await;
    browser.goto(&link).await;
    // The link's page signs no one in by itself.
    assert!(browser.cookie("gatebot_session").await.is_none());
    browser.click("form[action='/login'] button").await;
    browser.wait_for("#pending", WAIT).await;
    assert_eq!(browser.text(".person").await, "alice");
    let cookie = browser
        .cookie("gatebot_session")
        .await
        .expect("a session cookie");
    assert_eq!(cookie.http_only(), Some(true));
    assert_eq!(browser.eval("document.cookie").await, json!(""));
    // The same link a second time: refused, with what to do.
    browser.goto(&link).await;
    browser.click("form[action='/login'] button").await;
    browser.wait_for("section.message", WAIT).await;
    assert!(browser
        .text("section.message")
        .await
        .contains("used already"));
    assert!(browser
        .text("section.message")
        .await
        .contains("gatebot dashboard login"));
}

#[tokio::test]
async fn a_request_appears_live_and_a_key_press_approves_it_while_the_agent_waits() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let daemon = Daemon::start().await;
    sign_in(&browser, &daemon).await;
    let agent = daemon.ask(r#"{"to": "ann@example.com", "body": "Hi Ann"}"#);
    // No reload: the page hears of it.
    let card = browser.wait_for("article.item", WAIT).await;
    let id = card.attr("data-id").await.unwrap().unwrap();
    assert!(browser
        .text(&item(&id))
        .await
        .contains("mailer wants to run send_email"));
    // Its expiry counts down, in gatebot's words (the default TTL is 24 h).
    let countdown = format!(
        "document.querySelector(\"{} .countdown\").textContent",
        item(&id)
    );
    let said = browser.wait_until(&countdown, WAIT).await;
    assert!(
        matches!(
            said.as_str(),
            Some("expires in 24 h" | "expires in 23 h 59 min")
        ),
        "{said}"
    );
    browser.press('j').await;
    browser
        .wait_for(&format!("{}.focused", item(&id)), WAIT)
        .await;
    browser.press('a').await;
    browser.wait_until_gone(&item(&id), WAIT).await;
    assert!(
        browser.text("#said").await.starts_with("approved "),
        "{}",
        browser.text("#said").await
    );
    let out = tokio::time::timeout(WAIT, agent.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = daemon.status(&id).await;
    assert_eq!(
        (v["decided_by"].as_str(), v["decided_via"].as_str()),
        (Some("alice"), Some("dashboard"))
    );
}

#[tokio::test]
async fn deny_with_a_reason_by_keys_and_a_decision_made_elsewhere_disappears() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let daemon = Daemon::start().await;
    let (first, _) = daemon
        .submit(json!({"agent": "mailer", "tool": "send_email", "args": {"n": 1}}))
        .await;
    let (second, short) = daemon
        .submit(json!({"agent": "mailer", "tool": "send_email", "args": {"n": 2}}))
        .await;
    sign_in(&browser, &daemon).await;
    browser.wait_for(&item(&first), WAIT).await;
    // Newest first: `j` focuses the second request; `d` goes to its reason.
    browser.press('j').await;
    browser
        .wait_for(&format!("{}.focused", item(&second)), WAIT)
        .await;
    browser.press('d').await;
    browser
        .wait_until(
            "document.activeElement && document.activeElement.name === 'reason'",
            WAIT,
        )
        .await;
    browser
        .type_into(
            &format!("{} input[name='reason']", item(&second)),
            "not today\n",
        )
        .await;
    browser.wait_until_gone(&item(&second), WAIT).await;
    let status = daemon.status(&short).await;
    assert_eq!(
        (status["status"].as_str(), status["reason"].as_str()),
        (Some("rejected"), Some("not today"))
    );
    // Decided on the command line: gone from the page without a reload.
    browser.eval("window.__stillHere = true").await;
    daemon.run(&["decide", &first, "approve"]).await;
    browser.wait_until_gone(&item(&first), WAIT).await;
    assert_eq!(
        browser.eval("window.__stillHere").await,
        json!(true),
        "the page was not reloaded"
    );
}

#[tokio::test]
async fn hostile_agent_text_runs_no_script_and_a_phone_needs_no_sideways_scroll() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let daemon = Daemon::start().await;
    let long = "x".repeat(600);
    let (id, _) = daemon
        .submit(json!({
            "agent": "mailer", "tool": "send_email",
            "summary": "<img src=x onerror=\"window.__pwned=1\"> \u{202e}fdp.exe <script>window.__pwned=2</script>",
            "args": {"to": "<a href=\"javascript:window.__pwned=3\">click</a>", "body": long,
                     "html": "<iframe src=\"javascript:window.top.__pwned=4\"></iframe>"}
        }))
        .await;
    sign_in(&browser, &daemon).await;
    browser.wait_for(&item(&id), WAIT).await;
    // Give anything that could run the chance to.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        browser.eval("typeof window.__pwned").await,
        json!("undefined")
    );
    let inside = |tag: &str| format!("document.querySelectorAll(\"article.item {tag}\").length");
    for tag in ["img", "script", "iframe", "a[href^='javascript']"] {
        assert_eq!(
            browser.eval(&inside(tag)).await,
            json!(0),
            "{tag} in a card"
        );
    }
    let text = browser.text(&item(&id)).await;
    assert!(text.contains("<img src=x onerror="), "{text}");
    assert!(
        text.contains("\\u202efdp.exe"),
        "the bidi override is written out: {text}"
    );
    browser.set_window_size(PHONE.0, PHONE.1).await;
    browser.assert_no_horizontal_scroll().await;
    if let Some(dir) = std::env::var_os("GATEBOT_SCREENSHOTS") {
        screenshots(&browser, &daemon, PathBuf::from(dir)).await;
    }
    browser.set_window_size(DESKTOP.0, DESKTOP.1).await;
    browser.assert_no_horizontal_scroll().await;
}

/// The pending page with a few plausible requests, at phone and desktop width.
async fn screenshots(browser: &Browser, daemon: &Daemon, dir: PathBuf) {
    let (hostile, _) = daemon
        .submit(json!({"agent": "claude-code", "tool": "Bash",
        "summary": "Push the release branch", "args": {"command": "git push origin release/2.4"}}))
        .await;
    daemon
        .submit(json!({"agent": "mailer", "tool": "send_email",
            "summary": "Reply to Ann's question about the Pro plan's price",
            "args": {"to": ["ann@example.com"], "subject": "Re: Pro plan",
                     "body": "Hi Ann, the Pro plan is $49 a month. Best, Mailer"}}))
        .await;
    browser.wait_for(&item(&hostile), WAIT).await;
    std::fs::create_dir_all(&dir).unwrap();
    browser.set_window_size(PHONE.0, PHONE.1).await;
    browser.screenshot(&dir.join("dashboard-phone.png")).await;
    browser.set_window_size(DESKTOP.0, DESKTOP.1).await;
    browser.screenshot(&dir.join("dashboard-desktop.png")).await;
}

#[tokio::test]
async fn a_form_on_another_site_decides_nothing_for_a_signed_in_owner() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let daemon = Daemon::start().await;
    let (id, short) = daemon
        .submit(json!({"agent": "mailer", "tool": "send_email", "args": {}}))
        .await;
    sign_in(&browser, &daemon).await;
    // Another site (another port is another origin) with a form aimed at the dashboard.
    let evil = format!(
        r#"<!doctype html><form method="post" action="{}/decide">
<input type="hidden" name="csrf" value="{}"><input type="hidden" name="button" value="gb1:a:{id}">
<button id="go">Win a prize</button></form>"#,
        daemon.base,
        "0".repeat(64)
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let at = listener.local_addr().unwrap();
    let page = axum::Router::new().route(
        "/",
        axum::routing::get(move || async move { axum::response::Html(evil) }),
    );
    tokio::spawn(async move { axum::serve(listener, page).await });
    browser.goto(&format!("http://{at}/")).await;
    browser.click("#go").await;
    browser.wait_for("section.message", WAIT).await;
    assert!(browser
        .text("section.message")
        .await
        .contains("nothing was done"));
    let status = daemon.status(&short).await;
    assert_eq!(status["status"], "pending");
}

#[tokio::test]
async fn a_batch_denial_picked_with_keys_after_a_confirmation_that_counts() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let daemon = Daemon::start().await;
    let mut ids = Vec::new();
    for n in 0..3 {
        ids.push(
            daemon
                .submit(json!({"agent": "mailer", "tool": "send_email", "args": {"n": n}}))
                .await
                .0,
        );
    }
    sign_in(&browser, &daemon).await;
    browser.wait_for(&item(&ids[0]), WAIT).await;
    // Newest first: j, x ticks the newest; j, x the next.
    for _ in 0..2 {
        browser.press('j').await;
        browser.press('x').await;
    }
    let ticked = browser
        .eval("Array.from(document.querySelectorAll('input[name=id]:checked')).map(c => c.value)")
        .await;
    assert_eq!(ticked, json!([ids[2], ids[1]]));
    browser
        .type_into("#batch input[name='reason']", "duplicates")
        .await;
    browser.click("#batch button[value='deny']").await;
    browser
        .wait_for("form[action='/batch'] button.danger", WAIT)
        .await;
    assert!(
        browser.text("h1").await.contains("Deny 2 requests?"),
        "{}",
        browser.text("h1").await
    );
    browser.click("form[action='/batch'] button.danger").await;
    browser.wait_for("section.message", WAIT).await;
    assert!(browser
        .text("section.message")
        .await
        .contains("Denied 2 requests."));
    for (id, want) in [
        (&ids[0], "pending"),
        (&ids[1], "rejected"),
        (&ids[2], "rejected"),
    ] {
        assert_eq!(daemon.status(id).await["status"], want, "{id}");
    }
}

#[tokio::test]
async fn a_decision_made_in_telegram_disappears_from_the_page() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let telegram = FakeTelegram::start("123:TEST").await;
    let daemon = Daemon::start_with(&format!(
        "[telegram]\ntoken = \"123:TEST\"\napi_url = \"{}\"\nchats = [111]\napprovers = [111]\n",
        telegram.url
    ))
    .await;
    let (id, short) = daemon
        .submit(json!({"agent": "mailer", "tool": "send_email", "args": {"to": "ann@example.com"}}))
        .await;
    sign_in(&browser, &daemon).await;
    browser.wait_for(&item(&id), WAIT).await;
    browser.eval("window.__stillHere = true").await;
    // The prompt reaches the (fake) Telegram chat; the approver taps Allow once there.
    let mut prompt = None;
    for _ in 0..400 {
        if let Some((chat, message, _)) = telegram.prompts_of(Some(111), &short).into_iter().next()
        {
            prompt = Some((chat, message));
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (chat, message) =
        prompt.unwrap_or_else(|| panic!("no prompt in Telegram: {}", daemon.log()));
    telegram.press((111, "Alice"), chat, message, &format!("gb1:a:{id}"));
    browser.wait_until_gone(&item(&id), WAIT).await;
    assert_eq!(
        browser.eval("window.__stillHere").await,
        json!(true),
        "the page was not reloaded"
    );
    assert_eq!(daemon.status(&id).await["decided_via"], "telegram");
}

#[tokio::test]
async fn edit_then_approve_changes_what_a_waiting_claude_code_hook_prints() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let daemon = Daemon::start().await;
    sign_in(&browser, &daemon).await;
    // Claude Code asks to set a discount of 50 %; its hook waits for the answer.
    let fixture = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/hooks/claude-code-pre-tool-use.json"
    ))
    .unwrap();
    let mut hook = daemon
        .gatebot(&["hook", "claude-code"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = hook.stdin.take().unwrap();
        stdin.write_all(fixture.as_bytes()).await.unwrap();
    }
    let card = browser.wait_for("article.item", WAIT).await;
    let id = card.attr("data-id").await.unwrap().unwrap();
    // The owner opens the editor from the keyboard, and makes it 15 %.
    browser.press('j').await;
    browser
        .wait_for(&format!("{}.focused", item(&id)), WAIT)
        .await;
    browser.press('e').await;
    let text = browser.wait_for("form.edit textarea", WAIT).await;
    assert!(browser
        .url()
        .await
        .ends_with(&format!("/requests/{id}/edit")));
    text.clear().await.unwrap();
    let edited = json!({
        "file_path": "/home/dev/shop/src/pricing.ts",
        "old_string": "const DISCOUNT = 0.1;",
        "new_string": "const DISCOUNT = 0.15;"
    });
    browser
        .type_into("form.edit textarea", &edited.to_string())
        .await;
    browser.click("form.edit button[type='submit']").await;
    // The preview: the edited call's risk and what changes, line by line.
    browser.wait_for("section.preview", WAIT).await;
    let preview = browser.text("section.preview").await;
    assert!(preview.contains("Risk"), "{preview}");
    assert!(
        preview.contains(r#"-  "new_string": "const DISCOUNT = 0.5;","#)
            && preview.contains(r#"+  "new_string": "const DISCOUNT = 0.15;","#),
        "{preview}"
    );
    assert!(preview.contains("runs the call as edited"), "{preview}");
    browser.click("section.preview button").await;
    browser.wait_for("section.message", WAIT).await;
    assert!(browser.text("section.message").await.contains("as edited"));
    // The waiting hook prints the allow, with the edited call for Claude Code to run.
    let out = tokio::time::timeout(WAIT, hook.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        printed["hookSpecificOutput"]["permissionDecision"], "allow",
        "{printed}"
    );
    assert_eq!(
        printed["hookSpecificOutput"]["updatedInput"], edited,
        "{printed}"
    );
    let v = daemon.status(&id).await;
    assert_eq!(v["edited_args"], edited);
    assert_eq!(v["decided_by"], "alice");
}
