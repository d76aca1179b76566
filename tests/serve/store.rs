//! `serve` saves its run to the run store as it scores (issue 38 §1): the
//! real binary, a real SQLite file under the test's directory and a real
//! PostgreSQL server (tests/store.rs starts it), OTLP over HTTP on
//! 127.0.0.1. One run per process start, listed unfinished while it runs,
//! its rows the bytes of `--output`; SIGTERM finishes it, kill -9 leaves
//! it unfinished with whole batches; a failing store costs no scoring.

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use prost::Message;
use serde_json::Value;

use super::files::{send, Serve};
use super::{read_rows, weather};
use crate::store::{cmd, in_dir, runs_listed, sample, saved_id, stderr, PgServer};
use crate::util::{hex, json_rows, poll_until, TempDir};

const LIMIT: Duration = Duration::from_secs(60);

/// The trace id `weather(t)` sends, in hex.
fn trace_hex(t: u8) -> String {
    let mut id = vec![0xab; 16];
    id[15] = t;
    hex(&id)
}

/// Cases for the traces `weather(1..=4)` send: 1 and 2 pass (both calls
/// expected), 3 fails (another tool expected), 4 is never sent.
fn write_fixture(dir: &Path) {
    let mut cases = String::new();
    for (t, tools) in [
        (1, r#"["get_weather","get_weather"]"#),
        (2, r#"["get_weather","get_weather"]"#),
        (3, r#"["send_email"]"#),
        (4, r#"["get_weather"]"#),
    ] {
        cases += &format!(
            "{{\"id\":\"w{t}\",\"trace_id\":\"{}\",\"expected_tools\":{tools}}}\n",
            trace_hex(t)
        );
    }
    std::fs::write(dir.join("cases.jsonl"), cases).unwrap();
}

/// `toolscore serve` in `dir` (where the default store lives), scoring
/// against `cases.jsonl`, its results in `out`.
fn start_serve(dir: &Path, extra: &[&str], out: &Path) -> Serve {
    let mut args = vec!["--decision-wait", "50ms", "-e", "cases.jsonl"];
    args.extend(extra);
    Serve::spawn(cmd(dir, &[]), &args, out)
}

/// The id in the line that says where the run goes.
fn run_id(serve: &mut Serve) -> String {
    let line = serve.wait_log(
        "the line naming the run and its store",
        "Saving this run to the run store",
    );
    line.split_whitespace()
        .find_map(|w| w.strip_prefix("run="))
        .unwrap_or_else(|| panic!("run= in {line}"))
        .to_string()
}

fn post(serve: &Serve, t: u8) {
    send(serve.http, &weather(t).encode_to_vec());
}

/// `runs show ID -f jsonl`: the run's rows as saved so far.
fn stored(dir: &Path, id: &str, store: &[&str]) -> Vec<u8> {
    let mut args = vec!["runs", "show", id, "-f", "jsonl"];
    args.extend(store);
    let o = in_dir(dir, &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    o.stdout
}

/// Rows of scored traces (evaluations and unmatched traces).
fn scored(jsonl: &[u8]) -> usize {
    json_rows(jsonl)
        .iter()
        .filter(|r| r["type"] == "evaluation" || r["type"] == "unmatched_trace")
        .count()
}

/// Waits until the store has `n` scored rows of run `id`.
fn wait_saved(dir: &Path, id: &str, store: &[&str], n: usize) {
    poll_until(&format!("{n} scored rows in the store"), LIMIT, || {
        let have = scored(&stored(dir, id, store));
        if have == n {
            Ok(())
        } else {
            Err(have)
        }
    });
}

/// The case results a JSONL report holds: (cases, passed, mean score),
/// counted as `runs` counts them (evaluations and cases that matched no
/// trace; a missing score counts 0).
fn cases_passed(rows: &[Value]) -> (u64, u64, f64) {
    let (n, p, sum) = rows
        .iter()
        .filter(|r| r["type"] == "evaluation" || r["type"] == "unmatched_case")
        .fold((0, 0, 0.0), |(n, p, sum), r| {
            (
                n + 1,
                p + u64::from(r["pass"] == true),
                sum + r["score"].as_f64().unwrap_or(0.0),
            )
        });
    (n, p, sum / n.max(1) as f64)
}

#[test]
fn serve_saves_one_run_as_it_scores_and_sigterm_finishes_it() {
    let tmp = TempDir::new("serve-store");
    let dir = tmp.path();
    write_fixture(dir);
    let out = dir.join("results.jsonl");
    let mut serve = start_serve(dir, &["--label", "env=test"], &out);
    let id = run_id(&mut serve);
    assert!(
        serve.log().contains("store=.toolscore/runs.db"),
        "{}",
        serve.log()
    );
    // Listed from the start, unfinished.
    let runs = runs_listed(dir, &[]);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["run"], id.as_str());
    assert_eq!(runs[0]["finished"], false);
    post(&serve, 1);
    post(&serve, 2);
    wait_saved(dir, &id, &[], 2);
    // A failing case, and a trace no case takes.
    post(&serve, 3);
    post(&serve, 9);
    wait_saved(dir, &id, &[], 4);
    let (status, log) = serve.terminate();
    assert_eq!(status.code(), Some(0), "{log}");
    assert!(log.contains("Run saved to the run store."), "{log}");

    let file = std::fs::read(&out).unwrap();
    let shown = stored(dir, &id, &[]);
    assert!(
        shown == file,
        "runs show differs from --output:\n{}\n---\n{}",
        String::from_utf8_lossy(&shown),
        String::from_utf8_lossy(&file)
    );
    let rows = json_rows(&file);
    assert_eq!(rows.last().unwrap()["type"], "summary");
    let (cases, passed, mean) = cases_passed(&rows);
    assert!(passed > 0 && passed < cases, "{passed} of {cases}");
    let runs = runs_listed(dir, &[]);
    assert_eq!(runs.len(), 1, "one run per process start: {runs:?}");
    let run = &runs[0];
    assert_eq!(run["finished"], true, "{run}");
    assert_eq!(run["cases"], cases, "{run}");
    assert_eq!(run["passed"], passed, "{run}");
    assert_eq!(run["failed"], cases - passed, "{run}");
    let saved_mean = run["mean_score"].as_f64().unwrap();
    assert!((saved_mean - mean).abs() < 1e-9, "{run}: mean {mean}");
    assert_eq!(run["fixture"], "cases.jsonl", "{run}");
    assert_eq!(run["labels"]["env"], "test", "{run}");
    let table = in_dir(dir, &["runs"]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains(&id) && text.contains("finished") && !text.contains("UNFINISHED"),
        "{text}"
    );
    // A finished serve run is in the trends, case by case.
    let o = in_dir(dir, &["trend", "-f", "jsonl"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut trended: Vec<String> = json_rows(&o.stdout)
        .iter()
        .map(|r| r["case"].as_str().unwrap().to_string())
        .collect();
    trended.sort();
    assert_eq!(trended, ["w1", "w2", "w3", "w4"]);
}

#[test]
fn a_serve_killed_mid_run_leaves_it_unfinished_with_whole_batches() {
    let tmp = TempDir::new("serve-store-kill");
    let dir = tmp.path();
    write_fixture(dir);
    let out = dir.join("results.jsonl");
    let mut serve = start_serve(dir, &[], &out);
    let id = run_id(&mut serve);
    post(&serve, 1);
    post(&serve, 2);
    wait_saved(dir, &id, &[], 2);
    post(&serve, 3);
    wait_saved(dir, &id, &[], 3);
    // A burst of traces no case takes, killed while it is scored and saved.
    for t in 10..80 {
        post(&serve, t);
    }
    let log = serve.kill();

    let runs = runs_listed(dir, &[]);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["finished"], false, "{log}");
    for args in [&["runs"][..], &["runs", "show", &id]] {
        let table = in_dir(dir, args);
        assert!(
            String::from_utf8_lossy(&table.stdout).contains("UNFINISHED"),
            "{}",
            String::from_utf8_lossy(&table.stdout)
        );
    }
    // What was committed: whole rows, the file's first ones (the store
    // follows the file), at least the batches seen saved before the kill.
    let shown = stored(dir, &id, &[]);
    let file = std::fs::read(&out).unwrap();
    assert!(
        file.starts_with(&shown),
        "the store's rows are not the file's:\n{}\n---\n{}",
        String::from_utf8_lossy(&shown),
        String::from_utf8_lossy(&file)
    );
    let rows = json_rows(&shown);
    assert!(scored(&shown) >= 3, "{}", String::from_utf8_lossy(&shown));
    // Rows, case results and counts went in together: no half batch.
    let db = rusqlite::Connection::open(dir.join(".toolscore/runs.db")).unwrap();
    let (results, cases): (i64, i64) = db
        .query_row(
            "SELECT (SELECT count(*) FROM results), cases FROM runs",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let evaluations = rows.iter().filter(|r| r["type"] == "evaluation").count() as i64;
    assert_eq!((results, cases), (evaluations, evaluations));
    // Trends and `--baseline last` skip an unfinished run.
    let o = in_dir(dir, &["trend"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no finished run"), "{}", stderr(&o));
    let traces = dir.join("traces.jsonl");
    std::fs::write(&traces, "").unwrap();
    let o = in_dir(
        dir,
        &[
            "replay",
            "traces.jsonl",
            "-e",
            "cases.jsonl",
            "--baseline",
            "last",
            "--no-store",
        ],
    );
    assert!(
        stderr(&o).contains("--baseline last") && stderr(&o).contains("nothing to compare with"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_store_that_fails_costs_no_scoring() {
    let tmp = TempDir::new("serve-store-fail");
    let dir = tmp.path();
    write_fixture(dir);
    // Named by the user and not writable: everything is scored and written,
    // the log says why the run is not saved, and the exit is 2.
    let out = dir.join("named.jsonl");
    let named = "no-such-dir/runs.db";
    let mut serve = start_serve(dir, &["--store", named], &out);
    serve.wait_log(
        "the store's warning",
        "Cannot save this run to the run store",
    );
    post(&serve, 1);
    poll_until("the evaluation in the results file", LIMIT, || {
        read_rows(&out).iter().any(|r| r["type"] == "evaluation")
    });
    let (status, log) = serve.terminate();
    assert_eq!(status.code(), Some(2), "{log}");
    assert!(
        log.contains("toolscore: error: run ") && log.contains(&format!("run store {named}")),
        "{log}"
    );
    assert_eq!(read_rows(&out).last().unwrap()["type"], "summary");
    // A named store that fails mid-run (the run pruned under it): the
    // batches after go to the file only, and the exit is 2.
    let out = dir.join("pruned.jsonl");
    let mut serve = start_serve(dir, &["--store", "mine.db"], &out);
    let id = run_id(&mut serve);
    post(&serve, 1);
    wait_saved(dir, &id, &["--store", "mine.db"], 1);
    let o = in_dir(dir, &["runs", "prune", "--keep", "0", "--store", "mine.db"]);
    assert!(stderr(&o).contains("pruned 1 run(s)"), "{}", stderr(&o));
    post(&serve, 2);
    serve.wait_log(
        "the store's warning",
        "it was deleted while it was being written",
    );
    let (status, log) = serve.terminate();
    assert_eq!(status.code(), Some(2), "{log}");
    assert!(
        log.contains(&format!("toolscore: error: run {id} not saved whole")),
        "{log}"
    );
    let rows = read_rows(&out);
    assert_eq!(
        rows.iter().filter(|r| r["type"] == "evaluation").count(),
        2,
        "{log}"
    );
    assert!(runs_listed(dir, &["--store", "mine.db"]).is_empty());
    // The default store cannot be made (a file in the way): a warning, and
    // serve's own exit code.
    std::fs::write(dir.join(".toolscore"), "not a directory").unwrap();
    let out = dir.join("default.jsonl");
    let mut serve = start_serve(dir, &[], &out);
    let warning = serve.wait_log(
        "the store's warning",
        "Cannot save this run to the run store",
    );
    assert!(warning.contains(".toolscore/runs.db"), "{warning}");
    post(&serve, 1);
    poll_until("the evaluation in the results file", LIMIT, || {
        read_rows(&out).iter().any(|r| r["type"] == "evaluation")
    });
    let (status, log) = serve.terminate();
    assert_eq!(status.code(), Some(0), "{log}");
    assert_eq!(read_rows(&out).last().unwrap()["type"], "summary");
    // --no-store: not a word about a store.
    let out = dir.join("off.jsonl");
    let serve = start_serve(dir, &["--no-store"], &out);
    post(&serve, 1);
    poll_until("the evaluation in the results file", LIMIT, || {
        read_rows(&out).iter().any(|r| r["type"] == "evaluation")
    });
    let (status, log) = serve.terminate();
    assert_eq!(status.code(), Some(0), "{log}");
    assert!(!log.contains("run store"), "{log}");
}

#[test]
fn two_serves_and_two_replays_write_one_postgres_database_at_once() {
    let Some(pg) = PgServer::start() else {
        return;
    };
    let tmp = TempDir::new("serve-store-pg");
    let dir = tmp.path();
    write_fixture(dir);
    let store = pg.url.as_str();
    let with_store = ["--store", store];
    // Both serves open the new database at once (they race to migrate it).
    let outs = [dir.join("a.jsonl"), dir.join("b.jsonl")];
    let mut serves: Vec<Serve> = outs
        .iter()
        .map(|out| start_serve(dir, &with_store, out))
        .collect();
    let ids: Vec<String> = serves.iter_mut().map(run_id).collect();
    let (traces, fixture) = sample();
    let replays: Vec<_> = (0..2)
        .map(|_| {
            cmd(
                dir,
                &[
                    "replay", &traces, "-e", &fixture, "-f", "jsonl", "--store", store,
                ],
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    for t in 1..=3 {
        for serve in &serves {
            post(serve, t);
        }
    }
    let replayed: Vec<Output> = replays
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    for id in &ids {
        wait_saved(dir, id, &with_store, 3);
    }
    for serve in serves {
        let (status, log) = serve.terminate();
        assert_eq!(status.code(), Some(0), "{log}");
    }
    let runs = runs_listed(dir, &with_store);
    assert_eq!(runs.len(), 4, "{runs:?}");
    assert!(runs.iter().all(|r| r["finished"] == true), "{runs:?}");
    for (id, out) in ids.iter().zip(&outs) {
        assert!(
            stored(dir, id, &with_store) == std::fs::read(out).unwrap(),
            "serve run {id} was not kept whole"
        );
    }
    for o in &replayed {
        assert_eq!(o.status.code(), Some(1), "{}", stderr(o));
        let id = saved_id(o, store);
        assert!(
            stored(dir, &id, &with_store) == o.stdout,
            "replay run {id} was not kept whole"
        );
    }
}

/// Writes each request as a protobuf file under `dir/traces`, for `replay`.
fn write_traces(dir: &Path, requests: &[(&str, Vec<u8>)]) -> String {
    let traces = dir.join("traces");
    std::fs::create_dir_all(&traces).unwrap();
    for (name, body) in requests {
        std::fs::write(traces.join(format!("{name}.pb")), body).unwrap();
    }
    "traces".into()
}

/// What a run records besides what `runs` lists, read from the SQLite
/// file: settings, fixture hash, rejected lines, exit code, inputs.
fn recorded(dir: &Path, id: &str) -> Value {
    let db = rusqlite::Connection::open(dir.join(".toolscore/runs.db")).unwrap();
    db.query_row(
        "SELECT settings, fixture_hash, rejected, exit_code, inputs, traces, spans, ended_ms \
         FROM runs WHERE id = ?1",
        [id],
        |r| {
            let settings: String = r.get(0)?;
            Ok(serde_json::json!({
                "settings": serde_json::from_str::<Value>(&settings).unwrap(),
                "fixture_hash": r.get::<_, Option<String>>(1)?,
                "rejected": r.get::<_, i64>(2)?,
                "exit_code": r.get::<_, Option<i64>>(3)?,
                "inputs": r.get::<_, i64>(4)?,
                "traces": r.get::<_, i64>(5)?,
                "spans": r.get::<_, i64>(6)?,
                "ended_ms": r.get::<_, Option<i64>>(7)?,
            }))
        },
    )
    .unwrap()
}

#[test]
fn a_serve_run_records_what_a_replay_of_the_same_traces_records() {
    let tmp = TempDir::new("serve-store-record");
    let dir = tmp.path();
    write_fixture(dir);
    let scoring = ["--threshold", "0.9", "--label", "env=test"];
    let out = dir.join("results.jsonl");
    let mut serve = start_serve(dir, &scoring, &out);
    let id = run_id(&mut serve);
    post(&serve, 1);
    post(&serve, 3);
    wait_saved(dir, &id, &[], 2);
    let (status, log) = serve.terminate();
    assert_eq!(status.code(), Some(0), "{log}");
    // The same traces replayed with the same flags.
    let traces = write_traces(
        dir,
        &[
            ("t1", weather(1).encode_to_vec()),
            ("t3", weather(3).encode_to_vec()),
        ],
    );
    let mut args = vec!["replay", &traces, "-e", "cases.jsonl", "-q"];
    args.extend(scoring);
    let o = in_dir(dir, &args);
    assert_eq!(o.status.code(), Some(1), "w3 fails: {}", stderr(&o));
    let replay = saved_id(&o, ".toolscore/runs.db");

    let runs = runs_listed(dir, &[]);
    let of = |id: &str| runs.iter().find(|r| r["run"] == id).unwrap().clone();
    let (served, replayed) = (of(&id), of(&replay));
    // Every column a replay fills, a serve run fills, with the same counts.
    for (key, value) in replayed.as_object().unwrap() {
        if key == "run" || key == "started" {
            continue;
        }
        assert_eq!(&served[key], value, "`{key}`: {served} vs {replayed}");
    }
    assert_eq!(served["cases"], 4, "w1, w3 and the unmatched w2 and w4");
    let (s, r) = (recorded(dir, &id), recorded(dir, &replay));
    assert_eq!(s["settings"]["metrics"], r["settings"]["metrics"], "{s}");
    assert!(
        !s["settings"]["metrics"].as_array().unwrap().is_empty(),
        "{s}"
    );
    let headline = s["settings"]["metrics"][0].as_str().unwrap();
    assert_eq!(s["settings"]["thresholds"][headline], 0.9, "{s}");
    assert_eq!(s["fixture_hash"], r["fixture_hash"], "{s}");
    assert!(s["fixture_hash"].is_string(), "{s}");
    // The exit code a gate gives the run: w3 failed, as the replay's.
    assert_eq!(s["exit_code"], 1, "{s}");
    assert_eq!(s["exit_code"], r["exit_code"], "{r}");
    assert_eq!(
        (s["rejected"].clone(), s["traces"].clone()),
        (0.into(), 2.into())
    );
    assert!(s["ended_ms"].is_i64() && s["spans"] == 6, "{s}");
    // `runs show` gives a serve run's table as a replay's: the same columns.
    let heading = |run: &str| {
        let o = in_dir(dir, &["runs", "show", run]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(text.contains("w3"), "{text}");
        let mut lines = text.lines();
        let first = lines.next().unwrap_or_default();
        assert!(first.ends_with(", fixture cases.jsonl"), "{text}");
        lines.next().unwrap_or_default().to_string()
    };
    assert_eq!(heading(&id), heading(&replay));
}

/// One turn of a conversation in session `sess-1`: trace `t` calling `tool`.
fn turn(t: u8, tool: &str) -> Vec<u8> {
    super::request(super::agent_spans(
        t,
        "sess-1",
        &[(tool, serde_json::json!({}))],
    ))
    .encode_to_vec()
}

#[test]
fn a_session_revised_twice_counts_once_in_runs_trend_diff_and_baselines() {
    let tmp = TempDir::new("serve-store-revise");
    let dir = tmp.path();
    write_fixture(dir);
    let mut fixture = std::fs::read_to_string(dir.join("cases.jsonl")).unwrap();
    fixture += r#"{"id":"trip","session_id":"sess-1","expected_tools":["search_flights","book_flight","send_email"],"threshold":1.0}"#;
    fixture += "\n";
    std::fs::write(dir.join("cases.jsonl"), fixture).unwrap();
    let turns = [
        (21, "search_flights"),
        (22, "book_flight"),
        (23, "send_email"),
    ];
    // The replay first: every turn at once, one evaluation of the session.
    let mut requests = vec![("t1".to_string(), weather(1).encode_to_vec())];
    requests.extend(
        turns
            .iter()
            .map(|&(t, tool)| (format!("t{t}"), turn(t, tool))),
    );
    let requests: Vec<(&str, Vec<u8>)> = requests
        .iter()
        .map(|(n, b)| (n.as_str(), b.clone()))
        .collect();
    let traces = write_traces(dir, &requests);
    let o = in_dir(dir, &["replay", &traces, "-e", "cases.jsonl", "-q"]);
    assert_eq!(o.status.code(), Some(1), "w2..w4 unmatched: {}", stderr(&o));
    // Serve: a turn at a time, each scored before the next comes, so the
    // session is scored three times (fail, fail, pass).
    let out = dir.join("results.jsonl");
    let mut serve = start_serve(dir, &["--session-wait", "100ms"], &out);
    let id = run_id(&mut serve);
    post(&serve, 1);
    for (n, &(t, tool)) in turns.iter().enumerate() {
        send(serve.http, &turn(t, tool));
        wait_saved(dir, &id, &[], n + 2);
    }
    let (status, log) = serve.terminate();
    assert_eq!(status.code(), Some(0), "{log}");
    let rows = json_rows(&std::fs::read(&out).unwrap());
    let revisions: Vec<(i64, bool)> = rows
        .iter()
        .filter(|r| r["case"] == "trip" && r["type"] == "evaluation")
        .map(|r| (r["revision"].as_i64().unwrap(), r["pass"] == true))
        .collect();
    assert_eq!(revisions, [(1, false), (2, false), (3, true)]);

    // `runs`: the serve run counts the session once, as the replay does.
    let runs = runs_listed(dir, &[]);
    assert_eq!(runs.len(), 2, "{runs:?}");
    for key in ["cases", "passed", "failed", "pass_rate", "mean_score"] {
        assert_eq!(runs[0][key], runs[1][key], "`{key}`: {runs:?}");
    }
    assert_eq!(
        (runs[0]["cases"].clone(), runs[0]["passed"].clone()),
        (5.into(), 2.into())
    );
    // `trend`: one result per case per run.
    let o = in_dir(dir, &["trend", "-f", "jsonl"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let trend = json_rows(&o.stdout);
    let trip = trend.iter().find(|r| r["case"] == "trip").unwrap();
    assert_eq!(trip["passes"], serde_json::json!([true, true]), "{trip}");
    assert_eq!(trip["scores"], serde_json::json!([1.0, 1.0]), "{trip}");
    assert_eq!(trip["status"], "stable-pass", "{trip}");
    // `diff` of the two runs, and `--baseline last` against the serve run:
    // each case once, unchanged.
    let o = in_dir(dir, &["diff", "last~1", "last", "-f", "jsonl"]);
    let compared = json_rows(&o.stdout);
    let cases = compared
        .iter()
        .filter(|r| r["type"] != "comparison_summary");
    assert_eq!(cases.count(), 5, "{compared:?}");
    let o = in_dir(
        dir,
        &[
            "replay",
            &traces,
            "-e",
            "cases.jsonl",
            "-f",
            "jsonl",
            "--baseline",
            "last",
            "--no-store",
        ],
    );
    let summary = json_rows(&o.stdout)
        .into_iter()
        .find(|r| r["type"] == "comparison_summary")
        .unwrap();
    assert_eq!(summary["unchanged"], 5, "{summary}");
}

#[test]
fn a_postgres_restarted_mid_run_loses_and_repeats_no_batch() {
    let Some(pg) = PgServer::start() else {
        return;
    };
    let tmp = TempDir::new("serve-store-pg-restart");
    let dir = tmp.path();
    write_fixture(dir);
    let with_store = ["--store", pg.url.as_str()];
    let out = dir.join("results.jsonl");
    let mut serve = start_serve(dir, &with_store, &out);
    let id = run_id(&mut serve);
    post(&serve, 1);
    wait_saved(dir, &id, &with_store, 1);
    // The server goes away under serve: scoring and the file go on.
    pg.stop();
    post(&serve, 2);
    poll_until("trace 2 in the results file", LIMIT, || {
        read_rows(&out)
            .iter()
            .filter(|r| r["type"] == "evaluation")
            .count()
            == 2
    });
    serve.wait_log("the retry", "opening it again to go on saving");
    pg.start_again();
    post(&serve, 3);
    wait_saved(dir, &id, &with_store, 3);
    // A late span of trace 3, the call its case wanted: revision 2, which
    // replaces the failing revision 1 in the run's counts.
    let calls = [
        ("get_weather", serde_json::json!({"city": "Paris"})),
        ("get_weather", serde_json::json!({"city": "London"})),
        ("send_email", serde_json::json!({})),
    ];
    send(
        serve.http,
        &super::request(super::agent_spans(3, "conv-3", &calls)).encode_to_vec(),
    );
    wait_saved(dir, &id, &with_store, 4);
    let (status, log) = serve.terminate();
    assert_eq!(status.code(), Some(0), "{log}");
    assert!(log.contains("Saving this run again."), "{log}");
    assert!(log.contains("Run saved to the run store."), "{log}");
    // Every batch once, in the file's order: the store gives the file back.
    let file = std::fs::read(&out).unwrap();
    let shown = stored(dir, &id, &with_store);
    assert!(
        shown == file,
        "runs show differs from --output:\n{}\n---\n{}",
        String::from_utf8_lossy(&shown),
        String::from_utf8_lossy(&file)
    );
    let rows = json_rows(&file);
    let last = rows
        .iter()
        .rfind(|r| r["case"] == "w3" && r["type"] == "evaluation")
        .unwrap();
    assert_eq!(
        (last["revision"].clone(), last["pass"].clone()),
        (2.into(), true.into())
    );
    let runs = runs_listed(dir, &with_store);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["finished"], true, "{runs:?}");
    // w1, w2, w3 (by its revision 2) passed; w4 matched no trace.
    let counts = ["cases", "passed", "failed"].map(|k| runs[0][k].clone());
    assert_eq!(counts, [4, 3, 1].map(Value::from), "{runs:?}");
}

/// A PostgreSQL server that is not up yet when serve starts (both started
/// together, say) is waited for as one that goes away mid-run is: the open
/// is retried, bounded, and the run is saved whole once the server is up.
#[test]
fn a_postgres_not_up_yet_at_start_is_waited_for() {
    let Some(pg) = PgServer::start() else {
        return;
    };
    pg.stop();
    let tmp = TempDir::new("serve-store-pg-late");
    let dir = tmp.path();
    write_fixture(dir);
    let with_store = ["--store", pg.url.as_str()];
    let out = dir.join("results.jsonl");
    let mut serve = start_serve(dir, &with_store, &out);
    // Scoring does not wait for the store.
    post(&serve, 1);
    poll_until("trace 1 in the results file", LIMIT, || {
        read_rows(&out).iter().any(|r| r["type"] == "evaluation")
    });
    serve.wait_log(
        "a retry of the open",
        "The run store cannot be opened; trying again.",
    );
    pg.start_again();
    let line = serve.wait_log_within(
        "the run to be saved once the server is up",
        "Saving this run to the run store",
        LIMIT,
    );
    let id = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("run="))
        .unwrap_or_else(|| panic!("run= in {line}"))
        .to_string();
    wait_saved(dir, &id, &with_store, 1);
    let (status, log) = serve.terminate();
    assert_eq!(status.code(), Some(0), "{log}");
    assert!(log.contains("Run saved to the run store."), "{log}");
    let file = std::fs::read(&out).unwrap();
    assert!(
        stored(dir, &id, &with_store) == file,
        "the store gives the results file back"
    );
}
