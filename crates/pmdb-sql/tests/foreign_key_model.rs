//! A model-based concurrency test of foreign keys: two to four sessions run random
//! transactions (autocommit statements and blocks at random isolation levels, committed
//! or rolled back) that insert and delete parents, insert children referencing random
//! parents, and move children from one parent to another, over a small domain so that
//! they collide often. One child table's key has NO ACTION, the other's CASCADE. A
//! statement may fail only as PostgreSQL lets it (23503, 23505, or 40001 / 40P01 as any
//! writer may), and at the end no child is without its parent: a child written while
//! its parent was being deleted, with neither waiting for the other, would be one.

use std::time::Duration;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::Int64Type;
use pmdb_engine::{Db, DbOptions};
use pmdb_sql::{Output, SqlEngine, SqlError, SqlSession};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const PARENTS: i32 = 5;

async fn one(s: &mut SqlSession, sql: &str) -> Result<Output, SqlError> {
    s.execute(sql)
        .await
        .map(|mut o| o.pop().expect("a statement"))
}

fn allowed(e: &SqlError) -> bool {
    matches!(e.sqlstate(), "23503" | "23505" | "40001" | "40P01")
}

/// One random transaction.
async fn transaction(
    s: &mut SqlSession,
    rng: &mut SmallRng,
    next_id: &mut i32,
) -> Result<(), SqlError> {
    let block = rng.random_bool(0.6);
    if block {
        let level = ["READ COMMITTED", "READ COMMITTED", "REPEATABLE READ"][rng.random_range(0..3)];
        one(s, &format!("BEGIN ISOLATION LEVEL {level}")).await?;
    }
    let statements = if block { rng.random_range(1..=3) } else { 1 };
    for _ in 0..statements {
        let (p, q) = (rng.random_range(0..PARENTS), rng.random_range(0..PARENTS));
        let child = ["kept", "followed"][rng.random_range(0..2)];
        *next_id += 1;
        let sql = match rng.random_range(0..6) {
            0 => format!("INSERT INTO parents VALUES ({p})"),
            1 => format!("DELETE FROM parents WHERE id = {p}"),
            2 | 3 => format!("INSERT INTO {child} VALUES ({}, {p})", *next_id),
            4 => format!("UPDATE {child} SET parent = {q} WHERE parent = {p}"),
            _ => format!("DELETE FROM {child} WHERE parent = {p}"),
        };
        match one(s, &sql).await {
            Ok(_) => {}
            Err(e) if allowed(&e) => {
                if block {
                    one(s, "ROLLBACK").await?;
                }
                return Ok(());
            }
            Err(e) => return Err(SqlError::Query(format!("{sql}: {e} ({})", e.sqlstate()))),
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(0..2))).await;
    }
    if !block {
        return Ok(());
    }
    if rng.random_bool(0.2) {
        one(s, "ROLLBACK").await?;
        return Ok(());
    }
    match one(s, "COMMIT").await {
        Ok(_) => Ok(()),
        Err(e) if allowed(&e) => Ok(()),
        Err(e) => Err(SqlError::Query(format!("COMMIT: {e} ({})", e.sqlstate()))),
    }
}

fn run_model(seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let engine = SqlEngine::open(Db::open(dir.path(), DbOptions::small()).unwrap()).unwrap();
    engine
        .execute(
            "CREATE TABLE parents (id INT PRIMARY KEY);
             CREATE TABLE kept (id INT PRIMARY KEY, parent INT REFERENCES parents);
             CREATE TABLE followed (id INT PRIMARY KEY,
                                    parent INT REFERENCES parents ON DELETE CASCADE);
             INSERT INTO parents VALUES (0), (1), (2), (3), (4)",
        )
        .unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut rng = SmallRng::seed_from_u64(seed);
    let sessions = rng.random_range(2..=4);
    let tasks: Vec<_> = (0..sessions)
        .map(|me| {
            let mut s = engine.session();
            let mut rng = SmallRng::seed_from_u64(seed * 31 + me as u64);
            let mut next_id = me * 100_000;
            rt.spawn(async move {
                for _ in 0..40 {
                    transaction(&mut s, &mut rng, &mut next_id).await?;
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
    for child in ["kept", "followed"] {
        let out = engine
            .execute(&format!(
                "SELECT count(*) FROM {child} c WHERE c.parent IS NOT NULL \
                 AND NOT EXISTS (SELECT 1 FROM parents p WHERE p.id = c.parent)"
            ))
            .unwrap()
            .pop()
            .unwrap();
        let Output::Rows { batches, .. } = out else {
            panic!("rows expected")
        };
        let orphans = batches[0].column(0).as_primitive::<Int64Type>().value(0);
        assert_eq!(
            orphans, 0,
            "seed {seed}: rows of {child} without their parent"
        );
        assert!(!batches[0].column(0).is_null(0));
    }
}

#[test]
fn random_writers_never_leave_a_child_without_its_parent() {
    for seed in 1..=6 {
        run_model(seed);
    }
}
