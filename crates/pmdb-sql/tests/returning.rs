//! RETURNING on INSERT, UPDATE and DELETE: the rows as the statement left them (an
//! INSERT's with the values it filled in, an UPDATE's new values, a DELETE's old ones),
//! projected through expressions, `*` and the statement's alias, with the command's own
//! tag; in a transaction block, and through prepared statements with parameters.

mod common;

use common::{Fixture, rows_of};
use pmdb_sql::{CommandTag, Output};

const ITEMS: &str = "
    CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(20), qty BIGINT);
    INSERT INTO items VALUES (1, 'bolt', 10), (2, 'nut', 20);
";

fn tag_of(out: &Output) -> CommandTag {
    match out {
        Output::Returned { tag, .. } => tag.clone(),
        other => panic!("not RETURNING rows: {other:?}"),
    }
}

#[test]
fn insert_returning_gives_the_rows_as_written() {
    let f = Fixture::new(ITEMS);
    let mut a = f.session();
    let out = f.run(
        &mut a,
        "INSERT INTO items VALUES (3, 'gear', 30), (4, 'cog', 40) RETURNING id, qty * 2 AS twice",
    );
    assert_eq!(tag_of(&out), CommandTag::insert(2));
    assert_eq!(rows_of(out), ["3|60", "4|80"]);
    // Missing columns are null, and `*` is every column in table order.
    assert_eq!(
        f.rows(
            &mut a,
            "INSERT INTO items (name, id) VALUES ('pin', 5) RETURNING *"
        ),
        ["5|pin|"]
    );
    assert_eq!(
        f.rows(
            &mut a,
            "INSERT INTO items SELECT id + 10, upper(name), qty FROM items WHERE id <= 2 RETURNING items.id, name"
        ),
        ["11|BOLT", "12|NUT"]
    );
    assert_eq!(f.rows(&mut a, "SELECT count(*) FROM items"), ["7"]);
    // A failed insert returns nothing and writes nothing.
    assert_eq!(
        f.sqlstate(
            &mut a,
            "INSERT INTO items VALUES (6, 'x', 1), (1, 'dup', 1) RETURNING id"
        ),
        "23505"
    );
    assert_eq!(f.rows(&mut a, "SELECT count(*) FROM items"), ["7"]);
    assert_eq!(
        f.sqlstate(
            &mut a,
            "INSERT INTO items VALUES (7, 'x', 1) RETURNING nothing_here"
        ),
        "42703"
    );
}

#[test]
fn update_and_delete_return_new_and_old_rows() {
    let f = Fixture::new(ITEMS);
    let mut a = f.session();
    let out = f.run(
        &mut a,
        "UPDATE items AS i SET qty = qty + 1 WHERE id >= 1 RETURNING i.id, qty, name",
    );
    assert_eq!(tag_of(&out), CommandTag::update(2));
    let mut rows = rows_of(out);
    rows.sort();
    assert_eq!(rows, ["1|11|bolt", "2|21|nut"]);
    let none = f.run(
        &mut a,
        "UPDATE items SET qty = 0 WHERE id = 99 RETURNING id",
    );
    assert_eq!(tag_of(&none), CommandTag::update(0));
    assert!(rows_of(none).is_empty());
    let out = f.run(&mut a, "DELETE FROM items WHERE id = 2 RETURNING *");
    assert_eq!(tag_of(&out), CommandTag::delete(1));
    assert_eq!(rows_of(out), ["2|nut|21"]);
    assert_eq!(f.rows(&mut a, "SELECT id FROM items"), ["1"]);
}

#[test]
fn returning_in_a_block_sees_the_blocks_rows_and_rolls_back_with_it() {
    let f = Fixture::new(ITEMS);
    let mut a = f.session();
    f.tag(&mut a, "BEGIN");
    assert_eq!(
        f.rows(
            &mut a,
            "INSERT INTO items VALUES (3, 'gear', 30) RETURNING name"
        ),
        ["gear"]
    );
    assert_eq!(
        f.rows(
            &mut a,
            "UPDATE items SET qty = 31 WHERE id = 3 RETURNING qty"
        ),
        ["31"]
    );
    assert_eq!(
        f.rows(&mut a, "DELETE FROM items WHERE id = 3 RETURNING qty"),
        ["31"]
    );
    f.tag(&mut a, "ROLLBACK");
    assert_eq!(f.rows(&mut a, "SELECT count(*) FROM items"), ["2"]);
}

#[test]
fn prepared_returning_statements_describe_their_columns_and_take_parameters() {
    use datafusion::arrow::datatypes::DataType;
    use datafusion::common::ScalarValue;
    let f = Fixture::new(ITEMS);
    let mut s = f.session();
    let mut prepare = |sql: &str| {
        let statement = pmdb_sql::parse(sql).unwrap().pop_front().unwrap();
        f.rt.block_on(s.prepare(statement)).unwrap()
    };
    let insert = prepare("INSERT INTO items VALUES ($1, $2, $3) RETURNING id, name");
    assert_eq!(
        insert.parameter_types(),
        [
            Some(DataType::Int32),
            Some(DataType::Utf8),
            Some(DataType::Int64)
        ]
    );
    let columns: Vec<_> = insert
        .columns()
        .expect("RETURNING gives rows")
        .fields()
        .iter()
        .map(|c| c.name().clone())
        .collect();
    assert_eq!(columns, ["id", "name"]);
    let update = prepare("UPDATE items SET qty = $1 WHERE id = $2 RETURNING qty");
    let params = vec![
        ScalarValue::Int32(Some(3)),
        ScalarValue::Utf8(Some("gear".into())),
        ScalarValue::Int64(Some(30)),
    ];
    let mut s = f.session();
    let out = f.rt.block_on(s.run_prepared(&insert, params)).unwrap();
    assert_eq!(rows_of(out), ["3|gear"]);
    let params = vec![ScalarValue::Int64(Some(33)), ScalarValue::Int32(Some(3))];
    let out = f.rt.block_on(s.run_prepared(&update, params)).unwrap();
    assert_eq!(rows_of(out), ["33"]);
}
