//! The harness checked on a page of its own, served on loopback with the headers the
//! dashboard will send: a script from a file, no inline script allowed.

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use axum::http::header;
use axum::response::{AppendHeaders, IntoResponse};
use axum::routing::get;
use axum::Router;
use futures_util::FutureExt;
use serde_json::json;

use crate::harness::{Browser, DESKTOP, PHONE, WAIT};

/// Scripts only from the page's own origin: an inline `<script>` does not run.
const CSP: &str = "script-src 'self'";

const PAGE: &str = r#"<!doctype html>
<html><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>harness</title>
<script src="/app.js"></script>
</head><body>
<p id="banner">press x to dismiss</p>
<p id="status">waiting</p>
<input id="name" placeholder="your name"> <button id="send" type="button">Send</button>
<p id="said"></p>
<script>window.__inline = "ran";</script>
</body></html>"#;

/// Records CSP violations before the page's body is parsed, and answers keys the way
/// the dashboard's shortcuts will: not while the user types in a field.
const SCRIPT: &str = r#"
window.__violations = [];
document.addEventListener("securitypolicyviolation", e => window.__violations.push(e.effectiveDirective));
window.__pressed = [];
document.addEventListener("keydown", e => {
  if (e.target.matches("input, textarea")) return;
  window.__pressed.push(e.key);
  if (e.key === "j") {
    const status = document.getElementById("status");
    status.textContent = "pressed j";
    status.classList.add("done");
  }
  if (e.key === "x") document.getElementById("banner").remove();
});
document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("send").addEventListener("click", () => {
    document.getElementById("said").textContent = "hello, " + document.getElementById("name").value;
  });
});
"#;

/// Serves the page (`/`, and `/wide` with a block wider than a phone) on a free
/// loopback port; returns its base URL.
async fn serve() -> String {
    let page = |body: String| {
        (
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (header::CONTENT_SECURITY_POLICY, CSP),
            ],
            AppendHeaders([
                (
                    header::SET_COOKIE,
                    "sid=s3cret; HttpOnly; SameSite=Lax; Path=/",
                ),
                (header::SET_COOKIE, "theme=dark; Path=/"),
            ]),
            body,
        )
            .into_response()
    };
    let wide = PAGE.replace(
        r#"<p id="said"></p>"#,
        r#"<p id="said"></p><pre class="args">curl -X POST https://example.com/a/very/long/path/that/does/not/wrap/anywhere/at/all/and/keeps/going</pre>"#,
    );
    let app = Router::new()
        .route("/", get(move || async move { page(PAGE.to_string()) }))
        .route("/wide", get(move || async move { page(wide) }))
        .route(
            "/app.js",
            get(|| async { ([(header::CONTENT_TYPE, "text/javascript")], SCRIPT) }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

#[tokio::test]
async fn a_key_press_changes_the_page_a_click_and_typing_work() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let site = serve().await;
    browser.goto(&format!("{site}/")).await;
    assert_eq!(browser.text("#status").await, "waiting");

    browser.press('j').await;
    browser.wait_for("#status.done", WAIT).await;
    assert_eq!(browser.text("#status").await, "pressed j");
    assert_eq!(browser.eval("window.__pressed").await, json!(["j"]));

    browser.press('x').await;
    browser.wait_until_gone("#banner", WAIT).await;

    // Typing in a field is not a shortcut: the page sees no key of it.
    assert_eq!(
        browser.attr("#name", "placeholder").await.as_deref(),
        Some("your name")
    );
    browser.type_into("#name", "jo").await;
    browser.click("#send").await;
    browser
        .wait_until("document.getElementById('said').textContent", WAIT)
        .await;
    assert_eq!(browser.text("#said").await, "hello, jo");
    assert_eq!(browser.eval("window.__pressed").await, json!(["j", "x"]));

    // The session cookie is HttpOnly: the browser has it, the page's scripts do not.
    let sid = browser.cookie("sid").await.expect("the sid cookie");
    assert_eq!(sid.value(), "s3cret");
    assert_eq!(sid.http_only(), Some(true));
    assert_eq!(
        browser.cookie("theme").await.unwrap().http_only(),
        Some(false)
    );
    assert_eq!(browser.eval("document.cookie").await, "theme=dark");

    // A wait that times out names what it waited for and where.
    let failed = AssertUnwindSafe(browser.wait_for("#never", Duration::from_millis(300)))
        .catch_unwind()
        .await;
    let panic = failed.expect_err("waiting for #never fails");
    let message = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .unwrap_or_default();
    for part in ["`#never`", &format!("{site}/"), "pressed j"] {
        assert!(message.contains(part), "{part} not in: {message}");
    }
}

#[tokio::test]
async fn an_inline_script_is_blocked_by_the_pages_csp() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let site = serve().await;
    browser.goto(&format!("{site}/")).await;
    // The page's own script ran, and saw the inline one refused.
    let violations = browser
        .wait_until("window.__violations.length && window.__violations", WAIT)
        .await;
    assert_eq!(violations, json!(["script-src-elem"]));
    assert_eq!(browser.eval("typeof window.__inline").await, "undefined");
    assert_eq!(browser.eval("typeof window.__pressed").await, "object");
    assert_eq!(browser.client().title().await.unwrap(), "harness");
    browser.close().await;
}

#[tokio::test]
async fn phone_width_scroll_check_and_screenshots() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let site = serve().await;
    let shots = tempfile::tempdir().unwrap();

    browser.set_window_size(PHONE.0, PHONE.1).await;
    browser.goto(&format!("{site}/")).await;
    browser.assert_no_horizontal_scroll().await;
    let phone = shots.path().join("phone.png");
    browser.screenshot(&phone).await;
    assert_eq!(png_size(&phone), (PHONE.0, PHONE.1));

    // The check catches a page that is wider than the phone, and names the culprit
    // (checked at once after `goto`: it must not return before the page is parsed).
    browser.goto(&format!("{site}/wide")).await;
    let overflow = browser.horizontal_overflow().await;
    let overflow = overflow.expect("/wide is wider than a phone");
    assert!(overflow.contains("pre.args"), "{overflow}");

    browser.set_window_size(DESKTOP.0, DESKTOP.1).await;
    browser.assert_no_horizontal_scroll().await;
    let desktop = shots.path().join("desktop.png");
    browser.screenshot(&desktop).await;
    assert_eq!(png_size(&desktop), (DESKTOP.0, DESKTOP.1));

    // Nothing of the browser outlives it, not even a zombie.
    let (group, handlers) = browser.processes();
    // Chromium 148 starts two; should a later one start none, drop this line.
    assert!(
        !handlers.is_empty(),
        "Chromium's crash handlers were not found"
    );
    drop(browser);
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // pid (comm) state ppid pgrp …: only comm may hold spaces or ')'.
            let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
            let pgrp: i32 = fields.get(2)?.parse().ok()?;
            (pgrp == group || handlers.contains(&pid)).then_some(stat)
        })
        .collect();
    assert!(left.is_empty(), "left behind: {left:#?}");
}

/// A PNG's width and height, from its header; panics if the file is not a PNG.
fn png_size(path: &std::path::Path) -> (u32, u32) {
    let png = std::fs::read(path).unwrap();
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && &png[12..16] == b"IHDR",
        "{} is not a PNG",
        path.display()
    );
    let number = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    (number(16), number(20))
}
