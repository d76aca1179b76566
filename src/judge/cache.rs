//! Answers kept on disk across runs, and identical prompts in flight at
//! once sent once.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{parse_answer, Answer, AnswerKind, Judge, JudgeError, Prompt, Tokens};

/// Bumped when what a key covers changes, so older entries are not read as
/// answers to different requests.
const KEY_VERSION: &str = "toolscore-judge-2";

/// One cached answer: the answer text as the server gave it.
#[derive(Serialize, Deserialize)]
struct CacheEntry {
    model: String,
    content: String,
    tokens: Tokens,
}

impl Judge {
    /// The cache key: everything that changes the answer. The endpoint (two
    /// servers may serve different models under one name, e.g. `local`),
    /// the model, the extra headers' names (a header can pick a deployment;
    /// their values are secrets and stay out), the response format in
    /// effect, the temperature, the token cap and the prompt.
    pub(super) fn cache_key(&self, prompt: &Prompt, format: u8) -> String {
        let c = &self.config;
        let headers: Vec<&str> = c.headers.keys().map(String::as_str).collect();
        let temperature = c.temperature.map(|t| t.to_string()).unwrap_or_default();
        let tokens = format!("{:?}={}", self.token_field, c.max_tokens);
        let format = format.to_string();
        let kind = match prompt.kind {
            AnswerKind::YesNo => "yes/no",
            AnswerKind::Score => "score",
        };
        let mut h = Sha256::new();
        for part in [
            KEY_VERSION,
            self.endpoint.as_str(),
            self.model.as_str(),
            &headers.join("\n"),
            &format,
            &temperature,
            &tokens,
            kind,
            prompt.text.as_str(),
        ] {
            h.update(part.len().to_le_bytes());
            h.update(part.as_bytes());
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// A cached answer that still reads as a verdict.
    pub(super) fn cached(&self, key: &str, kind: AnswerKind) -> Option<Answer> {
        let path = self.config.cache.as_ref()?.join(format!("{key}.json"));
        let text = std::fs::read_to_string(path).ok()?;
        let entry: CacheEntry = serde_json::from_str(&text).ok()?;
        let mut answer = parse_answer(&entry.content, kind).ok()?;
        answer.cached = true;
        Some(answer)
    }

    /// Keeps an answer that was read as a verdict (unparseable ones are
    /// asked again next time).
    pub(super) fn store(&self, key: &str, content: &str, tokens: Tokens) {
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
}

type Outcome = Result<Answer, JudgeError>;

/// One request in flight, and the callers waiting on its answer.
#[derive(Default)]
struct Flight {
    /// `Some` once the leader is done.
    result: Mutex<Option<Outcome>>,
    done: Condvar,
}

/// The prompts being asked right now, by cache key.
#[derive(Default)]
pub(super) struct InFlight(Mutex<HashMap<String, Arc<Flight>>>);

/// Whether this caller asks, or takes the answer of the caller who does.
pub(super) enum Turn<'a> {
    Lead(Leader<'a>),
    Follow(Follower),
}

/// A caller waiting on another's request.
pub(super) struct Follower(Arc<Flight>);

impl Follower {
    /// Blocks until the leader's answer.
    pub(super) fn wait(self) -> Outcome {
        let mut result = self.0.result.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(r) = result.as_ref() {
                return r.clone();
            }
            result = self
                .0
                .done
                .wait(result)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// The caller that sends the request; its answer goes to every follower.
/// Dropped unfinished (a panic), it releases them with an error.
pub(super) struct Leader<'a> {
    table: &'a InFlight,
    key: String,
    flight: Arc<Flight>,
}

impl InFlight {
    /// Leads the request for `key`, or follows the one in flight.
    pub(super) fn join(&self, key: &str) -> Turn<'_> {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(f) = map.get(key) {
            return Turn::Follow(Follower(Arc::clone(f)));
        }
        let flight = Arc::new(Flight::default());
        map.insert(key.to_string(), Arc::clone(&flight));
        Turn::Lead(Leader {
            table: self,
            key: key.to_string(),
            flight,
        })
    }
}

impl Leader<'_> {
    /// Hands `result` to the followers.
    pub(super) fn finish(self, result: &Outcome) {
        self.release(result.clone());
    }

    fn release(&self, result: Outcome) {
        {
            let mut map = self.table.0.lock().unwrap_or_else(PoisonError::into_inner);
            // Only this flight's entry: a later one for the key may be there.
            if map
                .get(&self.key)
                .is_some_and(|f| Arc::ptr_eq(f, &self.flight))
            {
                map.remove(&self.key);
            }
        }
        let mut r = self
            .flight
            .result
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if r.is_none() {
            *r = Some(result);
        }
        self.flight.done.notify_all();
    }
}

impl Drop for Leader<'_> {
    fn drop(&mut self) {
        // After `finish` the result is set and this changes nothing.
        self.release(Err(JudgeError::Transport {
            reason: "the request was abandoned".into(),
            attempts: 0,
        }));
    }
}
