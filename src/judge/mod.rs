//! An LLM judge over the OpenAI-compatible chat completions API (OpenAI,
//! Azure OpenAI, vLLM, llama.cpp server, Ollama, LiteLLM all speak it).
//!
//! One [`Judge`] per run, shared by every judged metric: it limits concurrent
//! requests, retries what a retry can fix (rate limits, server errors but
//! 501, timeouts, refused connections) with backoff (honouring
//! `Retry-After`), caches answers on disk by a hash of everything that
//! shapes them, sends identical prompts in flight at once only once, sums
//! token usage, and in dry-run mode prints prompts instead of calling.
//!
//! The judge is a remote party and is treated as untrusted: its reply is read
//! up to a cap, no redirect is followed (the key and `headers` never reach
//! another origin), its rationale is capped, and every text it or its
//! server sends back passes through `Secrets::redact` before it reaches a
//! report. A failure is a [`JudgeError`] for the one metric that asked; it
//! never stops a run.

mod cache;
mod http;
mod parse;
mod settings;

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub use parse::parse_answer;
pub use settings::{JudgeConfig, JudgeFlagError, JudgeFlags};

/// The request field carrying the output-token cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenField {
    MaxTokens,
    MaxCompletionTokens,
}

impl std::str::FromStr for TokenField {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "max_tokens" => Ok(TokenField::MaxTokens),
            "max_completion_tokens" => Ok(TokenField::MaxCompletionTokens),
            _ => Err(format!("`{s}` is not max_tokens or max_completion_tokens")),
        }
    }
}

/// What a model's tokens cost, per million (in any one currency).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub prompt_per_million: f64,
    pub completion_per_million: f64,
}

/// Why the judge gave no verdict.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum JudgeError {
    #[error("judge rate limited (HTTP 429) after {0} attempt(s)")]
    RateLimited(u32),
    #[error("judge timed out after {0} attempt(s)")]
    Timeout(u32),
    #[error("judge server error (HTTP {status}) after {attempts} attempt(s)")]
    Server { status: u16, attempts: u32 },
    #[error("judge refused the request (HTTP {status}): {body}")]
    Refused { status: u16, body: String },
    #[error(
        "judge answered with a redirect (HTTP {status} to {location}); redirects are not \
         followed, so the key and headers stay with the configured origin: set --judge-url \
         to the final address"
    )]
    Redirected { status: u16, location: String },
    #[error("judge reply larger than {kib} KiB (--judge-max-reply-kib): not read further")]
    ReplyTooLarge { kib: u64 },
    #[error(
        "judge answer truncated (finish_reason `length`) at the output-token cap \
         ({max_tokens}); raise --judge-max-tokens"
    )]
    Truncated { max_tokens: String },
    #[error("judge answer unparseable: {0}")]
    Unparseable(String),
    #[error("judge prompt larger than {kib} KiB (--judge-max-prompt-kib) even cut: not sent")]
    PromptTooLarge { kib: u64 },
    #[error("judge unreachable after {attempts} attempt(s): {reason}")]
    Transport { reason: String, attempts: u32 },
    #[error("judge dry run: not called")]
    DryRun,
}

impl JudgeError {
    /// The error with every secret in its texts redacted.
    fn redacted(self, secrets: &Secrets) -> JudgeError {
        match self {
            JudgeError::Refused { status, body } => JudgeError::Refused {
                status,
                body: secrets.redact(&body),
            },
            JudgeError::Redirected { status, location } => JudgeError::Redirected {
                status,
                location: secrets.redact(&location),
            },
            JudgeError::Unparseable(s) => JudgeError::Unparseable(secrets.redact(&s)),
            JudgeError::Transport { reason, attempts } => JudgeError::Transport {
                reason: secrets.redact(&reason),
                attempts,
            },
            other => other,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum JudgeSetupError {
    #[error("judge: {0}")]
    Invalid(String),
    #[error("judge: cannot build the HTTP client: {0}")]
    Client(String),
    #[error("judge: cannot create the cache directory {path}: {reason}")]
    Cache { path: String, reason: String },
}

/// What kind of answer a prompt asks for, as its `result`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerKind {
    /// `"yes"` or `"no"`.
    YesNo,
    /// A number in 0..=1.
    Score,
}

/// One question to the judge: one user message holding the whole prompt.
#[derive(Debug, Clone)]
pub struct Prompt {
    /// The metric asking (for dry-run output and logs).
    pub metric: String,
    pub text: String,
    pub kind: AnswerKind,
}

/// Tokens of one answer, as the server reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Tokens {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// The judge's verdict on one prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub verdict: Option<bool>,
    pub score: Option<f64>,
    pub rationale: String,
    pub tokens: Tokens,
    /// No request was made for it (served from the disk cache, or by an
    /// identical request in flight): no tokens spent.
    pub cached: bool,
}

/// Tokens and cost of one model over a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// From `[judge.prices]`, when the model has a price.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

/// Totals over a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JudgeUsage {
    /// HTTP requests sent (retries included).
    pub requests: u64,
    pub retries: u64,
    pub cache_hits: u64,
    /// Prompts answered by an identical request already in flight.
    pub deduplicated: u64,
    /// Prompts that ended without a verdict (dry runs not counted).
    pub errors: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// The same tokens by model.
    pub models: BTreeMap<String, ModelUsage>,
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    retries: AtomicU64,
    cache_hits: AtomicU64,
    deduplicated: AtomicU64,
    errors: AtomicU64,
    prompt_tokens: AtomicU64,
    completion_tokens: AtomicU64,
}

