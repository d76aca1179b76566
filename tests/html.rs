//! `--format html`: the page opened in a real (headless) Chromium, driven over
//! the DevTools protocol; and plain checks of size and escaping.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};
use tungstenite::{Message, WebSocket};

use crate::util::{hex, poll_until, require, toolscore, TempDir};

/// `target/` of this build (the binary lives in `target/<profile>/`).
pub(crate) fn target_dir() -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_toolscore"));
    bin.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("target"))
}

/// The Chromium on PATH, if any (Debian's package installs `chromium`).
pub(crate) fn find_chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    for name in [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ] {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// A headless browser we started; killed on drop.
pub(crate) struct Browser {
    child: Child,
    _profile: TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A DevTools protocol connection to one page (flattened session).
pub(crate) struct Cdp {
    ws: WebSocket<TcpStream>,
    session: Option<String>,
    next_id: u64,
    /// Every event received so far.
    events: Vec<Value>,
}

const DEADLINE: Duration = Duration::from_secs(60);

impl Cdp {
    pub(crate) fn send(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = &self.session {
            msg["sessionId"] = json!(s);
        }
        self.ws
            .send(Message::text(msg.to_string()))
            .expect("send to the browser");
        let v = poll_until(&format!("an answer to {method}"), DEADLINE, || {
            self.answer(id)
        });
        assert!(v.get("error").is_none(), "{method} failed: {v}");
        v["result"].clone()
    }

    /// Reads what the browser has sent until the answer to request `id`
    /// (`None`: not there yet); the events read on the way are kept.
    fn answer(&mut self, id: u64) -> Option<Value> {
        loop {
            let m = match self.ws.read() {
                Ok(Message::Text(t)) => t,
                Ok(_) => continue,
                Err(tungstenite::Error::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return None
                }
                Err(e) => panic!("reading from the browser: {e}"),
            };
            let v: Value = serde_json::from_str(m.as_str()).expect("CDP message is JSON");
            if v["id"] == json!(id) {
                return Some(v);
            }
            if v.get("method").is_some() {
                self.events.push(v);
            }
        }
    }

    /// Evaluates `expr` in the page and returns its value.
    pub(crate) fn eval(&mut self, expr: &str) -> Value {
        let r = self.send(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
        );
        assert!(
            r.get("exceptionDetails").is_none(),
            "`{expr}` threw: {}",
            r["exceptionDetails"]
        );
        r["result"]["value"].clone()
    }

    /// Polls `expr` until it is true.
    pub(crate) fn wait_for(&mut self, expr: &str) {
        poll_until(&format!("`{expr}`"), DEADLINE, || {
            let v = self.eval(expr);
            if v == json!(true) {
                Ok(())
            } else {
                Err(v)
            }
        })
    }

    /// A real mouse click at the middle of the element `selector` finds.
    fn click(&mut self, selector: &str) {
        let sel = serde_json::to_string(selector).unwrap();
        let at = self.eval(&format!(
            "(() => {{ const e = document.querySelector({sel}); e.scrollIntoView({{block: 'center'}});
               const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()"
        ));
        let (x, y) = (at[0].as_f64().unwrap(), at[1].as_f64().unwrap());
        for kind in ["mousePressed", "mouseReleased"] {
            self.send(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            );
        }
    }

    /// Console errors, uncaught exceptions and error log entries seen so far.
    fn errors(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| {
                let p = &e["params"];
                match e["method"].as_str()? {
                    "Runtime.exceptionThrown" => {
                        Some(format!("exception: {}", p["exceptionDetails"]))
                    }
                    "Runtime.consoleAPICalled"
                        if matches!(p["type"].as_str(), Some("error" | "assert")) =>
                    {
                        Some(format!("console.{}: {}", p["type"], p["args"]))
                    }
                    "Log.entryAdded" if p["entry"]["level"] == "error" => {
                        Some(format!("log: {}", p["entry"]))
                    }
                    _ => None,
                }
            })
            .collect()
    }
}

/// Starts headless Chromium and attaches to a fresh page.
pub(crate) fn open_browser(chromium: &Path) -> (Browser, Cdp) {
    let profile = TempDir::new("chromium");
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            // Root in containers and CI has no user namespaces for the sandbox.
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--remote-debugging-port=0",
            "--window-size=1280,1000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let stderr = child.stderr.take().expect("piped stderr");
    let browser = Browser {
        child,
        _profile: profile,
    };
    // The browser prints its DevTools address on stderr once it listens.
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if !sent {
                if let Some(url) = line.strip_prefix("DevTools listening on ") {
                    let _ = tx.send(url.trim().to_string());
                    sent = true;
                }
            }
        }
    });
    let url = rx
        .recv_timeout(DEADLINE)
        .expect("chromium printed no DevTools address");
    let host = url
        .trim_start_matches("ws://")
        .split('/')
        .next()
        .expect("ws://host:port/...");
    let stream = TcpStream::connect(host).expect("connect to DevTools");
    // The handshake waits as long as any answer (a loaded machine is slow to
    // answer); reads after it poll, so a short timeout.
    stream.set_read_timeout(Some(DEADLINE)).unwrap();
    let (ws, _) = tungstenite::client(url.as_str(), stream).expect("WebSocket handshake");
    ws.get_ref()
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut cdp = Cdp {
        ws,
        session: None,
        next_id: 0,
        events: Vec::new(),
    };
    let target = cdp.send("Target.createTarget", json!({"url": "about:blank"}));
    let attached = cdp.send(
        "Target.attachToTarget",
        json!({"targetId": target["targetId"], "flatten": true}),
    );
    cdp.session = Some(
        attached["sessionId"]
            .as_str()
            .expect("sessionId")
            .to_string(),
    );
    for domain in ["Runtime.enable", "Log.enable", "Page.enable"] {
        cdp.send(domain, json!({}));
    }
    cdp.send(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 1280, "height": 1000, "deviceScaleFactor": 1, "mobile": false}),
    );
    (browser, cdp)
}

