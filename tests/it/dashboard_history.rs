//! The dashboard's history page over HTTP: every outcome with who decided and how long
//! it waited, search and filters in the URL (and what it says of values it cannot
//! read), keyset pages through more requests than a page holds, a request's own page,
//! and the CSV and JSON exports of the filtered set.

use std::collections::HashSet;

use serde_json::{json, Value};

use crate::dashboard::{signed_in, start, Browser};

/// The short ids a history page lists, in its order.
fn listed(body: &str) -> Vec<String> {
    body.split("<a href=\"/requests/")
        .skip(1)
        .map(|s| {
            let code = s.split("<code>").nth(1).unwrap();
            code.split('<').next().unwrap().to_string()
        })
        .collect()
}

/// The link in `body` whose text is `text` (`&amp;` read back as `&`).
fn link(body: &str, text: &str) -> Option<String> {
    let end = body.find(&format!(">{text}</a>"))?;
    let tag = &body[body[..end].rfind("<a ")?..end];
    let href = tag.split("href=\"").nth(1)?.split('"').next()?;
    Some(href.replace("&amp;", "&"))
}

#[tokio::test]
async fn every_outcome_shows_who_decided_and_how_long_it_waited() {
    let app = start().await;
    let b = signed_in(&app).await;
    let allowed = app
        .submit_ok("mailer", "query_org_data", json!({"q": "contacts"}))
        .await;
    let blocked = app
        .submit_ok("drafter", "send_email", json!({"to": "x@example.com"}))
        .await;
    assert_eq!(blocked["status"], "blocked");
    let (denied, denied_short) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"n": 1}}))
        .await;
    app.decide_ok(&denied, "deny", Some("not to customers"))
        .await;
    let (_, waiting_short) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"n": 2}}))
        .await;
    let page = b.get("/history").await;
    assert_eq!(page.status, 200, "{page:?}");
    let body = &page.body;
    // Newest first, every status.
    assert_eq!(
        listed(body),
        [
            waiting_short.as_str(),
            &denied_short,
            blocked["short_id"].as_str().unwrap(),
            allowed["short_id"].as_str().unwrap()
        ]
    );
    for words in [
        "denied",
        "not to customers",
        "alice on the command line",
        "allowed",
        "blocked",
        "the policy",
        "did not wait",
        "nobody yet",
        "so far",
        "Export every request",
    ] {
        assert!(body.contains(words), "{words} in {body}");
    }
    assert!(body.contains(&format!("href=\"/requests/{denied}\"")));
    assert!(body.contains("aria-current=\"page\">History"), "{body}");
}

#[tokio::test]
async fn search_and_filters_are_kept_in_the_url_and_what_cannot_be_read_is_said() {
    let app = start().await;
    let b = signed_in(&app).await;
    let (a, short_a) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email",
            "summary": "Reply to Ann", "args": {"to": "ann@example.com"}}))
        .await;
    let (_, short_b) = app
        .submit_pending(json!({"agent": "intern", "tool": "query_org_data",
            "args": {"name": "Bo"}}))
        .await;
    app.decide_ok(&a, "approve", None).await;
    let shown = |path: &'static str| {
        let b = &b;
        async move {
            let page = b.get(path).await;
            assert_eq!(page.status, 200, "{path}: {page:?}");
            (listed(&page.body), page.body)
        }
    };
    // Words in the arguments, the summary, the agent; every word must match.
    assert_eq!(
        shown("/history?q=ANN%40example").await.0,
        [short_a.as_str()]
    );
    assert_eq!(shown("/history?q=reply+mailer").await.0, [short_a.as_str()]);
    assert!(shown("/history?q=reply+intern").await.0.is_empty());
    assert_eq!(shown("/history?q=Bo").await.0, [short_b.as_str()]);
    let (ids, body) = shown("/history?agent=intern&status=pending").await;
    assert_eq!(ids, [short_b.as_str()]);
    // The form shows what the URL asks for.
    assert!(body.contains("name=\"agent\" value=\"intern\""), "{body}");
    assert!(
        body.contains("<option value=\"pending\" selected>"),
        "{body}"
    );
    assert_eq!(
        shown("/history?status=approved").await.0,
        [short_a.as_str()]
    );
    assert_eq!(
        shown("/history?tool=query_org_data").await.0,
        [short_b.as_str()]
    );
    assert_eq!(
        shown("/history?risk=high").await.0,
        [short_a.as_str()],
        "send_email is destructive"
    );
    assert_eq!(shown("/history?since=1h").await.0.len(), 2);
    assert!(shown("/history?since=2099-01-01").await.0.is_empty());
    let (_, body) = shown("/history?q=nothing-like-this").await;
    assert!(body.contains("No request matches."), "{body}");
    // Values it cannot read: said, and the rest of the filter still applies.
    let (ids, body) =
        shown("/history?agent=intern&status=maybe&risk=huge&since=soon&after=x%3Bdrop").await;
    assert_eq!(ids, [short_b.as_str()]);
    for said in [
        "“maybe” is not an outcome",
        "“huge” is not a risk level",
        "“soon” is not a time",
        "The page link was not one gatebot made",
    ] {
        assert!(body.contains(said), "{said} in {body}");
    }
}

