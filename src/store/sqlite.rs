//! The SQLite store: one file, written by any number of processes (a
//! writer waits for another's transaction, up to [`BUSY_WAIT`]).

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};

use super::parts;
use super::schema::{LATEST, META_TABLE, MIGRATIONS};
use super::{Appended, CaseInRun, Filter, Parts, Prior, RunMeta, RunSummary, StoreError};
use crate::report::baseline::Entry;

/// How long a writer waits for another's transaction before it fails.
const BUSY_WAIT: Duration = Duration::from_secs(30);

pub(super) struct Sqlite {
    conn: Connection,
    name: String,
}

const RUN_COLUMNS: &str = "seq, id, started_ms, ended_ms, finished, version, command, git_commit, \
    git_branch, fixture, fixture_hash, config_hash, settings, inputs, traces, spans, rejected, \
    cases, passed, failed, mean_score, exit_code";

impl Sqlite {
    pub(super) fn open(path: &Path, create: bool) -> Result<Sqlite, StoreError> {
        let name = path.display().to_string();
        if !create && !path.exists() {
            return Err(StoreError::Missing(name));
        }
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if create {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let err = |source| StoreError::Sqlite {
            store: name.clone(),
            source,
        };
        let conn = Connection::open_with_flags(path, flags).map_err(err)?;
        conn.busy_timeout(BUSY_WAIT).map_err(err)?;
        let mut store = Sqlite { conn, name };
        store.migrate()?;
        Ok(store)
    }

    fn err(&self) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        move |source| StoreError::Sqlite {
            store: self.name.clone(),
            source,
        }
    }

