//! A set-returning function in FROM given an alias and no column names names its one
//! column by the alias, as in PostgreSQL: `FROM generate_series(1, 5) AS i` has a
//! column `i` (DataFusion calls it `value`), and so has `FROM unnest(a) AS i`.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Statement, TableAlias, TableAliasColumnDef, TableFactor, VisitMut, VisitorMut,
};

/// The functions of one column that DataFusion reads in FROM.
const ONE_COLUMN: &[&str] = &["generate_series", "range", "unnest"];

/// Names the column of each such function in `statement` by its alias.
pub(crate) fn name_by_alias(statement: &mut Statement) {
    let _ = statement.visit(&mut ByAlias);
}

struct ByAlias;

impl VisitorMut for ByAlias {
    type Break = ();

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        let alias = match factor {
            TableFactor::Table {
                name,
                args: Some(_),
                alias,
                ..
            } if name
                .0
                .last()
                .and_then(|p| p.as_ident())
                .is_some_and(|f| ONE_COLUMN.contains(&f.value.to_lowercase().as_str())) =>
            {
                alias
            }
            TableFactor::UNNEST {
                array_exprs,
                alias,
                with_offset: false,
                ..
            } if array_exprs.len() == 1 => alias,
            _ => return ControlFlow::Continue(()),
        };
        if let Some(TableAlias { name, columns, .. }) = alias
            && columns.is_empty()
        {
            columns.push(TableAliasColumnDef::from_name(name.value.clone()));
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(sql: &str) -> String {
        let mut s = crate::session::parse(sql).unwrap().pop_front().unwrap();
        let datafusion::sql::parser::Statement::Statement(s) = &mut s else {
            panic!("a statement");
        };
        name_by_alias(s);
        s.to_string()
    }

    #[test]
    fn one_column_functions_take_their_alias_as_column_name() {
        assert_eq!(
            named("SELECT i FROM generate_series(1, 5) AS i"),
            "SELECT i FROM generate_series(1, 5) AS i (i)"
        );
        assert_eq!(
            named("SELECT x FROM generate_series(1, 5) AS g(x)"),
            "SELECT x FROM generate_series(1, 5) AS g (x)"
        );
        assert_eq!(named("SELECT a FROM t AS i"), "SELECT a FROM t AS i");
    }
}
