//! A model-based concurrency test of uniqueness: two to four sessions run random
//! transactions (autocommit statements and blocks at random isolation levels, committed
//! or rolled back) that insert, move and delete values of a unique column and keys of a
//! primary key, over a small domain so that they collide often. A statement may fail
//! only as PostgreSQL lets it (23505, or 40001 / 40P01 as any writer may), and the
//! outcome is checked: no two rows share a unique value, the unique index holds one
//! entry per row, and for every key the committed inserts less the committed deletes is
//! whether it is there — an insert that silently wrote over another's row would leave
//! one more.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{Int32Type, Int64Type};
use pmdb_engine::{Db, DbOptions};
use pmdb_sql::{CommandTag, Output, SqlEngine, SqlError, SqlSession};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const VALUES: i32 = 6;
const KEYS: i32 = 6;

/// The first column of a query's rows as integers.
fn column(out: Output) -> Vec<i64> {
    let Output::Rows { batches, .. } = out else {
        panic!("rows expected")
    };
    let mut v = Vec::new();
    for b in &batches {
        let c = b.column(0);
        for i in 0..b.num_rows() {
            if !c.is_null(i) {
                v.push(match c.data_type() {
                    datafusion::arrow::datatypes::DataType::Int32 => {
                        i64::from(c.as_primitive::<Int32Type>().value(i))
                    }
                    _ => c.as_primitive::<Int64Type>().value(i),
                });
            }
        }
    }
    v
}

async fn one(s: &mut SqlSession, sql: &str) -> Result<Output, SqlError> {
    s.execute(sql)
        .await
        .map(|mut o| o.pop().expect("a statement"))
}

/// Rows a command reports.
fn count(out: &Output) -> u64 {
    match out {
        Output::Command(t) => (0..=2)
            .find(|&n| *t == CommandTag::insert(n) || *t == CommandTag::delete(n))
            .expect("an INSERT or DELETE tag"),
        _ => panic!("a command expected"),
    }
}

/// Keys inserted and deleted by a committed transaction.
#[derive(Default)]
struct Effect {
    keys: BTreeMap<i32, i64>,
}

fn allowed(e: &SqlError) -> bool {
    matches!(e.sqlstate(), "23505" | "40001" | "40P01")
}

/// One random transaction; its effect if it committed.
async fn transaction(
    s: &mut SqlSession,
    rng: &mut SmallRng,
    next_id: &mut i32,
) -> Result<Option<Effect>, SqlError> {
    let block = rng.random_bool(0.6);
    if block {
        let level = ["READ COMMITTED", "READ COMMITTED", "REPEATABLE READ"][rng.random_range(0..3)];
        one(s, &format!("BEGIN ISOLATION LEVEL {level}")).await?;
    }
    let mut effect = Effect::default();
    let statements = if block { rng.random_range(1..=3) } else { 1 };
    for _ in 0..statements {
        let (v, w, k) = (
            rng.random_range(0..VALUES),
            rng.random_range(0..VALUES),
            rng.random_range(0..KEYS),
        );
        let sql = match rng.random_range(0..5) {
            0 => {
                *next_id += 1;
                format!("INSERT INTO slots VALUES ({}, {v})", *next_id)
            }
            1 => format!("UPDATE slots SET v = {w} WHERE v = {v}"),
            2 => format!("DELETE FROM slots WHERE v = {v}"),
            3 => format!("INSERT INTO keyed VALUES ({k})"),
            _ => format!("DELETE FROM keyed WHERE k = {k}"),
        };
        match one(s, &sql).await {
            Ok(out) => {
                if sql.contains("keyed") {
                    let n = count(&out) as i64;
                    let d = if sql.starts_with("INSERT") { n } else { -n };
                    *effect.keys.entry(k).or_default() += d;
                }
            }
            Err(e) if allowed(&e) => {
                if block {
                    one(s, "ROLLBACK").await?;
                }
                return Ok(None);
            }
            Err(e) => return Err(SqlError::Query(format!("{sql}: {e} ({})", e.sqlstate()))),
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(0..2))).await;
    }
    if !block {
        return Ok(Some(effect));
    }
    if rng.random_bool(0.2) {
        one(s, "ROLLBACK").await?;
        return Ok(None);
    }
    match one(s, "COMMIT").await {
        Ok(Output::Command(t)) if t == CommandTag::of("COMMIT") => Ok(Some(effect)),
        Ok(_) => Ok(None),
        Err(e) if allowed(&e) => Ok(None),
        Err(e) => Err(SqlError::Query(format!("COMMIT: {e} ({})", e.sqlstate()))),
    }
}

fn run_model(seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let engine = SqlEngine::open(Db::open(dir.path(), DbOptions::small()).unwrap()).unwrap();
    engine
        .execute(
            "CREATE TABLE slots (id INT PRIMARY KEY, v INT UNIQUE);
             CREATE TABLE keyed (k INT PRIMARY KEY)",
        )
        .unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut rng = SmallRng::seed_from_u64(seed);
    let sessions = rng.random_range(2..=4);
    let effects = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let tasks: Vec<_> = (0..sessions)
        .map(|me| {
            let mut s = engine.session();
            let mut rng = SmallRng::seed_from_u64(seed * 31 + me as u64);
            let effects = Arc::clone(&effects);
            let mut next_id = me * 100_000;
            rt.spawn(async move {
                for _ in 0..40 {
                    if let Some(e) = transaction(&mut s, &mut rng, &mut next_id).await? {
                        effects.lock().push(e);
                    }
                }
                Ok::<_, SqlError>(())
            })
        })
        .collect();
    for t in tasks {
        rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(120), t)
                .await
                .expect("the sessions finish: no wait is left hanging")
        })
        .unwrap()
        .unwrap_or_else(|e| panic!("seed {seed}: a failure PostgreSQL would not give: {e}"));
    }
    let query = |sql: &str| column(engine.execute(sql).unwrap().pop().unwrap());
    let repeated = query("SELECT v FROM slots WHERE v IS NOT NULL GROUP BY v HAVING count(*) > 1");
    assert!(
        repeated.is_empty(),
        "seed {seed}: values {repeated:?} repeat"
    );
    let slots = engine
        .catalog()
        .table(&pmdb_sql::names::RelName::public("slots"))
        .unwrap();
    let entries = slots.indexes()[0].subtable.scan::<[u8]>(..).count();
    assert_eq!(
        entries as u64,
        query("SELECT count(*) FROM slots")[0] as u64,
        "seed {seed}: one index entry per row"
    );
    let mut net: BTreeMap<i32, i64> = BTreeMap::new();
    for e in effects.lock().iter() {
        for (k, d) in &e.keys {
            *net.entry(*k).or_default() += d;
        }
    }
    let present = query("SELECT k FROM keyed");
    for k in 0..KEYS {
        let expected = i64::from(present.contains(&i64::from(k)));
        assert_eq!(
            net.get(&k).copied().unwrap_or(0),
            expected,
            "seed {seed}: key {k}: committed inserts less deletes"
        );
    }
}

#[test]
fn random_writers_never_repeat_a_unique_value_or_key() {
    for seed in 1..=6 {
        run_model(seed);
    }
}
