//! Rule regexes: compiled now or at first use, each charged to one
//! budget for the whole table, and matched after a cheap test of what
//! every match needs.

use std::sync::{Arc, OnceLock};

use regex::{Regex, RegexBuilder};
use regex_syntax::hir::literal::Seq;

use super::{CondSpec, RuleError, RuleSpec};

/// What all the regexes of a rule table may take together, in regex's
/// `size_limit` measure (compiled program size; resident memory is about
/// 1.5 times it). A Unicode `\w{200}` takes 9.5 MiB, so a table of them is
/// refused at the fourth rule instead of taking a gigabyte.
pub const REGEX_BUDGET: usize = 32 << 20;

/// One pattern's limit: regex's default, as before the budget.
const REGEX_LIMIT: usize = 10 << 20;

/// The first limit tried when charging a pattern to the budget.
const REGEX_FIRST_LIMIT: usize = 64 << 10;

fn regex(rule: &str, re: &str) -> Result<Regex, RuleError> {
    regex_within(rule, re, REGEX_LIMIT)
}

/// When a table's regexes are compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Regexes {
    /// Before the run: a bad pattern is an error up front (a user's table).
    Now,
    /// When first matched: for the built-in table only, whose patterns a
    /// test compiles. A run reads a few conventions' spans, and compiling
    /// every pattern at start was most of a short run's start-up.
    FirstUse,
}

/// A rule's regex, compiled now or at first use ([`Regexes`]); clones
/// share it, so each pattern compiles once per run whatever the threads.
#[derive(Clone)]
pub(crate) struct Pattern(Arc<(Box<str>, OnceLock<Regex>, OnceLock<Needed>)>);

impl Pattern {
    pub(crate) fn new(rule: &str, re: &str, when: Regexes) -> Result<Pattern, RuleError> {
        let compiled = OnceLock::new();
        if when == Regexes::Now {
            let _ = compiled.set(regex(rule, re)?);
        }
        Ok(Pattern(Arc::new((re.into(), compiled, OnceLock::new()))))
    }

    /// Whether the pattern matches somewhere in `text`: as the regex's
    /// own `is_match`, with what every match needs ([`Needed`]) asked
    /// first. A condition asks it of most spans and few match: a
    /// comparison of bytes instead of a regex search (and of compiling
    /// the regex, for patterns no span passes).
    pub(crate) fn is_match(&self, text: &str) -> bool {
        let needed = self.0 .2.get_or_init(|| Needed::of(&self.0 .0));
        if !needed.admits(text.as_bytes()) {
            return false;
        }
        // A pattern whose matches are a few whole texts: the comparison
        // decided, once the regex has matched each of them.
        needed.decides(|t| (**self).is_match(t)) || (**self).is_match(text)
    }
}

/// What a text must be, start with or end with for a pattern to match
/// it, from the pattern's literals. A necessary condition only, unless
/// [`Needed::decides`] says otherwise.
#[derive(Debug)]
struct Needed {
    start: Start,
    /// For a pattern anchored at its end (`$`): every match ends the text
    /// with one of these (`None`: no such list).
    ends: Option<Vec<Box<[u8]>>>,
    /// Whether the regex matches every text of [`Start::OneOf`], asked
    /// once: then a text is matched if and only if it is one of them.
    whole: OnceLock<bool>,
}

/// What a text must be, or start with, for a pattern anchored at its start
/// (`^`) to match it, from the pattern's literals: its prefixes (every
/// match starts with one), or, anchored at the end too and with every
/// literal a whole match, the texts it can match.
#[derive(Debug)]
enum Start {
    Anything,
    Prefix(Vec<Box<[u8]>>),
    OneOf(Vec<Box<[u8]>>),
}

/// The most literals a [`Needed`] list keeps: comparing a text with more
/// (a class under a repetition gives hundreds) costs more than the regex.
const MOST_LITERALS: usize = 16;

/// `seq`, its literals cut to their first (`from_end`: last) bytes when
/// it has more than [`MOST_LITERALS`], as long as at most [`CUT_LITERALS`]
/// are left, each match still starting (ending) with one: a class or a
/// case-insensitive word beside a list multiplies the literals, which then
/// share their ends (the listing's
/// `^([0-9A-Za-z_.]*[.:])?(list|get|load)_?[Tt]ools$`, 36 suffixes: without
/// them every span name ran the regex).
fn shortened(seq: Seq, from_end: bool) -> Seq {
    if seq.len().is_none_or(|n| n <= MOST_LITERALS) {
        return seq;
    }
    let cut = |keep: usize| {
        let mut cut = seq.clone();
        match from_end {
            true => cut.keep_last_bytes(keep),
            false => cut.keep_first_bytes(keep),
        }
        cut.sort();
        cut.dedup();
        cut
    };
    // Longer cuts are as many literals or more: the longest few enough
    // (asked once per pattern).
    let few = |keep: &usize| cut(*keep).len().is_some_and(|n| n <= CUT_LITERALS);
    match (1..=LONGEST_CUT).take_while(few).last() {
        Some(keep) => cut(keep),
        None => seq,
    }
}

