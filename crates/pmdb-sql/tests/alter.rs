//! ALTER TABLE on tables with rows, as a migration tool runs it: columns added with and
//! without defaults (older rows read the default the column had when added; no row is
//! rewritten), renames of columns and tables, defaults and NOT NULL changed, UNIQUE
//! constraints added and dropped, indexes added to a loaded table; what pmdb does not
//! do is refused with 0A000. Each change survives a reopen.

mod common;

use common::{Fixture, rows_of};
use pmdb_engine::{Db, DbOptions};
use pmdb_sql::SqlEngine;

const ITEMS: &str = "
    CREATE TABLE items (id SERIAL PRIMARY KEY, name TEXT NOT NULL);
    INSERT INTO items (name) VALUES ('bolt'), ('nut'), ('gear');
    ANALYZE items;
";

#[test]
fn columns_added_to_a_loaded_table() {
    let f = Fixture::new(ITEMS);
    let mut s = f.session();
    f.tag(
        &mut s,
        "ALTER TABLE items ADD COLUMN qty INT NOT NULL DEFAULT 10",
    );
    f.tag(&mut s, "ALTER TABLE items ADD COLUMN note TEXT");
    f.tag(
        &mut s,
        "ALTER TABLE items ADD COLUMN IF NOT EXISTS note TEXT, ADD COLUMN price DECIMAL(6,2) DEFAULT 2.5",
    );
    f.tag(
        &mut s,
        "INSERT INTO items (name, qty, note) VALUES ('cog', 3, 'new')",
    );
    f.tag(&mut s, "INSERT INTO items (name) VALUES ('pin')");
    let all = "SELECT id, name, qty, note, price FROM items ORDER BY id";
    let expected = [
        "1|bolt|10||2.50",
        "2|nut|10||2.50",
        "3|gear|10||2.50",
        "4|cog|3|new|2.50",
        "5|pin|10||2.50",
    ];
    assert_eq!(f.rows(&mut s, all), expected);
    // Lookups by key, filters, updates and indexes see the added columns too.
    assert_eq!(f.rows(&mut s, "SELECT qty FROM items WHERE id = 2"), ["10"]);
    f.tag(&mut s, "UPDATE items SET qty = qty + 1 WHERE id = 1");
    f.tag(&mut s, "CREATE INDEX items_qty ON items (qty)");
    assert_eq!(
        f.rows(&mut s, "SELECT id FROM items WHERE qty = 10 ORDER BY id"),
        ["2", "3", "5"]
    );
    // A later default does not change what the older rows hold.
    f.tag(&mut s, "ALTER TABLE items ALTER COLUMN qty SET DEFAULT 99");
    f.tag(&mut s, "INSERT INTO items (name) VALUES ('axle')");
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT qty FROM items WHERE id IN (3, 6) ORDER BY id"
        ),
        ["10", "99"]
    );
    // ANALYZE builds the columnar segments over the new columns, with the same answer.
    f.tag(&mut s, "ANALYZE items");
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT sum(qty), count(note), sum(price) FROM items"
        ),
        ["143|1|15.00"]
    );
    // NOT NULL without a default cannot be added to rows that would be NULL; a volatile
    // default needs each row's own value.
    assert_eq!(
        f.sqlstate(&mut s, "ALTER TABLE items ADD COLUMN must INT NOT NULL"),
        "23502"
    );
    assert_eq!(
        f.sqlstate(
            &mut s,
            "ALTER TABLE items ADD COLUMN r DOUBLE PRECISION DEFAULT random()"
        ),
        "0A000"
    );
    assert_eq!(
        f.sqlstate(&mut s, "ALTER TABLE items ADD COLUMN qty INT"),
        "42701"
    );
}

