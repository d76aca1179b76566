//! A projection as extraction rules would ask for one: resource attributes
//! and 10 span keys. Shared by the decode and serve benches.

use toolscore::ingest::projection::{AttrsOf, KeyFilter};

pub struct TenKeys;

pub const KEPT: [&str; 10] = [
    "gen_ai.operation.name",
    "gen_ai.tool.name",
    "gen_ai.tool.call.id",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.agent.name",
    "gen_ai.conversation.id",
    "session.id",
    "gen_ai.request.model",
    "gen_ai.system",
];

impl KeyFilter for TenKeys {
    fn keep(&self, at: AttrsOf, key: &str) -> bool {
        at == AttrsOf::Resource || KEPT.contains(&key)
    }
}
