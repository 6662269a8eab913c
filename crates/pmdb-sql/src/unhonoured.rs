//! Clauses the parser accepts and nothing in pmdb (or in DataFusion's planner) honours:
//! each is refused with 0A000 before a statement is planned or run, so that no
//! statement is accepted and quietly done otherwise than it says. Clauses that are only
//! hints with no effect on a result (table options, index ordering, `CONCURRENTLY`) are
//! left alone.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, GroupByExpr, JoinConstraint, JoinOperator, ObjectType, Query, SchemaName, Select,
    Statement, TableFactor, TruncateIdentityOption, Visit, Visitor, WindowType,
};

use crate::error::{Result, SqlError, state};

/// Refuses `statement` if it holds a clause pmdb would not honour, locking clauses
/// anywhere but at the top of a SELECT included (pmdb does not lock the rows of
/// subqueries, CTEs or INSERT … SELECT).
pub(crate) fn check(statement: &Statement) -> Result<()> {
    let top = match statement {
        Statement::Query(q) => Some(q.as_ref() as *const Query),
        _ => None,
    };
    let mut audit = Audit { top, refused: None };
    let _ = statement.visit(&mut audit);
    match audit.refused {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

struct Audit {
    /// The query of a SELECT statement, the one place locking clauses are honoured.
    top: Option<*const Query>,
    refused: Option<SqlError>,
}

impl Audit {
    fn refuse(&mut self, what: &str) -> ControlFlow<()> {
        self.refused = Some(SqlError::unsupported(format!("{what} is not supported")));
        ControlFlow::Break(())
    }
}

impl Visitor for Audit {
    type Break = ();

    fn pre_visit_statement(&mut self, s: &Statement) -> ControlFlow<()> {
        match s {
            Statement::Prepare { .. } | Statement::Execute { .. } => self.refuse(
                "PREPARE / EXECUTE in SQL (prepare through the protocol's extended query flow)",
            ),
            Statement::CreateFunction(_) | Statement::DropFunction(_) => {
                self.refuse("CREATE FUNCTION / DROP FUNCTION (pmdb has no user-defined functions)")
            }
            Statement::CreateDatabase { .. }
            | Statement::Drop {
                object_type: ObjectType::Database,
                ..
            } => self.refuse(
                "CREATE DATABASE and DROP DATABASE outside `pmdb serve` (an engine is one database)",
            ),
            Statement::CreateSchema {
                schema_name,
                with,
                options,
                default_collate_spec,
                clone,
                ..
            } => {
                if !matches!(schema_name, SchemaName::Simple(_)) {
                    return self.refuse(
                        "CREATE SCHEMA … AUTHORIZATION (pmdb's schemas have no owners of their own)",
                    );
                }
                if with.is_some()
                    || options.is_some()
                    || default_collate_spec.is_some()
                    || clone.is_some()
                {
                    return self.refuse("CREATE SCHEMA with options, a collation or CLONE");
                }
                ControlFlow::Continue(())
            }
            Statement::Truncate(t) if t.partitions.is_some() => self.refuse("TRUNCATE … PARTITION"),
            // The sequences its tables own would have to restart with the rows' removal.
            Statement::Truncate(t)
                if matches!(t.identity, Some(TruncateIdentityOption::Restart)) =>
            {
                self.refuse("TRUNCATE … RESTART IDENTITY")
            }
            Statement::Truncate(t) if t.on_cluster.is_some() => {
                self.refuse("TRUNCATE … ON CLUSTER")
            }
            Statement::CreateTable(c) => {
                if c.inherits.is_some() {
                    return self.refuse("CREATE TABLE … INHERITS");
                }
                if c.partition_by.is_some() || c.partition_of.is_some() {
                    return self.refuse("partitioned tables");
                }
                if c.like.is_some() || c.clone.is_some() {
                    return self.refuse("CREATE TABLE … LIKE / CLONE");
                }
                if c.on_commit.is_some() {
                    return self.refuse("ON COMMIT");
                }
                ControlFlow::Continue(())
            }
            Statement::Update(u) if u.output.is_some() => self.refuse("UPDATE … OUTPUT"),
            Statement::Delete(d) if d.output.is_some() => self.refuse("DELETE … OUTPUT"),
            _ => ControlFlow::Continue(()),
        }
    }

    fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
        if !q.locks.is_empty() && self.top != Some(q as *const Query) {
            self.refused = Some(SqlError::unsupported(
                "FOR UPDATE / FOR SHARE in a subquery, a CTE or INSERT … SELECT: lock the rows with a SELECT of their own",
            ));
            return ControlFlow::Break(());
        }
        if q.for_clause.is_some() {
            return self.refuse("FOR XML / FOR JSON / FOR BROWSE");
        }
        if q.settings.is_some() || q.format_clause.is_some() {
            return self.refuse("SETTINGS / FORMAT after a query");
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, s: &Select) -> ControlFlow<()> {
        if !s.connect_by.is_empty() {
            return self.refuse("CONNECT BY");
        }
        if s.into.is_some() {
            return self.refuse("SELECT … INTO (use CREATE TABLE and INSERT … SELECT)");
        }
        if s.prewhere.is_some() || s.value_table_mode.is_some() || s.exclude.is_some() {
            return self.refuse("PREWHERE, SELECT AS VALUE or EXCLUDE");
        }
        let modifiers = match &s.group_by {
            GroupByExpr::All(m) | GroupByExpr::Expressions(_, m) => m,
        };
        if !modifiers.is_empty() {
            return self.refuse("GROUP BY modifiers (WITH ROLLUP, GROUPING SETS after the list)");
        }
        for from in &s.from {
            for join in &from.joins {
                if join.global {
                    return self.refuse("GLOBAL JOIN");
                }
                if let JoinOperator::Join(JoinConstraint::None)
                | JoinOperator::Inner(JoinConstraint::None)
                | JoinOperator::Left(JoinConstraint::None)
                | JoinOperator::LeftOuter(JoinConstraint::None)
                | JoinOperator::Right(JoinConstraint::None)
                | JoinOperator::RightOuter(JoinConstraint::None)
                | JoinOperator::FullOuter(JoinConstraint::None) = &join.join_operator
                {
                    self.refused = Some(SqlError::user(
                        state::SYNTAX,
                        "syntax error: JOIN needs ON or USING (or write CROSS JOIN)",
                    ));
                    return ControlFlow::Break(());
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, t: &TableFactor) -> ControlFlow<()> {
        let (sample, ordinality, hints, alias) = match t {
            TableFactor::Table {
                sample,
                with_ordinality,
                with_hints,
                alias,
                ..
            } => (
                sample.is_some(),
                *with_ordinality,
                !with_hints.is_empty(),
                alias,
            ),
            TableFactor::Derived { sample, alias, .. } => (sample.is_some(), false, false, alias),
            TableFactor::Function {
                with_ordinality,
                alias,
                ..
            } => (false, *with_ordinality, false, alias),
            _ => return ControlFlow::Continue(()),
        };
        if sample {
            return self.refuse("TABLESAMPLE");
        }
        if ordinality {
            return self.refuse("WITH ORDINALITY");
        }
        if hints {
            return self.refuse("table hints");
        }
        if alias
            .as_ref()
            .is_some_and(|a| a.columns.iter().any(|c| c.data_type.is_some()))
        {
            return self.refuse("column types in a table alias");
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
        if let Expr::Function(f) = e
            && let Some(WindowType::WindowSpec(spec)) = &f.over
            && spec.window_name.is_some()
        {
            return self.refuse("a window definition that names another window");
        }
        ControlFlow::Continue(())
    }
}
