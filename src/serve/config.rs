//! Settings of `traceval serve`: [`ServeConfig`] (the `[serve]` section of a
//! config file, with defaults) and [`ServeFlags`] (the command-line flags and
//! their `TRACEVAL_*` environment overrides, applied on top).

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

/// Everything `serve` needs besides the scoring settings.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServeConfig {
    /// OTLP/gRPC listen address; `off` disables the gRPC receiver.
    pub grpc_endpoint: String,
    /// OTLP/HTTP listen address; `off` disables the HTTP receiver.
    pub http_endpoint: String,
    /// A trace is complete when no span of it arrived for this long.
    #[serde(deserialize_with = "de_duration")]
    pub decision_wait: Duration,
    /// A session (fixture cases with `session_id`) is scored when no trace
    /// of it completed for this long; a later trace re-scores it.
    #[serde(deserialize_with = "de_duration")]
    pub session_wait: Duration,
    /// Largest request: HTTP body, inflated HTTP body, gRPC message
    /// (compressed and decompressed), in bytes.
    #[serde(deserialize_with = "de_size")]
    pub max_request_size: usize,
    /// Spans held (waiting for their trace to complete, or being scored)
    /// before new requests are refused with 503 / UNAVAILABLE.
    pub max_buffered_spans: usize,
    /// Traces held before new requests are refused.
    pub max_buffered_traces: usize,
    /// How many completed trace ids (with their span ids) are remembered, so
    /// that a late span is reported as a re-score and a re-sent span is
    /// recognised as a duplicate.
    pub remember_completed: usize,
    /// `Retry-After` / gRPC `RetryInfo` delay when the buffer is full.
    #[serde(deserialize_with = "de_duration")]
    pub retry_after: Duration,
    /// How often buffer use is logged while there is activity.
    #[serde(deserialize_with = "de_duration")]
    pub status_interval: Duration,
    /// Threads that extract and score completed traces; 0 = one per core.
    pub scoring_threads: usize,
    /// JSONL results file, appended to and flushed after every batch.
    pub output: Option<PathBuf>,
    /// Fixture file of expected tools, joined with traces as in `replay`.
    pub expected: Option<PathBuf>,
    /// Expectation for traces that match no case: a JSON array of expected
    /// tools, or one case object (its `trace_id`/`match` are ignored).
    pub default_expected: Option<PathBuf>,
    /// No per-trace lines and no summary on stdout.
    pub quiet: bool,
    /// Forward every accepted span downstream: `http://host:4317` or
    /// `grpc://host:port` (OTLP/gRPC), `http://host:4318` (OTLP/HTTP).
    pub forward: Option<String>,
    /// Gzip forwarded requests.
    pub forward_gzip: bool,
    /// Headers (gRPC metadata) sent with every forwarded request, e.g. auth.
    pub forward_headers: std::collections::BTreeMap<String, String>,
    /// Requests queued for the downstream before upstream gets 503 / UNAVAILABLE.
    pub forward_queue: usize,
    /// Bytes the forward queue holds (waiting or being sent) before upstream
    /// gets 503 / UNAVAILABLE.
    #[serde(deserialize_with = "de_size")]
    pub forward_queue_bytes: usize,
    /// Queued requests are joined into downstream requests of up to this many
    /// bytes (spans unchanged and in order); 0 sends each request alone.
    #[serde(deserialize_with = "de_size")]
    pub forward_batch_bytes: usize,
    /// Downstream requests in flight at once (1 = strictly one after another).
    pub forward_concurrency: usize,
    /// Admin HTTP port: `/metrics` (Prometheus), `/healthz`, `/readyz`; `off` disables it.
    pub admin_endpoint: String,
    /// Where `gen_ai.evaluation.result` log records go (OTLP logs; same URL
    /// forms as `forward`). Default: the `forward` downstream, if any.
    pub results_otlp: Option<String>,
    /// Also export each evaluation as a `traceval.evaluation` span in the
    /// evaluated trace (to the results destination).
    pub results_spans: bool,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            grpc_endpoint: "127.0.0.1:4317".into(),
            http_endpoint: "127.0.0.1:4318".into(),
            decision_wait: Duration::from_secs(5),
            session_wait: Duration::from_secs(30),
            max_request_size: 16 * 1024 * 1024,
            max_buffered_spans: 500_000,
            max_buffered_traces: 50_000,
            remember_completed: 10_000,
            retry_after: Duration::from_secs(1),
            status_interval: Duration::from_secs(10),
            scoring_threads: 0,
            output: None,
            expected: None,
            default_expected: None,
            quiet: false,
            forward: None,
            forward_gzip: false,
            forward_headers: Default::default(),
            forward_queue: 1024,
            forward_queue_bytes: crate::forward::DEFAULT_MAX_QUEUE_BYTES,
            forward_batch_bytes: crate::forward::DEFAULT_MAX_BATCH_BYTES,
            forward_concurrency: crate::forward::DEFAULT_CONCURRENCY,
            admin_endpoint: "127.0.0.1:9464".into(),
            results_otlp: None,
            results_spans: false,
        }
    }
}

