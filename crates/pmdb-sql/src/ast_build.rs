//! Syntax-tree nodes pmdb builds for queries of its own (finding the rows of an UPDATE
//! or DELETE, evaluating RETURNING): planned like any query, never printed as SQL text
//! and parsed again.

use datafusion::sql::sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectName, Query,
    SelectItem, SetExpr, Statement, TableAlias, TableFactor, TableWithJoins,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;

use crate::error::{Result, SqlError};
use crate::names::{PUBLIC, RelName};

/// Replaces each expression of `statement` that `call` makes a call of (`None`: leave it
/// as it is) with that call, outermost first; the first error stops the walk and is
/// the result.
pub(crate) fn replace_with_calls(
    statement: &mut Statement,
    mut call: impl FnMut(&mut Expr) -> Option<Result<Expr>>,
) -> Result<()> {
    let flow =
        datafusion::sql::sqlparser::ast::visit_expressions_mut(statement, |e| match call(e) {
            None => std::ops::ControlFlow::Continue(()),
            Some(Ok(made)) => {
                *e = made;
                std::ops::ControlFlow::Continue(())
            }
            Some(Err(err)) => std::ops::ControlFlow::Break(err),
        });
    match flow {
        std::ops::ControlFlow::Break(e) => Err(e),
        std::ops::ControlFlow::Continue(()) => Ok(()),
    }
}

/// `e`'s place taken by a NULL, and `e` given back (to make it an argument of a call
/// that replaces the expression it was in).
pub(crate) fn take(e: &mut Expr) -> Expr {
    std::mem::replace(e, Expr::value(datafusion::sql::sqlparser::ast::Value::Null))
}

/// `SELECT projection FROM from`.
pub(crate) fn select(projection: Vec<SelectItem>, from: Vec<TableWithJoins>) -> Result<Query> {
    // The parser's own SELECT, whose every other field is as a plain query has it.
    let mut statement = Parser::parse_sql(&PostgreSqlDialect {}, "SELECT 1")
        .map_err(|e| SqlError::Query(e.to_string()))?;
    let Some(Statement::Query(mut query)) = statement.pop() else {
        return Err(SqlError::Query("no skeleton query".into()));
    };
    let SetExpr::Select(select) = query.body.as_mut() else {
        return Err(SqlError::Query("no skeleton SELECT".into()));
    };
    select.projection = projection;
    select.from = from;
    Ok(*query)
}

/// `VALUES (row), …`.
pub(crate) fn values(rows: Vec<Vec<Expr>>) -> Result<Query> {
    let mut statement = Parser::parse_sql(&PostgreSqlDialect {}, "VALUES (NULL)")
        .map_err(|e| SqlError::Query(e.to_string()))?;
    let Some(Statement::Query(mut query)) = statement.pop() else {
        return Err(SqlError::Query("no skeleton query".into()));
    };
    let SetExpr::Values(values) = query.body.as_mut() else {
        return Err(SqlError::Query("no skeleton VALUES".into()));
    };
    let Some(template) = values.rows.pop() else {
        return Err(SqlError::Query("no skeleton row".into()));
    };
    values.rows = rows
        .into_iter()
        .map(|content| {
            let mut row = template.clone();
            row.content = content;
            row
        })
        .collect();
    Ok(*query)
}

/// A call of the function `name` (one unquoted identifier) on `arg`.
pub(crate) fn call(name: &str, arg: Expr) -> Result<Expr> {
    call_with(name, vec![arg])
}

/// A call of the function `name` (one unquoted identifier) on `args`.
pub(crate) fn call_with(name: &str, args: Vec<Expr>) -> Result<Expr> {
    let mut call = Parser::new(&PostgreSqlDialect {})
        .try_with_sql(&format!("{name}(NULL)"))
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| SqlError::Query(e.to_string()))?;
    let Expr::Function(Function {
        args: FunctionArguments::List(list),
        ..
    }) = &mut call
    else {
        return Err(SqlError::Query("no skeleton call".into()));
    };
    list.args = args
        .into_iter()
        .map(|e| FunctionArg::Unnamed(FunctionArgExpr::Expr(e)))
        .collect();
    Ok(call)
}

/// Relation `name` as SQL names it: its schema left out when it is `public`, each part
/// quoted (taken as written).
pub(crate) fn relation(name: &RelName) -> ObjectName {
    let mut parts = Vec::with_capacity(2);
    if name.schema != PUBLIC {
        parts.push(Ident::with_quote('"', name.schema.as_str()));
    }
    parts.push(Ident::with_quote('"', name.name.as_str()));
    ObjectName::from(parts)
}

/// The table `name`, under `alias` (taken as written).
pub(crate) fn table(name: &RelName, alias: &str) -> TableWithJoins {
    TableWithJoins {
        relation: TableFactor::Table {
            name: relation(name),
            alias: Some(TableAlias {
                explicit: true,
                name: Ident::with_quote('"', alias),
                columns: Vec::new(),
                at: None,
            }),
            args: None,
            with_hints: Vec::new(),
            version: None,
            with_ordinality: false,
            partitions: Vec::new(),
            json_path: None,
            sample: None,
            index_hints: Vec::new(),
        },
        joins: Vec::new(),
    }
}