/// The texts that must never reach a report or a log: the API key and the
/// extra headers' values.
#[derive(Debug, Default)]
struct Secrets(Vec<String>);

/// What a secret is replaced with.
const REDACTED: &str = "[redacted]";

impl Secrets {
    /// Secrets shorter than this are not redacted: a value like `1` or
    /// `on` is no secret, and replacing it would garble every text.
    const MIN_CHARS: usize = 4;

    fn new<'a>(values: impl IntoIterator<Item = &'a str>) -> Secrets {
        let mut v: Vec<String> = values
            .into_iter()
            .map(str::trim)
            .filter(|s| s.chars().count() >= Self::MIN_CHARS)
            .map(str::to_string)
            .collect();
        // Longest first, so a secret containing another goes whole.
        v.sort_by_key(|s| std::cmp::Reverse(s.len()));
        v.dedup();
        Secrets(v)
    }

    /// `text` with every secret replaced by [`REDACTED`].
    fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in &self.0 {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), REDACTED);
            }
        }
        out
    }
}

/// How `response_format` is asked for; a server that says it cannot do one
/// gets the next.
const FORMAT_SCHEMA: u8 = 0;
const FORMAT_OBJECT: u8 = 1;
const FORMAT_NONE: u8 = 2;

/// Cap on a `Retry-After` wait, so a server cannot park a run.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// The judge client of a run (one endpoint, one model).
pub struct Judge {
    config: JudgeConfig,
    model: String,
    endpoint: String,
    api_key: Option<String>,
    client: Option<reqwest::blocking::Client>,
    token_field: TokenField,
    secrets: Secrets,
    slots: Mutex<usize>,
    freed: Condvar,
    /// The response format in effect for this endpoint and model.
    format: AtomicU8,
    counters: Counters,
    in_flight: cache::InFlight,
    /// Where dry-run prompts go (stderr unless a test captures them).
    dry_out: Mutex<Box<dyn Write + Send>>,
}

impl std::fmt::Debug for Judge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Judge")
            .field("endpoint", &self.endpoint)
            .field("model", &self.model)
            .finish()
    }
}