/// (case, trace id) of the JSONL report's failing rows.
fn failing_in_jsonl(jsonl: &str) -> BTreeSet<(String, Option<String>)> {
    jsonl
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("JSONL row"))
        .filter(|r| {
            matches!(r["type"].as_str(), Some("evaluation" | "unmatched_case"))
                && r["pass"] == json!(false)
        })
        .map(|r| {
            (
                r["case"].as_str().unwrap().to_string(),
                r["trace_id"].as_str().map(str::to_string),
            )
        })
        .collect()
}

/// (case, trace id) of the JSONL report's cases whose calls, expected
/// tools or explanation name `tool`.
fn naming_in_jsonl(jsonl: &str, tool: &str) -> BTreeSet<(String, Option<String>)> {
    let name_of = |c: &Value| {
        c.as_str()
            .or_else(|| c["name"].as_str())
            .unwrap_or_default()
            .to_string()
    };
    jsonl
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("JSONL row"))
        .filter(|r| matches!(r["type"].as_str(), Some("evaluation" | "unmatched_case")))
        .filter(|r| {
            let list = |k: &str| r[k].as_array().cloned().unwrap_or_default();
            list("tools_called")
                .iter()
                .chain(&list("expected_tools"))
                .any(|c| name_of(c) == tool)
                || r["explanation"].as_str().unwrap_or("").contains(tool)
        })
        .map(|r| {
            (
                r["case"].as_str().unwrap().to_string(),
                r["trace_id"].as_str().map(str::to_string),
            )
        })
        .collect()
}

fn rows_of(v: &Value) -> BTreeSet<(String, Option<String>)> {
    v.as_array()
        .expect("array of rows")
        .iter()
        .map(|r| {
            (
                r[0].as_str().unwrap().to_string(),
                r[1].as_str().map(str::to_string),
            )
        })
        .collect()
}

const VISIBLE_ROWS: &str = "[...document.querySelectorAll('#cases details.case')]
    .filter(d => !d.hidden && d.getClientRects().length > 0)
    .map(d => [d.dataset.case, d.dataset.trace || null])";

/// `replay` of the sample traces in `format`, to `out` or stdout.
fn replay_sample(format: &str, out: Option<&str>) -> std::process::Output {
    let mut args = vec![
        "replay",
        "sample-traces",
        "--expected",
        "sample-traces/expected.jsonl",
        "--format",
        format,
        "--quiet",
    ];
    if let Some(o) = out {
        args.extend(["--output", o]);
    }
    toolscore(&args)
}

