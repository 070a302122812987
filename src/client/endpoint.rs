//! Where a client reaches gatebot: the agents' Unix socket, or one or more daemons over
//! TCP (`--url`, `GATEBOT_URL`), plain `http://` or `https://`; and how one connection
//! to one of them is made.
//!
//! TLS is rustls with the ring provider ([`crate::https::install_crypto_provider`]), the
//! system's roots as every outbound client here uses them, or instead the certificates of
//! `--ca-file` / `GATEBOT_CA_FILE` (a private CA). Nothing here sees the agent's token:
//! [`super::Client`] adds it to each request, and no error names it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hyper::Uri;
use hyper_rustls::{HttpsConnector, MaybeHttpsStream};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// The environment variable with the agents' endpoints, comma-separated.
pub const URL_ENV: &str = "GATEBOT_URL";
/// The environment variable naming the CA certificates `https://` endpoints are checked
/// against.
pub const CA_FILE_ENV: &str = "GATEBOT_CA_FILE";

/// How long connecting to a TCP endpoint may take, TLS handshake included: past it the
/// endpoint counts as unreachable and the next is tried. A host that is down often drops
/// the connection attempt without an answer, which the kernel waits out for minutes.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// One daemon a client may talk to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// The agents' (or the owners') Unix socket.
    Unix(PathBuf),
    /// A daemon's TCP listener (`[queue] listen`), or a proxy in front of it.
    Tcp(TcpEndpoint),
}

/// `http://HOST:PORT` or `https://HOST:PORT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpEndpoint {
    pub tls: bool,
    /// As the URL wrote it: a name, an IPv4 address, or an IPv6 address in brackets.
    pub host: String,
    pub port: u16,
}

impl TcpEndpoint {
    fn scheme(&self) -> &'static str {
        if self.tls {
            "https"
        } else {
            "http"
        }
    }

    /// `HOST:PORT`, the `Host` header's value.
    #[must_use]
    pub fn authority(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Unix(path) => write!(f, "{}", path.display()),
            Endpoint::Tcp(t) => write!(f, "{}://{}", t.scheme(), t.authority()),
        }
    }
}

impl Endpoint {
    #[must_use]
    pub fn is_tls(&self) -> bool {
        matches!(self, Endpoint::Tcp(t) if t.tls)
    }
}

/// Reads endpoints from `values`, each one URL or several separated by commas, as
/// `--url` (repeated) or `GATEBOT_URL` give them; `from` names where they came from in
/// the error. `Err` says what is wrong with which entry and how to write it.
pub fn parse_urls(from: &str, values: &[String]) -> Result<Vec<Endpoint>, String> {
    let mut out: Vec<Endpoint> = Vec::new();
    let mut n = 0;
    for value in values {
        for entry in value.split(',') {
            n += 1;
            let entry = entry.trim();
            if entry.is_empty() {
                return Err(format!(
                    "{from}: entry {n} is empty; write the endpoints separated by single \
                     commas, e.g. http://10.0.0.5:8377,https://gatebot.example.com"
                ));
            }
            let endpoint = parse_url(entry).map_err(|why| format!("{from}: {why}"))?;
            if out.contains(&endpoint) {
                return Err(format!("{from}: {endpoint} is listed twice"));
            }
            out.push(endpoint);
        }
    }
    if out.is_empty() {
        return Err(format!(
            "{from} is empty; give one or more endpoints, e.g. http://10.0.0.5:8377"
        ));
    }
    Ok(out)
}

/// One `http://HOST[:PORT]` or `https://HOST[:PORT]` (the port defaults to the scheme's,
/// 80 or 443, as anywhere on the web).
fn parse_url(entry: &str) -> Result<Endpoint, String> {
    if !entry.contains("://") {
        return Err(format!(
            "`{entry}` has no scheme; write http://{entry} (or https://{entry} behind TLS)"
        ));
    }
    let url =
        url::Url::parse(entry).map_err(|e| format!("`{}` is not a URL ({e})", shown(entry)))?;
    let tls = match url.scheme() {
        "http" => false,
        "https" => true,
        other => {
            return Err(format!(
                "`{}` starts with {other}://; gatebot's endpoints are http:// or https://",
                shown(entry)
            ))
        }
    };
    if !url.username().is_empty() || url.password().is_some() {
        // Never echoed: it may hold a secret.
        return Err(format!(
            "an endpoint of {} carries a user name or password; remove it, and give the \
             agent's token with --token or GATEBOT_TOKEN",
            url.host_str().unwrap_or("?")
        ));
    }
    let Some(host) = url.host_str().filter(|h| !h.is_empty()) else {
        return Err(format!("`{entry}` names no host"));
    };
    if !matches!(url.path(), "" | "/") || url.query().is_some() || url.fragment().is_some() {
        return Err(format!(
            "`{entry}` has a path; gatebot's API is at the root of its listener, so write \
             only the scheme, host and port ({}://{host}:{})",
            url.scheme(),
            url.port_or_known_default().unwrap_or(80)
        ));
    }
    let port = url
        .port_or_known_default()
        .ok_or_else(|| format!("`{entry}` has no port"))?;
    Ok(Endpoint::Tcp(TcpEndpoint {
        tls,
        host: host.to_string(),
        port,
    }))
}

