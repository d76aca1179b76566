//! Convention rules as data: how a framework marks a tool (or agent, or
//! retriever) span and where the name, arguments, result and error live.
//!
//! A rule is written as a [`RuleSpec`] (the form of the `[[conventions.rule]]`
//! entries of a config file). The built-in conventions are the same specs,
//! kept in `builtin.toml` beside this file, so `toolscore conventions` can print
//! them and users can copy and override them. Specs are compiled into
//! [`Rule`]s (regexes built, attribute keys resolved) by the extractor.

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::colon_ns;

mod patterns;

pub use patterns::{check_regex_budget, REGEX_BUDGET};
pub(crate) use patterns::{Pattern, Regexes};

/// What a matching span is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A tool call.
    #[default]
    Tool,
    /// A retriever the library did not type as a tool: a tool call only
    /// with `--retrievers-as-tools`.
    Retriever,
    /// An agent (or workflow, invocation) run: tool calls below it belong to it.
    Agent,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Retriever => "retriever",
            Kind::Agent => "agent",
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A test on a span. Exactly one target: `attr` (an attribute key),
/// `span_name = true` or `scope = true` (the instrumentation scope name); then
/// `equals` (exact text), `matches` (regex) or, for an attribute, nothing (the
/// attribute is present). `any` instead holds if any of its tests holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CondSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attr: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub span_name: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub scope: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matches: Option<String>,
    /// The attribute's text is itself a JSON string (MLflow writes
    /// `"\"TOOL\""`): compare its decoded text.
    #[serde(default, skip_serializing_if = "is_false")]
    pub json: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub any: Vec<CondSpec>,
}

impl CondSpec {
    pub fn attr_equals(key: &str, value: &str) -> CondSpec {
        CondSpec {
            attr: Some(key.to_string()),
            equals: Some(value.to_string()),
            ..CondSpec::default()
        }
    }

    pub fn span_name_matches(regex: &str) -> CondSpec {
        CondSpec {
            span_name: true,
            matches: Some(regex.to_string()),
            ..CondSpec::default()
        }
    }
}

/// How an attribute's text becomes a JSON value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decode {
    /// The text as a string.
    #[default]
    Plain,
    /// Parsed as JSON; text that is not JSON stays a string.
    Json,
    /// JSON when the attribute named by `mime_attr` says `application/json`
    /// (OpenInference). With no mime attribute at all (older instrumentors,
    /// e.g. agno's), a text that is a JSON object is decoded too. Otherwise
    /// (say `text/plain`: LangChain single-argument tools) a bare string.
    JsonIfMime,
    /// A Python call record `{"args": [...], "kwargs": {...}}` (Langfuse,
    /// Traceloop): keyword arguments by name, positional ones kept under
    /// `"args"` (they cannot be named without the tool's signature).
    ArgsKwargs,
}

/// The wrappers of exact known shapes taken off every rule's arguments:
/// none, as no argument wrapper is unambiguous for every tool (LangWatch's
/// typed value is its rule's own: a tool may take `type` and `value`).
pub(crate) const KNOWN_ARGS: &[Unwrap] = &[];

/// The wrappers of exact known shapes taken off every rule's results: what
/// a framework or protocol puts around a tool's return value, in shapes a
/// tool would not return of its own (docs/conventions.md, "Result
/// wrappers").
pub(crate) const KNOWN_RESULT: &[Unwrap] = &[
    Unwrap::ToolMessage,
    Unwrap::LangchainMessage,
    Unwrap::McpContent,
    Unwrap::LlamaIndexOutput,
    Unwrap::ProviderBlock,
    Unwrap::TextEnvelope,
    Unwrap::AiSdkPart,
];

