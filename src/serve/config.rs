//! Settings of `toolscore serve`, each declared once (in [`settings!`]
//! below): its type, default, environment variable, parser and help. From
//! that one list come [`ServeConfig`] (the `[serve]` section of a config
//! file, with the defaults) and [`ServeFlags`] (the command-line flags and
//! their `TOOLSCORE_*` variables, applied on top; `--help` shows each default).
//! Precedence: flags > environment > config file > defaults.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

/// The value that turns a receiver off.
pub const OFF: &str = "off";

/// A config-file value: text, or a number written bare; parsed like the
/// flag's text.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawValue {
    Int(u64),
    Float(f64),
    Text(String),
}

impl RawValue {
    fn parse<T>(self, name: &str, parse: fn(&str) -> Result<T, String>) -> Result<T, String> {
        let text = match self {
            RawValue::Int(n) => n.to_string(),
            RawValue::Float(f) => f.to_string(),
            RawValue::Text(t) => t,
        };
        parse(&text).map_err(|e| format!("{name}: {e}"))
    }
}

/// Declares the settings: `name: Type = "default" (ENV, parser), "help";`
/// for valued settings, `name (ENV), "help";` for on/off ones and
/// `name: Type = none (ENV, parser), "help";` for ones with no default
/// (switches and options may end their parentheses with a short flag).
macro_rules! settings {
    (
        values { $( $vf:ident : $vt:ty = $vd:literal ($venv:literal, $vp:path, $vn:literal), $vh:literal; )* }
        switches { $( $sf:ident ($senv:literal $(, $sshort:literal)?), $sh:literal; )* }
        options { $( $of:ident : $ot:ty = none ($oenv:literal, $op:path, $on:literal $(, $oshort:literal)?), $oh:literal; )* }
    ) => {
        /// Everything `serve` needs besides the scoring settings.
        #[derive(Debug, Clone, PartialEq)]
        pub struct ServeConfig {
            $( #[doc = $vh] pub $vf: $vt, )*
            $( #[doc = $sh] pub $sf: bool, )*
            $( #[doc = $oh] pub $of: Option<$ot>, )*
            /// Headers (gRPC metadata) sent with every forwarded request, e.g. auth.
            pub forward_headers: std::collections::BTreeMap<String, String>,
        }

        /// The `[serve]` section as written: any subset, unknown keys refused.
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct RawServeConfig {
            $( $vf: Option<RawValue>, )*
            $( $sf: Option<bool>, )*
            $( $of: Option<RawValue>, )*
            forward_headers: Option<std::collections::BTreeMap<String, String>>,
        }

        impl<'de> Deserialize<'de> for ServeConfig {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                use serde::de::Error;
                let raw = RawServeConfig::deserialize(d)?;
                let mut c = ServeConfig::default();
                $( if let Some(v) = raw.$vf { c.$vf = v.parse(stringify!($vf), $vp).map_err(D::Error::custom)?; } )*
                $( if let Some(v) = raw.$sf { c.$sf = v; } )*
                $( if let Some(v) = raw.$of { c.$of = Some(v.parse(stringify!($of), $op).map_err(D::Error::custom)?); } )*
                if let Some(h) = raw.forward_headers { c.forward_headers = h; }
                Ok(c)
            }
        }

        impl Default for ServeConfig {
            fn default() -> Self {
                ServeConfig {
                    $( $vf: default_of($vd, $vp), )*
                    $( $sf: false, )*
                    $( $of: None, )*
                    forward_headers: Default::default(),
                }
            }
        }

        /// Command-line flags of `toolscore serve`; unset flags keep the config value.
        #[derive(Debug, Clone, Default, clap::Args)]
        pub struct ServeFlags {
            $(
                #[arg(long, env = $venv, value_name = $vn, value_parser = $vp,
                      help = concat!($vh, " [default: ", $vd, "]"))]
                pub $vf: Option<$vt>,
            )*
            $(
                #[arg(long, $(short = $sshort,)? env = $senv, help = $sh)]
                pub $sf: bool,
            )*
            $(
                #[arg(long, $(short = $oshort,)? env = $oenv, value_name = $on, value_parser = $op, help = $oh)]
                pub $of: Option<$ot>,
            )*
            /// Header sent downstream with forwarded data and results, `KEY=VALUE` (repeatable).
            #[arg(long = "forward-header", value_name = "KEY=VALUE", value_parser = parse_header)]
            pub forward_headers: Vec<(String, String)>,
        }

        impl ServeFlags {
            /// Overrides `config` with every flag that was given.
            pub fn apply(self, config: &mut ServeConfig) {
                $( if let Some(v) = self.$vf { config.$vf = v; } )*
                $( config.$sf |= self.$sf; )*
                $( if self.$of.is_some() { config.$of = self.$of; } )*
                config.forward_headers.extend(self.forward_headers);
            }
        }

        #[cfg(test)]
        const DEFAULTS: &[(&str, &str)] = &[ $( (stringify!($vf), $vd), )* ];
    };
}

