//! The agents' pages in a real browser: from the list to an agent's page and its
//! chart, no sideways scroll on a phone, and a pause with a reason and a resume by
//! clicking.

use serde_json::json;

use crate::daemon::{sign_in, Daemon};
use crate::harness::{Browser, DESKTOP, PHONE, WAIT};

/// Two of mailer's requests, approved and denied on the command line.
async fn decided(daemon: &Daemon) {
    for (n, verb) in ["approve", "deny"].into_iter().enumerate() {
        let (id, _) = daemon
            .submit(json!({"agent": "mailer", "tool": "send_email", "args": {"n": n}}))
            .await;
        daemon.run(&["decide", &id, verb]).await;
    }
}

#[tokio::test]
async fn an_agents_page_opens_from_the_list_says_its_chart_in_words_and_fits_a_phone() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let daemon = Daemon::start().await;
    decided(&daemon).await;
    sign_in(&browser, &daemon).await;
    browser.click("nav a[href='/agents']").await;
    browser.click("a[href='/agents/mailer']").await;
    browser.wait_for("svg.chart", WAIT).await;
    // The chart says its numbers to a screen reader, and in a table under it.
    let described = browser
        .eval("document.querySelector('svg.chart desc').textContent")
        .await;
    assert!(
        described
            .as_str()
            .unwrap_or_default()
            .contains("1 approved, 1 denied"),
        "{described}"
    );
    assert_eq!(
        browser
            .eval("document.querySelectorAll('svg.chart rect').length")
            .await,
        json!(2)
    );
    assert!(browser.exists("figure.chart details table").await);
    browser.set_window_size(PHONE.0, PHONE.1).await;
    browser.assert_no_horizontal_scroll().await;
    browser.goto(&format!("{}/agents", daemon.base)).await;
    browser.wait_for("article.agent", WAIT).await;
    browser.assert_no_horizontal_scroll().await;
    browser.set_window_size(DESKTOP.0, DESKTOP.1).await;
}

#[tokio::test]
async fn an_agent_is_paused_and_resumed_by_clicking() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let daemon = Daemon::start().await;
    sign_in(&browser, &daemon).await;
    browser
        .goto(&format!("{}/agents/mailer", daemon.base))
        .await;
    browser
        .type_into("#pause input[name='reason']", "runaway loop")
        .await;
    browser.click("#pause button.danger").await;
    browser
        .wait_for("#pause form[action$='/resume']", WAIT)
        .await;
    assert!(
        browser
            .text("#pause")
            .await
            .contains("Paused by alice on the dashboard"),
        "{}",
        browser.text("#pause").await
    );
    let v = daemon.run(&["agent", "mailer", "--json"]).await;
    assert!(v.contains("runaway loop"), "{v}");
    browser.set_window_size(PHONE.0, PHONE.1).await;
    browser.assert_no_horizontal_scroll().await;
    browser.set_window_size(DESKTOP.0, DESKTOP.1).await;
    browser.click("#pause form[action$='/resume'] button").await;
    browser.wait_for("#pause input[name='reason']", WAIT).await;
    let v = daemon.run(&["agent", "mailer", "--json"]).await;
    assert!(!v.contains("runaway loop"), "resumed: {v}");
}
