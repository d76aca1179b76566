//! OTLP/HTTP receiver: `POST /v1/traces` and `POST /v1/logs` (log records
//! read as span events, `ingest::logs`) on axum. Protobuf or JSON by
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
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use super::intake::{Charge, Shared};
use super::listen::{self, ConnLimits};
use super::security::{self, Auth};
use super::status::{http_response, Accepted, Encoding, ExportError};
use crate::ingest;

/// The OTLP/HTTP path for traces.
pub const TRACES_PATH: &str = "/v1/traces";
/// The OTLP/HTTP path for logs.
pub const LOGS_PATH: &str = "/v1/logs";

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
#[allow(clippy::too_many_arguments)]
pub(crate) async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    max_size: usize,
    body_timeout: Duration,
    limits: ConnLimits,
    tls: Option<TlsAcceptor>,
    auth: Arc<Auth>,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let stats = Arc::clone(&shared.stats);
    let state = Arc::new(HttpState {
        shared,
        max_size,
        body_timeout,
    });
    // The token is checked before the body is read.
    let app = Router::new()
        .route(TRACES_PATH, post(export))
        .route(LOGS_PATH, post(export_logs))
        .route_layer(axum::middleware::from_fn_with_state(
            (auth, "OTLP/HTTP"),
            security::require_bearer,
        ))
        .with_state(state);
    listen::serve(listener, app, limits, tls, stats, shutdown).await
}

async fn export(State(st): State<Arc<HttpState>>, headers: HeaderMap, body: Body) -> Response {
    export_signal(&st, headers, body, false).await
}

async fn export_logs(State(st): State<Arc<HttpState>>, headers: HeaderMap, body: Body) -> Response {
    export_signal(&st, headers, body, true).await
}

/// One export request: spans, or log records when `logs`.
async fn export_signal(st: &HttpState, headers: HeaderMap, body: Body, logs: bool) -> Response {
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
    let outcome = receive(st, &headers, encoding, body, logs).await;
    http_response(encoding, outcome)
}

