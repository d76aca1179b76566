//! The one integration-test binary (see Cargo.toml, `autotests = false`).

mod util;

mod behaviour;
mod cli;
mod corpus;
mod explain;
mod extraction;
mod formats;
mod fuzz_corpora;
mod judge;
mod junit;
mod presets;
mod progress;
mod properties;
mod serve;
mod treewalks;
