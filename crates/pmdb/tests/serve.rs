//! `pmdb serve` as a process: commits acknowledged to a client survive `kill -9` of the
//! server, SIGTERM shuts it down cleanly with committed data intact, refusing to listen
//! beyond loopback without users, and a scripted psql session when psql is installed.
#![cfg(feature = "sql")]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use tokio_postgres::NoTls;

/// A `pmdb serve` process on `dir`, on a free port.
struct Serve {
    child: Child,
    port: u16,
}

impl Serve {
    fn start(dir: &Path) -> Serve {
        Serve::start_with(dir, &[])
    }

    fn start_with(dir: &Path, extra: &[&str]) -> Serve {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pmdb"))
            .args(["serve", "--listen", "127.0.0.1:0", "--path"])
            .arg(dir)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .split("127.0.0.1:")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {line:?}"));
        Serve { child, port }
    }

    fn signal(&self, signal: i32) {
        let pid = i32::try_from(self.child.id()).unwrap();
        assert_eq!(
            std::process::Command::new("kill")
                .arg(format!("-{signal}"))
                .arg(pid.to_string())
                .status()
                .unwrap()
                .code(),
            Some(0)
        );
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn connect(port: u16) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(
        &format!("host=127.0.0.1 port={port} user=pmdb dbname=pmdb"),
        NoTls,
    )
    .await
    .unwrap();
    tokio::spawn(connection);
    client
}

/// Whether psql is missing, which skips the test that asks (saying so).
fn psql_missing() -> bool {
    let missing = Command::new("psql").arg("--version").output().is_err();
    if missing {
        eprintln!("psql is not installed: skipped");
    }
    missing
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn acknowledged_commits_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime();
    let server = Serve::start(dir.path());
    let acknowledged = rt.block_on(async {
        let mut c = connect(server.port).await;
        c.batch_execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))")
            .await
            .unwrap();
        let insert = c.prepare("INSERT INTO t VALUES ($1, $2)").await.unwrap();
        let mut acknowledged = 0;
        for i in 0..200i32 {
            if i % 10 == 0 {
                let tx = c.transaction().await.unwrap();
                tx.execute(&insert, &[&i, &"in a block"]).await.unwrap();
                tx.commit().await.unwrap();
            } else {
                c.execute(&insert, &[&i, &"autocommit"]).await.unwrap();
            }
            acknowledged += 1;
        }
        // A block left open is not committed.
        c.batch_execute("BEGIN; INSERT INTO t VALUES (1000, 'open')")
            .await
            .unwrap();
        acknowledged
    });
    let mut server = server;
    server.signal(9);
    server.child.wait().unwrap();
    drop(server);
    let server = Serve::start(dir.path());
    rt.block_on(async {
        let c = connect(server.port).await;
        let n: i64 = c
            .query_one("SELECT count(*) FROM t", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, acknowledged);
        let open = c
            .query("SELECT * FROM t WHERE id = 1000", &[])
            .await
            .unwrap();
        assert!(open.is_empty(), "an uncommitted block came back");
    });
}

#[test]
fn sigterm_shuts_down_cleanly_with_committed_data_intact() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime();
    let mut server = Serve::start(dir.path());
    rt.block_on(async {
        let c = connect(server.port).await;
        c.batch_execute("CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1), (2)")
            .await
            .unwrap();
        // Connected at the signal: it gets the grace period, then is closed.
        std::mem::forget(c);
    });
    server.signal(15);
    let status = server.child.wait().unwrap();
    assert!(status.success(), "{status}");
    drop(server);
    let server = Serve::start(dir.path());
    rt.block_on(async {
        let c = connect(server.port).await;
        let n: i64 = c
            .query_one("SELECT count(*) FROM t", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 2);
    });
}

#[test]
fn listening_beyond_loopback_without_users_is_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_pmdb"))
        .args(["serve", "--listen", "0.0.0.0:0", "--path"])
        .arg(tempfile::tempdir().unwrap().path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("needs users"), "{err}");
}

