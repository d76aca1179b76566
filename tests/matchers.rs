//! Argument matchers in fixtures (`{"$regex": ...}`, `{"$type": ...}`, ...),
//! through the real binary against the real traces of `sample-traces/`:
//! honoured by `tool_correctness` under the `--args` policies, explained
//! per value when they fail, a bad one rejecting its case alone, and one
//! note when a preset (which compares them literally) scores such a case.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::{json_rows, toolscore, TempDir};

/// `sample-traces/<rel>`.
fn sample(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("sample-traces")
        .join(rel)
        .display()
        .to_string()
}

fn write(dir: &TempDir, name: &str, text: &str) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, text).expect("write fixture");
    p
}

/// What a JSONL replay gave.
struct Run {
    code: i32,
    rows: Vec<Value>,
    stderr: String,
}

impl Run {
    fn of_type(&self, t: &str) -> Vec<&Value> {
        self.rows.iter().filter(|r| r["type"] == t).collect()
    }

    fn case(&self, id: &str) -> &Value {
        self.rows
            .iter()
            .find(|r| r["type"] == "evaluation" && r["case"] == id)
            .unwrap_or_else(|| panic!("no evaluation of {id}: {:?} {}", self.rows, self.stderr))
    }

    fn notes(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| l.starts_with("toolscore: note:"))
            .collect()
    }
}