#[test]
fn renames_defaults_and_not_null() {
    let f = Fixture::new(ITEMS);
    let mut s = f.session();
    f.tag(&mut s, "ALTER TABLE items RENAME COLUMN name TO title");
    f.tag(&mut s, "ALTER TABLE items RENAME TO parts");
    assert_eq!(f.sqlstate(&mut s, "SELECT * FROM items"), "42P01");
    assert_eq!(
        f.rows(&mut s, "SELECT title FROM parts WHERE id = 1"),
        ["bolt"]
    );
    // The serial column's sequence goes on, and goes with the renamed table.
    f.tag(&mut s, "INSERT INTO parts (title) VALUES ('cog')");
    assert_eq!(f.rows(&mut s, "SELECT max(id) FROM parts"), ["4"]);
    f.tag(&mut s, "ALTER TABLE parts ADD COLUMN color TEXT");
    f.tag(
        &mut s,
        "ALTER TABLE parts ALTER COLUMN color SET DEFAULT 'grey'",
    );
    f.tag(&mut s, "INSERT INTO parts (title) VALUES ('pin')");
    assert_eq!(
        f.sqlstate(&mut s, "ALTER TABLE parts ALTER COLUMN color SET NOT NULL"),
        "23502"
    );
    f.tag(&mut s, "UPDATE parts SET color = 'red' WHERE color IS NULL");
    f.tag(&mut s, "ALTER TABLE parts ALTER COLUMN color SET NOT NULL");
    assert_eq!(
        f.sqlstate(
            &mut s,
            "INSERT INTO parts (title, color) VALUES ('x', NULL)"
        ),
        "23502"
    );
    f.tag(
        &mut s,
        "ALTER TABLE parts ALTER COLUMN color DROP NOT NULL, ALTER COLUMN color DROP DEFAULT",
    );
    f.tag(&mut s, "INSERT INTO parts (title) VALUES ('y')");
    assert_eq!(
        f.rows(&mut s, "SELECT color FROM parts WHERE title = 'y'"),
        [""]
    );
    assert_eq!(
        f.sqlstate(&mut s, "ALTER TABLE parts ALTER COLUMN id DROP NOT NULL"),
        "42P16"
    );
    assert_eq!(
        f.sqlstate(&mut s, "ALTER TABLE parts RENAME COLUMN title TO color"),
        "42701"
    );
    f.tag(&mut s, "DROP TABLE parts");
    assert!(
        f.engine.catalog().sequences().is_empty(),
        "the sequence went with it"
    );
    f.tag(&mut s, "ALTER TABLE IF EXISTS parts RENAME TO other");
}

#[test]
fn unique_constraints_added_and_dropped() {
    let f = Fixture::new(ITEMS);
    let mut s = f.session();
    f.tag(
        &mut s,
        "ALTER TABLE items ADD CONSTRAINT items_name_uq UNIQUE (name)",
    );
    assert_eq!(
        f.sqlstate(&mut s, "INSERT INTO items (name) VALUES ('nut')"),
        "23505"
    );
    f.tag(&mut s, "ALTER TABLE items DROP CONSTRAINT items_name_uq");
    f.tag(&mut s, "INSERT INTO items (name) VALUES ('nut')");
    assert_eq!(
        f.sqlstate(&mut s, "ALTER TABLE items ADD UNIQUE (name)"),
        "23505",
        "two rows share the value"
    );
    assert_eq!(
        f.sqlstate(&mut s, "ALTER TABLE items DROP CONSTRAINT nope"),
        "42704"
    );
    f.tag(&mut s, "ALTER TABLE items DROP CONSTRAINT IF EXISTS nope");
}

