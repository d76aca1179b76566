//! OTLP/gRPC receiver: `TraceService/Export` on tonic. Decodes (tonic does,
//! with gzip and the size cap) and hands off to the shared intake.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::body::Body;
use tonic::codec::CompressionEncoding;
use tonic::codegen::{http, BoxFuture, Service};
use tonic::server::NamedService;
use tonic::transport::server::TcpIncoming;

use super::intake::Shared;

struct Receiver {
    shared: Arc<Shared>,
}

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        self.shared
            .accept(request.into_inner())
            .map(|a| tonic::Response::new(a.response()))
            .map_err(|e| e.to_grpc())
    }
}

/// Serves OTLP/gRPC on `listener` until `shutdown`, then waits for open
/// calls to finish.
pub(crate) async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    max_message_size: usize,
    shutdown: CancellationToken,
) -> Result<(), tonic::transport::Error> {
    // The results API shares the OTLP port (`traceval.results.v1.ResultsService`).
    let results = shared.stats.results_hub.service();
    let service = TraceServiceServer::new(Receiver { shared })
        .accept_compressed(CompressionEncoding::Gzip)
        .send_compressed(CompressionEncoding::Gzip)
        .max_decoding_message_size(max_message_size);
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
    tonic::transport::Server::builder()
        .add_service(OversizeIsResourceExhausted(service))
        .add_service(results)
        .serve_with_incoming_shutdown(incoming, shutdown.cancelled_owned())
        .await
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
