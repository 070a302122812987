//! Second factors in a real browser: enrolling from the Factors page (its QR code drawn
//! inline, the secret beside it, the first code finishing it), then a request whose rule
//! needs a factor: Approve on the pending page leads to its confirm page, where a code
//! approves it; on a phone nothing scrolls sideways.

use serde_json::json;

use crate::daemon::{sign_in, Daemon};
use crate::harness::{Browser, DESKTOP, PHONE, WAIT};

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test]
async fn a_factor_enrolled_on_its_page_confirms_an_approval_on_the_confirm_page() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let daemon = Daemon::start_with(
        "[groups.oncall]\npeople = [\"alice\"]\n\
         [[approval_rules]]\nname = \"mail\"\ntool = \"send_email\"\nask = \"oncall\"\nstep_up = true\n",
    )
    .await;
    sign_in(&browser, &daemon).await;
    browser.click("nav a[href='/factors']").await;
    browser.wait_for("form[action='/factors']", WAIT).await;
    browser.click("form[action='/factors'] button").await;
    // The QR code is part of the page (no image to load, nothing the CSP must allow).
    browser.wait_for("figure.qr svg path", WAIT).await;
    let secret = browser.text("code.secret").await;
    assert_eq!(secret.len(), 32, "{secret}");
    browser.set_window_size(PHONE.0, PHONE.1).await;
    browser.assert_no_horizontal_scroll().await;
    browser.set_window_size(DESKTOP.0, DESKTOP.1).await;
    let first = gatebot::factor::code_at(&secret, now_secs()).unwrap();
    browser.type_into("#code-confirm", &first).await;
    browser.click("form[action$='/confirm'] button").await;
    let said = browser.wait_for("p.said", WAIT).await;
    assert!(said.text().await.unwrap().contains("Added"));
    assert!(browser.text("table.list").await.contains("phone"));
    // A request its rule says needs a factor: Approve leads to the confirm page.
    let (id, short) = daemon
        .submit(json!({"agent": "mailer", "tool": "send_email", "args": {"to": "ann@example.com"}}))
        .await;
    browser.goto(&format!("{}/", daemon.base)).await;
    let card = format!("article.item[data-id='{id}']");
    browser.wait_for(&card, WAIT).await;
    browser
        .click(&format!("{card} form.decide[data-verb='approve'] button"))
        .await;
    browser.wait_for("#code-step-up", WAIT).await;
    assert!(
        browser
            .url()
            .await
            .ends_with(&format!("/requests/{short}/confirm")),
        "{}",
        browser.url().await
    );
    // The code that finished the enrolment is used: refused.
    browser.type_into("#code-step-up", &first).await;
    browser
        .click("form[action$='/confirm'] button.primary")
        .await;
    let refused = browser.wait_for("p.error", WAIT).await;
    assert!(refused.text().await.unwrap().contains("used already"));
    assert_eq!(daemon.status(&id).await["status"], "pending");
    // The next code approves it.
    let next = gatebot::factor::code_at(&secret, now_secs() + 30).unwrap();
    browser.type_into("#code-step-up", &next).await;
    browser
        .click("form[action$='/confirm'] button.primary")
        .await;
    browser.wait_for("section.message", WAIT).await;
    assert_eq!(browser.text("section.message h1").await, "Done");
    let v = daemon.status(&id).await;
    assert_eq!(
        (v["status"].as_str(), v["decided_via"].as_str()),
        (Some("approved"), Some("dashboard"))
    );
}
