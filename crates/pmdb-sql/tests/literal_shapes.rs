//! Statements of the simple protocol run by the plan kept for their shape (the text with
//! its literals taken out) answer exactly as the same texts run the ordinary way: each
//! text runs by shape (falling back to the ordinary way when it is not served) on one
//! copy of a table, and the ordinary way on another copy; results, command tags, errors
//! and the tables afterwards must agree, for values the fast path takes and values it
//! must decline (a string for an integer, a decimal with more places than the column, a
//! value out of range), and after DDL changed the table.

mod common;

use common::{Fixture, shown};
use pmdb_sql::{Output, SqlSession};

const TABLES: &str = "
    CREATE TABLE p (id INT PRIMARY KEY, k SMALLINT, n BIGINT NOT NULL, name VARCHAR(8),
                    c CHAR(4), price DECIMAL(8,2), f DOUBLE PRECISION);
    CREATE TABLE l (id INT PRIMARY KEY, k SMALLINT, n BIGINT NOT NULL, name VARCHAR(8),
                    c CHAR(4), price DECIMAL(8,2), f DOUBLE PRECISION);
    INSERT INTO p VALUES (1, 1, 10, 'a', 'x', 1.50, 0.5), (2, 2, 20, 'b', NULL, NULL, NULL),
                         (3, 3, 30, 'c', 'zz', 3.00, 2);
    INSERT INTO l VALUES (1, 1, 10, 'a', 'x', 1.50, 0.5), (2, 2, 20, 'b', NULL, NULL, NULL),
                         (3, 3, 30, 'c', 'zz', 3.00, 2);";

/// Statements with `{t}` for the table and `{1}`, `{2}` for values, each with the
/// values to run it with.
const CASES: &[(&str, &[&[&str]])] = &[
    (
        "SELECT * FROM {t} WHERE id = {1}",
        &[
            &["1"],
            &["2"],
            &["-1"],
            &["99"],
            &["'2'"],
            &["1.5"],
            &["2.0"],
            &["99999999999"],
            &["-0"],
        ],
    ),
    (
        "SELECT n, name FROM {t} WHERE id IN ({1}, {2})",
        &[&["1", "3"], &["3", "3"], &["2", "'1'"], &["-5", "2"]],
    ),
    (
        "UPDATE {t} SET n = n + {1} WHERE id = {2}",
        &[
            &["5", "1"],
            &["-3", "2"],
            &["1.5", "1"],
            &["'7'", "3"],
            &["9223372036854775807", "3"],
            &["4", "42"],
        ],
    ),
    (
        "UPDATE {t} SET price = price + {1} WHERE id = {2}",
        &[&["1.25", "1"], &["-0.5", "3"], &["0.001", "1"], &["3", "3"]],
    ),
    (
        "UPDATE {t} SET name = {1}, c = {2} WHERE id = 2",
        &[
            &["'zz'", "'ab'"],
            &["'it''s'", "'abcd'"],
            &["'toolongvalue'", "'a'"],
            &["5", "'q'"],
        ],
    ),
    (
        "UPDATE {t} SET k = {1}, f = {2} WHERE id = 1",
        &[
            &["-5", "1.5"],
            &["100000", "2"],
            &["7", "-0.25"],
            &["8", "3"],
        ],
    ),
    (
        "INSERT INTO {t} (id, k, n, name, price) VALUES ({1}, 1, {2}, 'x', 1.5)",
        &[&["10", "-4"], &["11", "0"], &["1", "5"], &["12", "1.5"]],
    ),
    (
        "SELECT id, n FROM {t} WHERE id >= {1} AND id <= {2} ORDER BY id LIMIT 2",
        &[&["1", "3"], &["2", "11"], &["-3", "'2'"], &["0", "1.5"]],
    ),
    (
        "SELECT id FROM {t} WHERE name = {1}",
        &[&["'a'"], &["'it''s'"], &["'nobody'"]],
    ),
    (
        "DELETE FROM {t} WHERE id = {1}",
        &[&["10"], &["99"], &["'11'"], &["11"]],
    ),
];

fn text(template: &str, table: &str, values: &[&str]) -> String {
    let mut sql = template.replace("{t}", table);
    for (i, v) in values.iter().enumerate() {
        sql = sql.replace(&format!("{{{}}}", i + 1), v);
    }
    sql
}

/// Runs `sql` by its shape, else the ordinary way; whether it ran by shape.
fn by_shape(f: &Fixture, s: &mut SqlSession, sql: &str) -> (String, bool) {
    match f.rt.block_on(s.run_by_shape(sql)) {
        Some(out) => (shown(out), true),
        None => (shown(f.try_run(s, sql)), false),
    }
}