#[test]
fn html_report_in_a_real_browser() {
    let Some(chromium) = require(
        "chromium on PATH",
        "the report is checked in a real browser (`apt-get install chromium`; .ci/run installs it)",
        find_chromium(),
    ) else {
        return;
    };
    let target = target_dir();
    let page = target.join("html-report.html");
    let html = replay_sample("html", Some(page.to_str().unwrap()));
    let jsonl = replay_sample("jsonl", None);
    // The sample has failing cases: exit 1 for both formats alike.
    assert_eq!(html.status.code(), Some(1), "{html:?}");
    assert_eq!(jsonl.status.code(), html.status.code());
    let jsonl_text = String::from_utf8(jsonl.stdout).unwrap();
    let failing = failing_in_jsonl(&jsonl_text);
    assert!(!failing.is_empty(), "the sample traces have failing cases");

    let (_browser, mut cdp) = open_browser(&chromium);
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    cdp.send("Page.navigate", json!({"url": url}));
    cdp.wait_for(
        "document.readyState === 'complete' && document.getElementById('f-count').textContent !== ''",
    );

    let all = rows_of(&cdp.eval(VISIBLE_ROWS));
    assert!(
        all.len() > failing.len(),
        "passing cases are listed too: {all:?}"
    );
    assert!(failing.is_subset(&all), "{failing:?} not in {all:?}");

    filters_match_the_jsonl(&mut cdp, &jsonl_text, &failing, &all);
    failures_first_and_unused_tools_dashed(&mut cdp);
    failing_case_opens(&mut cdp);
    tool_table_sorts_by_number(&mut cdp);
    assert_no_console_errors(&mut cdp);
    save_screenshot(&mut cdp, &target.join("html-report.png"));
    every_case_expands(&mut cdp, all.len());
    assert_no_console_errors(&mut cdp);
}

/// "Failed only" and the search box show the rows the JSONL report names.
/// Leaves "failed only" on.
fn filters_match_the_jsonl(
    cdp: &mut Cdp,
    jsonl_text: &str,
    failing: &BTreeSet<(String, Option<String>)>,
    all: &BTreeSet<(String, Option<String>)>,
) {
    cdp.click("#f-failed");
    cdp.wait_for("document.getElementById('f-failed').checked");
    let shown = rows_of(&cdp.eval(VISIBLE_ROWS));
    assert_eq!(
        &shown, failing,
        "\"failed only\" shows exactly the JSONL report's failing cases"
    );

    // Typing in the search box: the cases that name the tool (calls,
    // expectations or explanation), failing or not.
    cdp.click("#f-failed");
    cdp.click("#f-text");
    cdp.send("Input.insertText", json!({"text": "Get_Stock_Price"}));
    cdp.wait_for("document.getElementById('f-text').value === 'Get_Stock_Price'");
    let named = rows_of(&cdp.eval(VISIBLE_ROWS));
    assert_eq!(named, naming_in_jsonl(jsonl_text, "get_stock_price"));
    assert!(!named.is_empty() && named.len() < all.len(), "{named:?}");
    cdp.eval(
        "(() => { const t = document.getElementById('f-text'); t.value = '';
               t.dispatchEvent(new Event('input')); })()",
    );
    cdp.click("#f-failed");
    assert_eq!(&rows_of(&cdp.eval(VISIBLE_ROWS)), failing);
}

/// Failures come first, each with its reason on the row, closed; a tool
/// never called has a dash in the tool table's latency columns.
fn failures_first_and_unused_tools_dashed(cdp: &mut Cdp) {
    let order = cdp.eval(
        "[...document.querySelectorAll('#cases details.case')].map(d => \
           [d.dataset.pass, (d.querySelector('summary .why') || {}).textContent || ''])",
    );
    let order = order.as_array().unwrap();
    let first_pass = order
        .iter()
        .position(|r| r[0] == "1")
        .unwrap_or(order.len());
    assert!(first_pass > 0, "{order:?}");
    assert!(
        order[first_pass..].iter().all(|r| r[0] == "1"),
        "failures first: {order:?}"
    );
    for r in &order[..first_pass] {
        assert!(!r[1].as_str().unwrap().is_empty(), "reason shown: {r:?}");
    }
    let never = cdp.eval(
        "[...document.querySelectorAll('#tools tbody tr')].filter(tr => \
           tr.children[1].dataset.v === '0').map(tr => tr.children[7].textContent)",
    );
    assert!(
        never.as_array().unwrap().iter().all(|t| t == "-"),
        "{never}"
    );
}

