//! The one integration-test binary (see Cargo.toml, `autotests = false`).

mod util;

mod behaviour;
mod cli;
mod corpus;
mod extraction;
mod formats;
mod presets;
mod serve;
