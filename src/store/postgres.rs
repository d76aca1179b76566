//! The PostgreSQL store: the same tables as SQLite's, shared by many
//! writers (each run is one transaction; migrations take an advisory lock so
//! two processes opening a new database at once do not both apply them).

use std::collections::HashMap;

use postgres::types::ToSql;
use std::time::Duration;

use postgres::{Client, Config, NoTls, Row};

use super::parts;
use super::schema::{LATEST, META_TABLE, MIGRATIONS};
use super::{Appended, CaseInRun, Filter, Parts, Prior, RunMeta, RunSummary, StoreError};
use crate::report::baseline::Entry;

/// The advisory lock that serialises migrations (any fixed number).
const MIGRATION_LOCK: i64 = 0x746f_6f6c_7363;

/// Rows sent per INSERT when a run is saved.
const BATCH: usize = 5_000;

pub(super) struct Postgres {
    client: Client,
    name: String,
}

const RUN_COLUMNS: &str = "seq, id, started_ms, ended_ms, finished, version, command, git_commit, \
    git_branch, fixture, fixture_hash, config_hash, settings, inputs, traces, spans, rejected, \
    cases, passed, failed, mean_score, exit_code";

/// The longest opening a connection may take, all of it (TCP connect,
/// startup, authentication), unless the URL sets `connect_timeout`
/// (seconds, as libpq reads it): a server that accepts and never answers
/// must not hang a command.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The limit of [`connect`] for `config`: its `connect_timeout`, else
/// [`CONNECT_TIMEOUT`].
fn connect_limit(config: &Config) -> Duration {
    config
        .get_connect_timeout()
        .copied()
        .unwrap_or(CONNECT_TIMEOUT)
}

/// The server(s) `config` names, to say which one failed.
fn hosts(config: &Config) -> String {
    use postgres::config::Host;
    let ports = config.get_ports();
    let names: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let host = match h {
                Host::Tcp(name) => name.clone(),
                Host::Unix(path) => path.display().to_string(),
            };
            // One port for every host, or one each; 5432 when none is set.
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            format!("{host}:{port}")
        })
        .collect();
    if names.is_empty() {
        "the default server".to_string()
    } else {
        names.join(", ")
    }
}

/// Connects within [`connect_limit`]. The client's own `connect_timeout`
/// bounds only the TCP connect, so the whole connect runs on a thread of
/// its own and is given up at the limit; that thread ends when the server
/// closes the connection, or with the process.
fn connect(url: &str, name: &str) -> Result<Client, StoreError> {
    let mut config: Config = url.parse().map_err(|source| StoreError::Postgres {
        store: name.to_string(),
        source,
    })?;
    let limit = connect_limit(&config);
    config.connect_timeout(limit);
    let failed = |reason: String, transient: bool| StoreError::Connect {
        store: name.to_string(),
        host: hosts(&config),
        reason,
        transient,
    };
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let attempt = config.clone();
    std::thread::Builder::new()
        .name("store-connect".into())
        .spawn(move || {
            // The receiver may have given up already.
            let _ = tx.send(attempt.connect(NoTls));
        })
        .map_err(|e| failed(format!("cannot start a thread: {e}"), false))?;
    match rx.recv_timeout(limit) {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(source)) => {
            let reason = source.to_string();
            let transient = StoreError::Postgres {
                store: String::new(),
                source,
            }
            .is_transient();
            Err(failed(reason, transient))
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(failed(
            format!(
                "no answer within {} s (set connect_timeout=SECONDS in the URL to wait longer)",
                limit.as_secs_f64()
            ),
            true,
        )),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            Err(failed("the connecting thread failed".into(), false))
        }
    }
}

impl Postgres {
    pub(super) fn open(url: &str, name: &str) -> Result<Postgres, StoreError> {
        let client = connect(url, name)?;
        let mut store = Postgres {
            client,
            name: name.to_string(),
        };
        store.migrate()?;
        Ok(store)
    }

