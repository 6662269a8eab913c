//! Scalar subqueries as PostgreSQL runs them: the value of the one row the subquery
//! gives, NULL for none, and 21000 for more than one. DataFusion plans a correlated
//! scalar subquery only when it aggregates, and fails one without a row limit at run
//! time with an error of its own. [`OneRow`], an analyzer rule, puts the result of every
//! scalar subquery that neither aggregates nor is limited to one row through
//! [`OneValue`], an aggregate that gives the only value it sees and fails on a second;
//! the subquery then plans as an aggregated one (decorrelated into a join where
//! DataFusion can, else run per row by [`crate::subplans`]).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, UInt64Type};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{Column, Result as DfResult, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Expr, Filter, LogicalPlan, LogicalPlanBuilder,
    Signature, Subquery, Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use datafusion::prelude::SessionContext;

use crate::error::{SqlError, external, state};
use crate::expr_rewrite::rewrite_expressions;

pub(crate) fn register(ctx: &SessionContext) {
    ctx.add_analyzer_rule(Arc::new(OneRow));
}

/// PostgreSQL's error for a scalar subquery that gives a second row.
pub(crate) fn more_than_one_row() -> datafusion::error::DataFusionError {
    external(SqlError::user(
        state::CARDINALITY_VIOLATION,
        "more than one row returned by a subquery used as an expression",
    ))
}

#[derive(Debug)]
struct OneRow;

impl AnalyzerRule for OneRow {
    fn name(&self) -> &str {
        "pmdb_one_row_subqueries"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> DfResult<LogicalPlan> {
        rewrite_expressions(plan, |e, _| match e {
            Expr::ScalarSubquery(s) if !at_most_one_row(&s.subquery) => {
                Ok(Transformed::yes(Expr::ScalarSubquery(one_value_of(s)?)))
            }
            other => Ok(Transformed::no(other)),
        })
    }
}

/// Whether `plan` gives at most one row as DataFusion sees it: it aggregates (with a
/// filter on the groups or not), or a limit says so.
fn at_most_one_row(plan: &LogicalPlan) -> bool {
    let mut inner = plan;
    while let LogicalPlan::Projection(p) = inner {
        inner = &p.input;
    }
    if let LogicalPlan::SubqueryAlias(a) = inner {
        return at_most_one_row(&a.input);
    }
    let aggregates = match inner {
        LogicalPlan::Aggregate(_) => true,
        LogicalPlan::Filter(Filter { input, .. }) => {
            matches!(input.as_ref(), LogicalPlan::Aggregate(_))
        }
        _ => false,
    };
    aggregates || plan.max_rows().is_some_and(|n| n <= 1)
}

/// `s` with its one column put through [`OneValue`], under the column's own name.
fn one_value_of(s: Subquery) -> DfResult<Subquery> {
    let plan = s.subquery.as_ref();
    let (qualifier, field) = plan.schema().qualified_field(0);
    let column = Expr::Column(Column::new(qualifier.cloned(), field.name()));
    let value =
        Expr::AggregateFunction(datafusion::logical_expr::expr::AggregateFunction::new_udf(
            Arc::new(AggregateUDF::from(OneValue::new())),
            vec![column],
            false,
            None,
            Vec::new(),
            None,
        ));
    let named = Expr::Column(Column::from_name(value.schema_name().to_string()))
        .alias_qualified(qualifier.cloned(), field.name());
    let wrapped = LogicalPlanBuilder::from(plan.clone())
        .aggregate(Vec::<Expr>::new(), vec![value])?
        .project(vec![named])?
        .build()?;
    Ok(Subquery {
        subquery: Arc::new(wrapped),
        ..s
    })
}

/// The value of the only row it sees (NULL for none); 21000 at a second.
#[derive(Debug, PartialEq, Eq, Hash)]
struct OneValue {
    signature: Signature,
}

impl OneValue {
    fn new() -> OneValue {
        OneValue {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl AggregateUDFImpl for OneValue {
    fn name(&self) -> &str {
        "pmdb_one_value"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(arg_types[0].clone())
    }

    /// The value's own field, metadata and all: a json value stays json.
    fn return_field(&self, arg_fields: &[FieldRef]) -> DfResult<FieldRef> {
        Ok(Arc::new(
            Field::clone(&arg_fields[0])
                .with_name(self.name())
                .with_nullable(true),
        ))
    }

    fn accumulator(&self, args: AccumulatorArgs) -> DfResult<Box<dyn Accumulator>> {
        Ok(Box::new(OneValueAccumulator {
            value: ScalarValue::try_from(args.return_field.data_type())?,
            rows: 0,
        }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> DfResult<Vec<FieldRef>> {
        Ok(vec![
            Arc::new(Field::new(
                "value",
                args.return_field.data_type().clone(),
                true,
            )),
            Arc::new(Field::new("rows", DataType::UInt64, false)),
        ])
    }
}

#[derive(Debug)]
struct OneValueAccumulator {
    value: ScalarValue,
    rows: u64,
}

impl OneValueAccumulator {
    /// Takes in the value at `row` of `values`, which stands for `rows` rows.
    fn take(&mut self, values: &ArrayRef, row: usize, rows: u64) -> DfResult<()> {
        if rows == 0 {
            return Ok(());
        }
        self.rows += rows;
        if self.rows > 1 {
            return Err(more_than_one_row());
        }
        self.value = ScalarValue::try_from_array(values, row)?;
        Ok(())
    }
}

impl Accumulator for OneValueAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> DfResult<()> {
        for row in 0..values[0].len() {
            self.take(&values[0], row, 1)?;
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> DfResult<()> {
        let rows = states[1].as_primitive::<UInt64Type>();
        for row in 0..rows.len() {
            self.take(&states[0], row, rows.value(row))?;
        }
        Ok(())
    }

    fn state(&mut self) -> DfResult<Vec<ScalarValue>> {
        Ok(vec![
            self.value.clone(),
            ScalarValue::UInt64(Some(self.rows)),
        ])
    }

    fn evaluate(&mut self) -> DfResult<ScalarValue> {
        Ok(self.value.clone())
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.value.size() - std::mem::size_of_val(&self.value)
    }
}
