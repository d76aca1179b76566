//! The store's schema, as numbered migrations. A store records the version
//! it was brought to (`toolscore_meta.schema_version`); opening it applies
//! the migrations it lacks, each in its own transaction, and a version above
//! [`LATEST`] (a newer toolscore wrote it) is refused.
//!
//! Runs are numbered in the order they were saved (`seq`): "newest" and
//! `last~N` follow that order. Each table below `runs` is keyed by the run's
//! `seq` and a row number.

/// One step of the schema, in each backend's dialect (the same tables,
/// columns and keys).
pub struct Migration {
    pub version: i64,
    pub sqlite: &'static str,
    pub postgres: &'static str,
}

/// The table that holds the schema version (created before any migration).
pub const META_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS toolscore_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)";

/// Every migration, in order.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        sqlite: "
CREATE TABLE runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    started_ms INTEGER NOT NULL,
    ended_ms INTEGER,
    finished INTEGER NOT NULL,
    version TEXT NOT NULL,
    command TEXT NOT NULL,
    git_commit TEXT,
    git_branch TEXT,
    fixture TEXT,
    fixture_hash TEXT,
    config_hash TEXT,
    settings TEXT NOT NULL,
    inputs INTEGER NOT NULL,
    traces INTEGER NOT NULL,
    spans INTEGER NOT NULL,
    rejected INTEGER NOT NULL,
    cases INTEGER NOT NULL,
    passed INTEGER NOT NULL,
    failed INTEGER NOT NULL,
    mean_score REAL,
    exit_code INTEGER
);
CREATE INDEX runs_fixture ON runs (fixture, seq);
CREATE TABLE labels (
    run_seq INTEGER NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (run_seq, key)
);
CREATE INDEX labels_key ON labels (key, value);
CREATE TABLE rows (
    run_seq INTEGER NOT NULL,
    n INTEGER NOT NULL,
    line TEXT NOT NULL,
    PRIMARY KEY (run_seq, n)
);
CREATE TABLE results (
    run_seq INTEGER NOT NULL,
    n INTEGER NOT NULL,
    case_id TEXT NOT NULL,
    target TEXT NOT NULL,
    pass INTEGER NOT NULL,
    score REAL,
    PRIMARY KEY (run_seq, n)
);
",
        postgres: "
CREATE TABLE runs (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    started_ms BIGINT NOT NULL,
    ended_ms BIGINT,
    finished BOOLEAN NOT NULL,
    version TEXT NOT NULL,
    command TEXT NOT NULL,
    git_commit TEXT,
    git_branch TEXT,
    fixture TEXT,
    fixture_hash TEXT,
    config_hash TEXT,
    settings TEXT NOT NULL,
    inputs BIGINT NOT NULL,
    traces BIGINT NOT NULL,
    spans BIGINT NOT NULL,
    rejected BIGINT NOT NULL,
    cases BIGINT NOT NULL,
    passed BIGINT NOT NULL,
    failed BIGINT NOT NULL,
    mean_score DOUBLE PRECISION,
    exit_code BIGINT
);
CREATE INDEX runs_fixture ON runs (fixture, seq);
CREATE TABLE labels (
    run_seq BIGINT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (run_seq, key)
);
CREATE INDEX labels_key ON labels (key, value);
CREATE TABLE rows (
    run_seq BIGINT NOT NULL,
    n BIGINT NOT NULL,
    line TEXT NOT NULL,
    PRIMARY KEY (run_seq, n)
);
CREATE TABLE results (
    run_seq BIGINT NOT NULL,
    n BIGINT NOT NULL,
    case_id TEXT NOT NULL,
    target TEXT NOT NULL,
    pass BOOLEAN NOT NULL,
    score DOUBLE PRECISION,
    PRIMARY KEY (run_seq, n)
);
",
    },
    // A run's report as compressed parts instead of a row per line (one
    // SQLite row per line made saving cost a quarter of the run); runs saved
    // before keep their `rows`, and `rows` stays for runs appended a batch at
    // a time. SQLite's `results` is clustered on its key (no second b-tree
    // to write per result); PostgreSQL's is unchanged.
    Migration {
        version: 2,
        sqlite: "
CREATE TABLE report_parts (
    run_seq INTEGER NOT NULL,
    n INTEGER NOT NULL,
    codec TEXT NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (run_seq, n)
);
CREATE TABLE results_clustered (
    run_seq INTEGER NOT NULL,
    n INTEGER NOT NULL,
    case_id TEXT NOT NULL,
    target TEXT NOT NULL,
    pass INTEGER NOT NULL,
    score REAL,
    PRIMARY KEY (run_seq, n)
) WITHOUT ROWID;
INSERT INTO results_clustered SELECT run_seq, n, case_id, target, pass, score FROM results;
DROP TABLE results;
ALTER TABLE results_clustered RENAME TO results;
",
        postgres: "
CREATE TABLE report_parts (
    run_seq BIGINT NOT NULL,
    n BIGINT NOT NULL,
    codec TEXT NOT NULL,
    body BYTEA NOT NULL,
    PRIMARY KEY (run_seq, n)
);
",
    },
];

/// The version this toolscore writes.
pub const LATEST: i64 = 2;
