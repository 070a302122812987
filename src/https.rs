//! The connector every outbound HTTP API client builds on (Slack's Web API, the SMS
//! gateway, WhatsApp's Graph API, the model classifier): TLS with the system's roots,
//! plain `http://` too (self-hosted proxies, the tests' fakes), and `TCP_NODELAY`, so a
//! request whose headers and body go out in two writes is not held back by Nagle's
//! algorithm until the first is acknowledged (a delayed ACK: up to tens of milliseconds
//! a call). Also the one place that picks rustls's crypto provider, for clients that
//! bring their own connector (Discord's twilight).

use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;

/// rustls needs exactly one process-wide CryptoProvider, and both ring and aws-lc-rs are
/// linked in (by different dependencies), so it cannot pick one itself. Installing fails
/// harmlessly if another client already installed one.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A connector for HTTP/1.1 clients; fails only when the system's roots cannot be read.
pub fn connector() -> std::io::Result<HttpsConnector<HttpConnector>> {
    install_crypto_provider();
    let mut http = HttpConnector::new();
    http.set_nodelay(true);
    http.enforce_http(false);
    Ok(hyper_rustls::HttpsConnectorBuilder::new()
        .with_native_roots()?
        .https_or_http()
        .enable_http1()
        .wrap_connector(http))
}
