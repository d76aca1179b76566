//! Sessions: traces grouped into conversations by a session attribute.
//!
//! There is no common key (docs/conventions.md, "Sessions"): each library
//! has its own, and some export
//! none (MLflow over OTLP, openai-agents). The keys are tried in order on every
//! span and on the resource; the first key present names the trace's session.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use opentelemetry_proto::tonic::resource::v1::Resource;

use super::{Trace, Val};

/// The session keys of the libraries (docs/conventions.md, "Sessions"), in
/// the order they are tried.
pub const DEFAULT_SESSION_KEYS: &[&str] = &[
    "session.id",                      // OpenInference, Langfuse, Strands (by convention)
    "gen_ai.conversation.id",          // pydantic-ai, Google ADK schema 2
    "ai.telemetry.metadata.sessionId", // Vercel AI SDK (free-form metadata)
    "traceloop.association.properties.session_id", // Traceloop
    "langsmith.metadata.session_id",   // LangSmith
    "galtea.session.id",               // Galtea (set by hand)
    "gcp.vertex.agent.session_id",     // Google ADK schema 1 (`call_llm` spans)
    "mlflow.trace.session",            // MLflow native trace JSON metadata
    "langfuse.session.id",             // Langfuse ingestion attribute
];

/// Words a writer puts where it does not know an id (JAF's `session.id =
/// unknown`, `call.id = unknown`): no id at all, or every such trace would
/// share one session.
pub const PLACEHOLDER_IDS: &[&str] = &["unknown", "none", "null", "undefined", "n/a"];

/// Whether `id` is one of [`PLACEHOLDER_IDS`] (any case).
pub fn is_placeholder_id(id: &str) -> bool {
    id.len() <= 9 && PLACEHOLDER_IDS.iter().any(|p| p.eq_ignore_ascii_case(id))
}

/// The default keys as owned strings.
pub fn default_keys() -> Vec<String> {
    DEFAULT_SESSION_KEYS.iter().map(|k| k.to_string()).collect()
}

/// A session attribute value as text; MLflow's JSON-encoded strings decode.
fn session_text(v: Val<'_>) -> Option<String> {
    match v {
        Val::Str(s) if s.starts_with('"') => {
            Some(serde_json::from_str::<String>(s).unwrap_or_else(|_| s.to_string()))
        }
        Val::Str(s) => Some(s.to_string()),
        Val::Int(i) => Some(i.to_string()),
        _ => None,
    }
    .filter(|s| !s.is_empty() && !is_placeholder_id(s))
}

/// The session keys, with the lengths and last bytes they have: most
/// attributes are told apart from every key by those alone, and their
/// values never read.
struct Keys<'k> {
    keys: &'k [String],
    /// Bit `n`: a key is `n` bytes long (keys of 128 bytes or more always
    /// compare).
    lens: u128,
    /// Bit `b`: a key ends with byte `b`.
    lasts: [u64; 4],
}

