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

/// The peak resident memory of a running process so far, in KiB (Linux).
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `{` then 1 GiB of spaces, gzipped (1 MB): read whole, the document grew
/// to the inflate cap (808 MB, 97 s). Long runs of blanks are no longer
/// held, so it is rejected at the cap in bounded memory.
#[test]
fn a_json_document_padded_with_blanks_costs_no_memory() {
    use std::io::Write;
    use std::process::Stdio;
    use std::time::Duration;

    let gz = |bytes: &[u8]| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    };
    // Concatenated gzip members are one stream: 1 MiB of spaces, 1024 times.
    let mut file = gz(b"{");
    let spaces = gz(&vec![b' '; 1 << 20]);
    for _ in 0..1024 {
        file.extend_from_slice(&spaces);
    }
    let dir = TempDir::new("blank-document");
    let path = dir.path().join("padded.json.gz");
    std::fs::write(&path, file).unwrap();
    let child = crate::util::bin()
        .args(["inspect", path.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = crate::util::ChildGuard(child);
    let pid = child.0.id();
    let mut peak = 0;
    let status = crate::util::poll_every(
        Duration::from_millis(20),
        "the padded document to be rejected",
        Duration::from_secs(300),
        || {
            peak = peak.max(peak_rss_kib(pid).unwrap_or(0));
            assert!(peak < 256 << 10, "peak RSS {peak} KiB while reading");
            child.0.try_wait().unwrap()
        },
    );
    let mut err = String::new();
    std::io::Read::read_to_string(child.0.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("inflates to more than"), "{err}");
}