/// `entry` with anything between `://` and `@` hidden (a password), for an error.
fn shown(entry: &str) -> String {
    match (entry.find("://"), entry.find('@')) {
        (Some(s), Some(at)) if at > s => format!("{}://…{}", &entry[..s], &entry[at..]),
        _ => entry.to_string(),
    }
}

/// The TLS settings of a client: the roots `https://` endpoints are checked against.
pub(super) fn tls_config(
    endpoints: &[Endpoint],
    ca_file: Option<&Path>,
) -> Result<rustls::ClientConfig, String> {
    crate::https::install_crypto_provider();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("cannot set up TLS: {e}"))?;
    let Some(file) = ca_file else {
        if !endpoints.iter().any(Endpoint::is_tls) {
            // Plain http:// only: no roots needed (none are read).
            return Ok(builder
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth());
        }
        use hyper_rustls::ConfigBuilderExt;
        return Ok(builder
            .with_native_roots()
            .map_err(|e| {
                format!(
                    "this machine's CA certificates cannot be read to check the https:// \
                     endpoints ({}); install them (the ca-certificates package) or name the \
                     CA's file with --ca-file or {CA_FILE_ENV}",
                    crate::files::io_words(&e)
                )
            })?
            .with_no_client_auth());
    };
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let named = || format!("--ca-file / {CA_FILE_ENV} ({})", file.display());
    let certs = CertificateDer::pem_file_iter(file)
        .map_err(|e| format!("{}: cannot be read: {}", named(), pem_words(&e)))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: {}", named(), pem_words(&e)))?;
    if certs.is_empty() {
        return Err(format!(
            "{}: holds no certificate; give the PEM file of the CA that signed the \
             endpoints' certificates",
            named()
        ));
    }
    let mut roots = rustls::RootCertStore::empty();
    for cert in certs {
        roots
            .add(cert)
            .map_err(|e| format!("{}: a certificate in it cannot be used: {e}", named()))?;
    }
    Ok(builder.with_root_certificates(roots).with_no_client_auth())
}

fn pem_words(e: &rustls::pki_types::pem::Error) -> String {
    match e {
        rustls::pki_types::pem::Error::Io(io) => crate::files::io_words(io),
        other => format!("it is not a PEM file ({other:?})"),
    }
}

/// The connector for TCP endpoints: plain or TLS by the scheme, `TCP_NODELAY` set.
pub(super) type Connector = HttpsConnector<HttpConnector>;

pub(super) fn connector(tls: rustls::ClientConfig) -> Connector {
    let mut http = HttpConnector::new();
    http.set_nodelay(true);
    http.enforce_http(false);
    hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http)
}

/// A connection to a TCP endpoint.
pub(super) type TcpConnection = MaybeHttpsStream<TokioIo<TcpStream>>;

/// Why a TCP endpoint could not be connected to.
#[derive(Debug)]
pub(super) enum ConnectFailure {
    /// Nothing answered: refused, no route, a name that does not resolve, too slow.
    Unreachable(String),
    /// Connected, but the TLS handshake failed (a certificate not trusted, say).
    Tls(String),
}

/// Connects to `t` within [`CONNECT_TIMEOUT`] (TCP and TLS).
pub(super) async fn connect(
    connector: &Connector,
    t: &TcpEndpoint,
) -> Result<TcpConnection, ConnectFailure> {
    use tower_service::Service;
    let uri: Uri = format!("{}://{}/", t.scheme(), t.authority())
        .parse()
        .map_err(|e| ConnectFailure::Unreachable(format!("not a valid address ({e})")))?;
    let mut c = connector.clone();
    let connecting = async move {
        std::future::poll_fn(|cx| c.poll_ready(cx)).await?;
        c.call(uri).await
    };
    match tokio::time::timeout(CONNECT_TIMEOUT, connecting).await {
        Err(_) => Err(ConnectFailure::Unreachable(format!(
            "no answer within {}",
            crate::words::span(CONNECT_TIMEOUT)
        ))),
        Ok(Ok(conn)) => Ok(conn),
        Ok(Err(e)) => Err(failure(e.as_ref())),
    }
}