/// Wrappers taken off a decoded value when it has their shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unwrap {
    /// A list of `{"text": ...}` content blocks (Strands) becomes its text,
    /// JSON-decoded when it is JSON.
    ContentBlocks,
    /// A LangChain `ToolMessage` envelope `{"type": "tool", "data":
    /// {"content": ...}}` becomes its content, JSON-decoded when it is JSON.
    ToolMessage,
    /// OpenLLMetry's record of LangChain's tool callbacks: `{"input_str",
    /// "tags", "metadata", "inputs", "kwargs"}` becomes `inputs`, `{"output",
    /// "kwargs"}` the output (a serialized `ToolMessage`: its content).
    LangchainCallback,
    /// A Python call record `{"args": [...], "kwargs": {...}}` (smolagents
    /// adds `sanitize_inputs_outputs`) becomes the keyword arguments plus the
    /// positional ones named from the source's `schema_attr`; positional
    /// ones that cannot be named stay under `"args"`.
    ArgsKwargs,
    /// OpenLLMetry's record of a FastMCP server tool call: `{"tool_name",
    /// "arguments"}` becomes the arguments, its output `[{"type": "text",
    /// "content": ...}]` the text, JSON-decoded when it is JSON.
    McpToolCall,
    /// LlamaIndex's `ToolOutput` (`{"blocks", "tool_name", "raw_input",
    /// "raw_output", "is_error"}`) becomes its `raw_output`, JSON-decoded
    /// when it is JSON.
    LlamaIndexOutput,
    /// BeeAI's tool run `{"input": {...}, "options": ...}` (openinference-
    /// instrumentation-beeai 0.1.7+) becomes the input.
    BeeaiRun,
    /// Google ADK's function response `{"id", "name", "response"}` (as
    /// OpenInference records it) becomes the response.
    AdkFunctionResponse,
    /// AG2's function call as openinference-instrumentation-ag2 records it:
    /// the input `{"name", "arguments": "<JSON>"}` becomes the decoded
    /// arguments, the output `[success, {"name", "role", "content"}]` the
    /// content, JSON-decoded when it is JSON.
    Ag2Function,
    /// A LangChain `ToolMessage` as Python's `model_dump()` writes it
    /// (`{"content", "tool_call_id", "type": "tool", ...}`), serialized
    /// (`{"lc": 1, "type": "constructor", "id": [..., "ToolMessage"],
    /// "kwargs": {...}}`), or that serialized form under `{"output": ...}`
    /// (OpenInference for LangChain.js) becomes its content.
    LangchainMessage,
    /// MCP content: a `CallToolResult` (`{"content": [...], "isError",
    /// "structuredContent"}`), a list of text blocks (`{"type": "text",
    /// "text"}`, with LangChain's `id` or MCP's `annotations`), or one such
    /// block, becomes its text, JSON-decoded when it is JSON.
    McpContent,
    /// A typed value `{"type": "json" | "text" | "raw", "value": ...}`
    /// (LangWatch) becomes the value.
    TypedValue,
    /// OpenLLMetry's MCP client record of a tool's result, `{"result":
    /// <first content block's text>}` (with `"is_error": true` on failure),
    /// becomes that text, JSON-decoded when it is JSON.
    McpClientResult,
    /// Google ADK's own wrapper around a tool's return value that is no
    /// dict, `{"result": v}` (v not an object), becomes `v`.
    AdkResult,
    /// LangSmith JS's wrapper around a traced function's return value that
    /// is no object, `{"outputs": v}` (v not an object), becomes `v`.
    LangsmithOutputs,
    /// Python's `repr()` of a LangChain `ToolMessage`, as OpenLIT records a
    /// LangChain tool's result: `content='...' name='find_hotel'
    /// tool_call_id='call_1'` (keyword fields of literals, the first
    /// `content`, with a `tool_call_id`, none but a `ToolMessage`'s),
    /// becomes the content, JSON-decoded when it is JSON.
    LangchainMessageRepr,
    /// Agno's function execution result as OpenLLMetry's Agno
    /// instrumentation records it, the `str()` of the pydantic model
    /// (`status='success' result={...} error=None images=None ...`, only
    /// Agno's fields), becomes its `result`, JSON-decoded when it is JSON.
    AgnoResult,
    /// A model provider's tool-result content as the next request carries
    /// it: a list of one Bedrock Converse block, `{"json": v}` or `{"text":
    /// "..."}` (no other key), becomes `v` or the text, JSON-decoded when it
    /// is JSON.
    ProviderBlock,
    /// The Vercel AI SDK's `execute(args, options)` as LangSmith records a
    /// wrapped tool's call: `{"args": [arguments, options]}`, the options
    /// the SDK's (`toolCallId`, and no keys but `messages`, `abortSignal`,
    /// `experimental_context`), becomes the arguments.
    AiSdkExecute,
    /// A result envelope around the text the model saw: `{"content": [text
    /// blocks], ...}` with only the producer's bookkeeping beside it
    /// (scalars, flat objects; the blocks may carry scalar keys), such a
    /// list of blocks alone, or a tool message's `repr()` (`content='...'
    /// ... tool_call_id='...'`) alone or as the lone value of `output` or
    /// `result`, becomes the text or content, JSON-decoded when it is JSON
    /// (`extract::envelopes`).
    TextEnvelope,
    /// A call record of exactly a tool name (`tool_name`, `name`) and its
    /// arguments (`arguments`, `args`, `input`: an object or its JSON text)
    /// becomes the arguments.
    NamedCall,
    /// A tool span's own GenAI messages holding exactly one tool message
    /// (`[{"role": "tool", "content"}]`) or one message whose parts are one
    /// tool call or one tool result become its content, arguments or
    /// response, JSON-decoded when it is JSON.
    LoneToolMessage,
    /// The AI SDK's tool-result part recorded whole (`{"type":
    /// "tool-result", "toolCallId", "toolName", "output", ...}`) becomes
    /// its output (`extract::result_part`); a `tool-error` part stays.
    AiSdkPart,
    /// A JSON string holding the JSON text of an object or list (a writer
    /// that encoded the value's JSON text once more: IQ AI's ADK) becomes
    /// that object or list.
    JsonText,
    /// A list of one string holding the JSON text of an object (Monocle's
    /// record of an MCP call's arguments: the OTLP array of the one JSON
    /// argument) becomes that object.
    LoneJsonText,
}

impl Unwrap {
    /// The name written in a rule (and shown by `inspect --explain`).
    pub fn as_str(self) -> &'static str {
        match self {
            Unwrap::ContentBlocks => "content_blocks",
            Unwrap::ToolMessage => "tool_message",
            Unwrap::LangchainCallback => "langchain_callback",
            Unwrap::ArgsKwargs => "args_kwargs",
            Unwrap::McpToolCall => "mcp_tool_call",
            Unwrap::LlamaIndexOutput => "llama_index_output",
            Unwrap::BeeaiRun => "beeai_run",
            Unwrap::AdkFunctionResponse => "adk_function_response",
            Unwrap::Ag2Function => "ag2_function",
            Unwrap::LangchainMessage => "langchain_message",
            Unwrap::McpContent => "mcp_content",
            Unwrap::TypedValue => "typed_value",
            Unwrap::McpClientResult => "mcp_client_result",
            Unwrap::AdkResult => "adk_result",
            Unwrap::LangsmithOutputs => "langsmith_outputs",
            Unwrap::LangchainMessageRepr => "langchain_message_repr",
            Unwrap::AgnoResult => "agno_result",
            Unwrap::ProviderBlock => "provider_block",
            Unwrap::AiSdkExecute => "ai_sdk_execute",
            Unwrap::TextEnvelope => "text_envelope",
            Unwrap::NamedCall => "named_call",
            Unwrap::LoneToolMessage => "lone_tool_message",
            Unwrap::AiSdkPart => "ai_sdk_part",
            Unwrap::JsonText => "json_text",
            Unwrap::LoneJsonText => "lone_json_text",
        }
    }
}