fn tables_agree(f: &Fixture, s: &mut SqlSession) {
    let p = shown(f.try_run(s, "SELECT * FROM p ORDER BY id"));
    let l = shown(f.try_run(s, "SELECT * FROM l ORDER BY id"));
    assert_eq!(p, l);
}

/// Runs every case twice over (the first sighting of a shape is not planned, the
/// second is); how many statements ran by shape.
fn run_cases(f: &Fixture, shaped: &mut SqlSession, plain: &mut SqlSession) -> usize {
    let mut served = 0;
    for _ in 0..2 {
        for (template, runs) in CASES {
            for values in *runs {
                let (a, by) = by_shape(f, shaped, &text(template, "p", values));
                // Errors name the table.
                let a = a.replace("\"p_", "\"l_").replace("\"p\"", "\"l\"");
                let b = shown(f.try_run(plain, &text(template, "l", values)));
                assert_eq!(a, b, "{template} with {values:?}");
                served += usize::from(by);
            }
            tables_agree(f, plain);
        }
    }
    served
}

#[test]
fn statements_run_by_shape_answer_as_their_texts_do() {
    let f = Fixture::new(TABLES);
    let mut shaped = f.session();
    let mut plain = f.session();
    let served = run_cases(&f, &mut shaped, &mut plain);
    // Every case but the one the fast path does not serve (a read by a column no key
    // leads) runs by shape from its second text on, unless its values are declined.
    assert!(served >= 40, "only {served} statements ran by shape");
}

#[test]
fn a_shape_is_planned_again_after_ddl() {
    let f = Fixture::new(TABLES);
    let mut s = f.session();
    let sql = |id: i32| format!("SELECT * FROM p WHERE id = {id}");
    assert!(
        f.rt.block_on(s.run_by_shape(&sql(1))).is_none(),
        "seen once"
    );
    assert!(f.rt.block_on(s.run_by_shape(&sql(2))).is_some());
    f.run(&mut s, "ALTER TABLE p ADD COLUMN extra INT DEFAULT 7");
    let after =
        f.rt.block_on(s.run_by_shape(&sql(3)))
            .expect("planned again");
    assert_eq!(
        common::rows_of(after.unwrap()),
        vec!["3|3|30|c|zz|3.00|2.0|7"]
    );
    f.run(&mut s, "DROP TABLE p");
    f.run(&mut s, "CREATE TABLE p (id INT PRIMARY KEY, v TEXT)");
    f.run(&mut s, "INSERT INTO p VALUES (3, 'new')");
    let after =
        f.rt.block_on(s.run_by_shape(&sql(3)))
            .expect("planned again");
    assert_eq!(common::rows_of(after.unwrap()), vec!["3|new"]);
}

#[test]
fn a_failed_block_refuses_statements_run_by_shape() {
    let f = Fixture::new(TABLES);
    let mut s = f.session();
    for id in [1, 2] {
        let _ =
            f.rt.block_on(s.run_by_shape(&format!("SELECT n FROM p WHERE id = {id}")));
    }
    f.run(&mut s, "BEGIN");
    assert!(f.try_run(&mut s, "SELECT 1 / 0").is_err());
    let out =
        f.rt.block_on(s.run_by_shape("SELECT n FROM p WHERE id = 3"))
            .expect("run by shape");
    assert_eq!(out.unwrap_err().sqlstate(), "25P02");
    f.run(&mut s, "ROLLBACK");
    let out =
        f.rt.block_on(s.run_by_shape("SELECT n FROM p WHERE id = 3"))
            .expect("run by shape");
    assert_eq!(common::rows_of(out.unwrap()), vec!["30"]);
}

#[test]
fn writes_by_shape_in_a_block_roll_back_with_it() {
    let f = Fixture::new(TABLES);
    let mut s = f.session();
    let update = |n: i32| format!("UPDATE p SET n = n + {n} WHERE id = 1");
    let _ = f.rt.block_on(s.run_by_shape(&update(0)));
    f.run(&mut s, "BEGIN");
    let out =
        f.rt.block_on(s.run_by_shape(&update(5)))
            .expect("run by shape");
    assert!(matches!(out, Ok(Output::Command(t)) if t.to_string() == "UPDATE 1"));
    f.run(&mut s, "ROLLBACK");
    assert_eq!(f.rows(&mut s, "SELECT n FROM p WHERE id = 1"), vec!["10"]);
}
