//! Arrays on the wire, as drivers use them: array parameters in both formats (`= ANY($1)`
//! with a list), array results as PostgreSQL writes them, array types in `pg_type` for
//! the drivers that look types up, and `current_setting`, which one of them calls first.
//! Domains, which those drivers look up too.

mod common;

use common::{TestServer, sqlstate};
use tokio_postgres::SimpleQueryMessage;
use tokio_postgres::types::Type;

async fn first_text(client: &tokio_postgres::Client, sql: &str) -> Vec<Option<String>> {
    let messages = client.simple_query(sql).await.unwrap();
    let row = messages
        .iter()
        .find_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some(r),
            _ => None,
        })
        .expect("a row");
    (0..row.len())
        .map(|i| row.get(i).map(str::to_owned))
        .collect()
}

#[test]
fn array_parameters_are_lists_and_any_takes_them() {
    let server = TestServer::trusting();
    server.rt.block_on(async {
        let c = server.connect().await;
        c.batch_execute(
            "CREATE TABLE t (id INT PRIMARY KEY, v TEXT); \
             INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')",
        )
        .await
        .unwrap();
        let any = c
            .prepare("SELECT v FROM t WHERE id = ANY($1) ORDER BY id")
            .await
            .unwrap();
        // Described as an array of the column's type, as PostgreSQL infers it.
        assert_eq!(any.params(), &[Type::INT4_ARRAY]);
        let picked: Vec<String> = c
            .query(&any, &[&vec![3i32, 1]])
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(picked, ["a", "c"]);
        assert!(
            c.query(&any, &[&Vec::<i32>::new()])
                .await
                .unwrap()
                .is_empty()
        );
        assert!(
            c.query(&any, &[&None::<Vec<i32>>])
                .await
                .unwrap()
                .is_empty()
        );

        let none = c
            .query(
                "SELECT v FROM t WHERE id <> ALL($1) ORDER BY id",
                &[&vec![1i32, 3]],
            )
            .await
            .unwrap();
        assert_eq!(
            none.iter()
                .map(|r| r.get::<_, String>(0))
                .collect::<Vec<_>>(),
            ["b"]
        );

        let texts = vec![Some("x y".to_owned()), None, Some(String::new())];
        let row = c.query_one("SELECT $1::text[]", &[&texts]).await.unwrap();
        assert_eq!(row.columns()[0].type_(), &Type::TEXT_ARRAY);
        assert_eq!(row.get::<_, Vec<Option<String>>>(0), texts);

        let agg = c
            .query_one("SELECT array_agg(id ORDER BY id DESC) FROM t", &[])
            .await
            .unwrap();
        assert_eq!(agg.columns()[0].type_(), &Type::INT4_ARRAY);
        assert_eq!(agg.get::<_, Vec<i32>>(0), [3, 2, 1]);
    });
}