/// Where a value comes from. Exactly one of `attr` and `span_name`; with
/// `event`, `attr` is an attribute of the first span event of that name.
/// `pattern`: a regex over the text; capture group 1 (or the whole match) is
/// the value, and a text that does not match gives nothing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// The span's input or output as a span event holds it, whatever the
    /// event's name: the first event whose name says that side, its first
    /// attribute whose key says it too (`extract::event_side`). No `attr`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_side: Option<SideSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attr: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub span_name: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// Default: `plain`.
    #[serde(default, skip_serializing_if = "is_plain")]
    pub decode: Decode,
    /// For `decode = "json_if_mime"`: the attribute holding the mime type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_attr: Option<String>,
    /// For `json_if_mime`: an attribute holding the tool's JSON Schema; a bare
    /// (non-JSON) value is named after the schema's only property. The schema
    /// itself is never taken as arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_attr: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unwrap: Vec<Unwrap>,
    /// An object whose only key is this one becomes that key's value
    /// (LangSmith's `{"output": ...}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unwrap_key: Option<String>,
    /// In `name_from`: when this source names the call, the call keeps its
    /// span's name as `span_name` (a span named after a wrapper class).
    #[serde(default, skip_serializing_if = "is_false")]
    pub keep_span_name: bool,
    /// In `name_from`: the value names the call only when the span's name
    /// holds it as a whole word (`Tool.get_weather`, `tool: 'get_weather'`);
    /// the call keeps its span's name as `span_name` then.
    #[serde(default, skip_serializing_if = "is_false")]
    pub in_span_name: bool,
    /// In `args`: a value that is a JSON Schema (an object whose `type` is
    /// `object` and whose `properties` is an object) gives nothing, so the
    /// next source is tried. Some keys hold the arguments in one vendor's
    /// spans and the tool's schema in another's (`tool.parameters`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub not_schema: bool,
    /// The value is written one attribute per key under `attr` (no `attr`
    /// of its own): `attr.<key>[.<sub>...]` becomes an object, each value
    /// typed as its attribute is (`extract::flat`). Agenta's
    /// `ag.data.inputs.town`, HoneyHive's `honeyhive_inputs.town`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub flat: bool,
    /// The value counts only when one of `unwrap` took a wrapper off: a
    /// key that holds the value only in some shapes (a tool span's own
    /// messages, one tool message in them) gives nothing in the others.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unwrapped_only: bool,
}

/// Which side of a span an [`SourceSpec::event_side`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SideSpec {
    Input,
    Output,
}

fn is_plain(d: &Decode) -> bool {
    *d == Decode::Plain
}

/// A span kind marked in any namespace: a span attribute whose key is one
/// of `keys`, or ends with `.` and one of them, and whose value is `equals`
/// (in any ASCII case, JSON-quoted or not). What comes before the matched
/// ending (`acme.` of `acme.span.kind`, empty for a bare key) is the
/// namespace, written `{ns}` in the rule's sources.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FamilySpec {
    pub keys: Vec<String>,
    /// The kind's value (empty with `names_span`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub equals: String,
    /// The marker is a key whose value is the span's own name, not
    /// `equals`: a span named after what it records (AgentOps' record of
    /// an OpenAI Agents function span, `function.name` on a span named
    /// `find_hotel`). Its namespace is empty or ends in `.`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub names_span: bool,
    /// Keys the span must have in the marker's namespace too
    /// (`function.input` beside `function.name`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub beside: Vec<String>,
    /// Kind keys (in any namespace, as `keys` are matched) whose presence
    /// types a span as something this family is not: a span typed `agent`
    /// by `respan.entity.log_type` is no tool's own record, whatever its
    /// `traceloop.entity.name`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub untyped: Vec<String>,
    /// Words that may follow `equals` as a value's last segment, a segment
    /// being what `.`, `_`, `-` or a space separate, with any segments
    /// before it (`agentic.tool.invocation`, `tool_call`): the value still
    /// names the kind. Any other segment after it (`tool_choice`) does not
    /// (`extract::kind_value`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub then: Vec<String>,
}

pub use super::colon_ns::NS;

/// The placeholder, at the start of a `flat` source's key, for any
/// namespace: `{any}arguments` reads (`extract::flat`) `arguments.town`,
/// `request.params.arguments.town` or `ai.observability.call.kwargs.town`
/// (with `{any}call.kwargs`), whoever wrote the prefix before it.
pub const ANY: &str = "{any}";

fn is_tool(k: &Kind) -> bool {
    *k == Kind::Tool
}

/// One convention, as written in a config file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    /// Reported as the call's `convention`. A user rule with a built-in
    /// rule's name replaces it.
    pub name: String,
    #[serde(default, skip_serializing_if = "is_tool")]
    pub kind: Kind,
    /// Lower runs first; the first rule that matches a span wins, so one span
    /// never yields two calls even when it carries two conventions.
    #[serde(default)]
    pub priority: i32,
    /// All must hold (none needed in a rule with a `family`).
    #[serde(default)]
    pub when: Vec<CondSpec>,
    /// A kind marker in any namespace (the generic tool-kind rule); the
    /// sources' keys may then start with `{ns}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<FamilySpec>,
    /// None may hold (e.g. Google ADK's `(merged tools)` summary span).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unless: Vec<CondSpec>,
    /// Where the tool (or agent) name is: the first source giving a non-empty
    /// text wins.
    pub name_from: Vec<SourceSpec>,
    /// Arguments: the first source present wins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<SourceSpec>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub result: Vec<SourceSpec>,
    /// Error markers besides span status ERROR (any of them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub error_when: Vec<CondSpec>,
    /// Where an error message is, before the status message and the
    /// `exception` event.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub error_message: Vec<SourceSpec>,
    /// When the arguments have no parameter names (a bare value, or
    /// positional `"args"`), name them from the model's requested call of
    /// this tool; see `extract::requested`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub args_from_request: bool,
    /// What the framework wraps a tool's return value in before the model
    /// sees it: taken off (when the value has that shape) a result the
    /// call takes from the next model request because its span recorded
    /// none, as the rule's `result` sources take it off a recorded one
    /// (Google ADK's `{"result": value}`; `extract::carried`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub carried_result_unwrap: Vec<Unwrap>,
}

