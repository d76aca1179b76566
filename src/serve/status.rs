//! The one place where export outcomes become gRPC statuses and HTTP
//! responses (OTLP spec: status codes, partial success, `google.rpc.Status`
//! bodies in the request's encoding, `Retry-After` / `RetryInfo` when busy).

use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderValue, Response, StatusCode};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceResponse,
};
use prost::Message;
use serde_json::json;

/// Why an export request was not (wholly) taken.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExportError {
    /// Bad data: not retryable.
    #[error("{0}")]
    Undecodable(String),
    /// Over the size cap, before or after decompression: not retryable.
    #[error("{what} is larger than {cap} bytes (the request size cap)")]
    TooLarge { what: &'static str, cap: usize },
    #[error("unsupported content type `{0}` (use application/x-protobuf or application/json)")]
    UnsupportedMediaType(String),
    #[error("unsupported content encoding `{0}` (use gzip or identity)")]
    UnsupportedEncoding(String),
    /// The trace buffer is full: retryable.
    #[error(
        "trace buffer full ({held_spans} spans in {held_traces} traces held); retry after {}s",
        retry_after.as_secs_f64()
    )]
    Busy {
        held_spans: usize,
        held_traces: usize,
        retry_after: Duration,
    },
    /// Shutting down: retryable (elsewhere or later).
    #[error("shutting down; retry later")]
    ShuttingDown { retry_after: Duration },
    /// Too many request bytes held at once (`--max-inflight`): retryable.
    #[error("too many request bytes in flight (over {cap} bytes); retry after {}s", retry_after.as_secs_f64())]
    Overloaded { cap: usize, retry_after: Duration },
    /// Results cannot be written (`--output` failing): retryable, so that
    /// nothing is acknowledged that could be lost.
    #[error("results cannot be written ({reason}); retry later")]
    OutputFailing {
        reason: String,
        retry_after: Duration,
    },
    /// No or a wrong bearer token (`--auth-token-file`): not retryable.
    #[error("{0}")]
    Unauthenticated(String),
    /// The body did not arrive within `--request-timeout`.
    #[error("the request body did not arrive within {}s", .0.as_secs_f64())]
    Timeout(Duration),
}

impl ExportError {
    pub fn http_status(&self) -> StatusCode {
        match self {
            ExportError::Undecodable(_) => StatusCode::BAD_REQUEST,
            ExportError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ExportError::UnsupportedMediaType(_) | ExportError::UnsupportedEncoding(_) => {
                StatusCode::UNSUPPORTED_MEDIA_TYPE
            }
            ExportError::Busy { .. }
            | ExportError::ShuttingDown { .. }
            | ExportError::Overloaded { .. }
            | ExportError::OutputFailing { .. } => StatusCode::SERVICE_UNAVAILABLE,
            ExportError::Timeout(_) => StatusCode::REQUEST_TIMEOUT,
            ExportError::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
        }
    }

    pub fn grpc_code(&self) -> tonic::Code {
        match self {
            ExportError::Undecodable(_)
            | ExportError::UnsupportedMediaType(_)
            | ExportError::UnsupportedEncoding(_) => tonic::Code::InvalidArgument,
            ExportError::TooLarge { .. } | ExportError::Overloaded { .. } => {
                tonic::Code::ResourceExhausted
            }
            ExportError::Busy { .. }
            | ExportError::ShuttingDown { .. }
            | ExportError::OutputFailing { .. } => tonic::Code::Unavailable,
            ExportError::Timeout(_) => tonic::Code::DeadlineExceeded,
            ExportError::Unauthenticated(_) => tonic::Code::Unauthenticated,
        }
    }

    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ExportError::Busy { retry_after, .. }
            | ExportError::ShuttingDown { retry_after }
            | ExportError::Overloaded { retry_after, .. }
            | ExportError::OutputFailing { retry_after, .. } => Some(*retry_after),
            _ => None,
        }
    }

    /// The gRPC status, with `google.rpc.RetryInfo` details when retryable.
    pub fn to_grpc(&self) -> tonic::Status {
        let code = self.grpc_code();
        let message = self.to_string();
        match self.retry_after() {
            Some(delay) => {
                let details = rpc_status(code as i32, &message, Some(delay)).encode_to_vec();
                tonic::Status::with_details(code, message, details.into())
            }
            None => tonic::Status::new(code, message),
        }
    }
}

/// What was taken from a request: everything, or all but `rejected_spans`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// Spans (or, for a logs request, log records) not taken.
    pub rejected_spans: i64,
    /// Why spans were rejected; empty when none were.
    pub message: String,
    /// A logs request's answer (`rejectedLogRecords` in JSON; the protobuf
    /// response has the same fields and numbers as the trace one).
    pub logs: bool,
}

impl Accepted {
    /// The OTLP response: `partial_success` unset on full success.
    pub fn response(&self) -> ExportTraceServiceResponse {
        if self.rejected_spans == 0 && self.message.is_empty() {
            return ExportTraceServiceResponse::default();
        }
        ExportTraceServiceResponse {
            partial_success: Some(ExportTracePartialSuccess {
                rejected_spans: self.rejected_spans,
                error_message: self.message.clone(),
            }),
        }
    }
}

/// The encoding of an OTLP/HTTP request, used for its response too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Protobuf,
    Json,
}

impl Encoding {
    pub const PROTOBUF: &'static str = "application/x-protobuf";
    pub const JSON: &'static str = "application/json";

