//! The decoder end to end: JSON text in, prost's spans and the rejected
//! ones' reasons out.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest as PbRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as V;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
// The tests read spans as prost's (`to_proto`).
use opentelemetry_proto::tonic::trace::v1::Span;

use super::ids::hex;
use super::{decode, decode_with, Document};
use crate::ingest::projection::{AttrsOf, KeepAll, KeyFilter};

mod simd;

const TRACE_HEX: &str = "5b8efff798038103d269b633813fc60c";
const SPAN_HEX: &str = "eee19b7ec3c1b174";
// The same ids in base64 (standard alphabet): what Go protojson and Tempo write.
const TRACE_B64: &str = "W47/95gDgQPSabYzgT/GDA==";
const SPAN_B64: &str = "7uGbfsPBsXQ=";

fn trace_bytes() -> Vec<u8> {
    hex(TRACE_HEX.as_bytes()).unwrap()
}
fn span_bytes() -> Vec<u8> {
    hex(SPAN_HEX.as_bytes()).unwrap()
}

/// A request with one scope holding `spans` (JSON objects).
fn request(spans: &[String]) -> String {
    format!(
        r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"svc"}}}}]}},"scopeSpans":[{{"scope":{{"name":"lib"}},"spans":[{}]}}]}}]}}"#,
        spans.join(",")
    )
}

