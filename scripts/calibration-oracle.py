#!/usr/bin/env python3
"""Expected calibration figures from outside implementations.

Generates label sets (a metric's pass/fail verdicts, or scores, against
human pass/fail labels) and writes what scikit-learn and statsmodels say of
them into tests/data/calibration/oracle.json, which the Rust test
`calibrate::oracle` reads and compares with toolscore's own statistics
(src/calibrate/stats.rs).

The JSON file is committed: CI does not run this script. Run it again only
to change the label sets:

    python3 -m venv venv && venv/bin/pip install scikit-learn statsmodels
    venv/bin/python scripts/calibration-oracle.py

Figures:
- kappa: sklearn.metrics.cohen_kappa_score (NaN, written as null, where it
  is undefined);
- confusion: sklearn.metrics.confusion_matrix(human, metric, labels=[1, 0]);
- intervals: statsmodels proportion_confint(k, n, alpha=0.05,
  method="wilson") for accuracy and the agreement on each human class;
- best threshold: cohen_kappa_score at each candidate threshold (the
  current one and every distinct score), the highest kappa, ties to the
  candidate nearest the current threshold;
- labels for a width: the smallest n whose Wilson interval at the observed
  proportion is no wider than the width, found by scanning n.
"""

import json
import math
import random
import warnings
from pathlib import Path

import numpy as np
import sklearn
import statsmodels
from sklearn.metrics import cohen_kappa_score, confusion_matrix
from statsmodels.stats.proportion import proportion_confint

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "calibration" / "oracle.json"


def kappa(a, b):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        k = cohen_kappa_score(a, b, labels=[0, 1])
    return None if math.isnan(k) else float(k)


def wilson(k, n):
    if n == 0:
        return None
    lo, hi = proportion_confint(k, n, alpha=0.05, method="wilson")
    return [float(lo), float(hi)]


def figures(metric, human):
    cm = confusion_matrix(human, metric, labels=[1, 0])
    # Rows: human pass, human fail; columns: metric pass, metric fail.
    both_pass, mf_hp = int(cm[0][0]), int(cm[0][1])
    mp_hf, both_fail = int(cm[1][0]), int(cm[1][1])
    n = len(metric)
    return {
        "kappa": kappa(metric, human),
        "confusion": {
            "both_pass": both_pass,
            "metric_pass_human_fail": mp_hf,
            "metric_fail_human_pass": mf_hp,
            "both_fail": both_fail,
        },
        "accuracy": wilson(both_pass + both_fail, n),
        "pass_agreement": wilson(both_pass, both_pass + mf_hp),
        "fail_agreement": wilson(both_fail, both_fail + mp_hf),
    }


def best_threshold(scores, human, current):
    candidates = sorted(set(scores) | {current})
    best = None
    for t in candidates:
        k = kappa([1 if s >= t else 0 for s in scores], human)
        if k is None:
            continue
        if (
            best is None
            or k > best[1] + 1e-12
            or (k >= best[1] - 1e-12 and abs(t - current) < abs(best[0] - current))
        ):
            best = (t, k)
    return None if best is None else {"threshold": best[0], "kappa": best[1]}


def needed(p, width):
    n = 1
    while True:
        lo, hi = proportion_confint(p * n, n, alpha=0.05, method="wilson")
        if hi - lo <= width:
            return n
        n += 1


def label_sets():
    rng = random.Random(39)
    sets = []

    def add(name, metric, human):
        sets.append({"name": name, "metric": metric, "human": human})

    add("all pass, both raters", [1] * 12, [1] * 12)
    add("all fail, both raters", [0] * 7, [0] * 7)
    add("human all pass, metric mixed", [1, 0, 1, 1, 0, 1], [1] * 6)
    add("metric all fail, human mixed", [0] * 8, [1, 0, 0, 1, 0, 0, 0, 1])
    add("perfect agreement", [1, 0] * 15, [1, 0] * 15)
    add("perfect disagreement", [1, 0] * 10, [0, 1] * 10)
    # Chance agreement: the metric's verdict independent of the human's.
    add("chance agreement", [1, 1, 0, 0] * 10, [1, 0, 1, 0] * 10)
    add("one human pass", [1] + [0] * 9, [1] + [0] * 9)
    add("one human fail, missed", [1] * 10, [1] * 9 + [0])
    add("one label", [1], [0])
    add("eighteen of twenty", [1] * 9 + [0] + [1] + [0] * 9, [1] * 10 + [0] * 10)
    for i in range(12):
        n = rng.randint(5, 200)
        p_human = rng.random()
        p_agree = rng.random()
        human = [1 if rng.random() < p_human else 0 for _ in range(n)]
        metric = [h if rng.random() < p_agree else 1 - h for h in human]
        add(f"random {i}", metric, human)
    return sets


def score_sets():
    rng = random.Random(3939)
    sets = [
        {"name": "split at 0.6", "scores": [0.2, 0.4, 0.8, 1.0], "human": [0, 0, 1, 1], "current": 0.5},
        {"name": "split, current above", "scores": [0.2, 0.4, 0.8, 1.0], "human": [0, 0, 1, 1], "current": 0.9},
        {"name": "one class", "scores": [0.2, 0.9], "human": [1, 1], "current": 0.5},
    ]
    for i in range(10):
        n = rng.randint(5, 60)
        grid = [0.0, 0.25, 1 / 3, 0.5, 2 / 3, 0.75, 1.0]
        scores = [rng.choice(grid) for _ in range(n)]
        cut = rng.choice(grid)
        human = [1 if (s >= cut) != (rng.random() < 0.2) else 0 for s in scores]
        sets.append({"name": f"random {i}", "scores": scores, "human": human, "current": 0.5})
    for s in sets:
        s["expected"] = best_threshold(s["scores"], s["human"], s["current"])
    return sets


def main():
    sets = label_sets()
    for s in sets:
        s["expected"] = figures(s["metric"], s["human"])
    widths = []
    for p in [0.0, 0.5, 0.8, 0.9, 1.0]:
        for w in [0.1, 0.2, 0.3]:
            widths.append({"p": p, "width": w, "needed": needed(p, w)})
    doc = {
        "generated_by": "scripts/calibration-oracle.py",
        "versions": {
            "scikit-learn": sklearn.__version__,
            "statsmodels": statsmodels.__version__,
            "numpy": np.__version__,
        },
        "label_sets": sets,
        "thresholds": score_sets(),
        "widths": widths,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    # One label set per line: diffs of a regenerated file stay readable.
    lines = ["{"]
    keys = list(doc)
    for i, k in enumerate(keys):
        end = "," if i < len(keys) - 1 else ""
        v = doc[k]
        if isinstance(v, list):
            items = ",\n  ".join(json.dumps(x) for x in v)
            lines.append(f' "{k}": [\n  {items}\n ]{end}')
        else:
            lines.append(f' "{k}": {json.dumps(v)}{end}')
    lines.append("}")
    OUT.write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT}: {len(sets)} label sets, {len(doc['thresholds'])} score sets, {len(widths)} widths")


if __name__ == "__main__":
    main()
