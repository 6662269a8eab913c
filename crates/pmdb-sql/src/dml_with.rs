//! A WITH clause before INSERT, UPDATE or DELETE (`WITH c AS (…) UPDATE t … FROM c`),
//! which the parser reads as a query whose body is the statement and DataFusion does
//! not plan. [`unwrap`] makes it the statement itself: an INSERT's source query takes
//! the WITH clause (its common table expressions run once, as PostgreSQL runs them);
//! in an UPDATE or DELETE each name of a common table expression becomes its query, as
//! a derived table (PostgreSQL folds such a query into the statement too when nothing
//! in it has side effects). A recursive WITH, and a common table expression that
//! changes rows (`WITH d AS (DELETE … RETURNING …)`), are refused with 0A000.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Cte, Query, SetExpr, Statement, TableAlias, TableFactor, VisitMut, VisitorMut, With,
};

use crate::error::{Result, SqlError};
use crate::names::ident_name;

/// `statement` without the query around a data-changing statement, if it is one.
pub(crate) fn unwrap(statement: &mut Statement) -> Result<()> {
    let Statement::Query(query) = statement else {
        return Ok(());
    };
    let inner = match query.body.as_ref() {
        SetExpr::Insert(s) | SetExpr::Update(s) | SetExpr::Delete(s) => s.clone(),
        _ => return Ok(()),
    };
    let Some(with) = query.with.take() else {
        return Ok(());
    };
    *statement = with_clause_applied(with, inner)?;
    Ok(())
}

fn with_clause_applied(with: With, mut statement: Statement) -> Result<Statement> {
    if with.recursive {
        return Err(SqlError::unsupported(
            "WITH RECURSIVE before INSERT, UPDATE or DELETE",
        ));
    }
    if with.cte_tables.iter().any(|c| {
        matches!(
            c.query.body.as_ref(),
            SetExpr::Insert(_) | SetExpr::Update(_) | SetExpr::Delete(_)
        )
    }) {
        return Err(SqlError::unsupported(
            "a WITH query that changes rows (INSERT, UPDATE or DELETE in WITH)",
        ));
    }
    match &mut statement {
        Statement::Insert(insert) => {
            if let Some(source) = insert.source.as_mut() {
                match source.with.as_mut() {
                    Some(own) => {
                        let mut ctes = with.cte_tables;
                        ctes.append(&mut own.cte_tables);
                        own.cte_tables = ctes;
                    }
                    None => source.with = Some(with),
                }
            }
        }
        Statement::Update(update) => {
            let inliner = Inliner::of(with.cte_tables);
            // The table updated is a table, whatever a common table expression is named.
            let target = update.table.clone();
            visit(&mut statement, inliner)?;
            if let Statement::Update(update) = &mut statement {
                update.table = target;
            }
        }
        Statement::Delete(delete) => {
            let inliner = Inliner::of(with.cte_tables);
            let target = delete.from.clone();
            visit(&mut statement, inliner)?;
            if let Statement::Delete(delete) = &mut statement {
                delete.from = target;
            }
        }
        _ => {}
    }
    Ok(statement)
}

fn visit(statement: &mut Statement, mut inliner: Inliner) -> Result<()> {
    match statement.visit(&mut inliner) {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// Replaces each reference to a common table expression with its query.
struct Inliner {
    /// Each expression's name and its query (which names only those before it).
    ctes: Vec<(String, Cte)>,
}

impl Inliner {
    fn of(ctes: Vec<Cte>) -> Inliner {
        let mut inliner = Inliner { ctes: Vec::new() };
        for mut cte in ctes {
            // Earlier expressions are already in their final form.
            let _ = cte.query.visit(&mut inliner);
            inliner.ctes.push((ident_name(&cte.alias.name), cte));
        }
        inliner
    }

    fn derived(&self, name: &str, alias: Option<&TableAlias>) -> Option<TableFactor> {
        let (_, cte) = self.ctes.iter().rev().find(|(n, _)| n == name)?;
        let alias = match alias {
            Some(a) if !a.columns.is_empty() => a.clone(),
            Some(a) => TableAlias {
                name: a.name.clone(),
                ..cte.alias.clone()
            },
            None => cte.alias.clone(),
        };
        Some(TableFactor::Derived {
            lateral: false,
            subquery: Box::new(Query::clone(&cte.query)),
            alias: Some(alias),
            sample: None,
        })
    }
}

impl VisitorMut for Inliner {
    type Break = SqlError;

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<SqlError> {
        if let TableFactor::Table {
            name,
            alias,
            args: None,
            ..
        } = factor
            && let [part] = name.0.as_slice()
            && let Some(ident) = part.as_ident()
            && let Some(derived) = self.derived(&ident_name(ident), alias.as_ref())
        {
            *factor = derived;
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn unwrapped(sql: &str) -> Result<String> {
        let mut s = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        unwrap(&mut s)?;
        Ok(s.to_string())
    }

    #[test]
    fn the_statement_takes_the_with_clause() {
        assert_eq!(
            unwrapped("WITH c AS (SELECT 1 AS a) INSERT INTO t SELECT a FROM c").unwrap(),
            "INSERT INTO t WITH c AS (SELECT 1 AS a) SELECT a FROM c"
        );
        assert_eq!(
            unwrapped(
                "WITH c AS (SELECT id FROM u), d (x) AS (SELECT id FROM c) \
                 UPDATE c SET v = 1 FROM d WHERE c.id = d.x"
            )
            .unwrap(),
            "UPDATE c SET v = 1 FROM (SELECT id FROM (SELECT id FROM u) c) d (x) \
             WHERE c.id = d.x"
        );
        assert_eq!(
            unwrapped(
                "WITH c AS (SELECT id FROM u) DELETE FROM t \
                 WHERE t.id = (SELECT id FROM c AS k WHERE k.id = t.id)"
            )
            .unwrap(),
            "DELETE FROM t WHERE t.id = (SELECT id FROM (SELECT id FROM u) k WHERE k.id = t.id)"
        );
    }

    #[test]
    fn recursion_and_changes_in_with_are_refused() {
        for sql in [
            "WITH RECURSIVE c AS (SELECT 1) DELETE FROM t",
            "WITH d AS (DELETE FROM u RETURNING id) DELETE FROM t WHERE id IN (SELECT id FROM d)",
        ] {
            let e = unwrapped(sql).unwrap_err();
            assert_eq!(e.sqlstate(), "0A000", "{sql}");
        }
    }
}