    fn err(&self) -> impl Fn(postgres::Error) -> StoreError + '_ {
        move |source| StoreError::Postgres {
            store: self.name.clone(),
            source,
        }
    }

    fn migrate(&mut self) -> Result<(), StoreError> {
        let name = self.name.clone();
        let err = |source| StoreError::Postgres {
            store: name.clone(),
            source,
        };
        let mut tx = self.client.transaction().map_err(err)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .map_err(err)?;
        tx.batch_execute(META_TABLE).map_err(err)?;
        let v: Option<String> = tx
            .query_opt(
                "SELECT value FROM toolscore_meta WHERE key = 'schema_version'",
                &[],
            )
            .map_err(err)?
            .map(|r| r.get(0));
        let found: i64 = match v {
            None => 0,
            Some(v) => v.trim().parse().map_err(|_| StoreError::Corrupt {
                store: name.clone(),
                reason: format!("schema_version `{v}` is not a number"),
            })?,
        };
        if found > LATEST {
            return Err(StoreError::Newer {
                store: name.clone(),
                found,
                known: LATEST,
            });
        }
        for m in MIGRATIONS.iter().filter(|m| m.version > found) {
            tx.batch_execute(m.postgres).map_err(err)?;
        }
        if found < LATEST {
            tx.execute(
                "INSERT INTO toolscore_meta (key, value) VALUES ('schema_version', $1) \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                &[&LATEST.to_string()],
            )
            .map_err(err)?;
        }
        tx.commit().map_err(err)
    }

    pub(super) fn save(
        &mut self,
        meta: &RunMeta,
        report: &Parts,
        results: &[Entry],
    ) -> Result<(), StoreError> {
        let name = self.name.clone();
        let err = |source| StoreError::Postgres {
            store: name.clone(),
            source,
        };
        let mut tx = self.client.transaction().map_err(err)?;
        let n = |v: u64| v.min(i64::MAX as u64) as i64;
        let command = serde_json::to_string(&meta.command).unwrap_or_default();
        let settings = meta.settings.to_string();
        let counts = [
            n(meta.inputs),
            n(meta.traces),
            n(meta.spans),
            n(meta.rejected),
            n(meta.cases),
            n(meta.passed),
            n(meta.failed),
        ];
        let params: [&(dyn ToSql + Sync); 21] = [
            &meta.id,
            &meta.started_ms,
            &meta.ended_ms,
            &meta.finished,
            &meta.version,
            &command,
            &meta.git_commit,
            &meta.git_branch,
            &meta.fixture,
            &meta.fixture_hash,
            &meta.config_hash,
            &settings,
            &counts[0],
            &counts[1],
            &counts[2],
            &counts[3],
            &counts[4],
            &counts[5],
            &counts[6],
            &meta.mean_score,
            &meta.exit_code,
        ];
        let seq: i64 = tx
            .query_one(
                "INSERT INTO runs (id, started_ms, ended_ms, finished, version, command, \
                 git_commit, git_branch, fixture, fixture_hash, config_hash, settings, inputs, \
                 traces, spans, rejected, cases, passed, failed, mean_score, exit_code) VALUES \
                 ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
                 $18, $19, $20, $21) RETURNING seq",
                &params,
            )
            .map_err(err)?
            .try_get(0)
            .map_err(err)?;
        for (k, v) in &meta.labels {
            tx.execute(
                "INSERT INTO labels (run_seq, key, value) VALUES ($1, $2, $3)",
                &[&seq, k, v],
            )
            .map_err(err)?;
        }
        let ns: Vec<i64> = (0..report.bodies.len() as i64).collect();
        tx.execute(
            "INSERT INTO report_parts (run_seq, n, codec, body) \
             SELECT $1, n, $2, body FROM unnest($3::bigint[], $4::bytea[]) AS p (n, body)",
            &[&seq, &parts::CODEC, &ns, &report.bodies],
        )
        .map_err(err)?;
        insert_results(&mut tx, seq, 0, results).map_err(err)?;
        tx.commit().map_err(err)
    }

    pub(super) fn seq_of(&mut self, id: &str) -> Result<Option<i64>, StoreError> {
        let row = self
            .client
            .query_opt("SELECT seq FROM runs WHERE id = $1", &[&id])
            .map_err(self.err())?;
        row.map(|r| r.try_get(0)).transpose().map_err(self.err())
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
        let name = self.name.clone();
        let err = |source| StoreError::Postgres {
            store: name.clone(),
            source,
        };
        let mut tx = self.client.transaction().map_err(err)?;
        let n = |v: u64| v.min(i64::MAX as u64) as i64;
        let counts = [
            n(meta.inputs),
            n(meta.traces),
            n(meta.spans),
            n(meta.cases),
            n(meta.passed),
            n(meta.failed),
        ];
        let updated = tx
            .execute(
                "UPDATE runs SET ended_ms = $2, finished = $3, inputs = $4, traces = $5, \
                 spans = $6, cases = $7, passed = $8, failed = $9, mean_score = $10, \
                 exit_code = $11 WHERE seq = $1",
                &[
                    &at.seq,
                    &meta.ended_ms,
                    &meta.finished,
                    &counts[0],
                    &counts[1],
                    &counts[2],
                    &counts[3],
                    &counts[4],
                    &counts[5],
                    &meta.mean_score,
                    &meta.exit_code,
                ],
            )
            .map_err(err)?;
        if updated == 0 {
            return Err(StoreError::NoRun {
                store: name.clone(),
                run: meta.id.clone(),
                hint: " any more: it was deleted while it was being written".into(),
            });
        }
        if at.resumed && !jsonl.is_empty() {
            let there = tx
                .query_opt(
                    "SELECT 1 FROM rows WHERE run_seq = $1 AND n = $2",
                    &[&at.seq, &at.first_row],
                )
                .map_err(err)?;
            if there.is_some() {
                tx.commit().map_err(err)?;
                let added = jsonl.split(|b| *b == b'\n').filter(|l| !l.is_empty());
                return Ok(added.count() as i64);
            }
        }
        // One statement per table (a batch is small; `save` chunks a whole run).
        let lines: Vec<String> = jsonl
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .collect();
        let added = lines.len() as i64;
        let ns: Vec<i64> = (at.first_row..at.first_row + added).collect();
        tx.execute(
            "INSERT INTO rows (run_seq, n, line) SELECT $1, * FROM unnest($2::bigint[], $3::text[])",
            &[&at.seq, &ns, &lines],
        )
        .map_err(err)?;
        insert_results(&mut tx, at.seq, at.first_result, results).map_err(err)?;
        // After the insert: a result may be superseded in its own batch.
        if !at.superseded.is_empty() {
            tx.execute(
                "DELETE FROM results WHERE run_seq = $1 AND n = ANY($2::bigint[])",
                &[&at.seq, &at.superseded],
            )
            .map_err(err)?;
        }
        tx.commit().map_err(err)?;
        Ok(added)
    }

    /// The newest case result of run `seq` for `case` on `target`.
    pub(super) fn last_result(
        &mut self,
        seq: i64,
        case: &str,
        target: &str,
    ) -> Result<Option<Prior>, StoreError> {
        let row = self
            .client
            .query_opt(
                "SELECT n, pass, score FROM results WHERE run_seq = $1 AND case_id = $2 \
                 AND target = $3 ORDER BY n DESC LIMIT 1",
                &[&seq, &case, &target],
            )
            .map_err(self.err())?;
        row.map(|r| {
            Ok(Prior {
                n: r.try_get(0)?,
                pass: r.try_get(1)?,
                score: r.try_get(2)?,
            })
        })
        .transpose()
        .map_err(self.err())
    }

    /// The labels of runs `seqs`, in one query.
    fn labels_of(
        &mut self,
        seqs: &[i64],
    ) -> Result<HashMap<i64, Vec<(String, String)>>, StoreError> {
        let mut out: HashMap<i64, Vec<(String, String)>> = HashMap::new();
        if seqs.is_empty() {
            return Ok(out);
        }
        let rows = self
            .client
            .query(
                "SELECT run_seq, key, value FROM labels WHERE run_seq = ANY($1) \
                 ORDER BY run_seq, key",
                &[&seqs],
            )
            .map_err(self.err())?;
        for r in &rows {
            let (seq, k, v): (i64, String, String) = three(r).map_err(self.err())?;
            out.entry(seq).or_default().push((k, v));
        }
        Ok(out)
    }

    fn runs_where(
        &mut self,
        where_sql: &str,
        args: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<(i64, RunMeta)>, StoreError> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs {where_sql}");
        let rows = self.client.query(&sql, args).map_err(self.err())?;
        let mut out: Vec<(i64, RunMeta)> = rows
            .iter()
            .map(|r| Ok((r.try_get(0)?, meta_of(r)?)))
            .collect::<Result<_, postgres::Error>>()
            .map_err(self.err())?;
        let seqs: Vec<i64> = out.iter().map(|(s, _)| *s).collect();
        let mut labels = self.labels_of(&seqs)?;
        for (seq, meta) in &mut out {
            meta.labels = labels.remove(seq).unwrap_or_default();
        }
        Ok(out)
    }

    pub(super) fn list(&mut self, filter: &Filter) -> Result<Vec<RunSummary>, StoreError> {
        let mut sql = String::from("WHERE ($1::text IS NULL OR fixture = $1)");
        let mut args: Vec<&(dyn ToSql + Sync)> = vec![&filter.fixture];
        for (k, v) in &filter.labels {
            args.push(k);
            args.push(v);
            sql += &format!(
                " AND EXISTS (SELECT 1 FROM labels l WHERE l.run_seq = runs.seq \
                 AND l.key = ${} AND l.value = ${})",
                args.len() - 1,
                args.len()
            );
        }
        let limit = filter.limit.min(i64::MAX as usize) as i64;
        args.push(&limit);
        sql += &format!(" ORDER BY seq DESC LIMIT ${}", args.len());
        Ok(self
            .runs_where(&sql, &args)?
            .into_iter()
            .map(|(_, m)| m.summary())
            .collect())
    }

    pub(super) fn nth_last(
        &mut self,
        n: usize,
        fixture: Option<&str>,
        branch: Option<&str>,
    ) -> Result<Option<RunMeta>, StoreError> {
        let n = n as i64;
        Ok(self
            .runs_where(
                "WHERE finished AND ($1::text IS NULL OR fixture = $1) \
                 AND ($2::text IS NULL OR git_branch = $2) ORDER BY seq DESC LIMIT 1 OFFSET $3",
                &[&fixture, &branch, &n],
            )?
            .into_iter()
            .next()
            .map(|(_, m)| m))
    }

    pub(super) fn by_id(&mut self, id: &str) -> Result<Option<RunMeta>, StoreError> {
        Ok(self
            .runs_where("WHERE id = $1", &[&id])?
            .into_iter()
            .next()
            .map(|(_, m)| m))
    }

    pub(super) fn report(&mut self, id: &str) -> Result<Vec<u8>, StoreError> {
        let parts = self
            .client
            .query(
                "SELECT n, codec, body FROM report_parts \
                 WHERE run_seq = (SELECT seq FROM runs WHERE id = $1) ORDER BY n",
                &[&id],
            )
            .map_err(self.err())?;
        let mut out = Vec::new();
        for r in &parts {
            let (n, codec, body): (i64, &str, &[u8]) = three(r).map_err(self.err())?;
            parts::inflate_into(&self.name, id, n, codec, body, &mut out)?;
        }
        if !parts.is_empty() {
            return Ok(out);
        }
        // A run saved before report parts, or appended a batch at a time.
        let rows = self
            .client
            .query(
                "SELECT line FROM rows WHERE run_seq = (SELECT seq FROM runs WHERE id = $1) \
                 ORDER BY n",
                &[&id],
            )
            .map_err(self.err())?;
        for r in rows {
            let line: &str = r.try_get(0).map_err(self.err())?;
            out.extend_from_slice(line.as_bytes());
            out.push(b'\n');
        }
        Ok(out)
    }

    pub(super) fn history(
        &mut self,
        fixture: Option<&str>,
        last: usize,
    ) -> Result<(Vec<RunSummary>, Vec<CaseInRun>), StoreError> {
        let last = last.min(i64::MAX as usize) as i64;
        let mut runs = self.runs_where(
            "WHERE finished AND ($1::text IS NULL OR fixture = $1) ORDER BY seq DESC LIMIT $2",
            &[&fixture, &last],
        )?;
        runs.reverse();
        let seqs: Vec<i64> = runs.iter().map(|(s, _)| *s).collect();
        let index: std::collections::HashMap<i64, usize> =
            seqs.iter().enumerate().map(|(i, s)| (*s, i)).collect();
        let rows = self
            .client
            .query(
                "SELECT run_seq, case_id, pass, score FROM results WHERE run_seq = ANY($1) \
                 ORDER BY run_seq, n",
                &[&seqs],
            )
            .map_err(self.err())?;
        let mut cases = Vec::with_capacity(rows.len());
        for r in &rows {
            let seq: i64 = r.try_get(0).map_err(self.err())?;
            let Some(&run) = index.get(&seq) else {
                continue;
            };
            cases.push(CaseInRun {
                run,
                case: r.try_get(1).map_err(self.err())?,
                pass: r.try_get(2).map_err(self.err())?,
                score: r.try_get(3).map_err(self.err())?,
            });
        }
        Ok((runs.into_iter().map(|(_, m)| m.summary()).collect(), cases))
    }

    pub(super) fn prune(
        &mut self,
        keep: Option<usize>,
        before_ms: Option<i64>,
    ) -> Result<usize, StoreError> {
        let name = self.name.clone();
        let err = |source| StoreError::Postgres {
            store: name.clone(),
            source,
        };
        let mut tx = self.client.transaction().map_err(err)?;
        let keep = keep.map(|k| k.min(i64::MAX as usize) as i64);
        let doomed = "SELECT seq FROM runs WHERE \
            ($1::bigint IS NULL OR seq NOT IN (SELECT seq FROM runs ORDER BY seq DESC LIMIT $1)) \
            AND ($2::bigint IS NULL OR started_ms < $2)";
        for table in ["labels", "rows", "report_parts", "results"] {
            tx.execute(
                &format!("DELETE FROM {table} WHERE run_seq IN ({doomed})"),
                &[&keep, &before_ms],
            )
            .map_err(err)?;
        }
        let n = tx
            .execute(
                &format!("DELETE FROM runs WHERE seq IN ({doomed})"),
                &[&keep, &before_ms],
            )
            .map_err(err)?;
        tx.commit().map_err(err)?;
        Ok(n as usize)
    }
}

