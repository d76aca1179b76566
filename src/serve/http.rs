//! OTLP/HTTP receiver: `POST /v1/traces` on axum. Protobuf or JSON by
//! `Content-Type`, optional `Content-Encoding: gzip`, any body framing
//! (Content-Length or chunked). The body is capped before and after
//! inflating; the response uses the request's encoding.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, HttpBody};
use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use bytes::{Bytes, BytesMut};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::intake::{Charge, Shared};
use super::listen::{self, ConnLimits};
use super::status::{http_response, Accepted, Encoding, ExportError};
use crate::ingest;

/// The OTLP/HTTP path for traces.
pub const TRACES_PATH: &str = "/v1/traces";

/// Bodies larger than this are inflated and decoded off the async workers.
const BLOCKING_DECODE_BYTES: usize = 512 * 1024;

struct HttpState {
    shared: Arc<Shared>,
    max_size: usize,
    /// Time a client has to send the body.
    body_timeout: Duration,
}

/// Serves OTLP/HTTP on `listener` until `shutdown`, then waits for open
/// requests to finish.
pub(crate) async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    max_size: usize,
    body_timeout: Duration,
    limits: ConnLimits,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let stats = Arc::clone(&shared.stats);
    let state = Arc::new(HttpState {
        shared,
        max_size,
        body_timeout,
    });
    let app = Router::new()
        .route(TRACES_PATH, post(export))
        .with_state(state);
    listen::serve(listener, app, limits, stats, shutdown).await
}

async fn export(State(st): State<Arc<HttpState>>, headers: HeaderMap, body: Body) -> Response {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    let Some(encoding) = Encoding::from_content_type(&content_type) else {
        // No request encoding to mirror: answer in JSON, readable by people.
        return http_response(
            Encoding::Json,
            Err(ExportError::UnsupportedMediaType(content_type)),
        );
    };
    let outcome = receive(&st, &headers, encoding, body).await;
    http_response(encoding, outcome)
}

async fn receive(
    st: &HttpState,
    headers: &HeaderMap,
    encoding: Encoding,
    body: Body,
) -> Result<Accepted, ExportError> {
    let gzip = is_gzip_encoded(headers)?;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > st.max_size as u64) {
        return Err(ExportError::TooLarge {
            what: "the request body",
            cap: st.max_size,
        });
    }
    let mut charge = st.shared.inflight.charge();
    let bytes = tokio::time::timeout(st.body_timeout, read_capped(body, st.max_size, &mut charge))
        .await
        .map_err(|_| ExportError::Timeout(st.body_timeout))??;
    let max = st.max_size;
    let shared = Arc::clone(&st.shared);
    let blocking =
        bytes.len() > BLOCKING_DECODE_BYTES || (gzip && bytes.len() > BLOCKING_DECODE_BYTES / 8);
    let accept = move || {
        let body = inflate(gzip, &bytes, max, &mut charge)?;
        // The received bytes are no longer needed once inflated.
        drop(bytes);
        shared.accept_body(encoding, body)
    };
    if blocking {
        tokio::task::spawn_blocking(accept)
            .await
            .map_err(|e| ExportError::Undecodable(format!("decoding failed: {e}")))?
    } else {
        accept()
    }
}

/// The request path after the body is read, without a socket: what
/// `export` does with `headers` and a whole `body`, on a buffer of its own.
/// For fuzzing and tests; returns the HTTP status.
pub(crate) fn exchange(headers: &HeaderMap, body: Bytes, max_size: usize) -> u16 {
    use super::buffer::{BufferLimits, TraceBuffer};
    let shared = Shared::new(
        TraceBuffer::new(BufferLimits {
            decision_wait: Duration::from_secs(60),
            max_spans: 100_000,
            max_traces: 10_000,
            remember_completed: 1_000,
        }),
        Duration::from_secs(1),
        max_size.saturating_mul(2),
        Default::default(),
    );
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    let Some(encoding) = Encoding::from_content_type(&content_type) else {
        let e = ExportError::UnsupportedMediaType(content_type);
        return http_response(Encoding::Json, Err(e)).status().as_u16();
    };
    let outcome = (|| {
        let gzip = is_gzip_encoded(headers)?;
        if body.len() > max_size {
            return Err(ExportError::TooLarge {
                what: "the request body",
                cap: max_size,
            });
        }
        let mut charge = shared.inflight.charge();
        charge.add(body.len())?;
        let body = inflate(gzip, &body, max_size, &mut charge)?;
        shared.accept_body(encoding, body)
    })();
    http_response(encoding, outcome).status().as_u16()
}

