//! The hstore extension's type on the wire, as drivers use it: a parameter cast to
//! hstore described as the type (by its name and schema, which drivers look up), values
//! in both formats as PostgreSQL writes them, and the type in `pg_type` only while the
//! extension is installed.

mod common;

use std::collections::HashMap;

use common::TestServer;
use tokio_postgres::SimpleQueryMessage;

type Pairs = HashMap<String, Option<String>>;

#[test]
fn values_go_both_ways_in_binary_and_text() {
    let server = TestServer::trusting();
    server.rt.block_on(async {
        let c = server.connect().await;
        c.batch_execute(
            "CREATE EXTENSION hstore; \
             CREATE TABLE kv (id INT PRIMARY KEY, h hstore); \
             INSERT INTO kv VALUES (1, 'b=>2, a=>NULL')",
        )
        .await
        .unwrap();
        let echo = c.prepare("SELECT $1::hstore AS h").await.unwrap();
        assert_eq!(echo.params()[0].name(), "hstore");
        assert_eq!(echo.params()[0].schema(), "public");
        assert_eq!(echo.columns()[0].type_(), &echo.params()[0]);
        let given: Pairs = [
            ("ham".to_owned(), Some("spam".to_owned())),
            ("n".into(), None),
        ]
        .into_iter()
        .collect();
        let back: Pairs = c.query_one(&echo, &[&given]).await.unwrap().get(0);
        assert_eq!(back, given);
        let stored: Pairs = c
            .query_one("SELECT h FROM kv WHERE id = 1", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(
            stored,
            [
                ("a".to_owned(), None),
                ("b".to_owned(), Some("2".to_owned()))
            ]
            .into_iter()
            .collect::<Pairs>()
        );
        let insert = c.prepare("INSERT INTO kv VALUES ($1, $2)").await.unwrap();
        c.execute(&insert, &[&2i32, &given]).await.unwrap();
        let text = c
            .simple_query("SELECT h FROM kv WHERE id = 2")
            .await
            .unwrap()
            .into_iter()
            .find_map(|m| match m {
                SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
                _ => None,
            });
        assert_eq!(text.as_deref(), Some(r#""n"=>NULL, "ham"=>"spam""#));
    });
}

#[test]
fn the_type_is_in_pg_type_while_the_extension_is_installed() {
    let server = TestServer::trusting();
    server.rt.block_on(async {
        let c = server.connect().await;
        let types = "SELECT t.typname, t.typelem = e.oid FROM pg_type t \
                     LEFT JOIN pg_type e ON e.typname = 'hstore' \
                     WHERE t.typname IN ('hstore', '_hstore') ORDER BY t.typname";
        let installed = "SELECT extname, extversion FROM pg_extension ORDER BY extname";
        let names = |rows: Vec<tokio_postgres::Row>| -> Vec<String> {
            rows.iter().map(|r| r.get::<_, String>(0)).collect()
        };
        assert!(c.query(types, &[]).await.unwrap().is_empty());
        assert_eq!(names(c.query(installed, &[]).await.unwrap()), ["plpgsql"]);
        c.batch_execute("CREATE EXTENSION hstore").await.unwrap();
        let rows = c.query(types, &[]).await.unwrap();
        let shown: Vec<(String, bool)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        assert_eq!(
            shown,
            [("_hstore".to_owned(), true), ("hstore".to_owned(), false)]
        );
        assert_eq!(
            names(c.query(installed, &[]).await.unwrap()),
            ["hstore", "plpgsql"]
        );
        c.batch_execute("DROP EXTENSION hstore").await.unwrap();
        assert!(c.query(types, &[]).await.unwrap().is_empty());
    });
}
