//! TPC-H at scale factor 0.01: the eight tables loaded into pmdb, the 22 queries run
//! through pmdb's SQL and through DataFusion over the same data held in memory, and
//! every answer compared.

use pmdb_bench::tpch::{self, verify};
use pmdb_engine::{Db, DbOptions};
use pmdb_sql::{Output, SqlEngine};

const SF: f64 = 0.01;

#[test]
fn all_22_queries_match_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let sql = SqlEngine::open(Db::open(dir.path(), DbOptions::default()).unwrap()).unwrap();
    let data = tpch::generate_all(SF).unwrap();
    for ((name, ddl), (_, batches)) in tpch::TABLES.iter().zip(&data) {
        sql.execute(ddl).unwrap();
        let loaded = sql.load(name, batches.iter().cloned().map(Ok)).unwrap();
        let generated: usize = batches.iter().map(|b| b.num_rows()).sum();
        assert_eq!(loaded, generated as u64, "{name}");
    }
    let reference = tpch::memory::context(&data).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut rows_seen = 0;
    for q in 1..=22 {
        let text = tpch::query(q, SF);
        let expected = runtime
            .block_on(async { reference.sql(&text).await?.collect().await })
            .unwrap_or_else(|e| panic!("Q{q} on the reference: {e}"));
        let expected = verify::rows_of(&expected).unwrap();
        let got = match sql
            .execute(&text)
            .unwrap_or_else(|e| panic!("Q{q}: {e}"))
            .pop()
        {
            Some(Output::Rows { batches, .. }) => verify::rows_of(&batches).unwrap(),
            other => panic!("Q{q}: {other:?}"),
        };
        if let Err(e) = verify::compare(&got, &expected) {
            panic!("Q{q} ({}): {e}", tpch::query_name(q));
        }
        rows_seen += got.len();
    }
    assert!(rows_seen > 100, "the 22 answers hold only {rows_seen} rows");
}
