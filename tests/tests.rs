//! The one integration-test binary (see Cargo.toml, `autotests = false`).

mod util;

mod cli;
mod corpus;
mod explain;
mod extraction;
mod presets;
mod serve;
