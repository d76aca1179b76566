//! The one integration-test binary (see Cargo.toml, `autotests = false`).

mod util;

mod cli;
mod corpus;
mod extraction;
mod presets;
mod serve;
mod treewalks;