/// Opens the first failing case that has calls: its comparison, request
/// and timeline are drawn.
fn failing_case_opens(cdp: &mut Cdp) {
    cdp.click("#cases details.case.fail:not([hidden]) > summary");
    cdp.wait_for("!!document.querySelector('#cases details.case[open] .body')");
    let drawn = cdp.eval(
        "(() => { const b = document.querySelector('#cases details.case[open] .body');
           return [b.querySelectorAll('table.calls tbody tr').length,
                   b.querySelectorAll('svg.timeline rect.t').length,
                   b.querySelectorAll('svg.timeline rect').length]; })()",
    );
    assert!(drawn[0].as_u64().unwrap() > 0, "calls compared: {drawn}");
    let request = cdp.eval(
        "(document.querySelector('#cases details.case[open] .body .request') || {}).textContent || ''",
    );
    assert!(
        !request.as_str().unwrap().is_empty(),
        "the trace's request is shown"
    );
    assert!(
        drawn[1].as_u64().unwrap() > 0,
        "tool calls on the timeline: {drawn}"
    );
}

/// Sorting the tool table by a number column: largest first.
fn tool_table_sorts_by_number(cdp: &mut Cdp) {
    cdp.click("#tools th:nth-child(2)");
    let called = cdp.eval(
        "[...document.querySelectorAll('#tools tbody tr td:nth-child(2)')].map(td => +td.dataset.v)",
    );
    let called: Vec<u64> = called
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert!(called.windows(2).all(|w| w[0] >= w[1]), "{called:?}");
}

/// Lets the page render what the last action changed (two animation
/// frames: the one that lays it out and the next), then looks at what was
/// logged. The page runs no timers, so nothing is logged later.
pub(crate) fn assert_no_console_errors(cdp: &mut Cdp) {
    cdp.eval("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))");
    let errors = cdp.errors();
    assert!(errors.is_empty(), "console errors: {errors:#?}");
}

/// A PNG of the whole page (up to 8000 px high) at `path`, to look at.
pub(crate) fn save_screenshot(cdp: &mut Cdp, path: &Path) {
    let metrics = cdp.send("Page.getLayoutMetrics", json!({}));
    let height = metrics["cssContentSize"]["height"]
        .as_f64()
        .unwrap_or(1000.0)
        .min(8000.0);
    let shot = cdp.send(
        "Page.captureScreenshot",
        json!({"format": "png", "captureBeyondViewport": true,
               "clip": {"x": 0, "y": 0, "width": 1280, "height": height, "scale": 1}}),
    );
    let png = base64::engine::general_purpose::STANDARD
        .decode(shot["data"].as_str().unwrap())
        .unwrap();
    assert!(png.starts_with(b"\x89PNG"));
    std::fs::write(path, png).unwrap();
    eprintln!("screenshot: {}", path.display());
}

/// Every case expands without an error (sessions, a case with no trace):
/// all but at most one of the `cases` draw a timeline.
fn every_case_expands(cdp: &mut Cdp, cases: usize) {
    cdp.click("#f-failed");
    cdp.eval("document.querySelectorAll('#cases details.case').forEach(d => { d.open = true; })");
    cdp.wait_for(
        "[...document.querySelectorAll('#cases details.case')].every(d => d.querySelector('.body'))",
    );
    let timelines = cdp.eval("document.querySelectorAll('#cases svg.timeline').length");
    assert!(
        timelines.as_u64().unwrap() >= cases as u64 - 1,
        "{timelines}"
    );
}