/// A rule that cannot be compiled.
#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    #[error("rule `{rule}`: {reason}")]
    Invalid { rule: String, reason: String },
    #[error("rule `{rule}`: bad regex `{regex}`: {error}")]
    Regex {
        rule: String,
        regex: String,
        error: Box<regex::Error>,
    },
    #[error(
        "rule `{rule}`: regex `{regex}` does not fit in what is left ({left} KiB) of the \
         {} MiB all rule regexes may take compiled", REGEX_BUDGET >> 20
    )]
    Budget {
        rule: String,
        regex: String,
        left: usize,
    },
}

/// The built-in rule table, as text (TOML, the config file's form).
pub const BUILTIN_TOML: &str = include_str!("builtin.toml");

/// The key lists the built-in rules name with `vocab` (`extract::vocabulary`),
/// and lists code reads, as text (TOML).
const VOCABULARY_TOML: &str = include_str!("vocabulary.toml");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BuiltinFile {
    rule: Vec<toml::Table>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VocabularyFile {
    vocabulary: BTreeMap<String, Vec<String>>,
}

/// The built-in conventions (docs/conventions.md).
pub fn builtin() -> Vec<RuleSpec> {
    builtin_parsed().0.clone()
}

/// A list of the built-in `[vocabulary]` (`vocabulary.toml`) that code reads rather
/// than a rule (the words of a framework's frames, `extract::framing`; tool
/// listings, `extract::listing`); empty when there is no such list.
pub(crate) fn builtin_list(name: &str) -> &'static [String] {
    builtin_parsed().1.get(name).map_or(&[], Vec::as_slice)
}

/// The built-in rules and vocabulary lists (by name: [`builtin_list`] is
/// asked in loops over calls and texts, and a hash lookup costs less than
/// the string comparisons of a search in order).
type BuiltinParsed = (
    Vec<RuleSpec>,
    HashMap<String, Vec<String>, foldhash::fast::RandomState>,
);

/// [`BuiltinParsed`], parsed once.
fn builtin_parsed() -> &'static BuiltinParsed {
    static PARSED: OnceLock<BuiltinParsed> = OnceLock::new();
    PARSED.get_or_init(|| {
        // The table is a constant; a failure is a programming error caught by tests.
        let file = toml::from_str::<BuiltinFile>(BUILTIN_TOML)
            .unwrap_or_else(|e| panic!("built-in rule table: {e}"));
        let vocabulary = toml::from_str::<VocabularyFile>(VOCABULARY_TOML)
            .unwrap_or_else(|e| panic!("built-in vocabulary: {e}"))
            .vocabulary;
        let rules = super::vocabulary::expand(file.rule, &vocabulary)
            .unwrap_or_else(|e| panic!("built-in rule table: {e}"))
            .into_iter()
            .map(|t| {
                toml::Value::Table(t)
                    .try_into::<RuleSpec>()
                    .unwrap_or_else(|e| panic!("built-in rule table: {e}"))
            })
            .collect();
        (rules, vocabulary.into_iter().collect())
    })
}

/// Merges user rules into the built-in table: a user rule replaces the
/// built-in rule of the same name, others are added; `disable` removes rules
/// by name. On equal priority user rules run first.
pub fn merge(builtin: Vec<RuleSpec>, user: &[RuleSpec], disable: &[String]) -> Vec<RuleSpec> {
    let mut out: Vec<RuleSpec> = user.to_vec();
    out.extend(
        builtin
            .into_iter()
            .filter(|b| !user.iter().any(|u| u.name == b.name)),
    );
    out.retain(|r| !disable.contains(&r.name));
    out.sort_by_key(|r| r.priority); // stable: ties keep user-first order
    out
}

// ---------------------------------------------------------------------------
// Compiled form

/// What a compiled test compares.
#[derive(Debug, Clone)]
pub(crate) enum Test {
    Present,
    Equals(String),
    /// A JSON-encoded string: its exact encoded form (fast path) and the text.
    JsonEquals {
        encoded: String,
        text: String,
    },
    Matches(Pattern),
}

#[derive(Debug, Clone)]
pub(crate) enum Cond {
    /// `slot` indexes the extractor's key table (attributes read once per span).
    Attr {
        slot: usize,
        test: Test,
    },
    SpanName(Test),
    Scope(Test),
    Any(Vec<Cond>),
}

#[derive(Debug, Clone)]
pub(crate) enum Field {
    Attr(String),
    Event { event: String, attr: String },
    EventSide(SideSpec),
    SpanName,
}

#[derive(Debug, Clone)]
pub(crate) struct Source {
    pub field: Field,
    pub pattern: Option<Pattern>,
    pub decode: Decode,
    pub mime_attr: Option<String>,
    pub schema_attr: Option<String>,
    pub unwrap: Vec<Unwrap>,
    pub unwrap_key: Option<String>,
    /// An argument or result source: text that is no JSON is read as a
    /// Python literal when it is one (`extract::literal`).
    pub literal: bool,
    /// The wrappers of exact known shapes taken off after the source's own
    /// ([`KNOWN_ARGS`], [`KNOWN_RESULT`]): every rule's arguments and
    /// results, none for names and messages.
    pub known: &'static [Unwrap],
    /// A name source whose call keeps its span's name (`span_name`).
    pub keep_span_name: bool,
    /// A name source taken only when the span's name holds its value as a
    /// whole word (`in_span_name`).
    pub in_span_name: bool,
    /// A value that is a JSON Schema gives nothing (`not_schema`).
    pub not_schema: bool,
    /// The value is rebuilt from the attributes under the key (`flat`).
    pub flat: bool,
    /// Only a value one of `unwrap` took a wrapper off counts.
    pub unwrapped_only: bool,
}

