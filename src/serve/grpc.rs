//! OTLP/gRPC receiver: `TraceService/Export` and `LogsService/Export` (log
//! records read as span events, `ingest::logs`) on tonic. tonic inflates gzip
//! and applies the size cap; the message reaches us as bytes (the
//! forwarder's [`RawCodec`]), decoded here and kept, so forwarding passes
//! them on without re-encoding. Decoded requests go to the shared intake.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use prost::Message;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::OwnedSemaphorePermit;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tonic::body::Body;
use tonic::codec::{CompressionEncoding, EnabledCompressionEncodings};
use tonic::codegen::{http, BoxFuture, Service};
use tonic::server::NamedService;
use tonic::transport::server::{Connected, TcpConnectInfo};
use tracing::debug;

use super::forward::RawCodec;
use super::intake::Shared;
use super::listen::ConnectionCap;
use super::security::Auth;
use super::sinks::results_api::pb::results_service_server::ResultsServiceServer;
use super::sinks::results_api::ResultsHub;
use super::status::{Encoding, ExportError};
use super::telemetry::ServeStats;

/// Calls in progress at once on one gRPC connection.
const GRPC_STREAMS_PER_CONNECTION: usize = 32;

const EXPORT_PATH: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";
const LOGS_EXPORT_PATH: &str = "/opentelemetry.proto.collector.logs.v1.LogsService/Export";

/// Serves OTLP/gRPC on `listener` (over TLS with `tls`) until `shutdown`,
/// then waits for open calls to finish.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    results: ResultsServiceServer<ResultsHub>,
    max_message_size: usize,
    request_timeout: Duration,
    handshake_timeout: Duration,
    tls: Option<TlsAcceptor>,
    auth: Arc<Auth>,
    max_connections: usize,
    shutdown: CancellationToken,
) -> Result<(), tonic::transport::Error> {
    let stats = Arc::clone(&shared.stats);
    // The results API shares the OTLP port (`toolscore.results.v1.ResultsService`).
    let service = TraceReceiver {
        shared,
        max_message_size,
        logs: false,
    };
    let logs = LogsReceiver(TraceReceiver {
        logs: true,
        ..service.clone()
    });
    let router = tonic::transport::Server::builder()
        // Bounds the messages one connection can have in memory at once.
        .concurrency_limit_per_connection(GRPC_STREAMS_PER_CONNECTION)
        .max_concurrent_streams(Some(GRPC_STREAMS_PER_CONNECTION as u32))
        .timeout(request_timeout)
        .add_service(Authorized(
            OversizeIsResourceExhausted(service),
            Arc::clone(&auth),
        ))
        .add_service(Authorized(
            OversizeIsResourceExhausted(logs),
            Arc::clone(&auth),
        ))
        .add_service(Authorized(results, auth));
    let incoming = incoming(listener, tls, handshake_timeout, max_connections, stats);
    router
        .serve_with_incoming_shutdown(incoming, shutdown.cancelled_owned())
        .await
}