/// An OTLP/JSON request of `n` traces, each an agent run with two model
/// turns and two tool calls, and the fixture expecting them (every third
/// case fails).
fn many_cases(n: usize, tool: &str) -> (String, String) {
    let mut spans = Vec::new();
    let mut cases = Vec::new();
    for i in 0..n {
        let trace = hex(&(i as u128 + 1).to_be_bytes());
        let id = |k: u64| hex(&((i as u64) << 8 | k).to_be_bytes());
        let t0: u64 = 1_700_000_000_000_000_000 + i as u64 * 10_000_000_000;
        let span =
            |k: u64, parent: Option<u64>, name: String, attrs: Value, start: u64, end: u64| {
                let mut s = json!({
                    "traceId": trace, "spanId": id(k), "name": name,
                    "startTimeUnixNano": (t0 + start).to_string(),
                    "endTimeUnixNano": (t0 + end).to_string(),
                    "attributes": attrs,
                });
                if let Some(p) = parent {
                    s["parentSpanId"] = json!(id(p));
                }
                s
            };
        let kv = |k: &str, v: &str| json!({"key": k, "value": {"stringValue": v}});
        spans.push(span(
            1,
            None,
            "invoke_agent weather".into(),
            json!([
                kv("gen_ai.operation.name", "invoke_agent"),
                kv("gen_ai.agent.name", "weather")
            ]),
            0,
            3_000_000_000,
        ));
        // The model's turns around the calls, as GenAI instrumentations record them.
        for (k, start) in [(4, 100_000_000), (5, 2_000_000_000)] {
            spans.push(span(
                k,
                Some(1),
                "chat gpt-4o".into(),
                json!([
                    kv("gen_ai.operation.name", "chat"),
                    kv("gen_ai.request.model", "gpt-4o")
                ]),
                start,
                start + 400_000_000,
            ));
        }
        for (k, (name, city)) in [(tool, "Paris"), ("format_answer", "")].iter().enumerate() {
            let k = k as u64 + 2;
            spans.push(span(
                k,
                Some(1),
                format!("execute_tool {name}"),
                json!([
                    kv("gen_ai.operation.name", "execute_tool"),
                    kv("gen_ai.tool.name", name),
                    kv(
                        "gen_ai.tool.call.arguments",
                        &json!({"city": city}).to_string()
                    ),
                ]),
                k * 500_000_000,
                k * 500_000_000 + 200_000_000,
            ));
        }
        let want_city = if i % 3 == 0 { "London" } else { "Paris" };
        cases.push(
            json!({"id": format!("case-{i}"), "trace_id": trace,
                   "expected_tools": [{"name": tool, "args": {"city": want_city}}, "format_answer"], "threshold": 0.9})
            .to_string(),
        );
    }
    let request = json!({"resourceSpans": [{"resource": {"attributes": []},
        "scopeSpans": [{"scope": {"name": "test"}, "spans": spans}]}]});
    (request.to_string(), cases.join("\n") + "\n")
}

fn write_report(dir: &TempDir, n: usize, tool: &str) -> (String, std::process::Output) {
    let (traces, cases) = many_cases(n, tool);
    let t = dir.path().join("traces.json");
    let e = dir.path().join("expected.jsonl");
    let o = dir.path().join("report.html");
    std::fs::write(&t, traces).unwrap();
    std::fs::write(&e, cases).unwrap();
    let out = toolscore(&[
        "replay",
        t.to_str().unwrap(),
        "-e",
        e.to_str().unwrap(),
        "-f",
        "html",
        "-o",
        o.to_str().unwrap(),
        "-q",
    ]);
    (std::fs::read_to_string(&o).unwrap_or_default(), out)
}

#[test]
fn html_report_of_1000_cases_stays_under_a_megabyte() {
    let dir = TempDir::new("html-size");
    let (html, out) = write_report(&dir, 1000, "get_weather");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    // Every case is in the page, with its timeline.
    assert_eq!(html.matches("\"case\":\"case-").count(), 1000);
    assert!(html.contains("\"spans\":[[\"invoke_agent weather\""));
    eprintln!("1000-case HTML report: {} bytes", html.len());
    assert!(html.len() < 1_000_000, "{} bytes", html.len());
    // Nothing to fetch: the only URL is the SVG namespace name.
    let urls = html.replace("http://www.w3.org/2000/svg", "");
    for external in ["http://", "https://", "<link", " src=", "url(", "@import"] {
        assert!(!urls.contains(external), "{external} in the page");
    }
}

#[test]
fn html_report_escapes_hostile_names() {
    let dir = TempDir::new("html-hostile");
    let hostile = "</script><script>alert(1)</script><img src=x onerror=alert(2)>";
    let (html, out) = write_report(&dir, 3, hostile);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    // The name appears (escaped) in the tool table and in the data...
    assert!(
        html.contains("&lt;/script&gt;&lt;script&gt;alert(1)"),
        "table cell escaped"
    );
    assert!(
        html.contains("\\u003c/script>\\u003cscript>alert(1)"),
        "JSON escaped"
    );
    // ...but never as markup: one data script and one code script, no more.
    assert!(!html.contains(hostile));
    assert_eq!(html.matches("<script").count(), 2);
    assert_eq!(html.matches("</script>").count(), 2);
    assert!(!html.contains("<img"));
}