impl Judge {
    /// Checks `config` and builds the client. `api_key` is sent as a bearer
    /// token when set.
    pub fn new(config: JudgeConfig, api_key: Option<String>) -> Result<Judge, JudgeSetupError> {
        let bad = |m: &str| JudgeSetupError::Invalid(m.to_string());
        // A dry run calls nothing: it needs neither a model nor a URL.
        let model = match (&config.model, config.dry_run) {
            (Some(m), _) => m.clone(),
            (None, true) => "(dry run)".to_string(),
            (None, false) => return Err(bad("no model: set --judge-model or `model` in [judge]")),
        };
        let endpoint = match (&config.url, config.dry_run) {
            (Some(u), _) => {
                if !(u.starts_with("http://") || u.starts_with("https://")) {
                    return Err(bad(&format!("url `{u}` is not http(s)")));
                }
                format!("{}/chat/completions", u.trim_end_matches('/'))
            }
            (None, true) => String::new(),
            (None, false) => return Err(bad("no URL: set --judge-url or `url` in [judge]")),
        };
        check(&config).map_err(|m| bad(&m))?;
        if let Some(dir) = &config.cache {
            std::fs::create_dir_all(dir).map_err(|e| JudgeSetupError::Cache {
                path: dir.display().to_string(),
                reason: e.to_string(),
            })?;
        }
        let api_key = api_key.filter(|k| !k.is_empty());
        let client = if config.dry_run {
            None
        } else {
            Some(http::client(&config).map_err(|e| match e {
                http::ClientError::Header(m) => bad(&m),
                http::ClientError::Build(m) => JudgeSetupError::Client(m),
            })?)
        };
        let secrets = Secrets::new(
            api_key
                .as_deref()
                .into_iter()
                .chain(config.headers.values().map(String::as_str)),
        );
        let token_field = config
            .token_field
            .unwrap_or_else(|| http::default_token_field(&endpoint));
        Ok(Judge {
            slots: Mutex::new(config.concurrency),
            config,
            model,
            endpoint,
            api_key,
            client,
            token_field,
            secrets,
            freed: Condvar::new(),
            format: AtomicU8::new(FORMAT_SCHEMA),
            counters: Counters::default(),
            in_flight: cache::InFlight::default(),
            dry_out: Mutex::new(Box::new(std::io::stderr())),
        })
    }

