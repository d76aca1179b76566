//! Generated OTLP payloads of realistic agent traces, for benchmarks and tests.
//!
//! Per trace: one `invoke_agent` root, `tools` `chat` spans, `tools`
//! `execute_tool` spans with JSON arguments/results (200-2000 bytes, with
//! escapes and non-ASCII) and a few HTTP spans; ten attributes per span.
//! Spans of a trace are spread over requests like a batching exporter's.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};

/// A tiny deterministic PRNG (xorshift64*), so payloads are reproducible.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

fn kv(key: &str, v: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue { value: Some(v) }),
        ..Default::default()
    }
}

fn s(key: &str, v: impl Into<String>) -> KeyValue {
    kv(key, any_value::Value::StringValue(v.into()))
}

fn i(key: &str, v: i64) -> KeyValue {
    kv(key, any_value::Value::IntValue(v))
}

const WORDS: &[&str] = &[
    "weather",
    "Zürich",
    "naïve",
    "tab\there",
    "line\nbreak",
    "\"quoted\"",
    "東京",
    "ok",
];

fn json_blob(rng: &mut Rng, target: usize) -> String {
    let mut fields = Vec::new();
    let mut len = 2;
    let mut n = 0;
    while len < target {
        let word = WORDS[rng.below(WORDS.len() as u64) as usize];
        let value =
            serde_json::to_string(&format!("{word} {}", rng.below(1_000_000))).unwrap_or_default();
        let field = format!("\"k{n}\":{value}");
        len += field.len() + 1;
        fields.push(field);
        n += 1;
    }
    format!("{{{}}}", fields.join(","))
}

/// The generated requests and the number of spans they hold.
pub struct Generated {
    pub requests: Vec<ExportTraceServiceRequest>,
    pub spans: usize,
}

/// `traces` traces of `1 + 2 * tools + 3` spans each, split into `requests` requests.
pub fn agent_traces(traces: usize, tools: usize, requests: usize, seed: u64) -> Generated {
    let mut rng = Rng::new(seed);
    let mut all: Vec<Span> = Vec::new();
    for t in 0..traces {
        let mut trace = TraceGen::new(t, &mut rng);
        all.push(trace.root(&mut rng));
        for k in 0..tools {
            let at = trace.base + 1_000_000 + k as u64 * 100_000_000;
            all.push(trace.chat(&mut rng, at));
            all.push(trace.tool(&mut rng, k, at));
        }
        for h in 0..3u64 {
            all.push(trace.http(&mut rng, h));
        }
    }
    // A batching exporter sends spans as they end: shuffle across requests.
    for k in (1..all.len()).rev() {
        let j = rng.below(k as u64 + 1) as usize;
        all.swap(k, j);
    }
    let spans = all.len();
    Generated {
        requests: batch(&all, requests),
        spans,
    }
}

/// Builds the spans of trace `t`. Every draw goes through the one shared [`Rng`]
/// in a fixed order, so a seed always gives the same payload.
struct TraceGen {
    t: usize,
    trace_id: Vec<u8>,
    root: Vec<u8>,
    base: u64,
    /// Spans numbered so far: the low half of the next span id.
    n: u64,
}

impl TraceGen {
    fn new(t: usize, rng: &mut Rng) -> TraceGen {
        let mut trace_id = [0u8; 16];
        trace_id[..8].copy_from_slice(&(t as u64 + 1).to_be_bytes());
        trace_id[8..].copy_from_slice(&rng.next_u64().to_be_bytes());
        let mut trace = TraceGen {
            t,
            trace_id: trace_id.to_vec(),
            root: Vec::new(),
            base: 1_700_000_000_000_000_000u64 + t as u64 * 1_000_000_000,
            n: 0,
        };
        trace.root = trace.next_id();
        trace
    }

    /// The trace number in the high half keeps ids unique across traces.
    fn next_id(&mut self) -> Vec<u8> {
        self.n += 1;
        let mut id = [0u8; 8];
        id[..4].copy_from_slice(&(self.t as u32 + 1).to_be_bytes());
        id[4..].copy_from_slice(&(self.n as u32).to_be_bytes());
        id.to_vec()
    }

    /// The attributes every span of the trace carries.
    fn common(&self, rng: &mut Rng) -> Vec<KeyValue> {
        let t = self.t;
        vec![
            s("gen_ai.system", "openai"),
            s("gen_ai.conversation.id", format!("conv-{}", t % 17)),
            s("session.id", format!("sess-{}", t % 17)),
            i("thread.id", rng.below(64) as i64),
        ]
    }

