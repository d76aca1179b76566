//! Hostile inputs (issue 28, items 12–14): each is refused, or read, at a
//! cost bounded by its size rather than by what it claims.

use crate::util::{toolscore, TempDir};

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// 80 rules of `\w{200}` (9.5 MiB compiled each) took 1.1 GB and over a
/// minute to start; one budget for all rule regexes refuses the fourth.
#[test]
fn rule_regexes_over_the_budget_are_refused_naming_the_rule() {
    let dir = TempDir::new("regex-budget");
    let mut text = String::new();
    for i in 0..80 {
        text.push_str(&format!(
            "[[conventions.rule]]\nname = \"big{i}\"\n\
             when = [{{ span_name = true, matches = '\\w{{200}}' }}]\n\
             name_from = [{{ span_name = true }}]\n"
        ));
    }
    let config = dir.path().join("rules.toml");
    std::fs::write(&config, text).unwrap();
    let out = toolscore(&["conventions", "--config", config.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("rule `big3`") && err.contains("32 MiB all rule regexes"),
        "{err}"
    );
}

/// YAML parsing is quadratic in nesting: deep documents are refused before
/// parsing, with the line, as TOML's parser does.
#[test]
fn deeply_nested_yaml_config_is_refused_with_the_line() {
    let dir = TempDir::new("yaml-depth");
    let config = dir.path().join("deep.yaml");
    let n = 40_000;
    let text = format!("sessions:\n  keys: {}{}\n", "[".repeat(n), "]".repeat(n));
    std::fs::write(&config, text).unwrap();
    let out = toolscore(&["conventions", "--config", config.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("line 2: nested deeper than 64 levels"),
        "{}",
        stderr(&out)
    );
}

/// A key written twice in a fixture object was "last one wins": now the
/// record is rejected naming the key, in toolscore's format and others'.
#[test]
fn duplicate_keys_in_a_fixture_record_are_rejected_naming_the_key() {
    let dir = TempDir::new("dup-keys");
    let fixture = dir.path().join("cases.jsonl");
    std::fs::write(
        &fixture,
        "{\"id\": \"a\", \"trace_id\": \"t1\", \"expected_tools\": [\"x\"]}\n\
         {\"id\": \"b\", \"trace_id\": \"t2\", \"expected_tools\": [\"x\"], \"expected_tools\": [\"y\"]}\n\
         {\"id\": \"c\", \"trace_id\": \"t3\", \"expected_tools\": [{\"name\": \"x\", \"args\": {\"q\": 1, \"q\": 2}}]}\n",
    )
    .unwrap();
    let out = toolscore(&[
        "replay",
        "sample-traces",
        "--expected",
        fixture.to_str().unwrap(),
    ]);
    let err = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(
        err.contains("cases.jsonl:2: key `expected_tools` appears twice"),
        "{err}"
    );
    assert!(
        err.contains("cases.jsonl:3: key `q` appears twice"),
        "{err}"
    );
}
