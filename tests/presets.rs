//! Compatibility presets against the oracle (shared/oracle, copied to tests/data/oracle).
