//! INSERT … ON CONFLICT as PostgreSQL runs it: DO NOTHING on any unique key or on the
//! one named, DO UPDATE SET with EXCLUDED and a WHERE, RETURNING the rows written, the
//! errors PostgreSQL gives (42P10, 21000, 42601), and under concurrency no lost update:
//! a second upserter of a key waits for the first and then updates its row. A prepared
//! upsert counts the parameters of its DO UPDATE among its own.

mod common;

use common::Fixture;
use datafusion::common::ScalarValue;

const KV: &str = "
    CREATE TABLE kv (k INT PRIMARY KEY, v INT NOT NULL, tag TEXT UNIQUE);
    INSERT INTO kv VALUES (1, 10, 'a'), (2, 20, 'b');
";

#[test]
fn do_nothing_passes_over_conflicting_rows() {
    let f = Fixture::new(KV);
    let mut s = f.session();
    // On any unique key: the primary key's, or the tag's.
    assert_eq!(
        f.tag(
            &mut s,
            "INSERT INTO kv VALUES (1, 0, 'x'), (3, 30, 'b'), (4, 40, 'd') ON CONFLICT DO NOTHING"
        ),
        "INSERT 0 1"
    );
    // A row repeated within the statement is passed over too.
    assert_eq!(
        f.tag(
            &mut s,
            "INSERT INTO kv VALUES (5, 50, 'e'), (5, 51, 'f') ON CONFLICT (k) DO NOTHING"
        ),
        "INSERT 0 1"
    );
    // On a named key only: another key's conflict is still an error.
    assert_eq!(
        f.sqlstate(
            &mut s,
            "INSERT INTO kv VALUES (6, 60, 'a') ON CONFLICT (k) DO NOTHING"
        ),
        "23505"
    );
    f.tag(
        &mut s,
        "INSERT INTO kv VALUES (6, 60, 'a') ON CONFLICT ON CONSTRAINT kv_tag_key DO NOTHING",
    );
    assert_eq!(
        f.rows(&mut s, "SELECT k, v, tag FROM kv ORDER BY k"),
        ["1|10|a", "2|20|b", "4|40|d", "5|50|e"]
    );
}

#[test]
fn do_update_changes_the_stored_row() {
    let f = Fixture::new(KV);
    let mut s = f.session();
    assert_eq!(
        f.rows(
            &mut s,
            "INSERT INTO kv VALUES (1, 5, 'z'), (3, 30, 'c') ON CONFLICT (k) \
             DO UPDATE SET v = kv.v + excluded.v RETURNING k, v, tag"
        ),
        ["1|15|a", "3|30|c"]
    );
    // Bare columns are the stored row's; WHERE false leaves the row (and counts none).
    assert_eq!(
        f.tag(
            &mut s,
            "INSERT INTO kv AS t VALUES (2, 1, 'b') ON CONFLICT (tag) \
             DO UPDATE SET v = v * 10 WHERE t.v > 100"
        ),
        "INSERT 0 0"
    );
    assert_eq!(
        f.tag(
            &mut s,
            "INSERT INTO kv AS t VALUES (9, 1, 'b') ON CONFLICT (tag) \
             DO UPDATE SET v = v * 10 WHERE t.v < 100"
        ),
        "INSERT 0 1"
    );
    assert_eq!(
        f.rows(&mut s, "SELECT k, v FROM kv ORDER BY k"),
        ["1|15", "2|200", "3|30"]
    );
    // In a block, through a prepared-style rerun of the same statement.
    f.tag(&mut s, "BEGIN");
    for _ in 0..3 {
        f.tag(
            &mut s,
            "INSERT INTO kv VALUES (7, 1, NULL) ON CONFLICT (k) DO UPDATE SET v = kv.v + 1",
        );
    }
    f.tag(&mut s, "COMMIT");
    assert_eq!(f.rows(&mut s, "SELECT v FROM kv WHERE k = 7"), ["3"]);
}

