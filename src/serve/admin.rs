//! The admin port: Prometheus `/metrics`, `/healthz` (the process is up) and
//! `/readyz` (receivers accept data: the buffer and forward queue have room).
//! With `--auth-token-file`, `/metrics` needs the token; the probes do not.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tracing::error;

use super::intake::Shared;
use super::security::Auth;

/// Connections the admin port keeps open at most: scrapers and probes.
const ADMIN_CONNECTIONS: usize = 64;

pub(crate) async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    header_timeout: std::time::Duration,
    tls: Option<TlsAcceptor>,
    auth: Arc<Auth>,
    shutdown: CancellationToken,
) {
    let stats = Arc::clone(&shared.stats);
    // `/metrics` needs the token (it shows what is scored); the probes stay
    // open, as orchestrators call them without credentials.
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route_layer(axum::middleware::from_fn_with_state(
            (auth, "admin"),
            super::security::require_bearer,
        ))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
        .with_state(shared);
    let limits = super::listen::ConnLimits {
        max_connections: ADMIN_CONNECTIONS,
        header_timeout,
        counted: false,
    };
    let r = super::listen::serve(listener, app, limits, tls, stats, shutdown).await;
    if let Err(e) = r {
        error!(error = %e, "Admin endpoint failed.");
    }
}

async fn metrics(State(shared): State<Arc<Shared>>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        shared.stats.render(),
    )
}

async fn ready(State(shared): State<Arc<Shared>>) -> impl IntoResponse {
    let queue_room = shared
        .forward
        .lock()
        .map(|f| f.as_ref().is_none_or(|f| f.has_room()))
        .unwrap_or(true);
    let (closed, full) = {
        let buf = shared.lock();
        let u = buf.usage();
        let l = buf.limits();
        (
            buf.is_closed(),
            u.spans + u.scoring_spans >= l.max_spans || u.traces >= l.max_traces,
        )
    };
    let output_failing = shared
        .stats
        .output_failing
        .load(std::sync::atomic::Ordering::Relaxed)
        != 0;
    if closed {
        (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n")
    } else if output_failing {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "the results file cannot be written\n",
        )
    } else if full || !queue_room {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "buffer or forward queue full\n",
        )
    } else {
        (StatusCode::OK, "ready\n")
    }
}
