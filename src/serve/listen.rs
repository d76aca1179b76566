//! Accepting HTTP connections (the OTLP/HTTP receiver and the admin port)
//! with the limits a server open to strangers needs: a cap on open
//! connections (past it a new connection is closed at once, counted and
//! logged, so the process never runs out of file descriptors and the admin
//! port stays reachable), a deadline for each request's head, connections
//! closed once silent for that long (before their first request, between
//! requests, or stalled), graceful shutdown, and TLS (the handshake, too,
//! must finish within the header deadline, so a stalled one cannot hold a
//! connection).

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::telemetry::ServeStats;

/// Most bytes hyper buffers per HTTP/1 connection (request head included).
const READ_BUFFER: usize = 64 * 1024;

/// A connection cap: at most `max` open connections, each holding a permit.
/// Past it a new connection is closed at once, counted (when `counted`) and
/// logged at the start and the end of each episode of refusing. Shared by
/// the HTTP ports and the gRPC receiver.
pub(crate) struct ConnectionCap {
    permits: Arc<Semaphore>,
    max: usize,
    counted: bool,
    /// What the log lines call these connections ("HTTP", "gRPC").
    what: &'static str,
    refusing: AtomicBool,
}

impl ConnectionCap {
    pub(crate) fn new(max: usize, counted: bool, what: &'static str) -> ConnectionCap {
        ConnectionCap {
            permits: Arc::new(Semaphore::new(max.clamp(1, Semaphore::MAX_PERMITS))),
            max,
            counted,
            what,
            refusing: AtomicBool::new(false),
        }
    }

    /// The next connection under the cap, with its permit. Accept errors
    /// (out of file descriptors, a connection reset before it was taken)
    /// back off briefly rather than spin. Cancel-safe.
    pub(crate) async fn accept(
        &self,
        listener: &TcpListener,
        stats: &ServeStats,
    ) -> (TcpStream, SocketAddr, OwnedSemaphorePermit) {
        loop {
            let (stream, peer) = match listener.accept().await {
                Ok(c) => c,
                Err(e) => {
                    warn!(error = %e, "Cannot accept a connection.");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let Ok(permit) = Arc::clone(&self.permits).try_acquire_owned() else {
                if self.counted {
                    ServeStats::add(&stats.connections_refused, 1);
                }
                if !self.refusing.swap(true, Ordering::Relaxed) {
                    warn!(
                        max_connections = self.max,
                        %peer,
                        "Too many open {} connections; closing new ones until some end.",
                        self.what
                    );
                }
                drop(stream);
                continue;
            };
            if self.refusing.swap(false, Ordering::Relaxed) {
                info!("Accepting {} connections again.", self.what);
            }
            let _ = stream.set_nodelay(true);
            return (stream, peer, permit);
        }
    }

    /// Waits until every connection has given its permit back.
    pub(crate) async fn all_closed(&self) {
        let all = self.max.clamp(1, Semaphore::MAX_PERMITS);
        let _ = self.permits.acquire_many(all as u32).await;
    }
}

/// Connection limits of one HTTP port.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnLimits {
    /// Open connections at most; past it new ones are closed at once.
    pub max_connections: usize,
    /// Time a client has to send a request's head, and how long an idle
    /// keep-alive connection is kept.
    pub header_timeout: Duration,
    /// Count this port's connections in the `toolscore_connections_*`
    /// metrics (the OTLP port does; the admin port, scraped through those
    /// metrics, does not count itself).
    pub counted: bool,
}

/// Serves `app` on `listener` (over TLS with `tls`) until `shutdown`, then
/// waits for open requests to finish (the caller bounds that wait).
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnLimits,
    tls: Option<TlsAcceptor>,
    stats: Arc<ServeStats>,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let cap = ConnectionCap::new(limits.max_connections, limits.counted, "HTTP");
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        // hyper's read buffer grows to ~400 KiB per connection by default;
        // with many connections uploading at once that is memory outside
        // the in-flight budget. 64 KiB still holds any sane request head.
        .max_buf_size(READ_BUFFER)
        .keep_alive(true);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(limits.header_timeout)
        .keep_alive_timeout(limits.header_timeout);
    let builder = Arc::new(builder);
    loop {
        let (stream, peer, permit) = tokio::select! {
            c = cap.accept(&listener, &stats) => c,
            () = shutdown.cancelled() => break,
        };
        let open = limits.counted.then(|| Arc::clone(&stats));
        if let Some(s) = &open {
            ServeStats::add(&s.connections_open, 1);
        }
        let conn = Conn {
            builder: Arc::clone(&builder),
            app: app.clone(),
            peer,
            idle: limits.header_timeout,
            stop: shutdown.clone(),
        };
        let (tls, stats) = (tls.clone(), Arc::clone(&stats));
        tokio::spawn(async move {
            let (stream, activity) = Tracked::new(stream);
            match tls {
                None => conn.drive(stream, activity).await,
                Some(acceptor) => {
                    let handshake = tokio::time::timeout(conn.idle, acceptor.accept(stream)).await;
                    match handshake {
                        Ok(Ok(tls_stream)) => conn.drive(tls_stream, activity).await,
                        Ok(Err(e)) => {
                            ServeStats::add(&stats.tls_handshake_failures, 1);
                            debug!(%peer, error = %e, "TLS handshake failed.");
                        }
                        Err(_) => {
                            ServeStats::add(&stats.tls_handshake_failures, 1);
                            debug!(%peer, "TLS handshake not done within the header timeout.");
                        }
                    }
                }
            }
            if let Some(s) = open {
                s.connections_open.fetch_sub(1, Ordering::Relaxed);
            }
            drop(permit);
        });
    }
    drop(listener);
    cap.all_closed().await;
    Ok(())
}