/// A row's first three columns.
fn three<'a, A, B, C>(r: &'a Row) -> Result<(A, B, C), postgres::Error>
where
    A: postgres::types::FromSql<'a>,
    B: postgres::types::FromSql<'a>,
    C: postgres::types::FromSql<'a>,
{
    Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?))
}

fn meta_of(r: &Row) -> Result<RunMeta, postgres::Error> {
    let command: String = r.try_get(6)?;
    let settings: String = r.try_get(12)?;
    let n = |i| r.try_get::<_, i64>(i).map(|v| v.max(0) as u64);
    Ok(RunMeta {
        id: r.try_get(1)?,
        started_ms: r.try_get(2)?,
        ended_ms: r.try_get(3)?,
        finished: r.try_get(4)?,
        version: r.try_get(5)?,
        command: serde_json::from_str(&command).unwrap_or_default(),
        git_commit: r.try_get(7)?,
        git_branch: r.try_get(8)?,
        fixture: r.try_get(9)?,
        fixture_hash: r.try_get(10)?,
        config_hash: r.try_get(11)?,
        settings: serde_json::from_str(&settings).unwrap_or(serde_json::Value::Null),
        labels: Vec::new(),
        inputs: n(13)?,
        traces: n(14)?,
        spans: n(15)?,
        rejected: n(16)?,
        cases: n(17)?,
        passed: n(18)?,
        failed: n(19)?,
        mean_score: r.try_get(20)?,
        exit_code: r.try_get(21)?,
    })
}

