//! OTLP/HTTP receiver: `POST /v1/traces` on axum. Protobuf or JSON by
//! `Content-Type`, optional `Content-Encoding: gzip`, any body framing
//! (Content-Length or chunked). The body is capped before and after
//! inflating; the response uses the request's encoding.

use std::pin::Pin;
use std::sync::Arc;

use axum::body::{Body, HttpBody};
use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use bytes::{Bytes, BytesMut};
use prost::Message;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::intake::Shared;
use super::status::{http_response, Accepted, Encoding, ExportError};
use crate::ingest::otlp_json::{self, SpanRejected};
use crate::ingest::{self, GunzipError, Request};

/// The OTLP/HTTP path for traces.
pub const TRACES_PATH: &str = "/v1/traces";

/// Bodies larger than this are inflated and decoded off the async workers.
const BLOCKING_DECODE_BYTES: usize = 512 * 1024;

struct HttpState {
    shared: Arc<Shared>,
    max_size: usize,
}

/// Serves OTLP/HTTP on `listener` until `shutdown`, then waits for open
/// requests to finish.
pub(crate) async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    max_size: usize,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let state = Arc::new(HttpState { shared, max_size });
    let app = Router::new()
        .route(TRACES_PATH, post(export))
        .with_state(state);
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
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
    let bytes = read_capped(body, st.max_size).await?;
    let max = st.max_size;
    let (req, raw, rejected) = if bytes.len() > BLOCKING_DECODE_BYTES
        || (gzip && bytes.len() > BLOCKING_DECODE_BYTES / 8)
    {
        tokio::task::spawn_blocking(move || decode_body(encoding, gzip, &bytes, max))
            .await
            .map_err(|e| ExportError::Undecodable(format!("decoding failed: {e}")))??
    } else {
        decode_body(encoding, gzip, &bytes, max)?
    };
    st.shared.accept_with(req, raw, rejected)
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

/// Reads the whole body, failing as soon as it passes `max` bytes.
async fn read_capped(mut body: Body, max: usize) -> Result<Bytes, ExportError> {
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
            buf.extend_from_slice(&data);
        }
    }
    Ok(buf.freeze())
}

/// Inflates (capped) and decodes one body. Returns the request, for
/// protobuf the (inflated) bytes it was decoded from, and the spans the
/// JSON decoder left out.
fn decode_body(
    encoding: Encoding,
    gzip: bool,
    body: &Bytes,
    max: usize,
) -> Result<(Request, Option<Bytes>, Vec<SpanRejected>), ExportError> {
    let bytes = if gzip {
        if !ingest::is_gzip(body) {
            return Err(ExportError::Undecodable(
                "Content-Encoding is gzip but the body is not gzip data".into(),
            ));
        }
        let bytes: &[u8] = body;
        Bytes::from(
            ingest::gunzip_capped(bytes, max as u64).map_err(|e| match e {
                GunzipError::TooLarge { .. } => ExportError::TooLarge {
                    what: "the inflated request body",
                    cap: max,
                },
                GunzipError::Corrupt(_) => ExportError::Undecodable(e.to_string()),
            })?,
        )
    } else {
        body.clone()
    };
    match encoding {
        Encoding::Protobuf => match Request::decode(bytes.as_ref()) {
            Ok(req) => Ok((req, Some(bytes), Vec::new())),
            Err(e) => Err(ExportError::Undecodable(format!(
                "not an OTLP protobuf ExportTraceServiceRequest ({} bytes): {e}",
                bytes.len()
            ))),
        },
        Encoding::Json => decode_json(&bytes).map(|(req, rejected)| (req, None, rejected)),
    }
}

/// The tolerant OTLP/JSON decoder (docs/formats.md); an array of requests
/// or a Tempo trace becomes one request.
fn decode_json(bytes: &[u8]) -> Result<(Request, Vec<SpanRejected>), ExportError> {
    let doc = otlp_json::decode(bytes)
        .map_err(|e| ExportError::Undecodable(format!("not OTLP/JSON: {e}")))?;
    // `{}` is a valid (empty) export; unknown keys and no spans is not.
    if let Some(why) = doc.empty_reason(false) {
        return Err(ExportError::Undecodable(why));
    }
    Ok(doc.into_request())
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
    fn json_snake_case_is_an_error_but_empty_is_fine() {
        assert!(decode_json(b"{}").is_ok());
        assert!(decode_json(br#"{"resourceSpans": []}"#).is_ok());
        let e = decode_json(br#"{"resource_spans": [{"scope_spans": []}]}"#).unwrap_err();
        assert!(e.to_string().contains("resource_spans"), "{e}");
    }

    #[test]
    fn gzip_bombs_stop_at_the_cap() {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        enc.write_all(&vec![0u8; 1 << 20]).unwrap();
        let gz = enc.finish().unwrap();
        let e = decode_body(Encoding::Protobuf, true, &Bytes::from(gz), 64 * 1024).unwrap_err();
        assert!(matches!(e, ExportError::TooLarge { .. }), "{e}");
        let e = decode_body(
            Encoding::Protobuf,
            true,
            &Bytes::from_static(b"plain"),
            1024,
        )
        .unwrap_err();
        assert!(matches!(e, ExportError::Undecodable(_)), "{e}");
    }
}
