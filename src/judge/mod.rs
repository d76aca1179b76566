//! An LLM judge over the OpenAI-compatible chat completions API (OpenAI,
//! Azure OpenAI, vLLM, llama.cpp server, Ollama, LiteLLM all speak it).
//!
//! One [`Judge`] per run, shared by every judged metric: it limits concurrent
//! requests, retries rate limits and server errors with backoff (honouring
//! `Retry-After`), caches answers on disk by a hash of (model, prompt), sums
//! token usage, and in dry-run mode prints prompts instead of calling. A
//! failure is a [`JudgeError`] for the one metric that asked; it never stops
//! a run.

mod parse;

use std::cell::Cell;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

pub use parse::parse_answer;

/// `[judge]` in the config file; the `--judge-*` flags override it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct JudgeConfig {
    /// Base URL of the API; `/chat/completions` is appended
    /// (e.g. `https://api.openai.com/v1`, `http://127.0.0.1:11434/v1`).
    pub url: Option<String>,
    pub model: Option<String>,
    /// Extra request headers (e.g. `api-key` for Azure, an org header).
    pub headers: BTreeMap<String, String>,
    /// Requests in flight at once, at most.
    pub concurrency: usize,
    /// Per-request timeout, in seconds.
    pub timeout_secs: f64,
    /// Retries of a request after a 429, a 5xx or a timeout.
    pub retries: u32,
    /// Directory of cached answers (by hash of model and prompt).
    pub cache: Option<PathBuf>,
    /// Print the prompts; call nothing.
    pub dry_run: bool,
    /// `max_tokens` of each request.
    pub max_tokens: Option<u32>,
}

impl Default for JudgeConfig {
    fn default() -> Self {
        JudgeConfig {
            url: None,
            model: None,
            headers: BTreeMap::new(),
            concurrency: 4,
            timeout_secs: 60.0,
            retries: 3,
            cache: None,
            dry_run: false,
            max_tokens: None,
        }
    }
}

impl JudgeConfig {
    /// Whether a judge is asked for at all (a URL, a model or a dry run).
    pub fn is_set(&self) -> bool {
        self.url.is_some() || self.model.is_some() || self.dry_run
    }
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
    #[error("judge answer unparseable: {0}")]
    Unparseable(String),
    #[error("judge unreachable: {0}")]
    Transport(String),
    #[error("judge overloaded: its queue is full")]
    Overloaded,
    #[error("judge dry run: not called")]
    DryRun,
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

/// What kind of answer a prompt asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerKind {
    /// `verdict`: yes or no.
    YesNo,
    /// `score`: a number in 0..=1.
    Score,
}

/// One question to the judge.
#[derive(Debug, Clone)]
pub struct Prompt {
    /// The metric asking (for dry-run output and logs).
    pub metric: String,
    pub system: String,
    pub user: String,
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
    /// Served from the disk cache (no request made, no tokens spent).
    pub cached: bool,
}

/// Totals over a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct JudgeUsage {
    /// HTTP requests sent (retries included).
    pub requests: u64,
    pub retries: u64,
    pub cache_hits: u64,
    /// Prompts that ended without a verdict.
    pub errors: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    retries: AtomicU64,
    cache_hits: AtomicU64,
    errors: AtomicU64,
    prompt_tokens: AtomicU64,
    completion_tokens: AtomicU64,
}

/// How `response_format` is asked for; servers that reject one get the next.
const FORMAT_SCHEMA: u8 = 0;
const FORMAT_OBJECT: u8 = 1;
const FORMAT_NONE: u8 = 2;

/// Cap on a `Retry-After` wait, so a server cannot park a run.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

thread_local! {
    /// Set while judged metrics must not call (serve's judge queue is full).
    static REFUSING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with every judge call on this thread answered
/// [`JudgeError::Overloaded`] at once (serve: the judge queue is full, so
/// the scoring thread scores without waiting on the judge).
pub fn refusing<T>(f: impl FnOnce() -> T) -> T {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            REFUSING.with(|r| r.set(self.0));
        }
    }
    let _reset = Reset(REFUSING.with(|r| r.replace(true)));
    f()
}

