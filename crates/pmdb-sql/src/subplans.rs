//! Subqueries DataFusion cannot turn into joins (correlated by something other than
//! equality, as in `(SELECT count(*) FROM t x WHERE x.b < t.b)`), run per outer row as
//! PostgreSQL runs a SubPlan. The query planner, given the plan DataFusion's optimizer
//! made (so after every rewrite of its own), replaces each correlated scalar subquery
//! and each EXISTS or IN left in it (an IN in a select list, `1 IN (SELECT …)`) with a
//! call of a function that holds the subquery's plan and the statement's session state:
//! for each row it puts the row's values in place of the outer references and runs the
//! plan at the statement's read point (a scalar subquery gives NULL for no row, 21000
//! for more than one; IN follows SQL's rules for NULLs). Equal outer values share one
//! run.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::catalog::Session;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, Result as DfResult, ScalarValue};
use datafusion::dataframe::DataFrame;
use datafusion::execution::context::QueryPlanner;
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::expr::{Exists, InSubquery, ScalarFunction};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{
    ColumnarValue, Expr, LogicalPlan, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Subquery, TypeSignature, Volatility,
};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{DefaultPhysicalPlanner, PhysicalPlanner};

use crate::error::{SqlError, external};

/// The query planner, set once in the context every session copies. It plans with the
/// statement's own session state, which the subqueries then run with (its read point,
/// and this planner again, for subqueries within).
pub(crate) fn planner() -> Arc<dyn QueryPlanner + Send + Sync> {
    Arc::new(Subplans)
}

#[derive(Debug)]
struct Subplans;

#[async_trait::async_trait]
impl QueryPlanner for Subplans {
    async fn create_physical_plan(
        &self,
        plan: &LogicalPlan,
        session: &dyn Session,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let state = session
            .as_any()
            .downcast_ref::<SessionState>()
            .ok_or_else(|| external(SqlError::Query("a session that is no SessionState".into())))?;
        let plan = rewrite(plan.clone(), state)?;
        DefaultPhysicalPlanner::default()
            .create_physical_plan(&plan, session)
            .await
    }
}

/// `plan` with each subquery left in it a call of the function that runs it with
/// `state`.
fn rewrite(plan: LogicalPlan, state: &SessionState) -> DfResult<LogicalPlan> {
    plan.transform_up(|node| {
        // Output columns keep the names the subqueries gave them.
        let names = NamePreserver::new(&node);
        node.map_expressions(|e| {
            let name = names.save(&e);
            Ok(e.transform_up(|e| match e {
                // DataFusion runs an uncorrelated one once, itself.
                Expr::ScalarSubquery(subquery) if !subquery.outer_ref_columns.is_empty() => {
                    Ok(Transformed::yes(call(subquery, Kind::Scalar, state, None)?))
                }
                Expr::Exists(Exists { subquery, negated }) => Ok(Transformed::yes(call(
                    subquery,
                    Kind::Exists { negated },
                    state,
                    None,
                )?)),
                Expr::InSubquery(InSubquery {
                    expr,
                    subquery,
                    negated,
                }) => Ok(Transformed::yes(call(
                    subquery,
                    Kind::In { negated },
                    state,
                    Some(*expr),
                )?)),
                e => Ok(Transformed::no(e)),
            })?
            .update_data(|e| name.restore(e)))
        })
    })
    .map(|t| t.data)
}

