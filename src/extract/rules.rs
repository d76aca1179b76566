//! Convention rules as data: how a framework marks a tool span and where the
//! tool name, arguments, result and error live.
//!
//! Built-in conventions are rows of the same type a user-defined rule has, so
//! adding a framework is adding a row (plus a test on a real export).

use regex::Regex;

/// How an attribute's text is turned into a JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum Decode {
    /// Keep the value as it is (strings stay strings).
    Plain,
    /// Parse a string as JSON; a string that is not JSON stays a string.
    Json,
    /// Parse as JSON only when attribute `mime_key` says `application/json`
    /// (OpenInference: LangChain single-argument inputs are bare strings).
    JsonIfMime { mime_key: String },
    /// OpenInference `input.value`: JSON when `mime_key` says so; a bare
    /// string otherwise, named after the only property of the JSON Schema in
    /// `schema_key` when there is exactly one (LangChain single-argument tools).
    JsonIfMimeOrSchema {
        mime_key: String,
        schema_key: String,
    },
    /// Python `{"args": [...], "kwargs": {...}}` call record (Langfuse,
    /// Traceloop): keyword arguments by name, positional ones under `"args"`.
    ArgsKwargs,
}

/// Where a value comes from.
#[derive(Debug, Clone)]
pub enum Field {
    /// A span attribute.
    Attr(String),
    /// The span name.
    SpanName,
    /// Capture group 1 of a regex over the span name.
    SpanNameCapture(Regex),
    /// Attribute `attr` of the first span event called `event`.
    Event { event: String, attr: String },
}

/// One place to look, and how to decode what is there.
#[derive(Debug, Clone)]
pub struct Source {
    pub field: Field,
    pub decode: Decode,
}

impl Source {
    pub fn attr(key: &str, decode: Decode) -> Source {
        Source {
            field: Field::Attr(key.to_string()),
            decode,
        }
    }
    pub fn span_name() -> Source {
        Source {
            field: Field::SpanName,
            decode: Decode::Plain,
        }
    }
    pub fn event(event: &str, attr: &str, decode: Decode) -> Source {
        Source {
            field: Field::Event {
                event: event.to_string(),
                attr: attr.to_string(),
            },
            decode,
        }
    }
}

/// A test on a span.
#[derive(Debug, Clone)]
pub enum Cond {
    /// Attribute `key` is present and its text equals `value`. With
    /// `json_encoded`, the text is JSON-decoded first (MLflow's `"\"TOOL\""`).
    AttrEquals {
        key: String,
        value: String,
        json_encoded: bool,
    },
    /// Attribute `key`'s text matches `regex`.
    AttrMatches { key: String, regex: Regex },
    /// Attribute `key` is present.
    AttrPresent { key: String },
    /// The span name matches `regex`.
    NameMatches { regex: Regex },
}

impl Cond {
    pub fn eq(key: &str, value: &str) -> Cond {
        Cond::AttrEquals {
            key: key.to_string(),
            value: value.to_string(),
            json_encoded: false,
        }
    }
    pub fn json_eq(key: &str, value: &str) -> Cond {
        Cond::AttrEquals {
            key: key.to_string(),
            value: value.to_string(),
            json_encoded: true,
        }
    }
}

/// One convention.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Reported as the call's `convention`.
    pub name: String,
    /// Lower runs first; the first rule that matches a span wins, so one span
    /// never yields two calls even when it carries two conventions.
    pub priority: i32,
    /// All must hold.
    pub when: Vec<Cond>,
    /// None may hold (e.g. Google ADK's `(merged tools)` summary span).
    pub unless: Vec<Cond>,
    /// First source that yields a non-empty string wins.
    pub tool_name: Vec<Source>,
    pub args: Vec<Source>,
    pub result: Vec<Source>,
    /// Extra error markers besides span status ERROR (e.g. Langfuse's level).
    pub error_when: Vec<Cond>,
    /// Where an error message may be, before the status message and events.
    pub error_message: Vec<Source>,
    /// A retriever the library did not type as a tool (P6): used only with
    /// `--retrievers-as-tools`.
    pub retriever: bool,
}

