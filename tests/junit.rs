//! `--format junit`: the report must pass the JUnit schema CI systems
//! validate against (docs/formats.md, "JUnit XML"), and say what the JSONL
//! report says.

use std::fs;

use roxmltree::{Document, Node};
use serde_json::Value;

use crate::util::{toolscore, TempDir};

/// What the schema allows for one element: its child elements, its
/// attributes, which of them are required, and whether it may hold text.
struct Element {
    name: &'static str,
    children: &'static [&'static str],
    attributes: &'static [&'static str],
    required: &'static [&'static str],
    text: bool,
}

/// The schema's rules, as our own table (see docs/formats.md).
const SCHEMA: &[Element] = &[
    Element {
        name: "testsuites",
        children: &["testsuite"],
        // No `skipped` here: only `<testsuite>` has one.
        attributes: &["name", "time", "tests", "failures", "disabled", "errors"],
        required: &[],
        text: false,
    },
    Element {
        name: "testsuite",
        children: &[
            "testsuite",
            "properties",
            "testcase",
            "system-out",
            "system-err",
        ],
        attributes: &[
            "name",
            "tests",
            "failures",
            "errors",
            "time",
            "disabled",
            "skipped",
            "skips",
            "timestamp",
            "hostname",
            "id",
            "package",
            "assertions",
            "file",
            "skip",
            "log",
            "url",
        ],
        required: &["tests"],
        text: false,
    },
    Element {
        name: "properties",
        children: &["property"],
        attributes: &[],
        required: &[],
        text: false,
    },
    Element {
        name: "property",
        children: &[],
        attributes: &["name", "value"],
        required: &["name", "value"],
        text: false,
    },
    Element {
        name: "testcase",
        // No `<properties>` inside a testcase.
        children: &["skipped", "error", "failure", "system-out", "system-err"],
        attributes: &[
            "name",
            "assertions",
            "time",
            "timestamp",
            "classname",
            "status",
            "class",
            "file",
            "line",
            "log",
            "group",
            "url",
        ],
        required: &["name"],
        text: false,
    },
    Element {
        name: "failure",
        children: &[],
        attributes: &["type", "message"],
        required: &[],
        text: true,
    },
    Element {
        name: "error",
        children: &[],
        attributes: &["type", "message"],
        required: &[],
        text: true,
    },
    Element {
        name: "skipped",
        children: &[],
        attributes: &["type", "message"],
        required: &[],
        text: true,
    },
    Element {
        name: "system-out",
        children: &[],
        attributes: &[],
        required: &[],
        text: true,
    },
    Element {
        name: "system-err",
        children: &[],
        attributes: &[],
        required: &[],
        text: true,
    },
];

const COUNTS: &[&str] = &["tests", "failures", "errors", "skipped", "disabled"];

fn rule(name: &str) -> Option<&'static Element> {
    SCHEMA.iter().find(|e| e.name == name)
}

fn count_attr(node: Node, attr: &str) -> Option<usize> {
    node.attribute(attr).and_then(|v| v.parse().ok())
}

fn check_node(node: Node, problems: &mut Vec<String>) {
    let name = node.tag_name().name();
    let at = format!("<{name}> at byte {}", node.range().start);
    let Some(rule) = rule(name) else {
        problems.push(format!("{at}: element not in the schema"));
        return;
    };
    if node.tag_name().namespace().is_some() {
        problems.push(format!("{at}: namespaced"));
    }
    for a in node.attributes() {
        if !rule.attributes.contains(&a.name()) {
            problems.push(format!("{at}: attribute {} not allowed", a.name()));
        }
        if COUNTS.contains(&a.name()) && a.value().parse::<usize>().is_err() {
            problems.push(format!("{at}: {}={:?} is not a count", a.name(), a.value()));
        }
        if a.name() == "time" && a.value().parse::<f64>().is_err() {
            problems.push(format!("{at}: time={:?} is not a number", a.value()));
        }
    }
    for r in rule.required {
        if node.attribute(*r).is_none() {
            problems.push(format!("{at}: required attribute {r} missing"));
        }
    }
    for child in node.children() {
        if child.is_element() {
            if !rule.children.contains(&child.tag_name().name()) {
                problems.push(format!(
                    "{at}: <{}> not allowed inside",
                    child.tag_name().name()
                ));
            }
            check_node(child, problems);
        } else if child.is_text() && !rule.text && !child.text().unwrap_or("").trim().is_empty() {
            problems.push(format!("{at}: text not allowed"));
        }
    }
    // What readers show as totals must add up.
    let kids = |n: &'static str| node.children().filter(move |c| c.has_tag_name(n));
    if name == "testsuite" {
        let cases: Vec<Node> = kids("testcase").collect();
        let with = |status: &str| {
            cases
                .iter()
                .filter(|c| c.children().any(|k| k.has_tag_name(status)))
                .count()
        };
        for (attr, n) in [
            ("tests", cases.len()),
            ("failures", with("failure")),
            ("errors", with("error")),
            ("skipped", with("skipped")),
        ] {
            if let Some(v) = count_attr(node, attr) {
                if v != n {
                    problems.push(format!("{at}: {attr}={v} but {n} testcase(s)"));
                }
            }
        }
    }
    if name == "testsuites" {
        for attr in ["tests", "failures", "errors"] {
            let sum: usize = kids("testsuite").filter_map(|s| count_attr(s, attr)).sum();
            if let Some(v) = count_attr(node, attr) {
                if v != sum {
                    problems.push(format!("{at}: {attr}={v} but the suites say {sum}"));
                }
            }
        }
    }
}

