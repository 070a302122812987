//! The connector every outbound HTTP API client builds on (Slack's Web API, the SMS
//! gateway, the model classifier): TLS with the system's roots, plain `http://` too
//! (self-hosted proxies, the tests' fakes), and `TCP_NODELAY`, so a request whose
//! headers and body go out in two writes is not held back by Nagle's algorithm until
//! the first is acknowledged (a delayed ACK: up to tens of milliseconds a call).

use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;

/// A connector for HTTP/1.1 clients; fails only when the system's roots cannot be read.
pub fn connector() -> std::io::Result<HttpsConnector<HttpConnector>> {
    // Both ring and aws-lc-rs are linked in; rustls needs one chosen.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut http = HttpConnector::new();
    http.set_nodelay(true);
    http.enforce_http(false);
    Ok(hyper_rustls::HttpsConnectorBuilder::new()
        .with_native_roots()?
        .https_or_http()
        .enable_http1()
        .wrap_connector(http))
}