/// The value that turns a receiver off.
pub const OFF: &str = "off";

/// Command-line flags of `traceval serve`; unset flags keep the config value.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ServeFlags {
    /// OTLP/gRPC listen address, `off` to disable [default: 127.0.0.1:4317].
    #[arg(long, env = "TRACEVAL_GRPC_ENDPOINT", value_name = "ADDR")]
    pub grpc_endpoint: Option<String>,
    /// OTLP/HTTP listen address, `off` to disable [default: 127.0.0.1:4318].
    #[arg(long, env = "TRACEVAL_HTTP_ENDPOINT", value_name = "ADDR")]
    pub http_endpoint: Option<String>,
    /// Score a trace when no span of it arrived for this long (`5s`, `200ms`) [default: 5s].
    #[arg(long, env = "TRACEVAL_DECISION_WAIT", value_name = "DURATION", value_parser = parse_duration)]
    pub decision_wait: Option<Duration>,
    /// Score a session case when no trace of its session completed for this long [default: 30s].
    #[arg(long, env = "TRACEVAL_SESSION_WAIT", value_name = "DURATION", value_parser = parse_duration)]
    pub session_wait: Option<Duration>,
    /// Largest request, before and after gzip (`16MiB`, `512KiB`, bytes) [default: 16MiB].
    #[arg(long, env = "TRACEVAL_MAX_REQUEST_SIZE", value_name = "SIZE", value_parser = parse_size)]
    pub max_request_size: Option<usize>,
    /// Spans held before new data is refused with 503 / UNAVAILABLE [default: 500000].
    #[arg(long, env = "TRACEVAL_MAX_BUFFERED_SPANS", value_name = "N")]
    pub max_buffered_spans: Option<usize>,
    /// Traces held before new data is refused [default: 50000].
    #[arg(long, env = "TRACEVAL_MAX_BUFFERED_TRACES", value_name = "N")]
    pub max_buffered_traces: Option<usize>,
    /// Completed trace ids remembered to detect late and re-sent spans [default: 10000].
    #[arg(long, env = "TRACEVAL_REMEMBER_COMPLETED", value_name = "N")]
    pub remember_completed: Option<usize>,
    /// Retry delay announced when the buffer is full [default: 1s].
    #[arg(long, env = "TRACEVAL_RETRY_AFTER", value_name = "DURATION", value_parser = parse_duration)]
    pub retry_after: Option<Duration>,
    /// How often buffer use is logged [default: 10s].
    #[arg(long, env = "TRACEVAL_STATUS_INTERVAL", value_name = "DURATION", value_parser = parse_duration)]
    pub status_interval: Option<Duration>,
    /// Threads that extract and score completed traces, 0 for one per core [default: 0].
    #[arg(long, env = "TRACEVAL_SCORING_THREADS", value_name = "N")]
    pub scoring_threads: Option<usize>,
    /// Append JSONL results to this file (flushed after every batch).
    #[arg(long, short, env = "TRACEVAL_OUTPUT", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Fixture file of expected tools (JSONL or a JSON array), joined as in `replay`.
    #[arg(long, short = 'e', env = "TRACEVAL_EXPECTED", value_name = "FILE")]
    pub expected: Option<PathBuf>,
    /// Expectation for traces that match no case: a JSON array of expected
    /// tools, or one case object.
    #[arg(long, env = "TRACEVAL_DEFAULT_EXPECTED", value_name = "FILE")]
    pub default_expected: Option<PathBuf>,
    /// Nothing on stdout (results go to --output and the log only).
    #[arg(long, short, env = "TRACEVAL_QUIET")]
    pub quiet: bool,
    /// Forward every accepted span downstream (OTLP/gRPC: `http://host:4317` or
    /// `grpc://host:port`; OTLP/HTTP: `http://host:4318`).
    #[arg(long, env = "TRACEVAL_FORWARD", value_name = "URL")]
    pub forward: Option<String>,
    /// Gzip forwarded requests.
    #[arg(long, env = "TRACEVAL_FORWARD_GZIP")]
    pub forward_gzip: bool,
    /// Header sent downstream with forwarded data and results, `KEY=VALUE` (repeatable).
    #[arg(long = "forward-header", value_name = "KEY=VALUE", value_parser = parse_header)]
    pub forward_headers: Vec<(String, String)>,
    /// Forward queue length in requests [default: 1024].
    #[arg(long, env = "TRACEVAL_FORWARD_QUEUE", value_name = "N")]
    pub forward_queue: Option<usize>,
    /// Forward queue size in bytes, waiting or being sent (`256MiB`, bytes) [default: 256MiB].
    #[arg(long, env = "TRACEVAL_FORWARD_QUEUE_BYTES", value_name = "SIZE", value_parser = parse_size)]
    pub forward_queue_bytes: Option<usize>,
    /// Join queued requests into downstream requests of up to SIZE (`2MiB`, bytes); 0 = one by one [default: 2MiB].
    #[arg(long, env = "TRACEVAL_FORWARD_BATCH_BYTES", value_name = "SIZE", value_parser = parse_size)]
    pub forward_batch_bytes: Option<usize>,
    /// Downstream requests in flight at once; 1 keeps arrival order even across retries [default: 4].
    #[arg(long, env = "TRACEVAL_FORWARD_CONCURRENCY", value_name = "N")]
    pub forward_concurrency: Option<usize>,
    /// Admin HTTP address for /metrics, /healthz, /readyz; `off` to disable [default: 127.0.0.1:9464].
    #[arg(long, env = "TRACEVAL_ADMIN_ENDPOINT", value_name = "ADDR")]
    pub admin_endpoint: Option<String>,
    /// Send evaluation results as OTLP logs here, `off` for nowhere [default: the --forward downstream].
    #[arg(long, env = "TRACEVAL_RESULTS_OTLP", value_name = "URL")]
    pub results_otlp: Option<String>,
    /// Also export each evaluation as a `traceval.evaluation` span (child of the trace's root span).
    #[arg(long, env = "TRACEVAL_RESULTS_SPANS")]
    pub results_spans: bool,
}