#[test]
fn what_postgresql_refuses_is_refused() {
    let f = Fixture::new(KV);
    let mut s = f.session();
    for (bad, state) in [
        // The same row twice in one statement.
        (
            "INSERT INTO kv VALUES (8, 1, 'p'), (8, 2, 'q') ON CONFLICT (k) DO UPDATE SET v = 0",
            "21000",
        ),
        // No unique key of those columns.
        (
            "INSERT INTO kv VALUES (8, 1, 'p') ON CONFLICT (v) DO NOTHING",
            "42P10",
        ),
        (
            "INSERT INTO kv VALUES (8, 1, 'p') ON CONFLICT DO UPDATE SET v = 0",
            "42601",
        ),
        (
            "INSERT INTO kv VALUES (8, 1, 'p') ON CONFLICT ON CONSTRAINT nope DO NOTHING",
            "42704",
        ),
        // The updated row must still pass its constraints.
        (
            "INSERT INTO kv VALUES (1, 1, 'p') ON CONFLICT (k) DO UPDATE SET v = NULL",
            "23502",
        ),
        (
            "INSERT INTO kv VALUES (1, 1, 'p') ON CONFLICT (k) DO UPDATE SET tag = 'b'",
            "23505",
        ),
    ] {
        assert_eq!(f.sqlstate(&mut s, bad), state, "{bad}");
    }
    assert_eq!(
        f.rows(&mut s, "SELECT k, v, tag FROM kv ORDER BY k"),
        ["1|10|a", "2|20|b"]
    );
}

#[test]
fn concurrent_upserts_of_one_key_lose_no_update() {
    let f = Fixture::new(KV);
    let mut a = f.session();
    f.tag(&mut a, "BEGIN");
    f.tag(
        &mut a,
        "INSERT INTO kv VALUES (5, 1, NULL) ON CONFLICT (k) DO UPDATE SET v = kv.v + 1",
    );
    // The second waits for the first's claim on key 5, then finds its row and updates it.
    let b = f.start(
        f.session(),
        "INSERT INTO kv VALUES (5, 1, NULL) ON CONFLICT (k) DO UPDATE SET v = kv.v + 1",
    );
    f.still_waiting(&b);
    f.tag(&mut a, "COMMIT");
    let (mut b, out) = f.finish(b);
    out.unwrap();
    assert_eq!(f.rows(&mut b, "SELECT v FROM kv WHERE k = 5"), ["2"]);
    // Under REPEATABLE READ a row committed after the snapshot cannot be updated.
    let mut c = f.session();
    f.tag(&mut c, "BEGIN ISOLATION LEVEL REPEATABLE READ");
    f.rows(&mut c, "SELECT count(*) FROM kv");
    f.tag(&mut a, "INSERT INTO kv VALUES (6, 1, NULL)");
    assert_eq!(
        f.sqlstate(
            &mut c,
            "INSERT INTO kv VALUES (6, 1, NULL) ON CONFLICT (k) DO UPDATE SET v = 9"
        ),
        "40001"
    );
}

#[test]
fn a_prepared_upsert_counts_the_parameters_of_its_do_update() {
    let f = Fixture::new("CREATE TABLE t (k INT PRIMARY KEY, v INT, n INT)");
    let mut s = f.session();
    let sql = "INSERT INTO t VALUES ($1, $2, 0) ON CONFLICT (k) DO UPDATE SET v = $3, n = t.n + 1";
    let statement = pmdb_sql::parse(sql).unwrap().pop_front().unwrap();
    let prepared = f.rt.block_on(s.prepare(statement)).unwrap();
    assert_eq!(prepared.parameters().len(), 3);
    for v in [10, 20] {
        let params = vec![
            ScalarValue::Int32(Some(1)),
            ScalarValue::Int32(Some(v)),
            ScalarValue::Int32(Some(v + 1)),
        ];
        f.rt.block_on(s.run_prepared(&prepared, params)).unwrap();
    }
    assert_eq!(f.rows(&mut s, "SELECT k, v, n FROM t"), vec!["1|21|1"]);
}
