//! Interval operators as PostgreSQL has them. Arrow orders its month-day-nanosecond
//! values field by field (so `'1 mon' > '40 days'`, and `'1 mon'` differs from
//! `'30 days'`); PostgreSQL by their span, a month as 30 days and a day as 24 hours
//! ([`crate::interval::Interval::span`]). [`IntervalOperators`], an analyzer rule run
//! before type coercion, compares intervals (`=`, `<`, BETWEEN, IN) by their spans and
//! reads a string literal among them by PostgreSQL's input rules; the analyzer rule of
//! [`crate::type_input`] sorts them by span. [`IntervalScaling`] plans `interval * n`
//! and `interval / n`, which DataFusion cannot type.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, Decimal128Array, IntervalMonthDayNanoArray};
use datafusion::arrow::datatypes::{DataType, Float64Type, IntervalMonthDayNano, IntervalUnit};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{DFSchema, Result as DfResult, ScalarValue};
use datafusion::logical_expr::expr::{Between, Cast, InList, ScalarFunction};
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, ExprSchemable, LogicalPlan, Operator, ScalarFunctionArgs,
    ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use datafusion::sql::sqlparser::ast::BinaryOperator;

use crate::arrow_conv::{interval_at, interval_input};
use crate::comparison::compares;
use crate::error::{SqlError, external, state};
use crate::udf_result::shaped;

const INTERVAL: DataType = DataType::Interval(IntervalUnit::MonthDayNano);

/// Whether `e` gives intervals.
pub(crate) fn is_interval(e: &Expr, schema: &DFSchema) -> bool {
    e.get_type(schema).is_ok_and(|t| t == INTERVAL)
}

/// `e`, an operand of a comparison with an interval, as the span it is compared by: a
/// string literal (which DataFusion would read by its own rules) is read as PostgreSQL
/// reads interval input first.
pub(crate) fn span_of(e: Expr) -> DfResult<Expr> {
    let e = match e {
        Expr::Cast(Cast { expr, field }) if *field.data_type() == INTERVAL => match *expr {
            Expr::Literal(ScalarValue::Utf8(Some(s)), _) => literal(&s)?,
            other => Expr::Cast(Cast::new(Box::new(other), field.data_type().clone())),
        },
        Expr::Literal(ScalarValue::Utf8(Some(s)), _) => literal(&s)?,
        other => other,
    };
    Ok(Expr::ScalarFunction(ScalarFunction::new_udf(
        Arc::new(ScalarUDF::from(IntervalSpan::new())),
        vec![e],
    )))
}

fn literal(s: &str) -> DfResult<Expr> {
    let v = interval_input(s).map_err(external)?;
    Ok(Expr::Literal(
        ScalarValue::IntervalMonthDayNano(Some(v)),
        None,
    ))
}

/// The span of an interval in microseconds ([`crate::interval::Interval::span`]), a DECIMAL(38,0).
#[derive(Debug, PartialEq, Eq, Hash)]
struct IntervalSpan {
    signature: Signature,
}

