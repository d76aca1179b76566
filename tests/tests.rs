//! The one integration-test binary (see Cargo.toml, `autotests = false`).

mod util;

mod behaviour;
mod calibrate;
mod cli;
mod conversation;
mod corpus;
mod docs;
mod expectformats;
mod explain;
mod extraction;
mod firstsight;
mod formats;
mod fuzz_corpora;
mod hostile;
mod html;
mod instrumentations;
mod judge;
mod junit;
mod logs;
mod matchers;
mod mcp_servers;
mod presets;
mod progress;
mod properties;
mod record;
mod records;
mod reports;
mod scale;
mod security;
mod serve;
mod store;
mod traps;
mod treewalks;
mod trials;
