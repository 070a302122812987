//! The dashboard's audit page over HTTP: the trail newest first, filtered and paged,
//! the chain's state as `gatebot audit verify` finds it, and its head with how to keep
//! and check it.

use std::time::Duration;

use serde_json::json;

use crate::dashboard::{signed_in, start};

/// The seqs of the rows a page shows, in its order.
fn seqs(body: &str) -> Vec<i64> {
    body.split("<span class=\"seq\">row ")
        .skip(1)
        .map(|s| s.split('<').next().unwrap().parse().unwrap())
        .collect()
}

fn link(body: &str, text: &str) -> Option<String> {
    let end = body.find(&format!(">{text}</a>"))?;
    let tag = &body[body[..end].rfind("<a ")?..end];
    let href = tag.split("href=\"").nth(1)?.split('"').next()?;
    Some(href.replace("&amp;", "&"))
}

#[tokio::test]
async fn the_trail_shows_newest_first_with_the_chain_intact_and_its_head_to_keep() {
    let app = start().await;
    let b = signed_in(&app).await;
    let (id, short) = app
        .submit_pending(
            json!({"agent": "mailer", "tool": "send_email", "args": {"to": "ann@example.com"}}),
        )
        .await;
    app.decide_ok(&id, "deny", Some("not today")).await;
    let page = b.get("/audit").await;
    assert_eq!(page.status, 200, "{page:?}");
    let body = &page.body;
    assert!(body.contains("The trail is intact"), "{body}");
    let head = app.owner.get("/v1/audit/head").await.unwrap().body;
    let hash = head["hash"].as_str().unwrap();
    assert!(
        body.contains(&format!("gatebot audit verify --head {hash}")),
        "{body}"
    );
    let rows = seqs(body);
    assert!(
        rows.windows(2).all(|w| w[0] > w[1]),
        "newest first: {rows:?}"
    );
    // The head shown is at least as new as the newest row (the page's own sign-in is audited).
    assert!(rows[0] <= head["seq"].as_i64().unwrap());
    assert!(body.contains("alice on the command line"), "{body}");
    // A row's detail is its data, as text.
    assert!(
        body.contains("&quot;reason&quot;: &quot;not today&quot;"),
        "{body}"
    );

    // One request's rows, by its short id: submitted, evaluated, decided.
    let mine = b.get(&format!("/audit?request={short}")).await;
    let events: Vec<&str> = mine
        .body
        .split("<td data-label=\"Event\"><code>")
        .skip(1)
        .map(|s| s.split('<').next().unwrap())
        .collect();
    assert_eq!(
        events,
        ["decided", "evaluated", "submitted"],
        "{}",
        mine.body
    );
    assert!(mine.body.contains(&format!("value=\"{short}\"")));
    let decided = b.get("/audit?event=submitted&actor=MAIL").await;
    assert_eq!(seqs(&decided.body).len(), 1, "{}", decided.body);
    let nothing = b.get("/audit?since=2099-01-01").await;
    assert!(nothing.body.contains("No row matches."), "{}", nothing.body);
    // What it cannot read is said; the page still answers.
    let odd = b.get("/audit?since=soon&after=abc").await;
    assert_eq!(odd.status, 200);
    assert!(odd.body.contains("“soon” is not a time"), "{}", odd.body);
    assert!(odd.body.contains("The page link was not one gatebot made"));
}

#[tokio::test]
async fn the_trail_pages_through_every_row_once() {
    let app = start().await;
    let b = signed_in(&app).await;
    for i in 0..70 {
        app.submit_ok("mailer", "query_org_data", json!({"n": i}))
            .await;
    }
    let mut seen = Vec::new();
    let mut path = "/audit".to_string();
    let mut newest_second = None;
    loop {
        let page = b.get(&path).await;
        assert_eq!(page.status, 200);
        seen.extend(seqs(&page.body));
        if newest_second.is_none() && path != "/audit" {
            newest_second = Some(path.clone());
        }
        match link(&page.body, "Older") {
            Some(next) => path = next,
            None => break,
        }
    }
    // Every row from the newest when the first page was read down to row 1.
    let top = seen[0];
    assert_eq!(seen, (1..=top).rev().collect::<Vec<_>>());
    assert!(seen.len() > 140, "{}", seen.len());
    // And back.
    let second = b.get(&newest_second.unwrap()).await;
    let newer = link(&second.body, "Newer").unwrap();
    assert_eq!(seqs(&b.get(&newer).await.body)[..], seen[..100]);
}

#[tokio::test]
async fn a_trail_edited_behind_gatebots_back_is_shown_broken() {
    if !crate::helpers::sqlite_only("a_trail_edited_behind_gatebots_back_is_shown_broken") {
        return;
    }
    let app = start().await;
    let b = signed_in(&app).await;
    app.submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {}}))
        .await;
    let db = rusqlite::Connection::open(app.path().join("gatebot.db")).unwrap();
    db.busy_timeout(Duration::from_secs(5)).unwrap();
    db.execute_batch(
        "DROP TRIGGER audit_is_append_only_update; \
         UPDATE audit SET actor = 'mallory' WHERE event = 'submitted';",
    )
    .unwrap();
    let page = b.get("/audit").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("The trail is broken"), "{}", page.body);
    assert!(
        page.body.contains("was changed after it was written"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("audit_is_append_only_update is missing"),
        "{}",
        page.body
    );
}

#[tokio::test]
async fn hostile_text_in_the_trail_is_escaped() {
    let app = start().await;
    let b = signed_in(&app).await;
    let (id, _) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email",
            "args": {"x": "<img src=x onerror=alert(1)>"}}))
        .await;
    app.decide_ok(
        &id,
        "deny",
        Some("<script>window.pwned=1</script> \u{202e}gnp.exe javascript:alert(1)"),
    )
    .await;
    let page = b.get("/audit?actor=%3Cscript%3E").await;
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains("value=\"&lt;script&gt;\""),
        "{}",
        page.body
    );
    let page = b.get("/audit").await;
    let body = &page.body;
    assert!(
        body.contains("&lt;script&gt;window.pwned=1&lt;/script&gt;"),
        "{body}"
    );
    assert!(!body.contains("<script>window") && !body.contains("<img"));
    assert!(body.contains("\\u202e") && !body.contains('\u{202e}'));
    assert!(!body.contains("href=\"javascript"));
}
