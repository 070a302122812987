//! The runs' pages in a real browser: from the list to a run's timeline, and no
//! sideways scroll on a phone with long agent text.

use serde_json::json;

use crate::daemon::{sign_in, Daemon};
use crate::harness::{Browser, DESKTOP, PHONE, WAIT};

#[tokio::test]
async fn a_runs_timeline_opens_from_the_list_and_fits_a_phone() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let daemon = Daemon::start().await;
    let agent = gatebot::client::Client::new(daemon.path().join("gatebot.sock"));
    let long = "w".repeat(190);
    let run = agent
        .post(
            "/v1/runs",
            &json!({"agent": "mailer", "title": format!("Release {long}")}),
        )
        .await
        .unwrap();
    assert_eq!(run.status, 201, "{:?}", run.body);
    let id = run.body["id"].as_str().unwrap().to_string();
    let e = agent
        .post(
            &format!("/v1/runs/{id}/events"),
            &json!({"type": "step_complete", "phase": "build", "step": "lint",
                    "warnings": [{"text": format!("style {long}"), "severity": "low"}]}),
        )
        .await
        .unwrap();
    assert_eq!(e.status, 200, "{:?}", e.body);
    let e = agent
        .post(
            &format!("/v1/runs/{id}/events"),
            &json!({"type": "phase_complete", "phase": "build"}),
        )
        .await
        .unwrap();
    assert_eq!(e.body["action"], "wait", "{:?}", e.body);
    sign_in(&browser, &daemon).await;
    browser.click("nav a[href='/runs']").await;
    browser.click(&format!("a[href='/runs/{id}']")).await;
    browser.wait_for("ol.timeline li.event", WAIT).await;
    let timeline = browser.text("ol.timeline").await;
    assert!(timeline.contains("step complete"), "{timeline}");
    assert!(
        timeline.contains("Check-in: build complete. Continue?"),
        "{timeline}"
    );
    browser.set_window_size(PHONE.0, PHONE.1).await;
    browser.assert_no_horizontal_scroll().await;
    browser.goto(&format!("{}/runs", daemon.base)).await;
    browser.wait_for("ul.runs", WAIT).await;
    browser.assert_no_horizontal_scroll().await;
    browser.set_window_size(DESKTOP.0, DESKTOP.1).await;
}