/// `replay TRACES --expected FIXTURE -f jsonl EXTRA...`.
fn replay(traces: &str, fixture: &Path, extra: &[&str]) -> Run {
    let fixture = fixture.display().to_string();
    let mut args = vec![
        "replay",
        traces,
        "--expected",
        &fixture,
        "-f",
        "jsonl",
        "-q",
    ];
    args.extend_from_slice(extra);
    let out = toolscore(&args);
    Run {
        code: out.status.code().expect("an exit code"),
        rows: json_rows(&out.stdout),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Every matcher, against calls the pydantic-ai traces hold (see
/// `sample-traces/expected.jsonl`); every key is given, so `exact` holds too.
const EVERY_MATCHER: &str = r#"{"id": "weather", "trace_id": "31d90f5c8edb6ba92f3e6727a8ad96ea", "expected_tools": [{"name": "get_weather", "args": {"city": {"$regex": "^Par"}}}, {"name": "get_weather", "args": {"city": {"$type": "string"}}}, {"name": "format_answer", "args": {"lines": {"$contains": "London: 14C rain"}}}]}
{"id": "support", "trace_id": "8a7f18c6fa42f9918229342ebb4c78f8", "expected_tools": [{"name": "search_knowledge_base", "args": {"query": {"$contains": "log in"}, "top_k": {"$type": "integer"}}}, {"name": "create_ticket", "args": {"priority": {"$literal": "high"}, "subject": {"$any": true}}}]}
{"id": "currency", "trace_id": "4b3c362aef21d6f80c97988a8580894d", "expected_tools": [{"name": "convert_currency", "args": {"amount": {"$approx": 100.004, "$tol": 0.01}, "src": {"$regex": "^[A-Z]{3}$"}, "dst": "USD"}}]}
"#;

#[test]
fn every_matcher_holds_on_real_traces_under_each_policy() {
    let dir = TempDir::new("matchers-pass");
    let fixture = write(&dir, "cases.jsonl", EVERY_MATCHER);
    let traces = sample("pydantic-ai/traces.jsonl");
    for policy in [&[][..], &["--args", "exact"], &["--args", "superset"]] {
        let run = replay(&traces, &fixture, policy);
        assert_eq!(run.code, 0, "{policy:?}: {}", run.stderr);
        assert!(run.of_type("rejected").is_empty(), "{}", run.stderr);
        for id in ["weather", "support", "currency"] {
            let r = run.case(id);
            assert_eq!(
                (r["score"].as_f64(), &r["pass"]),
                (Some(1.0), &Value::Bool(true)),
                "{policy:?} {r}"
            );
        }
        // Outputs show the expected arguments as written.
        assert_eq!(
            run.case("weather")["expected_tools"][0]["args"]["city"]["$regex"],
            "^Par"
        );
        assert!(run.notes().is_empty(), "{}", run.stderr);
    }
    // The same fixture with a tolerance too tight fails: the matcher is read.
    let tight = EVERY_MATCHER.replace("\"$tol\": 0.01", "\"$tol\": 0.001");
    let fixture = write(&dir, "tight.jsonl", &tight);
    let run = replay(&traces, &fixture, &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.case("currency")["pass"], false);
    assert!(
        run.case("currency")["explanation"]
            .as_str()
            .unwrap()
            .ends_with(
                "wrong arguments for convert_currency: amount: expected a number within 0.001 of \
                 100.004, got 100"
            ),
        "{}",
        run.case("currency")
    );
}

#[test]
fn a_matcher_that_fails_is_explained_per_value() {
    let dir = TempDir::new("matchers-fail");
    let fixture = write(
        &dir,
        "cases.jsonl",
        r#"{"id": "stock", "trace_id": "9d3d86b5eed352d10a377c77a4f5d12b", "expected_tools": [{"name": "get_stock_price", "args": {"ticker": {"$regex": "^[A-Z]{1,3}$"}}}]}
{"id": "support", "trace_id": "8a7f18c6fa42f9918229342ebb4c78f8", "expected_tools": [{"name": "search_knowledge_base", "args": {"query": {"$regex": "password"}, "top_k": {"$type": "string"}, "lang": {"$any": true}}}, "create_ticket"]}
"#,
    );
    let run = replay(&sample("pydantic-ai/traces.jsonl"), &fixture, &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let stock = run.case("stock");
    assert_eq!(
        (stock["score"].as_f64(), &stock["pass"]),
        (Some(0.0), &Value::Bool(false))
    );
    assert_eq!(
        stock["explanation"],
        "0/1 expected calls matched, 0/1 calls expected; wrong arguments for get_stock_price: \
         ticker: expected a match of /^[A-Z]{1,3}$/, got \"XXXX\""
    );
    let support = run.case("support")["explanation"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        support.ends_with(
            "wrong arguments for search_knowledge_base: lang: missing; query: expected a match \
             of /password/, got \"cannot log in\"; top_k: expected a string, got 3"
        ),
        "{support}"
    );
    // Superset lets expected keys be missing: `lang` is no longer named.
    let run = replay(
        &sample("pydantic-ai/traces.jsonl"),
        &fixture,
        &["--args", "superset"],
    );
    let support = run.case("support")["explanation"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!support.contains("lang"), "{support}");
    assert!(
        support.contains("top_k: expected a string, got 3"),
        "{support}"
    );
}

#[test]
fn a_bad_matcher_rejects_its_case_alone() {
    let dir = TempDir::new("matchers-bad");
    let fixture = write(
        &dir,
        "cases.jsonl",
        r#"{"id": "weather", "trace_id": "31d90f5c8edb6ba92f3e6727a8ad96ea", "expected_tools": [{"name": "get_weather", "args": {"city": {"$regex": "^Par"}}}, "get_weather", "format_answer"]}
{"id": "stock", "trace_id": "9d3d86b5eed352d10a377c77a4f5d12b", "expected_tools": [{"name": "get_stock_price", "args": {"ticker": {"$regex": "("}}}]}
{"id": "typo", "trace_id": "4b3c362aef21d6f80c97988a8580894d", "expected_tools": [{"name": "convert_currency", "args": {"amount": {"$aprox": 100}}}]}
"#,
    );
    let run = replay(&sample("pydantic-ai/traces.jsonl"), &fixture, &[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.case("weather")["pass"], true);
    assert_eq!(run.of_type("evaluation").len(), 1);
    let path = fixture.display().to_string();
    assert!(
        run.stderr.contains(&format!(
            "toolscore: rejected: {path}:2: expected_tools[0].args.ticker: $regex \"(\": unclosed \
             group"
        )),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(&format!(
            "toolscore: rejected: {path}:3: expected_tools[0].args.amount: unknown matcher \
             `$aprox`"
        )),
        "{}",
        run.stderr
    );
    let rejected = run.of_type("rejected");
    assert_eq!(rejected.len(), 2, "{rejected:?}");
    assert_eq!(rejected[0]["position"], "2");
}

#[test]
fn a_preset_on_a_matcher_case_gives_one_note() {
    let dir = TempDir::new("matchers-note");
    // Two cases with matchers and one without; the third names its own
    // metrics, a preset among them.
    let fixture = write(
        &dir,
        "cases.jsonl",
        r#"{"id": "stock", "trace_id": "9d3d86b5eed352d10a377c77a4f5d12b", "expected_tools": [{"name": "get_stock_price", "args": {"ticker": {"$regex": "^X+$"}}}]}
{"id": "plain", "trace_id": "f8320a69772db4670295805f8a1a84a0", "expected_tools": [{"name": "plan_trip", "args": {"destination": "Tokyo"}}, "get_weather"]}
{"id": "berlin", "trace_id": "4b9662794e39d858f4e35b5816e55d00", "expected_tools": [{"name": "get_weather", "args": {"city": {"$type": "string"}}}], "metrics": ["tool_correctness", "mlflow.exact"]}
"#,
    );
    let traces = sample("pydantic-ai/traces.jsonl");
    let run = replay(&traces, &fixture, &[]);
    let notes = run.notes();
    assert_eq!(notes.len(), 1, "{}", run.stderr);
    assert!(
        notes[0].contains(
            "1 case(s) with argument matchers ($regex, $type, ...) are scored by mlflow.exact"
        ),
        "{}",
        notes[0]
    );
    let run = replay(
        &traces,
        &fixture,
        &[
            "-m",
            "tool_correctness",
            "-m",
            "deepeval.default",
            "-m",
            "mlflow.exact",
        ],
    );
    let notes = run.notes();
    assert_eq!(notes.len(), 1, "{}", run.stderr);
    assert!(
        notes[0].contains("2 case(s) with argument matchers")
            && notes[0].contains("deepeval.default, mlflow.exact"),
        "{}",
        notes[0]
    );
    // The preset compares the matcher object literally: it fails where
    // tool_correctness passes.
    let stock = run.case("stock");
    assert_eq!(
        stock["metrics"]["tool_correctness"]["pass"], true,
        "{stock}"
    );
    assert_eq!(stock["metrics"]["mlflow.exact"]["pass"], false, "{stock}");
    // The run's metrics all ours: berlin's own list still names a preset.
    let run = replay(
        &traces,
        &fixture,
        &["-m", "tool_correctness", "-m", "tool_efficiency"],
    );
    assert_eq!(run.notes().len(), 1, "{}", run.stderr);
    // No preset anywhere: no note.
    let only_ours = std::fs::read_to_string(&fixture)
        .unwrap()
        .replace("\"mlflow.exact\"", "\"budget\"");
    let fixture = write(&dir, "ours.jsonl", &only_ours);
    let run = replay(&traces, &fixture, &[]);
    assert!(run.notes().is_empty(), "{}", run.stderr);
}

#[test]
fn matchers_in_other_tools_formats() {
    let dir = TempDir::new("matchers-formats");
    let traces = sample("strands/traces.jsonl.gz");
    // Ragas samples, joined by the user's text.
    let ragas = write(
        &dir,
        "samples.json",
        r#"[{"user_input": [{"content": "Convert 100 EUR to USD", "type": "human"}],
             "reference_tool_calls": [{"name": "convert_currency", "args": {"amount": {"$type": "integer"}, "src": "EUR", "dst": {"$regex": "^US"}}}]},
            {"user_input": [{"content": "Weather in Berlin?", "type": "human"}],
             "reference_tool_calls": [{"name": "get_weather", "args": {"city": {"$type": "strng"}}}]}]"#,
    );
    let run = replay(&traces, &ragas, &["-m", "tool_correctness"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.case("samples#1")["pass"], true);
    assert!(
        run.stderr.contains(
            "Ragas samples: [1]: reference_tool_calls[0].args.city: $type \"strng\" is not one of"
        ),
        "{}",
        run.stderr
    );
    // A Google ADK test file is scored with adk.exact when no metric is
    // named: the note says the matchers are compared literally there.
    let adk = write(
        &dir,
        "trip.test.json",
        r#"[{"query": "Plan a trip to Tokyo", "reference": "",
             "expected_tool_use": [{"tool_name": "plan_trip", "tool_input": {"destination": {"$contains": "Tok"}}},
                                   {"tool_name": "get_weather", "tool_input": {"city": {"$any": true}}}]}]"#,
    );
    let run = replay(&traces, &adk, &[]);
    let notes = run.notes();
    assert_eq!(notes.len(), 1, "{}", run.stderr);
    assert!(
        notes[0].contains("1 case(s) with argument matchers"),
        "{}",
        notes[0]
    );
    assert!(notes[0].contains("adk.exact"), "{}", notes[0]);
    assert_eq!(run.case("trip#1")["pass"], false);
    let run = replay(&traces, &adk, &["-m", "tool_correctness"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.case("trip#1")["score"], 1.0);
}

/// `score --cases` (calls as data, the oracle's case format) reads matchers
/// as fixtures do: honoured by `tool_correctness`, a bad one rejecting its
/// line alone, and the note when a preset scores a matcher case.
#[test]
fn score_cases_read_matchers() {
    let dir = TempDir::new("score-matchers");
    let cases = write(
        &dir,
        "cases.jsonl",
        concat!(
            r#"{"id":"re","tools_called":[{"name":"get_weather","args":{"city":"Paris"}}],"expected_tools":[{"name":"get_weather","args":{"city":{"$regex":"^Par"}}}]}"#,
            "\n",
            r#"{"id":"miss","tools_called":[{"name":"get_weather","args":{"city":"Lyon"}}],"expected_tools":[{"name":"get_weather","args":{"city":{"$regex":"^Par"}}}]}"#,
            "\n",
            r#"{"id":"bad","tools_called":[],"expected_tools":[{"name":"x","args":{"q":{"$regex":"("}}}]}"#,
            "\n",
        ),
    );
    let path = cases.display().to_string();
    let run = |extra: &[&str]| {
        let mut args = vec!["score", "--cases", path.as_str()];
        args.extend_from_slice(extra);
        let out = toolscore(&args);
        let rows = json_rows(&out.stdout);
        (
            out.status.code(),
            rows,
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (code, rows, stderr) = run(&[]);
    assert_eq!(code, Some(2), "a bad matcher is a rejected line: {stderr}");
    let score = |rows: &[Value], id: &str, metric: &str| {
        rows.iter()
            .find(|r| r["id"] == id)
            .map(|r| r["results"][metric]["score"].clone())
    };
    assert_eq!(score(&rows, "re", "tool_correctness"), Some(1.0.into()));
    assert_eq!(score(&rows, "miss", "tool_correctness"), Some(0.0.into()));
    assert_eq!(score(&rows, "bad", "tool_correctness"), None);
    assert!(
        stderr.contains("line 3: case `bad`: expected_tools[0].args.q: $regex"),
        "{stderr}"
    );
    assert!(!stderr.contains("note:"), "no preset, no note: {stderr}");
    let (_, _, stderr) = run(&["-m", "tool_correctness", "-m", "mlflow.exact"]);
    let notes: Vec<&str> = stderr.lines().filter(|l| l.contains("note:")).collect();
    assert_eq!(notes.len(), 1, "{stderr}");
    assert!(
        notes[0].contains("2 case(s) with argument matchers"),
        "{stderr}"
    );
    assert!(notes[0].contains("mlflow.exact"), "{stderr}");
}

/// A program that embeds the library (the Python module, whose
/// `Report.notes` these are) builds its run from typed options through the
/// same setup, and gets the note the command line prints.
#[test]
fn the_matchers_note_reaches_an_embedded_run() {
    use toolscore::cli::embed::Environment;
    use toolscore::run::{Fixture, Options, Setup};
    let dir = TempDir::new("matchers-embedded");
    let fixture = write(
        &dir,
        "cases.jsonl",
        r#"{"id": "stock", "trace_id": "9d3d86b5eed352d10a377c77a4f5d12b", "expected_tools": [{"name": "get_stock_price", "args": {"ticker": {"$regex": "^X+$"}}}]}
"#,
    );
    let traces = sample("pydantic-ai/traces.jsonl");
    let cli = replay(&traces, &fixture, &["-m", "mlflow.exact"]);
    let want: Vec<&str> = cli
        .notes()
        .iter()
        .map(|l| l.trim_start_matches("toolscore: note: "))
        .collect();
    assert_eq!(want.len(), 1, "{}", cli.stderr);
    let env = Environment::read(vec!["mlflow.exact".into()], None).unwrap();
    let config = env.config().unwrap();
    let setup = Setup::new(Options {
        scoring: env.scoring(&config).unwrap(),
        fixture: Fixture::Path(fixture),
        ..Options::default()
    })
    .unwrap();
    let notes: Vec<&str> = setup.notes().iter().map(|n| n.text()).collect();
    assert_eq!(notes, want, "the embedded run's notes");
}
