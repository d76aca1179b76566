//! The one integration-test binary (see Cargo.toml, `autotests = false`).

mod util;

mod cli;
mod corpus;
mod explain;
mod extraction;
mod formats;
mod presets;
mod serve;