/// The call that runs `subquery` per row with `state`, its arguments `sought` (the value
/// IN looks for), then the outer columns it refers to.
fn call(
    subquery: Subquery,
    kind: Kind,
    state: &SessionState,
    sought: Option<Expr>,
) -> DfResult<Expr> {
    let mut outer: Vec<Column> = Vec::new();
    for e in &subquery.outer_ref_columns {
        if let Expr::OuterReferenceColumn(_, c) = e
            && !outer.contains(c)
        {
            outer.push(c.clone());
        }
    }
    let output = subquery.subquery.schema().field(0).as_ref().clone();
    let args = sought
        .into_iter()
        .chain(outer.iter().cloned().map(Expr::Column))
        .collect();
    let udf = SubplanFn {
        plan: Arc::clone(&subquery.subquery),
        outer,
        kind,
        output,
        state: state.clone(),
        signature: Signature::one_of(
            vec![TypeSignature::Nullary, TypeSignature::VariadicAny],
            Volatility::Volatile,
        ),
    };
    Ok(Expr::ScalarFunction(ScalarFunction::new_udf(
        Arc::new(ScalarUDF::from(udf)),
        args,
    )))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kind {
    Scalar,
    Exists {
        negated: bool,
    },
    /// The call's first argument is the value looked for among the subquery's.
    In {
        negated: bool,
    },
}

struct SubplanFn {
    plan: Arc<LogicalPlan>,
    /// The outer columns, in the order of the call's arguments.
    outer: Vec<Column>,
    kind: Kind,
    /// The subquery's one column.
    output: Field,
    /// The statement's session state.
    state: SessionState,
    signature: Signature,
}

impl std::fmt::Debug for SubplanFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SubplanFn({:?}, {:?})", self.kind, self.outer)
    }
}

impl PartialEq for SubplanFn {
    fn eq(&self, other: &SubplanFn) -> bool {
        self.plan == other.plan && self.outer == other.outer && self.kind == other.kind
    }
}

impl Eq for SubplanFn {}

impl Hash for SubplanFn {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.plan.hash(state);
        self.outer.hash(state);
        self.kind.hash(state);
    }
}

impl ScalarUDFImpl for SubplanFn {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Scalar => "subquery",
            Kind::Exists { .. } => "exists",
            Kind::In { .. } => "in",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(match self.kind {
            Kind::Scalar => self.output.data_type().clone(),
            Kind::Exists { .. } | Kind::In { .. } => DataType::Boolean,
        })
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> DfResult<FieldRef> {
        Ok(Arc::new(match self.kind {
            Kind::Scalar => self.output.clone().with_nullable(true),
            Kind::Exists { .. } => Field::new(self.name(), DataType::Boolean, false),
            Kind::In { .. } => Field::new(self.name(), DataType::Boolean, true),
        }))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let rows = args.number_rows;
        let arrays = args
            .args
            .iter()
            .map(|a| a.to_array(rows))
            .collect::<DfResult<Vec<ArrayRef>>>()?;
        let mut done: HashMap<Vec<ScalarValue>, ScalarValue> = HashMap::new();
        let mut sets: HashMap<Vec<ScalarValue>, Values> = HashMap::new();
        let mut out = Vec::with_capacity(rows);
        for r in 0..rows {
            let mut values = arrays
                .iter()
                .map(|a| ScalarValue::try_from_array(a, r))
                .collect::<DfResult<Vec<_>>>()?;
            if let Kind::In { negated } = self.kind {
                let sought = values.remove(0);
                let set = match sets.get(&values) {
                    Some(set) => set,
                    None => {
                        let set = Values::of(self.batches(&values)?)?;
                        sets.entry(values).or_insert(set)
                    }
                };
                out.push(ScalarValue::Boolean(
                    set.holds(&sought).map(|found| found != negated),
                ));
                continue;
            }
            let v = match done.get(&values) {
                Some(v) => v.clone(),
                None => {
                    let v = self.run(&values)?;
                    done.insert(values, v.clone());
                    v
                }
            };
            out.push(v);
        }
        let array = if out.is_empty() {
            datafusion::arrow::array::new_empty_array(&self.return_type(&[])?)
        } else {
            ScalarValue::iter_to_array(out)?
        };
        Ok(ColumnarValue::Array(array))
    }
}

