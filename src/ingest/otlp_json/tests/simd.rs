//! simd-json against serde_json: the same documents taken, the same
//! results.

use super::super::{decode_serde, decode_simd, decode_with};
use super::{request, span};
use crate::ingest::projection::{AttrsOf, KeepAll, KeyFilter};

/// simd-json and serde_json decode every document alike: the corpus
/// lines as they are and mutated (bad escapes, control characters,
/// odd numbers, cuts, stray bytes). When serde_json rejects a document
/// simd-json must fail too (so serde_json's error is the one given);
/// when both decode it, the results are the same.
#[test]
fn simd_json_decodes_as_serde_json_does() {
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/corpus");
    let mut lines: Vec<Vec<u8>> = Vec::new();
    for dir in std::fs::read_dir(&corpus).unwrap() {
        let path = dir.unwrap().path().join("traces.jsonl");
        if let Ok(text) = std::fs::read(&path) {
            lines.extend(
                text.split(|&b| b == b'\n')
                    .filter(|l| !l.is_empty())
                    .map(<[u8]>::to_vec),
            );
        }
    }
    assert!(lines.len() > 50, "{} corpus lines", lines.len());
    const PIECES: &[&[u8]] = &[
        b"\\ud800",
        b"\\udc00x",
        b"\\ud83d\\ude00",
        b"\\u0000",
        b"\\x",
        b"\x01",
        b"\x7f",
        b"\xff",
        b"\xc3",
        b"\"",
        b"\\",
        b"1e400",
        b"-0",
        b"18446744073709551616",
        b"-9223372036854775809",
        b"1.0e-7",
        b"0.1",
        b"01",
        b" ",
        b"\t\n",
        b"{",
        b"}",
        b"[",
        b"]",
        b",",
        b":",
        b"null",
        b"\"k\":1,",
        b"true",
        b"NaN",
        b"\xe2\x80\xa8",
    ];
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let filter = KeepOnlyGenAi;
    let (mut same, mut both_failed) = (0, 0);
    for round in 0..4000 {
        let mut doc = lines[next(lines.len())].clone();
        if round % 4 != 0 {
            for _ in 0..1 + next(3) {
                let at = next(doc.len() + 1);
                let piece = PIECES[next(PIECES.len())];
                let (end, with): (usize, &[u8]) = match next(3) {
                    0 => (at, piece),
                    1 => ((at + 1 + next(8)).min(doc.len()), b""),
                    _ => ((at + 1).min(doc.len()), piece),
                };
                doc.splice(at..end, with.iter().copied());
            }
        }
        let filters: [&dyn KeyFilter; 2] = [&KeepAll, &filter];
        for f in filters {
            let serde = decode_serde(&doc, f);
            let simd = decode_simd(&doc, f);
            match (&serde, &simd) {
                (Ok(a), Some(b)) => {
                    assert_eq!(
                        format!("{a:?}"),
                        format!("{b:?}"),
                        "{}",
                        String::from_utf8_lossy(&doc)
                    );
                    same += 1;
                }
                (Err(_), None) => both_failed += 1,
                (Ok(_), None) => assert!(round % 4 != 0, "simd-json failed on a corpus line"),
                (Err(e), Some(_)) => panic!(
                    "serde_json rejects ({e}) what simd-json takes: {}",
                    String::from_utf8_lossy(&doc)
                ),
            }
        }
    }
    assert!(
        same > 1000 && both_failed > 1000,
        "{same} same, {both_failed} rejected by both"
    );
}

/// Nesting around both parsers' limits: taken by both, by serde_json
/// alone, by neither.
#[test]
fn simd_json_and_serde_json_nest_alike() {
    let mut kinds = std::collections::BTreeSet::new();
    // Each level is three containers deep, under about eight of the request.
    for depth in [1, 10, 29, 30, 31, 32, 38, 39, 40, 41, 42, 500, 5000] {
        let value = format!(
            "{}{{\"stringValue\":\"x\"}}{}",
            r#"{"arrayValue":{"values":["#.repeat(depth),
            "]}}".repeat(depth)
        );
        let doc = request(&[span(
            "deep",
            &format!(r#","attributes":[{{"key":"k","value":{value}}}]"#),
        )]);
        let serde = decode_serde(doc.as_bytes(), &KeepAll);
        let simd = decode_simd(doc.as_bytes(), &KeepAll);
        kinds.insert((serde.is_ok(), simd.is_some()));
        match (&serde, simd) {
            (Ok(a), Some(b)) => assert_eq!(format!("{a:?}"), format!("{b:?}")),
            (_, None) => {}
            (Err(e), Some(_)) => {
                panic!("depth {depth}: serde_json rejects ({e}), simd-json takes it")
            }
        }
        assert_eq!(serde.is_ok(), decode_with(doc.as_bytes(), &KeepAll).is_ok());
    }
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        [(false, false), (true, false), (true, true)]
    );
}