impl ServeFlags {
    /// Overrides `config` with every flag that was given.
    pub fn apply(self, config: &mut ServeConfig) {
        macro_rules! set {
            ($($field:ident),*) => {$(
                if let Some(v) = self.$field {
                    config.$field = v;
                }
            )*};
        }
        set!(
            grpc_endpoint,
            http_endpoint,
            decision_wait,
            session_wait,
            max_request_size,
            max_buffered_spans,
            max_buffered_traces,
            remember_completed,
            retry_after,
            status_interval,
            scoring_threads,
            forward_queue,
            forward_queue_bytes,
            forward_batch_bytes,
            forward_concurrency,
            admin_endpoint
        );
        if self.forward.is_some() {
            config.forward = self.forward;
        }
        config.forward_gzip |= self.forward_gzip;
        config.results_spans |= self.results_spans;
        config.forward_headers.extend(self.forward_headers);
        if self.results_otlp.is_some() {
            config.results_otlp = self.results_otlp;
        }
        if self.output.is_some() {
            config.output = self.output;
        }
        if self.expected.is_some() {
            config.expected = self.expected;
        }
        if self.default_expected.is_some() {
            config.default_expected = self.default_expected;
        }
        config.quiet |= self.quiet;
    }

    /// The defaults with the flags applied.
    pub fn into_config(self) -> ServeConfig {
        let mut c = ServeConfig::default();
        self.apply(&mut c);
        c
    }
}