/// A compiled rule.
#[derive(Debug, Clone)]
pub struct Rule {
    pub spec: RuleSpec,
    /// Slots (under 64) that `when` requires present: a quick reject.
    pub(crate) needs: u64,
    pub(crate) when: Vec<Cond>,
    pub(crate) unless: Vec<Cond>,
    /// What `when` and `unless` ask, sorted for [`Rule::applies`]: most
    /// conditions only ask whether attributes are there, which the span's
    /// bit set of present slots answers without reading a value.
    pub(crate) tests: CondTests,
    pub(crate) name_from: Vec<Source>,
    pub(crate) args: Vec<Source>,
    pub(crate) result: Vec<Source>,
    pub(crate) error_when: Vec<Cond>,
    pub(crate) error_message: Vec<Source>,
    pub(crate) family: Option<FamilySpec>,
    /// The last 8 bytes of each `family` key as one word (0 for a shorter
    /// key): most span keys are told apart from every family key by one
    /// compare each.
    family_tails: Vec<u64>,
    /// Per `family` key, its `:` form when it has a `.`
    /// (`extract::colon_ns`).
    family_colon: Vec<Option<colon_ns::ColonKey>>,
}

impl Rule {
    pub fn name(&self) -> &str {
        &self.spec.name
    }
    pub fn kind(&self) -> Kind {
        self.spec.kind
    }
    pub fn priority(&self) -> i32 {
        self.spec.priority
    }

    /// The namespace and key of a family rule's marker on a span with
    /// attribute keys `keys` and values `value(i)`: `None` when the span has
    /// no marker (or the rule no family).
    pub(crate) fn family_marker<'a>(
        &self,
        keys: impl Iterator<Item = &'a [u8]>,
        value: impl Fn(usize) -> Option<String>,
        span: SpanView<'_>,
    ) -> Option<(&'a str, &'a str)> {
        let family = self.family.as_ref()?;
        if family.names_span {
            return names_span_marker(family, keys, value, span);
        }
        for (i, key) in keys.enumerate() {
            let key_tail = tail8(key);
            // A `:` namespace (Genkit's `genkit:metadata:subtype`):
            // `extract::colon_ns`. One test skips it for nearly every key.
            let colon = colon_ns::has_colon(key_tail);
            let per_key = family.keys.iter().zip(&self.family_tails);
            for ((k, &k_tail), ck) in per_key.zip(&self.family_colon) {
                let mut ns = None;
                if k.len() < 8 || k_tail == key_tail {
                    // `honeyhive_event_type`: a namespace may end in `_` too.
                    ns = key.strip_suffix(k.as_bytes()).filter(|ns| {
                        ns.is_empty()
                            || ns.ends_with(b".")
                            || ns.ends_with(b"_")
                            || colon_ns::ends_ns(ns, k)
                    });
                }
                if let (None, true, Some(ck)) = (ns, colon, ck) {
                    ns = colon_ns::namespace(key, key_tail, ck);
                }
                let Some(ns) = ns else { continue };
                let Some(text) = value(i) else { continue };
                let text = text.trim();
                let text = text
                    .strip_prefix('"')
                    .and_then(|t| t.strip_suffix('"'))
                    .unwrap_or(text);
                let kind = type_in_object(text);
                let text = kind.as_deref().unwrap_or(text);
                let around = (
                    builtin_list("kind_hook_words"),
                    builtin_list("kind_ended_words"),
                );
                if super::kind_value::names(text, &family.equals, &family.then, around) {
                    let key = std::str::from_utf8(key).ok()?;
                    return Some((&key[..ns.len()], key));
                }
            }
        }
        None
    }

    /// This family rule with its sources' `{ns}` set to `ns`.
    pub(crate) fn in_namespace(&self, ns: &str) -> Rule {
        let mut r = self.clone();
        let sources = r
            .name_from
            .iter_mut()
            .chain(&mut r.args)
            .chain(&mut r.result)
            .chain(&mut r.error_message);
        for src in sources {
            let keys = [
                match &mut src.field {
                    Field::Attr(k) | Field::Event { attr: k, .. } => Some(k),
                    Field::SpanName | Field::EventSide(_) => None,
                },
                src.mime_attr.as_mut(),
                src.schema_attr.as_mut(),
            ];
            for k in keys.into_iter().flatten() {
                if k.contains(NS) {
                    *k = colon_ns::in_namespace(k, ns);
                }
            }
        }
        r
    }
}

/// What a `names_span` family marker asks of the span besides its keys:
/// its name, and whether any of its keys passes a test.
#[derive(Clone, Copy)]
pub(crate) struct SpanView<'s> {
    pub name: &'s str,
    pub any_key: &'s dyn Fn(&KeyTest) -> bool,
}

/// A test of one attribute key.
pub(crate) type KeyTest<'t> = dyn Fn(&[u8]) -> bool + 't;

