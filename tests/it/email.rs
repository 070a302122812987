//! E-mail (docs/email.md) against a fake SMTP server: a request is mailed to the
//! address its table lists with what the card shows, agent text escaped, and a
//! single-use sign-in link to its dashboard page (the link decides nothing: its page
//! signs in when pressed); a temporary refusal is retried and the mail goes once;
//! outcomes are mailed as replies in the request's thread when asked; a restart mails
//! nothing twice; a request an approval rule routes is mailed to its people.

use serde_json::json;

use crate::dashboard::Browser;
use crate::fake_smtp::FakeSmtp;
use crate::helpers::{eventually, free_port, spawn_app, spawn_app_in};

const ALICE: &str = "alice@example.com";

fn config(smtp: &FakeSmtp, extra: &str) -> String {
    format!(
        "{}{extra}\n[dashboard]\nlisten = \"{}\"\n[people.alice]\nemail = \"{ALICE}\"\nunix = \"alice\"\n",
        smtp.config(&[ALICE]),
        free_port()
    )
}

#[tokio::test]
async fn a_request_is_mailed_with_escaped_text_and_a_link_that_signs_in_once_to_its_page() {
    let smtp = FakeSmtp::start().await;
    smtp.fail_next(1);
    let app = spawn_app(&config(&smtp, "")).await;
    let (id, short) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email",
            "args": {"to": "<script>alert(1)</script>", "body": "hi \u{202e}gnp.exe"}}))
        .await;
    // Refused once with a 451: retried, and mailed once.
    let mail = eventually("the mail", async || smtp.to(ALICE).pop()).await;
    assert_eq!(mail.from, "gatebot@example.com");
    let subject = mail.header("Subject").unwrap();
    assert!(subject.contains(&short), "{subject}");
    assert!(mail
        .header("Message-ID")
        .unwrap()
        .ends_with("@example.com>"));
    let text = mail.part("text/plain").unwrap();
    assert!(text.contains("mailer wants to run send_email"), "{text}");
    assert!(text.contains("decides nothing by itself"), "{text}");
    let html = mail.part("text/html").unwrap();
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{html}"
    );
    assert!(!html.contains("<script>"), "{html}");
    assert!(!html.contains('\u{202e}') && !text.contains('\u{202e}'));
    let link = text
        .split_whitespace()
        .find(|w| w.contains("/login/"))
        .unwrap_or_else(|| panic!("{text}"))
        .to_string();
    // The link's page signs no one in by itself; its button does, once, to the request.
    let mut b = Browser::new(&app);
    let page = b
        .get(&format!("/login/{}", link.rsplit('/').next().unwrap()))
        .await;
    assert_eq!(page.status, 200);
    assert!(b.cookie.is_none());
    let signed = b.sign_in(&link).await;
    assert_eq!(signed.status, 303, "{signed:?}");
    assert_eq!(
        signed.header("location").unwrap(),
        format!("/requests/{short}")
    );
    let again = Browser::new(&app).sign_in(&link).await;
    assert_eq!(again.status, 403, "a link signs in once");
    assert_eq!(app.get(&id, 0.0).await.body["status"], "pending");
    // On its page she approves it: the agent's request is approved by her.
    let page = b.get(&format!("/requests/{short}")).await;
    assert_eq!(page.status, 200, "{page:?}");
    let decided = b
        .post(
            "/decide",
            &[("csrf", &page.csrf()), ("button", &format!("gb1:a:{id}"))],
        )
        .await;
    assert_eq!(decided.status, 303, "{decided:?}");
    let done = app.wait_for_status(&id, "approved").await;
    assert_eq!(
        (done["decided_by"].as_str(), done["decided_via"].as_str()),
        (Some("alice"), Some("dashboard"))
    );
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(smtp.to(ALICE).len(), 1, "mailed once");
}

#[tokio::test]
async fn outcomes_are_replies_in_the_requests_thread_and_a_restart_mails_nothing_twice() {
    let smtp = FakeSmtp::start().await;
    let conf = config(&smtp, "notify_outcomes = true\n");
    let app = spawn_app(&conf).await;
    let (id, short) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"to": "bo"}}))
        .await;
    let first = eventually("the mail", async || smtp.to(ALICE).pop()).await;
    let dir = app.stop().await;
    let app = spawn_app_in(dir, &conf).await;
    app.decide_ok(&id, "approve", None).await;
    let reply = eventually("the outcome", async || smtp.to(ALICE).into_iter().nth(1)).await;
    let first_id = first.header("Message-ID").unwrap();
    assert_eq!(reply.header("In-Reply-To").unwrap(), first_id);
    assert!(reply.header("Subject").unwrap().contains(&short));
    let text = reply.part("text/plain").unwrap();
    assert!(text.contains("Approved"), "{text}");
    assert!(
        !text.contains("/login/"),
        "an outcome needs no sign-in link: {text}"
    );
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(smtp.to(ALICE).len(), 2, "{:?}", smtp.received());
}

#[tokio::test]
async fn a_request_an_approval_rule_routes_is_mailed_to_its_people() {
    let smtp = FakeSmtp::start().await;
    const BOB: &str = "bob@example.com";
    let conf = format!(
        "{}[people.bob]\nemail = \"{BOB}\"\nunix = \"bob\"\n[groups.leads]\npeople = [\"bob\"]\n\
         [[approval_rules]]\nname = \"mail\"\ntool = \"send_email\"\nask = \"leads\"\n",
        config(&smtp, "")
    );
    let app = spawn_app(&conf).await;
    let (_, short) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"to": "bo"}}))
        .await;
    let mail = eventually("bob's mail", async || smtp.to(BOB).pop()).await;
    assert!(mail.header("Subject").unwrap().contains(&short));
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert!(smtp.to(ALICE).is_empty(), "only the rule's people");
}
