//! Declared key vocabularies of the built-in rule table: one list of the
//! attribute keys under which instrumentations write one thing (a tool
//! span's arguments, its result), named once in `vocabulary.toml` and used by
//! every rule that reads that thing (docs/conventions.md, "Key
//! vocabularies"). In `unless`, `{ vocab = "<name>" }` stands for one
//! presence test per key (the marks of a model call), and `{ attr =
//! "<key>", equals_vocab = "<name>" }` for one `equals` test of the key
//! per value.
//!
//! A source written `{ vocab = "<name>", ... }` stands for one source per
//! key of the vocabulary, in its order, each with the source's other
//! settings; a key an earlier source of the same list already reads is not
//! read twice. The expansion happens when the table is loaded, so the rules
//! `toolscore conventions` prints (and a config file holds) name plain
//! keys.

use std::collections::BTreeMap;

use toml::{Table, Value};

/// The source lists of a rule that may use a vocabulary, and its list of
/// conditions that may (`unless`: a presence test per key).
const SOURCE_LISTS: [&str; 5] = ["name_from", "args", "result", "error_message", "unless"];

/// The list of [`SOURCE_LISTS`] that holds conditions, not sources.
const CONDITIONS: &str = "unless";

/// The key naming a vocabulary in a source.
const VOCAB: &str = "vocab";

/// The key of a condition in `unless` standing for one `equals` test of
/// its `attr` per value of the vocabulary it names (the tool name Google
/// ADK's summary span of a turn's responses carries, `merged_tool_names`,
/// is declared once for the rules that leave it out).
const EQUALS_VOCAB: &str = "equals_vocab";

/// `rules` with every `vocab` source replaced by the sources it stands for;
/// an error names the rule and the reason.
pub(crate) fn expand(
    rules: Vec<Table>,
    vocabularies: &BTreeMap<String, Vec<String>>,
) -> Result<Vec<Table>, String> {
    rules
        .into_iter()
        .map(|mut rule| {
            let name = rule
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if let Some(Value::Table(family)) = rule.get_mut(FAMILY) {
                expand_family(family, vocabularies)
                    .map_err(|e| format!("rule `{name}`, `family`: {e}"))?;
            }
            for list in SOURCE_LISTS {
                if let Some(Value::Array(sources)) = rule.get_mut(list) {
                    let expanded =
                        expand_list(std::mem::take(sources), vocabularies, list == CONDITIONS)
                            .map_err(|e| format!("rule `{name}`, `{list}`: {e}"))?;
                    *sources = expanded;
                }
            }
            Ok(rule)
        })
        .collect()
}

/// A rule's kind-marker family, whose key lists may name a vocabulary.
const FAMILY: &str = "family";

/// A family's key list written `{ vocab = "<name>" }` (`keys`, `untyped`)
/// replaced by that vocabulary's keys: the kind keys the generic rule
/// reads are the ones that type a span for the others.
fn expand_family(
    family: &mut Table,
    vocabularies: &BTreeMap<String, Vec<String>>,
) -> Result<(), String> {
    for list in ["keys", "untyped"] {
        let Some(Value::Table(t)) = family.get(list) else {
            continue;
        };
        let name = t.get(VOCAB).and_then(Value::as_str).ok_or(format!(
            "`{list}` is a key list or {{ vocab = \"<name>\" }}"
        ))?;
        let keys = vocabularies
            .get(name)
            .ok_or_else(|| format!("no vocabulary `{name}`"))?;
        let keys = keys.iter().cloned().map(Value::String).collect();
        family.insert(list.into(), Value::Array(keys));
    }
    Ok(())
}

fn expand_list(
    sources: Vec<Value>,
    vocabularies: &BTreeMap<String, Vec<String>>,
    conditions: bool,
) -> Result<Vec<Value>, String> {
    let mut out: Vec<Value> = Vec::with_capacity(sources.len());
    for source in sources {
        let Value::Table(mut t) = source else {
            out.push(source);
            continue;
        };
        if let Some(values) = t.remove(EQUALS_VOCAB) {
            if !conditions {
                return Err(format!("`{EQUALS_VOCAB}` is for conditions (`unless`)"));
            }
            let name = values.as_str().ok_or("`equals_vocab` names a vocabulary")?;
            let values = vocabularies
                .get(name)
                .ok_or_else(|| format!("no vocabulary `{name}`"))?;
            if !t.contains_key("attr") || t.contains_key("equals") {
                return Err(format!(
                    "an `{EQUALS_VOCAB}` condition names its `attr` and no `equals` ({name})"
                ));
            }
            for value in values {
                let mut one = t.clone();
                one.insert("equals".into(), Value::String(value.clone()));
                out.push(Value::Table(one));
            }
            continue;
        }
        let Some(vocab) = t.remove(VOCAB) else {
            out.push(Value::Table(t));
            continue;
        };
        let name = vocab.as_str().ok_or("`vocab` names a vocabulary")?;
        let keys = vocabularies
            .get(name)
            .ok_or_else(|| format!("no vocabulary `{name}`"))?;
        if t.contains_key("attr") || t.contains_key("span_name") || t.contains_key("event") {
            return Err(format!(
                "a `vocab` source names its keys: no `attr`, `span_name` or `event` ({name})"
            ));
        }
        for key in keys {
            // A condition on the key's value is no presence test: only
            // the same bare test makes another one redundant.
            let same = |s: &Value| {
                reads_attr(s, key) && (!conditions || s.as_table().is_some_and(|t| t.len() == 1))
            };
            if out.iter().any(same) {
                continue;
            }
            let mut one = t.clone();
            one.insert("attr".into(), Value::String(key.clone()));
            out.push(Value::Table(one));
        }
    }
    Ok(out)
}

