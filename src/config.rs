//! The config file (`--config toolscore.toml`, or `.yaml`/`.yml`/`.json`):
//! user conventions, session keys and name normalization. Unknown keys are
//! errors everywhere, so a typo never silently does nothing.
//!
//! ```toml
//! [conventions]
//! builtin = true                 # false: only the rules below
//! disable = ["langsmith"]        # drop built-in rules by name
//! retrievers_as_tools = false
//!
//! [[conventions.rule]]           # the form `toolscore conventions --format toml` prints
//! name = "acme"
//! priority = 5
//! when = [{ attr = "acme.kind", equals = "tool" }]
//! name_from = [{ attr = "acme.tool" }, { span_name = true, pattern = '^tool:(.+)$' }]
//! args = [{ attr = "acme.args", decode = "json" }]
//!
//! [sessions]
//! keys = ["session.id"]          # replaces the default list
//! extra_keys = ["acme.thread"]   # or adds to it
//!
//! [normalize]
//! enabled = true                 # as `--normalize`
//! rename = [{ pattern = '^acme_(.*)$', replace = "$1" }]
//! ```
//!
//! Sections are independent fields of [`Config`], so a new one (e.g. the
//! server's) is one more field.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::assemble::session;
use crate::extract::rules::{self, RuleError, RuleSpec};
use crate::extract::Extractor;
use crate::names::{Normalizer, RenameError, RenameSpec};

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The whole config file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub conventions: ConventionsConfig,
    #[serde(default)]
    pub sessions: SessionsConfig,
    #[serde(default)]
    pub normalize: NormalizeConfig,
    /// `[serve]`: the live service's settings (flags and `TOOLSCORE_*`
    /// variables override them).
    #[serde(default, skip_serializing)]
    pub serve: Option<crate::serve::ServeConfig>,
    /// `[judge]`: the LLM judge (`--judge-*` flags override it; the API key
    /// comes from the environment only).
    #[serde(default, skip_serializing)]
    pub judge: Option<crate::judge::JudgeConfig>,
}

/// `[conventions]`: the rule table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConventionsConfig {
    /// Start from the built-in rules (default true).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub builtin: bool,
    /// Rule names to remove.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disable: Vec<String>,
    /// As `--retrievers-as-tools`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub retrievers_as_tools: bool,
    /// User rules; one with a built-in rule's name replaces it.
    #[serde(default, rename = "rule", skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<RuleSpec>,
}

impl Default for ConventionsConfig {
    fn default() -> Self {
        ConventionsConfig {
            builtin: true,
            disable: Vec::new(),
            retrievers_as_tools: false,
            rules: Vec::new(),
        }
    }
}

/// `[sessions]`: which attributes group traces into sessions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionsConfig {
    /// Replaces the default key list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<Vec<String>>,
    /// Added after the (default or given) keys.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_keys: Vec<String>,
}

/// `[normalize]`: tool-name normalization for scoring.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NormalizeConfig {
    /// As `--normalize`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub enabled: bool,
    /// Regex rewrites applied before the built-in canonical form.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rename: Vec<RenameSpec>,
}

// Inner errors are part of the message, not a `source`, so `{:#}` chains do
// not print them twice.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {path}: {error}")]
    Read { path: String, error: std::io::Error },
    #[error("config {path}: {message}")]
    Invalid { path: String, message: String },
    #[error("cannot write the rule table: {0}")]
    Render(String),
}

/// The syntax of a config text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    Toml,
    Yaml,
    Json,
}

impl Syntax {
    /// By file extension; `None` for an unknown one.
    pub fn from_path(path: &Path) -> Option<Syntax> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "toml" => Some(Syntax::Toml),
            "yaml" | "yml" => Some(Syntax::Yaml),
            "json" => Some(Syntax::Json),
            _ => None,
        }
    }
}