/// DROP COLUMN: the rows lose the column, with the indexes, keys and checks that use
/// it; a foreign key or a view that needs it refuses the drop (2BP01) unless CASCADE,
/// which takes them along; the serial column's sequence follows the table.
#[test]
fn columns_dropped_with_what_needs_them() {
    let f = Fixture::new(
        "CREATE TABLE p (id SERIAL PRIMARY KEY, code VARCHAR(10) UNIQUE, qty INT CHECK (qty > 0), \
             note TEXT, price DECIMAL(6,2));
         INSERT INTO p (code, qty, note, price) VALUES ('a', 1, 'x', 1.5), ('b', 2, 'y', 2.5);
         CREATE TABLE c (id INT PRIMARY KEY, pcode VARCHAR(10) REFERENCES p (code));
         INSERT INTO c VALUES (1, 'a');
         CREATE VIEW cheap AS SELECT code, price FROM p WHERE price < 2;
         CREATE VIEW counted AS SELECT count(*) FROM p;",
    );
    let mut s = f.session();
    assert_eq!(
        f.tag(&mut s, "ALTER TABLE p DROP COLUMN note"),
        "ALTER TABLE"
    );
    assert_eq!(
        f.rows(&mut s, "SELECT * FROM p ORDER BY id"),
        ["1|a|1|1.50", "2|b|2|2.50"]
    );
    assert_eq!(
        f.sqlstate(&mut s, "ALTER TABLE p DROP COLUMN note"),
        "42703"
    );
    f.tag(&mut s, "ALTER TABLE p DROP COLUMN IF EXISTS note");
    // The check goes with its column.
    f.tag(&mut s, "ALTER TABLE p DROP COLUMN qty");
    f.tag(&mut s, "INSERT INTO p (code) VALUES ('c')");
    // A foreign key and a view need `code`.
    assert_eq!(
        f.sqlstate(&mut s, "ALTER TABLE p DROP COLUMN code"),
        "2BP01"
    );
    assert_eq!(
        f.sqlstate(&mut s, "ALTER TABLE p DROP COLUMN price"),
        "2BP01"
    );
    f.tag(&mut s, "ALTER TABLE p DROP COLUMN code CASCADE");
    assert_eq!(
        f.rows(&mut s, "SELECT * FROM p ORDER BY id"),
        ["1|1.50", "2|2.50", "3|"]
    );
    assert_eq!(f.sqlstate(&mut s, "SELECT * FROM cheap"), "42P01");
    assert_eq!(f.rows(&mut s, "SELECT * FROM counted"), ["3"]);
    // The child keeps its rows, without the key.
    f.tag(&mut s, "INSERT INTO c VALUES (2, 'nowhere')");
    // The serial column's sequence goes on where it was.
    f.tag(&mut s, "INSERT INTO p (price) VALUES (9)");
    assert_eq!(f.rows(&mut s, "SELECT max(id) FROM p"), ["4"]);
    assert_eq!(f.sqlstate(&mut s, "INSERT INTO p VALUES (1, 1)"), "23505");
    // Dropping the key column leaves a table keyed by row ids, and its sequence goes.
    f.tag(&mut s, "ALTER TABLE p DROP COLUMN id");
    assert_eq!(f.sqlstate(&mut s, "SELECT nextval('p_id_seq')"), "42P01");
    f.tag(&mut s, "INSERT INTO p VALUES (1.25)");
    assert_eq!(
        f.rows(&mut s, "SELECT price FROM p ORDER BY price"),
        ["1.25", "1.50", "2.50", "9.00", ""]
    );
    assert_eq!(
        f.sqlstate(&mut s, "ALTER TABLE p DROP COLUMN price"),
        "0A000"
    );
}