/// One accepted connection's HTTP side.
struct Conn {
    builder: Arc<auto::Builder<TokioExecutor>>,
    app: Router,
    peer: std::net::SocketAddr,
    idle: Duration,
    stop: CancellationToken,
}

impl Conn {
    /// Serves requests on `io` until the client closes, it is silent for
    /// the header timeout, or shutdown.
    async fn drive<I>(self, io: I, activity: Activity)
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let Conn {
            builder,
            app,
            peer,
            idle,
            stop,
        } = self;
        let conn = builder.serve_connection(TokioIo::new(io), TowerToHyperService::new(app));
        tokio::pin!(conn);
        let check = (idle / 4).max(Duration::from_millis(50));
        let mut closing = false;
        loop {
            tokio::select! {
                r = conn.as_mut() => {
                    if let Err(e) = r {
                        debug!(%peer, error = %e, "Connection ended with an error.");
                    }
                    break;
                }
                () = stop.cancelled(), if !closing => {
                    conn.as_mut().graceful_shutdown();
                    closing = true;
                }
                () = tokio::time::sleep(check), if !closing => {
                    // Silent for the header timeout: before its first
                    // request, between requests, or stalled mid-body
                    // (a request in progress still gets its answer).
                    if activity.idle_for() >= idle {
                        conn.as_mut().graceful_shutdown();
                        closing = true;
                    }
                }
            }
        }
    }
}

/// When bytes last moved on a connection.
#[derive(Debug, Clone)]
struct Activity {
    since: Instant,
    /// Milliseconds after `since`.
    last: Arc<AtomicU64>,
}

impl Activity {
    fn touch(&self) {
        self.last
            .store(self.since.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    fn idle_for(&self) -> Duration {
        let last = Duration::from_millis(self.last.load(Ordering::Relaxed));
        self.since.elapsed().saturating_sub(last)
    }
}

/// A stream that notes activity on every read and write.
struct Tracked<S> {
    inner: S,
    activity: Activity,
}

impl<S> Tracked<S> {
    fn new(inner: S) -> (Tracked<S>, Activity) {
        let activity = Activity {
            since: Instant::now(),
            last: Arc::new(AtomicU64::new(0)),
        };
        (
            Tracked {
                inner,
                activity: activity.clone(),
            },
            activity,
        )
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Tracked<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Tracked<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, data);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
