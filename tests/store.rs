//! The run store (issue 38) as users run it: the real binary saving to and
//! reading from a real SQLite file, each test in its own directory (the
//! default store lives under the current directory).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::util::{json_rows, poll_every, protojson_agent_span, protojson_tool_span, TempDir};

/// The binary run in `dir` with the store as the user's environment leaves
/// it (no `TOOLSCORE_STORE`).
pub(crate) fn in_dir(dir: &Path, args: &[&str]) -> Output {
    cmd(dir, args).output().expect("run toolscore")
}

pub(crate) fn cmd(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_toolscore"));
    c.args(args)
        .current_dir(dir)
        .env_remove("TOOLSCORE_STORE")
        .env_remove("GITHUB_SHA")
        .env_remove("CI_COMMIT_SHA");
    c
}

pub(crate) fn sample() -> (String, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    (
        root.join("sample-traces").display().to_string(),
        root.join("sample-traces/expected.jsonl")
            .display()
            .to_string(),
    )
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The id in `toolscore: run ID saved to WHERE`.
pub(crate) fn saved_id(o: &Output, store: &str) -> String {
    let err = stderr(o);
    let line = err
        .lines()
        .find(|l| l.starts_with("toolscore: run ") && l.ends_with(&format!(" saved to {store}")))
        .unwrap_or_else(|| panic!("no store line naming {store}: {err}"));
    line["toolscore: run ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .to_string()
}

pub(crate) fn runs_listed(dir: &Path, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["runs", "-f", "jsonl"];
    args.extend(extra);
    let o = in_dir(dir, &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    json_rows(&o.stdout)
}

#[test]
fn replay_saves_each_run_and_runs_show_gives_its_jsonl_back() {
    let tmp = TempDir::new("store-show");
    let (traces, fixture) = sample();
    let first = in_dir(
        tmp.path(),
        &[
            "replay",
            &traces,
            "-e",
            &fixture,
            "-f",
            "jsonl",
            "--label",
            "ci=nightly",
        ],
    );
    assert_eq!(first.status.code(), Some(1), "{}", stderr(&first));
    let id1 = saved_id(&first, ".toolscore/runs.db");
    // The default store keeps itself out of git.
    let ignore = std::fs::read_to_string(tmp.path().join(".toolscore/.gitignore")).unwrap();
    assert!(ignore.lines().any(|l| l == "*"), "{ignore}");
    // A table run saves the same JSONL a JSONL run prints.
    let second = in_dir(tmp.path(), &["replay", &traces, "-e", &fixture]);
    assert_eq!(second.status.code(), Some(1), "{}", stderr(&second));
    let id2 = saved_id(&second, ".toolscore/runs.db");
    assert_ne!(id1, id2);

    let runs = runs_listed(tmp.path(), &[]);
    let ids: Vec<&str> = runs.iter().map(|r| r["run"].as_str().unwrap()).collect();
    assert_eq!(ids, [id2.as_str(), id1.as_str()], "newest first");
    let (evals, passed) = json_rows(&first.stdout)
        .iter()
        .filter(|r| r["type"] == "evaluation" || r["type"] == "unmatched_case")
        .fold((0, 0), |(n, p), r| {
            (n + 1, p + usize::from(r["pass"] == true))
        });
    assert_eq!(runs[1]["cases"], evals);
    assert_eq!(runs[1]["passed"], passed);
    assert_eq!(runs[1]["fixture"], fixture.as_str());
    assert_eq!(runs[1]["labels"]["ci"], "nightly");
    let labelled = runs_listed(tmp.path(), &["--label", "ci=nightly"]);
    assert_eq!(labelled.len(), 1);
    assert_eq!(labelled[0]["run"], id1.as_str());
    assert_eq!(runs_listed(tmp.path(), &["--limit", "1"]).len(), 1);

    for spec in [id1.as_str(), "last~1"] {
        let shown = in_dir(tmp.path(), &["runs", "show", spec, "-f", "jsonl"]);
        assert_eq!(shown.status.code(), Some(0), "{}", stderr(&shown));
        assert!(
            shown.stdout == first.stdout,
            "runs show {spec} differs from what the run printed"
        );
    }
    let again = in_dir(
        tmp.path(),
        &[
            "replay",
            &traces,
            "-e",
            &fixture,
            "-f",
            "jsonl",
            "--no-store",
        ],
    );
    let last = in_dir(tmp.path(), &["runs", "show", "last", "-f", "jsonl"]);
    assert!(
        last.stdout == again.stdout,
        "the table run saved other rows"
    );
    assert!(!stderr(&again).contains("saved to"), "{}", stderr(&again));
    shows_markdown_and_a_table_then_prunes(tmp.path(), &traces, &fixture, &id1, &id2);
}

/// The second half of the test above: the saved run's Markdown and table,
/// a run that is not there, then pruning to the newest run (`id2`).
fn shows_markdown_and_a_table_then_prunes(
    tmp_path: &Path,
    traces: &str,
    fixture: &str,
    id1: &str,
    id2: &str,
) {
    // The Markdown summary of a saved run is the run's own, but for its title.
    let md = in_dir(
        tmp_path,
        &[
            "replay",
            traces,
            "-e",
            fixture,
            "-f",
            "markdown",
            "--no-store",
        ],
    );
    let shown = in_dir(tmp_path, &["runs", "show", "last", "-f", "markdown"]);
    let body = |o: &Output| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .skip(1)
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        body(&md).contains("| mlflow-trip-wrong-city |"),
        "{}",
        body(&md)
    );
    assert_eq!(body(&md), body(&shown));
    let table = in_dir(tmp_path, &["runs", "show", "last"]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("mlflow-trip-wrong-city") && text.contains("FAIL"),
        "{text}"
    );

    let missing = in_dir(tmp_path, &["runs", "show", "last~5"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("no run last~5"),
        "{}",
        stderr(&missing)
    );

    let pruned = in_dir(tmp_path, &["runs", "prune", "--keep", "1"]);
    assert_eq!(pruned.status.code(), Some(0), "{}", stderr(&pruned));
    assert!(
        stderr(&pruned).contains("pruned 1 run(s)"),
        "{}",
        stderr(&pruned)
    );
    let ids: Vec<Value> = runs_listed(tmp_path, &[])
        .iter()
        .map(|r| r["run"].clone())
        .collect();
    assert_eq!(ids, [Value::from(id2)]);
    let gone = in_dir(tmp_path, &["runs", "show", id1]);
    assert_eq!(gone.status.code(), Some(2));
}

/// A trace that calls `tool` once.
fn trace_calling(trace: u8, tool: &str) -> String {
    let t = [trace; 16];
    let root = protojson_agent_span(&t, &[trace, 1, 1, 1, 1, 1, 1, 1], 1_000);
    let call = protojson_tool_span(
        &t,
        &[trace, 2, 2, 2, 2, 2, 2, 2],
        &[trace, 1, 1, 1, 1, 1, 1, 1],
        tool,
        "{}",
        1_100,
    );
    format!("{{\"resourceSpans\":[{{\"scopeSpans\":[{{\"spans\":[{root},{call}]}}]}}]}}\n")
}

/// A run over cases named by letters: `+` the case's trace calls its
/// tool (a pass), `-` it calls another (a failure); the fixture lists
/// exactly the cases in `marks`.
fn write_run(dir: &Path, marks: &[(char, char)]) -> (PathBuf, PathBuf) {
    let (mut traces, mut cases) = (String::new(), String::new());
    for (i, &(case, mark)) in marks.iter().enumerate() {
        let n = i as u8 + 1;
        let trace_hex: String = std::iter::repeat_n(format!("{n:02x}"), 16).collect();
        let expected = format!("tool_{case}");
        cases += &format!(
            "{{\"id\":\"{case}\",\"trace_id\":\"{trace_hex}\",\"expected_tools\":[\"{expected}\"]}}\n"
        );
        traces += &trace_calling(n, if mark == '+' { &expected } else { "other" });
    }
    let (t, f) = (dir.join("traces.jsonl"), dir.join("cases.jsonl"));
    std::fs::write(&t, traces).unwrap();
    std::fs::write(&f, cases).unwrap();
    (t, f)
}

#[test]
fn trend_names_flaky_regressed_fixed_and_new_cases_and_baseline_last_finds_the_run_before() {
    let tmp = TempDir::new("store-trend");
    let dir = tmp.path();
    // A: ✓✗✓ flaky; B: ✓✓✗ regressed; D: ✗✗✓ fixed; S: ✓✓✓; C only in the last run.
    let runs = [
        vec![('A', '+'), ('B', '+'), ('D', '-'), ('S', '+')],
        vec![('A', '-'), ('B', '+'), ('D', '-'), ('S', '+')],
        vec![('A', '+'), ('B', '-'), ('D', '+'), ('S', '+'), ('C', '+')],
    ];
    let mut ids = Vec::new();
    let mut last = None;
    for (i, marks) in runs.iter().enumerate() {
        write_run(dir, marks);
        let mut args = vec!["replay", "traces.jsonl", "-e", "cases.jsonl", "-f", "jsonl"];
        if i != 1 {
            args.extend(["--baseline", "last"]);
        }
        let o = in_dir(dir, &args);
        assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
        if i == 0 {
            // A first run has nothing to compare with: it says so and goes on.
            assert!(
                stderr(&o)
                    .contains("--baseline last: run store .toolscore/runs.db does not exist yet"),
                "{}",
                stderr(&o)
            );
            assert!(
                stderr(&o).contains("nothing to compare with"),
                "{}",
                stderr(&o)
            );
        }
        ids.push(saved_id(&o, ".toolscore/runs.db"));
        last = Some(o);
    }
    // --baseline last compared with the second run: B regressed, A and D improved, C new.
    let rows = json_rows(&last.unwrap().stdout);
    let status_of = |case: &str| {
        rows.iter()
            .find(|r| r["type"] == "comparison" && r["case"] == case)
            .map(|r| r["status"].as_str().unwrap().to_string())
    };
    assert_eq!(status_of("B").as_deref(), Some("regressed"));
    assert_eq!(status_of("A").as_deref(), Some("improved"));
    assert_eq!(status_of("D").as_deref(), Some("improved"));
    assert_eq!(status_of("C").as_deref(), Some("new"));
    assert_eq!(status_of("S").as_deref(), Some("unchanged"));

    let o = in_dir(dir, &["trend", "-f", "jsonl"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let trend = json_rows(&o.stdout);
    let by_case = |c: &str| trend.iter().find(|r| r["case"] == c).unwrap().clone();
    let expect = [
        ("A", "flaky", "[true,false,true]"),
        ("B", "regressed", "[true,true,false]"),
        ("D", "fixed", "[false,false,true]"),
        ("S", "stable-pass", "[true,true,true]"),
        ("C", "new", "[null,null,true]"),
    ];
    for (case, status, passes) in expect {
        let r = by_case(case);
        assert_eq!(r["status"], status, "{case}: {r}");
        assert_eq!(r["passes"].to_string(), passes, "{case}: {r}");
        assert_eq!(r["runs"], serde_json::json!(ids), "{case}");
    }
    assert_eq!(by_case("A")["scores"], serde_json::json!([1.0, 0.0, 1.0]));
    // The table: one history line per case, most worrying first.
    let o = in_dir(dir, &["trend", "--last", "3"]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let line = |case: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(case))
            .unwrap_or_else(|| panic!("no line for {case}: {text}"))
            .to_string()
    };
    assert!(
        line("A").contains("flaky") && line("A").contains("✓✗✓"),
        "{text}"
    );
    assert!(line("C").contains("··✓"), "{text}");
    let first_case = |t: &str| {
        t.lines()
            .nth(2)
            .and_then(|l| l.split_whitespace().next())
            .map(String::from)
    };
    assert_eq!(first_case(&text).as_deref(), Some("B"), "{text}");
    // Named cases only; a window of two runs.
    let o = in_dir(dir, &["trend", "A", "--last", "2", "-f", "jsonl"]);
    let only = json_rows(&o.stdout);
    assert_eq!(only.len(), 1);
    assert_eq!(only[0]["status"], "fixed", "{}", only[0]);

    // diff takes run ids.
    let o = in_dir(dir, &["diff", &ids[1], &ids[2], "-f", "jsonl"]);
    assert_eq!(o.status.code(), Some(1), "B regressed: {}", stderr(&o));
    let diffed = json_rows(&o.stdout);
    assert!(diffed
        .iter()
        .any(|r| r["case"] == "B" && r["status"] == "regressed"));
}

#[test]
fn a_store_from_a_newer_toolscore_is_refused_and_unwritable_stores_keep_the_report() {
    let tmp = TempDir::new("store-refuse");
    let dir = tmp.path();
    let (traces, fixture) = sample();
    let o = in_dir(
        dir,
        &["replay", &traces, "-e", &fixture, "--store", "mine.db"],
    );
    saved_id(&o, "mine.db");
    {
        let db = rusqlite::Connection::open(dir.join("mine.db")).unwrap();
        db.execute(
            "UPDATE toolscore_meta SET value = '99' WHERE key = 'schema_version'",
            [],
        )
        .unwrap();
    }
    let before = std::fs::read(dir.join("mine.db")).unwrap();
    // Named by the user: the report is written, the run exits 2.
    let o = in_dir(
        dir,
        &[
            "replay", &traces, "-e", &fixture, "--store", "mine.db", "-f", "jsonl",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(json_rows(&o.stdout).iter().any(|r| r["type"] == "summary"));
    let err = stderr(&o);
    assert!(
        err.contains("mine.db was written by a newer toolscore (schema version 99"),
        "{err}"
    );
    let o = in_dir(dir, &["runs", "--store", "mine.db"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("newer toolscore"), "{}", stderr(&o));
    assert!(
        std::fs::read(dir.join("mine.db")).unwrap() == before,
        "the store was changed"
    );

    // The default store cannot be made (a file is in the way): a warning,
    // the report, and the run's own exit code.
    std::fs::write(dir.join(".toolscore"), "not a directory").unwrap();
    let o = in_dir(dir, &["replay", &traces, "-e", &fixture]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("mlflow-trip-wrong-city"));
    let err = stderr(&o);
    assert!(
        err.contains("toolscore: warning: run not saved: run store .toolscore/runs.db: cannot create .toolscore"),
        "{err}"
    );
    // The same path named by the user: exit 2, the report still written.
    let o = cmd(dir, &["replay", &traces, "-e", &fixture])
        .env("TOOLSCORE_STORE", ".toolscore/runs.db")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("mlflow-trip-wrong-city"));
    assert!(
        stderr(&o).contains("toolscore: error: run not saved"),
        "{}",
        stderr(&o)
    );
    // Off saves nothing and says nothing.
    let o = cmd(dir, &["replay", &traces, "-e", &fixture])
        .env("TOOLSCORE_STORE", "off")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(!stderr(&o).contains("run"), "{}", stderr(&o));
}

#[test]
fn a_store_of_schema_1_opens_and_shows_its_runs_as_saved() {
    let tmp = TempDir::new("store-v1");
    let dir = tmp.path();
    let (traces, fixture) = sample();
    // A run as the first schema kept it: its JSONL a row per line.
    let o = in_dir(
        dir,
        &[
            "replay",
            &traces,
            "-e",
            &fixture,
            "-f",
            "jsonl",
            "--no-store",
        ],
    );
    let jsonl = String::from_utf8(o.stdout).unwrap();
    {
        let db = rusqlite::Connection::open(dir.join("old.db")).unwrap();
        db.execute_batch(toolscore::store::schema::META_TABLE)
            .unwrap();
        db.execute_batch(toolscore::store::schema::MIGRATIONS[0].sqlite)
            .unwrap();
        db.execute_batch(
            "INSERT INTO toolscore_meta VALUES ('schema_version', '1');
             INSERT INTO runs (id, started_ms, ended_ms, finished, version, command, fixture,
               settings, inputs, traces, spans, rejected, cases, passed, failed, mean_score,
               exit_code)
             VALUES ('20261101-000000-00000a', 1, 2, 1, '0.1.0', '[]', 'cases.jsonl', '{}', 1,
               1, 2, 0, 1, 1, 0, 1.0, 0);
             INSERT INTO labels VALUES (1, 'ci', 'old');
             INSERT INTO results VALUES (1, 0, 'case-a', 'trace', 1, 1.0);",
        )
        .unwrap();
        for (n, line) in jsonl.lines().enumerate() {
            db.execute(
                "INSERT INTO rows (run_seq, n, line) VALUES (1, ?1, ?2)",
                rusqlite::params![n as i64, line],
            )
            .unwrap();
        }
    }
    // Opening it brings it to the current schema; the old run reads back
    // as saved, next to a run saved now.
    let o = in_dir(
        dir,
        &["replay", &traces, "-e", &fixture, "--store", "old.db", "-q"],
    );
    let new = saved_id(&o, "old.db");
    let o = in_dir(dir, &["runs", "--store", "old.db", "-f", "jsonl"]);
    let runs = json_rows(&o.stdout);
    let ids: Vec<&str> = runs.iter().map(|r| r["run"].as_str().unwrap()).collect();
    assert_eq!(ids, [new.as_str(), "20261101-000000-00000a"]);
    assert_eq!(runs[1]["labels"]["ci"], "old");
    for run in ["20261101-000000-00000a", new.as_str()] {
        let o = in_dir(
            dir,
            &["runs", "show", run, "--store", "old.db", "-f", "jsonl"],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(
            o.stdout == jsonl.as_bytes(),
            "run {run} does not read back as saved"
        );
    }
    let db = rusqlite::Connection::open(dir.join("old.db")).unwrap();
    let version: String = db
        .query_row(
            "SELECT value FROM toolscore_meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(version, toolscore::store::schema::LATEST.to_string());
    let old_result: (String, bool) = db
        .query_row(
            "SELECT case_id, pass FROM results WHERE run_seq = 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(old_result, ("case-a".to_string(), true));
}

/// A big run in `dir` (`big.jsonl`, `big-cases.jsonl`): `n` cases, each
/// trace calling the expected tool once with 2,000 bytes of arguments, so
/// each case's JSONL row is long.
fn write_big_run(dir: &Path, n: usize) {
    let (mut traces, mut cases) = (String::new(), String::new());
    let args = format!("{{\"text\":\"{}\"}}", "x".repeat(2_000));
    for i in 0..n {
        let t: Vec<u8> = (0..16)
            .map(|k| ((i >> (8 * (k % 4))) & 0xff) as u8 ^ k as u8)
            .collect();
        let hex = crate::util::hex(&t);
        cases +=
            &format!("{{\"id\":\"c{i}\",\"trace_id\":\"{hex}\",\"expected_tools\":[\"x\"]}}\n");
        let root = protojson_agent_span(&t, &[1, 1, 1, 1, 1, 1, 1, 1], 1_000);
        let call = protojson_tool_span(
            &t,
            &[2, 2, 2, 2, 2, 2, 2, 2],
            &[1, 1, 1, 1, 1, 1, 1, 1],
            "x",
            &args,
            1_100,
        );
        traces += &format!(
            "{{\"resourceSpans\":[{{\"scopeSpans\":[{{\"spans\":[{root},{call}]}}]}}]}}\n"
        );
    }
    std::fs::write(dir.join("big.jsonl"), traces).unwrap();
    std::fs::write(dir.join("big-cases.jsonl"), cases).unwrap();
}

/// The JSONL bytes of a report part as the store keeps them (the last part
/// may be shorter).
const PART_BYTES: usize = 1 << 20;

/// A report of several parts, rows running across the parts' ends, comes
/// back byte for byte, from SQLite and from PostgreSQL, whether the run
/// printed its JSONL (saved as it was written) or a table (the JSONL
/// written for the store alone).
#[test]
fn a_report_of_several_parts_comes_back_byte_for_byte() {
    let tmp = TempDir::new("store-parts");
    let dir = tmp.path();
    write_big_run(dir, 2_000);
    let pg = PgServer::start();
    let mut stores = vec![("parts.db".to_string(), None)];
    if let Some(pg) = &pg {
        stores.push((pg.url.clone(), Some(pg)));
    }
    for (store, pg) in &stores {
        let replay = |format: &str| {
            let o = in_dir(
                dir,
                &[
                    "replay",
                    "big.jsonl",
                    "-e",
                    "big-cases.jsonl",
                    "-q",
                    "-f",
                    format,
                    "--store",
                    store,
                ],
            );
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            (saved_id(&o, store), o.stdout)
        };
        let (id, printed) = replay("jsonl");
        let parts = printed.len().div_ceil(PART_BYTES);
        assert!(parts >= 3, "{} bytes: too few parts", printed.len());
        // The row holding a part's last byte goes on into the next part.
        let across = (1..parts)
            .filter(|k| printed[k * PART_BYTES - 1] != b'\n')
            .count();
        assert!(across > 0, "every part ends with a whole row");
        let show = |id: &str| {
            let o = in_dir(dir, &["runs", "show", id, "-f", "jsonl", "--store", store]);
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            o.stdout
        };
        assert!(show(&id) == printed, "{store}: run {id} came back changed");
        let (table_id, _) = replay("table");
        assert!(
            show(&table_id) == printed,
            "{store}: the table run saved other bytes"
        );
        let sql = "SELECT count(*) FROM report_parts p JOIN runs r ON r.seq = p.run_seq \
                   WHERE r.id = ";
        let kept: i64 = match pg {
            None => rusqlite::Connection::open(dir.join(store))
                .unwrap()
                .query_row(&format!("{sql}?1"), [&id], |r| r.get(0))
                .unwrap(),
            Some(pg) => postgres::Client::connect(&pg.url, postgres::NoTls)
                .unwrap()
                .query_one(&format!("{sql}$1"), &[&id])
                .unwrap()
                .get(0),
        };
        assert_eq!(kept, parts as i64, "{store}: parts kept");
    }
}

#[test]
fn a_run_killed_while_it_is_saved_is_not_listed() {
    let tmp = TempDir::new("store-kill");
    let dir = tmp.path();
    // A first run makes the store, so the next one writes only its run.
    write_run(dir, &[('A', '+')]);
    let o = in_dir(dir, &["replay", "traces.jsonl", "-e", "cases.jsonl"]);
    let first = saved_id(&o, ".toolscore/runs.db");
    write_big_run(dir, 20_000);
    let mut child = cmd(dir, &["replay", "big.jsonl", "-e", "big-cases.jsonl", "-q"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // SQLite's rollback journal exists only while a transaction writes.
    let journal = dir.join(".toolscore/runs.db-journal");
    poll_every(
        Duration::from_millis(1),
        "the run's save to start",
        Duration::from_secs(300),
        || {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("the run ended ({status}) before its save could be interrupted");
            }
            journal.exists()
        },
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let runs = runs_listed(dir, &[]);
    let ids: Vec<&str> = runs.iter().map(|r| r["run"].as_str().unwrap()).collect();
    assert_eq!(ids, [first.as_str()], "a half-saved run is listed");
    let db = rusqlite::Connection::open(dir.join(".toolscore/runs.db")).unwrap();
    // The first run: one report part (an evaluation and the summary), one
    // result.
    let kept: (i64, i64) = db
        .query_row(
            "SELECT (SELECT count(*) FROM report_parts), (SELECT count(*) FROM results)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let check: String = db
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        (kept, check.as_str()),
        ((1, 1), "ok"),
        "only the first run's report and results remain"
    );
}

/// A PostgreSQL server of its own, on 127.0.0.1 and a free port, its data
/// in a temporary directory; stopped on drop.
pub(crate) struct PgServer {
    _dir: TempDir,
    pg_ctl: PathBuf,
    data: PathBuf,
    as_postgres: bool,
    /// `pg_ctl start`'s server options and log file.
    options: String,
    log: String,
    pub(crate) url: String,
}

/// A PostgreSQL program, on PATH or where Debian puts it.
fn pg_program(name: &str) -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| {
        let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .flatten()
            .map(|v| v.path().join("bin").join(name))
            .filter(|p| p.is_file())
            .collect();
        found.sort();
        found.pop()
    })
}

impl PgServer {
    /// PostgreSQL refuses to run as root: then its programs run as the
    /// `postgres` user.
    fn run(&self, program: &Path, args: &[&str]) -> Output {
        let mut c = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        };
        c.args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run a PostgreSQL program")
    }

    pub(crate) fn start() -> Option<PgServer> {
        let found = pg_program("initdb").zip(pg_program("pg_ctl"));
        let (initdb, pg_ctl) = crate::util::require(
            "PostgreSQL (initdb, pg_ctl)",
            "Debian's postgresql package (.ci/run installs it)",
            found,
        )?;
        let dir = TempDir::new("store-pg");
        let root = Command::new("id")
            .arg("-u")
            .output()
            .map(|o| o.stdout == b"0\n")
            .unwrap_or(false);
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let data = dir.path().join("data");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let sock = dir.path().display().to_string();
        let server = PgServer {
            pg_ctl,
            data: data.clone(),
            as_postgres: root,
            options: format!("-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off"),
            log: format!("{sock}/log"),
            url: format!("postgres://toolscore@127.0.0.1:{port}/postgres"),
            _dir: dir,
        };
        let d = data.display().to_string();
        let o = server.run(
            &initdb,
            &["-D", &d, "-A", "trust", "-U", "toolscore", "--no-sync"],
        );
        assert!(o.status.success(), "initdb: {}", stderr(&o));
        server.start_again();
        Some(server)
    }

    /// Starts the stopped server, on the same port with the same data.
    pub(crate) fn start_again(&self) {
        let d = self.data.display().to_string();
        // -w: pg_ctl waits until the server accepts connections.
        let o = self.run(
            &self.pg_ctl,
            &[
                "-D",
                &d,
                "-o",
                &self.options,
                "-l",
                &self.log,
                "-w",
                "-t",
                "120",
                "start",
            ],
        );
        assert!(
            o.status.success(),
            "pg_ctl start: {} {}",
            stderr(&o),
            std::fs::read_to_string(&self.log).unwrap_or_default()
        );
    }

    /// Stops the server at once, dropping its connections (as a crash or
    /// a restart does).
    pub(crate) fn stop(&self) {
        let d = self.data.display().to_string();
        let o = self.run(&self.pg_ctl, &["-D", &d, "-m", "immediate", "-w", "stop"]);
        assert!(o.status.success(), "pg_ctl stop: {}", stderr(&o));
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let d = self.data.display().to_string();
        let _ = self.run(&self.pg_ctl, &["-D", &d, "-m", "immediate", "-w", "stop"]);
    }
}

#[test]
fn postgres_keeps_every_run_of_concurrent_writers_whole() {
    let Some(pg) = PgServer::start() else {
        return;
    };
    let tmp = TempDir::new("store-pg-runs");
    let dir = tmp.path();
    let (traces, fixture) = sample();
    let store = pg.url.as_str();
    // Four replays at once on a database no toolscore has opened: they race
    // to migrate it, then to save.
    let children: Vec<_> = (0..4)
        .map(|i| {
            let label = format!("n={i}");
            cmd(
                dir,
                &[
                    "replay", &traces, "-e", &fixture, "-f", "jsonl", "--store", store, "--label",
                    &label,
                ],
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    let outputs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let mut ids = Vec::new();
    for o in &outputs {
        assert_eq!(o.status.code(), Some(1), "{}", stderr(o));
        ids.push(saved_id(o, store));
    }
    let runs = runs_listed(dir, &["--store", store]);
    assert_eq!(runs.len(), 4, "{runs:?}");
    for (o, id) in outputs.iter().zip(&ids) {
        let shown = in_dir(dir, &["runs", "show", id, "-f", "jsonl", "--store", store]);
        assert!(shown.stdout == o.stdout, "run {id} was not kept whole");
    }
    assert_eq!(
        runs_listed(dir, &["--store", store, "--label", "n=2"])[0]["run"],
        ids[2].as_str()
    );
    // The same questions as of SQLite.
    let o = in_dir(
        dir,
        &[
            "replay",
            &traces,
            "-e",
            &fixture,
            "--store",
            store,
            "--baseline",
            "last",
            "-f",
            "jsonl",
        ],
    );
    let summary = json_rows(&o.stdout)
        .into_iter()
        .find(|r| r["type"] == "comparison_summary")
        .unwrap();
    assert_eq!(summary["unchanged"], 10, "{summary}");
    let o = in_dir(dir, &["trend", "--store", store, "-f", "jsonl"]);
    let trend = json_rows(&o.stdout);
    assert_eq!(trend.len(), 10);
    assert!(
        trend
            .iter()
            .all(|r| r["passes"].as_array().unwrap().len() == 5),
        "{trend:?}"
    );
    let o = in_dir(dir, &["runs", "prune", "--keep", "2", "--store", store]);
    assert!(stderr(&o).contains("pruned 3 run(s)"), "{}", stderr(&o));
    // A newer schema is refused, and left as it was.
    let mut db = postgres::Client::connect(store, postgres::NoTls).unwrap();
    db.execute(
        "UPDATE toolscore_meta SET value = '7' WHERE key = 'schema_version'",
        &[],
    )
    .unwrap();
    let o = in_dir(dir, &["replay", &traces, "-e", &fixture, "--store", store]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("written by a newer toolscore (schema version 7"),
        "{}",
        stderr(&o)
    );
    let runs: i64 = db
        .query_one("SELECT count(*) FROM runs", &[])
        .unwrap()
        .get(0);
    assert_eq!(runs, 2);
}

/// The sample run with a case no trace matches and an input that is not
/// JSON, so every kind of JUnit test case is there: the input's and the
/// fixture's names in `dir`.
fn sample_with_misses(dir: &Path) -> (&'static str, &'static str) {
    let (_, fixture) = sample();
    let mut cases = std::fs::read_to_string(&fixture).unwrap();
    cases += "{\"id\":\"ghost\",\"trace_id\":\"0000000000000000000000000000abcd\",\"expected_tools\":[\"x\"]}\n";
    std::fs::write(dir.join("cases.jsonl"), cases).unwrap();
    std::fs::write(dir.join("broken.json"), "{\"resourceSpans\": [\n").unwrap();
    ("broken.json", "cases.jsonl")
}

#[test]
fn runs_show_writes_the_junit_the_run_wrote_and_its_html_page() {
    let tmp = TempDir::new("store-show-junit");
    let dir = tmp.path();
    let (traces, _) = sample();
    let (broken, fixture) = sample_with_misses(dir);
    let o = in_dir(
        dir,
        &[
            "replay", &traces, broken, "-e", fixture, "-f", "junit", "-o", "run.xml",
        ],
    );
    // A rejected input: the run could not evaluate everything.
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    saved_id(&o, ".toolscore/runs.db");
    let written = std::fs::read(dir.join("run.xml")).unwrap();
    let o = in_dir(dir, &["runs", "show", "last", "-f", "junit"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let shown = String::from_utf8(o.stdout).unwrap();
    let doc = roxmltree::Document::parse(&shown).expect("runs show -f junit is XML");
    let cases: Vec<roxmltree::Node> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    let named = |name: &str| cases.iter().any(|c| c.attribute("name") == Some(name));
    assert!(named("ghost") && named("broken.json"), "{shown}");
    assert!(
        cases
            .iter()
            .any(|c| c.children().any(|k| k.has_tag_name("failure"))),
        "{shown}"
    );
    assert!(
        shown.as_bytes() == written,
        "runs show -f junit differs from what the run wrote:\n{shown}"
    );

    // The HTML page from the same rows, in a real browser.
    let o = in_dir(
        dir,
        &["runs", "show", "last", "-f", "html", "-o", "run.html"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let Some(chromium) = crate::util::require(
        "chromium on PATH",
        "the page is checked in a real browser (`apt-get install chromium`; .ci/run installs it)",
        crate::html::find_chromium(),
    ) else {
        return;
    };
    let jsonl = in_dir(dir, &["runs", "show", "last", "-f", "jsonl"]);
    let rows = json_rows(&jsonl.stdout);
    let cases_of = |pass: Option<bool>| -> Vec<(String, Option<String>)> {
        let mut v: Vec<(String, Option<String>)> = rows
            .iter()
            .filter(|r| r["type"] == "evaluation" || r["type"] == "unmatched_case")
            .filter(|r| pass.is_none_or(|p| r["pass"] == p))
            .map(|r| {
                (
                    r["case"].as_str().unwrap().to_string(),
                    r["trace_id"].as_str().map(String::from),
                )
            })
            .collect();
        v.sort();
        v
    };
    let (_browser, mut cdp) = crate::html::open_browser(&chromium);
    let url = format!(
        "file://{}",
        dir.join("run.html").canonicalize().unwrap().display()
    );
    cdp.send("Page.navigate", serde_json::json!({ "url": url }));
    cdp.wait_for(
        "document.readyState === 'complete' && document.getElementById('f-count').textContent !== ''",
    );
    let listed = |cdp: &mut crate::html::Cdp| -> Vec<(String, Option<String>)> {
        let v = cdp.eval(
            "[...document.querySelectorAll('#cases details.case')]
               .filter(d => !d.hidden && d.getClientRects().length > 0)
               .map(d => [d.dataset.case, d.dataset.trace || null])",
        );
        let mut v: Vec<(String, Option<String>)> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r[0].as_str().unwrap().to_string(),
                    r[1].as_str().map(String::from),
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(listed(&mut cdp), cases_of(None));
    cdp.eval("document.getElementById('f-failed').click()");
    assert_eq!(listed(&mut cdp), cases_of(Some(false)));
    let summary = cdp.eval("document.querySelector('p.summary').textContent");
    assert!(
        summary
            .as_str()
            .is_some_and(|s| s.contains("1 input problem(s) rejected")),
        "{summary}"
    );
    crate::html::assert_no_console_errors(&mut cdp);
}

#[test]
fn trend_html_draws_the_pass_rate_and_a_grid_flaky_cases_first() {
    let tmp = TempDir::new("store-trend-html");
    let dir = tmp.path();
    // A: ✓✗✓ flaky; B: ✓✓✗ regressed; S: ✓✓✓; C only in the last run.
    let runs = [
        vec![('A', '+'), ('B', '+'), ('S', '+')],
        vec![('A', '-'), ('B', '+'), ('S', '+')],
        vec![('A', '+'), ('B', '-'), ('S', '+'), ('C', '-')],
    ];
    let mut ids = Vec::new();
    for marks in &runs {
        write_run(dir, marks);
        let o = in_dir(dir, &["replay", "traces.jsonl", "-e", "cases.jsonl", "-q"]);
        ids.push(saved_id(&o, ".toolscore/runs.db"));
    }
    let o = in_dir(dir, &["trend", "-f", "html", "-o", "trend.html"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let page = std::fs::read_to_string(dir.join("trend.html")).unwrap();
    for external in ["http:", "https:", "<script", "src="] {
        assert!(!page.contains(external), "the page loads {external}");
    }
    let Some(chromium) = crate::util::require(
        "chromium on PATH",
        "the page is checked in a real browser (`apt-get install chromium`; .ci/run installs it)",
        crate::html::find_chromium(),
    ) else {
        return;
    };
    let (_browser, mut cdp) = crate::html::open_browser(&chromium);
    let url = format!(
        "file://{}",
        dir.join("trend.html").canonicalize().unwrap().display()
    );
    cdp.send("Page.navigate", serde_json::json!({ "url": url }));
    cdp.wait_for("document.readyState === 'complete'");
    // One row per case, flaky first; one cell per run, oldest first.
    let grid = cdp.eval(
        "[...document.querySelectorAll('#grid tbody tr')].map(tr => [tr.dataset.case,
           tr.querySelector('td.status').textContent,
           [...tr.querySelectorAll('td[data-run]')].map(td => td.className + ' ' + td.dataset.run + ' ' + td.textContent)])",
    );
    let cell = |class: &str, run: usize, mark: &str| format!("{class} {} {mark}", ids[run]);
    let expect = serde_json::json!([
        [
            "A",
            "flaky",
            [
                cell("pass", 0, "✓"),
                cell("fail", 1, "✗"),
                cell("pass", 2, "✓")
            ]
        ],
        [
            "B",
            "regressed",
            [
                cell("pass", 0, "✓"),
                cell("pass", 1, "✓"),
                cell("fail", 2, "✗")
            ]
        ],
        [
            "C",
            "new",
            [
                cell("absent", 0, "·"),
                cell("absent", 1, "·"),
                cell("fail", 2, "✗")
            ]
        ],
        [
            "S",
            "stable-pass",
            [
                cell("pass", 0, "✓"),
                cell("pass", 1, "✓"),
                cell("pass", 2, "✓")
            ]
        ],
    ]);
    assert_eq!(grid, expect);
    // The pass rate over runs: a point per run, drawn where its rate is.
    let dots = cdp.eval(
        "[...document.querySelectorAll('#pass-rate circle.dot')].map(c => [c.dataset.run,
           Number(c.dataset.rate), c.getBoundingClientRect().y])",
    );
    let dots = dots.as_array().unwrap();
    let rates: Vec<(String, f64)> = dots
        .iter()
        .map(|d| (d[0].as_str().unwrap().to_string(), d[1].as_f64().unwrap()))
        .collect();
    assert_eq!(
        rates,
        [
            (ids[0].clone(), 1.0),
            (ids[1].clone(), 2.0 / 3.0),
            (ids[2].clone(), 2.0 / 4.0),
        ]
    );
    let y: Vec<f64> = dots.iter().map(|d| d[2].as_f64().unwrap()).collect();
    assert!(
        y[0] < y[1] && y[1] < y[2],
        "a lower rate is drawn lower: {y:?}"
    );
    assert_eq!(
        cdp.eval("document.querySelectorAll('#pass-rate polyline.line').length"),
        serde_json::json!(1)
    );
    crate::html::assert_no_console_errors(&mut cdp);
}

/// A server that accepts connections and never answers (a PostgreSQL port
/// behind a hung proxy, say) does not hang a command: the connect gives up
/// at its limit (`connect_timeout` in the URL; 10 s by default) and the
/// error names the server and the reason; `replay` still writes its report.
#[test]
fn a_store_server_that_never_answers_is_given_up_at_the_connect_limit() {
    use std::time::Instant;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // Holds every connection open without a byte written.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            held.push(s);
        }
    });
    let tmp = TempDir::new("store-pg-hung");
    let url = format!("postgres://nobody@{addr}/db?connect_timeout=1");
    let started = Instant::now();
    let mut child = crate::util::ChildGuard(
        cmd(tmp.path(), &["runs", "--store", &url])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run toolscore"),
    );
    let status = crate::util::poll_until("runs to give up", Duration::from_secs(60), || {
        child.try_wait().expect("wait for runs")
    });
    let elapsed = started.elapsed();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("cannot connect to {addr}: no answer within 1 s")),
        "{err}"
    );
    assert!(
        elapsed >= Duration::from_secs(1),
        "gave up at the limit, not before"
    );
    // A replay saving there keeps its report and says why it was not saved.
    let (traces, fixture) = sample();
    let out = tmp.path().join("report.jsonl");
    let o = in_dir(
        tmp.path(),
        &[
            "replay",
            &traces,
            "-e",
            &fixture,
            "-q",
            "-f",
            "jsonl",
            "-o",
            out.to_str().unwrap(),
            "--store",
            &url,
        ],
    );
    assert!(std::fs::metadata(&out).unwrap().len() > 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("cannot connect to {addr}")),
        "{}",
        stderr(&o)
    );
}
