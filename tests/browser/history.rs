//! The history, audit and system pages in a real browser: reached from the menu,
//! searched and filtered by filling their forms, a request opened from the list, the
//! export fetched with the session, hostile agent text inert, and no sideways scroll on
//! a phone.

use serde_json::json;

use crate::daemon::{sign_in, Daemon};
use crate::harness::{Browser, DESKTOP, PHONE, WAIT};

/// Both widths: no sideways scroll on the page shown now.
async fn fits(browser: &Browser) {
    browser.set_window_size(PHONE.0, PHONE.1).await;
    browser.assert_no_horizontal_scroll().await;
    browser.set_window_size(DESKTOP.0, DESKTOP.1).await;
    browser.assert_no_horizontal_scroll().await;
}

#[tokio::test]
async fn history_is_searched_from_its_form_and_a_request_opens_from_the_list() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let daemon = Daemon::start().await;
    let long = "y".repeat(400);
    let (hostile, hostile_short) = daemon
        .submit(json!({
            "agent": "mailer", "tool": "send_email",
            "summary": format!("<img src=x onerror=\"window.__pwned=1\"> \u{202e}fdp.exe {long}"),
            "args": {"to": "<a href=\"javascript:window.__pwned=3\">click</a>", "body": long}
        }))
        .await;
    daemon
        .run(&[
            "decide",
            &hostile,
            "deny",
            "--reason",
            "<script>window.__pwned=2</script>",
        ])
        .await;
    let (_, other_short) = daemon
        .submit(json!({"agent": "claude-code", "tool": "Bash",
            "summary": "Push the release branch", "args": {"command": "git push origin release/2.4"}}))
        .await;
    sign_in(&browser, &daemon).await;
    browser.click("header nav a[href='/history']").await;
    browser.wait_for("table.history", WAIT).await;
    assert!(browser.text("table.history").await.contains(&other_short));
    fits(&browser).await;

    // Search from the form: only the matching request stays.
    browser
        .type_into("form.filters input[name='q']", "release")
        .await;
    browser.click("form.filters button[type='submit']").await;
    browser
        .wait_until("location.search.includes('q=release')", WAIT)
        .await;
    let shown = browser.text("table.history tbody").await;
    assert!(
        shown.contains(&other_short) && !shown.contains(&hostile_short),
        "{shown}"
    );
    // The filter stays in the form, from the URL.
    assert_eq!(
        browser
            .eval("document.querySelector(\"input[name='q']\").value")
            .await,
        json!("release")
    );

    // Outcome "Denied" from the select: the hostile one, whose text stays text.
    browser
        .goto(&format!("{}/history?status=rejected", daemon.base))
        .await;
    let row = browser.text("table.history tbody").await;
    assert!(
        row.contains(&hostile_short) && row.contains("denied"),
        "{row}"
    );
    assert!(row.contains("<img src=x onerror="), "{row}");
    assert!(row.contains("\\u202efdp.exe"), "{row}");
    fits(&browser).await;
    browser
        .click(&format!("a[href='/requests/{hostile}']"))
        .await;
    browser.wait_for("article.item", WAIT).await;
    assert!(browser
        .text("main")
        .await
        .contains("alice on the command line"));
    fits(&browser).await;
    for tag in ["img", "script", "iframe", "a[href^='javascript']"] {
        let n = browser
            .eval(&format!("document.querySelectorAll(\"main {tag}\").length"))
            .await;
        assert_eq!(n, json!(0), "{tag}");
    }
    assert_eq!(
        browser.eval("typeof window.__pwned").await,
        json!("undefined")
    );

    // The export, fetched as the page's link would be, with the session.
    browser
        .goto(&format!("{}/history?agent=mailer", daemon.base))
        .await;
    let href = browser
        .attr("p.export a[href^='/history.csv']", "href")
        .await
        .unwrap();
    assert!(href.contains("agent=mailer"), "{href}");
    browser
        .eval(&format!(
            "void fetch({href:?}).then(r => r.text()).then(t => window.__csv = t)"
        ))
        .await;
    let csv = browser.wait_until("window.__csv", WAIT).await;
    let csv = csv.as_str().unwrap();
    assert!(csv.starts_with("\"id\",\"short_id\""), "{csv}");
    assert!(
        csv.contains(&hostile) && !csv.contains("release/2.4"),
        "{csv}"
    );
}

#[tokio::test]
async fn the_audit_page_shows_the_chain_and_filters_to_one_request() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let daemon = Daemon::start().await;
    let (id, short) = daemon
        .submit(json!({"agent": "mailer", "tool": "send_email", "args": {"to": "ann@example.com"}}))
        .await;
    daemon.run(&["decide", &id, "approve"]).await;
    daemon
        .submit(json!({"agent": "mailer", "tool": "send_email", "args": {"n": 2}}))
        .await;
    sign_in(&browser, &daemon).await;
    browser.click("header nav a[href='/audit']").await;
    browser.wait_for("section.chain", WAIT).await;
    assert!(browser
        .text("section.chain")
        .await
        .contains("The trail is intact"));
    let head = daemon.run(&["audit", "head"]).await;
    assert!(browser
        .text("section.chain")
        .await
        .contains(&format!("gatebot audit verify --head {}", head.trim())));
    fits(&browser).await;
    browser
        .type_into("form.filters input[name='request']", &short)
        .await;
    browser.click("form.filters button[type='submit']").await;
    browser
        .wait_until(
            &format!("location.search.includes('request={short}')"),
            WAIT,
        )
        .await;
    let events: Vec<String> = browser
        .eval("[...document.querySelectorAll(\"td[data-label='Event']\")].map(e => e.textContent)")
        .await
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap().to_string())
        .collect();
    assert_eq!(events, ["decided", "evaluated", "submitted"]);
    fits(&browser).await;
}

#[tokio::test]
async fn the_system_page_says_what_runs() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let daemon = Daemon::start().await;
    sign_in(&browser, &daemon).await;
    browser.click("header nav a[href='/system']").await;
    browser.wait_for("section.health", WAIT).await;
    let text = browser.text("main").await;
    assert!(
        text.contains("The database keeps what it is sent."),
        "{text}"
    );
    assert!(text.contains(env!("CARGO_PKG_VERSION")), "{text}");
    assert!(text.contains("1 browser (alice)"), "{text}");
    fits(&browser).await;
}