impl SubplanFn {
    /// The rows of the subquery for a row whose outer columns hold `values`.
    fn batches(&self, values: &[ScalarValue]) -> DfResult<Vec<RecordBatch>> {
        let plan = self.bound(values)?;
        let plan = match self.kind {
            Kind::Scalar | Kind::In { .. } => plan,
            // One row tells.
            Kind::Exists { .. } => datafusion::logical_expr::LogicalPlanBuilder::from(plan)
                .limit(0, Some(1))?
                .build()?,
        };
        wait(DataFrame::new(self.state.clone(), plan).collect())
    }

    /// The subquery's value for a row whose outer columns hold `values` (a scalar
    /// subquery or EXISTS).
    fn run(&self, values: &[ScalarValue]) -> DfResult<ScalarValue> {
        let batches = self.batches(values)?;
        let count: usize = batches.iter().map(RecordBatch::num_rows).sum();
        Ok(match self.kind {
            Kind::Exists { negated } => ScalarValue::Boolean(Some((count > 0) != negated)),
            Kind::In { .. } => {
                return Err(external(SqlError::Query(
                    "IN is answered from the subquery's values".into(),
                )));
            }
            Kind::Scalar if count > 1 => return Err(crate::scalar_subqueries::more_than_one_row()),
            Kind::Scalar => match batches.iter().find(|b| b.num_rows() > 0) {
                Some(b) => ScalarValue::try_from_array(b.column(0), 0)?,
                None => ScalarValue::try_from(self.output.data_type())?,
            },
        })
    }

    /// The subquery's plan with `values` in place of its outer references.
    fn bound(&self, values: &[ScalarValue]) -> DfResult<LogicalPlan> {
        let plan = self.plan.as_ref().clone();
        plan.transform_up_with_subqueries(|node| {
            node.map_expressions(|e| {
                e.transform_up(|e| match e {
                    Expr::OuterReferenceColumn(field, c) => {
                        match self.outer.iter().position(|o| *o == c) {
                            Some(i) => Ok(Transformed::yes(Expr::Literal(
                                values[i].cast_to(field.data_type())?,
                                None,
                            ))),
                            None => Ok(Transformed::no(Expr::OuterReferenceColumn(field, c))),
                        }
                    }
                    e => Ok(Transformed::no(e)),
                })
            })
        })
        .map(|t| t.data)
    }
}

/// The values of a subquery's one column, for IN.
struct Values {
    present: std::collections::HashSet<ScalarValue>,
    null: bool,
    empty: bool,
}

impl Values {
    fn of(batches: Vec<RecordBatch>) -> DfResult<Values> {
        let mut set = Values {
            present: std::collections::HashSet::new(),
            null: false,
            empty: true,
        };
        for b in &batches {
            for r in 0..b.num_rows() {
                let v = ScalarValue::try_from_array(b.column(0), r)?;
                set.empty = false;
                if v.is_null() {
                    set.null = true;
                } else {
                    set.present.insert(v);
                }
            }
        }
        Ok(set)
    }

    /// Whether `v` is among the values, by SQL's rules: none for NULL sought in a set
    /// that is not empty, or for a value not found where a NULL is.
    fn holds(&self, v: &ScalarValue) -> Option<bool> {
        if self.empty {
            Some(false)
        } else if v.is_null() {
            None
        } else if self.present.contains(v) {
            Some(true)
        } else if self.null {
            None
        } else {
            Some(false)
        }
    }
}

/// Waits for `work` from inside a function DataFusion calls: on a worker of a
/// multi-threaded runtime, which lends the thread to the wait; elsewhere on a thread of
/// its own.
fn wait<T: Send>(work: impl std::future::Future<Output = DfResult<T>> + Send) -> DfResult<T> {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(|| h.block_on(work))
        }
        _ => std::thread::scope(|s| {
            s.spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| external(SqlError::Query(e.to_string())))?
                    .block_on(work)
            })
            .join()
            .unwrap_or_else(|_| {
                Err(external(SqlError::Query(
                    "a subquery's run panicked".into(),
                )))
            })
        }),
    }
}
