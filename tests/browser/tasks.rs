//! The tasks page in a real browser: a task with long text on a phone, and a task
//! handed over with the form and cancelled by clicking.

use crate::daemon::{sign_in, Daemon};
use crate::harness::{Browser, DESKTOP, PHONE, WAIT};

const INBOX: &str = r#"
[inbox]

[inbox.routes]
default = "claude-code"
"#;

#[tokio::test]
async fn a_task_with_long_hostile_text_shows_as_text_and_fits_a_phone() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let daemon = Daemon::start_with(INBOX).await;
    let long = "a".repeat(300);
    daemon
        .run(&[
            "task",
            "add",
            &format!("check the nightly build {long} <img src=x onerror=window.__pwned=1>"),
        ])
        .await;
    sign_in(&browser, &daemon).await;
    browser.click("nav a[href='/tasks']").await;
    browser.wait_for("article.task", WAIT).await;
    assert!(browser
        .text("article.task")
        .await
        .contains("<img src=x onerror="));
    assert_eq!(browser.eval("typeof window.__pwned").await, "undefined");
    assert!(browser.exists("article.task form[action$='/cancel']").await);
    browser.set_window_size(PHONE.0, PHONE.1).await;
    browser.assert_no_horizontal_scroll().await;
    browser.set_window_size(DESKTOP.0, DESKTOP.1).await;
}

#[tokio::test]
async fn a_task_is_handed_over_and_cancelled_by_clicking() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let daemon = Daemon::start_with(INBOX).await;
    sign_in(&browser, &daemon).await;
    browser.goto(&format!("{}/tasks", daemon.base)).await;
    browser.click("#new-task summary").await;
    browser
        .type_into("#new-task textarea[name='text']", "check the nightly build")
        .await;
    browser.click("#new-task button.primary").await;
    let task = browser.wait_for("article.task", WAIT).await;
    let status = task.attr("data-status").await.unwrap().unwrap();
    // Open: queued, or waiting for the owner's go or answer (the classifier says which).
    assert!(
        ["queued", "pending", "waiting"].contains(&status.as_str()),
        "{status}"
    );
    let listed = daemon.run(&["tasks"]).await;
    assert!(listed.contains("claude-code"), "{listed}");
    browser
        .click("article.task form[action$='/cancel'] button")
        .await;
    browser.wait_until_gone("article.task", WAIT).await;
    let listed = daemon.run(&["tasks", "--all"]).await;
    assert!(listed.contains("cancelled"), "{listed}");
    browser
        .goto(&format!("{}/tasks?status=done", daemon.base))
        .await;
    browser
        .wait_for(
            "article.task[data-status='cancelled'] form[action$='/retry']",
            WAIT,
        )
        .await;
}