/// Inserts a run's case results, numbered from `first` (`save` and
/// `append`): many rows per statement, as one round trip per row would
/// cost more than the run.
fn insert_results(
    tx: &mut postgres::Transaction<'_>,
    seq: i64,
    first: i64,
    results: &[Entry],
) -> Result<(), postgres::Error> {
    for (i, chunk) in results.chunks(BATCH).enumerate() {
        let from = first + (i * BATCH) as i64;
        let ns: Vec<i64> = (from..from + chunk.len() as i64).collect();
        let cases: Vec<&str> = chunk.iter().map(|e| e.case.as_str()).collect();
        let targets: Vec<&str> = chunk.iter().map(|e| e.target.as_str()).collect();
        let passes: Vec<bool> = chunk.iter().map(|e| e.pass).collect();
        let scores: Vec<Option<f64>> = chunk.iter().map(|e| e.score).collect();
        tx.execute(
            "INSERT INTO results (run_seq, n, case_id, target, pass, score) SELECT $1, * \
             FROM unnest($2::bigint[], $3::text[], $4::text[], $5::boolean[], $6::float8[])",
            &[&seq, &ns, &cases, &targets, &passes, &scores],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connect_limit_is_ten_seconds_unless_the_url_sets_one() {
        let config = |url: &str| url.parse::<Config>().unwrap();
        let plain = config("postgres://u@db.example:6000/runs");
        assert_eq!(connect_limit(&plain), Duration::from_secs(10));
        assert_eq!(hosts(&plain), "db.example:6000");
        let set = config("postgres://u@db.example/runs?connect_timeout=3");
        assert_eq!(connect_limit(&set), Duration::from_secs(3));
        assert_eq!(hosts(&set), "db.example:5432");
    }
}
