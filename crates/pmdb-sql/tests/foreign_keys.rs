//! FOREIGN KEY and CHECK constraints as PostgreSQL enforces them: a row without its
//! parent is 23503 on every path (INSERT, UPDATE, COPY, the fast path, ALTER TABLE ADD
//! FOREIGN KEY over existing rows); deleting or re-keying a parent applies each key's
//! action (NO ACTION / RESTRICT refuse, CASCADE follows, SET NULL empties), atomically
//! across every table touched; a check that fails is 23514; DDL that would orphan a key
//! is refused. Under concurrency, a referencing row's writer and its parent's deleter
//! wait for each other, as PostgreSQL's row locks make them.

mod common;

use common::Fixture;

const SHOP: &str = "
    CREATE TABLE customers (id INT PRIMARY KEY, email TEXT UNIQUE);
    CREATE TABLE orders (
        id SERIAL PRIMARY KEY,
        customer INT NOT NULL REFERENCES customers ON DELETE CASCADE,
        amount INT CHECK (amount > 0)
    );
    CREATE TABLE lines (
        order_id INT REFERENCES orders (id) ON DELETE CASCADE ON UPDATE CASCADE,
        item TEXT,
        CONSTRAINT lines_item_short CHECK (length(item) < 10)
    );
    CREATE TABLE notes (
        id INT PRIMARY KEY,
        email TEXT REFERENCES customers (email) ON UPDATE CASCADE ON DELETE SET NULL,
        customer BIGINT,
        FOREIGN KEY (customer) REFERENCES customers (id)
    );
    INSERT INTO customers VALUES (1, 'a@x'), (2, 'b@x'), (3, 'c@x');
    INSERT INTO orders (customer, amount) VALUES (1, 10), (1, 20), (2, 5);
    INSERT INTO lines VALUES (1, 'pen'), (1, 'ink'), (2, 'pad'), (3, 'cup');
    INSERT INTO notes VALUES (1, 'a@x', 1), (2, 'b@x', NULL), (3, NULL, 3);
";

#[test]
fn a_row_without_its_parent_is_refused_on_every_path() {
    let f = Fixture::new(SHOP);
    let mut s = f.session();
    for orphan in [
        "INSERT INTO orders (customer, amount) VALUES (9, 1)",
        "INSERT INTO orders (customer, amount) SELECT 9, 1",
        "UPDATE orders SET customer = 9 WHERE id = 1",
        "UPDATE orders SET customer = customer + 10",
        "INSERT INTO notes VALUES (4, 'z@x', NULL)",
        // A BIGINT key referencing an INT one: converted for the lookup.
        "INSERT INTO notes VALUES (4, NULL, 4)",
        "INSERT INTO notes VALUES (4, NULL, 9999999999)",
    ] {
        assert_eq!(f.sqlstate(&mut s, orphan), "23503", "{orphan}");
    }
    let err = f
        .try_run(
            &mut s,
            "INSERT INTO orders (customer, amount) VALUES (7, 1)",
        )
        .unwrap_err();
    // PostgreSQL's message and detail, apart.
    assert_eq!(
        err.message(),
        "insert or update on table \"orders\" violates foreign key constraint \
         \"orders_customer_fkey\""
    );
    assert_eq!(
        err.detail(),
        Some("Key (customer)=(7) is not present in table \"customers\".")
    );
    // NULL references nothing (MATCH SIMPLE); a statement changes nothing when it fails.
    f.tag(&mut s, "INSERT INTO lines VALUES (NULL, 'loose')");
    assert_eq!(
        f.sqlstate(&mut s, "INSERT INTO lines VALUES (1, 'ok'), (99, 'bad')"),
        "23503"
    );
    assert_eq!(f.rows(&mut s, "SELECT count(*) FROM lines"), ["5"]);
    // A row inserted in the same block is a parent for the block's next statements.
    f.tag(&mut s, "BEGIN");
    f.tag(&mut s, "INSERT INTO customers VALUES (4, 'd@x')");
    f.tag(
        &mut s,
        "INSERT INTO orders (customer, amount) VALUES (4, 1)",
    );
    f.tag(&mut s, "DELETE FROM customers WHERE id = 4");
    assert_eq!(
        f.rows(&mut s, "SELECT count(*) FROM orders WHERE customer = 4"),
        ["0"]
    );
    f.tag(&mut s, "COMMIT");
}

