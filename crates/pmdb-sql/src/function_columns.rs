//! Set-returning functions in FROM as PostgreSQL names and zips them. One given an alias
//! and no column names names its one column by the alias: `FROM generate_series(1, 5)
//! AS i` has a column `i` (DataFusion calls it `value`), and so has `FROM unnest(a) AS
//! i`. `FROM unnest(a, b)` (Django's bulk inserts) zips its arrays into rows, the shorter
//! padded with NULLs: it becomes `(SELECT unnest(a) AS …, unnest(b) AS …)`, whose
//! columns are named apart even where the arrays are alike (DataFusion's own form
//! names them by their expressions and refuses two alike).

use std::ops::ControlFlow;

use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{
    Expr, Ident, Statement, TableAlias, TableAliasColumnDef, TableFactor, VisitMut, VisitorMut,
};

/// The functions of one column that DataFusion reads in FROM.
const ONE_COLUMN: &[&str] = &["generate_series", "range", "unnest"];

/// Names the column of each such function in `statement` by its alias, and makes the
/// series functions of its select lists give rows ([`crate::select_list_series`]).
pub(crate) fn as_postgresql(statement: &mut Statement) {
    let _ = statement.visit(&mut ByAlias);
    crate::select_list_series::expand(statement);
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
            TableFactor::UNNEST {
                array_exprs,
                alias,
                with_offset: false,
                with_ordinality: false,
                ..
            } => {
                if let Some(zipped) = zipped(array_exprs, alias.take()) {
                    *factor = zipped;
                }
                return ControlFlow::Continue(());
            }
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

/// `unnest(e1, e2, …) [AS t(c1, c2, …)]` as a derived table of one `unnest` per array,
/// each named by its column alias, else `unnest`, `unnest_2`, ….
fn zipped(arrays: &[Expr], alias: Option<TableAlias>) -> Option<TableFactor> {
    let items: Vec<String> = arrays
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let name = alias.as_ref().and_then(|a| a.columns.get(i)).map_or_else(
                || match i {
                    0 => "unnest".to_owned(),
                    _ => format!("unnest_{}", i + 1),
                },
                |c| c.name.value.clone(),
            );
            format!("unnest({e}) AS {}", Ident::with_quote('"', name))
        })
        .collect();
    let parsed = crate::session::parse(&format!("SELECT {}", items.join(", "))).ok()?;
    let Some(DfStatement::Statement(statement)) = parsed.into_iter().next() else {
        return None;
    };
    let Statement::Query(subquery) = *statement else {
        return None;
    };
    let name = alias.map_or_else(|| Ident::new("unnest"), |a| a.name);
    Some(TableFactor::Derived {
        lateral: false,
        subquery,
        alias: Some(TableAlias {
            explicit: true,
            name,
            columns: Vec::new(),
            at: None,
        }),
        sample: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(sql: &str) -> String {
        let mut s = crate::session::parse(sql).unwrap().pop_front().unwrap();
        let datafusion::sql::parser::Statement::Statement(s) = &mut s else {
            panic!("a statement");
        };
        as_postgresql(s);
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
        assert_eq!(
            named("SELECT * FROM unnest($1, $1)"),
            "SELECT * FROM (SELECT unnest($1) AS \"unnest\", unnest($1) AS \"unnest_2\") AS unnest"
        );
        assert_eq!(
            named("SELECT * FROM unnest(a, b) AS t(x, y)"),
            "SELECT * FROM (SELECT unnest(a) AS \"x\", unnest(b) AS \"y\") AS t"
        );
    }
}