#[test]
fn array_results_in_text_read_as_postgresql_writes_them() {
    let server = TestServer::trusting();
    server.rt.block_on(async {
        let c = server.connect().await;
        let row = first_text(
            &c,
            r#"SELECT ARRAY['a b', NULL, '', 'x"y', 'NULL', 'c,d'], ARRAY[1, 2], '{}'::int[], ARRAY[ARRAY[1, 2], ARRAY[3, 4]], '{ 5 , 6 }'::bigint[]"#,
        )
        .await;
        assert_eq!(
            row,
            [
                Some(r#"{"a b",NULL,"","x\"y","NULL","c,d"}"#.to_owned()),
                Some("{1,2}".to_owned()),
                Some("{}".to_owned()),
                Some("{{1,2},{3,4}}".to_owned()),
                Some("{5,6}".to_owned()),
            ]
        );
        // Two dimensions are refused, not flattened: pmdb's arrays have one.
        for (bad, code) in [("'{1,2'", "22P02"), ("'{1,x}'", "22P02"), ("'{{1},{2}}'", "0A000")] {
            let e = c
                .simple_query(&format!("SELECT {bad}::int[]"))
                .await
                .unwrap_err();
            assert_eq!(sqlstate(&e), code, "{bad}: {e}");
        }
    });
}

#[test]
fn array_types_are_in_pg_type_and_found_by_oid_arrays() {
    let server = TestServer::trusting();
    server.rt.block_on(async {
        let c = server.connect().await;
        // asyncpg's type lookup: an oid[] parameter, oid columns.
        let rows = c
            .query(
                "SELECT t.typname, e.typname FROM pg_catalog.pg_type t \
                 LEFT JOIN pg_catalog.pg_type e ON t.typelem = e.oid AND t.typelem <> 0 \
                 WHERE t.oid = ANY($1::oid[]) ORDER BY t.oid",
                &[&vec![1007u32, 23]],
            )
            .await
            .unwrap();
        let names: Vec<(String, Option<String>)> =
            rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        assert_eq!(
            names,
            [
                ("int4".to_owned(), None),
                ("_int4".to_owned(), Some("int4".to_owned()))
            ]
        );
        let array = c
            .query_one(
                "SELECT typarray FROM pg_catalog.pg_type WHERE typname = 'text'",
                &[],
            )
            .await
            .unwrap();
        assert_eq!(array.columns()[0].type_(), &Type::OID);
        assert_eq!(array.get::<_, u32>(0), 1009);
    });
}

#[test]
fn current_setting_reads_the_connections_settings() {
    let server = TestServer::trusting();
    server.rt.block_on(async {
        let c = server.connect().await;
        c.batch_execute("SET application_name = 'shop'")
            .await
            .unwrap();
        let row = first_text(
            &c,
            "SELECT current_setting('application_name'), current_setting('nope', true)",
        )
        .await;
        assert_eq!(row, [Some("shop".to_owned()), None]);
        let e = c
            .simple_query("SELECT current_setting('no_such_setting')")
            .await
            .unwrap_err();
        assert_eq!(sqlstate(&e), "42704");
        c.batch_execute("BEGIN; SET application_name = 'other'; ROLLBACK")
            .await
            .unwrap();
        let row = first_text(&c, "SELECT current_setting('Application_Name')").await;
        assert_eq!(row, [Some("shop".to_owned())]);
        // Another connection has its own.
        let other = server.connect().await;
        let row = first_text(&other, "SELECT current_setting('application_name')").await;
        assert_eq!(row, [Some(String::new())]);
    });
}

#[test]
fn catalog_column_numbers_are_arrays_that_unnest_with_their_subscripts() {
    let server = TestServer::trusting();
    server.rt.block_on(async {
        let c = server.connect().await;
        c.batch_execute(
            "CREATE TABLE par (a INT, b INT, PRIMARY KEY (b, a)); \
             CREATE TABLE ch (id INT PRIMARY KEY, pa INT, pb INT, \
                              FOREIGN KEY (pb, pa) REFERENCES par (b, a))",
        )
        .await
        .unwrap();
        // conkey and confkey are int2[], as PostgreSQL's, in the key's column order.
        let fk = c
            .query_one(
                "SELECT conkey, confkey FROM pg_constraint \
                 WHERE conrelid = 'ch'::regclass AND contype = 'f'",
                &[],
            )
            .await
            .unwrap();
        assert_eq!(fk.get::<_, Vec<i16>>(0), [3, 2]);
        assert_eq!(fk.get::<_, Vec<i16>>(1), [2, 1]);
        // SQLAlchemy's primary key reflection: unnest(indkey) beside its subscripts.
        let rows = c
            .query(
                "SELECT array_agg(a.attname ORDER BY k.ord) FROM pg_attribute a \
                 JOIN (SELECT i.indrelid AS rel, unnest(i.indkey) AS attnum, \
                              generate_subscripts(i.indkey, 1) AS ord \
                       FROM pg_index i WHERE i.indrelid = 'par'::regclass) k \
                   ON a.attrelid = k.rel AND a.attnum = k.attnum",
                &[],
            )
            .await
            .unwrap();
        assert_eq!(rows[0].get::<_, Vec<String>>(0), ["b", "a"]);
        // An index's operator classes and options, one per column (the type's own
        // order, ascending), and SQLAlchemy's table options: no tablespace, heap.
        let index = c
            .query_one(
                "SELECT i.indclass, i.indoption, t.spcname, current_setting('default_table_access_method') \
                 FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid \
                 LEFT JOIN pg_tablespace t ON t.oid = c.reltablespace \
                 WHERE i.indrelid = 'par'::regclass",
                &[],
            )
            .await
            .unwrap();
        assert_eq!(index.get::<_, Vec<u32>>(0), [0, 0]);
        assert_eq!(index.get::<_, Vec<i16>>(1), [0, 0]);
        assert_eq!(index.get::<_, Option<String>>(2), None);
        assert_eq!(index.get::<_, String>(3), "heap");
        let classes = c
            .query("SELECT oid, opcname FROM pg_opclass WHERE NOT opcdefault", &[])
            .await
            .unwrap();
        assert!(classes.is_empty());
        // pg_index's are int2vector and oidvector, whose text is the numbers with spaces
        // between them (SQLAlchemy's psycopg dialect splits it).
        let sql = "SELECT indkey, indclass FROM pg_index WHERE indrelid = 'par'::regclass";
        let described = c.prepare(sql).await.unwrap();
        let types: Vec<&Type> = described.columns().iter().map(|c| c.type_()).collect();
        assert_eq!(types, [&Type::INT2_VECTOR, &Type::OID_VECTOR]);
        let text: Vec<Option<String>> = c
            .simple_query(sql)
            .await
            .unwrap()
            .into_iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(r) => Some(
                    (0..2)
                        .map(|i| r.get(i).map(str::to_owned))
                        .collect::<Vec<_>>(),
                ),
                _ => None,
            })
            .flatten()
            .collect();
        assert_eq!(text, [Some("2 1".to_owned()), Some("0 0".to_owned())]);
        // A catalog's own oid, as clients name pg_description's classoid.
        let class = c
            .query_one(
                "SELECT 'pg_catalog.pg_class'::regclass::oid, 'pg_constraint'::regclass::oid",
                &[],
            )
            .await
            .unwrap();
        assert_eq!((class.get::<_, u32>(0), class.get::<_, u32>(1)), (1259, 2606));
        // A series in a select list gives rows, named as PostgreSQL names it.
        let series = c.query("SELECT generate_series(5, 7)", &[]).await.unwrap();
        assert_eq!(series.len(), 3);
        assert_eq!(series[0].columns()[0].name(), "generate_series");
    });
}