/// Parses `250ms`, `5s`, `1.5s`, `2m`, `1h`; a bare number is seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (e.g. 5s, 200ms, 1m)"))?;
    let secs = match unit.trim() {
        "ms" => n / 1000.0,
        "" | "s" => n,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        other => {
            return Err(format!(
                "unknown duration unit `{other}` in `{text}` (ms, s, m, h)"
            ))
        }
    };
    Duration::try_from_secs_f64(secs).map_err(|e| format!("`{text}`: {e}"))
}

/// Parses `16MiB`, `512KiB`, `1GiB`, `10MB`, `100k`; a bare number is bytes.
pub fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a size (e.g. 16MiB, 512KiB, 1048576)"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        other => {
            return Err(format!(
                "unknown size unit `{other}` in `{text}` (KiB, MiB, GiB)"
            ))
        }
    };
    let bytes = n
        .checked_mul(mult)
        .ok_or_else(|| format!("`{text}` is too large"))?;
    usize::try_from(bytes).map_err(|_| format!("`{text}` is too large"))
}

/// A duration in a config file: text (`"5s"`) or a number of seconds.
/// `KEY=VALUE` for `--forward-header`.
pub fn parse_header(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}`: expected KEY=VALUE"))?;
    let k = k.trim();
    if k.is_empty() {
        return Err(format!("`{s}`: empty header name"));
    }
    Ok((k.to_string(), v.trim().to_string()))
}

fn de_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Secs(f64),
        Text(String),
    }
    match Raw::deserialize(d)? {
        Raw::Secs(s) => Duration::try_from_secs_f64(s).map_err(serde::de::Error::custom),
        Raw::Text(t) => parse_duration(&t).map_err(serde::de::Error::custom),
    }
}

/// A size in a config file: text (`"16MiB"`) or a number of bytes.
fn de_size<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Bytes(usize),
        Text(String),
    }
    match Raw::deserialize(d)? {
        Raw::Bytes(b) => Ok(b),
        Raw::Text(t) => parse_size(&t).map_err(serde::de::Error::custom),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_sizes() {
        assert_eq!(parse_duration("200ms"), Ok(Duration::from_millis(200)));
        assert_eq!(parse_duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("").is_err());
        assert_eq!(parse_size("16MiB"), Ok(16 << 20));
        assert_eq!(parse_size("512kib"), Ok(512 << 10));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert!(parse_size("1TiB").is_err());
        assert!(parse_size("99999999999999999999").is_err());
    }

    #[test]
    fn config_section_defaults_and_unknown_keys() {
        let c: ServeConfig = serde_json::from_str(
            r#"{"decision_wait": "250ms", "max_request_size": "1MiB", "retry_after": 2,
                "session_wait": "1m", "forward_batch_bytes": "512KiB", "forward_concurrency": 1}"#,
        )
        .unwrap();
        assert_eq!(c.session_wait, Duration::from_secs(60));
        assert_eq!(c.forward_batch_bytes, 512 << 10);
        assert_eq!(c.forward_concurrency, 1);
        assert_eq!(c.decision_wait, Duration::from_millis(250));
        assert_eq!(c.max_request_size, 1 << 20);
        assert_eq!(c.retry_after, Duration::from_secs(2));
        assert_eq!(c.grpc_endpoint, "127.0.0.1:4317");
        let err = serde_json::from_str::<ServeConfig>(r#"{"decision_wiat": "1s"}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field"), "{err}");
    }

    #[test]
    fn flags_override_only_what_is_given() {
        let mut c = ServeConfig {
            max_buffered_spans: 7,
            ..ServeConfig::default()
        };
        ServeFlags {
            decision_wait: Some(Duration::from_millis(10)),
            quiet: true,
            ..ServeFlags::default()
        }
        .apply(&mut c);
        assert_eq!(c.max_buffered_spans, 7);
        assert_eq!(c.decision_wait, Duration::from_millis(10));
        assert!(c.quiet);
    }
}
