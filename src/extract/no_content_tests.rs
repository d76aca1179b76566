//! Calls without content (`no_content`): made-up tools and values on the
//! span shapes of the writers that leave content out.

use std::sync::Arc;

use opentelemetry_proto::tonic::common::v1::InstrumentationScope;
use opentelemetry_proto::tonic::trace::v1::Status;
use serde_json::json;

use super::{parse, table};
use crate::assemble::{SpanRecord, Trace, TraceId};
use crate::extract::test_support::{
    answering_trace as answering, asking_trace as asking, in_process, read_in_order,
};
use crate::extract::tests::sp;
use crate::extract::{Analysis, Extractor};
use crate::ingest::projection::{AttrsOf, KeyFilter};

/// What the warning of a call without content says.
const HOLLOW: &str = "neither arguments nor a result";

fn scoped(mut s: SpanRecord, scope: &str) -> SpanRecord {
    s.scope = Arc::new(InstrumentationScope {
        name: scope.into(),
        ..Default::default()
    });
    s
}

/// An agent run (span 1) and a GenAI `execute_tool` span per tool (ids
/// 2..) under `scope`, each with its call id and `extra` attributes.
fn genai(scope: &str, tools: &[(&str, &[(&str, &str)])]) -> Trace {
    let mut spans = vec![scoped(
        sp(
            1,
            None,
            (0, 100),
            "invoke_agent clerk",
            &[
                ("gen_ai.operation.name", "invoke_agent"),
                ("gen_ai.agent.name", "clerk"),
            ],
        ),
        scope,
    )];
    for (k, (name, extra)) in tools.iter().enumerate() {
        let id = format!("call_nc{k}");
        let mut attrs = vec![
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", *name),
            ("gen_ai.tool.call.id", id.as_str()),
        ];
        attrs.extend_from_slice(extra);
        let at = 10 + 10 * k as u64;
        let span = sp(
            2 + k as u8,
            Some(1),
            (at, at + 5),
            &format!("execute_tool {name}"),
            &attrs,
        );
        spans.push(scoped(span, scope));
    }
    Trace::new(TraceId([7; 16]), spans, 0)
}

fn hollow_warnings(a: &Analysis) -> Vec<&String> {
    a.warnings.iter().filter(|w| w.contains(HOLLOW)).collect()
}

#[test]
fn the_table_parses_and_names_a_switch_for_each_writer() {
    let t = parse().expect("no_content.toml parses");
    assert!(t.writer.len() >= 5);
    assert!(t
        .writer
        .iter()
        .all(|w| !w.reason.is_empty() && !w.set.is_empty()));
    assert!(!t.generic.set.is_empty() && !t.elsewhere.keys.is_empty());
}

#[test]
fn adk_spans_without_content_warn_once_naming_the_calls_and_the_switch() {
    let t = genai(
        "gcp.vertex.agent",
        &[("find_dock", &[]), ("book_ferry", &[])],
    );
    let a = Extractor::default().analyze(&t);
    assert_eq!(a.calls.len(), 2);
    let w = hollow_warnings(&a);
    assert_eq!(w.len(), 1, "{:?}", a.warnings);
    assert!(w[0].starts_with("2 tool calls hold neither"), "{}", w[0]);
    assert!(
        w[0].contains("`find_dock` (span 0202020202020202)"),
        "{}",
        w[0]
    );
    assert!(w[0].contains("Google ADK"), "{}", w[0]);
    assert!(
        w[0].contains("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true"),
        "{}",
        w[0]
    );
}