    /// A child of the root with a fresh id.
    fn child(
        &mut self,
        name: String,
        kind: i32,
        start: u64,
        end: u64,
        attrs: Vec<KeyValue>,
    ) -> Span {
        Span {
            trace_id: self.trace_id.clone(),
            span_id: self.next_id(),
            parent_span_id: self.root.clone(),
            name,
            kind,
            start_time_unix_nano: start,
            end_time_unix_nano: end,
            attributes: attrs,
            ..Default::default()
        }
    }

    fn root(&self, rng: &mut Rng) -> Span {
        let t = self.t;
        let mut attrs = self.common(rng);
        attrs.extend([
            s("gen_ai.operation.name", "invoke_agent"),
            s("gen_ai.agent.name", "planner"),
            s("gen_ai.agent.id", format!("agent-{t}")),
            s("logfire.msg", "planner run"),
            i("gen_ai.usage.input_tokens", 1200),
            i("gen_ai.usage.output_tokens", 300),
            s("gen_ai.request.model", "gpt-4o"),
        ]);
        Span {
            trace_id: self.trace_id.clone(),
            span_id: self.root.clone(),
            name: "invoke_agent planner".into(),
            kind: 1,
            start_time_unix_nano: self.base,
            end_time_unix_nano: self.base + 900_000_000,
            attributes: attrs,
            ..Default::default()
        }
    }

    fn chat(&mut self, rng: &mut Rng, at: u64) -> Span {
        let mut attrs = self.common(rng);
        attrs.extend([
            s("gen_ai.operation.name", "chat"),
            s("gen_ai.request.model", "gpt-4o"),
            s("gen_ai.response.id", format!("resp-{}", rng.next_u64())),
            i("gen_ai.usage.input_tokens", rng.below(4000) as i64),
            i("gen_ai.usage.output_tokens", rng.below(400) as i64),
            s("server.address", "api.example.com"),
        ]);
        self.child("chat gpt-4o".into(), 3, at, at + 40_000_000, attrs)
    }

    /// The `k`th tool call, answering the chat span that starts at `at`.
    fn tool(&mut self, rng: &mut Rng, k: usize, at: u64) -> Span {
        let tool = [
            "get_weather",
            "search_docs",
            "create_ticket",
            "format_answer",
        ][k % 4];
        let args_len = 200 + rng.below(1800) as usize;
        let result_len = 200 + rng.below(1800) as usize;
        let mut attrs = self.common(rng);
        attrs.extend([
            s("gen_ai.operation.name", "execute_tool"),
            s("gen_ai.tool.name", tool),
            s("gen_ai.tool.call.id", format!("call_{}", rng.next_u64())),
            s("gen_ai.tool.call.arguments", json_blob(rng, args_len)),
            s("gen_ai.tool.call.result", json_blob(rng, result_len)),
            s("logfire.msg", format!("running tool: {tool}")),
        ]);
        let name = format!("execute_tool {tool}");
        self.child(name, 1, at + 50_000_000, at + 90_000_000, attrs)
    }

    /// The `h`th HTTP client span under the model calls.
    fn http(&mut self, rng: &mut Rng, h: u64) -> Span {
        let at = self.base + 2_000_000 + h * 7_000_000;
        let mut attrs = self.common(rng);
        attrs.extend([
            s("http.request.method", "POST"),
            s("url.full", "https://api.example.com/v1/chat/completions"),
            i("http.response.status_code", 200),
            s("server.address", "api.example.com"),
            i("server.port", 443),
            s("network.protocol.version", "1.1"),
        ]);
        self.child("POST".into(), 3, at, at + 5_000_000, attrs)
    }
}

/// `spans` in about `requests` requests, each from one of five services.
fn batch(spans: &[Span], requests: usize) -> Vec<ExportTraceServiceRequest> {
    let per = spans.len().div_ceil(requests.max(1));
    spans
        .chunks(per.max(1))
        .enumerate()
        .map(|(n, chunk)| ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(Resource {
                    attributes: vec![
                        s("service.name", format!("agent-{}", n % 5)),
                        s("telemetry.sdk.name", "opentelemetry"),
                    ],
                    ..Default::default()
                }),
                scope_spans: vec![ScopeSpans {
                    scope: Some(InstrumentationScope {
                        name: "pydantic-ai".into(),
                        ..Default::default()
                    }),
                    spans: chunk.to_vec(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
        })
        .collect()
}
