//! Where results go besides the JSONL rows: the results API stream, the
//! HTML page at shutdown, and a results file that cannot be written.

use std::path::Path;
use std::time::Duration;

use prost::Message;
use serde_json::{json, Value};
use toolscore::serve::ServeError;

use super::{get, metric_value, of_type, post, start, trace_id, weather, Framing, PROTOBUF};
use crate::util::{hex, poll_until, require, TempDir};

#[test]
fn results_api_streams_evaluations() {
    use toolscore::serve::results_api::pb::results_service_client::ResultsServiceClient;
    use toolscore::serve::results_api::pb::SubscribeRequest;
    let server = start("results-api", |c, dir| {
        let default = dir.join("default.json");
        std::fs::write(&default, r#"["get_weather"]"#).unwrap();
        c.default_expected = Some(default);
    });
    let url = format!("http://{}", server.grpc);
    let mut stream = server.rt.block_on(async {
        let mut client = ResultsServiceClient::connect(url).await.expect("connect");
        client
            .subscribe(SubscribeRequest {
                metrics: vec!["tool_correctness".into()],
                ..Default::default()
            })
            .await
            .expect("subscribe")
            .into_inner()
    });
    let mut client = server.grpc_client();
    server.grpc_export(&mut client, weather(7)).expect("export");
    let got = server
        .rt
        .block_on(async { tokio::time::timeout(Duration::from_secs(15), stream.message()).await })
        .expect("a result within 15 s")
        .expect("stream ok")
        .expect("one message");
    assert_eq!(got.trace_id, trace_id(7));
    // One unexpected extra call: F1 0.667 passes the default 0.5 threshold.
    assert!(got.pass, "{got:?}");
    assert_eq!(got.revision, 1);
    assert_eq!(got.scores[0].metric, "tool_correctness");
    assert_eq!(got.unexpected, vec!["get_weather".to_string()]);

    // A trace still buffered at shutdown: its result reaches the
    // subscriber too, then the stream ends.
    let rest = server.rt.spawn(async move {
        let mut got = Vec::new();
        while let Ok(Some(m)) = stream.message().await {
            got.push(m);
        }
        got
    });
    server.grpc_export(&mut client, weather(8)).expect("export");
    server.token.cancel();
    let rest = server
        .rt
        .block_on(async { tokio::time::timeout(Duration::from_secs(15), rest).await })
        .expect("the stream ends after the final drain")
        .expect("collector task");
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!(rest[0].trace_id, trace_id(8));
    server.stop();
}

/// A results file that cannot be written (a full disk: `/dev/full`) is not
/// acknowledged over: readiness goes 503, new data gets 503 with a retry
/// hint, and the run ends with an error naming the rows it could not write.
#[test]
fn a_failing_results_file_refuses_new_data_and_fails_the_run() {
    let Some(full) = require(
        "/dev/full",
        "a results file on a full disk",
        Some(Path::new("/dev/full")).filter(|p| p.exists()),
    ) else {
        return;
    };
    let srv = start("dev-full", |c, _| c.output = Some(full.to_path_buf()));
    let r = post(
        srv.http,
        &[PROTOBUF],
        &weather(1).encode_to_vec(),
        Framing::Length,
    );
    assert_eq!(r.status, 200, "accepted before anything failed");
    let ready = || get(srv.admin.unwrap(), "/readyz").0;
    poll_until("readiness to go 503", Duration::from_secs(15), || {
        ready() == 503
    });
    let (_, text) = get(srv.admin.unwrap(), "/metrics");
    assert_eq!(metric_value(&text, "toolscore_output_failing"), 1.0);
    let r = post(
        srv.http,
        &[PROTOBUF],
        &weather(2).encode_to_vec(),
        Framing::Length,
    );
    assert_eq!(r.status, 503);
    assert!(r.header("retry-after").is_some());
    let mut client = srv.grpc_client();
    let err = srv.grpc_export(&mut client, weather(3)).unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unavailable);
    srv.token.cancel();
    let result = srv
        .rt
        .block_on(async { tokio::time::timeout(Duration::from_secs(30), srv.handle).await })
        .expect("stops within 30 s")
        .expect("server task");
    match result {
        Err(ServeError::Abandoned(why)) => assert!(why.contains("row(s)"), "{why}"),
        other => panic!("the run must fail: {other:?}"),
    }
}

/// `--html FILE`: the page is written at shutdown from the latest results,
/// failing the same cases as the JSONL rows.
#[test]
fn html_report_is_written_at_shutdown() {
    // Outside the server's directory, which `stop` removes.
    let keep = TempDir::new("html-page");
    let page = keep.path().join("report.html");
    let server = start("html", |c, dir| {
        let fixture = dir.join("expected.jsonl");
        let case = json!({"id": "weather-rome", "trace_id": hex(&trace_id(1)),
            "expected_tools": [{"name": "get_weather", "args": {"city": "Paris"}},
                               {"name": "get_weather", "args": {"city": "Rome"}}],
            "threshold": 0.9});
        std::fs::write(&fixture, format!("{case}\n")).unwrap();
        c.expected = Some(fixture);
        c.html = Some(page.clone());
    });
    // Written at start (a placeholder): a bad path fails before any data.
    assert!(std::fs::read_to_string(&page)
        .unwrap()
        .contains("writes this report when it shuts down"));
    for t in 1..=2 {
        let r = post(
            server.http,
            &[PROTOBUF],
            &weather(t).encode_to_vec(),
            Framing::Length,
        );
        assert_eq!(r.status, 200);
    }
    server.wait_for("both traces scored", |s| s.traces_scored == 2);
    let (summary, rows) = server.stop();
    assert_eq!(summary.failed, 1);
    let html = std::fs::read_to_string(&page).unwrap();
    let data = html
        .split("<script type=\"application/json\" id=\"data\">")
        .nth(1)
        .and_then(|s| s.split("</script>").next())
        .expect("data script");
    let data: Value = serde_json::from_str(data).unwrap();
    let failing: Vec<&Value> = of_type(&rows, "evaluation")
        .into_iter()
        .filter(|r| r["pass"] == json!(false))
        .map(|r| &r["case"])
        .collect();
    let page_failing: Vec<&Value> = data["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["pass"] == json!(false))
        .map(|c| &c["case"])
        .collect();
    assert_eq!(page_failing, failing);
    assert_eq!(page_failing, [&json!("weather-rome")]);
    assert_eq!(data["unmatched_traces"].as_array().unwrap().len(), 1);
    assert!(
        html.contains(
            "<td data-v=\"get_weather\" class=\"name\">get_weather</td><td data-v=\"4\">"
        ),
        "4 calls of get_weather in the tool table"
    );
}