/// psql, when installed (Debian's postgresql-client): a scripted session.
#[test]
fn a_psql_session() {
    if psql_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Serve::start(dir.path());
    let script = "
        CREATE TABLE kv (k VARCHAR(10) PRIMARY KEY, v BIGINT);
        INSERT INTO kv VALUES ('a', 1), ('b', 2);
        BEGIN;
        UPDATE kv SET v = v * 10 WHERE k = 'b';
        COMMIT;
        SELECT k, v FROM kv ORDER BY k;
        SELECT 1/0;
        SELECT 'still here';
    ";
    let out = Command::new("psql")
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &server.port.to_string(),
            "-U",
            "pmdb",
        ])
        .args(["-X", "-A", "-t", "-c", script])
        .env("PGCONNECT_TIMEOUT", "10")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // psql -c runs the string as one simple query: it stops at the error.
    assert!(
        stderr.contains("Divide by zero") || stderr.contains("division"),
        "{stderr}"
    );
    let out = Command::new("psql")
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &server.port.to_string(),
            "-U",
            "pmdb",
        ])
        .args([
            "-X",
            "-A",
            "-t",
            "-c",
            "SELECT k, v FROM kv ORDER BY k",
            "-c",
            "SELECT 'still here'",
        ])
        .output()
        .unwrap();
    let stdout2 = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout2} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout2.lines().collect::<Vec<_>>(),
        ["a|1", "b|20", "still here"],
        "{stdout}"
    );
}