/// ALTER COLUMN TYPE: values converted as PostgreSQL's assignment casts convert them
/// (numbers rounded to integers, anything to text in its text form), or by USING;
/// a type with no assignment cast needs USING (42804); a value that does not fit fails
/// the statement and leaves the table as it was; keys and foreign keys follow.
#[test]
fn column_types_changed() {
    let f = Fixture::new(
        "CREATE TABLE m (id INT PRIMARY KEY, amount DECIMAL(8,2), ratio DOUBLE, day DATE, flag BOOLEAN);
         INSERT INTO m VALUES (1, 2.50, 0.5, DATE '2024-03-01', true), (2, -3.25, 1.5, NULL, false),
             (3, 7.49, 2.5, DATE '2024-12-31', NULL);
         CREATE TABLE r (id INT PRIMARY KEY, m_id INT REFERENCES m);
         INSERT INTO r VALUES (10, 1), (20, 3);",
    );
    let mut s = f.session();
    f.tag(
        &mut s,
        "ALTER TABLE m ALTER COLUMN amount TYPE INT, ALTER COLUMN ratio SET DATA TYPE BIGINT",
    );
    // Numeric rounds half away from zero, double precision half to even.
    assert_eq!(
        f.rows(&mut s, "SELECT amount, ratio FROM m ORDER BY id"),
        ["3|0", "-3|2", "7|2"]
    );
    f.tag(
        &mut s,
        "ALTER TABLE m ALTER COLUMN day TYPE TEXT, ALTER COLUMN flag TYPE VARCHAR(5)",
    );
    assert_eq!(
        f.rows(&mut s, "SELECT day || '!', flag FROM m ORDER BY id"),
        ["2024-03-01!|true", "|false", "2024-12-31!|"]
    );
    assert_eq!(
        f.sqlstate(&mut s, "ALTER TABLE m ALTER COLUMN day TYPE DATE"),
        "42804"
    );
    f.tag(
        &mut s,
        "ALTER TABLE m ALTER COLUMN day TYPE DATE USING day::date",
    );
    assert_eq!(
        f.rows(&mut s, "SELECT id FROM m WHERE day > DATE '2024-06-01'"),
        ["3"]
    );
    // A value that does not fit: nothing changes.
    assert_eq!(
        f.sqlstate(&mut s, "ALTER TABLE m ALTER COLUMN flag TYPE VARCHAR(4)"),
        "22001"
    );
    assert_eq!(f.rows(&mut s, "SELECT flag FROM m WHERE id = 2"), ["false"]);
    // The key retyped: the child's foreign key follows it.
    f.tag(
        &mut s,
        "ALTER TABLE m ALTER COLUMN id TYPE BIGINT USING id * 1",
    );
    assert_eq!(f.sqlstate(&mut s, "INSERT INTO r VALUES (30, 4)"), "23503");
    f.tag(&mut s, "INSERT INTO r VALUES (30, 2)");
    assert_eq!(f.sqlstate(&mut s, "DELETE FROM m WHERE id = 1"), "23503");
    assert_eq!(
        f.sqlstate(&mut s, "ALTER TABLE m ALTER COLUMN id TYPE TEXT"),
        "42804",
        "the foreign key's columns would not compare"
    );
    assert_eq!(
        f.rows(&mut s, "SELECT count(*) FROM m JOIN r ON r.m_id = m.id"),
        ["3"]
    );
}

/// DROP CONSTRAINT of a primary key: the rows stay (keyed by row ids now), the columns
/// stay NOT NULL, and a foreign key that needs the key refuses it unless CASCADE.
#[test]
fn primary_keys_dropped() {
    let f = Fixture::new(
        "CREATE TABLE k (id INT PRIMARY KEY, v TEXT);
         INSERT INTO k VALUES (1, 'a'), (2, 'b');
         CREATE TABLE kc (id INT PRIMARY KEY, k_id INT REFERENCES k);",
    );
    let mut s = f.session();
    assert_eq!(
        f.sqlstate(&mut s, "ALTER TABLE k DROP CONSTRAINT k_pkey"),
        "2BP01"
    );
    f.tag(&mut s, "ALTER TABLE k DROP CONSTRAINT k_pkey CASCADE");
    f.tag(&mut s, "INSERT INTO k VALUES (1, 'again')");
    f.tag(&mut s, "INSERT INTO kc VALUES (1, 99)");
    assert_eq!(
        f.sqlstate(&mut s, "INSERT INTO k VALUES (NULL, 'c')"),
        "23502"
    );
    assert_eq!(
        f.rows(&mut s, "SELECT v FROM k WHERE id = 1 ORDER BY v"),
        ["a", "again"]
    );
}

