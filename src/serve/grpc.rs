//! OTLP/gRPC receiver: `TraceService/Export` on tonic. tonic inflates gzip
//! and applies the size cap; the message reaches us as bytes (the
//! forwarder's [`RawCodec`]), decoded here and kept, so forwarding passes
//! them on without re-encoding. Decoded requests go to the shared intake.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use prost::Message;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::body::Body;
use tonic::codec::{CompressionEncoding, EnabledCompressionEncodings};
use tonic::codegen::{http, BoxFuture, Service};
use tonic::server::NamedService;
use tonic::transport::server::TcpIncoming;

use super::forward::RawCodec;
use super::intake::Shared;
use super::sinks::results_api::pb::results_service_server::ResultsServiceServer;
use super::sinks::results_api::ResultsHub;
use super::status::Encoding;

/// Calls in progress at once on one gRPC connection.
const GRPC_STREAMS_PER_CONNECTION: usize = 32;

const EXPORT_PATH: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

/// Serves OTLP/gRPC on `listener` until `shutdown`, then waits for open
/// calls to finish.
pub(crate) async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    results: ResultsServiceServer<ResultsHub>,
    max_message_size: usize,
    request_timeout: std::time::Duration,
    shutdown: CancellationToken,
) -> Result<(), tonic::transport::Error> {
    // The results API shares the OTLP port (`traceval.results.v1.ResultsService`).
    let service = TraceReceiver {
        shared,
        max_message_size,
    };
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
    tonic::transport::Server::builder()
        // Bounds the messages one connection can have in memory at once.
        .concurrency_limit_per_connection(GRPC_STREAMS_PER_CONNECTION)
        .max_concurrent_streams(Some(GRPC_STREAMS_PER_CONNECTION as u32))
        .timeout(request_timeout)
        .add_service(OversizeIsResourceExhausted(service))
        .add_service(results)
        .serve_with_incoming_shutdown(incoming, shutdown.cancelled_owned())
        .await
}

/// `TraceService/Export`, written out rather than generated so that the
/// raw bytes reach the handler ([`RawCodec`]).
#[derive(Clone)]
struct TraceReceiver {
    shared: Arc<Shared>,
    max_message_size: usize,
}

impl NamedService for TraceReceiver {
    const NAME: &'static str = "opentelemetry.proto.collector.trace.v1.TraceService";
}

struct ExportCall(Arc<Shared>);

impl tonic::server::UnaryService<Bytes> for ExportCall {
    type Response = Bytes;
    type Future = BoxFuture<tonic::Response<Self::Response>, tonic::Status>;

    fn call(&mut self, request: tonic::Request<Bytes>) -> Self::Future {
        let shared = Arc::clone(&self.0);
        Box::pin(async move {
            let raw = request.into_inner();
            // tonic has the whole message by now (at most the size cap);
            // it is held, with what it decodes to, until accepted.
            let mut charge = shared.inflight.charge();
            charge.add(raw.len()).map_err(|e| e.to_grpc())?;
            shared
                .accept_body(Encoding::Protobuf, raw)
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
        if req.uri().path() != EXPORT_PATH {
            return Box::pin(async move {
                Ok(
                    tonic::Status::unimplemented("only TraceService/Export is served here")
                        .into_http(),
                )
            });
        }
        let shared = Arc::clone(&self.shared);
        let max = self.max_message_size;
        Box::pin(async move {
            let mut gzip = EnabledCompressionEncodings::default();
            gzip.enable(CompressionEncoding::Gzip);
            let mut grpc = tonic::server::Grpc::new(RawCodec)
                .apply_compression_config(gzip, gzip)
                .apply_max_message_size_config(Some(max), None);
            Ok(grpc.unary(ExportCall(shared), req).await)
        })
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