/// psql's describe commands, when psql is installed: `\d` lists the tables, `\d TABLE`
/// shows columns, types, nullability and indexes as PostgreSQL prints them.
#[test]
fn psql_describes_tables() {
    if psql_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Serve::start(dir.path());
    let psql = |commands: &[&str]| {
        let mut cmd = Command::new("psql");
        cmd.args([
            "-h",
            "127.0.0.1",
            "-p",
            &server.port.to_string(),
            "-U",
            "pmdb",
            "-X",
        ]);
        for c in commands {
            cmd.args(["-c", c]);
        }
        let out = cmd.env("PGCONNECT_TIMEOUT", "10").output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            out.status.success() && stderr.is_empty(),
            "{commands:?}: {stderr}"
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    psql(&[
        "CREATE TABLE accounts (id INT PRIMARY KEY, owner VARCHAR(30) NOT NULL, balance DECIMAL(12,2))",
        "CREATE INDEX accounts_owner ON accounts (owner)",
        "CREATE TABLE notes (body TEXT)",
    ]);
    let list = psql(&["\\d"]);
    for row in [
        "public | accounts | table | pmdb",
        "public | notes    | table | pmdb",
    ] {
        assert!(list.contains(row), "{list}");
    }
    let table = psql(&["\\d accounts"]);
    for line in [
        "Table \"public.accounts\"",
        " id      | integer               |           | not null | ",
        " owner   | character varying(30) |           | not null | ",
        " balance | numeric(12,2)         |           |          | ",
        "\"accounts_pkey\" PRIMARY KEY, btree (id)",
        "\"accounts_owner\" btree (owner)",
    ] {
        assert!(table.contains(line), "{line:?} not in {table}");
    }
    let index = psql(&["\\d accounts_pkey"]);
    assert!(
        index.contains("primary key, btree, for table \"public.accounts\""),
        "{index}"
    );
    // Defaults, serial sequences and unique constraints print as PostgreSQL 15 prints
    // them.
    psql(&[
        "CREATE TABLE tags (id SERIAL PRIMARY KEY, name TEXT UNIQUE, n INT DEFAULT 7, \
         CONSTRAINT tags_n_name UNIQUE (n, name))",
        "CREATE UNIQUE INDEX tags_n ON tags (n)",
    ]);
    let tags = psql(&["\\d tags"]);
    for line in [
        " id     | integer |           | not null | nextval('tags_id_seq'::regclass)",
        " n      | integer |           |          | 7",
        "\"tags_n\" UNIQUE, btree (n)",
        "\"tags_n_name\" UNIQUE CONSTRAINT, btree (n, name)",
        "\"tags_name_key\" UNIQUE CONSTRAINT, btree (name)",
    ] {
        assert!(tags.contains(line), "{line:?} not in {tags}");
    }
    let sequences = psql(&["\\ds"]);
    assert!(
        sequences.contains("public | tags_id_seq | sequence | pmdb"),
        "{sequences}"
    );
    // A view's columns as it was made; a materialized view with its index.
    psql(&[
        "CREATE VIEW rich AS SELECT owner, balance FROM accounts WHERE balance > 100",
        "CREATE MATERIALIZED VIEW owners AS SELECT owner, id FROM accounts",
        "CREATE INDEX owners_owner ON owners (owner)",
    ]);
    let view = psql(&["\\d rich"]);
    for line in [
        "View \"public.rich\"",
        " owner   | character varying(30) |           |          | ",
        " balance | numeric(12,2)         |           |          | ",
    ] {
        assert!(view.contains(line), "{line:?} not in {view}");
    }
    let materialized = psql(&["\\dm", "\\d owners"]);
    for line in [
        "public | owners | materialized view | pmdb",
        "Materialized view \"public.owners\"",
        " id     | integer               |           |          | ",
        "\"owners_owner\" btree (owner)",
    ] {
        assert!(
            materialized.contains(line),
            "{line:?} not in {materialized}"
        );
    }
    for command in ["\\dt+", "\\di", "\\dn", "\\l", "\\du", "\\d+ notes"] {
        psql(&[command]);
    }
}

/// pgbench, when installed: `pgbench -i`, then a short run of the TPC-B-like script in
/// both query modes, with serialization failures retried, and none failing in the end.
#[test]
fn pgbench_initializes_and_runs_with_no_failed_transactions() {
    if Command::new("pgbench").arg("--version").output().is_err() {
        eprintln!("pgbench is not installed: skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Serve::start(dir.path());
    let port = server.port.to_string();
    let pgbench = |args: &[&str]| {
        let out = Command::new("pgbench")
            .args(["-h", "127.0.0.1", "-p", &port, "-U", "pmdb"])
            .args(args)
            .arg("pmdb")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "pgbench {args:?}:\n{text}");
        text
    };
    let init = pgbench(&["-i", "-s", "1"]);
    assert!(init.contains("done in"), "{init}");
    let rt = runtime();
    for mode in ["simple", "prepared"] {
        let run = pgbench(&["-T", "3", "-c", "2", "-M", mode, "--max-tries", "0"]);
        assert!(run.contains("number of failed transactions: 0 "), "{run}");
        let processed: i64 = run
            .lines()
            .find_map(|l| l.strip_prefix("number of transactions actually processed: "))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("{run}"));
        assert!(processed > 0, "{run}");
        // Every transaction moved one delta through an account, a teller and a branch,
        // and wrote it to the history (which each run empties first).
        rt.block_on(async {
            let c = connect(server.port).await;
            let one = |sql: &'static str| {
                let c = &c;
                async move {
                    c.query_one(sql, &[])
                        .await
                        .unwrap()
                        .get::<_, Option<i64>>(0)
                        .unwrap_or(0)
                }
            };
            let accounts = one("SELECT CAST(sum(abalance) AS BIGINT) FROM pgbench_accounts").await;
            assert_eq!(
                one("SELECT CAST(sum(tbalance) AS BIGINT) FROM pgbench_tellers").await,
                accounts
            );
            assert_eq!(
                one("SELECT CAST(sum(bbalance) AS BIGINT) FROM pgbench_branches").await,
                accounts
            );
            assert_eq!(one("SELECT count(*) FROM pgbench_history").await, processed);
        });
    }
}

/// TLS with psql, when psql and openssl are installed: a client that requires TLS gets
/// it from a server given a certificate, and is refused by one without.
#[test]
fn psql_connects_over_tls() {
    let have = |p: &str| Command::new(p).arg("version").output().is_ok();
    if !have("openssl") || Command::new("psql").arg("--version").output().is_err() {
        eprintln!("psql or openssl is not installed: skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let made = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let psql = |port: u16| {
        Command::new("psql")
            .arg(format!(
                "host=127.0.0.1 port={port} user=pmdb sslmode=require"
            ))
            .args(["-X", "-A", "-t", "-c", "SELECT 'over tls'"])
            .env("PGCONNECT_TIMEOUT", "10")
            .output()
            .unwrap()
    };
    let tls = Serve::start_with(
        &dir.path().join("db"),
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
    );
    let out = psql(tls.port);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "over tls");
    drop(tls);
    let plain = Serve::start(&dir.path().join("db"));
    let out = psql(plain.port);
    assert!(
        !out.status.success(),
        "sslmode=require against a server without TLS"
    );
}

