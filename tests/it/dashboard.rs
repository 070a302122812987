//! The web dashboard over HTTP, as a browser would use it (the real browser's tests
//! are `tests/browser`): sign-in links used up only by a POST, sessions, CSRF, the
//! pending page drawing every kind's card with agent text escaped, decisions through
//! the kinds' owner code, live events, and the headers every answer carries. The
//! other pages' tests use its [`Browser`] (an HTTP client with a cookie) and [`signed_in`].

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::{alice, eventually, free_port, spawn_app, spawn_app_with_memory, TestApp};

/// A daemon with the dashboard on a free port, and `alice` as a person.
pub(crate) async fn start() -> TestApp {
    let app = spawn_app(&config()).await;
    assert!(app.dashboard.is_some());
    app
}

pub(crate) fn config() -> String {
    format!(
        "[dashboard]\nlisten = \"{}\"\n\n[people.alice]\nunix = \"alice\"\n",
        free_port()
    )
}

/// An HTTP answer, whole.
#[derive(Debug)]
pub(crate) struct Page {
    pub(crate) status: u16,
    pub(crate) head: String,
    pub(crate) body: String,
}

impl Page {
    pub(crate) fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }

    /// The page's CSRF token (every signed-in page has the sign-out form).
    pub(crate) fn csrf(&self) -> String {
        let at = self
            .body
            .find("name=\"csrf\" value=\"")
            .expect("a form with a token")
            + 19;
        self.body[at..at + 64].to_string()
    }
}

/// A browser of one: its cookie, if signed in.
pub(crate) struct Browser {
    pub(crate) addr: SocketAddr,
    pub(crate) cookie: Option<String>,
}

impl Browser {
    pub(crate) fn new(app: &TestApp) -> Browser {
        Browser {
            addr: app.dashboard.unwrap(),
            cookie: None,
        }
    }