/// A `names_span` family's marker: a key `{ns}<key>` (`{ns}` empty or
/// ending in `.`) whose value is the span's name, with every `beside` key
/// in the same namespace.
fn names_span_marker<'a>(
    family: &FamilySpec,
    keys: impl Iterator<Item = &'a [u8]>,
    value: impl Fn(usize) -> Option<String>,
    span: SpanView<'_>,
) -> Option<(&'a str, &'a str)> {
    let name = span.name.trim();
    if name.is_empty() {
        return None;
    }
    // The marker first (rare), then whether a kind key types the span.
    let mut found = None;
    'keys: for (i, key) in keys.enumerate() {
        for k in &family.keys {
            let Some(ns) = key.strip_suffix(k.as_bytes()) else {
                continue;
            };
            if !(ns.is_empty() || ns.ends_with(b".")) {
                continue;
            }
            if value(i).is_none_or(|v| v.trim() != name) {
                continue;
            }
            let beside = family.beside.iter().all(|b| {
                let mut want = ns.to_vec();
                want.extend_from_slice(b.as_bytes());
                (span.any_key)(&|key| key == want.as_slice())
            });
            if beside {
                let key = std::str::from_utf8(key).ok()?;
                found = Some((&key[..ns.len()], key));
                break 'keys;
            }
        }
    }
    let typed = |key: &[u8]| {
        family
            .untyped
            .iter()
            .any(|k| in_namespace(key, k).is_some())
    };
    found.filter(|_| !(span.any_key)(&typed))
}

/// The namespace before `k` when `key` is `k` bare or after one ending
/// in `.` or `_` (as a family's marker keys are matched).
pub(crate) fn in_namespace<'a>(key: &'a [u8], k: &str) -> Option<&'a [u8]> {
    let ns = key.strip_suffix(k.as_bytes())?;
    (ns.is_empty() || ns.ends_with(b".") || ns.ends_with(b"_")).then_some(ns)
}