async fn receive(
    st: &HttpState,
    headers: &HeaderMap,
    encoding: Encoding,
    body: Body,
    logs: bool,
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
    let read = read_capped(body, declared, st.max_size, &mut charge);
    let bytes = tokio::time::timeout(st.body_timeout, read)
        .await
        .map_err(|_| ExportError::Timeout(st.body_timeout))??;
    let max = st.max_size;
    let shared = Arc::clone(&st.shared);
    shared.pace().await;
    let blocking =
        bytes.len() > BLOCKING_DECODE_BYTES || (gzip && bytes.len() > BLOCKING_DECODE_BYTES / 8);
    let accept = move || {
        let body = inflate(gzip, &bytes, max, &mut charge)?;
        // The received bytes are no longer needed once inflated.
        drop(bytes);
        if logs {
            shared.accept_logs_body(encoding, body)
        } else {
            shared.accept_body(encoding, body)
        }
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
/// in-flight budget. The budget is charged with the memory the body takes,
/// before it is allocated: a declared Content-Length is reserved (and
/// charged) once; a body of unknown length is kept in fixed-size blocks,
/// joined once complete, so no buffer doubles and leaves its old copy behind.
async fn read_capped(
    mut body: Body,
    declared: Option<u64>,
    max: usize,
    charge: &mut Charge,
) -> Result<Bytes, ExportError> {
    const FIRST_BLOCK: usize = 64 << 10;
    const BLOCK: usize = 1 << 20;
    // `blocks.last()` is being filled; with a declared length it is the one
    // buffer of that size.
    let mut blocks: Vec<BytesMut> = Vec::new();
    let mut len = 0;
    let mut charged = 0;
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        let frame = frame
            .map_err(|e| ExportError::Undecodable(format!("cannot read the request body: {e}")))?;
        let Ok(mut data) = frame.into_data() else {
            continue;
        };
        if len + data.len() > max {
            return Err(ExportError::TooLarge {
                what: "the request body",
                cap: max,
            });
        }
        len += data.len();
        while !data.is_empty() {
            let room = blocks.last().map_or(0, |b| b.capacity() - b.len());
            if room == 0 {
                // Small bodies stay small: a first block of 64 KiB, then
                // 1 MiB ones (two sizes only, so freed blocks are reused
                // by other requests rather than left resident).
                let size = match declared {
                    Some(d) if blocks.is_empty() && d as usize >= len => d as usize,
                    _ if blocks.is_empty() => FIRST_BLOCK.min(max),
                    _ => BLOCK.min(max),
                };
                charged = charge_up_to(charge, charged, charged + size)?;
                blocks.push(BytesMut::with_capacity(size));
                continue;
            }
            let piece = data.split_to(room.min(data.len()));
            if let Some(b) = blocks.last_mut() {
                b.extend_from_slice(&piece);
            }
        }
    }
    if let [only] = blocks.as_slice() {
        if only.len() == only.capacity() {
            return Ok(blocks.pop().unwrap_or_default().freeze());
        }
    }
    // Joined into a buffer of the exact size (what is accepted may be held
    // on, in the forward queue): both are held for a moment.
    charge_up_to(charge, charged, charged + len)?;
    let mut joined = BytesMut::with_capacity(len);
    for b in blocks {
        joined.extend_from_slice(&b);
    }
    Ok(joined.freeze())
}

/// Charges the budget up to `total` bytes for one buffer already charged
/// `charged`; returns the new charged amount.
fn charge_up_to(charge: &mut Charge, charged: usize, total: usize) -> Result<usize, ExportError> {
    if total > charged {
        charge.add(total - charged)?;
        return Ok(total);
    }
    Ok(charged)
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
    let mut charged = 0;
    loop {
        let at = out.len();
        if at + CHUNK > out.capacity() {
            let want = (at + CHUNK).max(out.capacity() * 2).min(max + CHUNK);
            charged = charge_up_to(charge, charged, want)?;
            out.reserve(want - at);
            charged = charge_up_to(charge, charged, out.capacity())?;
        }
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    /// A body arriving in `frame`-byte frames.
    fn framed(data: &[u8], frame: usize) -> Body {
        let frames: Vec<Result<Bytes, std::io::Error>> = data
            .chunks(frame)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        Body::from_stream(futures_util::stream::iter(frames))
    }

    #[test]
    fn bodies_are_charged_with_the_memory_they_take() {
        use std::sync::atomic::Ordering;
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let stats = Arc::new(super::super::telemetry::ServeStats::default());
        let budget = super::super::intake::Inflight::new(
            8 << 20,
            Duration::from_secs(1),
            Arc::clone(&stats),
        );
        let data: Vec<u8> = (0..2_500_000u32).map(|i| i as u8).collect();
        let held = || stats.inflight_bytes.load(Ordering::Relaxed) as usize;
        // A declared length is reserved once: exactly that is charged.
        let mut charge = budget.charge();
        let got = rt
            .block_on(read_capped(
                framed(&data, 100_000),
                Some(data.len() as u64),
                16 << 20,
                &mut charge,
            ))
            .unwrap();
        assert_eq!(got, data);
        assert_eq!(held(), data.len());
        drop(charge);
        // Unknown length: blocks, then the join; never a doubling.
        let mut charge = budget.charge();
        let got = rt
            .block_on(read_capped(
                framed(&data, 100_000),
                None,
                16 << 20,
                &mut charge,
            ))
            .unwrap();
        assert_eq!(got, data);
        assert!(held() >= 2 * data.len(), "{}", held());
        assert!(held() <= 2 * data.len() + (2 << 20), "{}", held());
        drop(charge);
        assert_eq!(held(), 0);
        // Another request holds most of the budget: a declared 1 MiB is
        // refused at its first frame.
        let mut other = budget.charge();
        other.add(15 << 19).unwrap();
        let mut charge = budget.charge();
        let r = rt.block_on(read_capped(
            framed(&data[..1 << 20], 1000),
            Some(1 << 20),
            16 << 20,
            &mut charge,
        ));
        assert!(
            matches!(r, Err(ExportError::Overloaded { .. })),
            "{:?}",
            r.map(|b| b.len())
        );
    }

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