fn re(s: &str) -> Regex {
    // Built-in patterns are constants; a failure is a programming error caught by tests.
    Regex::new(s).unwrap_or_else(|e| panic!("built-in regex {s}: {e}"))
}

/// The built-in conventions (shared/spec/trace-conventions.md §2), in priority order.
pub fn builtin() -> Vec<Rule> {
    let json = || Decode::Json;
    vec![
        Rule {
            name: "otel-genai".into(),
            priority: 10,
            when: vec![Cond::eq("gen_ai.operation.name", "execute_tool")],
            unless: vec![Cond::eq("gen_ai.tool.name", "(merged tools)")],
            tool_name: vec![
                Source::attr("gen_ai.tool.name", Decode::Plain),
                Source {
                    field: Field::SpanNameCapture(re(r"^execute_tool (.+)$")),
                    decode: Decode::Plain,
                },
                Source::span_name(),
            ],
            args: vec![
                Source::attr("gen_ai.tool.call.arguments", json()),
                Source::attr("tool_arguments", json()),
                Source::attr("gcp.vertex.agent.tool_call_args", json()),
                Source::attr("gen_ai.prompt", json()),
                Source::attr(
                    "input.value",
                    Decode::JsonIfMime {
                        mime_key: "input.mime_type".into(),
                    },
                ),
                Source::event("gen_ai.tool.message", "content", json()),
            ],
            result: vec![
                Source::attr("gen_ai.tool.call.result", json()),
                Source::attr("tool_response", json()),
                Source::attr("gcp.vertex.agent.tool_response", json()),
                Source::attr("gen_ai.completion", json()),
                Source::attr(
                    "output.value",
                    Decode::JsonIfMime {
                        mime_key: "output.mime_type".into(),
                    },
                ),
                Source::event("gen_ai.choice", "message", json()),
            ],
            error_when: vec![Cond::eq("gen_ai.tool.status", "error")],
            error_message: vec![],
            retriever: false,
        },
        Rule {
            name: "openinference".into(),
            priority: 20,
            when: vec![Cond::eq("openinference.span.kind", "TOOL")],
            unless: vec![],
            tool_name: vec![
                Source::attr("tool.name", Decode::Plain),
                Source::span_name(),
            ],
            args: vec![Source::attr(
                "input.value",
                Decode::JsonIfMimeOrSchema {
                    mime_key: "input.mime_type".into(),
                    schema_key: "tool.parameters".into(),
                },
            )],
            result: vec![Source::attr(
                "output.value",
                Decode::JsonIfMime {
                    mime_key: "output.mime_type".into(),
                },
            )],
            error_when: vec![],
            error_message: vec![],
            retriever: false,
        },
        Rule {
            name: "mlflow".into(),
            priority: 30,
            when: vec![Cond::json_eq("mlflow.spanType", "TOOL")],
            unless: vec![],
            tool_name: vec![Source::span_name()],
            args: vec![Source::attr("mlflow.spanInputs", json())],
            result: vec![Source::attr("mlflow.spanOutputs", json())],
            error_when: vec![],
            error_message: vec![],
            retriever: false,
        },
        Rule {
            name: "vercel-ai".into(),
            priority: 40,
            when: vec![Cond::NameMatches {
                regex: re(r"^ai\.toolCall$"),
            }],
            unless: vec![],
            tool_name: vec![Source::attr("ai.toolCall.name", Decode::Plain)],
            args: vec![Source::attr("ai.toolCall.args", json())],
            result: vec![Source::attr("ai.toolCall.result", json())],
            error_when: vec![],
            error_message: vec![],
            retriever: false,
        },
        Rule {
            name: "vercel-ai".into(),
            priority: 41,
            when: vec![Cond::eq("ai.operationId", "ai.toolCall")],
            unless: vec![],
            tool_name: vec![Source::attr("ai.toolCall.name", Decode::Plain)],
            args: vec![Source::attr("ai.toolCall.args", json())],
            result: vec![Source::attr("ai.toolCall.result", json())],
            error_when: vec![],
            error_message: vec![],
            retriever: false,
        },
        Rule {
            name: "galtea".into(),
            priority: 50,
            when: vec![Cond::eq("galtea.trace.type", "TOOL")],
            unless: vec![],
            tool_name: vec![Source::span_name()],
            args: vec![Source::attr("galtea.trace.input", json())],
            result: vec![Source::attr("galtea.trace.output", json())],
            error_when: vec![Cond::AttrPresent {
                key: "galtea.trace.error".into(),
            }],
            error_message: vec![Source::attr("galtea.trace.error", Decode::Plain)],
            retriever: false,
        },
        Rule {
            name: "langfuse".into(),
            priority: 60,
            when: vec![Cond::eq("langfuse.observation.type", "tool")],
            unless: vec![],
            tool_name: vec![Source::span_name()],
            args: vec![Source::attr(
                "langfuse.observation.input",
                Decode::ArgsKwargs,
            )],
            result: vec![Source::attr("langfuse.observation.output", json())],
            error_when: vec![Cond::eq("langfuse.observation.level", "ERROR")],
            error_message: vec![Source::attr(
                "langfuse.observation.status_message",
                Decode::Plain,
            )],
            retriever: false,
        },
        Rule {
            name: "traceloop".into(),
            priority: 70,
            when: vec![Cond::eq("traceloop.span.kind", "tool")],
            unless: vec![],
            tool_name: vec![
                Source::attr("traceloop.entity.name", Decode::Plain),
                Source {
                    field: Field::SpanNameCapture(re(r"^(.+)\.tool$")),
                    decode: Decode::Plain,
                },
            ],
            args: vec![Source::attr("traceloop.entity.input", Decode::ArgsKwargs)],
            result: vec![Source::attr("traceloop.entity.output", json())],
            error_when: vec![],
            error_message: vec![],
            retriever: false,
        },
        Rule {
            name: "langsmith".into(),
            priority: 80,
            when: vec![Cond::eq("langsmith.span.kind", "tool")],
            unless: vec![],
            tool_name: vec![
                Source::attr("gen_ai.tool.name", Decode::Plain),
                Source::span_name(),
            ],
            args: vec![Source::attr("gen_ai.prompt", json())],
            result: vec![Source::attr("gen_ai.completion", json())],
            error_when: vec![],
            error_message: vec![],
            retriever: false,
        },
        Rule {
            name: "mlflow-retriever".into(),
            priority: 900,
            when: vec![Cond::json_eq("mlflow.spanType", "RETRIEVER")],
            unless: vec![],
            tool_name: vec![Source::span_name()],
            args: vec![Source::attr("mlflow.spanInputs", json())],
            result: vec![Source::attr("mlflow.spanOutputs", json())],
            error_when: vec![],
            error_message: vec![],
            retriever: true,
        },
        Rule {
            name: "langfuse-retriever".into(),
            priority: 910,
            when: vec![Cond::eq("langfuse.observation.type", "retriever")],
            unless: vec![],
            tool_name: vec![Source::span_name()],
            args: vec![Source::attr(
                "langfuse.observation.input",
                Decode::ArgsKwargs,
            )],
            result: vec![Source::attr("langfuse.observation.output", json())],
            error_when: vec![Cond::eq("langfuse.observation.level", "ERROR")],
            error_message: vec![Source::attr(
                "langfuse.observation.status_message",
                Decode::Plain,
            )],
            retriever: true,
        },
        Rule {
            name: "langsmith-retriever".into(),
            priority: 920,
            when: vec![Cond::eq("langsmith.span.kind", "retriever")],
            unless: vec![],
            tool_name: vec![Source::span_name()],
            args: vec![Source::attr("gen_ai.prompt", json())],
            result: vec![Source::attr("gen_ai.completion", json())],
            error_when: vec![],
            error_message: vec![],
            retriever: true,
        },
    ]
}
