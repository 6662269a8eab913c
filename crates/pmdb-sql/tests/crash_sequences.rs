//! Crash simulation of sequences: a script of nextval, serial inserts, setval and
//! sequence DDL crashed at its crash points. After recovery the catalog opens, and no
//! value a caller was given is given again: each sequence's next value lies above every
//! value it handed out before the crash, and a serial insert takes a key no row has.

use std::sync::Arc;

use pmdb_engine::{Db, DbOptions};
use pmdb_pmem::{AckLog, CrashTest, Pool};
use pmdb_sql::{Output, SqlEngine};

fn options() -> DbOptions {
    DbOptions {
        memtable_size: 64 << 10,
        ..DbOptions::small().manual_tiering()
    }
}

/// The one integer a statement returned.
fn value(sql: &SqlEngine, statement: &str) -> Result<i64, String> {
    let out = sql
        .execute(statement)
        .map_err(|e| format!("{statement}: {e}"))?
        .pop();
    let Some(Output::Rows { batches, .. } | Output::Returned { batches, .. }) = out else {
        return Err(format!("{statement}: no rows"));
    };
    let column = batches
        .iter()
        .find(|b| b.num_rows() > 0)
        .ok_or_else(|| format!("{statement}: no row"))?
        .column(0)
        .clone();
    let column =
        datafusion::arrow::compute::cast(&column, &datafusion::arrow::datatypes::DataType::Int64)
            .map_err(|e| e.to_string())?;
    use datafusion::arrow::array::AsArray;
    Ok(column
        .as_primitive::<datafusion::arrow::datatypes::Int64Type>()
        .value(0))
}

/// Which sequence a value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum From {
    Plain,
    Serial,
}

#[test]
fn no_value_is_handed_out_twice_across_a_crash() {
    let report = CrashTest::new(7)
        .options(options().pool)
        .max_points(400)
        .mixes(4)
        .run(
            |pool: &Arc<Pool>, acks: &mut AckLog<(From, i64)>| {
                let db = Db::open_pool(Arc::clone(pool), options()).unwrap();
                let sql = SqlEngine::open(db).unwrap();
                sql.execute(
                    "CREATE SEQUENCE s INCREMENT BY 3 CACHE 5;
                     CREATE TABLE t (id SERIAL PRIMARY KEY, v INT);
                     CREATE TABLE gone (id BIGSERIAL, w TEXT)",
                )
                .unwrap();
                for i in 0..90 {
                    let v = value(&sql, "SELECT nextval('s')").unwrap();
                    acks.ack((From::Plain, v));
                    let id = value(
                        &sql,
                        &format!("INSERT INTO t (v) VALUES ({i}) RETURNING id"),
                    )
                    .unwrap();
                    acks.ack((From::Serial, id));
                    if i % 25 == 24 {
                        let v = value(&sql, &format!("SELECT setval('s', {})", v + 100)).unwrap();
                        acks.ack((From::Plain, v));
                    }
                    if i == 40 {
                        sql.execute("DROP TABLE gone; CREATE SEQUENCE later")
                            .unwrap();
                    }
                }
            },
            |pool: &Arc<Pool>, acked: &[&(From, i64)], _in_flight: Option<&(From, i64)>| {
                let db = Db::open_pool(Arc::clone(pool), options())
                    .map_err(|e| format!("open after crash: {e}"))?;
                let sql = SqlEngine::open(db).map_err(|e| format!("SQL open after crash: {e}"))?;
                if sql
                    .catalog()
                    .sequence(&pmdb_sql::names::RelName::public("s"))
                    .is_none()
                {
                    return if acked.is_empty() {
                        Ok(())
                    } else {
                        Err("sequence s is gone".into())
                    };
                }
                let highest = |from: From| {
                    acked
                        .iter()
                        .filter(|(f, _)| *f == from)
                        .map(|(_, v)| *v)
                        .max()
                };
                let next = value(&sql, "SELECT nextval('s')")?;
                if let Some(h) = highest(From::Plain)
                    && next <= h
                {
                    return Err(format!("nextval gave {next} after {h} was handed out"));
                }
                if sql
                    .catalog()
                    .table(&pmdb_sql::names::RelName::public("t"))
                    .is_some()
                {
                    let id = value(&sql, "INSERT INTO t (v) VALUES (-1) RETURNING id")?;
                    if let Some(h) = highest(From::Serial)
                        && id <= h
                    {
                        return Err(format!("a serial insert took {id} after {h}"));
                    }
                }
                Ok(())
            },
        )
        .unwrap_or_else(|f| panic!("{f}"));
    assert!(report.images >= 400, "{} crash images", report.images);
}
