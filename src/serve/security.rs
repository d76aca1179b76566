//! TLS and bearer-token auth for the OTLP receivers and the admin port, as
//! the OpenTelemetry Collector's `tls` and `bearertokenauth` settings do
//! (docs/otlp.md, "TLS and auth").
//!
//! One certificate serves every port. `--tls-client-ca-file` (mutual TLS)
//! applies to the OTLP receivers only, so that probes without a client
//! certificate still reach `/healthz` and `/readyz` on the admin port.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig as TlsConfig};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio_rustls::TlsAcceptor;
use tracing::warn;

use super::config::ServeConfig;
use super::status::{http_response, Encoding, ExportError};
use super::telemetry::ServeStats;
use super::ServeError;

/// The TLS acceptors: the OTLP receivers' (with client certificates
/// required when a client CA is set) and the admin port's.
#[derive(Clone)]
pub(crate) struct Tls {
    pub otlp: TlsAcceptor,
    pub admin: TlsAcceptor,
}

/// Loads `--tls-cert-file`, `--tls-key-file` and `--tls-client-ca-file`;
/// `None` when TLS is off.
pub(crate) fn load_tls(c: &ServeConfig) -> Result<Option<Tls>, ServeError> {
    let (cert_path, key_path) = match (&c.tls_cert_file, &c.tls_key_file) {
        (Some(cert), Some(key)) => (cert, key),
        (None, None) if c.tls_client_ca_file.is_some() => {
            return Err(ServeError::Tls(
                "--tls-client-ca-file needs --tls-cert-file and --tls-key-file".into(),
            ))
        }
        (None, None) => return Ok(None),
        (Some(_), None) => {
            return Err(ServeError::Tls(
                "--tls-cert-file needs --tls-key-file".into(),
            ))
        }
        (None, Some(_)) => {
            return Err(ServeError::Tls(
                "--tls-key-file needs --tls-cert-file".into(),
            ))
        }
    };
    let certs = read_certs(cert_path)?;
    let key = read_key(key_path)?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = || {
        TlsConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| ServeError::Tls(e.to_string()))
    };
    let mismatch = |e: rustls::Error| {
        ServeError::Tls(format!(
            "{} and {} are not a certificate and its key: {e}",
            cert_path.display(),
            key_path.display()
        ))
    };
    let admin = builder()?
        .with_no_client_auth()
        .with_single_cert(certs.clone(), key.clone_key())
        .map_err(mismatch)?;
    let otlp = match &c.tls_client_ca_file {
        None => admin.clone(),
        Some(ca_path) => {
            let mut roots = RootCertStore::empty();
            for cert in read_certs(ca_path)? {
                roots.add(cert).map_err(|e| {
                    ServeError::Tls(format!("{}: bad CA certificate: {e}", ca_path.display()))
                })?;
            }
            let verifier =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
                    .build()
                    .map_err(|e| ServeError::Tls(format!("{}: {e}", ca_path.display())))?;
            builder()?
                .with_client_cert_verifier(verifier)
                .with_single_cert(certs, key)
                .map_err(mismatch)?
        }
    };
    let acceptor = |mut config: TlsConfig| {
        // gRPC clients need h2 negotiated; HTTP clients may use either.
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        TlsAcceptor::from(Arc::new(config))
    };
    Ok(Some(Tls {
        otlp: acceptor(otlp),
        admin: acceptor(admin),
    }))
}

fn read_file(path: &Path) -> Result<Vec<u8>, ServeError> {
    std::fs::read(path).map_err(|e| ServeError::Tls(format!("cannot read {}: {e}", path.display())))
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, ServeError> {
    let pem = read_file(path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ServeError::Tls(format!("{}: bad PEM: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(ServeError::Tls(format!(
            "{}: no certificate (expected PEM `BEGIN CERTIFICATE` blocks)",
            path.display()
        )));
    }
    Ok(certs)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, ServeError> {
    let pem = read_file(path)?;
    PrivateKeyDer::from_pem_slice(&pem).map_err(|e| {
        ServeError::Tls(format!(
            "{}: no private key (expected a PEM `PRIVATE KEY` block): {e}",
            path.display()
        ))
    })
}

/// How often a stream of refused requests is logged, at most.
const LOG_EVERY_MS: u64 = 60_000;

/// `--auth-token-file`: the bearer token every OTLP request, results API
/// call and `/metrics` scrape must carry.
pub(crate) struct Auth {
    /// SHA-256 of the token: comparing digests in constant time leaks
    /// neither the token's bytes nor its length.
    digest: Option<[u8; 32]>,
    stats: Arc<ServeStats>,
    since: Instant,
    /// Milliseconds after `since` of the last refusal logged, plus one (0:
    /// none yet).
    logged: AtomicU64,
}

impl Auth {
    /// Reads the token file (its content without a leading UTF-8 byte order
    /// mark, which some editors write, and trimmed); no file: auth is off.
    pub fn load(path: Option<&Path>, stats: Arc<ServeStats>) -> Result<Auth, ServeError> {
        let digest = match path {
            None => None,
            Some(path) => {
                let bad = |reason: String| ServeError::AuthToken {
                    path: path.display().to_string(),
                    reason,
                };
                let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
                let token = text.strip_prefix('\u{feff}').unwrap_or(&text).trim();
                if token.is_empty() {
                    return Err(bad("the file is empty".into()));
                }
                if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
                    return Err(bad(
                        "the token holds whitespace or control characters".into()
                    ));
                }
                Some(Sha256::digest(token.as_bytes()).into())
            }
        };
        Ok(Auth {
            digest,
            stats,
            since: Instant::now(),
            logged: AtomicU64::new(0),
        })
    }

    /// No token: everything is open.
    pub fn open(stats: Arc<ServeStats>) -> Auth {
        Auth {
            digest: None,
            stats,
            since: Instant::now(),
            logged: AtomicU64::new(0),
        }
    }

    pub fn is_on(&self) -> bool {
        self.digest.is_some()
    }

    /// Checks the `Authorization` header's value; on a refusal counts it,
    /// logs it (at most once a minute) and returns the reason to answer.
    pub fn check(&self, authorization: Option<&[u8]>, port: &'static str) -> Result<(), String> {
        let Some(want) = &self.digest else {
            return Ok(());
        };
        let reason = match authorization.and_then(bearer_token) {
            None => "missing bearer token: send `Authorization: Bearer <token>`",
            Some(token) => {
                let got: [u8; 32] = Sha256::digest(token).into();
                if bool::from(got.ct_eq(want)) {
                    return Ok(());
                }
                "wrong bearer token"
            }
        };
        ServeStats::add(&self.stats.requests_unauthenticated, 1);
        let now = self.since.elapsed().as_millis() as u64 + 1;
        let last = self.logged.load(Ordering::Relaxed);
        if (last == 0 || now.saturating_sub(last) >= LOG_EVERY_MS)
            && self
                .logged
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            warn!(
                port,
                reason,
                refused_so_far = self.stats.requests_unauthenticated.load(Ordering::Relaxed),
                "Refusing requests without the right bearer token (401 / UNAUTHENTICATED); logged at most once a minute."
            );
        }
        Err(reason.to_string())
    }
}