/// Runs the Python client `script` (under `tests/clients/`) against a fresh `pmdb serve`
/// and checks it ends with `OK`; skipped when Python lacks one of `modules`.
fn client_runs_unchanged(script: &str, modules: &str) {
    let has = Command::new("python3")
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has {
        eprintln!("python3 with {modules} is not installed: skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Serve::start(dir.path());
    let app = format!("{}/tests/clients/{script}", env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("python3")
        .arg(app)
        .arg(server.port.to_string())
        .env("PGCONNECT_TIMEOUT", "10")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.trim_end().ends_with("OK"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An application written for PostgreSQL with SQLAlchemy 2's ORM and its default psycopg
/// dialect (`tests/clients/sqlalchemy_app.py`) runs unchanged against `pmdb serve`, when
/// Python has both (`pip install sqlalchemy "psycopg[binary]"`).
#[test]
fn a_sqlalchemy_application_runs_unchanged() {
    client_runs_unchanged("sqlalchemy_app.py", "sqlalchemy, psycopg");
}

/// A Django application's migrations (deferred foreign keys, columns added with
/// defaults and constraints to loaded tables, an index, a rename) and ORM
/// (`tests/clients/django_shop`) run unchanged against `pmdb serve`, when Python has
/// Django and psycopg (`pip install django "psycopg[binary]"`).
#[test]
fn a_django_application_migrates_and_runs_unchanged() {
    client_runs_unchanged("django_shop/run.py", "django, psycopg");
}

/// Django's own test runner (`tests/clients/django_shop/test_runner.py`) makes its test
/// database with CREATE DATABASE, migrates it, runs the application's tests in it
/// (blocks rolled back after each, savepoints, a flush) and drops it, against `pmdb
/// serve`, when Python has Django and psycopg.
#[test]
fn djangos_test_runner_makes_and_drops_its_test_database() {
    client_runs_unchanged("django_shop/test_runner.py", "django, psycopg");
}

/// A 50 MB text and a 20 MB bytea round-trip whole through `pmdb serve` with psycopg
/// (`tests/clients/large_values.py`), stored out of line in chunks.
#[test]
fn long_values_round_trip_through_the_server() {
    client_runs_unchanged("large_values.py", "psycopg");
}

/// A database CREATE DATABASE made is a database of its own on disk: its acknowledged
/// commits survive `kill -9` of the server, which opens it again at its next start;
/// what a crash left of a CREATE or a DROP under way is removed then, and DROP DATABASE
/// removes the database's files.
#[test]
fn made_databases_survive_kill_9_and_crash_leftovers_go() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime();
    let server = Serve::start(dir.path());
    rt.block_on(async {
        let main = connect(server.port).await;
        main.batch_execute("CREATE DATABASE shop").await.unwrap();
        let (shop, connection) = tokio_postgres::connect(
            &format!("host=127.0.0.1 port={} user=pmdb dbname=shop", server.port),
            NoTls,
        )
        .await
        .unwrap();
        tokio::spawn(connection);
        shop.batch_execute(
            "CREATE TABLE orders (id INT PRIMARY KEY, total INT);
             INSERT INTO orders SELECT g, g * 10 FROM generate_series(1, 100) g",
        )
        .await
        .unwrap();
    });
    let mut server = server;
    server.signal(9);
    server.child.wait().unwrap();
    drop(server);
    // As a crash in the middle of a CREATE DATABASE and of a DROP DATABASE leaves them.
    let store = dir.path().join("databases");
    for left in [".made-half-1", ".dropped-gone-1"] {
        std::fs::create_dir_all(store.join(left).join("sst")).unwrap();
        std::fs::write(store.join(left).join("extent-00000.pm"), b"partial").unwrap();
    }
    let server = Serve::start(dir.path());
    rt.block_on(async {
        let (shop, connection) = tokio_postgres::connect(
            &format!("host=127.0.0.1 port={} user=pmdb dbname=shop", server.port),
            NoTls,
        )
        .await
        .unwrap();
        let running = tokio::spawn(connection);
        let sum: i64 = shop
            .query_one("SELECT sum(total) FROM orders", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(sum, 50_500);
        drop(shop);
        let _ = running.await;
        let main = connect(server.port).await;
        let e = main.query("SELECT * FROM orders", &[]).await.unwrap_err();
        assert_eq!(e.code().map(|c| c.code()), Some("42P01"), "{e}");
        // The server sees the connection to shop end a moment after its client does.
        let mut dropped = main.batch_execute("DROP DATABASE shop").await;
        for _ in 0..100 {
            match &dropped {
                Err(e) if e.code().map(|c| c.code()) == Some("55006") => {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    dropped = main.batch_execute("DROP DATABASE shop").await;
                }
                _ => break,
            }
        }
        dropped.unwrap();
    });
    let left: Vec<String> = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A plain pg_dump of a PostgreSQL 15 database (`tests/clients/pg_dump_shop.sql`: an enum,
/// serial keys with their sequences in pg_dump's option order, a composite key, a
/// numeric CHECK, a view, a comment, COPY data with tabs and quotes, constraints and an
/// index added after the data, `OWNER TO` the owner, `ALTER SEQUENCE … OWNED BY`),
/// restored with psql into a database CREATE DATABASE made, when psql is installed. The
/// one statement pmdb does not take yet (`ALTER TYPE … OWNER TO`) is the only error; the
/// rows, the sequences' next values and owners and the keys are PostgreSQL's.
#[test]
fn a_pg_dump_restores_with_psql() {
    if psql_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Serve::start(dir.path());
    let psql = |database: &str, args: &[&str]| {
        Command::new("psql")
            .args(["-X", "-h", "127.0.0.1", "-p", &server.port.to_string()])
            .args(["-U", "pmdb", "-d", database])
            .args(args)
            .output()
            .unwrap()
    };
    let made = psql("pmdb", &["-c", "CREATE DATABASE shop"]);
    assert!(made.status.success(), "{made:?}");
    let dump = format!(
        "{}/tests/clients/pg_dump_shop.sql",
        env!("CARGO_MANIFEST_DIR")
    );
    let restored = psql("shop", &["-q", "-f", &dump]);
    let errors: Vec<String> = String::from_utf8_lossy(&restored.stderr)
        .lines()
        .filter(|l| l.contains("ERROR"))
        .map(str::to_owned)
        .collect();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(errors[0].contains("OWNER"), "{errors:#?}");
    let queries = "SELECT count(*), sum(total) FROM orders; \
                   SELECT count(*) FROM items; \
                   SELECT note FROM orders WHERE id = 7; \
                   SELECT state, count(*) FROM orders GROUP BY state ORDER BY state; \
                   INSERT INTO customers (email) VALUES ('new@x.org') RETURNING id; \
                   SELECT nextval('invoice_no'); \
                   SELECT count(*) FROM big_orders; \
                   SELECT pg_get_serial_sequence('orders', 'id'); \
                   DROP TABLE items; DROP VIEW big_orders; DROP TABLE orders; \
                   SELECT count(*) FROM pg_class WHERE relname = 'orders_id_seq';";
    let out = psql("shop", &["-A", "-t", "-F", "|", "-c", queries]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .collect::<Vec<_>>(),
        [
            "200|70350.00",
            "600",
            "tab\tand \"quotes\"",
            "new|66",
            "paid|67",
            "shipped|67",
            "51",
            "INSERT 0 1",
            "1001",
            "172",
            "public.orders_id_seq",
            "DROP TABLE",
            "DROP VIEW",
            "DROP TABLE",
            "0"
        ]
    );
    let duplicate = psql(
        "shop",
        &["-c", "INSERT INTO customers (email) VALUES ('c1@x.org')"],
    );
    assert!(
        String::from_utf8_lossy(&duplicate.stderr).contains("duplicate key"),
        "{duplicate:?}"
    );
}
