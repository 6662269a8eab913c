//! The order of enum values: its type's order of labels, not their text's. An analyzer
//! rule rewrites what compares values of an enum type by order — `ORDER BY` (of a query,
//! a window or an aggregate), `<`, `<=`, `>`, `>=` and `BETWEEN` — to compare the labels'
//! positions, and refuses `min`, `max`, `greatest` and `least` of one (0A000) rather than
//! give the text's extremes. Equality needs no rewrite: equal labels are equal values.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, Result as DfResult, ScalarValue};
use datafusion::logical_expr::expr::{AggregateFunction, Case};
use datafusion::logical_expr::{
    Between, BinaryExpr, Expr, ExprSchemable, LogicalPlan, Operator, SortExpr,
};
use datafusion::optimizer::AnalyzerRule;

use crate::arrow_conv::text_type;
use crate::catalog::Catalog;
use crate::enum_type::{EnumDef, invalid_label};
use crate::error::{SqlError, external};
use crate::types::SqlType;

pub(crate) struct EnumOrder {
    pub(crate) catalog: Arc<Catalog>,
}

impl std::fmt::Debug for EnumOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EnumOrder")
    }
}

impl EnumOrder {
    /// The enum type of `e`'s values, if it is one.
    fn type_of(&self, e: &Expr, schema: &DFSchema) -> DfResult<Option<Arc<EnumDef>>> {
        let Ok((_, field)) = e.to_field(schema) else {
            return Ok(None);
        };
        match text_type(&field) {
            Some(SqlType::Enum(id)) => self.catalog.enum_by_id(id).map(Some).ok_or_else(|| {
                external(SqlError::Query(format!("enum type #{id} no longer exists")))
            }),
            _ => Ok(None),
        }
    }

    /// `e` as its position among `def`'s labels: a constant for a literal (22P02 if it
    /// is no label), else `CASE e WHEN 'first' THEN 0 … END`.
    fn position(def: &EnumDef, e: Expr) -> DfResult<Expr> {
        if let Expr::Literal(ScalarValue::Utf8(Some(label)), _) = &e {
            return match def.position(label) {
                Some(p) => Ok(Expr::Literal(ScalarValue::Int32(Some(p as i32)), None)),
                None => Err(external(invalid_label(def, label))),
            };
        }
        let when_then = def
            .labels
            .iter()
            .enumerate()
            .map(|(i, l)| {
                (
                    Box::new(Expr::Literal(ScalarValue::Utf8(Some(l.clone())), None)),
                    Box::new(Expr::Literal(ScalarValue::Int32(Some(i as i32)), None)),
                )
            })
            .collect();
        Ok(Expr::Case(Case::new(Some(Box::new(e)), when_then, None)))
    }

    /// Makes each of `keys` of an enum type its position; whether one was.
    fn sort_keys(&self, keys: &mut [SortExpr], schema: &DFSchema) -> DfResult<bool> {
        let mut changed = false;
        for key in keys {
            if let Some(def) = self.type_of(&key.expr, schema)? {
                let e = std::mem::replace(&mut key.expr, Expr::Literal(ScalarValue::Null, None));
                key.expr = Self::position(&def, e)?;
                changed = true;
            }
        }
        Ok(changed)
    }

    /// 0A000 if one of `args` of function `name` is of an enum type.
    fn refuse_extremes(&self, name: &str, args: &[Expr], schema: &DFSchema) -> DfResult<()> {
        for arg in args {
            if let Some(def) = self.type_of(arg, schema)? {
                return Err(external(SqlError::unsupported(format!(
                    "{name}() of enum type {} (pmdb orders enum values only in ORDER BY and \
                     comparisons)",
                    def.name
                ))));
            }
        }
        Ok(())
    }

    /// One expression of a node reading `schema`, rewritten where it orders enum values.
    fn expression(&self, e: Expr, schema: &DFSchema) -> DfResult<Transformed<Expr>> {
        match e {
            Expr::WindowFunction(mut w) => {
                let changed = self.sort_keys(&mut w.params.order_by, schema)?;
                Ok(Transformed::new_transformed(
                    Expr::WindowFunction(w),
                    changed,
                ))
            }
            Expr::ScalarFunction(f) if matches!(f.name(), "greatest" | "least") => {
                self.refuse_extremes(f.name(), &f.args, schema)?;
                Ok(Transformed::no(Expr::ScalarFunction(f)))
            }
            Expr::BinaryExpr(BinaryExpr { left, op, right })
                if matches!(
                    op,
                    Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq
                ) =>
            {
                let def = match self.type_of(&left, schema)? {
                    Some(def) => Some(def),
                    None => self.type_of(&right, schema)?,
                };
                match def {
                    Some(def) => Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
                        Box::new(Self::position(&def, *left)?),
                        op,
                        Box::new(Self::position(&def, *right)?),
                    )))),
                    None => Ok(Transformed::no(Expr::BinaryExpr(BinaryExpr {
                        left,
                        op,
                        right,
                    }))),
                }
            }
            Expr::Between(b) => match self.type_of(&b.expr, schema)? {
                Some(def) => Ok(Transformed::yes(Expr::Between(Between::new(
                    Box::new(Self::position(&def, *b.expr)?),
                    b.negated,
                    Box::new(Self::position(&def, *b.low)?),
                    Box::new(Self::position(&def, *b.high)?),
                )))),
                None => Ok(Transformed::no(Expr::Between(b))),
            },
            Expr::AggregateFunction(AggregateFunction { func, mut params }) => {
                if matches!(func.name(), "min" | "max") {
                    self.refuse_extremes(func.name(), &params.args, schema)?;
                }
                let changed = self.sort_keys(&mut params.order_by, schema)?;
                Ok(Transformed::new_transformed(
                    Expr::AggregateFunction(AggregateFunction { func, params }),
                    changed,
                ))
            }
            other => Ok(Transformed::no(other)),
        }
    }
}

impl AnalyzerRule for EnumOrder {
    fn name(&self) -> &str {
        "pmdb_enum_order"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> DfResult<LogicalPlan> {
        if self.catalog.enum_types().is_empty() {
            return Ok(plan);
        }
        let plan =
            crate::expr_rewrite::rewrite_expressions(plan, |e, schema| self.expression(e, schema))?;
        // Sort keys: the whole key becomes its position (a key inside an expression is
        // whatever that expression makes of it).
        plan.transform_up_with_subqueries(|node| match node {
            LogicalPlan::Sort(mut sort) => {
                let schema = Arc::clone(sort.input.schema());
                let changed = self.sort_keys(&mut sort.expr, &schema)?;
                Ok(Transformed::new_transformed(
                    LogicalPlan::Sort(sort),
                    changed,
                ))
            }
            other => Ok(Transformed::no(other)),
        })
        .map(|t| t.data)
    }
}