impl Config {
    /// Reads and checks a config file (syntax from the extension, else TOML
    /// then YAML).
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let label = path.display().to_string();
        // A config is small; a device or FIFO given by mistake must not hang.
        let text =
            crate::ingest::files::read_text_capped(path, 16 * 1024 * 1024).map_err(|error| {
                ConfigError::Read {
                    path: label.clone(),
                    error,
                }
            })?;
        let config = match Syntax::from_path(path) {
            Some(syntax) => Config::parse(&text, syntax, &label)?,
            None => Config::parse(&text, Syntax::Toml, &label)
                .or_else(|_| Config::parse(&text, Syntax::Yaml, &label))?,
        };
        Ok(config)
    }

    /// Parses and checks config text: rules and rename patterns must compile.
    pub fn parse(text: &str, syntax: Syntax, label: &str) -> Result<Config, ConfigError> {
        let err = |message: String| ConfigError::Invalid {
            path: label.to_string(),
            message,
        };
        let config: Config = match syntax {
            Syntax::Toml => {
                toml::from_str(text).map_err(|e| err(e.to_string().trim().to_string()))?
            }
            Syntax::Yaml => {
                // An empty YAML document is an empty config, not an error.
                if text.trim().is_empty() {
                    Config::default()
                } else {
                    check_yaml_nesting(text).map_err(err)?;
                    serde_norway::from_str(text).map_err(|e| err(e.to_string()))?
                }
            }
            Syntax::Json => serde_json::from_str(text).map_err(|e| err(e.to_string()))?,
        };
        config.extractor().map_err(|e| err(e.to_string()))?;
        Normalizer::new(&config.normalize.rename).map_err(|e| err(e.to_string()))?;
        Ok(config)
    }

    /// The active rule specs: built-ins (unless turned off) merged with the
    /// user's rules, in the order they are tried.
    pub fn rule_specs(&self) -> Vec<RuleSpec> {
        let c = &self.conventions;
        let base = if c.builtin {
            rules::builtin()
        } else {
            Vec::new()
        };
        rules::merge(base, &c.rules, &c.disable)
    }

    /// The extractor for these conventions.
    pub fn extractor(&self) -> Result<Extractor, RuleError> {
        let x = if self.conventions.builtin
            && self.conventions.rules.is_empty()
            && self.conventions.disable.is_empty()
        {
            Extractor::default() // the cached built-in table
        } else {
            let specs = self.rule_specs();
            // Before compiling for real: an oversized table is refused fast.
            rules::check_regex_budget(&specs)?;
            Extractor::new(&specs)?
        };
        Ok(x.with_retrievers(self.conventions.retrievers_as_tools))
    }

    /// The session keys, in the order they are tried.
    pub fn session_keys(&self) -> Vec<String> {
        let mut keys = self
            .sessions
            .keys
            .clone()
            .unwrap_or_else(session::default_keys);
        for k in &self.sessions.extra_keys {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
        keys
    }

    /// Name normalization: on with `force` (`--normalize`) or `enabled`.
    pub fn normalizer(&self, force: bool) -> Result<Normalizer, RenameError> {
        if force || self.normalize.enabled {
            Normalizer::new(&self.normalize.rename)
        } else {
            Ok(Normalizer::off())
        }
    }
}

/// The deepest YAML nesting accepted. The YAML parser's cost grows with the
/// square of the depth (40k levels took 6.5 s), and TOML's parser refuses
/// past a similar depth.
pub const YAML_MAX_NESTING: usize = 64;

/// Refuses YAML nested deeper than [`YAML_MAX_NESTING`] before it is
/// parsed, naming the line. An estimate from above: open block indents,
/// `- ` entries starting on the line and unclosed `[`/`{` outside quotes
/// and comments, so a document it accepts is never deeper than the limit.
fn check_yaml_nesting(text: &str) -> Result<(), String> {
    let mut indents: Vec<usize> = Vec::new();
    let mut flow = 0usize;
    let mut quote: Option<char> = None;
    for (n, line) in text.lines().enumerate() {
        let body = line.trim_start_matches(' ');
        let indent = line.len() - body.len();
        if flow == 0 && quote.is_none() && !body.is_empty() && !body.starts_with('#') {
            while indents.last().is_some_and(|&i| i > indent) {
                indents.pop();
            }
            if indents.last() != Some(&indent) {
                indents.push(indent);
            }
        }
        let mut dashes = 0;
        let mut rest = body;
        while let Some(r) = rest.strip_prefix("- ").or_else(|| rest.strip_prefix("? ")) {
            dashes += 1;
            rest = r.trim_start_matches(' ');
        }
        let mut prev = ' ';
        for c in body.chars() {
            match (quote, c) {
                (Some('"'), '"') if prev != '\\' => quote = None,
                (Some('\''), '\'') => quote = None,
                (Some(_), _) => {}
                // Only at a scalar's start: `don't` is plain text.
                (None, '"' | '\'') if matches!(prev, ' ' | '[' | '{' | ',' | ':') => {
                    quote = Some(c)
                }
                (None, '#') if prev == ' ' => break,
                (None, '[' | '{') => flow += 1,
                (None, ']' | '}') => flow = flow.saturating_sub(1),
                _ => {}
            }
            if indents.len() + dashes + flow > YAML_MAX_NESTING {
                return Err(format!(
                    "line {}: nested deeper than {YAML_MAX_NESTING} levels",
                    n + 1
                ));
            }
            prev = if prev == '\\' && c == '\\' { ' ' } else { c };
        }
        if indents.len() + dashes > YAML_MAX_NESTING {
            return Err(format!(
                "line {}: nested deeper than {YAML_MAX_NESTING} levels",
                n + 1
            ));
        }
    }
    Ok(())
}

