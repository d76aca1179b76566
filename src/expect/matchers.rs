//! Argument matchers: expected argument values that say what a value must be
//! like rather than what it is, for values that change from run to run (ids,
//! timestamps, model-worded text, floats). docs/scoring.md describes them.
//!
//! An object whose keys all start with `$` is a matcher, at any depth of the
//! expected arguments: `{"$regex": "^Par"}`, `{"$type": "integer"}`,
//! `{"$approx": 3.1, "$tol": 0.01}`, `{"$contains": "Kyoto"}`,
//! `{"$any": true}`; `{"$literal": v}` stands for `v` compared as written.
//! They are compiled once, when the fixture is read; toolscore's own metrics
//! compare with them, the presets see the objects as written.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use regex::Regex;
use serde_json::Value;

use crate::value::json_eq;

/// The tolerance of an `$approx` without `$tol`: absolute, small enough to
/// tell any two numbers a person would write apart, large enough to absorb
/// float rounding (`0.1 + 0.2` is within it of `0.3`).
pub const DEFAULT_TOL: f64 = 1e-9;

/// How objects compare, the `--args` policies of `tool_correctness`
/// (arrays always compare item by item, as values do).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compare {
    /// The same keys on both sides.
    Exact,
    /// Every expected key is present; more called keys are fine.
    Subset,
    /// Every called key is expected; expected keys may be missing.
    Superset,
}

/// Expected arguments with matchers in them, compiled.
#[derive(Debug)]
pub enum Pattern {
    /// A value with no matcher inside, compared as a value.
    Plain(Value),
    /// An object with a matcher somewhere inside.
    Object(BTreeMap<String, Pattern>),
    /// An array with a matcher somewhere inside.
    Array(Vec<Pattern>),
    Matcher(Matcher),
}

/// One matcher.
#[derive(Debug)]
pub enum Matcher {
    /// A string the regex finds a match in (unanchored unless it anchors).
    Regex(Regex),
    Type(Kind),
    /// A number within `tol` of `value`.
    Approx {
        value: f64,
        tol: f64,
    },
    /// A string containing the text, or an array with an element equal to
    /// the value.
    Contains(Value),
    /// Any value (its key must be there where the policy wants it).
    Any,
}

/// The JSON kinds `$type` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    String,
    Number,
    /// A number without a fractional part (`3` and `3.0`, as JSON Schema).
    Integer,
    Boolean,
    Array,
    Object,
    Null,
}

const KINDS: [(&str, Kind, &str); 7] = [
    ("string", Kind::String, "a string"),
    ("number", Kind::Number, "a number"),
    ("integer", Kind::Integer, "an integer"),
    ("boolean", Kind::Boolean, "a boolean"),
    ("array", Kind::Array, "an array"),
    ("object", Kind::Object, "an object"),
    ("null", Kind::Null, "null"),
];

const KNOWN: &str = "$regex, $type, $approx (with $tol), $contains, $any, $literal";

/// Whether `v` is a matcher object: not empty, every key starting with `$`.
fn is_matcher(o: &serde_json::Map<String, Value>) -> bool {
    !o.is_empty() && o.keys().all(|k| k.starts_with('$'))
}

/// Whether `v` holds a matcher anywhere. Every fixture's expected arguments
/// go through this at load, so it visits each object once and never
/// descends into scalars.
pub fn any(v: &Value) -> bool {
    match v {
        Value::Object(o) => {
            let mut all_dollar = !o.is_empty();
            for (k, item) in o {
                all_dollar = all_dollar && k.starts_with('$');
                if (item.is_object() || item.is_array()) && any(item) {
                    return true;
                }
            }
            all_dollar
        }
        Value::Array(a) => a
            .iter()
            .any(|item| (item.is_object() || item.is_array()) && any(item)),
        _ => false,
    }
}