    pub(crate) async fn send(
        &self,
        method: &str,
        path: &str,
        body: &str,
        extra: &[(&str, &str)],
    ) -> Page {
        let mut s = tokio::net::TcpStream::connect(self.addr).await.unwrap();
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
            self.addr
        );
        if let Some(c) = &self.cookie {
            req.push_str(&format!("Cookie: gatebot_session={c}\r\n"));
        }
        for (k, v) in extra {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        if method == "POST" {
            req.push_str("Content-Type: application/x-www-form-urlencoded\r\n");
            req.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        req.push_str("\r\n");
        req.push_str(body);
        s.write_all(req.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).await.unwrap();
        let raw = String::from_utf8_lossy(&raw).into_owned();
        let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
        let status = head[9..12].parse().unwrap();
        Page {
            status,
            head: head.to_string(),
            body: body.to_string(),
        }
    }

    pub(crate) async fn get(&self, path: &str) -> Page {
        self.send("GET", path, "", &[]).await
    }

    pub(crate) async fn post(&self, path: &str, form: &[(&str, &str)]) -> Page {
        let body = serde_urlencoded::to_string(form).unwrap();
        self.send("POST", path, &body, &[]).await
    }

    /// Signs in with `link` (its path is used: the test's port is the real one).
    pub(crate) async fn sign_in(&mut self, link: &str) -> Page {
        let token = link.rsplit('/').next().unwrap();
        let page = self.post("/login", &[("token", token)]).await;
        if let Some(c) = page.header("set-cookie") {
            let value = c
                .split(';')
                .next()
                .unwrap()
                .trim_start_matches("gatebot_session=");
            self.cookie = Some(value.to_string());
        }
        page
    }
}

/// A sign-in link for `person`, as `gatebot dashboard login` asks for it.
pub(crate) async fn link(app: &TestApp, person: &str) -> String {
    let res = app
        .owner_as(person)
        .post("/v1/dashboard/links", &json!({}))
        .await
        .unwrap();
    assert!(res.status.is_success(), "{:?}", res.body);
    res.body["url"].as_str().unwrap().to_string()
}

pub(crate) async fn signed_in(app: &TestApp) -> Browser {
    let mut b = Browser::new(app);
    let page = b.sign_in(&link(app, "alice").await).await;
    assert_eq!(page.status, 303, "{page:?}");
    b
}

#[tokio::test]
async fn opening_a_link_signs_no_one_in_its_post_does_once() {
    let app = start().await;
    let b = Browser::new(&app);
    // Signed out: every page sends you to how to sign in.
    let page = b.get("/").await;
    assert_eq!(
        (page.status, page.header("location").as_deref()),
        (303, Some("/signin"))
    );
    assert!(b
        .get("/signin")
        .await
        .body
        .contains("gatebot dashboard login"));

    let url = link(&app, "alice").await;
    assert!(
        url.starts_with(&format!("http://{}/login/", app.dashboard.unwrap())),
        "{url}"
    );
    let path = url
        .split_once(&app.dashboard.unwrap().to_string())
        .unwrap()
        .1;
    // A preview fetches the link: a page with a button, no session, the link intact.
    for _ in 0..2 {
        let preview = b.get(path).await;
        assert_eq!(preview.status, 200);
        assert!(preview.header("set-cookie").is_none());
        assert!(
            preview.body.contains("Sign in</button>"),
            "{}",
            preview.body
        );
    }
    let mut b = Browser::new(&app);
    let signed = b.sign_in(&url).await;
    assert_eq!(
        (signed.status, signed.header("location").as_deref()),
        (303, Some("/"))
    );
    let cookie = signed.header("set-cookie").unwrap();
    for attr in ["HttpOnly", "SameSite=Lax", "Path=/", "Max-Age=604800"] {
        assert!(cookie.contains(attr), "{cookie}");
    }
    assert!(!cookie.contains("Secure"), "plain http: {cookie}");
    let page = b.get("/").await;
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains(r#"<span class="person">alice</span>"#),
        "{}",
        page.body
    );

    // The same link again, a garbled one, a made-up one: refused, nobody signed in.
    let mut again = Browser::new(&app);
    let used = again.sign_in(&url).await;
    assert_eq!(used.status, 403);
    assert!(used.body.contains("was used already"), "{}", used.body);
    assert!(again.cookie.is_none());
    for token in ["<script>", &"a".repeat(64)] {
        let page = again.post("/login", &[("token", token)]).await;
        assert_eq!(page.status, 403);
        assert!(page.body.contains("not one gatebot made"), "{}", page.body);
        assert!(!page.body.contains("<script>"));
    }
    let rows = app.owner.get("/v1/audit").await.unwrap().body["audit"].clone();
    let events: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["event"].as_str().unwrap())
        .collect();
    assert!(
        events.contains(&"dashboard_link") && events.contains(&"dashboard_sign_in"),
        "{events:?}"
    );
    let refused: Vec<&Value> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["event"] == "unauthorised_attempt")
        .collect();
    assert!(!refused.is_empty(), "refused sign-ins are audited: {rows}");
    assert_eq!(
        refused[0]["detail"]["attempted"],
        "sign in to the dashboard"
    );
}

