//! Why each span of a trace is, or is not, a tool call: the rule that
//! classified it, or the rules that almost matched and what they missed
//! (`toolscore inspect --explain`), and the one-line hint for an input that
//! gave no tool call at all.

use std::cmp::Ordering;
use std::fmt;

use crate::assemble::Val;
use serde::Serialize;

use super::rules::{Cond, CondSpec, FamilySpec, Field, Kind, Rule};
use super::source::{any_text, name_of};
use super::wrappers::{value_noting, Notes};
use super::{family_marker, holds, wrapper_names, Extractor, Role};
use crate::assemble::{SpanId, SpanRecord, Trace};

/// At most this many near misses per span.
const NEAR_MISSES: usize = 3;
/// Attribute values quoted in a reason are cut to this many characters.
const QUOTE_CHARS: usize = 60;

/// What the rule table made of one span.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpanExplanation {
    pub span_id: SpanId,
    pub span_name: String,
    /// The rule that classified the span, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched: Option<RuleMatch>,
    /// For a span no rule matched: the rules closest to matching, closest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub near_misses: Vec<NearMiss>,
}

/// The rule that classified a span.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleMatch {
    pub rule: String,
    pub kind: Kind,
    /// The tool (or agent) name; `None` when no `name_from` source gave one,
    /// and extraction then skips the span.
    pub name: Option<String>,
    /// Whether the span counts as a tool call (a tool, or a retriever with
    /// `--retrievers-as-tools`, given a name).
    pub call: bool,
    /// The MCP server of a tool named `mcp__<server>__<tool>` (the name is
    /// then `<tool>`, docs/conventions.md "MCP tool names").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mcp_server: Option<String>,
    /// The wrappers taken off the arguments to give what the tool received
    /// (`langchain_callback`, `args_kwargs`, ...), in the order applied.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args_unwrapped: Vec<&'static str>,
    /// For a rule matched by its `family` (the generic tool-kind rule): the
    /// attributes it read, the kind marker first, then those the name,
    /// arguments and result came from.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub read: Vec<String>,
    /// For a call whose rule named it after a wrapper's method
    /// (`FunctionTool.acall`): the attribute its tool's own name came from
    /// (`extract::wrapper_names`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name_behind_wrapper: Option<&'static str>,
    /// For a call whose rule named it by its function's qualified name
    /// (`t33.check_stock`): the attribute that records it as one
    /// (`extract::qualname`); the call is named by its last part.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name_qualified_by: Option<String>,
}

/// A rule that did not match a span, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NearMiss {
    pub rule: String,
    pub kind: Kind,
    /// How many of the rule's `when` conditions hold, of how many.
    pub held: usize,
    pub of: usize,
    pub reasons: Vec<Reason>,
}

/// Why a condition failed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum Reason {
    /// The rule tests an attribute the span does not have.
    MissingAttribute { attr: String },
    /// The attribute (or span name, or scope) is there with another value.
    WrongValue {
        what: String,
        found: String,
        wants: String,
    },
    /// None of the alternatives of an `any` condition holds.
    NoneOf { alternatives: Vec<Reason> },
    /// All `when` conditions hold but an `unless` condition does too.
    Excluded { condition: String },
    /// A family rule's marker (`<ns>.span.kind = tool`, ...) is not there.
    NoMarker { keys: Vec<String>, wants: String },
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::MissingAttribute { attr } => write!(f, "missing attribute {attr}"),
            Reason::WrongValue { what, found, wants } => {
                write!(f, "{what} is `{found}`, wants {wants}")
            }
            Reason::NoneOf { alternatives } => {
                let parts: Vec<String> = alternatives.iter().map(ToString::to_string).collect();
                write!(f, "none of: {}", parts.join("; "))
            }
            Reason::Excluded { condition } => write!(f, "excluded by `unless` {condition}"),
            Reason::NoMarker { keys, wants } => write!(
                f,
                "no attribute <namespace>.{{{}}} = `{wants}`",
                keys.join(",")
            ),
        }
    }
}

