//! The OLTP fast path answers exactly as the general (DataFusion) path does: each
//! statement it serves is run next to a twin the fast path does not take (the same
//! statement with `AND true`, or a key written `k + 0`), on two copies of the same table,
//! and results, command tags, errors and the tables afterwards must all agree.

use datafusion::arrow::util::pretty::pretty_format_batches;
use pmdb_engine::{Db, DbOptions};
use pmdb_sql::{Output, SqlEngine};

fn show(out: Result<Vec<Output>, pmdb_sql::SqlError>) -> String {
    match out {
        Ok(mut outs) => match outs.pop().unwrap() {
            Output::Rows { schema, batches }
            | Output::Returned {
                schema, batches, ..
            } => format!(
                "{:?}\n{}",
                schema
                    .fields()
                    .iter()
                    .map(|f| (f.name().clone(), f.data_type().clone(), f.is_nullable()))
                    .collect::<Vec<_>>(),
                pretty_format_batches(&batches).unwrap()
            ),
            Output::Command(tag) => tag.to_string(),
            copy @ Output::CopyOut { .. } => format!("{copy:?}"),
        },
        Err(e) => format!("error {}", e.sqlstate()),
    }
}

#[test]
fn fast_and_general_paths_agree() {
    let dir = tempfile::tempdir().unwrap();
    let sql = SqlEngine::open(Db::open(dir.path(), DbOptions::small()).unwrap()).unwrap();
    for t in ["fast", "slow"] {
        sql.execute(&format!(
            "CREATE TABLE {t} (id INT PRIMARY KEY, small SMALLINT, n BIGINT NOT NULL,
                              name VARCHAR(8), price DECIMAL(8,2), ok BOOLEAN, at TIMESTAMP);
             CREATE INDEX {t}_by_name ON {t} (name);
             INSERT INTO {t} VALUES (1, 1, 10, 'a', 1.50, true, NULL), (2, 32767, 20, 'b', NULL, false, NULL);
             CREATE TABLE {t}_district (w INT, d INT, v BIGINT, PRIMARY KEY (w, d));
             INSERT INTO {t}_district VALUES (1, 1, 100), (1, 2, 200), (2, 1, 300)"
        ))
        .unwrap();
    }
    // (fast form, general twin) with {t} for the table.
    let pairs = [
        (
            "SELECT * FROM {t} WHERE id = 1",
            "SELECT * FROM {t} WHERE id = 1 AND true",
        ),
        (
            "SELECT n, name FROM {t} WHERE id = 2",
            "SELECT n, name FROM {t} WHERE id = 2 AND true",
        ),
        (
            "SELECT n, id, n FROM {t} WHERE id = 2",
            "SELECT n, id, n FROM {t} WHERE id = 2 AND true",
        ),
        (
            "SELECT n FROM {t} WHERE id = 99",
            "SELECT n FROM {t} WHERE id = 99 AND true",
        ),
        (
            "UPDATE {t} SET n = n + 5 WHERE id = 1",
            "UPDATE {t} SET n = n + 5 WHERE id = 1 AND true",
        ),
        (
            "UPDATE {t} SET n = n - -3, name = 'z' WHERE id = 2",
            "UPDATE {t} SET n = n - -3, name = 'z' WHERE id = 2 AND true",
        ),
        (
            "UPDATE {t} SET small = small + 1 WHERE id = 2",
            "UPDATE {t} SET small = small + 1 WHERE id = 2 AND true",
        ),
        (
            "UPDATE {t} SET price = 2.5, ok = false WHERE id = 1",
            "UPDATE {t} SET price = 2.5, ok = false WHERE id = 1 AND true",
        ),
        // Decimal sums: exact at the column's scale, NULL stays NULL, overflow fails.
        (
            "UPDATE {t} SET price = price + 1.25 WHERE id = 1",
            "UPDATE {t} SET price = price + 1.25 WHERE id = 1 AND true",
        ),
        (
            "UPDATE {t} SET price = price - 0.5, n = n + 1 WHERE id = 1",
            "UPDATE {t} SET price = price - 0.5, n = n + 1 WHERE id = 1 AND true",
        ),
        (
            "UPDATE {t} SET price = price + 3 WHERE id = 2",
            "UPDATE {t} SET price = price + 3 WHERE id = 2 AND true",
        ),
        (
            "UPDATE {t} SET price = price + 0.125 WHERE id = 1",
            "UPDATE {t} SET price = price + 0.125 WHERE id = 1 AND true",
        ),
        (
            "UPDATE {t} SET price = price + 999999.99 WHERE id = 1",
            "UPDATE {t} SET price = price + 999999.99 WHERE id = 1 AND true",
        ),
        // A sum of values (TPC-C's `d_next_o_id = $1 + 1`).
        (
            "UPDATE {t}_district SET v = 41 + 1 WHERE w = 1 AND d = 1",
            "UPDATE {t}_district SET v = 41 + 1 WHERE w = 1 AND d = 1 AND true",
        ),
        (
            "UPDATE {t} SET small = 32767 + 1 WHERE id = 1",
            "UPDATE {t} SET small = 32767 + 1 WHERE id = 1 AND true",
        ),
        (
            "UPDATE {t} SET price = 1.5 - 0.25 WHERE id = 2",
            "UPDATE {t} SET price = 1.5 - 0.25 WHERE id = 2 AND true",
        ),
        (
            "UPDATE {t} SET name = 'toolongname' WHERE id = 1",
            "UPDATE {t} SET name = 'toolongname' WHERE id = 1 AND true",
        ),
        (
            "UPDATE {t} SET n = NULL WHERE id = 1",
            "UPDATE {t} SET n = NULL WHERE id = 1 AND true",
        ),
        (
            "UPDATE {t} SET n = 1 WHERE id = 77",
            "UPDATE {t} SET n = 1 WHERE id = 77 AND true",
        ),
        (
            "INSERT INTO {t} VALUES (3, -1, 30, 'c', -0.25, NULL, NULL)",
            "INSERT INTO {t} VALUES (3 * 1, -1, 30, 'c', -0.25, NULL, NULL)",
        ),
        (
            "INSERT INTO {t} (id, n) VALUES (4, 40), (5, 50)",
            "INSERT INTO {t} (id, n) VALUES (4 * 1, 40), (5, 50)",
        ),
        (
            "INSERT INTO {t} VALUES (1, 1, 1, 'dup', 0, true, NULL)",
            "INSERT INTO {t} VALUES (1 * 1, 1, 1, 'dup', 0, true, NULL)",
        ),
        (
            "INSERT INTO {t} (id) VALUES (6)",
            "INSERT INTO {t} (id) VALUES (6 * 1)",
        ),
        (
            "DELETE FROM {t} WHERE id = 4",
            "DELETE FROM {t} WHERE id = 4 AND true",
        ),
        (
            "DELETE FROM {t} WHERE id = 44",
            "DELETE FROM {t} WHERE id = 44 AND true",
        ),
        (
            "SELECT id FROM {t} WHERE name = 'z'",
            "SELECT id FROM {t} WHERE name = 'z' AND true",
        ),
        // A key of two columns, named in either order; locking reads.
        (
            "SELECT * FROM {t}_district WHERE d = 2 AND w = 1",
            "SELECT * FROM {t}_district WHERE d = 2 AND w = 1 AND true",
        ),
        (
            "UPDATE {t}_district SET v = v + 1 WHERE w = 1 AND d = 2",
            "UPDATE {t}_district SET v = v + 1 WHERE w = 1 AND d = 2 AND true",
        ),
        (
            "SELECT v, d FROM {t}_district WHERE w = 1 AND d = 2 FOR UPDATE",
            "SELECT v, d FROM {t}_district WHERE w = 1 AND d = 2 AND true FOR UPDATE",
        ),
        (
            "SELECT * FROM {t} WHERE id = 2 FOR NO KEY UPDATE NOWAIT",
            "SELECT * FROM {t} WHERE id = 2 AND true FOR NO KEY UPDATE NOWAIT",
        ),
        (
            "SELECT v FROM {t}_district WHERE w = 3 AND d = 1 FOR SHARE",
            "SELECT v FROM {t}_district WHERE w = 3 AND d = 1 AND true FOR SHARE",
        ),
        (
            "DELETE FROM {t}_district WHERE d = 1 AND w = 2",
            "DELETE FROM {t}_district WHERE d = 1 AND w = 2 AND true",
        ),
        // IN lists of whole keys, in any order, with duplicates.
        (
            "SELECT * FROM {t} WHERE id IN (2, 1, 99, 2)",
            "SELECT * FROM {t} WHERE id IN (2, 1, 99, 2) AND true",
        ),
        (
            "SELECT v, w FROM {t}_district WHERE (d, w) IN ((2, 1), (1, 2), (9, 9), (2, 1)) FOR UPDATE",
            "SELECT v, w FROM {t}_district WHERE (d, w) IN ((2, 1), (1, 2), (9, 9), (2, 1)) AND true FOR UPDATE",
        ),
        // UPDATE and DELETE of an IN list of keys: each row once, all or none.
        (
            "UPDATE {t}_district SET v = v + 7 WHERE (d, w) IN ((2, 1), (9, 9), (2, 1), (1, 1))",
            "UPDATE {t}_district SET v = v + 7 WHERE (d, w) IN ((2, 1), (9, 9), (2, 1), (1, 1)) AND true",
        ),
        (
            "UPDATE {t} SET small = small + 1 WHERE id IN (1, 2)",
            "UPDATE {t} SET small = small + 1 WHERE id IN (1, 2) AND true",
        ),
        (
            "UPDATE {t} SET n = n - 1, price = price + 0.5 WHERE id IN (1, 2, 3)",
            "UPDATE {t} SET n = n - 1, price = price + 0.5 WHERE id IN (1, 2, 3) AND true",
        ),
        (
            "UPDATE {t} SET name = 'in' WHERE id IN (3, 1, 77)",
            "UPDATE {t} SET name = 'in' WHERE id IN (3, 1, 77) AND true",
        ),
        (
            "DELETE FROM {t} WHERE id IN (5, 99, 5)",
            "DELETE FROM {t} WHERE id IN (5, 99, 5) AND true",
        ),
        (
            "SELECT * FROM {t} WHERE id IN (1, NULL)",
            "SELECT * FROM {t} WHERE id IN (1, NULL) AND true",
        ),
        (
            "SELECT * FROM {t}_district WHERE w = 1 AND w = 1",
            "SELECT * FROM {t}_district WHERE w = 1 AND w = 1 AND true",
        ),
        // IN lists of key prefixes: every row under each.
        (
            "SELECT * FROM {t}_district WHERE w IN (2, 1, 7) ORDER BY w, d",
            "SELECT * FROM {t}_district WHERE w IN (2, 1, 7) AND true ORDER BY w, d",
        ),
        (
            "UPDATE {t}_district SET v = v + 5 WHERE w IN (1, 9)",
            "UPDATE {t}_district SET v = v + 5 WHERE w IN (1, 9) AND true",
        ),
        (
            "DELETE FROM {t}_district WHERE w IN (2)",
            "DELETE FROM {t}_district WHERE w IN (2) AND true",
        ),
    ];
    for (fast, general) in pairs {
        let a = show(sql.execute(&fast.replace("{t}", "fast")));
        let b = show(sql.execute(&general.replace("{t}", "slow")));
        assert_eq!(a, b, "{fast}");
    }
    let all = |t: &str| show(sql.execute(&format!("SELECT * FROM {t} ORDER BY id")));
    assert_eq!(all("fast"), all("slow"));
    let all = |t: &str| show(sql.execute(&format!("SELECT * FROM {t}_district ORDER BY w, d")));
    assert_eq!(all("fast"), all("slow"));
    // In a transaction block the fast path reads the block's own writes.
    sql.execute("BEGIN; UPDATE fast SET n = 1000 WHERE id = 1")
        .unwrap();
    assert!(show(sql.execute("SELECT n FROM fast WHERE id = 1")).contains("1000"));
    sql.execute("ROLLBACK").unwrap();
    assert!(!show(sql.execute("SELECT n FROM fast WHERE id = 1")).contains("1000"));
}