/// Whether source `s` reads span attribute `key`.
fn reads_attr(s: &Value, key: &str) -> bool {
    s.get("attr").and_then(Value::as_str) == Some(key) && s.get("event").is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Table {
        text.parse().unwrap()
    }

    /// One vocabulary `name` of `words`.
    fn one_vocab(name: &str, words: &[&str]) -> BTreeMap<String, Vec<String>> {
        let words = words.iter().map(|w| w.to_string()).collect();
        BTreeMap::from([(name.to_string(), words)])
    }

    #[test]
    fn a_familys_key_list_may_name_a_vocabulary() {
        let vocab = one_vocab("kinds", &["span.kind", "log_type"]);
        let rule = table(
            r#"
            name = "r"
            family = { keys = ["name"], untyped = { vocab = "kinds" } }
            "#,
        );
        let out = expand(vec![rule], &vocab).unwrap();
        let family = out[0]["family"].as_table().unwrap();
        let untyped: Vec<&str> = family["untyped"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(untyped, ["span.kind", "log_type"]);
        assert_eq!(family["keys"].as_array().unwrap().len(), 1);
        let bad = table(r#"family = { keys = { vocab = "none" } }"#);
        assert!(expand(vec![bad], &vocab).is_err());
    }

    #[test]
    fn a_vocabulary_source_stands_for_its_keys_in_order_without_repeats() {
        let vocab = one_vocab("args", &["a.args", "b.args", "c.args"]);
        let rule = table(
            r#"
            name = "r"
            args = [
              { attr = "b.args", decode = "json", unwrap = ["x"] },
              { vocab = "args", decode = "json" },
              { attr = "d.args" },
            ]
            "#,
        );
        let out = expand(vec![rule], &vocab).unwrap();
        let args = out[0]["args"].as_array().unwrap();
        let keys: Vec<&str> = args.iter().map(|s| s["attr"].as_str().unwrap()).collect();
        assert_eq!(keys, ["b.args", "a.args", "c.args", "d.args"]);
        // The key already read keeps its own settings; the others take the
        // vocabulary source's.
        assert!(args[0].get("unwrap").is_some());
        assert_eq!(args[1]["decode"].as_str(), Some("json"));
        assert!(args.iter().all(|s| s.get(VOCAB).is_none()));
    }

    #[test]
    fn an_equals_vocabulary_stands_for_one_equals_test_per_value() {
        let vocab = one_vocab("merged", &["(merged tools)", "(all)"]);
        let rule = table(
            r#"
            name = "r"
            unless = [{ attr = "gen_ai.tool.name", equals_vocab = "merged" }, { attr = "x" }]
            "#,
        );
        let out = expand(vec![rule], &vocab).unwrap();
        let unless = out[0]["unless"].as_array().unwrap();
        let tests: Vec<(&str, Option<&str>)> = unless
            .iter()
            .map(|c| {
                (
                    c["attr"].as_str().unwrap(),
                    c.get("equals").and_then(Value::as_str),
                )
            })
            .collect();
        assert_eq!(
            tests,
            [
                ("gen_ai.tool.name", Some("(merged tools)")),
                ("gen_ai.tool.name", Some("(all)")),
                ("x", None)
            ]
        );
        for bad in [
            r#"unless = [{ attr = "a", equals_vocab = "none" }]"#,
            r#"unless = [{ equals_vocab = "merged" }]"#,
            r#"unless = [{ attr = "a", equals = "b", equals_vocab = "merged" }]"#,
            r#"args = [{ attr = "a", equals_vocab = "merged" }]"#,
        ] {
            assert!(expand(vec![table(bad)], &vocab).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_vocabulary_in_unless_stands_for_a_presence_test_per_key() {
        let vocab = one_vocab("marks", &["m.usage", "m.kind"]);
        let rule = table(
            r#"
            name = "r"
            unless = [{ attr = "m.kind", equals = "chat" }, { vocab = "marks" }]
            "#,
        );
        let out = expand(vec![rule], &vocab).unwrap();
        let unless = out[0]["unless"].as_array().unwrap();
        // The value test on `m.kind` does not stand for its presence test.
        assert_eq!(unless.len(), 3);
        assert_eq!(unless[1].as_table().unwrap().len(), 1);
        assert_eq!(unless[2]["attr"].as_str(), Some("m.kind"));
    }

    #[test]
    fn unknown_or_mixed_vocabulary_sources_are_errors() {
        let vocab = one_vocab("args", &["a"]);
        let unknown = table("name = \"r\"\nargs = [{ vocab = \"nope\" }]");
        let err = expand(vec![unknown], &vocab).unwrap_err();
        assert!(err.contains("rule `r`") && err.contains("nope"), "{err}");
        let mixed = table("name = \"r\"\nresult = [{ vocab = \"args\", attr = \"x\" }]");
        assert!(expand(vec![mixed], &vocab).is_err());
    }
}