#[tokio::test]
async fn pages_go_through_every_request_once_and_back() {
    let app = start().await;
    let b = signed_in(&app).await;
    let total = 120;
    let mut made = Vec::new();
    for i in 0..total {
        made.push(
            app.submit_ok("mailer", "query_org_data", json!({"n": i}))
                .await["short_id"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    made.reverse();
    let mut seen = Vec::new();
    let mut path = "/history".to_string();
    let mut pages = Vec::new();
    loop {
        let page = b.get(&path).await;
        assert_eq!(page.status, 200);
        let ids = listed(&page.body);
        assert!(ids.len() <= 50);
        seen.extend(ids);
        pages.push(path.clone());
        match link(&page.body, "Older") {
            Some(next) => path = next,
            None => break,
        }
    }
    assert_eq!(seen, made, "newest first, each once");
    assert_eq!(pages.len(), 3);
    assert!(pages[1].contains("after="), "{pages:?}");
    // Back from the last page: the second again, then the first.
    let last = b.get(&pages[2]).await;
    let newer = link(&last.body, "Newer").unwrap();
    assert_eq!(listed(&b.get(&newer).await.body), made[50..100]);
    assert!(link(&b.get("/history").await.body, "Newer").is_none());
    // Filters ride along in the page links.
    let filtered = b.get("/history?agent=mailer&q=query").await;
    assert!(
        link(&filtered.body, "Older")
            .unwrap()
            .starts_with("/history?q=query&agent=mailer&after="),
        "{}",
        filtered.body
    );
}

#[tokio::test]
async fn exports_hold_the_whole_filtered_set_as_csv_and_json_with_formulas_defused() {
    let app = start().await;
    let b = signed_in(&app).await;
    let (id, short) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email",
            "summary": "=HYPERLINK(\"http://evil.example\",\"click\")",
            "args": {"to": "ann@example.com", "body": "Hi, \"Ann\",\nsee you"}}))
        .await;
    app.decide_ok(&id, "deny", Some("-1 for this")).await;
    for i in 0..520 {
        app.submit_ok("boss", "query_org_data", json!({"n": i}))
            .await;
    }
    let csv = b.get("/history.csv?agent=mailer").await;
    assert_eq!(csv.status, 200, "{csv:?}");
    assert!(csv.header("content-type").unwrap().starts_with("text/csv"));
    assert!(csv
        .header("content-disposition")
        .unwrap()
        .contains("attachment; filename=\"gatebot-history.csv\""));
    let body = dechunk(&csv);
    let mut lines = body.split("\r\n");
    let header = lines.next().unwrap();
    assert!(
        header.starts_with("\"id\",\"short_id\",\"created_at\",\"agent\",\"tool\",\"status\""),
        "{header}"
    );
    let row = lines.next().unwrap();
    assert!(row.starts_with(&format!("\"{id}\",\"{short}\",")), "{row}");
    assert!(row.contains(",\"rejected\",\"denied\","), "{row}");
    assert!(
        row.contains("\"'=HYPERLINK(\"\"http://evil.example\"\",\"\"click\"\")\""),
        "a formula is text: {row}"
    );
    assert!(row.contains("\"'-1 for this\""), "{row}");
    assert!(row.contains("alice"), "{row}");
    // The arguments are one field, their JSON's quotes doubled.
    assert!(row.contains("\\\"\"Ann\\\"\""), "{row}");
    assert!(body.ends_with("\r\n"));

    // The whole set, beyond the export's own pages (500 rows each).
    let all = b.get("/history.json?agent=boss").await;
    assert!(all
        .header("content-type")
        .unwrap()
        .starts_with("application/json"));
    let v: Value = serde_json::from_str(&dechunk(&all)).unwrap();
    let rows = v["requests"].as_array().unwrap();
    assert_eq!(rows.len(), 520);
    let distinct: HashSet<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(distinct.len(), 520);
    assert_eq!(rows[0]["args"]["n"], 519, "newest first");
    // A filter it cannot read is said in the export too.
    let noted = b.get("/history.json?agent=mailer&status=maybe").await;
    let v: Value = serde_json::from_str(&dechunk(&noted)).unwrap();
    assert!(v["notes"][0].as_str().unwrap().contains("maybe"), "{v}");
    assert_eq!(v["requests"][0]["id"], id);
    // Signed out: no export.
    assert_eq!(Browser::new(&app).get("/history.csv").await.status, 303);
}