/// A Django-style migration on a loaded table: tables with serial keys and a unique
/// constraint, a column added with a default, an index, a column renamed; then the data
/// after a reopen.
#[test]
fn a_migration_applies_and_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let open = || SqlEngine::open(Db::open(dir.path(), DbOptions::small()).unwrap()).unwrap();
    {
        let sql = open();
        sql.execute(
            "CREATE TABLE app_author (id BIGSERIAL PRIMARY KEY, name VARCHAR(100) NOT NULL, \
             CONSTRAINT app_author_name_uniq UNIQUE (name));
             CREATE TABLE app_book (id BIGSERIAL PRIMARY KEY, title VARCHAR(200) NOT NULL, author_id BIGINT NOT NULL)",
        )
        .unwrap();
        for i in 0..200 {
            sql.execute(&format!(
                "INSERT INTO app_author (name) VALUES ('a{i}'); \
                 INSERT INTO app_book (title, author_id) VALUES ('t{i}', {})",
                i + 1
            ))
            .unwrap();
        }
        sql.execute(
            "ALTER TABLE app_book ADD COLUMN pages INTEGER DEFAULT 100 NOT NULL;
             ALTER TABLE app_book ALTER COLUMN pages DROP DEFAULT;
             CREATE INDEX app_book_author_id ON app_book (author_id);
             ALTER TABLE app_book ADD CONSTRAINT app_book_author_id_fk_app_author_id
                 FOREIGN KEY (author_id) REFERENCES app_author (id);
             ALTER TABLE app_book RENAME COLUMN title TO name",
        )
        .unwrap();
    }
    let sql = open();
    let one = |q: &str| rows_of(sql.execute(q).unwrap().pop().unwrap());
    assert_eq!(
        one("SELECT count(*), sum(pages), min(name) FROM app_book"),
        ["200|20000|t0"]
    );
    assert_eq!(one("SELECT name FROM app_book WHERE author_id = 7"), ["t6"]);
    assert!(
        sql.execute("INSERT INTO app_book (name, author_id) VALUES ('x', 1)")
            .is_err()
    );
    sql.execute("INSERT INTO app_book (name, author_id, pages) VALUES ('x', 1, 5)")
        .unwrap();
    // A reopen skips the values the sequence had reserved (a gap, as in PostgreSQL).
    let top: i64 = one("SELECT max(id) FROM app_book")[0].parse().unwrap();
    assert!(top > 200, "{top}");
    assert!(
        sql.execute("INSERT INTO app_author (name) VALUES ('a3')")
            .is_err()
    );
    // The foreign key added over the loaded rows holds after the reopen.
    assert_eq!(
        sql.execute("INSERT INTO app_book (name, author_id, pages) VALUES ('y', 999, 1)")
            .unwrap_err()
            .sqlstate(),
        "23503"
    );
}

