//! Row constructors `(a, b, …)` whose first item is neither a column nor a literal
//! (`(-1, 2)`, `($1 + 1, 2)`): PostgreSQL takes any expressions there, DataFusion's
//! planner refuses them. [`as_struct_calls`] writes each as the `struct(…)` call the
//! planner makes of the others, and [`items`] reads a row constructor in either form.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentList, FunctionArguments, Ident,
    ObjectName, Statement, visit_expressions_mut,
};

use crate::ast_shape;

/// The name of the call a row constructor becomes.
const STRUCT: &str = "struct";

/// Rewrites each row constructor of `statement` the planner would refuse.
pub(crate) fn as_struct_calls(statement: &mut Statement) {
    let _ = visit_expressions_mut(statement, |e| {
        if let Expr::Tuple(items) = e
            && items.first().is_some_and(|first| {
                !matches!(
                    first,
                    Expr::Identifier(_) | Expr::Value(_) | Expr::CompoundIdentifier(_)
                )
            })
        {
            let args = std::mem::take(items)
                .into_iter()
                .map(|e| FunctionArg::Unnamed(FunctionArgExpr::Expr(e)))
                .collect();
            *e = Expr::Function(Function {
                name: ObjectName::from(vec![Ident::new(STRUCT)]),
                uses_odbc_syntax: false,
                parameters: FunctionArguments::None,
                args: FunctionArguments::List(FunctionArgumentList {
                    duplicate_treatment: None,
                    args,
                    clauses: Vec::new(),
                }),
                filter: None,
                null_treatment: None,
                over: None,
                within_group: Vec::new(),
            });
        }
        ControlFlow::<()>::Continue(())
    });
}

/// The items of the row constructor `e`, written as a tuple or as a call of
/// [`as_struct_calls`]'s; `None` for another expression.
pub(crate) fn items(e: &Expr) -> Option<Vec<&Expr>> {
    if let Expr::Tuple(items) = e {
        return Some(items.iter().collect());
    }
    let (name, args) = ast_shape::plain_call(e)?;
    if name.value != STRUCT {
        return None;
    }
    args.into_iter()
        .map(|a| match a {
            FunctionArgExpr::Expr(e) => Some(e),
            _ => None,
        })
        .collect()
}