fn span(name: &str, extra: &str) -> String {
    format!(r#"{{"traceId":"{TRACE_HEX}","spanId":"{SPAN_HEX}","name":"{name}"{extra}}}"#)
}

/// The document's spans as prost's.
pub(super) fn spans_of(d: &Document) -> Vec<Span> {
    d.requests
        .iter()
        .flat_map(|r| &r.resource_spans)
        .flat_map(|rs| &rs.scope_spans)
        .flat_map(|ss| &ss.spans)
        .map(super::super::Span::to_proto)
        .collect()
}

fn one(json: &str) -> Span {
    let d = decode(json.as_bytes()).unwrap();
    assert!(d.rejected.is_empty(), "{:?}", d.rejected);
    let spans = spans_of(&d);
    assert_eq!(spans.len(), 1);
    spans[0].clone()
}

fn attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a V> {
    attrs
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

// 1. enum names as well as integers.
#[test]
fn enums_by_name_or_number() {
    for (kind, want) in [
        (r#""SPAN_KIND_SERVER""#, 2),
        ("3", 3),
        (r#""SPAN_KIND_CONSUMER""#, 5),
        (r#""server""#, 2),
        (r#""span_kind_client""#, 3),
        ("null", 0),
    ] {
        let s = one(&request(&[span("a", &format!(r#","kind":{kind}"#))]));
        assert_eq!(s.kind, want, "{kind}");
    }
    for (code, want) in [
        (r#""STATUS_CODE_ERROR""#, 2),
        (r#""STATUS_CODE_OK""#, 1),
        ("2", 2),
        (r#""Error""#, 2),
    ] {
        let s = one(&request(&[span(
            "a",
            &format!(r#","status":{{"code":{code},"message":"boom"}}"#),
        )]));
        let st = s.status.unwrap();
        assert_eq!((st.code, st.message.as_str()), (want, "boom"), "{code}");
    }
    // An unknown name rejects that span only, naming the span and the value.
    let d = decode(
        request(&[
            span("bad", r#","kind":"SPAN_KIND_SEVER""#),
            span("good", r#","kind":"SPAN_KIND_CLIENT""#),
        ])
        .as_bytes(),
    )
    .unwrap();
    assert_eq!(spans_of(&d).len(), 1);
    assert_eq!(spans_of(&d)[0].name, "good");
    let r = &d.rejected[0].reason;
    assert!(
        r.contains("span `bad`") && r.contains("SPAN_KIND_SEVER"),
        "{r}"
    );
    assert!(r.contains("resourceSpans[0].scopeSpans[0].spans[0]"), "{r}");
}

#[test]
fn enums_in_links_and_events_contexts() {
    // Links carry ids (hex or base64) and flags; events carry times as strings.
    let s = one(&request(&[span(
        "a",
        &format!(
            r#","kind":"SPAN_KIND_INTERNAL","links":[{{"traceId":"{TRACE_B64}","spanId":"{SPAN_HEX}","flags":"256","traceState":"k=v","attributes":[{{"key":"l","value":{{"boolValue":true}}}}],"droppedAttributesCount":1}}],"events":[{{"name":"exception","timeUnixNano":"12","attributes":[{{"key":"exception.type","value":{{"stringValue":"E"}}}}]}}],"status":{{"code":"STATUS_CODE_ERROR"}}"#
        ),
    )]));
    assert_eq!(s.kind, 1);
    assert_eq!(s.links[0].trace_id, trace_bytes());
    assert_eq!(s.links[0].span_id, span_bytes());
    assert_eq!(s.links[0].flags, 256);
    assert_eq!(s.links[0].trace_state, "k=v");
    assert_eq!(s.links[0].dropped_attributes_count, 1);
    assert_eq!(attr(&s.links[0].attributes, "l"), Some(&V::BoolValue(true)));
    assert_eq!(s.events[0].time_unix_nano, 12);
    assert_eq!(
        attr(&s.events[0].attributes, "exception.type"),
        Some(&V::StringValue("E".into()))
    );
    assert_eq!(s.status.unwrap().code, 2);
}

// 2. base64 ids as well as hex.
#[test]
fn ids_as_hex_or_base64() {
    let url_trace = TRACE_B64.replace('/', "_");
    let cases = [
        (TRACE_HEX.to_string(), SPAN_HEX.to_string()),
        (TRACE_HEX.to_uppercase(), SPAN_HEX.to_uppercase()),
        (TRACE_B64.to_string(), SPAN_B64.to_string()),
        (
            TRACE_B64.trim_end_matches('=').to_string(),
            SPAN_B64.trim_end_matches('=').to_string(),
        ),
        (url_trace.clone(), SPAN_B64.to_string()),
        (
            url_trace.trim_end_matches('=').to_string(),
            SPAN_B64.to_string(),
        ),
        (format!("0x{TRACE_HEX}"), SPAN_HEX.to_string()),
    ];
    for (t, s) in cases {
        let json = request(&[format!(
            r#"{{"traceId":"{t}","spanId":"{s}","parentSpanId":"{s}","name":"a"}}"#
        )]);
        let sp = one(&json);
        assert_eq!(sp.trace_id, trace_bytes(), "{t}");
        assert_eq!(sp.span_id, span_bytes(), "{s}");
        assert_eq!(sp.parent_span_id, span_bytes(), "{s}");
    }
    // An empty or absent parent is "no parent".
    let sp = one(&request(&[span("root", r#","parentSpanId":"""#)]));
    assert!(sp.parent_span_id.is_empty());
    let sp = one(&request(&[span("root", "")]));
    assert!(sp.parent_span_id.is_empty());
}

#[test]
fn a_wrong_id_rejects_that_span_only() {
    let bad = [
        // hex of the wrong length
        (r#""traceId":"abcd""#, "trace id of 2 bytes as hex"),
        // 32 chars that are not hex (but base64 of 24 bytes)
        (
            r#""traceId":"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz""#,
            "trace id of 24 bytes as base64",
        ),
        (r#""traceId":"not an id!""#, "is neither hex nor base64"),
        // base64 of the wrong length
        (r#""spanId":"0a0b0c""#, "span id of 3 bytes as hex"),
        (r#""spanId":"AQID""#, "span id of 3 bytes as base64"),
        (r#""spanId":"AQIDBA==""#, "span id of 4 bytes as base64"),
        // mixed alphabets
        (r#""spanId":"7u+bfsPBsX_=""#, "is neither hex nor base64"),
        (
            r#""parentSpanId":"xyz!""#,
            "parent span id \"xyz!\" is neither",
        ),
        (r#""spanId":"""#, "no span id"),
        (r#""spanId":12"#, "span id 12 is not a string"),
    ];
    for (field, want) in bad {
        let good = span("kept", "");
        let b =
            format!(r#"{{"traceId":"{TRACE_HEX}","spanId":"{SPAN_HEX}","name":"broken",{field}}}"#);
        let d = decode(request(&[good, b]).as_bytes()).unwrap();
        assert_eq!(spans_of(&d).len(), 1, "{field}");
        assert_eq!(spans_of(&d)[0].name, "kept");
        assert_eq!(d.rejected.len(), 1);
        assert_eq!(d.rejected[0].spans, 1);
        let r = &d.rejected[0].reason;
        assert!(r.contains(want), "{field}: {r}");
        assert!(
            r.contains("span `broken` (resourceSpans[0].scopeSpans[0].spans[1])"),
            "{r}"
        );
        if want.contains("hex") {
            assert!(r.contains("tried hex") && r.contains("and base64"), "{r}");
        }
    }
    // A span in snake_case: no ids, and the reason says why.
    let d = decode(
        request(&[format!(
            r#"{{"trace_id":"{TRACE_HEX}","span_id":"{SPAN_HEX}","name":"snake"}}"#
        )])
        .as_bytes(),
    )
    .unwrap();
    let r = &d.rejected[0].reason;
    assert!(r.contains("no trace id") && r.contains("`trace_id`"), "{r}");
    assert!(r.contains("lowerCamelCase"), "{r}");
}

// 3. pre-1.0 names.
#[test]
fn instrumentation_library_names() {
    let json = format!(
        r#"{{"resourceSpans":[{{"resource":{{}},"instrumentationLibrarySpans":[{{"instrumentationLibrary":{{"name":"old","version":"0.9"}},"spans":[{}]}}]}}]}}"#,
        span("a", "")
    );
    let d = decode(json.as_bytes()).unwrap();
    let ss = &d.requests[0].resource_spans[0].scope_spans[0];
    let scope = ss.scope.as_ref().unwrap();
    assert_eq!(
        (scope.name.as_str(), scope.version.as_str()),
        ("old", "0.9")
    );
    assert_eq!(ss.spans.len(), 1);
    // Positions in messages use the key the document used.
    let json = format!(
        r#"{{"resourceSpans":[{{"instrumentationLibrarySpans":[{{"spans":[{}]}}]}}]}}"#,
        span("x", r#","kind":"NOPE""#)
    );
    let d = decode(json.as_bytes()).unwrap();
    assert!(
        d.rejected[0]
            .reason
            .contains("resourceSpans[0].instrumentationLibrarySpans[0].spans[0]"),
        "{:?}",
        d.rejected
    );
}

// 4. Tempo's shapes.
#[test]
fn tempo_batches_and_v2_wrapper() {
    let s = format!(
        r#"{{"traceId":"{TRACE_B64}","spanId":"{SPAN_B64}","name":"GET /","kind":"SPAN_KIND_SERVER","startTimeUnixNano":"1","endTimeUnixNano":"2","status":{{}}}}"#
    );
    let batches = format!(
        r#"{{"batches":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"api"}}}}]}},"scopeSpans":[{{"scope":{{"name":"x"}},"spans":[{s}]}}]}},{{"resource":{{}},"instrumentationLibrarySpans":[{{"instrumentationLibrary":{{"name":"y"}},"spans":[{s}]}}]}}]}}"#
    );
    let d = decode(batches.as_bytes()).unwrap();
    assert_eq!(d.requests.len(), 1);
    assert_eq!(d.requests[0].resource_spans.len(), 2);
    assert_eq!(spans_of(&d).len(), 2);
    assert!(spans_of(&d)
        .iter()
        .all(|s| s.trace_id == trace_bytes() && s.kind == 2));
    assert!(d.empty_reason(true).is_none());
    for inner in [
        format!(r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{s}]}}]}}]}}"#),
        format!(r#"{{"batches":[{{"scopeSpans":[{{"spans":[{s}]}}]}}]}}"#),
    ] {
        let v2 = format!(r#"{{"status":"complete","trace":{inner},"message":""}}"#);
        let d = decode(v2.as_bytes()).unwrap();
        assert_eq!(spans_of(&d).len(), 1, "{v2}");
    }
    // Tempo's "not found" answer has no spans: wrong as a file, fine as a body.
    let d = decode(br#"{"trace":{}}"#).unwrap();
    assert!(d.empty_reason(true).is_some());
    assert!(d.empty_reason(false).is_none());
    // Positions name the wrapper.
    let v2 = format!(
        r#"{{"trace":{{"batches":[{{"scopeSpans":[{{"spans":[{}]}}]}}]}}}}"#,
        span("w", r#","kind":7.5"#)
    );
    let d = decode(v2.as_bytes()).unwrap();
    assert!(
        d.rejected[0]
            .reason
            .contains("(trace.batches[0].scopeSpans[0].spans[0])"),
        "{:?}",
        d.rejected
    );
}

// 5. numbers where strings are expected, and the reverse.
#[test]
fn numbers_and_strings_both_ways() {
    let s = one(&request(&[span(
        "a",
        r#","startTimeUnixNano":1700000000000000000,"endTimeUnixNano":"1700000000000000001","flags":"1","droppedAttributesCount":"2","droppedEventsCount":3,"droppedLinksCount":4.0,"attributes":[
          {"key":"i1","value":{"intValue":"-42"}},
          {"key":"i2","value":{"intValue":42}},
          {"key":"i3","value":{"intValue":"1e3"}},
          {"key":"d1","value":{"doubleValue":1.5}},
          {"key":"d2","value":{"doubleValue":"2.5"}},
          {"key":"d3","value":{"doubleValue":"NaN"}},
          {"key":"d4","value":{"doubleValue":"-Infinity"}},
          {"key":"d5","value":{"doubleValue":"Infinity"}},
          {"key":"d6","value":{"doubleValue":3}}]"#,
    )]));
    assert_eq!(s.start_time_unix_nano, 1_700_000_000_000_000_000);
    assert_eq!(s.end_time_unix_nano, 1_700_000_000_000_000_001);
    assert_eq!(
        (
            s.flags,
            s.dropped_attributes_count,
            s.dropped_events_count,
            s.dropped_links_count
        ),
        (1, 2, 3, 4)
    );
    let a = &s.attributes;
    assert_eq!(attr(a, "i1"), Some(&V::IntValue(-42)));
    assert_eq!(attr(a, "i2"), Some(&V::IntValue(42)));
    assert_eq!(attr(a, "i3"), Some(&V::IntValue(1000)));
    assert_eq!(attr(a, "d1"), Some(&V::DoubleValue(1.5)));
    assert_eq!(attr(a, "d2"), Some(&V::DoubleValue(2.5)));
    assert!(matches!(attr(a, "d3"), Some(V::DoubleValue(f)) if f.is_nan()));
    assert_eq!(attr(a, "d4"), Some(&V::DoubleValue(f64::NEG_INFINITY)));
    assert_eq!(attr(a, "d5"), Some(&V::DoubleValue(f64::INFINITY)));
    assert_eq!(attr(a, "d6"), Some(&V::DoubleValue(3.0)));
    // Values that are no number reject the span, naming field and value.
    for (extra, want) in [
        (
            r#","startTimeUnixNano":"soon""#,
            "startTimeUnixNano \"soon\"",
        ),
        (r#","endTimeUnixNano":-5"#, "endTimeUnixNano -5"),
        (r#","flags":4294967296"#, "flags 4294967296"),
        (
            r#","attributes":[{"key":"n","value":{"intValue":"4.5"}}]"#,
            "attribute `n`: intValue \"4.5\"",
        ),
        (
            r#","attributes":[{"key":"n","value":{"doubleValue":"fast"}}]"#,
            "attribute `n`: doubleValue \"fast\"",
        ),
        (
            r#","events":[{"name":"e","timeUnixNano":{}}]"#,
            "event 0 `e`: timeUnixNano an object",
        ),
    ] {
        let d = decode(request(&[span("bad", extra), span("ok", "")]).as_bytes()).unwrap();
        assert_eq!(spans_of(&d).len(), 1, "{extra}");
        assert!(d.rejected[0].reason.contains(want), "{:?}", d.rejected);
    }
}

// 6. AnyValue in all its forms, and the rest of the span.
#[test]
fn any_value_forms_and_span_fields() {
    let s = one(&request(&[span(
        "full",
        r#","traceState":"a=b","kind":1,"droppedAttributesCount":0,"attributes":[
          {"key":"s","value":{"stringValue":"x"}},
          {"key":"b","value":{"boolValue":false}},
          {"key":"bytes","value":{"bytesValue":"AQID"}},
          {"key":"arr","value":{"arrayValue":{"values":[{"stringValue":"a"},{"intValue":"1"},{}]}}},
          {"key":"kv","value":{"kvlistValue":{"values":[{"key":"inner","value":{"doubleValue":0.5}}]}}},
          {"key":"empty","value":{}},
          {"key":"novalue"},
          {"key":"nulls","value":{"stringValue":null}},
          {"key":"future","value":{"stringValueStrindex":3,"stringValue":"y"}}],
          "unknownField":{"deep":[1,2,{"x":null}]}"#,
    )]));
    let a = &s.attributes;
    assert_eq!(s.trace_state, "a=b");
    assert_eq!(attr(a, "s"), Some(&V::StringValue("x".into())));
    assert_eq!(attr(a, "b"), Some(&V::BoolValue(false)));
    assert_eq!(attr(a, "bytes"), Some(&V::BytesValue(vec![1, 2, 3])));
    let Some(V::ArrayValue(arr)) = attr(a, "arr") else {
        panic!("{a:?}")
    };
    assert_eq!(arr.values.len(), 3);
    assert_eq!(arr.values[1].value, Some(V::IntValue(1)));
    assert_eq!(arr.values[2].value, None);
    let Some(V::KvlistValue(kv)) = attr(a, "kv") else {
        panic!("{a:?}")
    };
    assert_eq!(kv.values[0].key, "inner");
    assert_eq!(attr(&kv.values, "inner"), Some(&V::DoubleValue(0.5)));
    let find = |k: &str| a.iter().find(|kv| kv.key == k).unwrap();
    assert_eq!(find("empty").value, Some(AnyValue { value: None }));
    assert_eq!(find("novalue").value, None);
    assert_eq!(find("nulls").value, Some(AnyValue { value: None }));
    assert_eq!(attr(a, "future"), Some(&V::StringValue("y".into())));
    // A resource whose attribute is wrong takes its spans with it.
    let json = format!(
        r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"k","value":{{"bytesValue":"***"}}}}]}},"scopeSpans":[{{"spans":[{}]}}]}},{{"scopeSpans":[{{"spans":[{}]}}]}}]}}"#,
        span("lost", ""),
        span("kept", "")
    );
    let d = decode(json.as_bytes()).unwrap();
    assert_eq!(spans_of(&d).len(), 1);
    assert_eq!(d.rejected[0].spans, 1);
    let r = &d.rejected[0].reason;
    assert!(
        r.contains("resourceSpans[0]") && r.contains("bytesValue"),
        "{r}"
    );
}

#[test]
fn zero_spans_says_why() {
    // snake_case: a message naming the keys, saying lowerCamelCase.
    let d = decode(br#"{"resource_spans":[{"scope_spans":[]}]}"#).unwrap();
    let why = d.empty_reason(false).unwrap();
    assert!(why.contains("`resource_spans` (top level)"), "{why}");
    assert!(why.contains("lowerCamelCase"), "{why}");
    let d = decode(br#"{"resourceSpans":[{"scope_spans":[{"spans":[]}]}]}"#).unwrap();
    let why = d.empty_reason(false).unwrap();
    assert!(why.contains("`scope_spans` (resourceSpans[0])"), "{why}");
    // Another format altogether.
    let d = decode(br#"{"data":[{"traceID":"x","spans":[]}]}"#).unwrap();
    let why = d.empty_reason(false).unwrap();
    assert!(
        why.contains("`data`") && why.contains("another trace format"),
        "{why}"
    );
    // Empty but well-formed: fine as a body; a file needs `resourceSpans`.
    let d = decode(b"{}").unwrap();
    assert!(d.empty_reason(false).is_none());
    assert!(d.empty_reason(true).unwrap().contains("no `resourceSpans`"));
    let d = decode(br#"{"resourceSpans":[]}"#).unwrap();
    assert!(d.empty_reason(true).is_none());
    // Unknown keys next to spans are ignored (proto3 JSON).
    let d =
        decode(format!(r#"{{"extra":1,{}"#, &request(&[span("a", "")])[1..]).as_bytes()).unwrap();
    assert_eq!(spans_of(&d).len(), 1);
    assert!(d.empty_reason(true).is_none());
}

#[test]
fn arrays_of_requests_and_structural_errors() {
    let one_req = request(&[span("a", "")]);
    let d = decode(format!("[{one_req},{one_req}]").as_bytes()).unwrap();
    assert_eq!(d.requests.len(), 2);
    let (merged, _) = d.into_request();
    assert_eq!(merged.resource_spans.len(), 2);
    let d = decode(
        format!(
            r#"[{one_req},{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{}]}}]}}]}}]"#,
            span("b", r#","kind":"X""#)
        )
        .as_bytes(),
    )
    .unwrap();
    assert!(
        d.rejected[0].reason.contains("([1].resourceSpans[0]"),
        "{:?}",
        d.rejected
    );
    // A JSON type where a list belongs fails the document, with a position.
    let e = decode(br#"{"resourceSpans":[{"scopeSpans":[{"spans":5}]}]}"#).unwrap_err();
    assert!(e.to_string().contains("list of spans"), "{e}");
    assert!(decode(br#"{"resourceSpans":[{"#).is_err());
    assert!(decode(b"[1]").is_err());
    assert!(decode(b"{} x").is_err());
    // Invalid UTF-8 is an error with its position too.
    let e = decode(b"{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[\n{\"name\":\"\xff\"}]}]}]}")
        .unwrap_err();
    assert_eq!(e.line(), 2, "{e}");
}

#[test]
fn a_key_filter_drops_attributes() {
    struct OnlyGenAi;
    impl KeyFilter for OnlyGenAi {
        fn keep(&self, at: AttrsOf, key: &str) -> bool {
            at == AttrsOf::Resource || key.starts_with("gen_ai.")
        }
    }
    let json = request(&[span(
        "a",
        r#","attributes":[{"key":"gen_ai.tool.name","value":{"stringValue":"t"}},{"key":"http.url","value":{"intValue":"not checked"}},{"value":{"stringValue":"v"},"key":"late"}]"#,
    )]);
    let d = decode_with(json.as_bytes(), &OnlyGenAi).unwrap();
    assert!(d.rejected.is_empty(), "{:?}", d.rejected);
    let s = &spans_of(&d)[0];
    let keys: Vec<&str> = s.attributes.iter().map(|kv| kv.key.as_str()).collect();
    assert_eq!(keys, ["gen_ai.tool.name"]);
    let rs = &d.requests[0].resource_spans[0];
    assert_eq!(rs.resource.as_ref().unwrap().attributes.len(), 1);

    // With `keep_json`, a dropped key's string value holding JSON is
    // kept; other values (plain text, a JSON-looking number, an array
    // value, a string replaced by a later member) are not.
    struct OrJson;
    impl KeyFilter for OrJson {
        fn keep(&self, at: AttrsOf, key: &str) -> bool {
            OnlyGenAi.keep(at, key)
        }
        fn keep_json(&self, at: AttrsOf) -> bool {
            at == AttrsOf::Span
        }
    }
    let json = request(&[span(
        "a",
        r#","attributes":[{"key":"m","value":{"stringValue":" [{\"role\":\"user\"}]"}},{"key":"plain","value":{"stringValue":"hi {"}},{"key":"n","value":{"intValue":"7"}},{"key":"arr","value":{"arrayValue":{"values":[{"stringValue":"{}"}]}}},{"key":"later","value":{"stringValue":"{}","boolValue":true}},{"value":{"stringValue":"{\"a\":1}"},"key":"value.first"},{"key":"nul","value":{"stringValue":"{}","intValue":null}},{"key":"gen_ai.x","value":{"stringValue":"kept"}}]"#,
    )]);
    let d = decode_with(json.as_bytes(), &OrJson).unwrap();
    assert!(d.rejected.is_empty(), "{:?}", d.rejected);
    let spans = spans_of(&d);
    let kept: Vec<(&str, &AnyValue)> = spans[0]
        .attributes
        .iter()
        .map(|kv| (kv.key.as_str(), kv.value.as_ref().unwrap()))
        .collect();
    let text = |t: &str| AnyValue {
        value: Some(any_value::Value::StringValue(t.into())),
    };
    assert_eq!(
        kept,
        [
            ("m", &text(" [{\"role\":\"user\"}]")),
            ("value.first", &text("{\"a\":1}")),
            ("nul", &text("{}")),
            ("gen_ai.x", &text("kept")),
        ]
    );
}

#[test]
fn matches_the_serde_derive_on_its_own_output() {
    // What the generated serde writes (hex ids, integer enums, int64 as
    // strings) decodes to the same request.
    let json = request(&[span(
        "a",
        r#","parentSpanId":"0102030405060708","kind":3,"startTimeUnixNano":"5","endTimeUnixNano":"9","attributes":[{"key":"x","value":{"arrayValue":{"values":[{"stringValue":"a"}]}}}],"events":[{"timeUnixNano":"6","name":"e","attributes":[],"droppedAttributesCount":0}],"links":[],"status":{"code":2,"message":"m"},"flags":257"#,
    )]);
    let ours = decode(json.as_bytes()).unwrap().into_request().0;
    let derive: PbRequest = serde_json::from_str(&json).unwrap();
    assert_eq!(ours.to_proto(), derive);
    let again = serde_json::to_string(&derive).unwrap();
    assert_eq!(
        decode(again.as_bytes())
            .unwrap()
            .into_request()
            .0
            .to_proto(),
        derive
    );
    // Unset messages are written as `null` and read back as unset.
    let mut req = derive.clone();
    req.resource_spans[0].resource = None;
    req.resource_spans[0].scope_spans[0].scope = None;
    let sp = &mut req.resource_spans[0].scope_spans[0].spans[0];
    sp.status = None;
    sp.attributes.push(KeyValue {
        key: "unset".into(),
        value: None,
        ..Default::default()
    });
    let text = serde_json::to_string(&req).unwrap();
    assert!(text.contains(r#""status":null"#), "{text}");
    let old: PbRequest = serde_json::from_str(&text).unwrap();
    assert_eq!(old, req);
    assert_eq!(
        decode(text.as_bytes()).unwrap().into_request().0.to_proto(),
        req
    );
    let nulls = request(&[span(
        "n",
        r#","attributes":[{"key":"a","value":{"arrayValue":null,"kvlistValue":null}}]"#,
    )]);
    let old: PbRequest = serde_json::from_str(&nulls).unwrap();
    assert_eq!(
        decode(nulls.as_bytes())
            .unwrap()
            .into_request()
            .0
            .to_proto(),
        old
    );
}

// 5. Issue 30: Jaeger v3's wrapper, and a type error losing its unit only.
#[test]
fn jaeger_v3_result_wrapper() {
    let inner = request(&[span("GET /", "")]);
    // One message of the v3 API's HTTP stream (GetTrace / FindTraces).
    let d = decode(format!(r#"{{"result":{inner}}}"#).as_bytes()).unwrap();
    assert_eq!(spans_of(&d).len(), 1);
    assert!(d.empty_reason(true).is_none());
    let bad = format!(
        r#"{{"result":{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{}]}}]}}]}}}}"#,
        span("w", r#","kind":7.5"#)
    );
    let d = decode(bad.as_bytes()).unwrap();
    assert!(
        d.rejected[0].reason.contains("(result.resourceSpans[0]"),
        "{:?}",
        d.rejected
    );
}

#[test]
fn a_json_type_error_loses_only_the_scope_or_resource_holding_it() {
    let good = span("kept", "");
    let doc = format!(
        r#"{{"resourceSpans":[
            {{"resource":{{}},"scopeSpans":[{{"scope":{{"name":"a"}},"spans":[{good}]}},{{"scope":{{"name":"b"}},"spans":5}}]}},
            {{"resource":{{}},"scopeSpans":7}},
            {{"resource":{{}},"scopeSpans":[{{"spans":[{good}]}}]}}]}}"#
    );
    assert!(decode(doc.as_bytes()).is_err());
    let d = super::salvage(doc.as_bytes(), &KeepAll).unwrap();
    assert_eq!(spans_of(&d).len(), 2, "{:?}", d.rejected);
    let reasons: Vec<&str> = d.rejected.iter().map(|r| r.reason.as_str()).collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(
        reasons[0].starts_with("resourceSpans[0].scopeSpans[1] rejected"),
        "{reasons:?}"
    );
    assert!(
        reasons[1].starts_with("resourceSpans[1] rejected"),
        "{reasons:?}"
    );
    // In an array of requests, and under Tempo's wrapper.
    let one_req = request(std::slice::from_ref(&good));
    let doc =
        format!(r#"[{one_req},{{"trace":{{"batches":[{{"scopeSpans":[{{"spans":"x"}}]}}]}}}}]"#);
    let d = super::salvage(doc.as_bytes(), &KeepAll).unwrap();
    assert_eq!(spans_of(&d).len(), 1);
    assert!(
        d.rejected[0]
            .reason
            .starts_with("request #2 of the array: trace.batches[0].scopeSpans[0] rejected"),
        "{:?}",
        d.rejected
    );
    // Not JSON: nothing to salvage.
    assert!(super::salvage(br#"{"resourceSpans":[{"#, &KeepAll).is_none());
}