/// The most literals a cut [`shortened`] leaves: each text is compared
/// with every one.
const CUT_LITERALS: usize = 4;
/// The most bytes a literal [`shortened`] keeps.
const LONGEST_CUT: usize = 32;

/// The literals of `seq`, when it is finite, short and none is empty.
fn nonempty(seq: &Seq) -> Option<Vec<Box<[u8]>>> {
    let literals = seq.literals().filter(|l| l.len() <= MOST_LITERALS)?;
    let texts: Vec<Box<[u8]>> = literals.iter().map(|l| l.as_bytes().into()).collect();
    (!texts.iter().any(|t| t.is_empty())).then_some(texts)
}

impl Needed {
    fn of(pattern: &str) -> Needed {
        use regex_syntax::hir::literal::{ExtractKind, Extractor};
        use regex_syntax::hir::Look;
        let mut needed = Needed {
            start: Start::Anything,
            ends: None,
            whole: OnceLock::new(),
        };
        // The regex crate's defaults (`RegexBuilder` sets no other flag).
        let Ok(hir) = regex_syntax::Parser::new().parse(pattern) else {
            return needed;
        };
        let props = hir.properties();
        let at_end = props.look_set_suffix().contains(Look::End);
        if at_end {
            let seq = Extractor::new().kind(ExtractKind::Suffix).extract(&hir);
            needed.ends = nonempty(&shortened(seq, true));
        }
        if !props.look_set_prefix().contains(Look::Start) {
            return needed;
        }
        // Exact only where no literal was cut: then a match is one of them.
        let seq = shortened(
            Extractor::new().kind(ExtractKind::Prefix).extract(&hir),
            false,
        );
        needed.start = match nonempty(&seq) {
            None => Start::Anything,
            Some(texts) if seq.is_exact() && at_end => Start::OneOf(texts),
            Some(texts) => Start::Prefix(texts),
        };
        needed
    }

    fn admits(&self, text: &[u8]) -> bool {
        // The ends first: a list of them is short.
        use crate::short_bytes::{ends_with, eq, starts_with};
        (self.ends.as_ref()).is_none_or(|e| e.iter().any(|e| ends_with(text, e)))
            && match &self.start {
                Start::Anything => true,
                Start::Prefix(p) => p.iter().any(|p| starts_with(text, p)),
                Start::OneOf(texts) => texts.iter().any(|t| eq(t, text)),
            }
    }

    /// Whether a text [`Needed::admits`] is matched (`matches`: the
    /// regex's answer for a text, asked of each literal once).
    fn decides(&self, matches: impl Fn(&str) -> bool) -> bool {
        let Start::OneOf(texts) = &self.start else {
            return false;
        };
        *self.whole.get_or_init(|| {
            texts
                .iter()
                .all(|t| std::str::from_utf8(t).is_ok_and(&matches))
        })
    }
}

impl std::ops::Deref for Pattern {
    type Target = Regex;

    fn deref(&self) -> &Regex {
        let (text, compiled, _) = &*self.0;
        compiled.get_or_init(|| {
            // Only built-in patterns wait for their first use, and a test
            // compiles each; were one to fail, it matches nothing.
            regex("", text)
                .unwrap_or_else(|_| Regex::new(r"[^\s\S]").unwrap_or_else(|e| unreachable!("{e}")))
        })
    }
}

impl std::fmt::Debug for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // As regex's own, without compiling it.
        f.debug_tuple("Regex").field(&&*self.0 .0).finish()
    }
}

fn regex_within(rule: &str, re: &str, limit: usize) -> Result<Regex, RuleError> {
    RegexBuilder::new(re)
        .size_limit(limit)
        .build()
        .map_err(|e| RuleError::Regex {
            rule: rule.to_string(),
            regex: re.to_string(),
            error: Box::new(e),
        })
}

fn cond_patterns<'a>(c: &'a CondSpec, out: &mut Vec<&'a str>) {
    out.extend(c.matches.as_deref());
    for x in &c.any {
        cond_patterns(x, out);
    }
}

/// Every regex of a spec, conditions first.
fn patterns(spec: &RuleSpec) -> Vec<&str> {
    let mut out = Vec::new();
    for c in spec.when.iter().chain(&spec.unless).chain(&spec.error_when) {
        cond_patterns(c, &mut out);
    }
    let sources = spec
        .name_from
        .iter()
        .chain(&spec.args)
        .chain(&spec.result)
        .chain(&spec.error_message);
    out.extend(sources.filter_map(|s| s.pattern.as_deref()));
    out
}

/// Refuses a table whose regexes together exceed [`REGEX_BUDGET`], naming
/// the first rule over it. regex's `size_limit` bounds one pattern, so each
/// is compiled with a growing limit up to what is left, and the limit it
/// first fits in is charged. A failed try stops as soon as the program
/// outgrows its limit, so the check costs a few compiles of the budget
/// however long the table is.
pub fn check_regex_budget(specs: &[RuleSpec]) -> Result<(), RuleError> {
    let mut left = REGEX_BUDGET;
    for spec in specs {
        for re in patterns(spec) {
            left -= charge(&spec.name, re, left)?;
        }
    }
    Ok(())
}