/// A parameter cast to a type Arrow holds as text (json, jsonb, uuid, an enum type) or to
/// an array of one is described as that type, as PostgreSQL describes it, so a driver
/// that encodes by the described type (asyncpg, tokio-postgres) sends it as one; the
/// array comes back as an array of that type, its elements read as the type (a label of
/// the enum, valid json).
#[test]
fn parameters_cast_to_text_held_types_and_their_arrays_are_described_as_those_types() {
    let server = TestServer::trusting();
    server.rt.block_on(async {
        let c = server.connect().await;
        c.batch_execute("CREATE TYPE mood AS ENUM ('sad', 'ok')")
            .await
            .unwrap();
        for (sql, param, column) in [
            ("SELECT $1::json", "json", "json"),
            ("SELECT $1::jsonb", "jsonb", "jsonb"),
            ("SELECT $1::uuid", "uuid", "uuid"),
            ("SELECT $1::mood", "mood", "mood"),
            ("SELECT $1::json[]", "_json", "_json"),
            ("SELECT $1::jsonb[]", "_jsonb", "_jsonb"),
            ("SELECT $1::uuid[]", "_uuid", "_uuid"),
            ("SELECT $1::mood[]", "_mood", "_mood"),
            ("SELECT '{sad,ok}'::mood[]", "", "_mood"),
        ] {
            let stmt = c.prepare(sql).await.unwrap();
            let params: Vec<&str> = stmt.params().iter().map(Type::name).collect();
            let expected: Vec<&str> = [param].into_iter().filter(|p| !p.is_empty()).collect();
            assert_eq!(params, expected, "{sql}");
            assert_eq!(stmt.columns()[0].type_().name(), column, "{sql}");
        }
        // The elements in binary, as the element type writes them (a uuid in 16 bytes,
        // a jsonb after its version byte): read back by tokio-postgres's decoders.
        let moods = c.prepare("SELECT $1::mood[]").await.unwrap();
        let mood = moods.params()[0].clone();
        assert!(matches!(mood.kind(), tokio_postgres::types::Kind::Array(e) if e.name() == "mood"));
        let elements = |sql: &'static str| {
            let c = &c;
            async move {
                let row = c.query_one(sql, &[]).await.unwrap();
                row.get::<_, Vec<Element>>(0)
                    .into_iter()
                    .map(|e| e.0)
                    .collect::<Vec<_>>()
            }
        };
        assert_eq!(
            elements("SELECT ARRAY['ok', 'sad']::mood[]").await,
            [b"ok".to_vec(), b"sad".to_vec()]
        );
        let uuid = elements("SELECT '{14058ad9-0118-4b7e-ac15-01bc13e2ccd1}'::uuid[]").await;
        assert_eq!(uuid[0].len(), 16);
        assert_eq!(uuid[0][..2], [0x14, 0x05]);
        assert_eq!(
            elements(r#"SELECT '{"[1]"}'::jsonb[]"#).await,
            [b"\x01[1]".to_vec()]
        );
        let uuids: Vec<String> = first_text(
            &c,
            "SELECT '{14058AD9-0118-4B7E-AC15-01BC13E2CCD1}'::uuid[]",
        )
        .await
        .into_iter()
        .flatten()
        .collect();
        assert_eq!(uuids, ["{14058ad9-0118-4b7e-ac15-01bc13e2ccd1}"]);
        let jsonb: Vec<Option<String>> =
            first_text(&c, r#"SELECT '{"{\"a\": 1}", NULL}'::jsonb[]"#).await;
        assert_eq!(jsonb, [Some(r#"{"{\"a\": 1}",NULL}"#.to_owned())]);
        // Each element is read as the type: 22P02 for what is not one.
        for bad in [
            "SELECT '{meh}'::mood[]",
            "SELECT '{x}'::json[]",
            "SELECT '{1}'::uuid[]",
        ] {
            let err = c.simple_query(bad).await.unwrap_err();
            assert_eq!(sqlstate(&err), "22P02", "{bad}");
        }
    });
}

/// Domains as PostgreSQL describes them: a parameter cast to a domain is of the domain
/// (a driver looks it up in `pg_type`: typtype `d`, its base type), a result column of
/// one is of the base type; a bound value is checked by the domain's rules.
#[test]
fn parameters_cast_to_a_domain_are_of_the_domain_and_results_of_its_base_type() {
    let server = TestServer::trusting();
    server.rt.block_on(async {
        let c = server.connect().await;
        c.batch_execute(
            "CREATE DOMAIN positive AS int CHECK (VALUE > 0);
             CREATE DOMAIN small positive NOT NULL;
             CREATE DOMAIN doc AS json",
        )
        .await
        .unwrap();
        let stmt = c.prepare("SELECT $1::small, $2::doc").await.unwrap();
        // Each a domain over its base: `small` over `positive`, `doc` over json.
        let over = |t: &Type| match t.kind() {
            tokio_postgres::types::Kind::Domain(base) => base.name().to_owned(),
            other => format!("{other:?}"),
        };
        let params: Vec<(&str, String)> = stmt.params().iter().map(|t| (t.name(), over(t))).collect();
        assert_eq!(
            params,
            [("small", "positive".to_owned()), ("doc", "json".to_owned())]
        );
        let columns: Vec<&Type> = stmt.columns().iter().map(|c| c.type_()).collect();
        assert_eq!(columns, [&Type::INT4, &Type::JSON]);
        let row = c
            .query_one(&stmt, &[&Raw(7i32.to_be_bytes().to_vec()), &Raw(b"[1]".to_vec())])
            .await
            .unwrap();
        assert_eq!(row.get::<_, i32>(0), 7);
        let refused = c
            .query_one(&stmt, &[&Raw((-7i32).to_be_bytes().to_vec()), &Raw(b"1".to_vec())])
            .await
            .unwrap_err();
        assert_eq!(sqlstate(&refused), "23514");
        let row = c
            .query_one(
                "SELECT typtype, typbasetype::int8, typnotnull FROM pg_type WHERE typname = 'small'",
                &[],
            )
            .await
            .unwrap();
        let positive: i64 = c
            .query_one("SELECT oid::int8 FROM pg_type WHERE typname = 'positive'", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(row.get::<_, i8>(0), b'd' as i8);
        assert_eq!(row.get::<_, i64>(1), positive);
        assert!(row.get::<_, bool>(2));
    });
}

/// A parameter's bytes as given, whatever its type.
#[derive(Debug)]
struct Raw(Vec<u8>);

impl tokio_postgres::types::ToSql for Raw {
    fn to_sql(
        &self,
        _: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<tokio_postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        out.extend_from_slice(&self.0);
        Ok(tokio_postgres::types::IsNull::No)
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    tokio_postgres::types::to_sql_checked!();
}

/// One element of an array result, its bytes in binary as the server wrote them.
struct Element(Vec<u8>);

impl<'a> tokio_postgres::types::FromSql<'a> for Element {
    fn from_sql(
        _: &Type,
        raw: &'a [u8],
    ) -> Result<Element, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Element(raw.to_vec()))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}