/// Connections of `listener`, at most `max_connections` open at once (the
/// HTTP ports' [`ConnectionCap`]: a new one past the cap is closed, counted and
/// logged once per episode), each after its TLS handshake when TLS is on. A
/// handshake runs on its own task, bounded by `handshake_timeout`, so a
/// stalled client holds up no one. Ends when the server drops the stream.
fn incoming(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    handshake_timeout: Duration,
    max_connections: usize,
    stats: Arc<ServeStats>,
) -> impl futures_util::Stream<Item = Result<GrpcConn, std::io::Error>> {
    let (tx, rx) = tokio::sync::mpsc::channel::<GrpcConn>(64);
    let cap = ConnectionCap::new(max_connections, true, "gRPC");
    tokio::spawn(async move {
        loop {
            let (stream, peer, permit) = tokio::select! {
                c = cap.accept(&listener, &stats) => c,
                () = tx.closed() => break,
            };
            let Some(acceptor) = tls.clone() else {
                let conn = GrpcConn {
                    io: Io::Plain(stream),
                    _permit: permit,
                };
                if tx.send(conn).await.is_err() {
                    break;
                }
                continue;
            };
            let (tx, stats) = (tx.clone(), Arc::clone(&stats));
            tokio::spawn(async move {
                match tokio::time::timeout(handshake_timeout, acceptor.accept(stream)).await {
                    Ok(Ok(tls)) => {
                        let conn = GrpcConn {
                            io: Io::Tls(Box::new(tls)),
                            _permit: permit,
                        };
                        let _ = tx.send(conn).await;
                    }
                    Ok(Err(e)) => {
                        ServeStats::add(&stats.tls_handshake_failures, 1);
                        debug!(%peer, error = %e, "TLS handshake failed.");
                    }
                    Err(_) => {
                        ServeStats::add(&stats.tls_handshake_failures, 1);
                        debug!(%peer, "TLS handshake not done within the header timeout.");
                    }
                }
            });
        }
    });
    futures_util::stream::unfold(
        rx,
        |mut rx| async move { rx.recv().await.map(|c| (Ok(c), rx)) },
    )
}

/// A connection as tonic takes it, holding its place under the cap.
struct GrpcConn {
    io: Io,
    _permit: OwnedSemaphorePermit,
}

enum Io {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

impl Connected for GrpcConn {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        match &self.io {
            Io::Plain(s) => s.connect_info(),
            Io::Tls(s) => s.get_ref().0.connect_info(),
        }
    }
}