/// Span attributes read straight from the tape (the usual shape) and
/// those that go to the visitors (any other shape, a null, a value that
/// does not convert) give what serde_json's decoding gives, kept or
/// dropped, in their order.
#[test]
fn span_attributes_from_the_tape_as_from_serde_json() {
    let attrs = [
        r#"{"key":"gen_ai.a","value":{"stringValue":"text"}}"#,
        r#"{"key":"gen_ai.b","value":{"intValue":"42"}}"#,
        r#"{"key":"gen_ai.c","value":{"intValue":7}}"#,
        r#"{"key":"gen_ai.d","value":{"intValue":"x"}}"#,
        r#"{"key":"gen_ai.e","value":{"boolValue":true}}"#,
        r#"{"key":"gen_ai.f","value":{"boolValue":"false"}}"#,
        r#"{"key":"gen_ai.g","value":{"boolValue":1}}"#,
        r#"{"key":"gen_ai.h","value":{"doubleValue":"NaN"}}"#,
        r#"{"key":"gen_ai.i","value":{"doubleValue":1.5}}"#,
        r#"{"key":"gen_ai.j","value":{"stringValue":null}}"#,
        r#"{"key":"gen_ai.k","value":{"stringValue":3}}"#,
        r#"{"key":"gen_ai.l","value":{"other":"x"}}"#,
        r#"{"key":"gen_ai.m","value":{"arrayValue":{"values":[{"stringValue":"x"}]}}}"#,
        r#"{"value":{"stringValue":"first"},"key":"gen_ai.n"}"#,
        r#"{"key":"gen_ai.o","value":{}}"#,
        r#"{"key":"gen_ai.p","value":null}"#,
        r#"{"key":"gen_ai.q"}"#,
        r#"{"key":5,"value":{"stringValue":"x"}}"#,
        r#"{"key":"other.a","value":{"stringValue":"{\"json\": 1}"}}"#,
        r#"{"key":"other.b","value":{"stringValue":" [1]"}}"#,
        r#"{"key":"other.c","value":{"stringValue":"plain"}}"#,
        r#"{"key":"other.d","value":{"intValue":"{"}}"#,
        r#"{"key":"other.e","value":{"stringValue":null}}"#,
        r#"{"key":"other.f","value":{"kvlistValue":{"values":[]}}}"#,
        r#"{"key":"gen_ai.r","value":{"stringValue":"a\"b\u00e9"}}"#,
        r#"{"key":"gen_ai.s","value":{"stringValue":"x"},"extra":1}"#,
    ];
    let filters: [&dyn KeyFilter; 3] = [&KeepAll, &KeepOnlyGenAi, &GenAiEverywhere];
    for n in [0, 1, 3, attrs.len()] {
        let list = attrs[..n].join(",");
        let with_events = format!(
            r#","attributes":[{list}],"events":[{{"name":"e","attributes":[{list}]}}],"links":[{{"traceId":"{}","spanId":"{}","attributes":[{list}]}}]"#,
            super::TRACE_HEX,
            super::SPAN_HEX
        );
        for extra in [with_events, r#","attributes":null"#.into()] {
            let spans = request(&[span("s", &extra), span("t", &extra)]);
            let resource = format!(
                r#"{{"resource":{{"attributes":[{list}]}},"scopeSpans":[{{"scope":{{"name":"lib","attributes":[{list}]}},"spans":["#
            );
            let doc = spans.replacen(r#"{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeSpans":[{"scope":{"name":"lib"},"spans":["#, &resource, 1);
            assert!(
                n == 0 || doc != spans,
                "the resource and scope hold the list"
            );
            for f in filters {
                let serde = decode_serde(doc.as_bytes(), f).expect("serde_json decodes it");
                let simd = decode_simd(doc.as_bytes(), f).expect("simd-json decodes it");
                assert_eq!(format!("{serde:?}"), format!("{simd:?}"), "{doc}");
            }
        }
    }
}

/// Keeps attributes under `gen_ai.` wherever they are, and span
/// attributes holding JSON.
struct GenAiEverywhere;
impl KeyFilter for GenAiEverywhere {
    fn keep(&self, _: AttrsOf, key: &str) -> bool {
        key.starts_with("gen_ai.")
    }
    fn keep_json(&self, at: AttrsOf) -> bool {
        at == AttrsOf::Span
    }
}

/// Keeps span attributes under `gen_ai.` and those holding JSON.
struct KeepOnlyGenAi;
impl KeyFilter for KeepOnlyGenAi {
    fn keep(&self, at: AttrsOf, key: &str) -> bool {
        at != AttrsOf::Span || key.starts_with("gen_ai.")
    }
    fn keep_json(&self, at: AttrsOf) -> bool {
        at == AttrsOf::Span
    }
}
