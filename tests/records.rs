//! The Collector's protobuf-records files (`format: proto`: a 4-byte
//! big-endian length, then the message): a record longer than a JSON line
//! may be is rejected with its file and byte offset, without being held,
//! and the records after it are read.

use std::fs;
use std::path::Path;

use serde_json::Value;
use toolscore::ingest::files::TraceInput;
use toolscore::ingest::stream::{decode_inputs, StreamOptions};
use toolscore::ingest::{Limits, Position, Rejected, Request};

use crate::util::{data, toolscore, TempDir};

/// A record: the body's length, big-endian, then the body.
fn record(body: &[u8]) -> Vec<u8> {
    let len = u32::try_from(body.len()).expect("a test record fits a u32");
    let mut out = len.to_be_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

fn request(n: usize) -> Vec<u8> {
    fs::read(data(&format!("corpus/strands/otlp/req-{n:04}.pb"))).expect("corpus request")
}

fn jsonl(out: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON row"))
        .collect()
}

/// A length of 4 GiB - 1 after a good record, on the real binary: the record
/// is rejected as over the cap (256 MiB, as a JSON line) with its file and
/// byte offset, before anything of it is held; the good record is scored.
#[test]
fn an_oversized_record_length_is_rejected_with_its_file_and_offset() {
    let dir = TempDir::new("records");
    let mut file = record(&request(1));
    let at = file.len();
    file.extend_from_slice(&u32::MAX.to_be_bytes());
    file.extend_from_slice(&[0u8; 64]);
    let path = dir.path().join("collector.pb");
    fs::write(&path, &file).unwrap();
    let good = dir.path().join("good.pb");
    fs::write(&good, record(&request(1))).unwrap();

    let run = |p: &Path| toolscore(&["replay", p.to_str().unwrap(), "--format", "jsonl", "-q"]);
    let out = run(&path);
    assert_eq!(out.status.code(), Some(2), "rejected input is exit 2");
    let rows = jsonl(&out.stdout);
    let rejected: Vec<&Value> = rows.iter().filter(|r| r["type"] == "rejected").collect();
    assert_eq!(rejected.len(), 1, "{rows:#?}");
    assert_eq!(rejected[0]["source"], path.display().to_string());
    assert_eq!(rejected[0]["position"], "record 2");
    let reason = rejected[0]["reason"].as_str().unwrap();
    assert_eq!(
        reason,
        format!("record longer than 268435456 bytes at byte {at} (4294967295 bytes): skipped")
    );
    // Everything before it is kept: the same spans as the good record alone.
    let stats = |rows: &[Value]| {
        let summary = rows.iter().find(|r| r["type"] == "summary").cloned();
        summary.expect("a summary row")["stats"].clone()
    };
    let alone = jsonl(&run(&good).stdout);
    assert_eq!(stats(&rows)["spans"], stats(&alone)["spans"]);
    assert!(stats(&rows)["spans"].as_u64() > Some(0));
}

/// With a lower cap (the same setting as JSON lines), a real record over it
/// between two good ones: it is skipped, and the record after it is read.
#[test]
fn the_records_after_an_oversized_one_are_read() {
    let dir = TempDir::new("records-rest");
    let (first, big, last) = (request(1), request(3), request(2));
    let cap = first.len().max(last.len());
    assert!(big.len() > cap, "request 3 is the largest");
    let mut file = record(&first);
    let at = file.len();
    file.extend(record(&big));
    file.extend(record(&last));
    let path = dir.path().join("collector.pb");
    fs::write(&path, &file).unwrap();

    let options = StreamOptions {
        threads: 2,
        chunk_bytes: 1000,
        max_line_bytes: cap,
    };
    let (mut requests, mut rejected) = (Vec::<Request>::new(), Vec::<Rejected>::new());
    let inputs = [TraceInput::File(path.clone())];
    let filter = toolscore::ingest::projection::KeepAll;
    decode_inputs(&inputs, &Limits::default(), &filter, &options, |piece| {
        requests.extend(piece.decoded.requests);
        rejected.extend(piece.decoded.rejected);
    });
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    assert_eq!(rejected[0].source, path.display().to_string());
    assert_eq!(rejected[0].position, Position::Record(2));
    assert_eq!(
        rejected[0].reason,
        format!(
            "record longer than {cap} bytes at byte {at} ({} bytes): skipped",
            big.len()
        )
    );
    let decode = |pb: &[u8]| {
        let d = toolscore::ingest::decode(&record(pb), "x", &Limits::default());
        assert!(d.rejected.is_empty());
        d.requests
    };
    assert_eq!(requests, [decode(&first), decode(&last)].concat());
}