impl AsyncRead for GrpcConn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match &mut self.io {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for GrpcConn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match &mut self.io {
            Io::Plain(s) => Pin::new(s).poll_write(cx, data),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, data),
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match &mut self.io {
            Io::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match &self.io {
            Io::Plain(s) => s.is_write_vectored(),
            Io::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match &mut self.io {
            Io::Plain(s) => Pin::new(s).poll_flush(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match &mut self.io {
            Io::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// Calls without the bearer token (`--auth-token-file`) are answered
/// UNAUTHENTICATED before their message is read.
#[derive(Clone)]
struct Authorized<S>(S, Arc<Auth>);

impl<S: NamedService> NamedService for Authorized<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> Service<http::Request<Body>> for Authorized<S>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let value = req
            .headers()
            .get(http::header::AUTHORIZATION)
            .map(|v| v.as_bytes());
        if let Err(reason) = self.1.check(value, "OTLP/gRPC") {
            let status = ExportError::Unauthenticated(reason).to_grpc();
            return Box::pin(async move { Ok(status.into_http()) });
        }
        let fut = self.0.call(req);
        Box::pin(fut)
    }
}

/// `TraceService/Export`, written out rather than generated so that the
/// raw bytes reach the handler ([`RawCodec`]).
#[derive(Clone)]
struct TraceReceiver {
    shared: Arc<Shared>,
    max_message_size: usize,
    /// Serves `LogsService/Export` instead (as [`LogsReceiver`]).
    logs: bool,
}

impl NamedService for TraceReceiver {
    const NAME: &'static str = "opentelemetry.proto.collector.trace.v1.TraceService";
}

/// `LogsService/Export`: the trace receiver's path with log records.
#[derive(Clone)]
struct LogsReceiver(TraceReceiver);

impl NamedService for LogsReceiver {
    const NAME: &'static str = "opentelemetry.proto.collector.logs.v1.LogsService";
}

impl Service<http::Request<Body>> for LogsReceiver {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        self.0.call(req)
    }
}

/// One export call: spans, or log records when `.1`.
struct ExportCall(Arc<Shared>, bool);

impl tonic::server::UnaryService<Bytes> for ExportCall {
    type Response = Bytes;
    type Future = BoxFuture<tonic::Response<Self::Response>, tonic::Status>;

    fn call(&mut self, request: tonic::Request<Bytes>) -> Self::Future {
        let shared = Arc::clone(&self.0);
        let logs = self.1;
        Box::pin(async move {
            let raw = request.into_inner();
            // tonic has the whole message by now (at most the size cap);
            // it is held, with what it decodes to, until accepted.
            let mut charge = shared.inflight.charge();
            charge.add(raw.len()).map_err(|e| e.to_grpc())?;
            shared.pace().await;
            let accepted = if logs {
                shared.accept_logs_body(Encoding::Protobuf, raw)
            } else {
                shared.accept_body(Encoding::Protobuf, raw)
            };
            accepted
                .map(|a| tonic::Response::new(Bytes::from(a.response().encode_to_vec())))
                .map_err(|e| e.to_grpc())
        })
    }
}

impl Service<http::Request<Body>> for TraceReceiver {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let (path, what) = if self.logs {
            (LOGS_EXPORT_PATH, "only LogsService/Export is served here")
        } else {
            (EXPORT_PATH, "only TraceService/Export is served here")
        };
        if req.uri().path() != path {
            return Box::pin(async move { Ok(tonic::Status::unimplemented(what).into_http()) });
        }
        let logs = self.logs;
        let shared = Arc::clone(&self.shared);
        let max = self.max_message_size;
        // The body is charged to the in-flight budget as its frames arrive,
        // before tonic has the whole message: many clients each sending a
        // large message cannot hold more than the budget.
        let req = req.map(|body| {
            Body::new(Charged {
                inner: body,
                charge: shared.inflight.charge(),
            })
        });
        Box::pin(async move {
            let mut gzip = EnabledCompressionEncodings::default();
            gzip.enable(CompressionEncoding::Gzip);
            let mut grpc = tonic::server::Grpc::new(RawCodec)
                .apply_compression_config(gzip, gzip)
                .apply_max_message_size_config(Some(max), None);
            Ok(grpc.unary(ExportCall(shared, logs), req).await)
        })
    }
}

/// A request body that charges its data frames to the in-flight budget
/// (`--max-inflight`) as they arrive; over the budget it ends in the
/// status a full budget always gets (RESOURCE_EXHAUSTED with RetryInfo),
/// which tonic passes to the client as it is.
struct Charged {
    inner: Body,
    charge: super::intake::Charge,
}

impl http_body::Body for Charged {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, tonic::Status>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    if let Err(e) = this.charge.add(data.len()) {
                        return Poll::Ready(Some(Err(e.to_grpc())));
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// tonic answers a message over `max_decoding_message_size` with
/// OUT_OF_RANGE, which OTLP clients retry; the OTLP spec wants
/// RESOURCE_EXHAUSTED (not retried without RetryInfo). Our handler never
/// returns OUT_OF_RANGE and our responses are tiny, so every OUT_OF_RANGE
/// here is tonic's size check: rewrite its code.
#[derive(Clone)]
struct OversizeIsResourceExhausted<S>(S);

impl<S: NamedService> NamedService for OversizeIsResourceExhausted<S> {
    const NAME: &'static str = S::NAME;
}

const GRPC_STATUS: &str = "grpc-status";
const OUT_OF_RANGE: &str = "11";
const RESOURCE_EXHAUSTED: &str = "8";

impl<S> Service<http::Request<Body>> for OversizeIsResourceExhausted<S>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let fut = self.0.call(req);
        Box::pin(async move {
            let mut resp = fut.await?;
            let headers = resp.headers_mut();
            if headers
                .get(GRPC_STATUS)
                .is_some_and(|v| v.as_bytes() == OUT_OF_RANGE.as_bytes())
            {
                headers.insert(
                    GRPC_STATUS,
                    http::HeaderValue::from_static(RESOURCE_EXHAUSTED),
                );
            }
            Ok(resp)
        })
    }
}