/// Axum middleware: requests without the token get 401 with a
/// `google.rpc.Status` body (in the request's OTLP encoding, else JSON), as
/// the OTLP/HTTP spec answers errors.
pub(crate) async fn require_bearer(
    State((auth, port)): State<(Arc<Auth>, &'static str)>,
    req: Request,
    next: Next,
) -> Response {
    let value = req
        .headers()
        .get(header::AUTHORIZATION)
        .map(|v| v.as_bytes());
    match auth.check(value, port) {
        Ok(()) => next.run(req).await,
        Err(reason) => {
            let encoding = req
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .and_then(Encoding::from_content_type)
                .unwrap_or(Encoding::Json);
            let mut resp = http_response(encoding, Err(ExportError::Unauthenticated(reason)));
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            resp
        }
    }
}

/// The token of `Bearer <token>` (the scheme in any case, RFC 6750).
fn bearer_token(value: &[u8]) -> Option<&[u8]> {
    const SCHEME: &[u8] = b"bearer ";
    if value.len() <= SCHEME.len() || !value[..SCHEME.len()].eq_ignore_ascii_case(SCHEME) {
        return None;
    }
    let token = value[SCHEME.len()..].trim_ascii();
    (!token.is_empty()).then_some(token)
}

/// Warns when a port that gives data away listens beyond this host with no
/// token: the results API (on the gRPC port) streams tool arguments, which
/// may be private, and `/metrics` shows what is being scored.
pub(crate) fn warn_if_exposed(auth: &Auth, grpc: Option<SocketAddr>, admin: Option<SocketAddr>) {
    if auth.is_on() {
        return;
    }
    if let Some(a) = admin.filter(|a| !a.ip().is_loopback()) {
        warn!(
            admin = %a,
            "SECURITY: the admin endpoint listens on a non-loopback address without --auth-token-file: \
             anyone who reaches it reads /metrics, and the results API on the gRPC port streams tool \
             arguments, which may be private. Set --auth-token-file (and TLS), or bind 127.0.0.1."
        );
    }
    if let Some(a) = grpc.filter(|a| !a.ip().is_loopback()) {
        warn!(
            grpc = %a,
            "SECURITY: the OTLP/gRPC endpoint listens on a non-loopback address without --auth-token-file: \
             anyone who reaches it can read the results API, which streams tool arguments (possibly \
             private), and send data. Set --auth-token-file (and TLS), or bind 127.0.0.1."
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_are_parsed_and_compared() {
        assert_eq!(bearer_token(b"Bearer abc"), Some(&b"abc"[..]));
        assert_eq!(bearer_token(b"bearer  abc "), Some(&b"abc"[..]));
        assert_eq!(bearer_token(b"Basic abc"), None);
        assert_eq!(bearer_token(b"Bearer "), None);
        assert_eq!(bearer_token(b"Bearer"), None);
        let dir = std::env::temp_dir().join(format!("toolscore-auth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("token");
        std::fs::write(&file, "s3cret\n").unwrap();
        let stats = Arc::new(ServeStats::default());
        let auth = Auth::load(Some(&file), Arc::clone(&stats)).unwrap();
        assert!(auth.check(Some(b"Bearer s3cret"), "test").is_ok());
        assert!(auth.check(Some(b"Bearer s3cre"), "test").is_err());
        assert!(auth.check(Some(b"Bearer s3cret2"), "test").is_err());
        assert!(auth.check(None, "test").is_err());
        assert_eq!(stats.requests_unauthenticated.load(Ordering::Relaxed), 3);
        std::fs::write(&file, "\u{feff}s3cret\r\n").unwrap();
        let auth = Auth::load(Some(&file), Arc::clone(&stats)).unwrap();
        assert!(auth.check(Some(b"Bearer s3cret"), "test").is_ok());
        std::fs::write(&file, " \n").unwrap();
        let e = Auth::load(Some(&file), Arc::clone(&stats)).err().unwrap();
        assert!(e.to_string().contains("empty"), "{e}");
        assert!(Auth::open(stats).check(None, "test").is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
