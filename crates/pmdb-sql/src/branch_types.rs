//! Conditional expressions keep the PostgreSQL type their branches share. pmdb's uuid,
//! json, jsonb, CHAR(n) and VARCHAR(n) values are Arrow text marked by their field's
//! metadata ([`crate::arrow_conv::text_type`]), and DataFusion's CASE, COALESCE and
//! NULLIF give a plain text field, so `CASE WHEN … THEN json_build_object(…) END` would
//! be described as text and a driver would hand out a string instead of the object.
//! [`BranchTypes`], an analyzer rule, puts such an expression whose branches (NULLs
//! aside) all have one marked type through [`Marked`], which passes the values on
//! under a field of that type.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, Result as DfResult};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, LogicalPlan, ReturnFieldArgs, ScalarFunctionArgs,
    ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use datafusion::prelude::SessionContext;

use crate::arrow_conv::{arrow_field, text_type};
use crate::expr_rewrite::rewrite_expressions;
use crate::types::SqlType;

pub(crate) fn register(ctx: &SessionContext) {
    ctx.add_analyzer_rule(Arc::new(BranchTypes));
}

#[derive(Debug)]
struct BranchTypes;

impl AnalyzerRule for BranchTypes {
    fn name(&self) -> &str {
        "pmdb_branch_types"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> DfResult<LogicalPlan> {
        rewrite_expressions(plan, marked)
    }
}

/// `e` under the marked type its branches share, if it is a conditional expression
/// that lost it.
fn marked(e: Expr, schema: &DFSchema) -> DfResult<Transformed<Expr>> {
    let branches: Vec<&Expr> = match &e {
        Expr::Case(case) => case
            .when_then_expr
            .iter()
            .map(|(_, then)| then.as_ref())
            .chain(case.else_expr.as_deref())
            .collect(),
        Expr::ScalarFunction(f) if matches!(f.name(), "coalesce" | "nullif") => f
            .args
            .iter()
            .take(if f.name() == "nullif" { 1 } else { usize::MAX })
            .collect(),
        _ => return Ok(Transformed::no(e)),
    };
    let own = e.to_field(schema)?.1;
    if text_type(&own).is_some() {
        return Ok(Transformed::no(e));
    }
    let mut shared = None;
    for branch in branches {
        if is_null(branch) {
            continue;
        }
        let ty = text_type(&branch.to_field(schema)?.1);
        match (ty, shared) {
            (None, _) => return Ok(Transformed::no(e)),
            (Some(t), None) => shared = Some(t),
            (Some(t), Some(s)) if t == s => {}
            (Some(_), Some(_)) => return Ok(Transformed::no(e)),
        }
    }
    let Some(ty) = shared else {
        return Ok(Transformed::no(e));
    };
    if own.data_type() != &DataType::Utf8 {
        return Ok(Transformed::no(e));
    }
    Ok(Transformed::yes(Expr::ScalarFunction(
        ScalarFunction::new_udf(Arc::new(ScalarUDF::from(Marked::new(ty))), vec![e]),
    )))
}

/// A NULL written as such (coerced to the branches' type or not).
fn is_null(e: &Expr) -> bool {
    match e {
        Expr::Literal(v, _) => v.is_null(),
        Expr::Cast(c) => is_null(&c.expr),
        Expr::TryCast(c) => is_null(&c.expr),
        _ => false,
    }
}

/// Its text argument, as values of the marked type `ty`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Marked {
    ty: SqlType,
    name: String,
    signature: Signature,
}

impl Marked {
    fn new(ty: SqlType) -> Marked {
        Marked {
            name: format!(
                "pmdb_as_{}",
                ty.to_string().to_lowercase().replace(['(', ')'], "_")
            ),
            ty,
            signature: Signature::exact(vec![DataType::Utf8], Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for Marked {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> DfResult<FieldRef> {
        Ok(Arc::new(arrow_field(self.name(), self.ty)))
    }

    fn invoke_with_args(&self, mut args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        Ok(args.args.swap_remove(0))
    }
}