/// `Content-Encoding`: gzip, identity or none.
fn is_gzip_encoded(headers: &HeaderMap) -> Result<bool, ExportError> {
    let mut gzip = false;
    for value in headers.get_all(header::CONTENT_ENCODING) {
        let text = String::from_utf8_lossy(value.as_bytes());
        for coding in text.split(',').map(str::trim).filter(|c| !c.is_empty()) {
            if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
                if gzip {
                    return Err(ExportError::UnsupportedEncoding(text.into_owned()));
                }
                gzip = true;
            } else if !coding.eq_ignore_ascii_case("identity") {
                return Err(ExportError::UnsupportedEncoding(coding.to_string()));
            }
        }
    }
    Ok(gzip)
}

/// Reads the whole body, failing as soon as it passes `max` bytes or the
/// in-flight budget (charged as bytes arrive).
async fn read_capped(
    mut body: Body,
    max: usize,
    charge: &mut Charge,
) -> Result<Bytes, ExportError> {
    let mut buf = BytesMut::new();
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        let frame = frame
            .map_err(|e| ExportError::Undecodable(format!("cannot read the request body: {e}")))?;
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.len() > max {
                return Err(ExportError::TooLarge {
                    what: "the request body",
                    cap: max,
                });
            }
            charge.add(data.len())?;
            buf.extend_from_slice(&data);
        }
    }
    Ok(buf.freeze())
}

/// Inflates a gzip body in chunks, each charged to the in-flight budget and
/// capped at `max` in total; other bodies are returned as they are.
fn inflate(
    gzip: bool,
    body: &Bytes,
    max: usize,
    charge: &mut Charge,
) -> Result<Bytes, ExportError> {
    use std::io::Read;
    const CHUNK: usize = 64 * 1024;
    if !gzip {
        return Ok(body.clone());
    }
    if !ingest::is_gzip(body) {
        return Err(ExportError::Undecodable(
            "Content-Encoding is gzip but the body is not gzip data".into(),
        ));
    }
    let mut decoder = flate2::read::MultiGzDecoder::new(body.as_ref());
    let mut out = BytesMut::new();
    loop {
        let at = out.len();
        out.resize(at + CHUNK, 0);
        let n = decoder
            .read(&mut out[at..])
            .map_err(|e| ExportError::Undecodable(format!("bad gzip data: {e}")))?;
        out.truncate(at + n);
        if n == 0 {
            return Ok(out.freeze());
        }
        if out.len() > max {
            return Err(ExportError::TooLarge {
                what: "the inflated request body",
                cap: max,
            });
        }
        charge.add(n)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn content_encodings() {
        let mut h = HeaderMap::new();
        assert_eq!(is_gzip_encoded(&h), Ok(false));
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("GZIP"));
        assert_eq!(is_gzip_encoded(&h), Ok(true));
        h.insert(
            header::CONTENT_ENCODING,
            HeaderValue::from_static("identity"),
        );
        assert_eq!(is_gzip_encoded(&h), Ok(false));
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("br"));
        assert!(is_gzip_encoded(&h).is_err());
    }

    #[test]
    fn gzip_bombs_stop_at_the_cap() {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        enc.write_all(&vec![0u8; 1 << 20]).unwrap();
        let gz = enc.finish().unwrap();
        let budget = super::super::intake::Inflight::new(
            1 << 30,
            Duration::from_secs(1),
            Default::default(),
        );
        let e = inflate(true, &Bytes::from(gz), 64 * 1024, &mut budget.charge()).unwrap_err();
        assert!(matches!(e, ExportError::TooLarge { .. }), "{e}");
        let e = inflate(
            true,
            &Bytes::from_static(b"plain"),
            1024,
            &mut budget.charge(),
        )
        .unwrap_err();
        assert!(matches!(e, ExportError::Undecodable(_)), "{e}");
    }
}