/// Sorts a connector's error into unreachable or TLS, in words.
fn failure(e: &(dyn std::error::Error + 'static)) -> ConnectFailure {
    if let Some(tls) = find::<rustls::Error>(e) {
        return ConnectFailure::Tls(tls_words(tls));
    }
    if let Some(io) = find::<std::io::Error>(e) {
        let words = match io.kind() {
            std::io::ErrorKind::ConnectionRefused => "connection refused".to_string(),
            _ => crate::files::io_words(io),
        };
        // hyper-util says which step failed ("dns error", "tcp connect error").
        return ConnectFailure::Unreachable(if e.to_string().starts_with("dns error") {
            format!("the name cannot be resolved ({words})")
        } else {
            words
        });
    }
    ConnectFailure::Unreachable(e.to_string())
}

/// The first `T` in `e`'s chain of causes, looking inside I/O errors too (whose
/// `source` skips the error they wrap).
fn find<'a, T: std::error::Error + 'static>(
    e: &'a (dyn std::error::Error + 'static),
) -> Option<&'a T> {
    let mut at = Some(e);
    while let Some(err) = at {
        if let Some(t) = err.downcast_ref::<T>() {
            return Some(t);
        }
        if let Some(inner) = err
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
        {
            if let Some(found) = find::<T>(inner) {
                return Some(found);
            }
        }
        at = err.source();
    }
    None
}

/// A TLS failure, with what to change for the usual ones.
fn tls_words(e: &rustls::Error) -> String {
    use rustls::CertificateError as C;
    match e {
        rustls::Error::InvalidCertificate(C::UnknownIssuer) => format!(
            "its certificate is not signed by an authority this machine trusts; name the CA \
             that signed it with --ca-file or {CA_FILE_ENV}"
        ),
        rustls::Error::InvalidCertificate(
            C::NotValidForName | C::NotValidForNameContext { .. },
        ) => "its certificate is for another name; use the name the certificate was made for \
              in the URL"
            .to_string(),
        rustls::Error::InvalidCertificate(C::Expired | C::ExpiredContext { .. }) => {
            "its certificate has expired".to_string()
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(tls: bool, host: &str, port: u16) -> Endpoint {
        Endpoint::Tcp(TcpEndpoint {
            tls,
            host: host.into(),
            port,
        })
    }

    fn parse(s: &str) -> Result<Vec<Endpoint>, String> {
        parse_urls("GATEBOT_URL", &[s.to_string()])
    }

    #[test]
    fn urls_are_read_with_the_schemes_default_port() {
        assert_eq!(
            parse("http://10.0.0.5:8377, https://gatebot.example.com,http://[::1]:9").unwrap(),
            vec![
                tcp(false, "10.0.0.5", 8377),
                tcp(true, "gatebot.example.com", 443),
                tcp(false, "[::1]", 9)
            ]
        );
        assert_eq!(parse("http://a/").unwrap(), vec![tcp(false, "a", 80)]);
        assert_eq!(
            parse("https://b:8377").unwrap()[0].to_string(),
            "https://b:8377"
        );
        // Repeated --url flags and commas within one both count.
        assert_eq!(
            parse_urls(
                "--url",
                &["http://a:1".into(), "http://b:2,http://c:3".into()]
            )
            .unwrap()
            .len(),
            3
        );
    }

    #[test]
    fn malformed_lists_say_what_to_write() {
        let e = parse("http://a:1,,http://b:2").unwrap_err();
        assert!(e.starts_with("GATEBOT_URL: entry 2 is empty"), "{e}");
        let e = parse("http://a:1,").unwrap_err();
        assert!(e.contains("entry 2 is empty"), "{e}");
        let e = parse("").unwrap_err();
        assert!(e.contains("entry 1 is empty"), "{e}");
        let e = parse("ftp://a:1").unwrap_err();
        assert!(
            e.contains("ftp://") && e.contains("http:// or https://"),
            "{e}"
        );
        let e = parse("10.0.0.5:8377").unwrap_err();
        assert!(e.contains("write http://10.0.0.5:8377"), "{e}");
        let e = parse("http://a:8377/gatebot").unwrap_err();
        assert!(
            e.contains("has a path") && e.contains("http://a:8377)"),
            "{e}"
        );
        let e = parse("http://a:99999").unwrap_err();
        assert!(e.contains("not a URL"), "{e}");
        let e = parse("http://a:1,http://a:1").unwrap_err();
        assert!(e.contains("http://a:1 is listed twice"), "{e}");
        let e = parse("https://agent:s3cret@a:1").unwrap_err();
        assert!(!e.contains("s3cret") && e.contains("GATEBOT_TOKEN"), "{e}");
        let e = parse("gopher://agent:s3cret@a:1").unwrap_err();
        assert!(!e.contains("s3cret"), "{e}");
    }

    #[test]
    fn a_ca_file_that_is_not_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let https = [tcp(true, "a", 1)];
        let e = tls_config(&https, Some(&dir.path().join("nope.pem"))).unwrap_err();
        assert!(
            e.contains("nope.pem") && e.contains("cannot be read"),
            "{e}"
        );
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not pem\n").unwrap();
        let e = tls_config(&https, Some(&empty)).unwrap_err();
        assert!(e.contains("holds no certificate"), "{e}");
        // Plain http needs no roots at all.
        assert!(tls_config(&[tcp(false, "a", 1)], None).is_ok());
    }
}
