//! Series functions in a select list as PostgreSQL runs them: as set-returning
//! functions, each giving its values as rows (zipped with the select list's other
//! set-returning functions, `unnest` among them). DataFusion's `generate_series` there
//! gives one array, so `SELECT generate_series(1, 3)` would be the row `[1, 2, 3]`:
//! it becomes `unnest(generate_series(…))`, and `generate_subscripts(a, 1)`, the
//! subscripts of an array (what SQLAlchemy's and pgjdbc's catalog queries pair with
//! `unnest(a)`), becomes `unnest(generate_series(1, array_length(a, 1)))`. The
//! columns keep the names PostgreSQL gives them (named before this rewrite). The walk
//! over a select list's own expressions ([`outside_subqueries`]) serves the server's
//! catalog adapter too.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, ObjectNamePart, Query,
    SelectItem, SetExpr, Statement, Value, VisitMut, VisitorMut,
};

use crate::ast_build::{call, call_with};

/// Rewrites the series functions of every select list in `statement`.
pub(crate) fn expand(statement: &mut Statement) {
    let _ = statement.visit(&mut SelectLists);
}

struct SelectLists;

impl VisitorMut for SelectLists {
    type Break = ();

    fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        if let SetExpr::Select(select) = query.body.as_mut() {
            outside_subqueries(&mut select.projection, |expr| {
                if let Some(rows) = as_rows(expr) {
                    *expr = rows;
                }
            });
        }
        ControlFlow::Continue(())
    }
}

/// Calls `f` on each expression of the select list `items` (innermost first), leaving
/// out those of its subqueries.
pub fn outside_subqueries(items: &mut [SelectItem], f: impl FnMut(&mut Expr)) {
    let mut visitor = OutsideSubqueries { depth: 0, f };
    for item in items {
        let _ = item.visit(&mut visitor);
    }
}

struct OutsideSubqueries<F> {
    depth: usize,
    f: F,
}

impl<F: FnMut(&mut Expr)> VisitorMut for OutsideSubqueries<F> {
    type Break = ();

    fn pre_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if self.depth == 0 {
            (self.f)(expr);
        }
        ControlFlow::Continue(())
    }
}

/// `expr` as the rows it stands for, if it is a series function.
fn as_rows(expr: &Expr) -> Option<Expr> {
    let Expr::Function(f) = expr else {
        return None;
    };
    let [ObjectNamePart::Identifier(name)] = f.name.0.as_slice() else {
        return None;
    };
    let args = plain_args(f)?;
    let series = match (name.value.to_lowercase().as_str(), args.as_slice()) {
        ("generate_series", [_, _] | [_, _, _]) => expr.clone(),
        ("generate_subscripts", [array, dimension]) => call_with(
            "generate_series",
            vec![
                Expr::value(Value::Number("1".into(), false)),
                call_with("array_length", vec![array.clone(), dimension.clone()]).ok()?,
            ],
        )
        .ok()?,
        _ => return None,
    };
    call("unnest", series).ok()
}

/// The arguments of a call without DISTINCT, ORDER BY, named arguments or FILTER.
fn plain_args(f: &Function) -> Option<Vec<Expr>> {
    if f.filter.is_some() || f.over.is_some() || !f.within_group.is_empty() {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    if list.duplicate_treatment.is_some() || !list.clauses.is_empty() {
        return None;
    }
    list.args
        .iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn expanded(sql: &str) -> String {
        let mut s = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        super::expand(&mut s);
        s.to_string()
    }

    #[test]
    fn series_in_select_lists_become_rows() {
        assert_eq!(
            expanded("SELECT generate_series(1, 3) AS i, x FROM t"),
            "SELECT unnest(generate_series(1, 3)) AS i, x FROM t"
        );
        assert_eq!(
            expanded("SELECT unnest(k), generate_subscripts(k, 1) FROM i"),
            "SELECT unnest(k), unnest(generate_series(1, array_length(k, 1))) FROM i"
        );
        // In a subquery's select list too; in FROM and WHERE as they are.
        assert_eq!(
            expanded(
                "SELECT (SELECT generate_series(1, n) LIMIT 1) FROM generate_series(1, 2) \
                 WHERE generate_series(1, 2) > 0"
            ),
            "SELECT (SELECT unnest(generate_series(1, n)) LIMIT 1) FROM generate_series(1, 2) \
             WHERE generate_series(1, 2) > 0"
        );
    }
}
