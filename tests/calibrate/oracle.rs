//! toolscore's agreement statistics against scikit-learn and statsmodels:
//! the expected figures were written by scripts/calibration-oracle.py into
//! tests/data/calibration/oracle.json (label sets with the edge cases: one
//! class only, perfect and chance agreement, a single label of a class).

use serde_json::Value;
use toolscore::calibrate::stats::{self, Confusion};

use crate::util::data;

const TOLERANCE: f64 = 1e-9;

fn oracle() -> Value {
    let text = std::fs::read_to_string(data("calibration/oracle.json")).expect("oracle data");
    serde_json::from_str(&text).expect("oracle JSON")
}

fn bools(v: &Value) -> Vec<bool> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|x| x.as_u64() == Some(1))
        .collect()
}

fn close(ours: Option<f64>, theirs: &Value, what: &str) {
    match (ours, theirs.as_f64()) {
        (None, None) => {}
        (Some(a), Some(b)) => assert!((a - b).abs() < TOLERANCE, "{what}: ours {a}, oracle {b}"),
        (a, _) => panic!("{what}: ours {a:?}, oracle {theirs}"),
    }
}

fn interval(ours: Option<stats::Interval>, theirs: &Value, what: &str) {
    close(ours.map(|i| i.low), &theirs[0], &format!("{what} low"));
    close(ours.map(|i| i.high), &theirs[1], &format!("{what} high"));
}

#[test]
fn kappa_confusion_and_intervals_match_the_oracles() {
    let doc = oracle();
    let sets = doc["label_sets"].as_array().expect("label sets");
    assert!(sets.len() >= 20, "{}", sets.len());
    for set in sets {
        let name = set["name"].as_str().unwrap_or("?");
        let (metric, human) = (bools(&set["metric"]), bools(&set["human"]));
        let c = Confusion::of(metric.iter().copied().zip(human.iter().copied()));
        let want = &set["expected"];
        let confusion: Confusion = Confusion {
            both_pass: want["confusion"]["both_pass"].as_u64().unwrap() as usize,
            metric_pass_human_fail: want["confusion"]["metric_pass_human_fail"]
                .as_u64()
                .unwrap() as usize,
            metric_fail_human_pass: want["confusion"]["metric_fail_human_pass"]
                .as_u64()
                .unwrap() as usize,
            both_fail: want["confusion"]["both_fail"].as_u64().unwrap() as usize,
        };
        assert_eq!(c, confusion, "{name}");
        close(c.kappa(), &want["kappa"], &format!("{name}: kappa"));
        interval(
            stats::wilson(c.both_pass + c.both_fail, c.n()),
            &want["accuracy"],
            &format!("{name}: accuracy"),
        );
        interval(
            stats::wilson(c.both_pass, c.human_passes()),
            &want["pass_agreement"],
            &format!("{name}: pass agreement"),
        );
        interval(
            stats::wilson(c.both_fail, c.human_fails()),
            &want["fail_agreement"],
            &format!("{name}: fail agreement"),
        );
    }
    // The edge cases are there: undefined kappa, perfect, chance.
    let kappa_of = |name: &str| {
        sets.iter()
            .find(|s| s["name"] == name)
            .map(|s| s["expected"]["kappa"].clone())
            .unwrap_or_else(|| panic!("no set {name}"))
    };
    assert!(kappa_of("all pass, both raters").is_null());
    assert_eq!(kappa_of("perfect agreement"), 1.0);
    assert_eq!(kappa_of("chance agreement"), 0.0);
}

#[test]
fn best_threshold_matches_the_oracle() {
    let doc = oracle();
    for set in doc["thresholds"].as_array().expect("score sets") {
        let name = set["name"].as_str().unwrap_or("?");
        let scores: Vec<f64> = set["scores"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_f64().unwrap())
            .collect();
        let human = bools(&set["human"]);
        let pairs: Vec<(f64, bool)> = scores.into_iter().zip(human).collect();
        let current = set["current"].as_f64().unwrap();
        let ours = stats::best_threshold(&pairs, current);
        let want = &set["expected"];
        match ours {
            None => assert!(want.is_null(), "{name}: oracle {want}"),
            Some((t, c)) => {
                close(Some(t), &want["threshold"], &format!("{name}: threshold"));
                close(c.kappa(), &want["kappa"], &format!("{name}: kappa"));
            }
        }
    }
}

#[test]
fn labels_needed_for_a_width_match_the_oracle() {
    let doc = oracle();
    for w in doc["widths"].as_array().expect("widths") {
        let (p, width) = (w["p"].as_f64().unwrap(), w["width"].as_f64().unwrap());
        assert_eq!(
            stats::trials_for_width(p, width),
            w["needed"].as_u64().map(|n| n as usize),
            "p {p}, width {width}"
        );
    }
}