impl<'k> Keys<'k> {
    fn new(keys: &'k [String]) -> Keys<'k> {
        let mut wanted = Keys {
            keys,
            lens: 0,
            lasts: [0; 4],
        };
        for k in keys {
            if k.len() < 128 {
                wanted.lens |= 1 << k.len();
            }
            let last = usize::from(k.as_bytes().last().copied().unwrap_or(0));
            wanted.lasts[last / 64] |= 1 << (last % 64);
        }
        wanted
    }

    /// The index of `key` among the keys (the first, if it comes twice).
    fn find(&self, key: &[u8]) -> Option<usize> {
        if key.len() < 128 && self.lens & (1 << key.len()) == 0 {
            return None;
        }
        let last = usize::from(key.last().copied().unwrap_or(0));
        if self.lasts[last / 64] & (1 << (last % 64)) == 0 {
            return None;
        }
        self.keys.iter().position(|k| k.as_bytes() == key)
    }
}

/// Calls `f` with every session key's attribute on every span, each span
/// followed by its resource's (once per run of spans sharing a resource):
/// the key's index and the value, until `f` breaks. One pass over the
/// keys, in plain loops (every attribute of every trace is passed): a
/// value is read only when its key is a session key.
fn each_session_attr<'t>(
    trace: &'t Trace,
    keys: &Keys<'_>,
    mut f: impl FnMut(usize, Option<Val<'t>>) -> ControlFlow<()>,
) {
    let mut last_resource: *const Resource = std::ptr::null();
    for s in &trace.spans {
        let span = &s.span;
        for (i, key) in span.attr_keys().enumerate() {
            if let Some(k) = keys.find(key) {
                if f(k, span.attr_value(i)).is_break() {
                    return;
                }
            }
        }
        let r = Arc::as_ptr(&s.resource);
        if r == last_resource {
            continue;
        }
        last_resource = r;
        for kv in &s.resource.attributes {
            if let Some(k) = keys.find(kv.key.as_bytes()) {
                if f(k, kv.value.as_ref().map(Val::of)).is_break() {
                    return;
                }
            }
        }
    }
}

/// The session of `trace`: the first of `keys` present (on any span, in start
/// order, or on the resource), with its value.
pub fn session_of(trace: &Trace, keys: &[String]) -> Option<(String, String)> {
    let wanted = Keys::new(keys);
    let mut best: Option<(usize, String)> = None;
    each_session_attr(trace, &wanted, |k, value| {
        if best.as_ref().is_some_and(|(b, _)| *b <= k) {
            return ControlFlow::Continue(());
        }
        if let Some(v) = value.and_then(session_text) {
            best = Some((k, v));
            if k == 0 {
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    });
    best.map(|(k, v)| (keys[k].clone(), v))
}

/// A conversation: traces sharing a session value.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub key: String,
    pub id: String,
    /// Trace indexes, by start time.
    pub traces: Vec<usize>,
}

/// Groups traces by [`session_of`]; traces without a session are left out.
/// Sessions are ordered by their first trace's start.
pub fn group(traces: &[Trace], keys: &[String]) -> Vec<Session> {
    let mut by: HashMap<(String, String), usize> = HashMap::new();
    let mut out: Vec<Session> = Vec::new();
    for (i, t) in traces.iter().enumerate() {
        let Some(kv) = session_of(t, keys) else {
            continue;
        };
        let at = *by.entry(kv.clone()).or_insert_with(|| {
            out.push(Session {
                key: kv.0,
                id: kv.1,
                traces: Vec::new(),
            });
            out.len() - 1
        });
        out[at].traces.push(i);
    }
    for s in &mut out {
        s.traces
            .sort_by_key(|&i| (traces[i].start_time(), traces[i].id));
    }
    out.sort_by_key(|s| s.traces.first().map(|&i| traces[i].start_time()));
    out
}

/// Every distinct `(key index, value)` of the session keys present on the
/// trace's spans or resources, in first-seen order (for joins).
pub fn values_of(trace: &Trace, keys: &[String]) -> Vec<(usize, String)> {
    let wanted = Keys::new(keys);
    let mut out: Vec<(usize, String)> = Vec::new();
    each_session_attr(trace, &wanted, |k, value| {
        if let Some(v) = value.and_then(session_text) {
            if !out.iter().any(|(ok, ov)| *ok == k && *ov == v) {
                out.push((k, v));
            }
        }
        ControlFlow::Continue(())
    });
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use opentelemetry_proto::tonic::common::v1::{
        any_value, AnyValue, InstrumentationScope, KeyValue,
    };
    use opentelemetry_proto::tonic::resource::v1::Resource;
    use opentelemetry_proto::tonic::trace::v1::Span;

    use super::*;
    use crate::assemble::{SpanId, SpanRecord, TraceId};

    fn kv(k: &str, v: &str) -> KeyValue {
        KeyValue {
            key: k.into(),
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValue(v.into())),
            }),
            ..Default::default()
        }
    }

    fn trace(id: u8, start: u64, attrs: Vec<KeyValue>, resource: Vec<KeyValue>) -> Trace {
        let rec = SpanRecord {
            span_id: SpanId([id; 8]),
            parent: None,
            span: Span {
                start_time_unix_nano: start,
                attributes: attrs,
                ..Default::default()
            }
            .into(),
            resource: Arc::new(Resource {
                attributes: resource,
                ..Default::default()
            }),
            scope: Arc::new(InstrumentationScope::default()),
        };
        Trace::new(TraceId([id; 16]), vec![rec], 0)
    }

    #[test]
    fn groups_by_the_first_key_in_order_and_decodes_mlflow_strings() {
        let keys = default_keys();
        let traces = vec![
            trace(1, 30, vec![kv("session.id", "s")], vec![]),
            trace(
                2,
                10,
                vec![kv("gen_ai.conversation.id", "c"), kv("session.id", "s")],
                vec![],
            ),
            trace(3, 20, vec![], vec![kv("mlflow.trace.session", "\"m\"")]),
            trace(4, 5, vec![], vec![]),
        ];
        assert_eq!(
            session_of(&traces[1], &keys),
            Some(("session.id".into(), "s".into()))
        );
        assert_eq!(
            session_of(&traces[2], &keys),
            Some(("mlflow.trace.session".into(), "m".into()))
        );
        let groups = group(&traces, &keys);
        assert_eq!(groups.len(), 2);
        assert_eq!(
            (groups[0].id.as_str(), groups[0].traces.clone()),
            ("s", vec![1, 0])
        );
        assert_eq!(
            (groups[1].id.as_str(), groups[1].traces.clone()),
            ("m", vec![2])
        );
        assert_eq!(
            values_of(&traces[1], &keys),
            vec![(1, "c".to_string()), (0, "s".to_string())]
        );
        assert_eq!(values_of(&traces[3], &keys), vec![]);
    }

    #[test]
    fn a_placeholder_word_is_no_session() {
        let keys = default_keys();
        let unknown = trace(1, 10, vec![kv("session.id", "Unknown")], vec![]);
        assert_eq!(session_of(&unknown, &keys), None);
        let then_real = trace(
            2,
            20,
            vec![
                kv("session.id", "unknown"),
                kv("gen_ai.conversation.id", "c"),
            ],
            vec![],
        );
        assert_eq!(
            session_of(&then_real, &keys),
            Some(("gen_ai.conversation.id".into(), "c".into()))
        );
        assert!(group(&[unknown], &keys).is_empty());
    }
}