/// CREATE TABLE … AS: the query's columns and rows, in a table with no key; refused
/// (and leaving nothing) when a row does not fit.
#[test]
fn tables_created_from_a_query() {
    let dir = tempfile::tempdir().unwrap();
    let sql = SqlEngine::open(Db::open(dir.path(), DbOptions::small()).unwrap()).unwrap();
    let one = |q: &str| rows_of(sql.execute(q).unwrap().pop().unwrap());
    sql.execute(
        "CREATE TABLE src (k INT PRIMARY KEY, name TEXT, price DECIMAL(8,2));
         INSERT INTO src VALUES (1, 'a', 1.50), (2, 'b', 2.25), (3, 'c', NULL)",
    )
    .unwrap();
    let tag = sql
        .execute("CREATE TABLE dst AS SELECT k, upper(name) AS up, price FROM src WHERE k > 1")
        .unwrap()
        .pop()
        .unwrap();
    assert!(
        matches!(&tag, pmdb_sql::Output::Command(t) if *t == pmdb_sql::CommandTag::select(2)),
        "{tag:?}"
    );
    assert_eq!(
        one("SELECT k, up, price FROM dst ORDER BY k"),
        ["2|B|2.25", "3|C|"]
    );
    let def = sql
        .catalog()
        .table(&pmdb_sql::names::RelName::public("dst"))
        .unwrap()
        .def()
        .clone();
    assert!(def.primary_key.is_empty());
    assert_eq!(def.columns[2].ty.to_string(), "DECIMAL(8,2)");
    // The new table is an ordinary one.
    sql.execute("INSERT INTO dst VALUES (9, 'Z', 0)").unwrap();
    assert_eq!(
        sql.execute("CREATE TABLE dst AS SELECT 1 AS x")
            .unwrap_err()
            .sqlstate(),
        "42P07"
    );
    sql.execute("CREATE TABLE IF NOT EXISTS dst AS SELECT 1 AS x")
        .unwrap();
    // A query that fails leaves no table.
    assert!(
        sql.execute("CREATE TABLE bad AS SELECT 1 / (k - 2) FROM src")
            .is_err()
    );
    assert!(
        sql.catalog()
            .table(&pmdb_sql::names::RelName::public("bad"))
            .is_none()
    );
}

/// ADD COLUMN with its constraints inline, as Django adds a unique or foreign key
/// column to a loaded table: what the rows start with is checked first (a shared
/// non-NULL value in a unique column is 23505, one no parent holds 23503), then the
/// column and its constraints are there and enforced.
#[test]
fn columns_added_with_inline_constraints() {
    let f = Fixture::new(ITEMS);
    let mut s = f.session();
    f.tag(&mut s, "CREATE TABLE makers (id INT PRIMARY KEY)");
    f.tag(&mut s, "INSERT INTO makers VALUES (1), (2)");
    f.tag(
        &mut s,
        "ALTER TABLE items ADD COLUMN code VARCHAR(8) NULL UNIQUE",
    );
    f.tag(
        &mut s,
        "ALTER TABLE items ADD COLUMN maker INT DEFAULT 1 NOT NULL \
         CONSTRAINT items_maker_fk REFERENCES makers (id) DEFERRABLE INITIALLY DEFERRED; \
         SET CONSTRAINTS items_maker_fk IMMEDIATE",
    );
    f.tag(
        &mut s,
        "ALTER TABLE items ADD COLUMN weight INT CHECK (weight > 0)",
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT id, code, maker, weight FROM items ORDER BY id"
        ),
        ["1||1|", "2||1|", "3||1|"]
    );
    assert_eq!(
        f.sqlstate(&mut s, "UPDATE items SET code = 'a' WHERE id < 3"),
        "23505"
    );
    assert_eq!(f.sqlstate(&mut s, "UPDATE items SET maker = 3"), "23503");
    assert_eq!(f.sqlstate(&mut s, "UPDATE items SET weight = 0"), "23514");
    for (sql, state) in [
        (
            "ALTER TABLE items ADD COLUMN tag INT DEFAULT 5 UNIQUE",
            "23505",
        ),
        (
            "ALTER TABLE items ADD COLUMN m2 INT DEFAULT 7 REFERENCES makers",
            "23503",
        ),
        (
            "ALTER TABLE items ADD COLUMN w2 INT DEFAULT 5 CHECK (w2 > 0)",
            "0A000",
        ),
    ] {
        assert_eq!(f.sqlstate(&mut s, sql), state, "{sql}");
    }
    // None of the refused columns was added.
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT count(*) FROM information_schema.columns WHERE table_name = 'items'"
        ),
        ["5"]
    );
}

