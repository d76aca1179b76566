//! What a trace says beyond its tool calls, for metrics that read it
//! (`Needs::trace_facts`): computed once per trace, only when asked for.

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};

use crate::assemble::Trace;

/// Facts about one trace (or, summed, the traces of a session).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TraceFacts {
    /// Spans in the trace(s).
    pub spans: usize,
    /// Earliest span start and latest span end, in Unix nanoseconds.
    pub start_unix_nano: u64,
    pub end_unix_nano: u64,
    /// Tokens the trace's LLM spans report (`None`: no span carries a
    /// count); see [`token_usage`].
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// Agent runs (start, name) by start time, when the driver extracted
    /// them (`Evaluator::evaluate_trace_with_runs`).
    pub runs: Vec<(u64, String)>,
}

impl TraceFacts {
    /// The facts of one trace.
    pub fn of(trace: &Trace) -> TraceFacts {
        let end = trace
            .spans
            .iter()
            .map(|s| s.span.end_time_unix_nano)
            .max()
            .unwrap_or(0);
        let (input_tokens, output_tokens) = token_usage(trace);
        TraceFacts {
            spans: trace.spans.len(),
            start_unix_nano: trace.start_time(),
            end_unix_nano: end,
            input_tokens,
            output_tokens,
            runs: Vec::new(),
        }
    }

    /// Wall time from the first span's start to the last span's end.
    pub fn duration_nanos(&self) -> u64 {
        self.end_unix_nano.saturating_sub(self.start_unix_nano)
    }

    /// The facts of several traces taken together (a session).
    pub fn merge(&mut self, other: &TraceFacts) {
        if self.spans == 0 {
            *self = other.clone();
            return;
        }
        self.spans += other.spans;
        self.start_unix_nano = self.start_unix_nano.min(other.start_unix_nano);
        self.end_unix_nano = self.end_unix_nano.max(other.end_unix_nano);
        self.input_tokens = add_opt(self.input_tokens, other.input_tokens);
        self.output_tokens = add_opt(self.output_tokens, other.output_tokens);
        self.runs.extend(other.runs.iter().cloned());
        self.runs.sort();
    }

    /// Input plus output tokens, when any span reported either.
    pub fn total_tokens(&self) -> Option<u64> {
        match (self.input_tokens, self.output_tokens) {
            (None, None) => None,
            (i, o) => Some(i.unwrap_or(0) + o.unwrap_or(0)),
        }
    }
}

fn add_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
    }
}

/// Token count keys, most current spelling first; a span counts the first
/// one it carries (strands writes both spellings on one span).
const INPUT_KEYS: &[&str] = &[
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.prompt_tokens",
    "llm.token_count.prompt",
];
const OUTPUT_KEYS: &[&str] = &[
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "llm.token_count.completion",
];

/// Input and output tokens summed over the spans that report them.
/// Frameworks also repeat the totals on the agent (and loop) spans above
/// the LLM calls, so only spans with no reporting descendant are counted
/// (docs/conventions.md, token usage).
pub fn token_usage(trace: &Trace) -> (Option<u64>, Option<u64>) {
    let n = trace.spans.len();
    let counts: Vec<(Option<u64>, Option<u64>)> = trace
        .spans
        .iter()
        .map(|s| span_tokens(&s.span.attributes))
        .collect();
    if counts.iter().all(|c| *c == (None, None)) {
        return (None, None);
    }
    // Mark the ancestors of every reporting span: they hold totals.
    let mut above = vec![false; n];
    for (i, c) in counts.iter().enumerate() {
        if *c != (None, None) {
            for a in trace.ancestors(i) {
                if above[a] {
                    break;
                }
                above[a] = true;
            }
        }
    }
    let (mut input, mut output) = (None, None);
    for (i, (ci, co)) in counts.into_iter().enumerate() {
        if !above[i] {
            input = add_opt(input, ci);
            output = add_opt(output, co);
        }
    }
    (input, output)
}

/// One span's (input, output) tokens: one pass over its attributes, the
/// first spelling in key order winning.
fn span_tokens(attrs: &[KeyValue]) -> (Option<u64>, Option<u64>) {
    // (rank, count) of the best spelling seen so far.
    let mut input: Option<(usize, u64)> = None;
    let mut output: Option<(usize, u64)> = None;
    for kv in attrs {
        let k = kv.key.as_str();
        if !(k.starts_with("gen_ai.usage.") || k.starts_with("llm.token_count.")) {
            continue;
        }
        let Some(count) = kv.value.as_ref().and_then(any_count) else {
            continue;
        };
        for (keys, best) in [(INPUT_KEYS, &mut input), (OUTPUT_KEYS, &mut output)] {
            if let Some(rank) = keys.iter().position(|x| *x == k) {
                if best.is_none_or(|(r, _)| rank < r) {
                    *best = Some((rank, count));
                }
            }
        }
    }
    (input.map(|b| b.1), output.map(|b| b.1))
}

/// A token count: a non-negative integer, or its text.
fn any_count(v: &AnyValue) -> Option<u64> {
    match v.value.as_ref()? {
        any_value::Value::IntValue(i) => u64::try_from(*i).ok(),
        any_value::Value::DoubleValue(d) if *d >= 0.0 && d.fract() == 0.0 => Some(*d as u64),
        any_value::Value::StringValue(s) => s.trim().parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(key: &str, v: any_value::Value) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Some(AnyValue { value: Some(v) }),
            ..Default::default()
        }
    }

    #[test]
    fn one_spelling_per_span_current_first() {
        use any_value::Value::{IntValue, StringValue};
        // Strands writes both spellings; the older one first here.
        let attrs = [
            kv("gen_ai.usage.prompt_tokens", IntValue(7)),
            kv("gen_ai.usage.input_tokens", IntValue(5)),
            kv("gen_ai.usage.completion_tokens", StringValue("3".into())),
            kv("gen_ai.usage.total_tokens", IntValue(99)),
        ];
        assert_eq!(span_tokens(&attrs), (Some(5), Some(3)));
        let oi = [kv("llm.token_count.prompt", IntValue(-1))];
        assert_eq!(
            span_tokens(&oi),
            (None, None),
            "a negative count is not a count"
        );
    }
}