/// The judge client of a run.
pub struct Judge {
    config: JudgeConfig,
    model: String,
    endpoint: String,
    api_key: Option<String>,
    client: Option<reqwest::blocking::Client>,
    slots: Mutex<usize>,
    freed: Condvar,
    format: AtomicU8,
    counters: Counters,
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
        if config.concurrency == 0 {
            return Err(bad("concurrency must be at least 1"));
        }
        if !(config.timeout_secs.is_finite() && config.timeout_secs > 0.0) {
            return Err(bad("timeout must be a positive number of seconds"));
        }
        if let Some(dir) = &config.cache {
            std::fs::create_dir_all(dir).map_err(|e| JudgeSetupError::Cache {
                path: dir.display().to_string(),
                reason: e.to_string(),
            })?;
        }
        let client = if config.dry_run {
            None
        } else {
            let mut headers = reqwest::header::HeaderMap::new();
            for (k, v) in &config.headers {
                let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                    .map_err(|_| bad(&format!("bad header name `{k}`")))?;
                let value = reqwest::header::HeaderValue::from_str(v)
                    .map_err(|_| bad(&format!("bad value for header `{k}`")))?;
                headers.insert(name, value);
            }
            Some(
                reqwest::blocking::Client::builder()
                    .timeout(Duration::from_secs_f64(config.timeout_secs))
                    .default_headers(headers)
                    .build()
                    .map_err(|e| JudgeSetupError::Client(e.to_string()))?,
            )
        };
        Ok(Judge {
            slots: Mutex::new(config.concurrency),
            config,
            model,
            endpoint,
            api_key: api_key.filter(|k| !k.is_empty()),
            client,
            freed: Condvar::new(),
            format: AtomicU8::new(FORMAT_SCHEMA),
            counters: Counters::default(),
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

    pub fn usage(&self) -> JudgeUsage {
        let c = &self.counters;
        JudgeUsage {
            requests: c.requests.load(Ordering::Relaxed),
            retries: c.retries.load(Ordering::Relaxed),
            cache_hits: c.cache_hits.load(Ordering::Relaxed),
            errors: c.errors.load(Ordering::Relaxed),
            prompt_tokens: c.prompt_tokens.load(Ordering::Relaxed),
            completion_tokens: c.completion_tokens.load(Ordering::Relaxed),
        }
    }

    /// Asks one question; blocks until answered, failed, or refused.
    pub fn ask(&self, prompt: &Prompt) -> Result<Answer, JudgeError> {
        let result = self.ask_inner(prompt);
        if result.is_err() {
            self.counters.errors.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    fn ask_inner(&self, prompt: &Prompt) -> Result<Answer, JudgeError> {
        if REFUSING.with(Cell::get) {
            return Err(JudgeError::Overloaded);
        }
        if self.config.dry_run {
            let mut out = self.dry_out.lock().unwrap_or_else(PoisonError::into_inner);
            // A failed write of a dry-run listing loses nothing but the listing.
            let _ = writeln!(
                out,
                "=== judge prompt: {} (model {}) ===\n--- system ---\n{}\n--- user ---\n{}\n",
                prompt.metric, self.model, prompt.system, prompt.user
            );
            return Err(JudgeError::DryRun);
        }
        let key = self.cache_key(prompt);
        if let Some(answer) = self.cached(&key, prompt.kind) {
            self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(answer);
        }
        let _slot = self.acquire();
        let (content, tokens) = self.call(prompt)?;
        let c = &self.counters;
        c.prompt_tokens
            .fetch_add(tokens.prompt_tokens, Ordering::Relaxed);
        c.completion_tokens
            .fetch_add(tokens.completion_tokens, Ordering::Relaxed);
        let mut answer = parse_answer(&content, prompt.kind)?;
        answer.tokens = tokens;
        self.store(&key, &content, tokens);
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

    /// The cache key: model and everything sent that shapes the answer.
    fn cache_key(&self, prompt: &Prompt) -> String {
        let mut h = Sha256::new();
        for part in [
            self.model.as_str(),
            prompt.system.as_str(),
            prompt.user.as_str(),
            match prompt.kind {
                AnswerKind::YesNo => "yes/no",
                AnswerKind::Score => "score",
            },
        ] {
            h.update(part.as_bytes());
            h.update([0u8]);
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    fn cached(&self, key: &str, kind: AnswerKind) -> Option<Answer> {
        let path = self.config.cache.as_ref()?.join(format!("{key}.json"));
        let text = std::fs::read_to_string(path).ok()?;
        let entry: CacheEntry = serde_json::from_str(&text).ok()?;
        let mut answer = parse_answer(&entry.content, kind).ok()?;
        answer.cached = true;
        Some(answer)
    }

    fn store(&self, key: &str, content: &str, tokens: Tokens) {
        let Some(dir) = &self.config.cache else {
            return;
        };
        let entry = CacheEntry {
            model: self.model.clone(),
            content: content.to_string(),
            tokens,
        };
        // Write then rename, so a concurrent reader never sees half a file.
        let tmp = dir.join(format!("{key}.{}.tmp", std::process::id()));
        let done = serde_json::to_vec(&entry)
            .map_err(std::io::Error::other)
            .and_then(|bytes| std::fs::write(&tmp, bytes))
            .and_then(|()| std::fs::rename(&tmp, dir.join(format!("{key}.json"))));
        if let Err(e) = done {
            tracing::warn!(error = %e, dir = %dir.display(), "Cannot write the judge cache.");
        }
    }

    fn body(&self, prompt: &Prompt, format: u8) -> Value {
        let mut body = json!({
            "model": self.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": prompt.system},
                {"role": "user", "content": prompt.user},
            ],
        });
        if let Some(m) = self.config.max_tokens {
            body["max_tokens"] = json!(m);
        }
        match format {
            FORMAT_SCHEMA => body["response_format"] = parse::response_schema(prompt.kind),
            FORMAT_OBJECT => body["response_format"] = json!({"type": "json_object"}),
            _ => {}
        }
        body
    }

    /// Sends `prompt` until an answer, a final error, or retries run out.
    fn call(&self, prompt: &Prompt) -> Result<(String, Tokens), JudgeError> {
        let client = self.client.as_ref().ok_or(JudgeError::DryRun)?;
        let mut attempts = 0u32;
        loop {
            let format = self.format.load(Ordering::Relaxed);
            let mut req = client
                .post(&self.endpoint)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(self.body(prompt, format).to_string());
            if let Some(k) = &self.api_key {
                req = req.bearer_auth(k);
            }
            attempts += 1;
            self.counters.requests.fetch_add(1, Ordering::Relaxed);
            let retry_in = match req.send() {
                Err(e) if e.is_timeout() => {
                    if attempts > self.config.retries {
                        return Err(JudgeError::Timeout(attempts));
                    }
                    backoff(attempts)
                }
                Err(e) => return Err(JudgeError::Transport(error_chain(&e))),
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let retry_after = resp
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<f64>().ok())
                        .filter(|s| s.is_finite() && *s >= 0.0)
                        .map(|s| Duration::from_secs_f64(s).min(MAX_RETRY_AFTER));
                    let text = match resp.bytes() {
                        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
                        Err(e) if e.is_timeout() => {
                            if attempts > self.config.retries {
                                return Err(JudgeError::Timeout(attempts));
                            }
                            std::thread::sleep(backoff(attempts));
                            self.counters.retries.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                        Err(e) => return Err(JudgeError::Transport(error_chain(&e))),
                    };
                    match status {
                        200..=299 => return parse::completion(&text),
                        // A server without structured output: ask more simply.
                        400 | 422 if format < FORMAT_NONE => {
                            let _ = self.format.compare_exchange(
                                format,
                                format + 1,
                                Ordering::Relaxed,
                                Ordering::Relaxed,
                            );
                            attempts -= 1;
                            continue;
                        }
                        429 | 500..=599 => {
                            if attempts > self.config.retries {
                                return Err(if status == 429 {
                                    JudgeError::RateLimited(attempts)
                                } else {
                                    JudgeError::Server { status, attempts }
                                });
                            }
                            retry_after.unwrap_or_else(|| backoff(attempts))
                        }
                        _ => {
                            return Err(JudgeError::Refused {
                                status,
                                body: parse::snippet(&text),
                            })
                        }
                    }
                }
            };
            self.counters.retries.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(retry_in);
        }
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

/// One cached answer: the answer text as the server gave it.
#[derive(Serialize, Deserialize)]
struct CacheEntry {
    model: String,
    content: String,
    tokens: Tokens,
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