/// The `type` of a marker written as a JSON object (Braintrust's
/// `braintrust.span_attributes`: `{"type": "tool", "name": ...}`).
fn type_in_object(text: &str) -> Option<String> {
    if !text.starts_with('{') {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    v.get("type")?.as_str().map(str::to_string)
}

/// A rule's conditions as [`Rule::applies`] asks them: the ones that only
/// ask whether attributes are there as bit masks over the span's present
/// slots (under 64), the others by their place in `when` or `unless`.
#[derive(Debug, Clone, Default)]
pub(crate) struct CondTests {
    /// `when`'s `any` lists of attributes only: each needs one of its bits.
    when_any: Vec<u64>,
    /// `when`'s other conditions (an attribute's presence alone is in
    /// [`Rule::needs`]).
    when_rest: Vec<usize>,
    /// `unless`'s attributes-only conditions: any of these bits present
    /// and the rule does not apply.
    unless_any: u64,
    /// `unless`'s other conditions.
    unless_rest: Vec<usize>,
}

impl CondTests {
    fn of(when: &[Cond], unless: &[Cond]) -> CondTests {
        let mut t = CondTests::default();
        for (i, c) in when.iter().enumerate() {
            match (c, presence_mask(c)) {
                (Cond::Attr { .. }, Some(_)) => {}
                (_, Some(m)) => t.when_any.push(m),
                (_, None) => t.when_rest.push(i),
            }
        }
        for (i, c) in unless.iter().enumerate() {
            match presence_mask(c) {
                Some(m) => t.unless_any |= m,
                None => t.unless_rest.push(i),
            }
        }
        t
    }
}

/// The slots a condition asks only the presence of, as bits (one of them
/// present and it holds): an attribute without a test, or an `any` list
/// of such; `None` for any other condition or a slot past 63.
fn presence_mask(c: &Cond) -> Option<u64> {
    match c {
        Cond::Attr {
            slot,
            test: Test::Present,
        } if *slot < 64 => Some(1 << slot),
        Cond::Any(list) if !list.is_empty() => list
            .iter()
            .try_fold(0u64, |m, c| Some(m | presence_mask(c)?)),
        _ => None,
    }
}

impl Rule {
    /// Whether the rule's `when` holds and its `unless` does not, for a
    /// span whose slots with a value are the bits of `present` (those
    /// under 64) and whose other conditions `holds` answers. The same as
    /// asking each condition in turn; the masks first, as they cost one
    /// AND each. Inlined where it is asked (every rule of every span): as
    /// a call, its frame cost more than the masks.
    #[inline]
    pub(crate) fn applies(&self, present: u64, holds: impl Fn(&Cond) -> bool) -> bool {
        let t = &self.tests;
        self.needs & !present == 0
            && t.unless_any & present == 0
            && t.when_any.iter().all(|m| m & present != 0)
            && t.when_rest.iter().all(|&i| holds(&self.when[i]))
            && !t.unless_rest.iter().any(|&i| holds(&self.unless[i]))
    }
}

/// Resolves attribute keys used in conditions to slots.
pub(crate) trait Slots {
    fn slot(&mut self, key: &str) -> usize;
}

fn invalid(rule: &str, reason: impl Into<String>) -> RuleError {
    RuleError::Invalid {
        rule: rule.to_string(),
        reason: reason.into(),
    }
}

fn compile_cond(
    rule: &str,
    c: &CondSpec,
    slots: &mut dyn Slots,
    when: Regexes,
) -> Result<Cond, RuleError> {
    let targets = usize::from(c.attr.is_some()) + usize::from(c.span_name) + usize::from(c.scope);
    if !c.any.is_empty() {
        if targets > 0 || c.equals.is_some() || c.matches.is_some() || c.json {
            return Err(invalid(rule, "a condition with `any` has no other keys"));
        }
        let inner = c
            .any
            .iter()
            .map(|x| compile_cond(rule, x, slots, when))
            .collect::<Result<_, _>>()?;
        return Ok(Cond::Any(inner));
    }
    if targets != 1 {
        return Err(invalid(
            rule,
            "a condition needs exactly one of `attr`, `span_name = true`, `scope = true` (or `any`)",
        ));
    }
    let test = match (&c.equals, &c.matches) {
        (Some(_), Some(_)) => return Err(invalid(rule, "give `equals` or `matches`, not both")),
        (Some(v), None) if c.json => Test::JsonEquals {
            encoded: serde_json::to_string(v).unwrap_or_default(),
            text: v.clone(),
        },
        (Some(v), None) => Test::Equals(v.clone()),
        (None, Some(re)) => Test::Matches(Pattern::new(rule, re, when)?),
        (None, None) if c.attr.is_some() => Test::Present,
        (None, None) => {
            return Err(invalid(
                rule,
                "a `span_name`/`scope` condition needs `equals` or `matches`",
            ))
        }
    };
    if c.json && !matches!(test, Test::JsonEquals { .. }) {
        return Err(invalid(rule, "`json = true` goes with `equals`"));
    }
    Ok(match &c.attr {
        Some(k) => Cond::Attr {
            slot: slots.slot(k),
            test,
        },
        None if c.span_name => Cond::SpanName(test),
        None => Cond::Scope(test),
    })
}

fn compile_source(rule: &str, s: &SourceSpec, when: Regexes) -> Result<Source, RuleError> {
    let field = match (&s.attr, s.span_name, &s.event) {
        _ if s.event_side.is_some() => match (&s.attr, s.span_name, &s.event, s.flat) {
            (None, false, None, false) => Field::EventSide(s.event_side.unwrap_or(SideSpec::Input)),
            _ => {
                return Err(invalid(
                    rule,
                    "`event_side` goes alone: no `attr`, `event`, `span_name` or `flat`",
                ))
            }
        },
        (Some(a), false, None) => Field::Attr(a.clone()),
        (Some(a), false, Some(e)) => Field::Event {
            event: e.clone(),
            attr: a.clone(),
        },
        (None, true, None) => Field::SpanName,
        _ => return Err(invalid(
            rule,
            "a source needs exactly one of `attr` (optionally with `event`) and `span_name = true`",
        )),
    };
    if s.in_span_name && s.span_name {
        return Err(invalid(
            rule,
            "`in_span_name` reads an attribute against the span name, not the span name itself",
        ));
    }
    if s.unwrapped_only && s.unwrap.is_empty() {
        return Err(invalid(rule, "`unwrapped_only` needs an `unwrap` list"));
    }
    if s.flat && (s.event.is_some() || s.span_name || s.pattern.is_some()) {
        return Err(invalid(
            rule,
            "`flat` reads the attributes under `attr`: no `event`, `span_name` or `pattern`",
        ));
    }
    if let Some(a) = s.attr.as_deref().filter(|a| a.contains(ANY)) {
        let rest = a.strip_prefix(ANY).unwrap_or(a);
        if !s.flat || rest.is_empty() || rest.contains(ANY) || s.event.is_some() {
            return Err(invalid(
                rule,
                "`{any}` starts the key of a `flat` attribute source, once",
            ));
        }
    }
    if s.decode == Decode::JsonIfMime && s.mime_attr.is_none() {
        return Err(invalid(
            rule,
            "`decode = \"json_if_mime\"` needs `mime_attr`",
        ));
    }
    Ok(Source {
        field,
        pattern: s
            .pattern
            .as_deref()
            .map(|p| Pattern::new(rule, p, when))
            .transpose()?,
        decode: s.decode,
        mime_attr: s.mime_attr.clone(),
        schema_attr: s.schema_attr.clone(),
        unwrap: s.unwrap.clone(),
        unwrap_key: s.unwrap_key.clone(),
        literal: false,
        known: &[],
        keep_span_name: s.keep_span_name || s.in_span_name,
        in_span_name: s.in_span_name,
        not_schema: s.not_schema,
        flat: s.flat,
        unwrapped_only: s.unwrapped_only,
    })
}

/// The last 8 bytes of `key` as one word; 0 for a shorter key.
fn tail8(key: &[u8]) -> u64 {
    key.last_chunk::<8>().map_or(0, |t| u64::from_be_bytes(*t))
}

/// Argument or result sources: they read Python literals too.
fn literal(mut sources: Vec<Source>) -> Vec<Source> {
    sources.iter_mut().for_each(|s| s.literal = true);
    sources
}

/// `sources` with the known wrappers `known` taken off their values.
fn known(mut sources: Vec<Source>, known: &'static [Unwrap]) -> Vec<Source> {
    sources.iter_mut().for_each(|s| s.known = known);
    sources
}

/// Every attribute key the sources of `spec` read.
pub(crate) fn spec_keys(spec: &RuleSpec) -> impl Iterator<Item = &str> {
    spec.name_from
        .iter()
        .chain(&spec.args)
        .chain(&spec.result)
        .chain(&spec.error_message)
        .flat_map(|s| [&s.attr, &s.mime_attr, &s.schema_attr])
        .filter_map(|k| k.as_deref())
}

/// Compiles one spec; attribute keys in conditions get slots from `slots`.
/// Its regexes are compiled as `regexes` says.
pub(crate) fn compile_as(
    spec: &RuleSpec,
    slots: &mut dyn Slots,
    regexes: Regexes,
) -> Result<Rule, RuleError> {
    let r = spec.name.as_str();
    if r.trim().is_empty() {
        return Err(invalid("", "a rule needs a `name`"));
    }
    if spec.when.is_empty() && spec.family.is_none() {
        return Err(invalid(r, "`when` needs at least one condition"));
    }
    match &spec.family {
        Some(f) if f.keys.is_empty() || f.keys.iter().any(|k| k.is_empty()) => {
            return Err(invalid(r, "`family.keys` needs at least one non-empty key"));
        }
        Some(f) if f.equals.is_empty() != f.names_span => {
            return Err(invalid(
                r,
                "`family` needs one of `equals` and `names_span`",
            ));
        }
        None if spec_keys(spec).any(|k| k.contains(NS)) => {
            return Err(invalid(r, "`{ns}` in a key needs a `family`"));
        }
        _ => {}
    }
    if spec.name_from.is_empty() {
        return Err(invalid(r, "`name_from` needs at least one source"));
    }
    let conds = |list: &[CondSpec], slots: &mut dyn Slots| -> Result<Vec<Cond>, RuleError> {
        list.iter()
            .map(|c| compile_cond(r, c, slots, regexes))
            .collect()
    };
    let sources = |list: &[SourceSpec]| -> Result<Vec<Source>, RuleError> {
        list.iter().map(|s| compile_source(r, s, regexes)).collect()
    };
    let when = conds(&spec.when, slots)?;
    let needs = when.iter().fold(0u64, |m, c| match c {
        Cond::Attr { slot, .. } if *slot < 64 => m | (1 << slot),
        _ => m,
    });
    let unless = conds(&spec.unless, slots)?;
    Ok(Rule {
        needs,
        tests: CondTests::of(&when, &unless),
        when,
        unless,
        error_when: conds(&spec.error_when, slots)?,
        name_from: sources(&spec.name_from)?,
        args: known(literal(sources(&spec.args)?), KNOWN_ARGS),
        result: known(literal(sources(&spec.result)?), KNOWN_RESULT),
        error_message: sources(&spec.error_message)?,
        family: spec.family.clone(),
        family_tails: spec
            .family
            .iter()
            .flat_map(|f| &f.keys)
            .map(|k| tail8(k.as_bytes()))
            .collect(),
        family_colon: spec
            .family
            .iter()
            .flat_map(|f| &f.keys)
            .map(|k| colon_ns::colon_key(k, tail8))
            .collect(),
        spec: spec.clone(),
    })
}

// ---------------------------------------------------------------------------
// Human-readable forms, for `toolscore conventions`

impl std::fmt::Display for CondSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.any.is_empty() {
            let parts: Vec<String> = self.any.iter().map(ToString::to_string).collect();
            return write!(f, "({})", parts.join(" or "));
        }
        let target = match (&self.attr, self.span_name) {
            (Some(a), _) => a.clone(),
            (None, true) => "span name".to_string(),
            (None, false) => "scope".to_string(),
        };
        match (&self.equals, &self.matches) {
            (Some(v), _) if self.json => write!(f, "{target} = json {v:?}"),
            (Some(v), _) => write!(f, "{target} = {v:?}"),
            (None, Some(re)) => write!(f, "{target} ~ /{re}/"),
            (None, None) => write!(f, "has {target}"),
        }
    }
}

