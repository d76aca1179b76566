//! The library run in process by another program (the Python module), which
//! passes its own arguments as typed values and builds the run with
//! [`crate::run::Setup`]. What it does not pass is taken from the
//! environment as the command line takes it (`TOOLSCORE_THRESHOLD`,
//! `TOOLSCORE_SCOPE`, `TOOLSCORE_CONFIG`, the judge's, ...: the flags'
//! own `env` declarations), so a run in process scores as `toolscore
//! replay` does under the same environment. A finished run is saved to the
//! run store as `replay` saves it.

use std::path::{Path, PathBuf};

use clap::{CommandFactory, FromArgMatches, Parser};

use super::{FailOn, InputArgs, ScoringArgs};
use crate::config::Config;
use crate::report::Report;
use crate::run::replay::ReadOptions;
use crate::run::{Scoring, Setup};

pub use super::check_paths;
pub use super::history::{label, save_run, RunFacts, RunStart};

/// `replay`'s scoring and input flags, read from the environment alone.
#[derive(Parser)]
#[command(name = "toolscore", no_binary_name = true)]
struct Flags {
    #[command(flatten)]
    scoring: ScoringArgs,
    #[command(flatten)]
    input: InputArgs,
}

/// An embedded run's settings: the program's arguments, and the
/// environment's values for the rest.
pub struct Environment {
    scoring: ScoringArgs,
    input: InputArgs,
}

impl Environment {
    /// Reads the environment (a bad value is an error naming its flag).
    /// `metrics` are specs as `--metric` takes them (the first is the
    /// headline; none: the default, as with no `--metric`); `config` is the
    /// config file, which replaces `TOOLSCORE_CONFIG`'s.
    pub fn read(metrics: Vec<String>, config: Option<PathBuf>) -> anyhow::Result<Environment> {
        let matches = Flags::command()
            .mut_arg("paths", |a| a.required(false))
            .try_get_matches_from(std::iter::empty::<String>())
            .map_err(|e| anyhow::anyhow!("{}", e.render().to_string().trim_end()))?;
        let Flags {
            mut scoring,
            mut input,
        } = Flags::from_arg_matches(&matches)?;
        scoring.metrics = metrics;
        if config.is_some() {
            input.config.config = config;
        }
        Ok(Environment { scoring, input })
    }

    /// The config file, if one is given or set in the environment.
    pub fn config_path(&self) -> Option<&Path> {
        self.input.config.config.as_deref()
    }

    /// The config (the default one without a file).
    pub fn config(&self) -> anyhow::Result<Config> {
        self.input.config.load()
    }

    /// The run's typed scoring options, as `replay` builds them.
    pub fn scoring(&self, config: &Config) -> anyhow::Result<Scoring> {
        self.scoring.scoring(config, self.input.extractor(config)?)
    }

    /// The run of `inspect`: nothing is scored.
    pub fn listing(&self, config: &Config) -> anyhow::Result<Setup> {
        super::commands::listing(config, self.input.extractor(config)?, &None)
    }

    /// How inputs are read (`TOOLSCORE_THREADS`, the inflated-size cap,
    /// the hold window).
    pub fn read_options(&self) -> ReadOptions {
        self.input.read_options()
    }

    /// The scoring settings a saved run records, as `replay` records them.
    pub fn saved_settings(&self, report: &Report) -> serde_json::Value {
        super::commands::run_settings(&self.scoring, FailOn::Threshold, 0.0, report)
    }
}
