//! Deferrable foreign keys as PostgreSQL checks them: `DEFERRABLE INITIALLY DEFERRED`
//! (what Django declares) checks at COMMIT, so a block may write a referencing row
//! before its parent, or remove a parent and put it back; a check that fails at COMMIT
//! fails it (23503) and nothing of the block stays. `SET CONSTRAINTS {ALL | names}
//! {DEFERRED | IMMEDIATE}` changes when keys check, IMMEDIATE running what was put off.
//! RESTRICT never waits, and a NOT DEFERRABLE key cannot be deferred (55000).

mod common;

use common::Fixture;

const TABLES: &str = "
    CREATE TABLE p (id INT PRIMARY KEY);
    CREATE TABLE c (
        id INT PRIMARY KEY,
        pid INT REFERENCES p DEFERRABLE INITIALLY DEFERRED
    );
    CREATE TABLE d (id INT PRIMARY KEY, pid INT);
    ALTER TABLE d ADD CONSTRAINT d_pid_fk FOREIGN KEY (pid) REFERENCES p (id) DEFERRABLE;
    CREATE TABLE r (id INT PRIMARY KEY, pid INT REFERENCES p ON DELETE RESTRICT DEFERRABLE INITIALLY DEFERRED);
    CREATE TABLE n (id INT PRIMARY KEY, pid INT REFERENCES p);
    INSERT INTO p VALUES (1), (2);
";

#[test]
fn a_deferred_key_checks_at_commit() {
    let f = Fixture::new(TABLES);
    let mut s = f.session();
    // Child first, parent after: fine by the commit.
    f.tag(&mut s, "BEGIN");
    f.tag(&mut s, "INSERT INTO c VALUES (1, 10)");
    f.tag(&mut s, "INSERT INTO p VALUES (10)");
    f.tag(&mut s, "COMMIT");
    // A parent that never comes: the commit fails and the block's rows are gone.
    f.tag(&mut s, "BEGIN");
    f.tag(&mut s, "INSERT INTO p VALUES (11)");
    f.tag(&mut s, "INSERT INTO c VALUES (2, 20)");
    let e = f.try_run(&mut s, "COMMIT").unwrap_err();
    assert_eq!(e.sqlstate(), "23503", "{e}");
    assert!(e.to_string().contains("c_pid_fkey"), "{e}");
    assert_eq!(
        f.rows(&mut s, "SELECT count(*) FROM p WHERE id = 11"),
        ["0"]
    );
    assert_eq!(f.rows(&mut s, "SELECT id FROM c ORDER BY id"), ["1"]);
    // A parent removed and put back.
    f.tag(&mut s, "BEGIN");
    f.tag(&mut s, "DELETE FROM p WHERE id = 10");
    f.tag(&mut s, "INSERT INTO p VALUES (10)");
    f.tag(&mut s, "COMMIT");
    // A parent removed for good while referenced.
    f.tag(&mut s, "BEGIN");
    f.tag(&mut s, "DELETE FROM p WHERE id = 10");
    assert_eq!(f.sqlstate(&mut s, "COMMIT"), "23503");
    assert_eq!(
        f.rows(&mut s, "SELECT count(*) FROM p WHERE id = 10"),
        ["1"]
    );
    // …unless the referencing row went too, or a savepoint took back the orphan.
    f.tag(&mut s, "BEGIN");
    f.tag(&mut s, "DELETE FROM p WHERE id = 10");
    f.tag(&mut s, "DELETE FROM c WHERE id = 1");
    f.tag(&mut s, "INSERT INTO c VALUES (3, 2)");
    f.tag(&mut s, "SAVEPOINT a");
    f.tag(&mut s, "INSERT INTO c VALUES (4, 99)");
    f.tag(&mut s, "ROLLBACK TO SAVEPOINT a");
    f.tag(&mut s, "COMMIT");
    assert_eq!(f.rows(&mut s, "SELECT id, pid FROM c"), ["3|2"]);
    // Outside a block the statement is the block: checked at its end.
    assert_eq!(f.sqlstate(&mut s, "INSERT INTO c VALUES (5, 50)"), "23503");
    assert_eq!(f.sqlstate(&mut s, "DELETE FROM p WHERE id = 2"), "23503");
}

