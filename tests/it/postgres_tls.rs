//! TLS to PostgreSQL (`sslmode=require` in `[store] url`, docs/scale-out.md): a node on
//! the throwaway cluster, which offers TLS with a certificate authority of its own, talks
//! to it encrypted once it trusts that authority (`sslrootcert`), and refuses a server
//! whose certificate it cannot verify. Skipped, with one line, without PostgreSQL or
//! without `openssl` to make the cluster's certificates.

use serde_json::json;

use crate::helpers::spawn_app;
use crate::pg_cluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_with_sslmode_require_is_encrypted_and_refuses_a_server_it_cannot_verify() {
    let Some(db) = pg_cluster::database() else {
        return;
    };
    let Some(ca) = db.tls_ca() else {
        eprintln!("PostgreSQL TLS test skipped: the test cluster offers no TLS (no openssl)");
        return;
    };
    let url = format!("{}?sslmode=require&sslrootcert={}", db.url(), ca.display());
    let app = spawn_app(&format!("[store]\nurl = \"{url}\"\n")).await;
    let (id, _) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"to": "ann"}}))
        .await;
    app.decide_ok(&id, "approve", None).await;
    // PostgreSQL says every connection gatebot holds is encrypted.
    let connections = db.run(
        "SELECT count(*), count(*) FILTER (WHERE s.ssl) FROM pg_stat_activity a \
         JOIN pg_stat_ssl s USING (pid) \
         WHERE a.application_name = 'gatebot' AND a.datname = current_database()",
    );
    let counts: Vec<u64> = connections
        .trim()
        .split('|')
        .map(|n| n.parse().unwrap())
        .collect();
    assert!(counts[0] > 0, "no connection of gatebot's: {connections}");
    assert_eq!(counts[0], counts[1], "a plain connection: {connections}");

    // Without the cluster's authority (the system's roots only), the server cannot
    // prove who it is: refused, and nothing is sent to it.
    let dir = tempfile::tempdir().unwrap();
    let untrusted = format!("{}?sslmode=require", db.url());
    let config = gatebot::config::Config::parse(
        &format!("[store]\nurl = \"{untrusted}\"\n"),
        &dir.path().join("bot.toml"),
    )
    .unwrap();
    let refused = gatebot::engine::Engine::open(config)
        .await
        .expect_err("a server that cannot be verified was used");
    let said = format!("{refused:#}");
    assert!(said.contains("certificate"), "{said}");
}