/// The limit `re` first compiles within, growing by half from 64 KiB: at
/// most 1.5 times its size, and the failed tries cost about two compiles.
fn charge(rule: &str, re: &str, left: usize) -> Result<usize, RuleError> {
    let most = left.min(REGEX_LIMIT);
    let mut limit = REGEX_FIRST_LIMIT.min(most);
    loop {
        let too_big = match regex_within(rule, re, limit) {
            Ok(_) => return Ok(limit),
            Err(RuleError::Regex { error, .. })
                if matches!(*error, regex::Error::CompiledTooBig(_)) =>
            {
                error
            }
            Err(e) => return Err(e),
        };
        if limit < most {
            limit = (limit + limit / 2).min(most);
        } else if most < REGEX_LIMIT {
            return Err(RuleError::Budget {
                rule: rule.to_string(),
                regex: re.to_string(),
                left: left >> 10,
            });
        } else {
            // Over one pattern's own limit: regex's error, as without a budget.
            return Err(RuleError::Regex {
                rule: rule.to_string(),
                regex: re.to_string(),
                error: too_big,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::builtin;
    use super::*;

    /// What a pattern's literals say a match needs never turns a match
    /// away: the filtered match is the regex's own, on the built-in
    /// patterns and on shapes where the literals alone would mislead.
    #[test]
    fn a_patterns_needed_literals_agree_with_its_regex() {
        let specs = builtin();
        let mut all: Vec<String> = specs
            .iter()
            .flat_map(patterns)
            .map(str::to_string)
            .collect();
        assert!(all.len() >= 10, "{all:?}");
        let shapes = [
            r"^a\bb$",
            r"(?m)^tool$",
            r"^ab?c",
            r"(?i)^Tool\.",
            r"^(?i:chat)$",
            r"^$",
            r"[^\s\S]",
            r"^\w*Tool\.task$",
            r"^tool|x",
            r"^(chat|run)",
            r"^é\.",
            r"^a$|^b$",
            r"\.tool$",
            r"(?i)tool$",
            r"a+$",
            r"^a^b$",
            r"^(a|b)\b$",
            r"(^|\.)tool\..+\.(success|error)$",
            r"^([0-9A-Za-z_.]*[.:])?(list|get|load)_?[Tt]ools$",
            r"^(?i:tool)[ _.-]?(?i:execution|call|invocation|run)[ _.-]?(?i:span)?$",
            r"^(?i:ab)$",
        ];
        all.extend(shapes.iter().map(|p| p.to_string()));
        let texts = [
            "",
            "a",
            "ab",
            "abc",
            "ac",
            "b",
            "x",
            "tool",
            "tool.",
            "tool.x",
            "Tool.x",
            "TOOL.X",
            "tool\nx",
            "x\ntool",
            "chat",
            "chat ",
            " chat",
            "CHAT",
            "run",
            "running tool",
            "running tool: x",
            "execute_tool get",
            "execute_tool (merged tools)",
            "invoke_agent a",
            "invoke_workflow",
            "agent",
            "workflow",
            "ai.generateText",
            "ai.streamText.doStream",
            "MyTool.task",
            "Tool.task",
            "é.",
            "e.",
            "langchain",
            "LangChain.x",
            "tool.get.success",
            "tool.get.error-3",
            "agent.run.start",
            "openllmetry.instrumentation.mcp",
            "generate_content",
            "text_completion",
            "chat_completion",
            "get.tool",
            "get.TOOL",
            "get.tool\n",
            "aa",
            "ba",
            "listTools",
            "mcp.get_tools",
            "x:loadTools",
            "tools",
            "Tool_Call",
            "TOOL execution span",
            "toolrunx",
            "aB",
        ];
        for p in &all {
            let re = Regex::new(p).unwrap();
            let pattern = Pattern::new("t", p, Regexes::FirstUse).unwrap();
            for t in texts {
                assert_eq!(pattern.is_match(t), re.is_match(t), "{p:?} on {t:?}");
            }
        }
        // The filter does decide: an anchored pattern's literals turn texts away.
        assert!(!Needed::of(r"^tool\.").admits(b"xtool."));
        assert!(!Needed::of(r"^(chat|run)$").admits(b"chats"));
        assert!(Needed::of(r"(?i)langchain").admits(b"anything"));
        // A pattern anchored at its end turns away texts without its ends.
        assert!(!Needed::of(r"\.tool$").admits(b"tool.x"));
        assert!(Needed::of(r"\.tool$").admits(b"x.tool"));
        // Literals too many to compare are cut to the ends they share.
        let listing = Needed::of(r"^([0-9A-Za-z_.]*[.:])?(list|get|load)_?[Tt]ools$");
        assert!(!listing.admits(b"chat gpt-4o"));
        assert!(listing.admits(b"x.listTools"));
        let tool = Needed::of(r"^(?i:tool)[ _.-]?(?i:execution|call|invocation|run)$");
        assert!(!tool.admits(b"execute_tool x"));
        assert!(tool.admits(b"TOOL-run"));
    }
}