/// How `toolscore conventions` prints the rule table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableFormat {
    /// For people.
    Text,
    /// Config-file forms: paste into a config to start from them.
    Toml,
    Yaml,
    Json,
}

#[derive(Serialize)]
struct RuleFile<'a> {
    conventions: RuleSection<'a>,
}

#[derive(Serialize)]
struct RuleSection<'a> {
    rule: &'a [RuleSpec],
}

/// Renders a rule table. The config forms hold `[[conventions.rule]]`
/// entries: since a user rule replaces the built-in rule of the same name,
/// pasting them into a config file changes nothing until they are edited.
pub fn render_rules(specs: &[RuleSpec], format: TableFormat) -> Result<String, ConfigError> {
    let doc = RuleFile {
        conventions: RuleSection { rule: specs },
    };
    let render = |e: &dyn std::fmt::Display| ConfigError::Render(e.to_string());
    match format {
        TableFormat::Toml => toml_rules(specs),
        TableFormat::Yaml => serde_norway::to_string(&doc).map_err(|e| render(&e)),
        TableFormat::Json => serde_json::to_string_pretty(&doc)
            .map(|s| s + "\n")
            .map_err(|e| render(&e)),
        TableFormat::Text => Ok(rules_text(specs)),
    }
}

/// TOML with one inline table per condition and source (the serializer's
/// default would nest `[[conventions.rule.when]]` tables, hard to read).
fn toml_rules(specs: &[RuleSpec]) -> Result<String, ConfigError> {
    let mut out = String::new();
    for spec in specs {
        let table = toml::Table::try_from(spec).map_err(|e| ConfigError::Render(e.to_string()))?;
        out.push_str("[[conventions.rule]]\n");
        for (k, v) in &table {
            out.push_str(&format!("{k} = {}\n", toml_inline(v, true)));
        }
        out.push('\n');
    }
    Ok(out)
}

fn toml_inline(v: &toml::Value, top: bool) -> String {
    match v {
        toml::Value::Table(t) => {
            let fields: Vec<String> = t
                .iter()
                .map(|(k, v)| format!("{k} = {}", toml_inline(v, false)))
                .collect();
            format!("{{ {} }}", fields.join(", "))
        }
        // A list of tables at the top level: one per line.
        toml::Value::Array(a) if top && a.iter().any(toml::Value::is_table) && a.len() > 1 => {
            let items: Vec<String> = a
                .iter()
                .map(|x| format!("  {},", toml_inline(x, false)))
                .collect();
            format!("[\n{}\n]", items.join("\n"))
        }
        toml::Value::Array(a) => {
            let items: Vec<String> = a.iter().map(|x| toml_inline(x, false)).collect();
            format!("[{}]", items.join(", "))
        }
        other => other.to_string(),
    }
}

fn join<T: std::fmt::Display>(items: &[T], sep: &str) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(sep)
}