/// Checks `xml` against the schema's rules; returns the parsed document.
pub fn check_schema(xml: &str) -> Result<Document<'_>, Vec<String>> {
    let doc = Document::parse(xml).map_err(|e| vec![format!("not well-formed XML: {e}")])?;
    let root = doc.root_element();
    let mut problems = Vec::new();
    if !matches!(root.tag_name().name(), "testsuites" | "testsuite") {
        problems.push(format!("root is <{}>", root.tag_name().name()));
    }
    check_node(root, &mut problems);
    if problems.is_empty() {
        Ok(doc)
    } else {
        Err(problems)
    }
}

fn testcases<'a>(doc: &'a Document) -> Vec<Node<'a, 'a>> {
    doc.descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect()
}

fn child_text<'a>(node: Node<'a, 'a>, tag: &str) -> Option<(Node<'a, 'a>, String)> {
    node.children()
        .find(|c| c.has_tag_name(tag))
        .map(|c| (c, c.text().unwrap_or("").to_string()))
}

#[test]
fn the_check_rejects_what_strict_readers_reject() {
    let ok = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="t" tests="2" failures="1" errors="0">
  <testsuite name="t" tests="2" failures="1" errors="0" skipped="0">
    <testcase name="a"/>
    <testcase name="b" classname="t"><failure message="m">why</failure><system-out>x</system-out></testcase>
  </testsuite>
</testsuites>"#;
    assert!(check_schema(ok).is_ok(), "{:?}", check_schema(ok).err());
    let bad = [
        // Scores as testcase properties (what toolscore wrote before quick-junit).
        (
            ok.replace(
                r#"<testcase name="a"/>"#,
                r#"<testcase name="a"><properties><property name="s" value="1"/></properties></testcase>"#,
            ),
            "<properties> not allowed inside",
        ),
        // quick-junit's own root attribute.
        (
            ok.replace(r#"<testsuites name="t""#, r#"<testsuites name="t" skipped="0""#),
            "attribute skipped not allowed",
        ),
        (
            ok.replace(r#"<testcase name="a"/>"#, "<testcase/>"),
            "required attribute name missing",
        ),
        (
            ok.replace(r#"tests="2" failures="1" errors="0" skipped"#, r#"tests="3" failures="1" errors="0" skipped"#),
            "tests=3 but 2 testcase(s)",
        ),
        (ok.replace("<failure message", "<fail message").replace("</failure>", "</fail>"), "<fail> not allowed"),
        (ok.replace("why", "why\u{1}"), "not well-formed"),
    ];
    for (xml, want) in bad {
        let problems = check_schema(&xml).err().unwrap_or_default();
        assert!(
            problems.iter().any(|p| p.contains(want)),
            "{want:?} not found in {problems:?} for\n{xml}"
        );
    }
}

#[test]
fn junit_report_passes_the_schema_and_says_what_jsonl_says() {
    let dir = TempDir::new("junit");
    // The sample fixture, plus a case no trace matches, named with
    // characters XML must escape (and one it cannot hold at all).
    let mut fixture = fs::read_to_string("sample-traces/expected.jsonl").unwrap();
    fixture.push_str(
        "\n{\"id\":\"ghost <&\\\"'>\\u0007\",\"trace_id\":\"00000000000000000000000000000001\",\"expected_tools\":[\"x\"]}\n",
    );
    let fixture_path = dir.path().join("expected.jsonl");
    fs::write(&fixture_path, fixture).unwrap();
    let broken = dir.path().join("broken.json");
    fs::write(&broken, "{\"resourceSpans\": [").unwrap();
    let run = |format: &str| {
        toolscore(&[
            "replay",
            "sample-traces",
            broken.to_str().unwrap(),
            "--expected",
            fixture_path.to_str().unwrap(),
            "--format",
            format,
            "-q",
        ])
    };
    let junit = run("junit");
    assert_eq!(junit.status.code(), Some(2), "a rejected input: exit 2");
    let xml = String::from_utf8(junit.stdout).unwrap();
    let doc = check_schema(&xml).unwrap_or_else(|p| panic!("{p:#?}\n{xml}"));

    let jsonl = run("jsonl");
    let rows: Vec<Value> = String::from_utf8_lossy(&jsonl.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let evaluations: Vec<&Value> = rows.iter().filter(|r| r["type"] == "evaluation").collect();
    assert!(evaluations.len() >= 5, "{rows:?}");
    let count = |t: &str| rows.iter().filter(|r| r["type"] == t).count();
    let (unmatched, rejected) = (count("unmatched_case"), count("rejected"));
    assert!(unmatched >= 2 && rejected == 1, "{rows:?}");
    let cases = testcases(&doc);
    // One testcase per (case, trace), per unmatched case, per rejected input.
    assert_eq!(
        cases.len(),
        evaluations.len() + unmatched + rejected,
        "{xml}"
    );
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .unwrap();
    let failed = evaluations.iter().filter(|e| e["pass"] == false).count();
    assert!(failed >= 2);
    assert_eq!(
        suite.attribute("failures"),
        Some(&*(failed + unmatched).to_string())
    );
    assert_eq!(suite.attribute("errors"), Some("1"));

    for e in &evaluations {
        let target = match e.get("session") {
            Some(s) => format!(
                "session {} ({} traces)",
                s["id"].as_str().unwrap(),
                s["trace_ids"].as_array().unwrap().len()
            ),
            None => e["trace_id"].as_str().unwrap().to_string(),
        };
        let name = format!("{} ({target})", e["case"].as_str().unwrap());
        let case = cases
            .iter()
            .find(|c| c.attribute("name") == Some(name.as_str()))
            .unwrap_or_else(|| panic!("no testcase {name} in\n{xml}"));
        assert_eq!(case.attribute("classname"), Some("toolscore"));
        let explanation = e["explanation"].as_str().unwrap();
        let (_, out) = child_text(*case, "system-out").expect("scores in system-out");
        assert!(out.contains("tool_correctness: "), "{out}");
        assert!(out.contains(explanation), "{out} lacks {explanation}");
        match child_text(*case, "failure") {
            Some((f, text)) => {
                assert_eq!(e["pass"], false, "{name} passed but has a failure");
                assert!(text.contains(explanation), "{text} lacks {explanation}");
                let message = f.attribute("message").unwrap();
                assert!(message.starts_with("tool_correctness: "), "{message}");
            }
            None => assert_eq!(e["pass"], true, "{name} failed without a failure"),
        }
    }

    // The unmatched case: its name survives escaping; the bell is dropped.
    let ghost = cases
        .iter()
        .find(|c| c.attribute("name") == Some("ghost <&\"'>"))
        .unwrap_or_else(|| panic!("{xml}"));
    let (f, _) = child_text(*ghost, "failure").unwrap();
    let message = f.attribute("message").unwrap_or_default();
    assert!(
        message.starts_with("no trace matched this case: looked for trace_id "),
        "{message}"
    );

    // The rejected input is an error, named after the file.
    let rejected = cases
        .iter()
        .find(|c| c.attribute("classname") == Some("toolscore.input"))
        .unwrap();
    assert_eq!(rejected.attribute("name"), broken.to_str());
    let (err, _) = child_text(*rejected, "error").unwrap();
    assert!(err.attribute("message").unwrap().contains("broken.json"));
}