#[test]
fn deleting_a_parent_applies_each_keys_action() {
    let f = Fixture::new(SHOP);
    let mut s = f.session();
    // orders → lines cascade; notes.customer has NO ACTION, so customer 1 (noted) stays.
    let err = f
        .try_run(&mut s, "DELETE FROM customers WHERE id = 1")
        .unwrap_err();
    assert_eq!(err.sqlstate(), "23503");
    assert!(
        err.to_string().contains(
            "update or delete on table \"customers\" violates foreign key constraint \
             \"notes_customer_fkey\" on table \"notes\""
        ),
        "{err}"
    );
    // Nothing of the failed statement stays: not the cascade's deletes either.
    assert_eq!(f.rows(&mut s, "SELECT count(*) FROM orders"), ["3"]);
    assert_eq!(f.rows(&mut s, "SELECT count(*) FROM lines"), ["4"]);
    f.tag(&mut s, "UPDATE notes SET customer = NULL WHERE id = 1");
    assert_eq!(
        f.tag(&mut s, "DELETE FROM customers WHERE id = 1"),
        "DELETE 1"
    );
    assert_eq!(f.rows(&mut s, "SELECT id FROM orders ORDER BY id"), ["3"]);
    assert_eq!(f.rows(&mut s, "SELECT item FROM lines"), ["cup"]);
    // SET NULL: the note keeps its row, without the email.
    assert_eq!(
        f.rows(&mut s, "SELECT id, email FROM notes ORDER BY id"),
        ["1|", "2|b@x", "3|"]
    );
    // A parent nothing references goes; the fast path's DELETE by key applies them too.
    f.tag(&mut s, "DELETE FROM notes WHERE id = 3");
    assert_eq!(
        f.tag(&mut s, "DELETE FROM customers WHERE id = 3"),
        "DELETE 1"
    );
    assert_eq!(
        f.tag(&mut s, "DELETE FROM customers WHERE id = 2"),
        "DELETE 1"
    );
    assert_eq!(f.rows(&mut s, "SELECT count(*) FROM orders"), ["0"]);
    assert_eq!(f.rows(&mut s, "SELECT count(*) FROM lines"), ["0"]);
    assert_eq!(
        f.rows(&mut s, "SELECT id, email FROM notes ORDER BY id"),
        ["1|", "2|"]
    );
}

#[test]
fn changing_a_referenced_key_cascades_or_is_refused() {
    let f = Fixture::new(SHOP);
    let mut s = f.session();
    // ON UPDATE CASCADE: lines follow their order's new id, notes their customer's email.
    f.tag(&mut s, "UPDATE orders SET id = 30 WHERE id = 3");
    assert_eq!(
        f.rows(&mut s, "SELECT order_id FROM lines WHERE item = 'cup'"),
        ["30"]
    );
    f.tag(&mut s, "UPDATE customers SET email = 'bee@x' WHERE id = 2");
    assert_eq!(
        f.rows(&mut s, "SELECT email FROM notes WHERE id = 2"),
        ["bee@x"]
    );
    // ON UPDATE NO ACTION (orders.customer): a referenced id cannot change.
    assert_eq!(
        f.sqlstate(&mut s, "UPDATE customers SET id = 10 WHERE id = 2"),
        "23503"
    );
    // One nothing references can; so can columns no key references.
    f.tag(&mut s, "INSERT INTO customers VALUES (5, 'e@x')");
    f.tag(&mut s, "UPDATE customers SET id = 50 WHERE id = 5");
    f.tag(&mut s, "UPDATE orders SET amount = amount + 1");
}

#[test]
fn a_table_that_references_itself() {
    let f = Fixture::new(
        "CREATE TABLE staff (id INT PRIMARY KEY, boss INT REFERENCES staff ON DELETE CASCADE)",
    );
    let mut s = f.session();
    // A row may be its own parent, or find it earlier in the statement.
    f.tag(&mut s, "INSERT INTO staff VALUES (1, 1), (2, 1), (3, 2)");
    assert_eq!(
        f.sqlstate(&mut s, "INSERT INTO staff VALUES (4, 5)"),
        "23503"
    );
    // Deleting the top cascades down the chain.
    f.tag(&mut s, "DELETE FROM staff WHERE id = 2");
    assert_eq!(f.rows(&mut s, "SELECT id FROM staff"), ["1"]);
}