/// A chunked body, whole.
fn dechunk(page: &crate::dashboard::Page) -> String {
    if !page
        .header("transfer-encoding")
        .is_some_and(|t| t.contains("chunked"))
    {
        return page.body.clone();
    }
    let mut out = String::new();
    let mut rest = page.body.as_str();
    loop {
        let (size, after) = rest.split_once("\r\n").unwrap();
        let n = usize::from_str_radix(size.trim(), 16).unwrap();
        if n == 0 {
            return out;
        }
        out.push_str(&after[..n]);
        rest = &after[n + 2..];
    }
}

#[tokio::test]
async fn a_request_has_a_page_with_its_card_and_an_unknown_one_is_not_found() {
    let app = start().await;
    let b = signed_in(&app).await;
    let (id, short) = app
        .submit_pending(
            json!({"agent": "mailer", "tool": "send_email", "args": {"to": "ann@example.com"}}),
        )
        .await;
    for path in [format!("/requests/{id}"), format!("/requests/{short}")] {
        let page = b.get(&path).await;
        assert_eq!(page.status, 200, "{path}: {page:?}");
        assert!(
            page.body
                .contains("<code>mailer</code> wants to run <code>send_email</code>"),
            "{}",
            page.body
        );
        // Still waiting: its buttons, with the session's token.
        assert!(page.body.contains("action=\"/decide\""), "{}", page.body);
        assert!(page.body.contains(&format!("value=\"{}\"", page.csrf())));
        assert!(page.body.contains(&format!("href=\"/audit?request={id}\"")));
    }
    app.decide_ok(&id, "approve", None).await;
    let decided = b.get(&format!("/requests/{id}")).await;
    assert!(
        !decided.body.contains("action=\"/decide\""),
        "{}",
        decided.body
    );
    assert!(
        decided.body.contains("alice on the command line"),
        "{}",
        decided.body
    );
    for path in ["/requests/zzzzzzzz", "/requests/%3Cscript%3E"] {
        let missing = b.get(path).await;
        assert_eq!(missing.status, 404, "{path}");
        assert!(!missing.body.contains("<script>"), "{}", missing.body);
    }
}

#[tokio::test]
async fn hostile_agent_text_is_escaped_on_the_history_and_request_pages() {
    let app = start().await;
    let b = signed_in(&app).await;
    let (id, _) = app
        .submit_pending(json!({
            "agent": "mailer", "tool": "send_email",
            "summary": "<img src=x onerror=alert(1)> \u{202e}txt.exe",
            "args": {"to": "<script>window.pwned=1</script>", "link": "javascript:alert(1)"}
        }))
        .await;
    app.decide_ok(&id, "deny", Some("<b>no</b> \u{202e}")).await;
    for path in [
        "/history".to_string(),
        format!("/requests/{id}"),
        "/history?q=%3Cimg".to_string(),
    ] {
        let page = b.get(&path).await;
        assert_eq!(page.status, 200, "{path}");
        let body = &page.body;
        assert!(
            body.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{path}: {body}"
        );
        assert!(
            !body.contains("<img") && !body.contains("<script>window"),
            "{path}"
        );
        assert!(!body.contains("<b>no"), "{path}");
        assert!(
            body.contains("\\u202e") && !body.contains('\u{202e}'),
            "{path}"
        );
        assert!(!body.contains("href=\"javascript"), "{path}");
    }
    // The search box gives back what was typed, as text.
    let page = b
        .get("/history?q=%22%3E%3Cscript%3Ealert(1)%3C%2Fscript%3E")
        .await;
    assert!(!page.body.contains("<script>alert"), "{}", page.body);
    assert!(
        page.body.contains("value=\"&quot;&gt;&lt;script&gt;"),
        "{}",
        page.body
    );
}

#[tokio::test]
async fn signed_out_browsers_are_sent_to_sign_in_from_every_page() {
    let app = start().await;
    let b = Browser::new(&app);
    for path in [
        "/history",
        "/history.csv",
        "/history.json",
        "/requests/abcd",
        "/audit",
        "/system",
    ] {
        let page = b.get(path).await;
        assert_eq!(
            (page.status, page.header("location").as_deref()),
            (303, Some("/signin")),
            "{path}"
        );
    }
}