impl std::fmt::Display for SourceSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.attr, &self.event) {
            _ if self.event_side.is_some() => write!(f, "{}", event_side_text(self.event_side))?,
            (Some(a), Some(e)) => write!(f, "event {e}.{a}")?,
            (Some(a), None) => write!(f, "{a}")?,
            (None, _) => write!(f, "span name")?,
        }
        if let Some(p) = &self.pattern {
            write!(f, " /{p}/")?;
        }
        match self.decode {
            Decode::Plain => {}
            Decode::Json => write!(f, " (json)")?,
            Decode::JsonIfMime => write!(f, " (json if mime)")?,
            Decode::ArgsKwargs => write!(f, " (args/kwargs)")?,
        }
        if !self.unwrap.is_empty() {
            let names: Vec<&str> = self.unwrap.iter().map(|u| u.as_str()).collect();
            write!(f, " unwrap {}", names.join(", "))?;
        }
        if let Some(k) = &self.unwrap_key {
            write!(f, " unwrap_key {k}")?;
        }
        if self.in_span_name {
            write!(f, " (when a word of the span name)")?;
        }
        if self.keep_span_name {
            write!(f, " (span name kept)")?;
        }
        Ok(())
    }
}

/// How an `event_side` source reads in explain and `conventions`.
pub(crate) fn event_side_text(side: Option<SideSpec>) -> &'static str {
    match side {
        Some(SideSpec::Output) => "the span event of its output",
        _ => "the span event of its input",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Count(Vec<String>);
    impl Slots for Count {
        fn slot(&mut self, key: &str) -> usize {
            match self.0.iter().position(|k| k == key) {
                Some(i) => i,
                None => {
                    self.0.push(key.to_string());
                    self.0.len() - 1
                }
            }
        }
    }

    #[test]
    fn builtin_table_parses_and_compiles() {
        let specs = builtin();
        assert!(specs.len() >= 20, "{}", specs.len());
        let mut slots = Count(Vec::new());
        for s in &specs {
            compile_as(s, &mut slots, Regexes::Now).unwrap();
        }
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "rule names must be unique");
    }

    #[test]
    fn merge_replaces_by_name_and_disables() {
        let user = RuleSpec {
            name: "mlflow".into(),
            priority: 1,
            when: vec![CondSpec::attr_equals("x", "y")],
            name_from: vec![SourceSpec {
                span_name: true,
                ..SourceSpec::default()
            }],
            ..RuleSpec::default()
        };
        let merged = merge(builtin(), &[user], &["galtea".to_string()]);
        assert_eq!(merged[0].name, "mlflow");
        assert_eq!(merged.iter().filter(|r| r.name == "mlflow").count(), 1);
        assert!(!merged.iter().any(|r| r.name == "galtea"));
    }

    #[test]
    fn bad_specs_are_errors() {
        let mut slots = Count(Vec::new());
        let mut spec = RuleSpec {
            name: "x".into(),
            when: vec![CondSpec {
                span_name: true,
                ..CondSpec::default()
            }],
            name_from: vec![SourceSpec {
                span_name: true,
                ..SourceSpec::default()
            }],
            ..RuleSpec::default()
        };
        assert!(compile_as(&spec, &mut slots, Regexes::Now).is_err());
        spec.when = vec![CondSpec::span_name_matches("(")];
        assert!(matches!(
            compile_as(&spec, &mut slots, Regexes::Now),
            Err(RuleError::Regex { .. })
        ));
    }
}