#[test]
fn set_constraints_moves_the_checks() {
    let f = Fixture::new(TABLES);
    let mut s = f.session();
    // A DEFERRABLE (initially immediate) key checks at once…
    f.tag(&mut s, "BEGIN");
    assert_eq!(f.sqlstate(&mut s, "INSERT INTO d VALUES (1, 30)"), "23503");
    f.tag(&mut s, "ROLLBACK");
    // …until deferred.
    f.tag(&mut s, "BEGIN");
    f.tag(&mut s, "SET CONSTRAINTS ALL DEFERRED");
    f.tag(&mut s, "INSERT INTO d VALUES (1, 30)");
    f.tag(&mut s, "INSERT INTO p VALUES (30)");
    f.tag(&mut s, "COMMIT");
    f.tag(&mut s, "BEGIN");
    f.tag(&mut s, "SET CONSTRAINTS d_pid_fk DEFERRED");
    f.tag(&mut s, "INSERT INTO d VALUES (2, 31)");
    // IMMEDIATE runs what was put off: the block fails there.
    assert_eq!(
        f.sqlstate(&mut s, "SET CONSTRAINTS d_pid_fk IMMEDIATE"),
        "23503"
    );
    assert_eq!(f.sqlstate(&mut s, "SELECT 1"), "25P02");
    f.tag(&mut s, "ROLLBACK");
    // An initially deferred key made immediate checks each statement.
    f.tag(&mut s, "BEGIN");
    f.tag(&mut s, "SET CONSTRAINTS public.c_pid_fkey IMMEDIATE");
    assert_eq!(f.sqlstate(&mut s, "INSERT INTO c VALUES (1, 40)"), "23503");
    f.tag(&mut s, "ROLLBACK");
    // Names that are no deferrable key.
    f.tag(&mut s, "BEGIN");
    assert_eq!(f.sqlstate(&mut s, "SET CONSTRAINTS nope DEFERRED"), "42704");
    f.tag(&mut s, "ROLLBACK");
    for not_deferrable in ["n_pid_fkey", "p_pkey"] {
        f.tag(&mut s, "BEGIN");
        let sql = format!("SET CONSTRAINTS {not_deferrable} DEFERRED");
        assert_eq!(f.sqlstate(&mut s, &sql), "55000", "{sql}");
        f.tag(&mut s, "ROLLBACK");
    }
    // Outside a block SET CONSTRAINTS does nothing (PostgreSQL warns).
    f.tag(&mut s, "SET CONSTRAINTS ALL DEFERRED");
    assert_eq!(f.sqlstate(&mut s, "INSERT INTO d VALUES (3, 32)"), "23503");
}

#[test]
fn restrict_and_not_deferrable_keys_never_wait() {
    let f = Fixture::new(TABLES);
    let mut s = f.session();
    f.tag(&mut s, "INSERT INTO r VALUES (1, 1)");
    f.tag(&mut s, "INSERT INTO n VALUES (1, 2)");
    f.tag(&mut s, "BEGIN");
    f.tag(&mut s, "SET CONSTRAINTS ALL DEFERRED");
    assert_eq!(f.sqlstate(&mut s, "DELETE FROM p WHERE id = 1"), "23503");
    f.tag(&mut s, "ROLLBACK");
    f.tag(&mut s, "BEGIN");
    f.tag(&mut s, "SET CONSTRAINTS ALL DEFERRED");
    assert_eq!(f.sqlstate(&mut s, "INSERT INTO n VALUES (2, 77)"), "23503");
    f.tag(&mut s, "ROLLBACK");
}

/// A parent deleted by another session after the referencing row was written (the
/// deferred check has not locked it yet) fails the commit, as in PostgreSQL; a parent
/// the commit's check locked makes its deleter wait.
#[test]
fn the_commit_check_sees_and_locks_parents_of_other_sessions() {
    let f = Fixture::new(TABLES);
    let mut a = f.session();
    let mut b = f.session();
    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "INSERT INTO c VALUES (1, 2)");
    f.tag(&mut b, "DELETE FROM p WHERE id = 2");
    assert_eq!(f.sqlstate(&mut a, "COMMIT"), "23503");
    // Checked at SET CONSTRAINTS IMMEDIATE, the parent stays locked FOR KEY SHARE.
    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "INSERT INTO c VALUES (1, 1)");
    f.tag(&mut a, "SET CONSTRAINTS ALL IMMEDIATE");
    let deleter = f.start(b, "DELETE FROM p WHERE id = 1");
    f.still_waiting(&deleter);
    f.tag(&mut a, "COMMIT");
    let (_, out) = f.finish(deleter);
    assert_eq!(out.unwrap_err().sqlstate(), "23503");
    assert_eq!(f.rows(&mut a, "SELECT id, pid FROM c"), ["1|1"]);
}