#[tokio::test]
async fn a_decision_on_the_dashboard_is_the_persons_and_a_second_press_says_who_was_first() {
    let app = start().await;
    let b = signed_in(&app).await;
    let (id, short) = app
        .submit_pending(json!({
            "agent": "mailer", "tool": "send_email",
            "summary": "<img src=x onerror=alert(1)> \u{202e}txt.exe",
            "args": {"to": "<script>window.pwned=1</script>", "link": "javascript:alert(1)"}
        }))
        .await;
    let page = b.get("/").await;
    assert!(page.body.contains(&short), "{}", page.body);
    // Agent text is text: escaped, hidden characters written out, no live markup.
    assert!(page.body.contains("&lt;img src=x onerror=alert(1)&gt;"));
    assert!(page.body.contains("\\u202e") && !page.body.contains('\u{202e}'));
    assert!(!page.body.contains("<script>window") && !page.body.contains("<img"));
    assert!(!page.body.contains("href=\"javascript"));
    let csrf = page.csrf();
    let deny = format!("gb1:d:{id}");
    let said = b
        .send(
            "POST",
            "/decide",
            &serde_urlencoded::to_string([
                ("csrf", csrf.as_str()),
                ("button", &deny),
                ("reason", "not today"),
            ])
            .unwrap(),
            &[("Accept", "application/json")],
        )
        .await;
    assert_eq!(said.status, 200, "{said:?}");
    let said: Value = serde_json::from_str(&said.body).unwrap();
    assert_eq!(
        said["said"][0],
        format!("denied {short} (send_email from mailer)")
    );
    let decided = app.wait_for_status(&id, "rejected").await;
    assert_eq!(decided["decided_by"], "alice");
    assert_eq!(decided["decided_via"], "dashboard");
    assert_eq!(decided["reason"], "not today");
    // A second press (another tab, an old page): nothing changes, and it says who was first.
    let allow = format!("gb1:a:{id}");
    let second = b
        .post("/decide", &[("csrf", &csrf), ("button", &allow)])
        .await;
    assert_eq!(second.status, 409, "{second:?}");
    assert!(
        second
            .body
            .contains("already denied by alice on the dashboard"),
        "{}",
        second.body
    );
    assert_eq!(app.get(&id, 0.0).await.body["status"], "rejected");
    // Gone from the list.
    assert!(!b.get("/").await.body.contains(&short));
}

#[tokio::test]
async fn forms_without_the_sessions_token_or_from_another_site_change_nothing() {
    let app = start().await;
    let b = signed_in(&app).await;
    let (id, _) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {}}))
        .await;
    let csrf = b.get("/").await.csrf();
    let allow = format!("gb1:a:{id}");
    let wrong = b
        .post("/decide", &[("csrf", &"0".repeat(64)), ("button", &allow)])
        .await;
    assert_eq!(wrong.status, 403, "{wrong:?}");
    let body = serde_urlencoded::to_string([("csrf", csrf.as_str()), ("button", &allow)]).unwrap();
    let cross = b
        .send(
            "POST",
            "/decide",
            &body,
            &[("Origin", "https://evil.example")],
        )
        .await;
    assert_eq!(cross.status, 403, "{cross:?}");
    // Signed out, with a good token from an old page: nothing either.
    let stranger = Browser::new(&app);
    let out = stranger
        .post("/decide", &[("csrf", &csrf), ("button", &allow)])
        .await;
    assert_eq!(out.status, 401);
    // A button gatebot never drew.
    let forged = b
        .post("/decide", &[("csrf", &csrf), ("button", "gb1:zz:nothing")])
        .await;
    assert_eq!(forged.status, 400);
    assert!(
        forged.body.contains("not one gatebot offers"),
        "{}",
        forged.body
    );
    assert_eq!(app.get(&id, 0.0).await.body["status"], "pending");
    let audit = app.owner.get("/v1/audit").await.unwrap().body.to_string();
    assert!(
        audit.contains("a dashboard form without its token"),
        "{audit}"
    );
}

#[tokio::test]
async fn every_answer_forbids_inline_script_framing_caching_and_referrers_to_other_sites() {
    let app = start().await;
    let b = signed_in(&app).await;
    for path in ["/", "/signin", "/login/abc", "/nowhere", "/assets/app.js"] {
        let page = b.get(path).await;
        let csp = page.header("content-security-policy").unwrap_or_default();
        assert!(
            csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"),
            "{path}: {csp}"
        );
        assert!(!csp.contains("unsafe-inline"), "{csp}");
        assert_eq!(
            page.header("referrer-policy").as_deref(),
            Some("same-origin"),
            "{path}"
        );
        assert_eq!(
            page.header("x-content-type-options").as_deref(),
            Some("nosniff"),
            "{path}"
        );
    }
    assert_eq!(
        b.get("/").await.header("cache-control").as_deref(),
        Some("no-store")
    );
    assert!(
        !b.get("/").await.body.contains("<script>"),
        "no inline script"
    );
    let js = b.get("/assets/app.js").await;
    assert_eq!(js.status, 200);
    assert!(js
        .header("content-type")
        .unwrap()
        .starts_with("text/javascript"));
    assert_eq!(b.get("/nowhere").await.status, 404);
}

