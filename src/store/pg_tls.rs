//! TLS to PostgreSQL, when `[store] url` asks for it (`sslmode=require`): rustls, as every
//! other client of gatebot's, with the system's roots and the certificate authority
//! `sslrootcert` names (a private one, as managed databases use). The server's certificate
//! is always verified, for the host the URL names: an encrypted connection to a server
//! that cannot prove who it is would carry the password's proof and every request to
//! whoever answers. Without `sslmode=require` the connection is plain, as before.

use std::future::Future;
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect};

/// Makes a verified TLS connection per PostgreSQL connection.
#[derive(Clone)]
pub(super) struct Tls {
    config: Arc<rustls::ClientConfig>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tls")
    }
}

impl Tls {
    /// Trusting the system's roots and, if given, the certificates in the PEM file
    /// `root` (`sslrootcert`). Says what is wrong with the file.
    pub(super) fn new(root: Option<&Path>) -> Result<Tls, String> {
        crate::https::install_crypto_provider();
        let mut roots = rustls::RootCertStore::empty();
        // The system's roots: those that cannot be read are skipped, as the HTTPS
        // clients do.
        for cert in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(cert);
        }
        if let Some(path) = root {
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
                .and_then(Iterator::collect)
                .map_err(|e| {
                    format!(
                        "sslrootcert {}: cannot read certificates from it ({e})",
                        path.display()
                    )
                })?;
            if certs.is_empty() {
                return Err(format!(
                    "sslrootcert {}: holds no certificate (a PEM file: -----BEGIN CERTIFICATE-----)",
                    path.display()
                ));
            }
            for cert in certs {
                roots.add(cert).map_err(|e| {
                    format!(
                        "sslrootcert {}: not a usable certificate ({e})",
                        path.display()
                    )
                })?;
            }
        }
        let config = rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Tls {
            config: Arc::new(config),
        })
    }
}

impl<S> MakeTlsConnect<S> for Tls
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = Stream<S>;
    type TlsConnect = Connect;
    type Error = io::Error;

    fn make_tls_connect(&mut self, host: &str) -> io::Result<Connect> {
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{host}: {e}")))?;
        Ok(Connect {
            config: self.config.clone(),
            name,
        })
    }
}

/// One connection's handshake, for the host it names.
pub(super) struct Connect {
    config: Arc<rustls::ClientConfig>,
    name: ServerName<'static>,
}

impl<S> TlsConnect<S> for Connect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = Stream<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Stream<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        let connector = tokio_rustls::TlsConnector::from(self.config);
        Box::pin(async move {
            let tls = connector.connect(self.name, stream).await?;
            Ok(Stream(Box::new(tls)))
        })
    }
}

/// A TLS connection to the server.
pub(super) struct Stream<S>(Box<tokio_rustls::client::TlsStream<S>>);

impl<S: AsyncRead + AsyncWrite + Unpin> tokio_postgres::tls::TlsStream for Stream<S> {
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Stream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Stream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_shutdown(cx)
    }
}