/// `v` with every object that would read as a matcher (all keys starting
/// with `$`, as real data may have: query languages) wrapped in
/// `{"$literal": ...}`, so that a fixture written from real arguments
/// (`toolscore record`) compares them as the values they are.
pub fn escape_literals(v: Value) -> Value {
    match v {
        Value::Object(o) if is_matcher(&o) => {
            let mut wrapped = serde_json::Map::new();
            wrapped.insert("$literal".into(), Value::Object(o));
            Value::Object(wrapped)
        }
        Value::Object(o) => Value::Object(
            o.into_iter()
                .map(|(k, item)| (k, escape_literals(item)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(escape_literals).collect()),
        other => other,
    }
}

/// Compiles expected arguments `v`, written at `path` (named in errors:
/// `expected_tools[0].args.city: $regex "(": unclosed group`).
pub fn compile(v: &Value, path: &str) -> Result<Pattern, String> {
    let mut at = path.to_string();
    pattern(v, &mut at)
}

fn pattern(v: &Value, at: &mut String) -> Result<Pattern, String> {
    match v {
        Value::Object(o) if is_matcher(o) => matcher(o, at),
        Value::Object(o) if o.values().any(any) => {
            let mut out = BTreeMap::new();
            for (k, item) in o {
                let len = at.len();
                let _ = write!(at, ".{k}");
                out.insert(k.clone(), pattern(item, at)?);
                at.truncate(len);
            }
            Ok(Pattern::Object(out))
        }
        Value::Array(a) if a.iter().any(any) => {
            let mut out = Vec::with_capacity(a.len());
            for (i, item) in a.iter().enumerate() {
                let len = at.len();
                let _ = write!(at, "[{i}]");
                out.push(pattern(item, at)?);
                at.truncate(len);
            }
            Ok(Pattern::Array(out))
        }
        other => Ok(Pattern::Plain(other.clone())),
    }
}

/// One matcher object.
fn matcher(o: &serde_json::Map<String, Value>, at: &str) -> Result<Pattern, String> {
    let err = |why: String| Err(format!("{at}: {why}"));
    if let Some(k) = o.keys().find(|k| {
        !matches!(
            k.as_str(),
            "$regex" | "$type" | "$approx" | "$tol" | "$contains" | "$any" | "$literal"
        )
    }) {
        return err(format!(
            "unknown matcher `{k}` (known: {KNOWN}; write {{\"$literal\": ...}} for data \
             whose keys start with `$`)"
        ));
    }
    let tol = o.get("$tol");
    if tol.is_some() && !o.contains_key("$approx") {
        return err("$tol needs $approx".into());
    }
    let keys: Vec<&str> = o
        .keys()
        .map(String::as_str)
        .filter(|k| *k != "$tol")
        .collect();
    if keys.len() > 1 {
        return err(format!(
            "one matcher per object, not {}",
            keys.join(" and ")
        ));
    }
    let (key, v) = match keys.first().and_then(|k| o.get_key_value(*k)) {
        Some(kv) => kv,
        None => return err("$tol needs $approx".into()),
    };
    let m = match (key.as_str(), v) {
        ("$literal", v) => return Ok(Pattern::Plain(v.clone())),
        ("$regex", Value::String(re)) => match Regex::new(re) {
            Ok(r) => Matcher::Regex(r),
            Err(e) => return err(format!("$regex {v}: {}", regex_error(&e))),
        },
        ("$type", Value::String(t)) => match KINDS.iter().find(|(n, _, _)| n == t) {
            Some(&(_, kind, _)) => Matcher::Type(kind),
            None => {
                let names: Vec<&str> = KINDS.iter().map(|(n, _, _)| *n).collect();
                return err(format!("$type {v} is not one of {}", names.join(", ")));
            }
        },
        ("$approx", Value::Number(n)) => {
            let tol = match tol {
                None => DEFAULT_TOL,
                Some(Value::Number(t)) => match t.as_f64() {
                    Some(t) if t >= 0.0 => t,
                    _ => return err(format!("$tol {t} must not be negative")),
                },
                Some(t) => return err(format!("$tol must be a number, not {}", kind_of(t))),
            };
            match n.as_f64() {
                Some(value) => Matcher::Approx { value, tol },
                None => return err(format!("$approx {n} is not a number")),
            }
        }
        ("$contains", v) => Matcher::Contains(v.clone()),
        ("$any", Value::Bool(true)) => Matcher::Any,
        ("$any", v) => return err(format!("$any must be true, not {v}")),
        (k, v) => {
            let want = if k == "$approx" {
                "a number"
            } else {
                "a string"
            };
            return err(format!("{k} must be {want}, not {}", kind_of(v)));
        }
    };
    Ok(Pattern::Matcher(m))
}

/// The regex crate's reason without its echo of the pattern.
fn regex_error(e: &regex::Error) -> String {
    let text = e.to_string();
    match text
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("error: "))
    {
        Some(why) => why.to_string(),
        None => text.clone(),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `want` is contained in `got`: for objects every key of `want` is in `got`
/// with a contained value (recursively); other values compare with `json_eq`.
pub fn contains(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => w
            .iter()
            .all(|(k, wv)| g.get(k).is_some_and(|gv| contains(gv, wv))),
        _ => json_eq(got, want),
    }
}

impl Matcher {
    /// Whether `got` is what the matcher asks for.
    pub fn holds(&self, got: &Value) -> bool {
        match self {
            Matcher::Regex(r) => got.as_str().is_some_and(|s| r.is_match(s)),
            Matcher::Type(k) => match (k, got) {
                (Kind::String, Value::String(_))
                | (Kind::Number, Value::Number(_))
                | (Kind::Boolean, Value::Bool(_))
                | (Kind::Array, Value::Array(_))
                | (Kind::Object, Value::Object(_))
                | (Kind::Null, Value::Null) => true,
                (Kind::Integer, Value::Number(n)) => {
                    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
                }
                _ => false,
            },
            Matcher::Approx { value, tol } => {
                got.as_f64().is_some_and(|g| (g - value).abs() <= *tol)
            }
            Matcher::Contains(want) => match (got, want) {
                (Value::String(g), Value::String(w)) => g.contains(w.as_str()),
                (Value::Array(items), w) => items.iter().any(|i| json_eq(i, w)),
                _ => false,
            },
            Matcher::Any => true,
        }
    }

    /// What the matcher asks for, after "expected".
    pub fn describe(&self) -> String {
        match self {
            Matcher::Regex(r) => format!("a match of /{}/", r.as_str()),
            Matcher::Type(k) => KINDS
                .iter()
                .find(|(_, kind, _)| kind == k)
                .map_or("a value", |(_, _, text)| text)
                .to_string(),
            Matcher::Approx { value, tol } => format!("a number within {tol} of {value}"),
            Matcher::Contains(v) => format!("a value containing {v}"),
            Matcher::Any => "any value".to_string(),
        }
    }
}

impl Pattern {
    /// Whether `got` satisfies the pattern, objects compared by `how`.
    pub fn holds(&self, got: &Value, how: Compare) -> bool {
        match (self, got) {
            (Pattern::Plain(want), _) => match how {
                Compare::Exact => json_eq(got, want),
                Compare::Subset => contains(got, want),
                Compare::Superset => contains(want, got),
            },
            (Pattern::Matcher(m), _) => m.holds(got),
            (Pattern::Object(want), Value::Object(g)) => match how {
                Compare::Exact => {
                    g.len() == want.len()
                        && want
                            .iter()
                            .all(|(k, p)| g.get(k).is_some_and(|v| p.holds(v, how)))
                }
                Compare::Subset => want
                    .iter()
                    .all(|(k, p)| g.get(k).is_some_and(|v| p.holds(v, how))),
                Compare::Superset => g
                    .iter()
                    .all(|(k, v)| want.get(k).is_some_and(|p| p.holds(v, how))),
            },
            // Array items compare as values do under every policy: exactly.
            (Pattern::Array(want), Value::Array(g)) => {
                g.len() == want.len() && want.iter().zip(g).all(|(p, v)| p.holds(v, Compare::Exact))
            }
            _ => false,
        }
    }

    /// Why `got` does not satisfy the pattern, one reason per value that
    /// fails (`city: expected a match of /^Par/, got "London"`).
    pub fn mismatches(&self, got: &Value, how: Compare) -> Vec<String> {
        let mut out = Vec::new();
        self.explain(got, how, &mut String::new(), &mut out);
        out
    }

    fn explain(&self, got: &Value, how: Compare, at: &mut String, out: &mut Vec<String>) {
        if self.holds(got, how) {
            return;
        }
        let here = |at: &str| {
            if at.is_empty() {
                "arguments".to_string()
            } else {
                at.to_string()
            }
        };
        match (self, got) {
            (Pattern::Object(want), Value::Object(g)) => {
                for (k, p) in want {
                    let len = at.len();
                    push_key(at, k);
                    match g.get(k) {
                        Some(v) => p.explain(v, how, at, out),
                        None if how != Compare::Superset => out.push(format!("{at}: missing")),
                        None => {}
                    }
                    at.truncate(len);
                }
                if how != Compare::Subset {
                    for k in g.keys().filter(|k| !want.contains_key(*k)) {
                        let len = at.len();
                        push_key(at, k);
                        out.push(format!("{at}: not expected"));
                        at.truncate(len);
                    }
                }
            }
            (Pattern::Array(want), Value::Array(g)) if g.len() == want.len() => {
                for (i, (p, v)) in want.iter().zip(g).enumerate() {
                    let len = at.len();
                    let _ = write!(at, "[{i}]");
                    p.explain(v, Compare::Exact, at, out);
                    at.truncate(len);
                }
            }
            (Pattern::Array(want), _) => out.push(format!(
                "{}: expected an array of {} items, got {got}",
                here(at),
                want.len()
            )),
            (Pattern::Object(_), _) => {
                out.push(format!("{}: expected an object, got {got}", here(at)))
            }
            (Pattern::Matcher(m), _) => out.push(format!(
                "{}: expected {}, got {got}",
                here(at),
                m.describe()
            )),
            (Pattern::Plain(want), _) => {
                out.push(format!("{}: expected {want}, got {got}", here(at)))
            }
        }
    }
}

fn push_key(at: &mut String, k: &str) {
    if !at.is_empty() {
        at.push('.');
    }
    at.push_str(k);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_dollar_keys_are_escaped_and_compare_literally() {
        let real = json!({"filter": {"$gt": 5}, "ops": [{"$set": {"a": 1}}], "n": 1});
        let escaped = escape_literals(real.clone());
        assert_eq!(
            escaped,
            json!({"filter": {"$literal": {"$gt": 5}}, "ops": [{"$literal": {"$set": {"a": 1}}}], "n": 1})
        );
        let pattern = compile(&escaped, "args").unwrap();
        assert!(pattern.holds(&real, Compare::Exact));
        assert_eq!(escape_literals(json!({"a": 1})), json!({"a": 1}));
    }
    use serde_json::json;

    fn p(v: Value) -> Pattern {
        compile(&v, "args").unwrap()
    }

    fn err(v: Value) -> String {
        compile(&v, "expected_tools[0].args").unwrap_err()
    }

    #[test]
    fn finds_matchers_at_any_depth_and_only_there() {
        assert!(!any(&json!({"city": "Paris", "n": [1, {"a": {}}]})));
        assert!(!any(&json!({"$regex": "x", "plain": 1})["plain"]));
        // Mixed keys are data, not a matcher.
        assert!(!any(&json!({"q": {"$regex": "x", "city": "y"}})));
        assert!(any(&json!({"q": [1, {"deep": {"$any": true}}]})));
        assert!(any(&json!({"$any": true})));
        let compiled = p(json!({"city": {"$regex": "^Par"}, "units": "metric"}));
        let Pattern::Object(o) = &compiled else {
            panic!("{compiled:?}")
        };
        assert!(matches!(o["units"], Pattern::Plain(_)));
        assert!(matches!(o["city"], Pattern::Matcher(Matcher::Regex(_))));
    }

    #[test]
    fn each_matcher() {
        let holds = |m: Value, got: Value| p(m).holds(&got, Compare::Exact);
        // $regex searches, like Python's re.search; only strings match.
        assert!(holds(json!({"$regex": "ari"}), json!("Paris")));
        assert!(!holds(json!({"$regex": "^ari"}), json!("Paris")));
        assert!(!holds(json!({"$regex": "1"}), json!(1)));
        for (t, yes, no) in [
            ("string", json!("x"), json!(1)),
            ("number", json!(1.5), json!("1")),
            ("integer", json!(3), json!(3.5)),
            ("integer", json!(3.0), json!("3")),
            ("boolean", json!(false), json!(0)),
            ("array", json!([]), json!({})),
            ("object", json!({}), json!([])),
            ("null", json!(null), json!(false)),
        ] {
            assert!(holds(json!({"$type": t}), yes.clone()), "{t} {yes}");
            assert!(!holds(json!({"$type": t}), no.clone()), "{t} {no}");
        }
        assert!(holds(json!({"$approx": 3.1, "$tol": 0.01}), json!(3.105)));
        assert!(!holds(json!({"$approx": 3.1, "$tol": 0.01}), json!(3.2)));
        assert!(holds(json!({"$approx": 0.3}), json!(0.1 + 0.2)));
        assert!(!holds(json!({"$approx": 0.3}), json!(0.3001)));
        assert!(holds(json!({"$approx": 100}), json!(100)));
        assert!(!holds(json!({"$approx": 1}), json!("1")));
        assert!(holds(json!({"$contains": "Kyo"}), json!("to Kyoto")));
        assert!(holds(
            json!({"$contains": "Kyoto"}),
            json!(["Tokyo", "Kyoto"])
        ));
        assert!(holds(json!({"$contains": 1}), json!([1.0, 2])));
        assert!(!holds(json!({"$contains": "Kyo"}), json!(["Kyoto"])));
        assert!(!holds(json!({"$contains": 1}), json!("1")));
        assert!(holds(json!({"$any": true}), json!(null)));
        // $literal: the inner value as written, `$` keys and all.
        let lit = json!({"$literal": {"$ref": "#/a"}});
        assert!(holds(lit.clone(), json!({"$ref": "#/a"})));
        assert!(!holds(lit, json!({"$ref": "#/b"})));
        assert!(holds(
            json!({"$literal": {"$any": true}}),
            json!({"$any": true})
        ));
        assert!(!holds(json!({"$literal": {"$any": true}}), json!(1)));
    }

    #[test]
    fn objects_follow_the_policy_and_arrays_compare_item_by_item() {
        let want = p(json!({"city": {"$regex": "^Par"}, "id": {"$any": true}}));
        let exact = json!({"city": "Paris", "id": 7});
        let more = json!({"city": "Paris", "id": 7, "units": "metric"});
        let less = json!({"city": "Paris"});
        assert!(want.holds(&exact, Compare::Exact));
        assert!(!want.holds(&more, Compare::Exact));
        assert!(!want.holds(&less, Compare::Exact));
        assert!(want.holds(&more, Compare::Subset));
        assert!(!want.holds(&less, Compare::Subset), "$any needs its key");
        assert!(want.holds(&less, Compare::Superset));
        assert!(!want.holds(&more, Compare::Superset));
        assert!(!want.holds(&json!({"city": "London"}), Compare::Superset));
        // Plain values beside matchers follow the policy too.
        let nested = p(json!({"q": {"a": 1, "b": {"$type": "string"}}, "o": {"x": 1}}));
        let got = json!({"q": {"a": 1.0, "b": "s", "c": 0}, "o": {"x": 1, "y": 2}});
        assert!(nested.holds(&got, Compare::Subset));
        assert!(!nested.holds(&got, Compare::Exact));
        let list = p(json!({"l": [{"$regex": "^a"}, {"k": 1}]}));
        assert!(list.holds(&json!({"l": ["ab", {"k": 1}]}), Compare::Subset));
        assert!(!list.holds(&json!({"l": ["ab", {"k": 1, "z": 0}]}), Compare::Subset));
        assert!(!list.holds(&json!({"l": ["ab"]}), Compare::Subset));
    }

    #[test]
    fn mismatches_read_naturally() {
        let want = p(
            json!({"city": {"$regex": "^Par"}, "days": {"$approx": 3.1, "$tol": 0.01},
            "id": {"$any": true}, "units": "metric", "l": [{"$contains": "x"}]}),
        );
        let got = json!({"city": "London", "days": 3.1, "units": "imperial", "l": ["y"], "z": 1});
        assert_eq!(
            want.mismatches(&got, Compare::Exact),
            [
                "city: expected a match of /^Par/, got \"London\"",
                "id: missing",
                "l[0]: expected a value containing \"x\", got \"y\"",
                "units: expected \"metric\", got \"imperial\"",
                "z: not expected",
            ]
        );
        assert_eq!(
            want.mismatches(&got, Compare::Superset),
            [
                "city: expected a match of /^Par/, got \"London\"",
                "l[0]: expected a value containing \"x\", got \"y\"",
                "units: expected \"metric\", got \"imperial\"",
                "z: not expected",
            ]
        );
        let typed = p(json!({"n": {"$type": "integer"}, "o": {"k": {"$any": true}}}));
        assert_eq!(
            typed.mismatches(&json!({"n": 1.5, "o": 2}), Compare::Subset),
            [
                "n: expected an integer, got 1.5",
                "o: expected an object, got 2"
            ]
        );
        assert_eq!(
            p(json!({"$type": "object"})).mismatches(&json!([]), Compare::Subset),
            ["arguments: expected an object, got []"]
        );
    }

    #[test]
    fn fixtures_compile_matchers_and_reject_a_bad_one_alone() {
        use crate::expect::{parse_file, FixtureOptions};
        use crate::ingest::Position;
        let text = r#"{"id":"a","session_id":"s","expected_tools":["x",{"name":"f","args":{"q":1}},{"name":"g","args":{"city":{"$regex":"^Par"}}}]}
{"id":"b","session_id":"s","expected_tool_calls":[{"name":"f","arguments":{"n":{"$approx":1,"$tol":"x"}}}]}
{"id":"c","session_id":"s","agents":{"helper":{"expected_tools":[{"name":"f","args":{"l":[{"$type":"nope"}]}}]}}}
"#;
        let loaded = parse_file(text, "f.jsonl", &FixtureOptions::default());
        let ids: Vec<&str> = loaded.cases.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["a"]);
        let calls = loaded.cases[0].expected.calls();
        assert!(calls[0].matchers.is_none() && calls[1].matchers.is_none());
        assert!(calls[2].matchers.is_some());
        // The arguments stay as written: output and presets see the object.
        assert_eq!(calls[2].args, Some(json!({"city": {"$regex": "^Par"}})));
        let why: Vec<(Position, &str)> = loaded
            .rejected
            .iter()
            .map(|r| (r.position.clone(), r.reason.as_str()))
            .collect();
        assert_eq!(
            why,
            [
                (
                    Position::Line(2),
                    "expected_tool_calls[0].args.n: $tol must be a number, not a string"
                ),
                (
                    Position::Line(3),
                    "agents.helper.expected_tools[0].args.l[0]: $type \"nope\" is not one of \
                     string, number, integer, boolean, array, object, null"
                ),
            ]
        );
        // Other formats: the path names that format's keys.
        let ragas = r#"[{"user_input": "a", "reference_tool_calls": [{"name": "f", "args": {"k": {"$any": 1}}}]},
            {"user_input": "b", "reference_tool_calls": [{"name": "f", "args": {"k": {"$any": true}}}]}]"#;
        let loaded = parse_file(ragas, "r.json", &FixtureOptions::default());
        assert_eq!(loaded.cases.len(), 1);
        assert!(loaded.cases[0].expected.calls()[0].matchers.is_some());
        assert_eq!(
            loaded.rejected[0].reason,
            "Ragas samples: [0]: reference_tool_calls[0].args.k: $any must be true, not 1"
        );
    }

    #[test]
    fn bad_matchers_name_the_key_path() {
        assert_eq!(
            err(json!({"city": {"$regex": "("}})),
            "expected_tools[0].args.city: $regex \"(\": unclosed group"
        );
        assert_eq!(
            err(json!({"l": [1, {"x": {"$type": "str"}}]})),
            "expected_tools[0].args.l[1].x: $type \"str\" is not one of string, number, \
             integer, boolean, array, object, null"
        );
        let e = err(json!({"city": {"$ref": "x"}}));
        assert!(
            e.starts_with("expected_tools[0].args.city: unknown matcher `$ref`"),
            "{e}"
        );
        assert!(e.contains("$literal"), "{e}");
        for (m, why) in [
            (
                json!({"$regex": 1}),
                "$regex must be a string, not a number",
            ),
            (
                json!({"$type": true}),
                "$type must be a string, not a boolean",
            ),
            (
                json!({"$approx": "3"}),
                "$approx must be a number, not a string",
            ),
            (
                json!({"$approx": 3, "$tol": "x"}),
                "$tol must be a number, not a string",
            ),
            (
                json!({"$approx": 3, "$tol": -1}),
                "$tol -1 must not be negative",
            ),
            (json!({"$tol": 0.1}), "$tol needs $approx"),
            (json!({"$any": false}), "$any must be true, not false"),
            (json!({"$any": 1}), "$any must be true, not 1"),
            (
                json!({"$regex": "a", "$type": "string"}),
                "one matcher per object, not $regex and $type",
            ),
        ] {
            assert_eq!(
                err(json!({"v": m})),
                format!("expected_tools[0].args.v: {why}")
            );
        }
    }
}