#[tokio::test]
async fn an_open_page_hears_of_new_requests_and_decisions_made_elsewhere() {
    let app = start().await;
    let b = signed_in(&app).await;
    let mut s = tokio::net::TcpStream::connect(b.addr).await.unwrap();
    let req = format!(
        "GET /events HTTP/1.1\r\nHost: x\r\nCookie: gatebot_session={}\r\n\r\n",
        b.cookie.as_ref().unwrap()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut seen = String::new();
    // Until `needle` is in what came `times` times (the body is chunked: events are
    // counted, not matched across chunk boundaries).
    let mut read_until = async |needle: &str, times: usize| {
        let mut buf = [0u8; 4096];
        tokio::time::timeout(Duration::from_secs(20), async {
            while seen.matches(needle).count() < times {
                let n = s.read(&mut buf).await.unwrap();
                assert!(n > 0, "the stream ended: {seen}");
                seen.push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no {needle} in {seen}"));
    };
    read_until("text/event-stream", 1).await;
    let (id, _) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {}}))
        .await;
    read_until(&format!("event: change\ndata: {id}"), 1).await;
    app.decide_ok(&id, "approve", None).await;
    // The decision made on the command line is a second change of the same request.
    read_until(&format!("event: change\ndata: {id}"), 2).await;
}

#[tokio::test]
async fn sessions_are_listed_revoked_and_signed_out_everywhere() {
    let app = start().await;
    let one = signed_in(&app).await;
    let two = signed_in(&app).await;
    let listed = app.owner.get("/v1/dashboard/sessions").await.unwrap().body;
    let sessions = listed["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2, "{listed}");
    assert!(sessions
        .iter()
        .all(|s| s["person"] == "alice" && s.get("csrf").is_none()));
    let first = sessions[1]["id"].as_str().unwrap().to_string();
    let res = app
        .owner_as("alice")
        .post("/v1/dashboard/sessions/revoke", &json!({"session": first}))
        .await
        .unwrap();
    assert_eq!(res.body["ended"], json!([first]));
    let stale = app
        .owner_as("alice")
        .post(
            "/v1/dashboard/sessions/revoke",
            &json!({"session": "zzzzzzzz"}),
        )
        .await
        .unwrap();
    assert_eq!(stale.status.as_u16(), 404, "{:?}", stale.body);
    assert_eq!(one.get("/").await.status, 303, "revoked");
    assert_eq!(two.get("/").await.status, 200);
    // "Sign out everywhere" from the page.
    let three = signed_in(&app).await;
    let csrf = three.get("/").await.csrf();
    let out = three
        .post("/logout", &[("csrf", &csrf), ("everywhere", "1")])
        .await;
    assert_eq!(out.status, 200);
    assert!(out.header("set-cookie").unwrap().contains("Max-Age=0"));
    assert_eq!(two.get("/").await.status, 303);
    assert_eq!(three.get("/").await.status, 303);
    assert!(
        app.owner.get("/v1/dashboard/sessions").await.unwrap().body["sessions"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn links_are_for_owners_only_and_need_the_dashboard_on() {
    let app = start().await;
    // Agents cannot ask for one.
    let res = app
        .agent
        .post("/v1/dashboard/links", &json!({}))
        .await
        .unwrap();
    assert_eq!(res.status.as_u16(), 404, "{:?}", res.body);
    let off = spawn_app("").await;
    let res = off
        .owner
        .post("/v1/dashboard/links", &json!({}))
        .await
        .unwrap();
    assert_eq!(res.status.as_u16(), 409);
    assert_eq!(res.body["error"]["code"], "dashboard_off");
    assert!(res.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("[dashboard]"));
}

#[tokio::test]
async fn login_in_a_private_chat_gives_a_link_and_in_a_group_says_where_to_ask() {
    let memory = gatebot::chat::memory::Memory::new(&["-100"], 5);
    let app = spawn_app_with_memory(tempfile::tempdir().unwrap(), &config(), &memory).await;
    let group = memory.say(&alice(), "-100", "/login", None).await;
    assert!(group.text().contains("private chat"), "{}", group.text());
    assert!(!group.text().contains("/login/"));
    let (_, private) = memory.write(&alice(), "42", "/login").await;
    let text = private.text();
    let url = text
        .split_whitespace()
        .find(|w| w.contains("/login/"))
        .unwrap_or_else(|| panic!("{text}"))
        .to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    // Signing in with it: `a_chat_approvers_session_ends_when_a_reload_removes_them`.
    // Someone who is no approver gets no link.
    let (_, refused) = memory
        .write(&crate::helpers::mallory(), "66", "/login")
        .await;
    assert!(!refused.text().contains("/login/"), "{}", refused.text());
    eventually("the refusal in the trail", async || {
        let audit = app.owner.get("/v1/audit").await.unwrap().body.to_string();
        audit.contains("login").then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_batch_decides_what_its_confirmation_listed_and_never_approves_a_critical_request() {
    let app = start().await;
    let b = signed_in(&app).await;
    let mut ids = Vec::new();
    for n in 0..3 {
        let (id, _) = app
            .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"n": n}}))
            .await;
        ids.push(id);
    }
    let (critical, _) = app
        .submit_pending(json!({"agent": "mailer", "tool": "Bash", "args": {"command": "rm -rf /"}}))
        .await;
    assert_eq!(
        app.get(&critical, 0.0).await.body["risk"]["score"],
        "critical"
    );
    let csrf = b.get("/").await.csrf();
    // Ticked: two of the three and the critical one.
    let ask = |confirmed: bool, ids: &[&str]| {
        let mut form = vec![("csrf", csrf.as_str()), ("verb", "approve")];
        if confirmed {
            form.push(("confirmed", "1"));
        }
        form.extend(ids.iter().map(|id| ("id", *id)));
        serde_urlencoded::to_string(form).unwrap()
    };
    let count = b
        .send(
            "POST",
            "/batch",
            &ask(false, &[&ids[0], &ids[1], &critical]),
            &[],
        )
        .await;
    assert_eq!(count.status, 200, "{count:?}");
    assert!(count.body.contains("Approve 2 requests?"), "{}", count.body);
    assert!(
        count
            .body
            .contains("1 request of critical risk is left out"),
        "{}",
        count.body
    );
    // Counting decided nothing.
    for id in [&ids[0], &ids[1], &critical] {
        assert_eq!(app.get(id, 0.0).await.body["status"], "pending");
    }
    // The confirmation's form names exactly the two; a forged one with the critical
    // request in it still leaves it out.
    assert!(!count
        .body
        .contains(&format!("name=\"id\" value=\"{critical}\"")));
    let done = b
        .send(
            "POST",
            "/batch",
            &ask(true, &[&ids[0], &ids[1], &critical]),
            &[("Accept", "application/json")],
        )
        .await;
    let said: Value = serde_json::from_str(&done.body).unwrap();
    assert_eq!(said["said"][0], "Approved 2 requests.", "{said}");
    for id in [&ids[0], &ids[1]] {
        let r = app.get(id, 0.0).await.body;
        assert_eq!(
            (r["status"].as_str(), r["decided_via"].as_str()),
            (Some("approved"), Some("dashboard"))
        );
    }
    assert_eq!(app.get(&critical, 0.0).await.body["status"], "pending");
    assert_eq!(app.get(&ids[2], 0.0).await.body["status"], "pending");

    // Deny all that a filter shows, critical included, with a reason.
    let form = serde_urlencoded::to_string([
        ("csrf", csrf.as_str()),
        ("verb", "deny"),
        ("all", "1"),
        ("agent", "mailer"),
        ("reason", "cleaning up"),
    ])
    .unwrap();
    let count = b.send("POST", "/batch", &form, &[]).await;
    assert!(count.body.contains("Deny 2 requests?"), "{}", count.body);
    let confirm: Vec<(String, String)> = count
        .body
        .split("<input type=\"hidden\" ")
        .skip(1)
        .filter_map(|i| {
            let name = i.split("name=\"").nth(1)?.split('"').next()?;
            let value = i.split("value=\"").nth(1)?.split('"').next()?;
            Some((name.to_string(), value.to_string()))
        })
        .collect();
    let done = b
        .send(
            "POST",
            "/batch",
            &serde_urlencoded::to_string(&confirm).unwrap(),
            &[("Accept", "application/json")],
        )
        .await;
    let said: Value = serde_json::from_str(&done.body).unwrap();
    assert_eq!(said["said"][0], "Denied 2 requests.", "{said}");
    let r = app.get(&critical, 0.0).await.body;
    assert_eq!(
        (r["status"].as_str(), r["reason"].as_str()),
        (Some("rejected"), Some("cleaning up"))
    );
    // Without the token: nothing.
    let bad = b
        .post("/batch", &[("csrf", "x"), ("verb", "deny"), ("all", "1")])
        .await;
    assert_eq!(bad.status, 403);
    let junk = b
        .post(
            "/batch",
            &[("csrf", &csrf), ("verb", "deny"), ("id", "<script>")],
        )
        .await;
    assert_eq!(junk.status, 400);
    assert!(!junk.body.contains("<script>"));
}

#[tokio::test]
async fn a_draft_only_agents_blocked_sends_are_kept_as_drafts_to_hand_on_or_discard() {
    let app = spawn_app(&crate::inbox::with_inbox("", &config())).await;
    let b = signed_in(&app).await;
    let draft = |n: u32| {
        json!({"agent": "drafter", "tool": "send_email",
               "args": {"to": "<img src=x onerror=alert(1)>", "n": n}})
    };
    let first = app.submit(draft(1)).await.body;
    assert_eq!(first["status"], "blocked");
    let second = app.submit(draft(2)).await.body;
    // Not drafts: a read-only call it may make, and another agent's blocked call.
    app.submit_ok("drafter", "query_org_data", json!({})).await;
    let page = b.get("/drafts").await;
    assert_eq!(page.status, 200);
    for d in [&first, &second] {
        assert!(
            page.body.contains(d["short_id"].as_str().unwrap()),
            "{}",
            page.body
        );
    }
    assert_eq!(page.body.matches("<article").count(), 2, "{}", page.body);
    assert!(
        page.body.contains("&lt;img src=x onerror=alert(1)&gt;") && !page.body.contains("<img")
    );
    let csrf = page.csrf();
    let id = first["id"].as_str().unwrap();
    let json_post = |path: &'static str, form: Vec<(&'static str, String)>| {
        let body = serde_urlencoded::to_string(form).unwrap();
        let b = &b;
        async move {
            let p = b
                .send("POST", path, &body, &[("Accept", "application/json")])
                .await;
            (
                p.status,
                serde_json::from_str::<Value>(&p.body).unwrap_or(Value::Null),
            )
        }
    };
    // Handed to mailer as a task: it runs under mailer's own tier.
    let (status, said) = json_post(
        "/drafts/hand",
        vec![
            ("csrf", csrf.clone()),
            ("id", id.to_string()),
            ("agent", "mailer".into()),
        ],
    )
    .await;
    assert_eq!(status, 200, "{said}");
    assert!(
        said["said"][0]
            .as_str()
            .unwrap()
            .starts_with("Handed the draft"),
        "{said}"
    );
    let tasks = app.owner.get("/v1/tasks?agent=mailer").await.unwrap().body;
    let task = &tasks["tasks"][0];
    assert_eq!(task["agent"], "mailer", "{tasks}");
    assert!(
        tasks
            .to_string()
            .contains("Send this draft, which drafter wrote"),
        "{tasks}"
    );
    // A second hand (another tab): refused, saying what became of it.
    let (status, again) = json_post(
        "/drafts/hand",
        vec![
            ("csrf", csrf.clone()),
            ("id", id.to_string()),
            ("agent", "mailer".into()),
        ],
    )
    .await;
    assert_eq!(status, 409, "{again}");
    assert!(
        again["error"]
            .as_str()
            .unwrap()
            .contains("handed on already"),
        "{again}"
    );
    // Discarded; without the token nothing happens.
    let other = second["id"].as_str().unwrap().to_string();
    let refused = b
        .post("/drafts/discard", &[("csrf", "nope"), ("id", &other)])
        .await;
    assert_eq!(refused.status, 403);
    let (status, _) = json_post(
        "/drafts/discard",
        vec![("csrf", csrf.clone()), ("id", other.clone())],
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(b.get("/drafts").await.body.matches("<article").count(), 0);
    let audit = app.audit_events(&other).await;
    assert!(audit.contains(&"draft_discarded".to_string()), "{audit:?}");
    let (status, unknown) = json_post(
        "/drafts/discard",
        vec![("csrf", csrf), ("id", "zzzzzzzz".into())],
    )
    .await;
    assert_eq!(status, 404, "{unknown}");
}

#[tokio::test]
async fn a_chat_approvers_session_ends_when_a_reload_removes_them() {
    const TOKEN: &str = "424242:AAE-fake-secret-token-for-dashboard";
    const ALICE: crate::fake_telegram::User = (42, "Alice");
    let fake = crate::fake_telegram::FakeTelegram::start(TOKEN).await;
    let telegram = |approvers: &str| {
        format!(
            "[telegram]\ntoken = \"{TOKEN}\"\napi_url = \"{}\"\nchats = [-5001]\napprovers = [{approvers}]\n",
            fake.url
        )
    };
    let dashboard = config();
    let app = spawn_app(&format!("{dashboard}\n{}", telegram("42"))).await;
    // Alice asks for a link in her private chat with the bot, and signs in.
    fake.say(ALICE, 42, "/login", None);
    let reply = eventually("the link in Alice's private chat", async || {
        fake.ok_calls("sendMessage")
            .into_iter()
            .find(|p| p["chat_id"] == json!(42) && p["text"].as_str().unwrap().contains("/login/"))
    })
    .await;
    let text = reply["text"].as_str().unwrap();
    let url = text
        .split(|c: char| c.is_whitespace() || c == '<' || c == '"')
        .find(|w| w.contains("/login/"))
        .unwrap()
        .to_string();
    let mut b = Browser::new(&app);
    assert_eq!(b.sign_in(&url).await.status, 303);
    let page = b.get("/").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("Alice (42)"), "{}", page.body);
    // An owner removes her from the approvers: her session ends at its next use.
    std::fs::write(
        &app.config_path,
        format!(
            "{}\n{dashboard}\n{}",
            crate::helpers::BASE_CONFIG,
            telegram("43")
        ),
    )
    .unwrap();
    app.engine
        .reload(gatebot::config::Config::load(&app.config_path).unwrap())
        .await
        .unwrap();
    let page = b.get("/").await;
    assert_eq!(page.status, 303, "{page:?}");
    assert_eq!(page.header("location").as_deref(), Some("/signin"));
    let page = b.post("/logout", &[("csrf", "x")]).await;
    assert_eq!(page.status, 401, "{page:?}");
    let sessions = app.owner.get("/v1/dashboard/sessions").await.unwrap().body;
    assert_eq!(sessions["sessions"], json!([]), "{sessions}");
    let audit = app.owner.get("/v1/audit").await.unwrap().body;
    let ended = audit["audit"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["event"] == "dashboard_sign_out")
        .cloned()
        .unwrap_or_else(|| panic!("{audit}"));
    assert_eq!(ended["actor"], "gatebot (no longer an approver)", "{ended}");
}