/// A built-in default, parsed like a value from the command line.
fn default_of<T>(text: &str, parse: fn(&str) -> Result<T, String>) -> T {
    // The defaults are constants checked by a unit test.
    parse(text).unwrap_or_else(|e| panic!("built-in default `{text}`: {e}"))
}

fn text(s: &str) -> Result<String, String> {
    Ok(s.to_string())
}

fn count(s: &str) -> Result<usize, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a whole number"))
}

fn path(s: &str) -> Result<PathBuf, String> {
    Ok(PathBuf::from(s))
}

settings! {
    values {
        grpc_endpoint: String = "127.0.0.1:4317" ("TOOLSCORE_GRPC_ENDPOINT", text, "ADDR"),
            "OTLP/gRPC listen address; `off` disables the gRPC receiver.";
        http_endpoint: String = "127.0.0.1:4318" ("TOOLSCORE_HTTP_ENDPOINT", text, "ADDR"),
            "OTLP/HTTP listen address; `off` disables the HTTP receiver.";
        admin_endpoint: String = "127.0.0.1:9464" ("TOOLSCORE_ADMIN_ENDPOINT", text, "ADDR"),
            "Admin HTTP address for /metrics (Prometheus), /healthz, /readyz; `off` disables it.";
        decision_wait: Duration = "5s" ("TOOLSCORE_DECISION_WAIT", parse_duration, "DURATION"),
            "Score a trace when no span of it arrived for this long (`5s`, `200ms`).";
        session_wait: Duration = "30s" ("TOOLSCORE_SESSION_WAIT", parse_duration, "DURATION"),
            "Score a session case when no trace of its session completed for this long; a later trace re-scores it.";
        max_request_size: usize = "16MiB" ("TOOLSCORE_MAX_REQUEST_SIZE", parse_size, "SIZE"),
            "Largest request: HTTP body before and after gzip, gRPC message (`16MiB`, `512KiB`, bytes).";
        max_inflight: usize = "128MiB" ("TOOLSCORE_MAX_INFLIGHT", parse_size, "SIZE"),
            "Bytes of request bodies held at once, all receivers together, as received and as inflated; past it requests get 503 / RESOURCE_EXHAUSTED with a retry hint.";
        max_connections: usize = "1024" ("TOOLSCORE_MAX_CONNECTIONS", count, "N"),
            "Open connections on each OTLP port (HTTP, gRPC); past it new ones are closed at once (counted and logged). The open-files limit is raised to fit where allowed.";
        header_timeout: Duration = "10s" ("TOOLSCORE_HEADER_TIMEOUT", parse_duration, "DURATION"),
            "Time an HTTP client has to send a request's head; also how long an idle keep-alive connection is kept.";
        request_timeout: Duration = "30s" ("TOOLSCORE_REQUEST_TIMEOUT", parse_duration, "DURATION"),
            "Time an HTTP client has to send a request's body (408 after it).";
        max_buffered_spans: usize = "500000" ("TOOLSCORE_MAX_BUFFERED_SPANS", count, "N"),
            "Spans held (waiting for their trace to complete, or being scored) before new data is refused with 503 / UNAVAILABLE.";
        max_buffered_traces: usize = "50000" ("TOOLSCORE_MAX_BUFFERED_TRACES", count, "N"),
            "Traces held before new data is refused with 503 / UNAVAILABLE.";
        remember_completed: usize = "10000" ("TOOLSCORE_REMEMBER_COMPLETED", count, "N"),
            "Completed trace ids remembered (with their span ids), so a late span is a re-score and a re-sent span a duplicate.";
        retry_after: Duration = "1s" ("TOOLSCORE_RETRY_AFTER", parse_duration, "DURATION"),
            "Retry delay announced (Retry-After, RetryInfo) when data is refused.";
        status_interval: Duration = "10s" ("TOOLSCORE_STATUS_INTERVAL", parse_duration, "DURATION"),
            "How often buffer use is logged while there is activity.";
        shutdown_timeout: Duration = "25s" ("TOOLSCORE_SHUTDOWN_TIMEOUT", parse_duration, "DURATION"),
            "After SIGINT/SIGTERM, the most time to finish requests, score and write what is buffered and drain the forward queues; what is left then is abandoned (logged, non-zero exit). The default ends inside Kubernetes' default 30 s grace period.";
        scoring_threads: usize = "0" ("TOOLSCORE_SCORING_THREADS", count, "N"),
            "Threads that extract and score completed traces; 0 = one per core.";
        forward_queue: usize = "1024" ("TOOLSCORE_FORWARD_QUEUE", count, "N"),
            "Requests queued for the downstream before upstream gets 503 / UNAVAILABLE.";
        forward_queue_bytes: usize = "256MiB" ("TOOLSCORE_FORWARD_QUEUE_BYTES", parse_size, "SIZE"),
            "Bytes the forward queue holds (waiting or being sent) before upstream gets 503 / UNAVAILABLE.";
        forward_batch_bytes: usize = "2MiB" ("TOOLSCORE_FORWARD_BATCH_BYTES", parse_size, "SIZE"),
            "Queued requests are joined into downstream requests of up to this size (spans unchanged and in order); 0 sends each alone.";
        forward_concurrency: usize = "4" ("TOOLSCORE_FORWARD_CONCURRENCY", count, "N"),
            "Downstream requests in flight at once; 1 keeps arrival order even across retries.";
    }
    switches {
        quiet ("TOOLSCORE_QUIET", 'q'), "Nothing on stdout (results go to --output and the log only).";
        forward_gzip ("TOOLSCORE_FORWARD_GZIP"), "Gzip forwarded requests.";
        results_spans ("TOOLSCORE_RESULTS_SPANS"), "Also export each evaluation as a `toolscore.evaluation` span (child of the trace's root span) to the results destination.";
    }
    options {
        output: PathBuf = none ("TOOLSCORE_OUTPUT", path, "FILE", 'o'),
            "Append JSONL results to this file (flushed after every batch; SIGHUP reopens it, for log rotation).";
        html: PathBuf = none ("TOOLSCORE_HTML", path, "FILE"),
            "At shutdown, write the run's HTML report (as `replay --format html`) to this file: the latest result of each trace and case, at most 10000.";
        expected: PathBuf = none ("TOOLSCORE_EXPECTED", path, "FILE", 'e'),
            "Fixture file of expected tools (JSONL or a JSON array), joined with traces as in `replay`.";
        default_expected: PathBuf = none ("TOOLSCORE_DEFAULT_EXPECTED", path, "FILE"),
            "Expectation for traces that match no case: a JSON array of expected tools, or one case object (its trace_id/match are ignored).";
        forward: String = none ("TOOLSCORE_FORWARD", text, "URL"),
            "Forward every accepted span and log record downstream: `http://host:4317` or `grpc://host:port` (OTLP/gRPC), `http://host:4318` (OTLP/HTTP).";
        results_otlp: String = none ("TOOLSCORE_RESULTS_OTLP", text, "URL"),
            "Send evaluation results as OTLP logs here (same URL forms as --forward), `off` for nowhere. Default: the --forward downstream.";
        tls_cert_file: PathBuf = none ("TOOLSCORE_TLS_CERT_FILE", path, "FILE"),
            "TLS certificate chain (PEM); with --tls-key-file the OTLP receivers and the admin port take TLS only (HTTPS, gRPC over TLS).";
        tls_key_file: PathBuf = none ("TOOLSCORE_TLS_KEY_FILE", path, "FILE"),
            "Private key (PEM) of --tls-cert-file.";
        tls_client_ca_file: PathBuf = none ("TOOLSCORE_TLS_CLIENT_CA_FILE", path, "FILE"),
            "CA certificates (PEM): the OTLP receivers then require a client certificate signed by one of them (mutual TLS); the admin port does not, so probes can reach it.";
        auth_token_file: PathBuf = none ("TOOLSCORE_AUTH_TOKEN_FILE", path, "FILE"),
            "File holding a bearer token (a leading UTF-8 byte order mark and surrounding whitespace are stripped): OTLP exports, the results API and /metrics then need `Authorization: Bearer <token>`; /healthz and /readyz stay open for probes.";
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
    fn every_default_parses_and_shows_in_help() {
        // `ServeConfig::default()` parses each default; this names a bad one.
        let c = ServeConfig::default();
        assert_eq!(c.decision_wait, Duration::from_secs(5));
        assert_eq!(c.max_request_size, 16 << 20);
        assert_eq!(c.forward_queue_bytes, 256 << 20);
        let mut cmd = <ServeFlags as clap::Args>::augment_args(clap::Command::new("serve"));
        let help = cmd.render_help().to_string();
        for (name, default) in DEFAULTS {
            assert!(
                help.contains(&format!("[default: {default}]")),
                "{name}: default {default} not in help"
            );
        }
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