/// What pg_dump writes after each relation and for each serial column: `OWNER TO` the
/// one owner every relation has (a table, a view, a sequence) changes nothing, another
/// role is refused; a sequence made with its options in pg_dump's order, and a default
/// `nextval('s'::regclass)` set afterwards, hand out its values.
#[test]
fn owner_to_and_serials_as_pg_dump_writes_them() {
    let f = Fixture::new(
        "CREATE TABLE t (id INTEGER NOT NULL, v TEXT);
         CREATE VIEW tv AS SELECT v FROM t;
         CREATE SEQUENCE public.t_id_seq AS integer START WITH 10 INCREMENT BY 5
             NO MINVALUE NO MAXVALUE CACHE 1;",
    );
    let mut s = f.session();
    for relation in ["t", "tv", "public.t_id_seq"] {
        assert_eq!(
            f.tag(&mut s, &format!("ALTER TABLE {relation} OWNER TO pmdb")),
            "ALTER TABLE"
        );
        assert_eq!(
            f.sqlstate(&mut s, &format!("ALTER TABLE {relation} OWNER TO someone")),
            "0A000"
        );
    }
    assert_eq!(
        f.sqlstate(&mut s, "ALTER TABLE nope OWNER TO pmdb"),
        "42P01"
    );
    f.run(&mut s, "ALTER TABLE IF EXISTS nope OWNER TO pmdb");
    f.run(
        &mut s,
        "ALTER TABLE ONLY public.t ALTER COLUMN id SET DEFAULT \
         nextval('public.t_id_seq'::regclass)",
    );
    f.run(&mut s, "INSERT INTO t (v) VALUES ('a'), ('b')");
    assert_eq!(
        f.rows(&mut s, "SELECT id, v FROM t ORDER BY id"),
        ["10|a", "15|b"]
    );
    assert_eq!(
        f.sqlstate(&mut s, "CREATE SEQUENCE s2 START 1 START 2"),
        "42601"
    );
    // OWNED BY ties the sequence to the column: pg_get_serial_sequence finds it, a
    // rolled-back block leaves it as it was, and it goes with its table.
    let serial = "SELECT pg_get_serial_sequence('t', 'id')";
    f.run(
        &mut s,
        "ALTER SEQUENCE public.t_id_seq OWNED BY public.t.id",
    );
    assert_eq!(f.rows(&mut s, serial), ["public.t_id_seq"]);
    f.run(&mut s, "BEGIN");
    f.run(&mut s, "ALTER SEQUENCE t_id_seq OWNED BY NONE");
    assert_eq!(
        f.rows(&mut s, "SELECT pg_get_serial_sequence('t', 'id') IS NULL"),
        ["true"]
    );
    f.run(&mut s, "ROLLBACK");
    assert_eq!(f.rows(&mut s, serial), ["public.t_id_seq"]);
    // Never a value handed out before (a gap is allowed, as in PostgreSQL).
    f.run(&mut s, "INSERT INTO t (v) VALUES ('c')");
    assert_eq!(
        f.rows(&mut s, "SELECT count(DISTINCT id), min(id) FROM t"),
        ["3|10"]
    );
    assert_eq!(
        f.sqlstate(&mut s, "ALTER SEQUENCE t_id_seq RESTART WITH 1"),
        "0A000"
    );
    assert_eq!(
        f.sqlstate(&mut s, "ALTER SEQUENCE nope OWNED BY NONE"),
        "42P01"
    );
    f.run(&mut s, "ALTER SEQUENCE IF EXISTS nope OWNED BY NONE");
    f.run(&mut s, "CREATE SCHEMA other; CREATE TABLE other.u (id INT)");
    assert_eq!(
        f.sqlstate(&mut s, "ALTER SEQUENCE t_id_seq OWNED BY other.u.id"),
        "55000"
    );
    f.run(&mut s, "DROP VIEW tv");
    f.run(&mut s, "DROP TABLE t");
    assert_eq!(f.sqlstate(&mut s, "SELECT nextval('t_id_seq')"), "42P01");
}