#[test]
fn near_misses_are_no_warning() {
    let x = Extractor::default();
    // Arguments `{}`: recorded, empty.
    let empty = genai(
        "gcp.vertex.agent",
        &[("list_docks", &[("gen_ai.tool.call.arguments", "{}")])],
    );
    // A tool without arguments whose result is recorded.
    let result = genai(
        "gcp.vertex.agent",
        &[(
            "list_docks",
            &[("gen_ai.tool.call.result", r#"{"docks": 3}"#)],
        )],
    );
    // A failed call with its error message.
    let mut failed = genai("gcp.vertex.agent", &[("list_docks", &[])]);
    if let Some(s) = failed.spans.get_mut(1) {
        s.span.status = Some(Status {
            code: 2,
            message: "no dock free".into(),
        });
    }
    for (what, t) in [("{}", &empty), ("result", &result), ("failed", &failed)] {
        let a = x.analyze(t);
        assert_eq!(a.calls.len(), 1, "{what}");
        assert!(
            hollow_warnings(&a).is_empty(),
            "{what}: {:?} {:?}",
            a.warnings,
            a.calls
        );
    }
    // A call only asked for (rebuilt from the model's messages): no tool
    // span records it.
    let asked = asking(2, (20, 30), &[("call_q1", "list_docks", json!({}))]);
    let a = x.analyze(&asked);
    assert!(hollow_warnings(&a).is_empty(), "{:?}", a.warnings);
    // Results not read (a reader that only scores arguments): the span's
    // own result still tells a tool without arguments.
    let x = Extractor::default().with_results(false);
    let a = x.analyze(&result);
    assert!(hollow_warnings(&a).is_empty(), "{:?}", a.warnings);
    let bare = genai("gcp.vertex.agent", &[("list_docks", &[])]);
    assert_eq!(hollow_warnings(&x.analyze(&bare)).len(), 1);
}

#[test]
fn a_writer_the_spans_do_not_tell_gets_the_generic_wording() {
    let t = genai("acme.agents", &[("find_dock", &[])]);
    let a = Extractor::default().analyze(&t);
    let w = hollow_warnings(&a);
    assert_eq!(w.len(), 1, "{:?}", a.warnings);
    assert!(w[0].starts_with("1 tool call holds neither"), "{}", w[0]);
    assert!(
        w[0].contains("probably ran with content capture off"),
        "{}",
        w[0]
    );
    for switch in [
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
        "TRACELOOP_TRACE_CONTENT",
        "OPENINFERENCE_HIDE_INPUTS",
    ] {
        assert!(w[0].contains(switch), "{}", w[0]);
    }
    // AutoGen's own spans: no switch records content.
    let t = genai("autogen-core", &[("find_dock", &[]), ("book_ferry", &[])]);
    let w = Extractor::default().analyze(&t).warnings;
    assert!(
        w.iter()
            .any(|w| w.contains("AutoGen") && w.contains("whatever is set")),
        "{w:?}"
    );
}

#[test]
fn openllmetry_and_openinference_spans_name_their_own_switch() {
    let traceloop = Trace::new(
        TraceId([8; 16]),
        vec![sp(
            2,
            None,
            (10, 20),
            "find_dock.tool",
            &[
                ("traceloop.span.kind", "tool"),
                ("traceloop.entity.name", "find_dock"),
            ],
        )],
        0,
    );
    let a = Extractor::default().analyze(&traceloop);
    let w = hollow_warnings(&a);
    assert_eq!(w.len(), 1, "{:?} {:?}", a.warnings, a.calls);
    assert!(
        w[0].contains("OpenLLMetry") && w[0].contains("TRACELOOP_TRACE_CONTENT"),
        "{}",
        w[0]
    );
    // OpenInference hides content behind its placeholder.
    let hidden = Trace::new(
        TraceId([9; 16]),
        vec![sp(
            2,
            None,
            (10, 20),
            "find_dock",
            &[
                ("openinference.span.kind", "TOOL"),
                ("tool.name", "find_dock"),
                ("input.value", "__REDACTED__"),
                ("output.value", "__REDACTED__"),
            ],
        )],
        0,
    );
    let a = Extractor::default().analyze(&hidden);
    let w = hollow_warnings(&a);
    assert_eq!(w.len(), 1, "{:?} {:?}", a.warnings, a.calls);
    assert!(w[0].contains("OPENINFERENCE_HIDE_INPUTS"), "{}", w[0]);
    // The same with arguments kept as JSON text (nothing reads them).
    let a = Extractor::default().with_args_text(true).analyze(&hidden);
    assert_eq!(
        hollow_warnings(&a).len(),
        1,
        "{:?} {:?}",
        a.warnings,
        a.calls
    );
    // Its arguments shown, its output hidden: the call has content.
    let shown = Trace::new(
        TraceId([9; 16]),
        vec![sp(
            2,
            None,
            (10, 20),
            "find_dock",
            &[
                ("openinference.span.kind", "TOOL"),
                ("tool.name", "find_dock"),
                ("input.value", r#"{"port": "Sete"}"#),
                ("output.value", "__REDACTED__"),
            ],
        )],
        0,
    );
    assert!(hollow_warnings(&Extractor::default().analyze(&shown)).is_empty());
}

#[test]
fn content_elsewhere_in_the_trace_says_the_spans_record_none() {
    let mut t = genai("opentelemetry.instrumentation.acme", &[("find_dock", &[])]);
    let chat = sp(
        9,
        Some(1),
        (2, 8),
        "chat m",
        &[
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.prompt.0.role", "user"),
            ("gen_ai.prompt.0.content", "Find a dock in Sete"),
        ],
    );
    t = Trace::new(t.id, t.spans.into_iter().chain([chat]).collect(), 0);
    let a = Extractor::default().analyze(&t);
    let w = hollow_warnings(&a);
    assert_eq!(w.len(), 1, "{:?}", a.warnings);
    assert!(w[0].contains("content capture was on"), "{}", w[0]);
    assert!(w[0].contains("`gen_ai.prompt.0.content`"), "{}", w[0]);
}

/// A framework's trace of process `process`: a tool span with its call id
/// only, which the conversation of later traces may complete.
fn bare_tool(process: &str) -> Trace {
    let t = genai("acme.agents", &[("weigh_crate", &[])]);
    let spans = t
        .spans
        .into_iter()
        .map(|s| in_process(s, process))
        .collect();
    Trace::new(TraceId([1; 16]), spans, 0)
}

#[test]
fn decided_after_later_traces_filled_the_calls() {
    let crate_args = json!({"crate": 12});
    let ask = || {
        asking(
            2,
            (20, 30),
            &[("call_nc0", "weigh_crate", crate_args.clone())],
        )
    };
    let answer = || {
        answering(
            3,
            (60, 70),
            &[("call_nc0", "weigh_crate", crate_args.clone())],
            &[r#"{"kg": 40}"#],
        )
    };
    // The same process: the later traces complete the call, the trace
    // read again has no warning.
    let got = read_in_order(vec![bare_tool("p"), ask(), answer()]);
    assert!(got[0].calls[0].args.value().is_some(), "{:?}", got[0].calls);
    assert!(got.iter().all(|a| hollow_warnings(a).is_empty()), "{got:?}");
    // Another process: nothing completes it.
    let got = read_in_order(vec![bare_tool("q"), ask(), answer()]);
    assert_eq!(hollow_warnings(&got[0]).len(), 1, "{:?}", got[0].warnings);
    assert!(hollow_warnings(&got[2]).is_empty());
}

#[test]
fn the_keys_read_are_kept_by_the_projection() {
    let p = Extractor::default().projection(Vec::<String>::new());
    let t = table();
    let keys = t
        .writer
        .iter()
        .flat_map(|w| w.keys.iter().map(String::as_str));
    let content = [
        "gen_ai.prompt.0.content",
        "gen_ai.completion.0.content",
        "llm.input_messages.0.message.content",
        "llm.output_messages.0.message.content",
    ];
    let elsewhere = t.elsewhere.keys.iter().map(String::as_str);
    for k in keys.chain(content).chain(elsewhere) {
        assert!(p.keep(AttrsOf::Span, k), "{k}");
    }
}

/// Warnings of calls holding a placeholder for their arguments.
fn hidden_args_warnings(a: &Analysis) -> Vec<&String> {
    a.warnings
        .iter()
        .filter(|w| w.contains("a placeholder for its arguments"))
        .collect()
}

#[test]
fn another_writers_content_leaves_the_writers_switch_named() {
    // ADK tool spans without content under a root span of another writer
    // holding the user's input: ADK's switch is still the reason.
    let mut t = genai("gcp.vertex.agent", &[("find_berth", &[])]);
    let root = scoped(
        sp(
            9,
            None,
            (0, 200),
            "handle request",
            &[("input.value", "Find a berth in Brest")],
        ),
        "acme.web",
    );
    t = Trace::new(t.id, t.spans.into_iter().chain([root]).collect(), 0);
    let a = Extractor::default().analyze(&t);
    let w = hollow_warnings(&a);
    assert_eq!(w.len(), 1, "{:?}", a.warnings);
    assert!(w[0].contains("Google ADK"), "{}", w[0]);
    assert!(!w[0].contains("content capture was on"), "{}", w[0]);
    // ADK 2.x writes content to log records; both switches are named.
    for said in [
        "gen_ai.client.inference.operation.details",
        "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
    ] {
        assert!(w[0].contains(said), "{said}: {}", w[0]);
    }
}

#[test]
fn another_call_of_the_writer_with_content_shows_capture_was_on() {
    let tool = |id: u8, name: &str, extra: &[(&str, &str)]| {
        let mut attrs = vec![
            ("traceloop.span.kind", "tool"),
            ("traceloop.entity.name", name),
        ];
        attrs.extend_from_slice(extra);
        let at = 10 * u64::from(id);
        sp(id, None, (at, at + 5), &format!("{name}.tool"), &attrs)
    };
    let t = Trace::new(
        TraceId([5; 16]),
        vec![
            tool(
                2,
                "find_berth",
                &[
                    ("traceloop.entity.input", r#"{"port": "Brest"}"#),
                    ("traceloop.entity.output", r#"{"berth": 4}"#),
                ],
            ),
            tool(3, "moor_boat", &[]),
        ],
        0,
    );
    let a = Extractor::default().analyze(&t);
    let w = hollow_warnings(&a);
    assert_eq!(w.len(), 1, "{:?} {:?}", a.warnings, a.calls);
    assert!(w[0].contains("`moor_boat`"), "{}", w[0]);
    assert!(w[0].contains("content capture was on"), "{}", w[0]);
    assert!(w[0].contains("`find_berth` in span"), "{}", w[0]);
    assert!(!w[0].contains("TRACELOOP_TRACE_CONTENT"), "{}", w[0]);
}

#[test]
fn a_placeholder_for_the_arguments_warns_beside_a_result() {
    let t = |input: &str| {
        Trace::new(
            TraceId([6; 16]),
            vec![sp(
                2,
                None,
                (10, 20),
                "find_berth",
                &[
                    ("openinference.span.kind", "TOOL"),
                    ("tool.name", "find_berth"),
                    ("input.value", input),
                    ("output.value", r#"{"berth": 4}"#),
                ],
            )],
            0,
        )
    };
    for x in [
        Extractor::default(),
        Extractor::default().with_results(false),
    ] {
        let a = x.analyze(&t("__REDACTED__"));
        let w = hidden_args_warnings(&a);
        assert_eq!(w.len(), 1, "{:?} {:?}", a.warnings, a.calls);
        assert!(w[0].contains("OPENINFERENCE_HIDE_INPUTS"), "{}", w[0]);
        assert!(hollow_warnings(&a).is_empty(), "{:?}", a.warnings);
        // Near miss: arguments recorded.
        let a = x.analyze(&t(r#"{"port": "Brest"}"#));
        assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    }
}

#[test]
fn results_off_a_marked_record_without_arguments_is_a_result() {
    // A framework-marked tool span (`framework_record`) without arguments
    // whose output is its record of a run that returned: a result, read
    // or not.
    let t = Trace::new(
        TraceId([4; 16]),
        vec![sp(
            2,
            None,
            (10, 20),
            "home_port",
            &[
                ("gen_ai.tool.name", "home_port"),
                ("gen_ai.system", "agno"),
                ("netra.span.type", "TOOL"),
                ("gen_ai.tool.call_id", "call_hp1"),
                ("output", r#"{"status": "success", "result": "Brest"}"#),
            ],
        )],
        0,
    );
    for x in [
        Extractor::default(),
        Extractor::default().with_results(false),
    ] {
        let a = x.analyze(&t);
        assert_eq!(a.calls.len(), 1);
        assert!(a.warnings.is_empty(), "{:?} {:?}", a.warnings, a.calls);
    }
}

#[test]
fn adk_legacy_empty_objects_are_its_placeholder_when_model_calls_are_empty_too() {
    let trace = |request: &str| {
        let mut t = genai(
            "gcp.vertex.agent",
            &[(
                "find_berth",
                &[
                    ("gcp.vertex.agent.llm_request", "{}"),
                    ("gcp.vertex.agent.tool_call_args", "{}"),
                    ("gcp.vertex.agent.tool_response", "{}"),
                ],
            )],
        );
        let llm = scoped(
            sp(
                9,
                Some(1),
                (2, 8),
                "call_llm",
                &[("gcp.vertex.agent.llm_request", request)],
            ),
            "gcp.vertex.agent",
        );
        Trace::new(t.id, t.spans.drain(..).chain([llm]).collect(), 0)
    };
    let a = Extractor::default().analyze(&trace("{}"));
    let w = hollow_warnings(&a);
    assert_eq!(w.len(), 1, "{:?} {:?}", a.warnings, a.calls);
    assert!(
        w[0].contains("ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS"),
        "{}",
        w[0]
    );
    // Near miss: the model call's request recorded, so `{}` is a tool
    // without arguments that returned an empty object.
    let a = Extractor::default().analyze(&trace(r#"{"model": "m", "contents": []}"#));
    assert!(hollow_warnings(&a).is_empty(), "{:?}", a.warnings);
}

#[test]
fn a_model_call_of_the_calls_scope_shows_capture_was_on() {
    // OpenLLMetry's tool spans awaiting approval beside a model call of the
    // same instrumentation scope that records its prompt.
    let tool = scoped(
        sp(
            2,
            None,
            (10, 20),
            "moor_boat.tool",
            &[("traceloop.span.kind", "tool")],
        ),
        "acme.instrumentation.agents",
    );
    let chat = |scope: &str| {
        scoped(
            sp(
                3,
                None,
                (2, 8),
                "acme.response",
                &[("gen_ai.prompt.0.content", "Moor the boat at berth 4")],
            ),
            scope,
        )
    };
    for (scope, on) in [("acme.instrumentation.agents", true), ("other.web", false)] {
        let t = Trace::new(TraceId([3; 16]), vec![tool.clone(), chat(scope)], 0);
        let a = Extractor::default().analyze(&t);
        let w = hollow_warnings(&a);
        assert_eq!(w.len(), 1, "{:?} {:?}", a.warnings, a.calls);
        assert_eq!(w[0].contains("content capture was on"), on, "{}", w[0]);
        assert_eq!(w[0].contains("TRACELOOP_TRACE_CONTENT"), !on, "{}", w[0]);
    }
}

#[test]
fn openllmetry_python_scopes_name_its_switch_without_its_keys() {
    // Its GenAI `execute_tool` spans under its instrumentation's module
    // name, with no `traceloop.*` key on them.
    for scope in [
        "opentelemetry.instrumentation.langchain",
        "opentelemetry.instrumentation.openai.v1",
        "opentelemetry.instrumentation.crewai.instrumentation",
    ] {
        let a = Extractor::default().analyze(&genai(scope, &[("find_dock", &[])]));
        let w = hollow_warnings(&a);
        assert_eq!(w.len(), 1, "{scope}: {:?}", a.warnings);
        assert!(
            w[0].contains("TRACELOOP_TRACE_CONTENT is not"),
            "{scope}: {}",
            w[0]
        );
    }
    // Near misses: the OTel GenAI instrumentations' modules, one a prefix
    // of OpenLLMetry's but for its dot, one a name both projects use.
    for scope in [
        "opentelemetry.instrumentation.openai_v2",
        "opentelemetry.instrumentation.vertexai",
    ] {
        let a = Extractor::default().analyze(&genai(scope, &[("find_dock", &[])]));
        let w = hollow_warnings(&a);
        assert_eq!(w.len(), 1, "{scope}: {:?}", a.warnings);
        assert!(
            w[0].contains("the OTel GenAI instrumentation"),
            "{scope}: {}",
            w[0]
        );
        assert!(
            !w[0].contains("TRACELOOP_TRACE_CONTENT is not"),
            "{scope}: {}",
            w[0]
        );
    }
}