    /// Sends dry-run prompts to `out` instead of stderr.
    pub fn with_dry_run_output(self, out: Box<dyn Write + Send>) -> Judge {
        *self.dry_out.lock().unwrap_or_else(PoisonError::into_inner) = out;
        self
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    /// Requests in flight at once, at most (replay and serve size their
    /// worker pools by it).
    pub fn concurrency(&self) -> usize {
        self.config.concurrency
    }

    /// The longest prompt sent, in bytes of text (prompts are cut to fit).
    pub fn max_prompt_bytes(&self) -> usize {
        usize::try_from(self.config.max_prompt_kib.saturating_mul(1024)).unwrap_or(usize::MAX)
    }

    pub fn usage(&self) -> JudgeUsage {
        let c = &self.counters;
        let (prompt_tokens, completion_tokens) = (
            c.prompt_tokens.load(Ordering::Relaxed),
            c.completion_tokens.load(Ordering::Relaxed),
        );
        let price = self.config.prices.get(&self.model);
        let model = ModelUsage {
            prompt_tokens,
            completion_tokens,
            cost: price.map(|p| {
                (prompt_tokens as f64 * p.prompt_per_million
                    + completion_tokens as f64 * p.completion_per_million)
                    / 1e6
            }),
        };
        JudgeUsage {
            requests: c.requests.load(Ordering::Relaxed),
            retries: c.retries.load(Ordering::Relaxed),
            cache_hits: c.cache_hits.load(Ordering::Relaxed),
            deduplicated: c.deduplicated.load(Ordering::Relaxed),
            errors: c.errors.load(Ordering::Relaxed),
            prompt_tokens,
            completion_tokens,
            models: BTreeMap::from([(self.model.clone(), model)]),
        }
    }

    /// Asks one question; blocks until answered or failed. Every text of
    /// the answer or the error is redacted, the rationale capped.
    pub fn ask(&self, prompt: &Prompt) -> Result<Answer, JudgeError> {
        match self.ask_inner(prompt) {
            Ok(mut a) => {
                a.rationale = cap_chars(
                    &self.secrets.redact(&a.rationale),
                    self.config.max_rationale_chars,
                );
                Ok(a)
            }
            Err(e) => {
                if e != JudgeError::DryRun {
                    self.counters.errors.fetch_add(1, Ordering::Relaxed);
                }
                Err(e.redacted(&self.secrets))
            }
        }
    }

    fn ask_inner(&self, prompt: &Prompt) -> Result<Answer, JudgeError> {
        if self.config.dry_run {
            let mut out = self.dry_out.lock().unwrap_or_else(PoisonError::into_inner);
            // A failed write of a dry-run listing loses nothing but the listing.
            let _ = writeln!(
                out,
                "=== judge prompt: {} (model {}) ===\n{}\n",
                prompt.metric, self.model, prompt.text
            );
            return Err(JudgeError::DryRun);
        }
        if prompt.text.len() > self.max_prompt_bytes() {
            return Err(JudgeError::PromptTooLarge {
                kib: self.config.max_prompt_kib,
            });
        }
        let format = self.format.load(Ordering::Relaxed);
        // An answer given in a simpler format is this server's too: one
        // that cannot do structured output answered in the next format,
        // and a new run starts from the first.
        let hit = (format..=FORMAT_NONE)
            .find_map(|f| self.cached(&self.cache_key(prompt, f), prompt.kind));
        if let Some(answer) = hit {
            self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(answer);
        }
        let key = self.cache_key(prompt, format);
        match self.in_flight.join(&key) {
            cache::Turn::Follow(follower) => {
                self.counters.deduplicated.fetch_add(1, Ordering::Relaxed);
                follower.wait().map(|mut a| {
                    a.cached = true;
                    a.tokens = Tokens::default();
                    a
                })
            }
            cache::Turn::Lead(leader) => {
                let result = self.asked(prompt);
                leader.finish(&result);
                result
            }
        }
    }

    /// Sends the prompt (in its turn for a slot), reads the verdict, and
    /// caches a readable answer under the format it was given in.
    fn asked(&self, prompt: &Prompt) -> Result<Answer, JudgeError> {
        let _slot = self.acquire();
        let (completion, format) = self.call(prompt)?;
        let tokens = completion.tokens;
        let c = &self.counters;
        c.prompt_tokens
            .fetch_add(tokens.prompt_tokens, Ordering::Relaxed);
        c.completion_tokens
            .fetch_add(tokens.completion_tokens, Ordering::Relaxed);
        let mut answer = parse_answer(&completion.content, prompt.kind)?;
        answer.tokens = tokens;
        self.store(&self.cache_key(prompt, format), &completion.content, tokens);
        Ok(answer)
    }

    fn acquire(&self) -> Slot<'_> {
        let mut free = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        while *free == 0 {
            free = self
                .freed
                .wait(free)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *free -= 1;
        Slot(self)
    }

    /// The output-token cap as sent, for messages.
    fn max_tokens_label(&self) -> String {
        match self.config.max_tokens {
            0 => "none sent: the server's own".to_string(),
            n => n.to_string(),
        }
    }
}

/// The checks of a configuration's numbers.
fn check(config: &JudgeConfig) -> Result<(), String> {
    if config.concurrency == 0 {
        return Err("concurrency must be at least 1".into());
    }
    if !(config.timeout_secs.is_finite() && config.timeout_secs > 0.0) {
        return Err("timeout must be a positive number of seconds".into());
    }
    if let Some(t) = config.temperature {
        if !(t.is_finite() && (0.0..=2.0).contains(&t)) {
            return Err(format!("temperature {t} is outside 0..=2"));
        }
    }
    if config.max_reply_kib == 0 || config.max_prompt_kib == 0 {
        return Err("the reply and prompt caps must be at least 1 KiB".into());
    }
    for (model, p) in &config.prices {
        let ok = |x: f64| x.is_finite() && x >= 0.0;
        if !(ok(p.prompt_per_million) && ok(p.completion_per_million)) {
            return Err(format!(
                "the price of `{model}` must be non-negative numbers"
            ));
        }
    }
    Ok(())
}

/// `text` cut to `max` characters, saying so.
fn cap_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!(
            "{}... [cut at {max} of {} characters]",
            &text[..i],
            text.chars().count()
        ),
        None => text.to_string(),
    }
}

/// Exponential backoff: 0.5 s, 1 s, 2 s, ... capped at 30 s.
fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(500u64.saturating_mul(1 << attempt.saturating_sub(1).min(6)))
        .min(Duration::from_secs(30))
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

struct Slot<'a>(&'a Judge);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        *self.0.slots.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        self.0.freed.notify_one();
    }
}

impl Answer {
    /// The answer's cost and origin, for a metric's `details`.
    pub fn details(&self, model: &str) -> Value {
        json!({"judge": {
            "model": model,
            "prompt_tokens": self.tokens.prompt_tokens,
            "completion_tokens": self.tokens.completion_tokens,
            "cached": self.cached,
        }})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_longest_first_and_short_values_kept() {
        let s = Secrets::new(["sk-abc", "sk-abcdef", "1", " evals "]);
        assert_eq!(
            s.redact("key sk-abcdef and sk-abc, team evals, page 1"),
            "key [redacted] and [redacted], team [redacted], page 1"
        );
    }

    #[test]
    fn rationale_cap_says_how_long_it_was() {
        assert_eq!(cap_chars("héllo", 10), "héllo");
        assert_eq!(cap_chars("héllo", 2), "hé... [cut at 2 of 5 characters]");
    }
}