    fn version(&self, conn: &Connection) -> Result<i64, StoreError> {
        let v: Option<String> = conn
            .query_row(
                "SELECT value FROM toolscore_meta WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(self.err())?;
        match v {
            None => Ok(0),
            Some(v) => v.trim().parse().map_err(|_| StoreError::Corrupt {
                store: self.name.clone(),
                reason: format!("schema_version `{v}` is not a number"),
            }),
        }
    }

    /// Brings the schema to [`LATEST`]; a newer one is refused untouched.
    fn migrate(&mut self) -> Result<(), StoreError> {
        let err = |source| StoreError::Sqlite {
            store: self.name.clone(),
            source,
        };
        // Only a new store gets the table: a statement that writes would
        // take the write lock on every open.
        let has_meta: i64 = self
            .conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'toolscore_meta'",
                [],
                |r| r.get(0),
            )
            .map_err(err)?;
        if has_meta == 0 {
            self.conn.execute_batch(META_TABLE).map_err(err)?;
        }
        let found = self.version(&self.conn)?;
        self.check_version(found)?;
        if found == LATEST {
            return Ok(());
        }
        // Another process may be migrating too: take the write lock, then
        // read the version again.
        let name = self.name.clone();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        let v: Option<String> = tx
            .query_row(
                "SELECT value FROM toolscore_meta WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(err)?;
        let found: i64 = v.and_then(|v| v.parse().ok()).unwrap_or(0);
        if found > LATEST {
            return Err(StoreError::Newer {
                store: name,
                found,
                known: LATEST,
            });
        }
        for m in MIGRATIONS.iter().filter(|m| m.version > found) {
            tx.execute_batch(m.sqlite).map_err(err)?;
        }
        tx.execute(
            "INSERT INTO toolscore_meta (key, value) VALUES ('schema_version', ?1) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            params![LATEST.to_string()],
        )
        .map_err(err)?;
        tx.commit().map_err(err)
    }

    fn check_version(&self, found: i64) -> Result<(), StoreError> {
        if found > LATEST {
            return Err(StoreError::Newer {
                store: self.name.clone(),
                found,
                known: LATEST,
            });
        }
        Ok(())
    }

    pub(super) fn save(
        &mut self,
        meta: &RunMeta,
        report: &Parts,
        results: &[Entry],
    ) -> Result<(), StoreError> {
        let err = |source| StoreError::Sqlite {
            store: self.name.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        tx.execute(
            "INSERT INTO runs (id, started_ms, ended_ms, finished, version, command, git_commit, \
             git_branch, fixture, fixture_hash, config_hash, settings, inputs, traces, spans, \
             rejected, cases, passed, failed, mean_score, exit_code) VALUES (?1, ?2, ?3, ?4, ?5, \
             ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)",
            params![
                meta.id,
                meta.started_ms,
                meta.ended_ms,
                meta.finished,
                meta.version,
                serde_json::to_string(&meta.command).unwrap_or_default(),
                meta.git_commit,
                meta.git_branch,
                meta.fixture,
                meta.fixture_hash,
                meta.config_hash,
                meta.settings.to_string(),
                meta.inputs as i64,
                meta.traces as i64,
                meta.spans as i64,
                meta.rejected as i64,
                meta.cases as i64,
                meta.passed as i64,
                meta.failed as i64,
                meta.mean_score,
                meta.exit_code,
            ],
        )
        .map_err(err)?;
        let seq = tx.last_insert_rowid();
        {
            let mut st = tx
                .prepare("INSERT INTO labels (run_seq, key, value) VALUES (?1, ?2, ?3)")
                .map_err(err)?;
            for (k, v) in &meta.labels {
                st.execute(params![seq, k, v]).map_err(err)?;
            }
            let mut st = tx
                .prepare(
                    "INSERT INTO report_parts (run_seq, n, codec, body) VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(err)?;
            for (n, body) in report.bodies.iter().enumerate() {
                st.execute(params![seq, n as i64, parts::CODEC, body])
                    .map_err(err)?;
            }
            insert_results(&tx, seq, 0, results).map_err(err)?;
        }
        tx.commit().map_err(err)
    }

    pub(super) fn seq_of(&self, id: &str) -> Result<Option<i64>, StoreError> {
        self.conn
            .query_row("SELECT seq FROM runs WHERE id = ?1", params![id], |r| {
                r.get(0)
            })
            .optional()
            .map_err(self.err())
    }

    /// One transaction: the run's counts (and end) as `meta` has them, then
    /// its new rows and case results. Returns how many rows were added.
    pub(super) fn append(
        &mut self,
        at: &Appended,
        jsonl: &[u8],
        results: &[Entry],
        meta: &RunMeta,
    ) -> Result<i64, StoreError> {
        let err = |source| StoreError::Sqlite {
            store: self.name.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        let updated = tx
            .execute(
                "UPDATE runs SET ended_ms = ?2, finished = ?3, inputs = ?4, traces = ?5, \
                 spans = ?6, cases = ?7, passed = ?8, failed = ?9, mean_score = ?10, \
                 exit_code = ?11 WHERE seq = ?1",
                params![
                    at.seq,
                    meta.ended_ms,
                    meta.finished,
                    meta.inputs as i64,
                    meta.traces as i64,
                    meta.spans as i64,
                    meta.cases as i64,
                    meta.passed as i64,
                    meta.failed as i64,
                    meta.mean_score,
                    meta.exit_code,
                ],
            )
            .map_err(err)?;
        if updated == 0 {
            return Err(StoreError::NoRun {
                store: self.name.clone(),
                run: meta.id.clone(),
                hint: " any more: it was deleted while it was being written".into(),
            });
        }
        if at.resumed && !jsonl.is_empty() {
            let there = tx
                .query_row(
                    "SELECT 1 FROM rows WHERE run_seq = ?1 AND n = ?2",
                    params![at.seq, at.first_row],
                    |_| Ok(()),
                )
                .optional()
                .map_err(err)?;
            if there.is_some() {
                tx.commit().map_err(err)?;
                return Ok(lines(jsonl).count() as i64);
            }
        }
        let mut added = 0;
        {
            let mut st = tx
                .prepare("INSERT INTO rows (run_seq, n, line) VALUES (?1, ?2, ?3)")
                .map_err(err)?;
            for line in lines(jsonl) {
                st.execute(params![
                    at.seq,
                    at.first_row + added,
                    String::from_utf8_lossy(line)
                ])
                .map_err(err)?;
                added += 1;
            }
            insert_results(&tx, at.seq, at.first_result, results).map_err(err)?;
            // After the insert: a result may be superseded in its own batch.
            let mut st = tx
                .prepare("DELETE FROM results WHERE run_seq = ?1 AND n = ?2")
                .map_err(err)?;
            for n in &at.superseded {
                st.execute(params![at.seq, n]).map_err(err)?;
            }
        }
        tx.commit().map_err(err)?;
        Ok(added)
    }

    /// The newest case result of run `seq` for `case` on `target`.
    pub(super) fn last_result(
        &self,
        seq: i64,
        case: &str,
        target: &str,
    ) -> Result<Option<Prior>, StoreError> {
        self.conn
            .query_row(
                "SELECT n, pass, score FROM results WHERE run_seq = ?1 AND case_id = ?2 \
                 AND target = ?3 ORDER BY n DESC LIMIT 1",
                params![seq, case, target],
                |r| {
                    Ok(Prior {
                        n: r.get(0)?,
                        pass: r.get(1)?,
                        score: r.get(2)?,
                    })
                },
            )
            .optional()
            .map_err(self.err())
    }

    /// The labels of runs `seqs`, in one query.
    fn labels_of(&self, seqs: &[i64]) -> Result<HashMap<i64, Vec<(String, String)>>, StoreError> {
        let mut out: HashMap<i64, Vec<(String, String)>> = HashMap::new();
        if seqs.is_empty() {
            return Ok(out);
        }
        let list = serde_json::to_string(seqs).unwrap_or_default();
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT run_seq, key, value FROM labels \
                 WHERE run_seq IN (SELECT value FROM json_each(?1)) ORDER BY run_seq, key",
            )
            .map_err(self.err())?;
        let mut rows = st.query(params![list]).map_err(self.err())?;
        while let Some(r) = rows.next().map_err(self.err())? {
            let seq: i64 = r.get(0).map_err(self.err())?;
            let kv = (r.get(1).map_err(self.err())?, r.get(2).map_err(self.err())?);
            out.entry(seq).or_default().push(kv);
        }
        Ok(out)
    }

    /// Runs as `where_sql` selects them (with `args`), newest first.
    fn runs_where(
        &self,
        where_sql: &str,
        args: &[&dyn rusqlite::ToSql],
    ) -> Result<Vec<(i64, RunMeta)>, StoreError> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs {where_sql}");
        let mut st = self.conn.prepare(&sql).map_err(self.err())?;
        let rows = st
            .query_map(args, |r| {
                let command: String = r.get(6)?;
                let settings: String = r.get(12)?;
                let n = |i| r.get::<_, i64>(i).map(|v| v.max(0) as u64);
                Ok((
                    r.get(0)?,
                    RunMeta {
                        id: r.get(1)?,
                        started_ms: r.get(2)?,
                        ended_ms: r.get(3)?,
                        finished: r.get(4)?,
                        version: r.get(5)?,
                        command: serde_json::from_str(&command).unwrap_or_default(),
                        git_commit: r.get(7)?,
                        git_branch: r.get(8)?,
                        fixture: r.get(9)?,
                        fixture_hash: r.get(10)?,
                        config_hash: r.get(11)?,
                        settings: serde_json::from_str(&settings)
                            .unwrap_or(serde_json::Value::Null),
                        labels: Vec::new(),
                        inputs: n(13)?,
                        traces: n(14)?,
                        spans: n(15)?,
                        rejected: n(16)?,
                        cases: n(17)?,
                        passed: n(18)?,
                        failed: n(19)?,
                        mean_score: r.get(20)?,
                        exit_code: r.get(21)?,
                    },
                ))
            })
            .map_err(self.err())?;
        let mut out: Vec<(i64, RunMeta)> = rows.collect::<Result<_, _>>().map_err(self.err())?;
        let seqs: Vec<i64> = out.iter().map(|(s, _)| *s).collect();
        let mut labels = self.labels_of(&seqs)?;
        for (seq, meta) in &mut out {
            meta.labels = labels.remove(seq).unwrap_or_default();
        }
        Ok(out)
    }

    pub(super) fn list(&self, filter: &Filter) -> Result<Vec<RunSummary>, StoreError> {
        let mut sql = String::from("WHERE (?1 IS NULL OR fixture = ?1)");
        let mut args: Vec<&dyn rusqlite::ToSql> = vec![&filter.fixture];
        for (k, v) in &filter.labels {
            args.push(k);
            args.push(v);
            sql += &format!(
                " AND EXISTS (SELECT 1 FROM labels l WHERE l.run_seq = runs.seq \
                 AND l.key = ?{} AND l.value = ?{})",
                args.len() - 1,
                args.len()
            );
        }
        let limit = filter.limit.min(i64::MAX as usize) as i64;
        args.push(&limit);
        sql += &format!(" ORDER BY seq DESC LIMIT ?{}", args.len());
        Ok(self
            .runs_where(&sql, &args)?
            .into_iter()
            .map(|(_, m)| m.summary())
            .collect())
    }

    pub(super) fn nth_last(
        &self,
        n: usize,
        fixture: Option<&str>,
        branch: Option<&str>,
    ) -> Result<Option<RunMeta>, StoreError> {
        let n = n as i64;
        Ok(self
            .runs_where(
                "WHERE finished = 1 AND (?1 IS NULL OR fixture = ?1) \
                 AND (?2 IS NULL OR git_branch = ?2) ORDER BY seq DESC LIMIT 1 OFFSET ?3",
                &[&fixture, &branch, &n],
            )?
            .into_iter()
            .next()
            .map(|(_, m)| m))
    }

    pub(super) fn by_id(&self, id: &str) -> Result<Option<RunMeta>, StoreError> {
        Ok(self
            .runs_where("WHERE id = ?1", &[&id])?
            .into_iter()
            .next()
            .map(|(_, m)| m))
    }

    pub(super) fn report(&self, id: &str) -> Result<Vec<u8>, StoreError> {
        let seq: Option<i64> = self
            .conn
            .query_row("SELECT seq FROM runs WHERE id = ?1", params![id], |r| {
                r.get(0)
            })
            .optional()
            .map_err(self.err())?;
        let Some(seq) = seq else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        let mut st = self
            .conn
            .prepare("SELECT n, codec, body FROM report_parts WHERE run_seq = ?1 ORDER BY n")
            .map_err(self.err())?;
        let mut rows = st.query(params![seq]).map_err(self.err())?;
        let mut parts = 0;
        while let Some(r) = rows.next().map_err(self.err())? {
            let n: i64 = r.get(0).map_err(self.err())?;
            let codec: String = r.get(1).map_err(self.err())?;
            let body: Vec<u8> = r.get(2).map_err(self.err())?;
            parts::inflate_into(&self.name, id, n, &codec, &body, &mut out)?;
            parts += 1;
        }
        if parts > 0 {
            return Ok(out);
        }
        // A run saved before report parts, or appended a batch at a time.
        let mut st = self
            .conn
            .prepare("SELECT line FROM rows WHERE run_seq = ?1 ORDER BY n")
            .map_err(self.err())?;
        let mut rows = st.query(params![seq]).map_err(self.err())?;
        while let Some(r) = rows.next().map_err(self.err())? {
            let line: String = r.get(0).map_err(self.err())?;
            out.extend_from_slice(line.as_bytes());
            out.push(b'\n');
        }
        Ok(out)
    }

    pub(super) fn history(
        &self,
        fixture: Option<&str>,
        last: usize,
    ) -> Result<(Vec<RunSummary>, Vec<CaseInRun>), StoreError> {
        let last = last.min(i64::MAX as usize) as i64;
        let mut runs = self.runs_where(
            "WHERE finished = 1 AND (?1 IS NULL OR fixture = ?1) ORDER BY seq DESC LIMIT ?2",
            &[&fixture, &last],
        )?;
        runs.reverse();
        let Some(first) = runs.first().map(|(s, _)| *s) else {
            return Ok((Vec::new(), Vec::new()));
        };
        let index: std::collections::HashMap<i64, usize> =
            runs.iter().enumerate().map(|(i, (s, _))| (*s, i)).collect();
        let mut st = self
            .conn
            .prepare(
                "SELECT run_seq, case_id, pass, score FROM results WHERE run_seq >= ?1 \
                 ORDER BY run_seq, n",
            )
            .map_err(self.err())?;
        let mut rows = st.query(params![first]).map_err(self.err())?;
        let mut cases = Vec::new();
        while let Some(r) = rows.next().map_err(self.err())? {
            let seq: i64 = r.get(0).map_err(self.err())?;
            let Some(&run) = index.get(&seq) else {
                continue;
            };
            cases.push(CaseInRun {
                run,
                case: r.get(1).map_err(self.err())?,
                pass: r.get(2).map_err(self.err())?,
                score: r.get(3).map_err(self.err())?,
            });
        }
        Ok((runs.into_iter().map(|(_, m)| m.summary()).collect(), cases))
    }

    pub(super) fn prune(
        &mut self,
        keep: Option<usize>,
        before_ms: Option<i64>,
    ) -> Result<usize, StoreError> {
        let err = |source| StoreError::Sqlite {
            store: self.name.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        let keep = keep.map(|k| k.min(i64::MAX as usize) as i64);
        let doomed = "SELECT seq FROM runs WHERE \
            (?1 IS NULL OR seq NOT IN (SELECT seq FROM runs ORDER BY seq DESC LIMIT ?1)) \
            AND (?2 IS NULL OR started_ms < ?2)";
        for table in ["labels", "rows", "report_parts", "results"] {
            tx.execute(
                &format!("DELETE FROM {table} WHERE run_seq IN ({doomed})"),
                params![keep, before_ms],
            )
            .map_err(err)?;
        }
        let n = tx
            .execute(
                &format!("DELETE FROM runs WHERE seq IN ({doomed})"),
                params![keep, before_ms],
            )
            .map_err(err)?;
        tx.commit().map_err(err)?;
        Ok(n)
    }
}

/// Inserts a run's case results, numbered from `first` (`save` and
/// `append`).
fn insert_results(
    tx: &rusqlite::Transaction<'_>,
    seq: i64,
    first: i64,
    results: &[Entry],
) -> rusqlite::Result<()> {
    let mut st = tx.prepare_cached(
        "INSERT INTO results (run_seq, n, case_id, target, pass, score) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for (n, e) in (first..).zip(results) {
        st.execute(params![seq, n, e.case, e.target, e.pass, e.score])?;
    }
    Ok(())
}

/// The lines of a JSONL text, without their newlines.
fn lines(jsonl: &[u8]) -> impl Iterator<Item = &[u8]> {
    jsonl.split(|b| *b == b'\n').filter(|l| !l.is_empty())
}
