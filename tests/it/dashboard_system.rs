//! The dashboard's system page over HTTP: storage, chat platforms and their counters,
//! version, the config file and who is signed in.

use serde_json::json;

use crate::dashboard::{config, signed_in, start, Browser};
use crate::helpers::{eventually, spawn_app_with_memory};

#[tokio::test]
async fn the_system_page_says_storage_version_config_and_who_is_signed_in() {
    let app = start().await;
    let b = signed_in(&app).await;
    let _other = signed_in(&app).await;
    app.submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {}}))
        .await;
    let page = b.get("/system").await;
    assert_eq!(page.status, 200, "{page:?}");
    let body = &page.body;
    for said in [
        "The database keeps what it is sent.",
        "1 request waits for an owner.",
        "No chat platform is on",
        env!("CARGO_PKG_VERSION"),
        "Running for",
        "2 browsers (alice)",
        "gatebot dashboard sessions",
        "Nodes",
        "(this one)",
        "leads",
    ] {
        assert!(body.contains(said), "{said} in {body}");
    }
    assert!(
        body.contains(&app.config_path.display().to_string()),
        "{body}"
    );
    assert!(body.contains("aria-current=\"page\">System"), "{body}");
}

#[tokio::test]
async fn a_running_chat_platform_shows_with_its_counters() {
    let memory = gatebot::chat::memory::Memory::new(&["-100"], 5);
    let app = spawn_app_with_memory(tempfile::tempdir().unwrap(), &config(), &memory).await;
    let mut b = Browser::new(&app);
    b.sign_in(&crate::dashboard::link(&app, "alice").await)
        .await;
    app.submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {}}))
        .await;
    eventually("the card posted and counted", async || {
        let page = b.get("/system").await;
        (page
            .body
            .contains("<td data-label=\"Platform\">Memory</td>")
            && page.body.contains("1 card, 0 digests"))
        .then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_deleted_database_is_said_on_every_page_with_what_to_do() {
    if !crate::helpers::sqlite_only("a_deleted_database_is_said_on_every_page_with_what_to_do") {
        return;
    }
    let app = start().await;
    let b = signed_in(&app).await;
    let db = app.path().join("gatebot.db");
    std::fs::remove_file(&db).unwrap();
    for path in ["/", "/system", "/history"] {
        let page = b.get(path).await;
        assert_eq!(page.status, 503, "{path}: {page:?}");
        assert!(
            page.body
                .contains("The database cannot keep what it is sent")
                && page.body.contains("was deleted")
                && page.body.contains("restart gatebot"),
            "{path}: {}",
            page.body
        );
    }
}