    /// From a `Content-Type` value (parameters such as `charset` ignored).
    pub fn from_content_type(value: &str) -> Option<Encoding> {
        let media = value.split(';').next().unwrap_or("").trim();
        if media.eq_ignore_ascii_case(Self::PROTOBUF) {
            Some(Encoding::Protobuf)
        } else if media.eq_ignore_ascii_case(Self::JSON) {
            Some(Encoding::Json)
        } else {
            None
        }
    }

    fn content_type(self) -> &'static str {
        match self {
            Encoding::Protobuf => Self::PROTOBUF,
            Encoding::Json => Self::JSON,
        }
    }
}

/// The HTTP response for an export outcome, in `encoding`.
pub fn http_response(encoding: Encoding, outcome: Result<Accepted, ExportError>) -> Response<Body> {
    let (status, body) = match &outcome {
        Ok(accepted) => (StatusCode::OK, success_body(encoding, accepted)),
        Err(e) => (e.http_status(), error_body(encoding, e)),
    };
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = status;
    let headers = resp.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(encoding.content_type()),
    );
    if let Some(delay) = outcome.as_ref().err().and_then(ExportError::retry_after) {
        let secs = delay.as_secs_f64().ceil().max(1.0) as u64;
        headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    resp
}

fn success_body(encoding: Encoding, accepted: &Accepted) -> Vec<u8> {
    let resp = accepted.response();
    match encoding {
        Encoding::Protobuf => resp.encode_to_vec(),
        Encoding::Json => {
            // Hand-written: the generated serde writes `"partialSuccess": null`
            // on full success, and OTLP/JSON int64 are strings.
            let v = match &resp.partial_success {
                None => json!({}),
                Some(p) => {
                    let key = if accepted.logs {
                        "rejectedLogRecords"
                    } else {
                        "rejectedSpans"
                    };
                    json!({"partialSuccess": {
                        key: p.rejected_spans.to_string(),
                        "errorMessage": p.error_message,
                    }})
                }
            };
            v.to_string().into_bytes()
        }
    }
}

fn error_body(encoding: Encoding, e: &ExportError) -> Vec<u8> {
    let code = e.grpc_code() as i32;
    let message = e.to_string();
    match encoding {
        Encoding::Protobuf => rpc_status(code, &message, e.retry_after()).encode_to_vec(),
        Encoding::Json => {
            let mut v = json!({"code": code, "message": message});
            if let Some(d) = e.retry_after() {
                v["details"] = json!([{
                    "@type": RETRY_INFO_TYPE,
                    "retryDelay": format!("{}s", d.as_secs_f64()),
                }]);
            }
            v.to_string().into_bytes()
        }
    }
}

const RETRY_INFO_TYPE: &str = "type.googleapis.com/google.rpc.RetryInfo";

fn rpc_status(code: i32, message: &str, retry: Option<Duration>) -> RpcStatus {
    let details = retry
        .map(|d| ProtoAny {
            type_url: RETRY_INFO_TYPE.into(),
            value: RetryInfo {
                retry_delay: Some(ProtoDuration {
                    seconds: d.as_secs() as i64,
                    nanos: d.subsec_nanos() as i32,
                }),
            }
            .encode_to_vec(),
        })
        .into_iter()
        .collect();
    RpcStatus {
        code,
        message: message.to_string(),
        details,
    }
}

/// `google.rpc.Status`, the body of OTLP/HTTP errors.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RpcStatus {
    #[prost(int32, tag = "1")]
    pub code: i32,
    #[prost(string, tag = "2")]
    pub message: String,
    #[prost(message, repeated, tag = "3")]
    pub details: Vec<ProtoAny>,
}

/// `google.protobuf.Any`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProtoAny {
    #[prost(string, tag = "1")]
    pub type_url: String,
    #[prost(bytes = "vec", tag = "2")]
    pub value: Vec<u8>,
}

/// `google.rpc.RetryInfo`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RetryInfo {
    #[prost(message, optional, tag = "1")]
    pub retry_delay: Option<ProtoDuration>,
}

/// `google.protobuf.Duration`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProtoDuration {
    #[prost(int64, tag = "1")]
    pub seconds: i64,
    #[prost(int32, tag = "2")]
    pub nanos: i32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types() {
        assert_eq!(
            Encoding::from_content_type("application/x-protobuf"),
            Some(Encoding::Protobuf)
        );
        assert_eq!(
            Encoding::from_content_type("Application/JSON; charset=utf-8"),
            Some(Encoding::Json)
        );
        assert_eq!(Encoding::from_content_type("text/plain"), None);
    }

    #[test]
    fn busy_carries_retry_info_both_ways() {
        let e = ExportError::Busy {
            held_spans: 5,
            held_traces: 1,
            retry_after: Duration::from_millis(1500),
        };
        let st = e.to_grpc();
        assert_eq!(st.code(), tonic::Code::Unavailable);
        let details = RpcStatus::decode(st.details()).unwrap();
        let info = RetryInfo::decode(details.details[0].value.as_slice()).unwrap();
        assert_eq!(info.retry_delay.unwrap().seconds, 1);
        let resp = http_response(Encoding::Protobuf, Err(e));
        assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(resp.headers()[header::RETRY_AFTER], "2");
    }

    #[test]
    fn partial_success_json_uses_string_int64() {
        let a = Accepted {
            rejected_spans: 2,
            message: "bad ids".into(),
            logs: false,
        };
        let body = String::from_utf8(success_body(Encoding::Json, &a)).unwrap();
        assert_eq!(
            body,
            r#"{"partialSuccess":{"errorMessage":"bad ids","rejectedSpans":"2"}}"#
        );
        assert_eq!(success_body(Encoding::Json, &Accepted::default()), b"{}");
        assert!(success_body(Encoding::Protobuf, &Accepted::default()).is_empty());
    }
}
