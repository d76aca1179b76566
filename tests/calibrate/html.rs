//! The calibration page in a real (headless) Chromium: the confusion
//! matrix and the disagreements as the JSONL report gives them, hostile
//! case names shown as text.

use serde_json::{json, Value};

use super::cli::{trace_id, write_run};
use crate::html::{
    assert_no_console_errors, find_chromium, open_browser, save_screenshot, target_dir,
};
use crate::util::{json_rows, require, toolscore, TempDir};

#[test]
fn calibration_page_in_a_real_browser() {
    let Some(chromium) = require(
        "chromium on PATH",
        "the calibration page is checked in a real browser (`apt-get install chromium`)",
        find_chromium(),
    ) else {
        return;
    };
    let dir = TempDir::new("calibrate-html");
    let (traces, fixture) = write_run(dir.path(), 8);
    // A hostile case name: renamed in the fixture and the labels alike.
    let hostile = "<img src=x onerror=alert(1)>";
    let fixture_text = std::fs::read_to_string(&fixture)
        .unwrap()
        .replace("\"c03\"", &json!(hostile).to_string());
    std::fs::write(&fixture, fixture_text).unwrap();
    let case = |i: usize| {
        if i == 3 {
            hostile.to_string()
        } else {
            format!("c{i:02}")
        }
    };
    // People pass only the full runs: c01, c02 (passed at 0.5) disagree.
    let rows: Vec<String> = (0..8)
        .map(|i| json!({"case": case(i), "trace_id": trace_id(i), "label": i % 4 == 0 || i == 3, "rationale": "<b>seen</b>"}).to_string())
        .collect();
    let labels = dir.path().join("labels.jsonl");
    std::fs::write(&labels, rows.join("\n")).unwrap();
    let run = |format: &str, out: Option<&str>| {
        let mut args = vec![
            "calibrate",
            &traces,
            "-e",
            &fixture,
            "--labels",
            labels.to_str().unwrap(),
            "-q",
            "-f",
            format,
            "--min-labels",
            "1",
        ];
        if let Some(o) = out {
            args.extend(["-o", o]);
        }
        toolscore(&args)
    };
    let page = dir.path().join("calibration.html");
    let html = run("html", Some(page.to_str().unwrap()));
    assert_eq!(
        html.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&html.stderr)
    );
    let jsonl = run("jsonl", None);
    let c = json_rows(&jsonl.stdout)
        .into_iter()
        .find(|r| r["type"] == "calibration")
        .expect("calibration row");

    let (_browser, mut cdp) = open_browser(&chromium);
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    cdp.send("Page.navigate", json!({"url": url}));
    cdp.wait_for("document.readyState === 'complete'");
    let cells = cdp.eval(
        "[...document.querySelectorAll('table.confusion td')].map(td => Number(td.textContent))",
    );
    let k = &c["confusion"];
    assert_eq!(
        cells,
        json!([
            k["both_pass"],
            k["metric_pass_human_fail"],
            k["metric_fail_human_pass"],
            k["both_fail"]
        ]),
        "{c}"
    );
    let shown: Value = cdp.eval(
        "[...document.querySelectorAll('table.disagreements tr')].slice(1).map(tr => [tr.cells[0].textContent, tr.cells[1].textContent])",
    );
    let want: Vec<Value> = c["disagreements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| json!([d["case"], d["trace_id"]]))
        .collect();
    assert_eq!(shown, json!(want));
    assert!(!want.is_empty());
    // The hostile name is text, not an element; nothing ran.
    assert_eq!(
        cdp.eval("document.querySelectorAll('img, b').length"),
        json!(0)
    );
    assert_eq!(
        cdp.eval(&format!(
            "document.body.textContent.includes({})",
            json!(hostile)
        )),
        json!(true)
    );
    assert_no_console_errors(&mut cdp);
    save_screenshot(&mut cdp, &target_dir().join("calibration-report.png"));
}
