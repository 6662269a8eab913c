//! Casts named apart inside a select list's calls. DataFusion names a cast by the
//! expression it casts (`sum(x::bigint)` is `sum(t.x)`, as `sum(x)` is), so a select
//! list holding both has two aggregates named alike and DataFusion refuses the query
//! ("duplicate unqualified field name"); PostgreSQL answers it. On that refusal
//! [`name_apart`] puts each cast within a call's arguments in the select lists through
//! `pmdb_named(cast, n)`, which hands on its first argument's values and field
//! unchanged under a name of its own.

use std::ops::ControlFlow;

use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::{
    Expr, Query, SelectItem, SetExpr, Statement, Value, VisitMut, VisitorMut,
};

use crate::ast_build::{call_with, take};

/// DataFusion's refusal of two expressions of one plan node named alike.
pub(crate) const DUPLICATE_NAME: &str = "Schema contains duplicate unqualified field name";

const NAMED: &str = "pmdb_named";

pub(crate) fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(Named {
        signature: Signature::any(2, Volatility::Immutable),
    }));
}

/// Wraps every cast within the arguments of a call in `statement`'s select lists, each
/// with a number of its own.
pub(crate) fn name_apart(statement: &mut Statement) {
    let mut next = 0;
    let _ = statement.visit(&mut SelectLists { next: &mut next });
}

/// Finds the select lists.
struct SelectLists<'a> {
    next: &'a mut u32,
}

impl VisitorMut for SelectLists<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        if let SetExpr::Select(select) = query.body.as_mut() {
            for item in &mut select.projection {
                if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item
                {
                    let _ = e.visit(&mut CastsInCalls {
                        next: self.next,
                        calls: 0,
                        subqueries: 0,
                    });
                }
            }
        }
        ControlFlow::Continue(())
    }
}

/// Wraps the casts of one select-list item that are within a call's arguments, leaving
/// its subqueries to [`SelectLists`].
struct CastsInCalls<'a> {
    next: &'a mut u32,
    /// Calls the walk is within.
    calls: u32,
    /// Subqueries the walk is within.
    subqueries: u32,
}

impl VisitorMut for CastsInCalls<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, _query: &mut Query) -> ControlFlow<()> {
        self.subqueries += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &mut Query) -> ControlFlow<()> {
        self.subqueries -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if matches!(e, Expr::Function(_)) {
            self.calls += 1;
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        match e {
            Expr::Function(_) => self.calls -= 1,
            Expr::Cast { .. } if self.calls > 0 && self.subqueries == 0 => {
                *self.next += 1;
                let number = Expr::value(Value::Number(self.next.to_string(), false));
                let cast = take(e);
                *e = call_with(NAMED, vec![cast.clone(), number]).unwrap_or(cast);
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

/// `pmdb_named(value, n)`: `value`, as it is.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Named {
    signature: Signature,
}

impl ScalarUDFImpl for Named {
    fn name(&self) -> &str {
        NAMED
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> DfResult<DataType> {
        args.first().cloned().ok_or_else(no_value)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> DfResult<FieldRef> {
        args.arg_fields.first().cloned().ok_or_else(no_value)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        args.args.into_iter().next().ok_or_else(no_value)
    }
}

fn no_value() -> DataFusionError {
    DataFusionError::Plan(format!("{NAMED} takes a value and a number"))
}