impl fmt::Display for NearMiss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.reasons.iter().map(ToString::to_string).collect();
        write!(f, "{}: {}", self.rule, parts.join("; "))
    }
}

/// One condition's outcome on a span.
struct Outcome {
    held: bool,
    /// Not held, but what it tests is there (an attribute with another value).
    partial: bool,
    reason: Option<Reason>,
}

fn quote(text: &str) -> String {
    let mut out: String = text.chars().take(QUOTE_CHARS).collect();
    if text.chars().count() > QUOTE_CHARS {
        out.push('…');
    }
    out
}

/// What a condition wants, for a reason's text.
fn wants(spec: &CondSpec) -> String {
    match (&spec.equals, &spec.matches) {
        (Some(v), _) if spec.json => format!("`{v}` (JSON-encoded)"),
        (Some(v), _) => format!("`{v}`"),
        (None, Some(re)) => format!("/{re}/"),
        (None, None) => "it present".to_string(),
    }
}

/// `cond` (compiled from `spec`) on span `s`.
fn outcome(
    x: &Extractor,
    cond: &Cond,
    spec: &CondSpec,
    s: &SpanRecord,
    slots: &[Option<Val<'_>>],
) -> Outcome {
    let held = holds(cond, s, slots);
    let wrong = |what: String, found: &str| Reason::WrongValue {
        what,
        found: quote(found),
        wants: wants(spec),
    };
    let reason = |partial: bool, reason: Reason| Outcome {
        held: false,
        partial,
        reason: Some(reason),
    };
    if held {
        return Outcome {
            held,
            partial: false,
            reason: None,
        };
    }
    match cond {
        Cond::Attr { slot, .. } => {
            let key = x.keys.keys.get(*slot).cloned().unwrap_or_default();
            match slots.get(*slot).copied().flatten() {
                None => reason(false, Reason::MissingAttribute { attr: key }),
                Some(v) => {
                    let text = any_text(v).unwrap_or_default();
                    reason(true, wrong(format!("attribute {key}"), &text))
                }
            }
        }
        // A span always has a name and a scope: a different one is no closer
        // to matching than a missing attribute.
        Cond::SpanName(_) => reason(false, wrong("span name".into(), s.span.name())),
        Cond::Scope(_) => reason(false, wrong("scope".into(), &s.scope.name)),
        Cond::Any(list) => {
            let inner: Vec<Outcome> = list
                .iter()
                .zip(&spec.any)
                .map(|(c, sp)| outcome(x, c, sp, s, slots))
                .collect();
            let partial = inner.iter().any(|o| o.partial);
            let alternatives = inner.into_iter().filter_map(|o| o.reason).collect();
            reason(partial, Reason::NoneOf { alternatives })
        }
    }
}

impl Extractor {
    /// For every span of `trace`, in the trace's order: the rule that
    /// classified it, or, when none did, the few rules closest to matching
    /// and what each missed.
    pub fn explain(&self, trace: &Trace) -> Vec<SpanExplanation> {
        let mut slots: Vec<Option<Val>> = vec![None; self.keys.keys.len()];
        let mut out = Vec::with_capacity(trace.spans.len());
        for s in &trace.spans {
            let present = self.keys.fill(&s.span, &mut slots);
            let matched = self.classify(s, &slots, present).map(|i| {
                let marker = family_marker(&self.rules[i], s);
                let in_ns = marker.map(|(ns, _)| self.rules[i].in_namespace(ns));
                let rule = in_ns.as_ref().unwrap_or(&self.rules[i]);
                let name = rule
                    .name_from
                    .iter()
                    .find_map(|src| name_of(src, s))
                    .filter(|t| !t.trim().is_empty())
                    .map(|t| t.into_owned());
                let counted = match rule.kind() {
                    Kind::Tool => true,
                    Kind::Retriever => self.retrievers_as_tools,
                    Kind::Agent => false,
                };
                let behind = match (self.role_of(Some(i)), &name) {
                    (Role::Call, Some(n)) => {
                        wrapper_names::tool_name(n, s).or_else(|| super::call_input::named(n, s))
                    }
                    _ => None,
                };
                let name_behind_wrapper = behind.as_ref().map(|&(_, key)| key);
                let name = behind.map(|(n, _)| n).or(name);
                // As the rows name it: an MCP tool by its own name, and
                // its server beside it.
                let (name, mcp_server) = match (self.role_of(Some(i)), name) {
                    (Role::Call, Some(n)) => {
                        let tool = super::tool_name::normalized(&n).to_string();
                        let server = super::tool_name::server(&n, &tool);
                        (Some(tool), server)
                    }
                    (_, n) => (n, None),
                };
                // A function's qualified name, by its last part.
                let qualified = match (self.role_of(Some(i)), &name) {
                    (Role::Call, Some(n)) => super::qualname::bare(n, s),
                    _ => None,
                };
                let name_qualified_by = qualified.map(|(_, key)| key.to_string());
                let name = qualified.map(|(b, _)| b.to_string()).or(name);
                RuleMatch {
                    rule: rule.name().to_string(),
                    kind: rule.kind(),
                    call: counted && name.is_some(),
                    name,
                    mcp_server,
                    args_unwrapped: args_unwrapped(rule, s),
                    read: marker.map_or_else(Vec::new, |(_, key)| read_by(rule, key, s)),
                    name_behind_wrapper,
                    name_qualified_by,
                }
            });
            let near_misses = if matched.is_some() {
                Vec::new()
            } else {
                self.near_misses(s, &slots)
            };
            out.push(SpanExplanation {
                span_id: s.span_id,
                span_name: s.span.name().to_string(),
                matched,
                near_misses,
            });
        }
        out
    }

    fn near_misses(&self, s: &SpanRecord, slots: &[Option<Val<'_>>]) -> Vec<NearMiss> {
        // (conditions touched: held, or an attribute there with another
        // value; rule index; the miss)
        let mut found: Vec<(usize, usize, NearMiss)> = Vec::new();
        for (i, rule) in self.rules.iter().enumerate() {
            let mut outcomes: Vec<Outcome> = rule
                .when
                .iter()
                .zip(&rule.spec.when)
                .map(|(c, sp)| outcome(self, c, sp, s, slots))
                .collect();
            outcomes.extend(rule.family.as_ref().map(|f| marker_outcome(rule, f, s)));
            let held = outcomes.iter().filter(|o| o.held).count();
            let touched = outcomes.iter().filter(|o| o.held || o.partial).count();
            let mut reasons: Vec<Reason> = outcomes.into_iter().filter_map(|o| o.reason).collect();
            if reasons.is_empty() {
                // Every `when` holds: an `unless` excluded the span.
                reasons = excluded(rule, s, slots);
            }
            let miss = NearMiss {
                rule: rule.name().to_string(),
                kind: rule.kind(),
                held,
                of: rule.when.len() + usize::from(rule.family.is_some()),
                reasons,
            };
            found.push((touched, i, miss));
        }
        if found.iter().any(|(touched, ..)| *touched > 0) {
            found.retain(|(touched, ..)| *touched > 0);
            // Closest first: all conditions held (only an `unless` in the
            // way), then the larger share of conditions touched, then more
            // held; otherwise the rule tried first.
            found.sort_by(|(ta, ia, a), (tb, ib, b)| {
                let all = |m: &NearMiss| m.held == m.of;
                let closer = if all(a) && all(b) {
                    // Both only excluded: the one tried first would have won.
                    Ordering::Equal
                } else {
                    all(b)
                        .cmp(&all(a))
                        .then((tb * a.of).cmp(&(ta * b.of)))
                        .then(b.held.cmp(&a.held))
                };
                closer.then(ia.cmp(ib))
            });
        } else {
            // Nothing comes close: the simplest tool rules (the main
            // conventions, one marker each) say what they look for.
            found.retain(|(_, i, _)| self.rules[*i].kind() == Kind::Tool);
            found.sort_by_key(|(_, i, m)| (m.of, *i));
        }
        found
            .into_iter()
            .take(NEAR_MISSES)
            .map(|(_, _, m)| m)
            .collect()
    }

    /// A one-line hint for an input that holds spans but gave no tool call
    /// in any trace (an evaluator must not be silently empty): the
    /// conventions tried and where to look next. `None` when there were
    /// calls, or no spans at all.
    pub fn no_calls_hint(&self, spans: usize, calls: usize) -> Option<String> {
        if spans == 0 || calls > 0 {
            return None;
        }
        let tried: Vec<&str> = self
            .rules
            .iter()
            .filter(|r| match r.kind() {
                Kind::Tool => true,
                Kind::Retriever => self.retrievers_as_tools,
                Kind::Agent => false,
            })
            .map(Rule::name)
            .collect();
        Some(format!(
            "no tool calls in {spans} span(s); conventions tried: {}; run `toolscore inspect --explain` to see why",
            tried.join(", ")
        ))
    }
}

/// Whether family rule `rule`'s marker is on `s`. A family key with
/// another value (`openinference.span.kind = LLM`) is no closer to a tool
/// call: never partly held, so the generic rule is not offered as a near
/// miss of every typed span.
fn marker_outcome(rule: &Rule, family: &FamilySpec, s: &SpanRecord) -> Outcome {
    if family_marker(rule, s).is_some() {
        return Outcome {
            held: true,
            partial: false,
            reason: None,
        };
    }
    Outcome {
        held: false,
        partial: false,
        reason: Some(Reason::NoMarker {
            keys: family.keys.clone(),
            wants: if family.names_span {
                "the span's name".to_string()
            } else {
                family.equals.clone()
            },
        }),
    }
}

/// The `unless` conditions of `rule` that hold on `s`.
fn excluded(rule: &Rule, s: &SpanRecord, slots: &[Option<Val<'_>>]) -> Vec<Reason> {
    rule.unless
        .iter()
        .zip(&rule.spec.unless)
        .filter(|(c, _)| holds(c, s, slots))
        .map(|(_, sp)| Reason::Excluded {
            condition: sp.to_string(),
        })
        .collect()
}

/// The marker `key` and the attributes the first present name, arguments
/// and result sources of `rule` read on `s`.
fn read_by(rule: &Rule, key: &str, s: &SpanRecord) -> Vec<String> {
    let mut out = vec![key.to_string()];
    let name = rule.name_from.iter().find(|src| name_of(src, s).is_some());
    let in_events = super::event_attrs::sources(&rule.args, s);
    let args =
        (rule.args.iter().chain(&in_events)).find(|src| value_noting(src, s, None).is_some());
    let in_events = super::event_attrs::sources(&rule.result, s);
    let result =
        (rule.result.iter().chain(&in_events)).find(|src| value_noting(src, s, None).is_some());
    for src in [name, args, result].into_iter().flatten() {
        out.push(match &src.field {
            Field::Attr(k) => super::flat::key_read(k, s),
            Field::Event { event, attr } => format!("event {event}.{attr}"),
            Field::EventSide(side) => super::event_side::found(*side, s)
                .unwrap_or_else(|| super::rules::event_side_text(Some(*side)).to_string()),
            Field::SpanName => "span name".to_string(),
        });
    }
    out
}

/// The wrappers taken off the arguments `rule` reads from `s`.
fn args_unwrapped(rule: &Rule, s: &SpanRecord) -> Notes {
    let mut notes = Notes::new();
    for src in rule
        .args
        .iter()
        .chain(&super::event_attrs::sources(&rule.args, s))
    {
        notes.clear();
        if let Some(v) = value_noting(src, s, Some(&mut notes)) {
            if super::mcp_meta::holds_protocol_meta(&v) {
                notes.push("mcp_meta");
            }
            break;
        }
    }
    notes
}
