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