/// A trace of 400 spans: the page keeps the first 150 for its timeline and
/// says how many there were.
#[test]
fn html_timeline_is_bounded() {
    let dir = TempDir::new("html-bounded");
    let trace = hex(&[7u8; 16]);
    let kv = |k: &str, v: &str| json!({"key": k, "value": {"stringValue": v}});
    let spans: Vec<Value> = (1..=400u64)
        .map(|k| {
            let mut s = json!({
                "traceId": trace, "spanId": hex(&k.to_be_bytes()),
                "name": format!("execute_tool step_{k}"),
                "startTimeUnixNano": (1_000_000 * k).to_string(),
                "endTimeUnixNano": (1_000_000 * k + 500_000).to_string(),
                "attributes": [kv("gen_ai.operation.name", "execute_tool"), kv("gen_ai.tool.name", &format!("step_{k}"))],
            });
            if k > 1 {
                s["parentSpanId"] = json!(hex(&1u64.to_be_bytes()));
            }
            s
        })
        .collect();
    let request = json!({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": spans}]}]});
    let t = dir.path().join("big.json");
    let e = dir.path().join("expected.jsonl");
    std::fs::write(&t, request.to_string()).unwrap();
    std::fs::write(
        &e,
        json!({"id": "big", "trace_id": trace, "expected_tools": ["step_1"]}).to_string() + "\n",
    )
    .unwrap();
    let out = toolscore(&[
        "replay",
        t.to_str().unwrap(),
        "-e",
        e.to_str().unwrap(),
        "-f",
        "html",
        "-q",
    ]);
    let html = String::from_utf8(out.stdout).unwrap();
    let data = html
        .split("<script type=\"application/json\" id=\"data\">")
        .nth(1)
        .and_then(|s| s.split("</script>").next())
        .expect("data script");
    let data: Value = serde_json::from_str(data).unwrap();
    let tl = &data["timelines"][&trace];
    assert_eq!(tl["total"], 400);
    assert_eq!(tl["spans"].as_array().unwrap().len(), 150);
    assert_eq!(data["timeline_spans"], 150);
    // Nested under the first span, tool calls marked.
    assert_eq!(tl["spans"][1][3], 1);
    assert_eq!(tl["spans"][1][4], "t");
}

#[test]
fn html_report_shows_the_baseline_comparison() {
    let dir = TempDir::new("html-baseline");
    let base = dir.path().join("base.jsonl");
    let page = dir.path().join("page.html");
    let args = [
        "replay",
        "sample-traces",
        "--expected",
        "sample-traces/expected.jsonl",
        "-q",
    ];
    let mut first = args.to_vec();
    first.extend(["-f", "jsonl", "-o", base.to_str().unwrap()]);
    assert_eq!(toolscore(&first).status.code(), Some(1));
    let mut second = args.to_vec();
    second.extend([
        "-f",
        "html",
        "-o",
        page.to_str().unwrap(),
        "--baseline",
        base.to_str().unwrap(),
    ]);
    assert_eq!(toolscore(&second).status.code(), Some(1));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("<p class=\"summary baseline\">baseline: 0 improved, 0 regressed"),
        "the comparison's summary is on the page"
    );
    assert!(html.contains("\"baseline\":[\"unchanged\""), "per case");
}

#[test]
fn html_report_shows_a_judge_error_apart_from_a_failure() {
    // A port nothing listens on: every judge request is refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let dir = TempDir::new("html-judge-error");
    let page = dir.path().join("page.html");
    let url = format!("http://127.0.0.1:{port}/v1");
    let out = toolscore(&[
        "replay",
        "sample-traces",
        "--expected",
        "sample-traces/expected.jsonl",
        "-m",
        "mlflow.llm_efficiency",
        "--judge-url",
        &url,
        "--judge-model",
        "m",
        "--judge-retries",
        "0",
        "-f",
        "html",
        "-o",
        page.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(out.status.code(), Some(2), "could not evaluate: exit 2");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("\"verdict\":\"judge_error\""),
        "judge errors apart"
    );
}
