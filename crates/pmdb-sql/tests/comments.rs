//! `COMMENT ON TABLE | COLUMN | CONSTRAINT`: kept in the table's definition across a
//! reopen, following renames, gone with their constraint or column, transactional as
//! all DDL, an empty text removing one; comments on what pmdb keeps none on refused.

use pmdb_engine::{Db, DbOptions};
use pmdb_sql::SqlEngine;

#[test]
fn comments_are_kept_with_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let open = || SqlEngine::open(Db::open(dir.path(), DbOptions::small()).unwrap()).unwrap();
    {
        let sql = open();
        sql.execute(
            "CREATE TABLE t (id INT PRIMARY KEY, v TEXT, w INT CONSTRAINT w_pos CHECK (w > 0),
                             gone INT);
             COMMENT ON TABLE t IS 'the table';
             COMMENT ON COLUMN t.v IS 'a column';
             COMMENT ON COLUMN t.gone IS 'dropped with its column';
             COMMENT ON CONSTRAINT w_pos ON t IS 'positive';
             COMMENT ON CONSTRAINT t_pkey ON public.t IS 'the key';
             ALTER TABLE t RENAME COLUMN v TO vv;
             ALTER TABLE t DROP COLUMN gone;
             BEGIN; COMMENT ON TABLE t IS 'rolled back'; ROLLBACK;",
        )
        .unwrap();
    }
    let sql = open();
    let def = sql
        .catalog()
        .table(&pmdb_sql::names::RelName::public("t"))
        .unwrap()
        .def()
        .clone();
    assert_eq!(def.comment.as_deref(), Some("the table"));
    let comments: Vec<_> = def
        .columns
        .iter()
        .map(|c| (c.name.as_str(), c.comment.as_deref()))
        .collect();
    assert_eq!(
        comments,
        [("id", None), ("vv", Some("a column")), ("w", None)]
    );
    assert_eq!(
        def.constraint_comments,
        [
            ("w_pos".to_owned(), "positive".to_owned()),
            ("t_pkey".to_owned(), "the key".to_owned())
        ]
    );
    sql.execute(
        "COMMENT ON COLUMN t.vv IS '';
         COMMENT ON TABLE t IS NULL;
         ALTER TABLE t DROP CONSTRAINT w_pos;",
    )
    .unwrap();
    let def = sql
        .catalog()
        .table(&pmdb_sql::names::RelName::public("t"))
        .unwrap()
        .def()
        .clone();
    assert!(def.comment.is_none() && def.columns.iter().all(|c| c.comment.is_none()));
    assert_eq!(
        def.constraint_comments,
        [("t_pkey".to_owned(), "the key".to_owned())]
    );
    let state = |q: &str| sql.execute(q).unwrap_err().sqlstate().to_owned();
    assert_eq!(state("COMMENT ON CONSTRAINT nope ON t IS 'x'"), "42704");
    assert_eq!(state("COMMENT ON COLUMN t.nope IS 'x'"), "42703");
    assert_eq!(state("COMMENT ON TABLE nope IS 'x'"), "42P01");
    assert_eq!(state("COMMENT ON INDEX t_pkey IS 'x'"), "0A000");
    assert_eq!(state("COMMENT ON SCHEMA public IS 'x'"), "0A000");
}