#[test]
fn checks_refuse_rows_that_fail_them() {
    let f = Fixture::new(SHOP);
    let mut s = f.session();
    let err = f
        .try_run(
            &mut s,
            "INSERT INTO orders (customer, amount) VALUES (1, 0)",
        )
        .unwrap_err();
    assert_eq!(err.sqlstate(), "23514");
    assert!(
        err.to_string()
            .contains("violates check constraint \"orders_amount_check\""),
        "{err}"
    );
    assert_eq!(
        f.sqlstate(&mut s, "UPDATE orders SET amount = -1 WHERE id = 1"),
        "23514"
    );
    assert_eq!(
        f.sqlstate(&mut s, "INSERT INTO lines VALUES (1, 'much too long')"),
        "23514"
    );
    // NULL passes a check.
    f.tag(
        &mut s,
        "INSERT INTO orders (customer, amount) VALUES (1, NULL)",
    );
    // Added over rows: checked against them first.
    assert_eq!(
        f.sqlstate(
            &mut s,
            "ALTER TABLE orders ADD CONSTRAINT small CHECK (amount < 15)"
        ),
        "23514"
    );
    f.tag(
        &mut s,
        "ALTER TABLE orders ADD CONSTRAINT small CHECK (amount < 100)",
    );
    assert_eq!(
        f.sqlstate(
            &mut s,
            "INSERT INTO orders (customer, amount) VALUES (1, 100)"
        ),
        "23514"
    );
    f.tag(&mut s, "ALTER TABLE orders DROP CONSTRAINT small");
    f.tag(
        &mut s,
        "INSERT INTO orders (customer, amount) VALUES (1, 100)",
    );
    // Refused when stated: an unknown column, a non-boolean, a subquery.
    for (bad, state) in [
        ("CREATE TABLE t (a INT CHECK (b > 0))", "42703"),
        ("CREATE TABLE t (a INT CHECK (a + 1))", "42804"),
        ("CREATE TABLE t (a INT CHECK (a IN (SELECT 1)))", "0A000"),
    ] {
        assert_eq!(f.sqlstate(&mut s, bad), state, "{bad}");
    }
}

#[test]
fn ddl_keeps_every_key_whole() {
    let f = Fixture::new(SHOP);
    let mut s = f.session();
    // A parent others reference: DROP refused, TRUNCATE too unless they go with it.
    assert_eq!(f.sqlstate(&mut s, "DROP TABLE customers"), "2BP01");
    assert_eq!(f.sqlstate(&mut s, "TRUNCATE customers"), "0A000");
    assert_eq!(
        f.sqlstate(&mut s, "DROP INDEX customers_email_key"),
        "2BP01"
    );
    assert_eq!(
        f.sqlstate(
            &mut s,
            "ALTER TABLE customers DROP CONSTRAINT customers_email_key"
        ),
        "2BP01"
    );
    // Keys must match a unique key of the parent, with comparable types.
    for (bad, state) in [
        ("CREATE TABLE t (a INT REFERENCES orders (amount))", "42830"),
        ("CREATE TABLE t (a TEXT REFERENCES customers)", "42804"),
        ("CREATE TABLE t (a INT REFERENCES nowhere)", "42P01"),
        ("CREATE TABLE t (a INT REFERENCES lines)", "42830"),
        (
            "CREATE TABLE t (a INT REFERENCES customers ON DELETE SET DEFAULT)",
            "0A000",
        ),
        (
            "CREATE TABLE t (a INT REFERENCES customers NOT DEFERRABLE INITIALLY DEFERRED)",
            "42601",
        ),
        (
            "CREATE TABLE t (a INT REFERENCES customers NOT ENFORCED)",
            "0A000",
        ),
    ] {
        assert_eq!(f.sqlstate(&mut s, bad), state, "{bad}");
    }
    // Added over rows: every row must find its parent.
    f.tag(&mut s, "CREATE TABLE visits (customer INT)");
    f.tag(&mut s, "INSERT INTO visits VALUES (1), (NULL), (8)");
    assert_eq!(
        f.sqlstate(
            &mut s,
            "ALTER TABLE visits ADD FOREIGN KEY (customer) REFERENCES customers"
        ),
        "23503"
    );
    f.tag(&mut s, "DELETE FROM visits WHERE customer = 8");
    f.tag(
        &mut s,
        "ALTER TABLE visits ADD CONSTRAINT visit_of FOREIGN KEY (customer) REFERENCES customers",
    );
    assert_eq!(f.sqlstate(&mut s, "INSERT INTO visits VALUES (8)"), "23503");
    f.tag(&mut s, "ALTER TABLE visits DROP CONSTRAINT visit_of");
    f.tag(&mut s, "INSERT INTO visits VALUES (8)");
    // CASCADE drops the keys that reference the table, and nothing else.
    f.tag(&mut s, "TRUNCATE customers CASCADE");
    assert_eq!(f.rows(&mut s, "SELECT count(*) FROM orders"), ["0"]);
    f.tag(&mut s, "INSERT INTO customers VALUES (1, 'a@x')");
    f.tag(&mut s, "DROP TABLE customers CASCADE");
    f.tag(&mut s, "INSERT INTO notes VALUES (9, 'nobody', 42)");
    f.tag(
        &mut s,
        "INSERT INTO orders (customer, amount) VALUES (42, 1)",
    );
    assert_eq!(
        f.sqlstate(&mut s, "INSERT INTO lines VALUES (99, 'x')"),
        "23503"
    );
}

