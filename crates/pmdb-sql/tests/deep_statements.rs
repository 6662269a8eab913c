//! Statements whose expressions nest deep: chains of operators, of ORs and of UNIONs as
//! long as pmdb takes run on a thread with the stack a server's connection has (the test
//! runs a tenth of the limit on a fiftieth of that stack: the stack a statement needs
//! grows with its depth, so the stack holds the limit five times over; a debug build
//! plans chains as long as the limit far too slowly for a test), and a statement deeper
//! than the limit is refused with 54001 before it is parsed, where it once overflowed the
//! stack and aborted the process.

mod common;

use common::Fixture;
use pmdb_sql::{MAX_STATEMENT_DEPTH, STATEMENT_STACK};

/// Runs `f` on a thread with a fiftieth of the stack a connection has.
fn on_a_fiftieth_of_the_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(STATEMENT_STACK / 50)
        .spawn(f)
        .expect("a thread starts")
        .join()
        .expect("the statements ran");
}

fn chain(term: &str, op: &str, terms: usize) -> String {
    vec![term; terms].join(op)
}

#[test]
fn chains_a_tenth_as_deep_as_the_limit_run_on_a_fiftieth_of_the_stack() {
    on_a_fiftieth_of_the_stack(|| {
        let depth = MAX_STATEMENT_DEPTH / 10;
        let f = Fixture::new("CREATE TABLE t (a INT PRIMARY KEY, b INT)");
        let mut s = f.session();
        f.tag(&mut s, "INSERT INTO t VALUES (1, 10), (2, 20), (3, 30)");
        let sum = format!("SELECT {}", chain("1", " + ", depth));
        assert_eq!(f.rows(&mut s, &sum), [depth.to_string()]);
        // Each term has two operators: `=` and the OR joining it.
        let ors = (0..depth / 2)
            .map(|i| format!("b = {i}"))
            .collect::<Vec<_>>()
            .join(" OR ");
        assert_eq!(
            f.rows(&mut s, &format!("SELECT a FROM t WHERE {ors} ORDER BY a")),
            ["1", "2", "3"]
        );
        let union = chain("SELECT a FROM t", " UNION ALL ", depth);
        assert_eq!(
            f.rows(&mut s, &format!("SELECT count(*) FROM ({union}) u")),
            [(3 * depth).to_string()]
        );
        let updated = format!(
            "UPDATE t SET b = {} WHERE a = 1",
            chain("b", " - ", depth / 2)
        );
        assert_eq!(f.tag(&mut s, &updated), "UPDATE 1");
        assert_eq!(
            f.rows(&mut s, "SELECT b FROM t WHERE a = 1"),
            [(10 - 10 * (depth as i64 / 2 - 1)).to_string()]
        );
    });
}

#[test]
fn a_statement_deeper_than_the_limit_is_refused_with_54001() {
    let f = Fixture::new("CREATE TABLE t (a INT PRIMARY KEY)");
    let mut s = f.session();
    for deep in [
        format!("SELECT {}", chain("1", " + ", MAX_STATEMENT_DEPTH + 1)),
        format!(
            "SELECT a FROM t WHERE {}",
            chain("a = 1", " OR ", MAX_STATEMENT_DEPTH)
        ),
        chain("SELECT 1", " UNION ALL ", MAX_STATEMENT_DEPTH + 1),
    ] {
        let err = f.try_run(&mut s, &deep).expect_err("too deep");
        assert_eq!(err.sqlstate(), "54001", "{err}");
        assert!(
            err.to_string().contains("stack depth limit exceeded"),
            "{err}"
        );
    }
    // A long list is no deeper than one of its items.
    let list = vec!["1"; 4 * MAX_STATEMENT_DEPTH].join(", ");
    assert_eq!(
        f.rows(
            &mut s,
            &format!("SELECT count(*) FROM t WHERE a IN ({list})")
        ),
        ["0"]
    );
}
