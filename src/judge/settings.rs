//! The judge's settings, each declared once (in [`judge_settings!`] below):
//! its config-file key, type, default, command-line flag, environment
//! variable and help. From that one list come [`JudgeConfig`] (the `[judge]`
//! section of a config file, with the defaults) and [`JudgeFlags`] (the
//! `--judge-*` flags, applied on top by [`JudgeFlags::apply`]). Adding a
//! setting is one entry here.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{Price, TokenField};

/// A `--judge-*` flag's value that cannot be applied.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct JudgeFlagError(String);

/// Declares the settings. Each entry with a flag reads
/// `key: ConfigType = DEFAULT => flag_field: FlagType [extra clap args] merge, "help";`
/// where DEFAULT is `default` (the type's own; the help says any other) or a
/// literal parsed like the flag's text (the help then ends with it), and
/// `merge` is how the flag's value lands in the config. Entries under
/// `config_only` are keys of the config file with no flag.
macro_rules! judge_settings {
    (
        flags { $(
            $f:ident : $ct:ty = $def:tt => $flag:ident : $ft:ty [$($attr:tt)*] $merge:ident, $h:literal;
        )* }
        config_only { $( $cf:ident : $cct:ty, $ch:literal; )* }
    ) => {
        /// `[judge]` in the config file; the `--judge-*` flags override it.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields, default)]
        // The docs are the flags' help, plain text for a terminal: URLs bare.
        #[allow(rustdoc::bare_urls)]
        pub struct JudgeConfig {
            $( #[doc = $h] pub $f: $ct, )*
            $( #[doc = $ch] pub $cf: $cct, )*
        }

        impl Default for JudgeConfig {
            fn default() -> Self {
                JudgeConfig {
                    $( $f: judge_default!($def), )*
                    $( $cf: Default::default(), )*
                }
            }
        }

        /// The LLM judge (for `mlflow.llm_*` and `cubeo`): any OpenAI-compatible
        /// chat completions API. The key is read from `TOOLSCORE_JUDGE_API_KEY`, else
        /// `OPENAI_API_KEY`. Flags override the config's `[judge]`.
        #[derive(Debug, Clone, Default, clap::Args)]
        pub struct JudgeFlags {
            $(
                #[arg(long, help_heading = "Judge", help = judge_help!($def, $h), $($attr)*)]
                pub $flag: $ft,
            )*
        }

        impl JudgeFlags {
            /// Overrides `config` with every flag that was given.
            pub fn apply(&self, config: &mut JudgeConfig) -> Result<(), JudgeFlagError> {
                $( $merge(&mut config.$f, self.$flag.clone())?; )*
                Ok(())
            }
        }
    };
}

/// A setting's built-in default.
macro_rules! judge_default {
    (default) => {
        Default::default()
    };
    ($text:literal) => {
        default_of($text)
    };
}

/// A flag's help, with its built-in default when that is not the type's own.
macro_rules! judge_help {
    (default, $h:literal) => {
        $h
    };
    ($text:literal, $h:literal) => {
        concat!($h, " [default: ", $text, "]")
    };
}

judge_settings! {
    flags {
        url: Option<String> = default
            => judge_url: Option<String> [env = "TOOLSCORE_JUDGE_URL"] set,
            "Base URL of the API; `/chat/completions` is appended \
             (e.g. https://api.openai.com/v1, http://127.0.0.1:11434/v1 for Ollama)";
        model: Option<String> = default
            => judge_model: Option<String> [env = "TOOLSCORE_JUDGE_MODEL"] set,
            "Model name as the server knows it";
        // Their values are secrets: redacted from everything reported.
        headers: BTreeMap<String, String> = default
            => judge_header: Vec<String> [value_name = "K=V"] insert_headers,
            "Extra request header `K=V` (repeatable)";
        cache: Option<PathBuf> = default
            => judge_cache: Option<PathBuf> [env = "TOOLSCORE_JUDGE_CACHE"] set,
            "Directory caching answers by everything that shapes them (endpoint, model, header \
             names, format, temperature, token cap, prompt): a rerun costs nothing";
        dry_run: bool = default => judge_dry_run: bool [] switch_on,
            "Print the judge prompts on stderr instead of calling the judge; judged metrics \
             are \"not judged\" (exit 0)";
        concurrency: usize = "4" => judge_concurrency: Option<usize> [] set,
            "Judge requests in flight at once";
        timeout_secs: f64 = "60" => judge_timeout: Option<f64> [] set,
            "Per-request timeout in seconds";
        retries: u32 = "3" => judge_retries: Option<u32> [] set,
            "Retries after a 429, a 5xx (not 501), a timeout or a refused connection";
        // None is sent unless set: OpenAI's reasoning models reject any but their default.
        temperature: Option<f64> = default => judge_temperature: Option<f64> [] set,
            "Sampling temperature sent to the judge [default: none sent, the server's own]";
        // Room for a reasoning model's thinking before a one-sentence rationale.
        max_tokens: u32 = "4096" => judge_max_tokens: Option<u32> [] set,
            "Output-token cap of each judge request; 0 sends none";
        // OpenAI's and Azure OpenAI's newer models reject `max_tokens`.
        token_field: Option<TokenField> = default
            => judge_token_field: Option<TokenField> [] set,
            "How the token cap is sent: max_tokens or max_completion_tokens \
             [default: max_completion_tokens to OpenAI and Azure OpenAI, else max_tokens]";
        max_reply_kib: u64 = "256" => judge_max_reply_kib: Option<u64> [] set,
            "A judge reply longer than this (KiB) is not read: that metric is an error";
        max_prompt_kib: u64 = "64" => judge_max_prompt_kib: Option<u64> [] set,
            "Prompts are cut to fit this many KiB, the reason saying what was cut";
        max_rationale_chars: usize = "2000"
            => judge_max_rationale_chars: Option<usize> [] set,
            "A judge's rationale is cut to this many characters in reports";
    }
    config_only {
        prices: BTreeMap<String, Price>,
            "Prices per model (by the model name sent), for a cost figure";
    }
}

impl JudgeConfig {
    /// Whether a judge is asked for at all (a URL, a model or a dry run).
    pub fn is_set(&self) -> bool {
        self.url.is_some() || self.model.is_some() || self.dry_run
    }
}

fn default_of<T: std::str::FromStr>(text: &str) -> T
where
    T::Err: std::fmt::Display,
{
    // The defaults are constants checked by a unit test.
    text.parse()
        .unwrap_or_else(|e| panic!("built-in judge default `{text}`: {e}"))
}

/// A flag given replaces the config's value.
fn set<C, F: Into<C>>(config: &mut C, flag: Option<F>) -> Result<(), JudgeFlagError> {
    if let Some(v) = flag {
        *config = v.into();
    }
    Ok(())
}

/// A switch given turns the config's on; absent, it keeps the config's.
fn switch_on(config: &mut bool, flag: bool) -> Result<(), JudgeFlagError> {
    *config |= flag;
    Ok(())
}

/// `K=V` headers are added to the config's, a flag's winning.
fn insert_headers(
    config: &mut BTreeMap<String, String>,
    flag: Vec<String>,
) -> Result<(), JudgeFlagError> {
    for h in flag {
        let (k, v) = h
            .split_once('=')
            .ok_or_else(|| JudgeFlagError(format!("--judge-header `{h}` is not K=V")))?;
        config.insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        judge: JudgeFlags,
    }

    #[test]
    fn defaults_parse() {
        let c = JudgeConfig::default();
        assert_eq!((c.concurrency, c.retries, c.max_tokens), (4, 3, 4096));
        assert_eq!(c.timeout_secs, 60.0);
        assert_eq!(
            (c.max_reply_kib, c.max_prompt_kib, c.max_rationale_chars),
            (256, 64, 2000)
        );
        assert!(!c.is_set());
    }

    #[test]
    fn flags_override_the_config_and_keep_the_rest() {
        let mut c = JudgeConfig {
            model: Some("from-config".into()),
            retries: 7,
            dry_run: true,
            headers: [("a".to_string(), "1".to_string())].into(),
            ..JudgeConfig::default()
        };
        let cli = Cli::try_parse_from([
            "t",
            "--judge-model",
            "m",
            "--judge-timeout",
            "5",
            "--judge-header",
            "b = 2",
        ])
        .unwrap();
        cli.judge.apply(&mut c).unwrap();
        assert_eq!(c.model.as_deref(), Some("m"));
        assert_eq!(c.timeout_secs, 5.0);
        assert_eq!(c.retries, 7);
        assert!(c.dry_run);
        assert_eq!(c.headers.get("a").map(String::as_str), Some("1"));
        assert_eq!(c.headers.get("b").map(String::as_str), Some("2"));
    }

    #[test]
    fn a_header_without_equals_is_named() {
        let cli = Cli::try_parse_from(["t", "--judge-header", "nokey"]).unwrap();
        let e = cli.judge.apply(&mut JudgeConfig::default()).unwrap_err();
        assert_eq!(e.to_string(), "--judge-header `nokey` is not K=V");
    }
}