#[test]
fn the_constraints_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let open = || {
        pmdb_sql::SqlEngine::open(
            pmdb_engine::Db::open(dir.path(), pmdb_engine::DbOptions::small()).unwrap(),
        )
        .unwrap()
    };
    open().execute(SHOP).unwrap();
    let engine = open();
    for (sql, state) in [
        (
            "INSERT INTO orders (customer, amount) VALUES (9, 1)",
            "23503",
        ),
        (
            "INSERT INTO orders (customer, amount) VALUES (1, -1)",
            "23514",
        ),
        ("DELETE FROM customers WHERE id = 1", "23503"),
    ] {
        assert_eq!(engine.execute(sql).unwrap_err().sqlstate(), state, "{sql}");
    }
    engine
        .execute("DELETE FROM customers WHERE id = 2")
        .unwrap();
}

#[test]
fn a_referencing_writer_and_a_parents_deleter_wait_for_each_other() {
    let f = Fixture::new(SHOP);
    // The child's insert locks its parent: the deleter waits, then finds the new row.
    let mut a = f.session();
    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "INSERT INTO notes VALUES (10, NULL, 2)");
    let deleter = f.start(f.session(), "DELETE FROM customers WHERE id = 2");
    f.still_waiting(&deleter);
    f.tag(&mut a, "COMMIT");
    let (_, out) = f.finish(deleter);
    assert_eq!(out.unwrap_err().sqlstate(), "23503");
    // The deleter first: the child's insert waits, then finds no parent.
    let mut b = f.session();
    f.tag(&mut b, "BEGIN");
    f.tag(&mut b, "DELETE FROM notes WHERE customer = 2");
    f.tag(&mut b, "DELETE FROM customers WHERE id = 2");
    let inserter = f.start(f.session(), "INSERT INTO notes VALUES (11, NULL, 2)");
    f.still_waiting(&inserter);
    f.tag(&mut b, "COMMIT");
    let (_, out) = f.finish(inserter);
    assert_eq!(out.unwrap_err().sqlstate(), "23503");
    // A rolled-back delete leaves the parent: the waiting insert goes on.
    let mut c = f.session();
    f.tag(&mut c, "BEGIN");
    f.tag(&mut c, "DELETE FROM notes WHERE customer = 3");
    f.tag(&mut c, "DELETE FROM customers WHERE id = 3");
    let inserter = f.start(f.session(), "INSERT INTO notes VALUES (12, NULL, 3)");
    f.still_waiting(&inserter);
    f.tag(&mut c, "ROLLBACK");
    let (_, out) = f.finish(inserter);
    out.unwrap();
}

#[test]
fn a_repeatable_read_deleter_finds_rows_moved_to_its_parent_since_its_snapshot() {
    let f = Fixture::new(SHOP);
    for (child, state) in [("notes", "23503"), ("orders", "40001")] {
        let mut deleter = f.session();
        f.tag(&mut deleter, "BEGIN ISOLATION LEVEL REPEATABLE READ");
        f.rows(&mut deleter, &format!("SELECT count(*) FROM {child}"));
        // Committed after the snapshot: a row the snapshot holds referencing customer 3
        // now references customer 1.
        let mut mover = f.session();
        f.tag(
            &mut mover,
            &format!("UPDATE {child} SET customer = 1 WHERE id = 3"),
        );
        f.tag(&mut deleter, "DELETE FROM notes WHERE customer = 1");
        // PostgreSQL's check reads the rows committed now: NO ACTION refuses, and
        // CASCADE cannot delete a row changed since the snapshot.
        assert_eq!(
            f.sqlstate(&mut deleter, "DELETE FROM customers WHERE id = 1"),
            state,
            "{child}"
        );
        f.tag(&mut deleter, "ROLLBACK");
        let orphans = f.rows(
            &mut mover,
            &format!(
                "SELECT count(*) FROM {child} n WHERE n.customer IS NOT NULL \
                 AND NOT EXISTS (SELECT 1 FROM customers c WHERE c.id = n.customer)"
            ),
        );
        assert_eq!(orphans, ["0"]);
    }
}
