//! The chat completions request: its body, the client's policy (no
//! redirects, a timeout), what is retried, and reading a reply up to a cap.

use std::io::Read;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde::Serialize;

use super::parse::{self, Completion};
use super::{
    backoff, error_chain, AnswerKind, Judge, JudgeConfig, JudgeError, Prompt, TokenField,
    FORMAT_NONE, FORMAT_OBJECT, FORMAT_SCHEMA, MAX_RETRY_AFTER,
};

pub(super) enum ClientError {
    Header(String),
    Build(String),
}

/// The HTTP client: the extra headers on every request, the timeout, and
/// no redirects at all (a redirect would carry the key and the headers,
/// and on 307 the prompt, to wherever it points).
pub(super) fn client(config: &JudgeConfig) -> Result<reqwest::blocking::Client, ClientError> {
    let mut headers = reqwest::header::HeaderMap::new();
    for (k, v) in &config.headers {
        let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| ClientError::Header(format!("bad header name `{k}`")))?;
        let mut value = reqwest::header::HeaderValue::from_str(v)
            .map_err(|_| ClientError::Header(format!("bad value for header `{k}`")))?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs_f64(config.timeout_secs))
        .default_headers(headers)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| ClientError::Build(e.to_string()))
}

/// OpenAI's and Azure OpenAI's newer models reject `max_tokens`; most other
/// servers (llama.cpp, vLLM, Ollama) know only it.
pub(super) fn default_token_field(endpoint: &str) -> TokenField {
    let host = endpoint
        .split("://")
        .nth(1)
        .and_then(|rest| rest.split(['/', ':']).next())
        .unwrap_or("")
        .to_ascii_lowercase();
    if host == "api.openai.com" || host.ends_with(".openai.azure.com") {
        TokenField::MaxCompletionTokens
    } else {
        TokenField::MaxTokens
    }
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: [Message<'a>; 1],
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat>,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    content: &'a str,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ResponseFormat {
    JsonSchema { json_schema: NamedSchema },
    JsonObject,
}

#[derive(Serialize)]
struct NamedSchema {
    name: &'static str,
    strict: bool,
    schema: Schema,
}

/// A struct, not a map, so that `result` comes before `rationale`: under
/// strict structured output the keys come out in schema order, so the model
/// gives its verdict first and its reasons after (as MLflow asks).
#[derive(Serialize)]
struct Schema {
    #[serde(rename = "type")]
    kind: &'static str,
    properties: Properties,
    required: [&'static str; 2],
    #[serde(rename = "additionalProperties")]
    additional_properties: bool,
}

#[derive(Serialize)]
struct Properties {
    result: Property,
    rationale: Property,
}

#[derive(Serialize)]
struct Property {
    #[serde(rename = "type")]
    kind: &'static str,
}

fn response_format(kind: AnswerKind, format: u8) -> Option<ResponseFormat> {
    match format {
        FORMAT_SCHEMA => Some(ResponseFormat::JsonSchema {
            json_schema: NamedSchema {
                name: "verdict",
                strict: true,
                schema: Schema {
                    kind: "object",
                    properties: Properties {
                        result: Property {
                            kind: match kind {
                                AnswerKind::YesNo => "string",
                                AnswerKind::Score => "number",
                            },
                        },
                        rationale: Property { kind: "string" },
                    },
                    required: ["result", "rationale"],
                    additional_properties: false,
                },
            },
        }),
        FORMAT_OBJECT => Some(ResponseFormat::JsonObject),
        _ => None,
    }
}

/// What one reply means for the request loop.
enum Step {
    Done(Completion),
    /// Retry after this long (counts as an attempt).
    Retry(Duration),
    /// Send again now in the next format (not an attempt).
    Downgraded,
}

/// A reply body read up to the cap.
struct Received {
    text: String,
    over_cap: bool,
}

impl Judge {
    fn body(&self, prompt: &Prompt, format: u8) -> String {
        let cap = (self.config.max_tokens > 0).then_some(self.config.max_tokens);
        let (max_tokens, max_completion_tokens) = match self.token_field {
            TokenField::MaxTokens => (cap, None),
            TokenField::MaxCompletionTokens => (None, cap),
        };
        let body = Body {
            model: &self.model,
            messages: [Message {
                role: "user",
                content: &prompt.text,
            }],
            temperature: self.config.temperature,
            max_tokens,
            max_completion_tokens,
            response_format: response_format(prompt.kind, format),
        };
        // Serializing plain structs of strings and numbers cannot fail.
        serde_json::to_string(&body).unwrap_or_default()
    }

    /// Sends `prompt` until an answer, a final error, or retries run out;
    /// gives the answer and the response format it was asked in.
    pub(super) fn call(&self, prompt: &Prompt) -> Result<(Completion, u8), JudgeError> {
        let client = self.client.as_ref().ok_or(JudgeError::DryRun)?;
        let mut attempts = 0u32;
        loop {
            let format = self.format.load(Ordering::Relaxed);
            let mut req = client
                .post(&self.endpoint)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(self.body(prompt, format));
            if let Some(k) = &self.api_key {
                req = req.bearer_auth(k);
            }
            attempts += 1;
            self.counters.requests.fetch_add(1, Ordering::Relaxed);
            let retryable = |e: JudgeError| {
                if attempts > self.config.retries {
                    Err(e)
                } else {
                    Ok(backoff(attempts))
                }
            };
            let wait = match req.send() {
                Err(e) if e.is_timeout() => retryable(JudgeError::Timeout(attempts))?,
                // Nothing was sent: a server starting up, a restart.
                Err(e) if e.is_connect() => retryable(JudgeError::Transport {
                    reason: error_chain(&e),
                    attempts,
                })?,
                Err(e) => {
                    return Err(JudgeError::Transport {
                        reason: error_chain(&e),
                        attempts,
                    })
                }
                Ok(resp) => match self.reply(resp, format, attempts)? {
                    Step::Done(c) => return Ok((c, format)),
                    Step::Retry(wait) => wait,
                    Step::Downgraded => {
                        attempts -= 1;
                        continue;
                    }
                },
            };
            self.counters.retries.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(wait);
        }
    }

    /// What one response means: an answer, a retry, a format to drop, or
    /// the metric's error.
    fn reply(
        &self,
        resp: reqwest::blocking::Response,
        format: u8,
        attempts: u32,
    ) -> Result<Step, JudgeError> {
        let status = resp.status().as_u16();
        let header = |h: reqwest::header::HeaderName| {
            resp.headers()
                .get(h)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let retry_after = header(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(|s| Duration::from_secs_f64(s).min(MAX_RETRY_AFTER));
        let location = header(reqwest::header::LOCATION);
        let retry = |e: JudgeError, wait: Option<Duration>| {
            if attempts > self.config.retries {
                Err(e)
            } else {
                Ok(Step::Retry(wait.unwrap_or_else(|| backoff(attempts))))
            }
        };
        let read = match self.read_capped(resp) {
            Ok(r) => r,
            Err(e) if is_timeout(&e) => return retry(JudgeError::Timeout(attempts), None),
            Err(e) => {
                return Err(JudgeError::Transport {
                    reason: error_chain(&e),
                    attempts,
                })
            }
        };
        // Redacted before any of it is cut into a message, so that no cut
        // can leave half a secret.
        let text = self.secrets.redact(&read.text);
        match status {
            200..=299 if read.over_cap => Err(JudgeError::ReplyTooLarge {
                kib: self.config.max_reply_kib,
            }),
            200..=299 => parse::completion(&text, &self.max_tokens_label()).map(Step::Done),
            300..=399 => Err(JudgeError::Redirected {
                status,
                location: parse::snippet(
                    &self
                        .secrets
                        .redact(location.as_deref().unwrap_or("nowhere")),
                ),
            }),
            // Only a complaint about structured output drops it, and only
            // for this endpoint and model: a context-length or temperature
            // 400 is that prompt's error.
            400 | 422 if format < FORMAT_NONE && parse::about_format(&text) => {
                let _ = self.format.compare_exchange(
                    format,
                    format + 1,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
                Ok(Step::Downgraded)
            }
            429 => retry(JudgeError::RateLimited(attempts), retry_after),
            // 501: the server cannot do this at all; asking again won't help.
            500..=599 if status != 501 => {
                retry(JudgeError::Server { status, attempts }, retry_after)
            }
            500..=599 => Err(JudgeError::Server { status, attempts }),
            _ => Err(JudgeError::Refused {
                status,
                body: parse::snippet(&text),
            }),
        }
    }

    /// The body, read to at most the cap (a verdict is a few KB; a server
    /// that sends more is not trusted with the run's memory).
    fn read_capped(&self, resp: reqwest::blocking::Response) -> std::io::Result<Received> {
        let cap = self.config.max_reply_kib.saturating_mul(1024);
        if resp.content_length().is_some_and(|n| n > cap) {
            return Ok(Received {
                text: String::new(),
                over_cap: true,
            });
        }
        let mut buf = Vec::new();
        resp.take(cap.saturating_add(1)).read_to_end(&mut buf)?;
        let over_cap = buf.len() as u64 > cap;
        if over_cap {
            buf.truncate(usize::try_from(cap).unwrap_or(usize::MAX));
        }
        Ok(Received {
            text: String::from_utf8_lossy(&buf).into_owned(),
            over_cap,
        })
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::TimedOut
        || e.get_ref()
            .and_then(|inner| inner.downcast_ref::<reqwest::Error>())
            .is_some_and(reqwest::Error::is_timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_field_by_host() {
        for (url, field) in [
            (
                "https://api.openai.com/v1/chat/completions",
                TokenField::MaxCompletionTokens,
            ),
            (
                "https://res.openai.azure.com/openai/deployments/x/chat/completions",
                TokenField::MaxCompletionTokens,
            ),
            (
                "http://127.0.0.1:8080/v1/chat/completions",
                TokenField::MaxTokens,
            ),
            ("https://openai.com.example.net/v1", TokenField::MaxTokens),
        ] {
            assert_eq!(default_token_field(url), field, "{url}");
        }
    }

    #[test]
    fn schema_asks_result_before_rationale() {
        let f = serde_json::to_string(&response_format(AnswerKind::YesNo, FORMAT_SCHEMA)).unwrap();
        let (r, why) = (
            f.find("\"result\"").unwrap(),
            f.find("\"rationale\"").unwrap(),
        );
        assert!(r < why, "{f}");
        assert!(
            f.starts_with(r#"{"type":"json_schema","json_schema":{"name":"verdict","strict":true"#),
            "{f}"
        );
        assert_eq!(
            serde_json::to_string(&response_format(AnswerKind::Score, FORMAT_OBJECT)).unwrap(),
            r#"{"type":"json_object"}"#
        );
    }
}