impl IntervalSpan {
    fn new() -> IntervalSpan {
        IntervalSpan {
            signature: Signature::exact(vec![INTERVAL], Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for IntervalSpan {
    fn name(&self) -> &str {
        "pmdb_interval_span"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Decimal128(38, 0))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let [arg] = args.args.as_slice() else {
            return Err(external(SqlError::Query(
                "pmdb_interval_span takes one argument".into(),
            )));
        };
        let array = arg.to_array(args.number_rows)?;
        let spans: Decimal128Array = (0..array.len())
            .map(|i| array.is_valid(i).then(|| interval_at(&array, i).span()))
            .collect();
        shaped(
            matches!(arg, ColumnarValue::Scalar(_)),
            Arc::new(spans.with_precision_and_scale(38, 0)?),
        )
    }
}

/// `interval * n`, `n * interval` and `interval / n` planned as `pmdb_interval_scale`
/// (DataFusion would fail to type them).
#[derive(Debug)]
pub(crate) struct IntervalScaling;

impl ExprPlanner for IntervalScaling {
    fn plan_binary_op(
        &self,
        expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> DfResult<PlannerResult<RawBinaryExpr>> {
        let interval = |e: &Expr| is_interval(e, schema);
        let number = |e: &Expr| e.get_type(schema).is_ok_and(|t| t.is_numeric());
        Ok(match expr.op {
            BinaryOperator::Multiply if interval(&expr.left) && number(&expr.right) => {
                PlannerResult::Planned(scale(expr.left, expr.right, false))
            }
            BinaryOperator::Multiply if number(&expr.left) && interval(&expr.right) => {
                PlannerResult::Planned(scale(expr.right, expr.left, false))
            }
            BinaryOperator::Divide if interval(&expr.left) && number(&expr.right) => {
                PlannerResult::Planned(scale(expr.left, expr.right, true))
            }
            _ => PlannerResult::Original(expr),
        })
    }
}

/// Before type coercion: intervals compared (`=`, `<`, BETWEEN, IN) by their spans, a
/// string literal among them read as PostgreSQL reads interval input.
#[derive(Debug)]
pub(crate) struct IntervalOperators;

impl AnalyzerRule for IntervalOperators {
    fn name(&self) -> &str {
        "pmdb_interval_operators"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> DfResult<LogicalPlan> {
        crate::expr_rewrite::rewrite_expressions(plan, operands)
    }
}

fn operands(e: Expr, schema: &DFSchema) -> DfResult<Transformed<Expr>> {
    let interval = |e: &Expr| is_interval(e, schema);
    Ok(match e {
        Expr::BinaryExpr(BinaryExpr { left, op, right })
            if compares(op) && (interval(&left) || interval(&right)) =>
        {
            Transformed::yes(Expr::BinaryExpr(BinaryExpr {
                left: Box::new(span_of(*left)?),
                op,
                right: Box::new(span_of(*right)?),
            }))
        }
        Expr::Between(Between {
            expr,
            negated,
            low,
            high,
        }) if interval(&expr) => Transformed::yes(Expr::Between(Between {
            expr: Box::new(span_of(*expr)?),
            negated,
            low: Box::new(span_of(*low)?),
            high: Box::new(span_of(*high)?),
        })),
        Expr::InList(InList {
            expr,
            list,
            negated,
        }) if interval(&expr) => Transformed::yes(Expr::InList(InList {
            expr: Box::new(span_of(*expr)?),
            list: list.into_iter().map(span_of).collect::<DfResult<_>>()?,
            negated,
        })),
        other => Transformed::no(other),
    })
}

fn scale(interval: Expr, by: Expr, divide: bool) -> Expr {
    let by = Expr::Cast(Cast::new(Box::new(by), DataType::Float64));
    let by = if divide {
        Expr::BinaryExpr(BinaryExpr::new(
            Box::new(Expr::Literal(ScalarValue::Float64(Some(1.0)), None)),
            Operator::Divide,
            Box::new(by),
        ))
    } else {
        by
    };
    Expr::ScalarFunction(ScalarFunction::new_udf(
        Arc::new(ScalarUDF::from(IntervalScale::new())),
        vec![interval, by],
    ))
}

/// An interval times a number, as PostgreSQL's `interval_mul` computes it: the months'
/// fraction carried to days (30 a month), the days' to the time.
#[derive(Debug, PartialEq, Eq, Hash)]
struct IntervalScale {
    signature: Signature,
}

impl IntervalScale {
    fn new() -> IntervalScale {
        IntervalScale {
            signature: Signature::exact(vec![INTERVAL, DataType::Float64], Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for IntervalScale {
    fn name(&self) -> &str {
        "pmdb_interval_scale"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(INTERVAL)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let [interval, by] = args.args.as_slice() else {
            return Err(external(SqlError::Query(
                "pmdb_interval_scale takes two arguments".into(),
            )));
        };
        let scalar = matches!(
            (interval, by),
            (ColumnarValue::Scalar(_), ColumnarValue::Scalar(_))
        );
        let intervals = interval.to_array(args.number_rows)?;
        let factors = by.to_array(args.number_rows)?;
        let factors = factors.as_primitive::<Float64Type>();
        let out: IntervalMonthDayNanoArray = (0..intervals.len())
            .map(|i| {
                if intervals.is_null(i) || factors.is_null(i) {
                    return Ok(None);
                }
                let v = interval_at(&intervals, i).scaled(factors.value(i));
                let v = v.ok_or_else(|| {
                    external(SqlError::user(
                        state::INTERVAL_FIELD_OVERFLOW,
                        "interval out of range",
                    ))
                })?;
                Ok(v.nanos()
                    .map(|n| IntervalMonthDayNano::new(v.months, v.days, n)))
            })
            .collect::<DfResult<_>>()?;
        shaped(scalar, Arc::new(out))
    }
}

/// The name of an aggregate among `aggregates` that pmdb cannot compute over intervals
/// as PostgreSQL does: `min` and `max` (DataFusion compares field by field), `avg`
/// (DataFusion has none).
pub(crate) fn unhonoured_aggregate(aggregates: &[Expr], schema: &DFSchema) -> Option<String> {
    aggregates.iter().find_map(|e| {
        let mut found = None;
        let _ = e.apply(|e| {
            if let Expr::AggregateFunction(f) = e
                && matches!(f.func.name(), "min" | "max" | "avg")
                && f.params.args.iter().any(|a| is_interval(a, schema))
            {
                found = Some(f.func.name().to_owned());
                return Ok(TreeNodeRecursion::Stop);
            }
            Ok(TreeNodeRecursion::Continue)
        });
        found
    })
}