fn rules_text(specs: &[RuleSpec]) -> String {
    let mut rows: Vec<[String; 5]> = vec![[
        "PRIO".into(),
        "RULE".into(),
        "KIND".into(),
        "WHEN".into(),
        "NAME FROM".into(),
    ]];
    for s in specs {
        let mut when = join(&s.when, " and ");
        if let Some(f) = &s.family {
            let mut marker = if f.names_span {
                format!("<ns>.{{{}}} = the span's name", f.keys.join(","))
            } else {
                format!("<ns>.{{{}}} = {:?}", f.keys.join(","), f.equals)
            };
            if !f.beside.is_empty() {
                marker.push_str(&format!(" beside <ns>.{{{}}}", f.beside.join(",")));
            }
            if !f.untyped.is_empty() {
                marker.push_str(&format!(", no <..>.{{{}}}", f.untyped.join(",")));
            }
            if !f.then.is_empty() {
                marker.push_str(&format!(" (or <..>.{}.{{{}}})", f.equals, f.then.join(",")));
            }
            when = if when.is_empty() {
                marker
            } else {
                format!("{when} and {marker}")
            };
        }
        if !s.unless.is_empty() {
            when.push_str(&format!(", unless {}", join(&s.unless, " or ")));
        }
        rows.push([
            s.priority.to_string(),
            s.name.clone(),
            s.kind.as_str().to_string(),
            when,
            join(&s.name_from, " | "),
        ]);
    }
    let widths: Vec<usize> = (0..4)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in &rows {
        for (c, w) in widths.iter().enumerate() {
            out.push_str(&format!("{:w$}  ", r[c], w = *w));
        }
        out.push_str(&r[4]);
        out.push('\n');
    }
    // Arguments and results per rule, below the table: long lists.
    out.push('\n');
    for s in specs.iter().filter(|s| !s.args.is_empty()) {
        out.push_str(&format!("{} args: {}\n", s.name, join(&s.args, " | ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judge_section() {
        let c = Config::parse(
            "[judge]\nurl = \"http://127.0.0.1:11434/v1\"\nmodel = \"qwen\"\nconcurrency = 2\n\
             headers = { \"x-team\" = \"evals\" }\n",
            Syntax::Toml,
            "t.toml",
        )
        .unwrap();
        let j = c.judge.unwrap();
        assert_eq!(
            (
                j.url.as_deref(),
                j.model.as_deref(),
                j.concurrency,
                j.retries
            ),
            (Some("http://127.0.0.1:11434/v1"), Some("qwen"), 2, 3)
        );
        assert_eq!(j.headers.get("x-team").map(String::as_str), Some("evals"));
        assert!(Config::parse("[judge]\napi_key = \"sk\"\n", Syntax::Toml, "t").is_err());
    }

    #[test]
    fn serve_section() {
        let c = Config::parse(
            "[serve]\ndecision_wait = \"2s\"\ngrpc_endpoint = \"off\"\nmax_buffered_spans = 1000\n",
            Syntax::Toml,
            "t.toml",
        )
        .unwrap();
        let s = c.serve.unwrap();
        assert_eq!(s.decision_wait, std::time::Duration::from_secs(2));
        assert_eq!(
            (s.grpc_endpoint.as_str(), s.max_buffered_spans),
            ("off", 1000)
        );
        // Unset keys keep their defaults.
        assert_eq!(
            s.http_endpoint,
            crate::serve::ServeConfig::default().http_endpoint
        );
        assert!(Config::parse("[serve]\ndecision_wiat = \"2s\"\n", Syntax::Toml, "t").is_err());
        assert!(
            Config::parse("serve:\n  quiet: true\n", Syntax::Yaml, "t.yaml")
                .unwrap()
                .serve
                .unwrap()
                .quiet
        );
    }

    #[test]
    fn unknown_keys_are_errors_in_every_section() {
        for text in [
            "colour = 1",
            "[conventions]\nbuiltins = false",
            "[sessions]\nkey = [\"a\"]",
            "[normalize]\nrenames = []",
            "[[conventions.rule]]\nname = \"x\"\nwhen = [{ attr = \"a\", equal = \"b\" }]\nname_from = [{ span_name = true }]",
            "[[conventions.rule]]\nname = \"x\"\nwhen = [{ attr = \"a\" }]\nname_from = [{ span_name = true, decoder = \"json\" }]",
        ] {
            let e = Config::parse(text, Syntax::Toml, "t.toml").unwrap_err();
            assert!(e.to_string().contains("unknown"), "{text}: {e}");
        }
        let e = Config::parse("sessions:\n  keyz: []\n", Syntax::Yaml, "t.yaml").unwrap_err();
        assert!(e.to_string().contains("unknown field"), "{e}");
    }

    #[test]
    fn toml_and_yaml_say_the_same() {
        let toml = r#"
[conventions]
disable = ["galtea"]
[[conventions.rule]]
name = "acme"
priority = 5
when = [{ attr = "acme.kind", equals = "tool" }]
name_from = [{ attr = "acme.tool" }]
args = [{ attr = "acme.args", decode = "json" }]
[sessions]
extra_keys = ["acme.thread"]
[normalize]
enabled = true
rename = [{ pattern = "^acme_(.*)$", replace = "$1" }]
"#;
        let yaml = r#"
conventions:
  disable: [galtea]
  rule:
    - name: acme
      priority: 5
      when: [{ attr: acme.kind, equals: tool }]
      name_from: [{ attr: acme.tool }]
      args: [{ attr: acme.args, decode: json }]
sessions:
  extra_keys: [acme.thread]
normalize:
  enabled: true
  rename: [{ pattern: "^acme_(.*)$", replace: "$1" }]
"#;
        let a = Config::parse(toml, Syntax::Toml, "a").unwrap();
        let b = Config::parse(yaml, Syntax::Yaml, "b").unwrap();
        assert_eq!(a, b);
        assert_eq!(
            a.session_keys().last().map(String::as_str),
            Some("acme.thread")
        );
        let specs = a.rule_specs();
        assert_eq!(specs[0].name, "acme");
        assert!(!specs.iter().any(|s| s.name == "galtea"));
    }

    #[test]
    fn bad_rules_fail_at_load() {
        let text = "[[conventions.rule]]\nname = \"x\"\nwhen = [{ span_name = true, matches = \"(\" }]\nname_from = [{ span_name = true }]";
        let e = Config::parse(text, Syntax::Toml, "t").unwrap_err();
        assert!(e.to_string().contains("bad regex"), "{e}");
    }

    #[test]
    fn deep_yaml_is_refused_before_parsing() {
        let deep = |n: usize| format!("sessions:\n  keys: {}{}\n", "[".repeat(n), "]".repeat(n));
        assert!(Config::parse(&deep(1), Syntax::Yaml, "t.yaml").is_ok());
        let e = Config::parse(&deep(100), Syntax::Yaml, "t.yaml").unwrap_err();
        assert!(
            e.to_string().contains("line 2: nested deeper than 64"),
            "{e}"
        );
        let dashes = format!("a:\n{}x\n", "- ".repeat(70));
        let e = Config::parse(&dashes, Syntax::Yaml, "t.yaml").unwrap_err();
        assert!(e.to_string().contains("line 2: nested deeper"), "{e}");
        // Brackets in quotes and comments do not count.
        let quoted = format!(
            "sessions:\n  keys: ['{}', \"{}\"] # {}\n",
            "[".repeat(70),
            "{".repeat(70),
            "[".repeat(70)
        );
        assert!(Config::parse(&quoted, Syntax::Yaml, "t.yaml").is_ok());
    }

    #[test]
    fn rule_regexes_share_one_budget() {
        let mut text = String::new();
        for i in 0..80 {
            text.push_str(&format!(
                "[[conventions.rule]]\nname = \"r{i}\"\nwhen = [{{ span_name = true, matches = '\\w{{200}}' }}]\nname_from = [{{ span_name = true }}]\n"
            ));
        }
        let e = Config::parse(&text, Syntax::Toml, "t").unwrap_err();
        assert!(
            e.to_string().contains("does not fit in what is left"),
            "{e}"
        );
        let small = text
            .split("[[conventions.rule]]")
            .take(3)
            .collect::<Vec<_>>()
            .join("[[conventions.rule]]");
        assert!(Config::parse(&small, Syntax::Toml, "t").is_ok());
    }

    #[test]
    fn printed_tables_load_back_unchanged() {
        let specs = rules::builtin();
        for (fmt, syntax) in [
            (TableFormat::Toml, Syntax::Toml),
            (TableFormat::Yaml, Syntax::Yaml),
            (TableFormat::Json, Syntax::Json),
        ] {
            let text = render_rules(&specs, fmt).unwrap();
            let back = Config::parse(&text, syntax, "printed").unwrap();
            assert_eq!(back.conventions.rules, specs, "{fmt:?}");
            assert_eq!(back.rule_specs(), specs, "{fmt:?}");
        }
        let text = render_rules(&specs, TableFormat::Text).unwrap();
        assert!(text.contains("otel-genai"));
        assert!(text.contains("gen_ai.operation.name = \"execute_tool\""));
        // A source's argument unwraps are shown, in every form.
        assert!(
            text.contains(
                "traceloop.entity.input (args/kwargs) unwrap langchain_callback, mcp_tool_call"
            ),
            "{text}"
        );
        for fmt in [TableFormat::Toml, TableFormat::Yaml, TableFormat::Json] {
            let text = render_rules(&specs, fmt).unwrap();
            assert!(text.contains("mcp_tool_call"), "{fmt:?}");
        }
    }
}
