//! Integers that never wrap around. PostgreSQL fails a `+`, `-`, `*`, unary minus or
//! `abs` whose result its integer type cannot hold (22003 `integer out of range`), and sums
//! bigints as numeric, where DataFusion's operators and `sum` wrap silently
//! (`9223372036854775807 + 1` was `-9223372036854775808`). After type coercion, which
//! gives both sides of an operator one type, each such operator on integers becomes a
//! call of a function computed with Arrow's checked kernels, and the argument of a `sum`
//! over bigints a NUMERIC of 38 digits, as its result is in PostgreSQL.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{ArrayRef, AsArray, Datum, PrimitiveArray};
use datafusion::arrow::compute::kernels::numeric;
use datafusion::arrow::datatypes::{ArrowPrimitiveType, DataType, Int16Type, Int32Type, Int64Type};
use datafusion::arrow::error::ArrowError;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, Result as DfResult};
use datafusion::logical_expr::expr::{BinaryExpr, Cast, ScalarFunction};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, LogicalPlan, Operator, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;

use crate::error::{SqlError, external, state};
use crate::types::MAX_DECIMAL_PRECISION;

/// The type PostgreSQL sums bigints in: numeric, here as many digits as pmdb's hold.
pub(crate) const BIGINT_SUM: DataType = DataType::Decimal128(MAX_DECIMAL_PRECISION, 0);

/// Runs after DataFusion's type coercion.
#[derive(Debug)]
pub(crate) struct IntegerOverflow;

impl AnalyzerRule for IntegerOverflow {
    fn name(&self) -> &str {
        "pmdb_integer_overflow"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> DfResult<LogicalPlan> {
        crate::expr_rewrite::rewrite_expressions(plan, |e, schema| {
            Ok(match e {
                Expr::BinaryExpr(BinaryExpr { left, op, right }) => match Checked::of(op) {
                    Some(checked) if integers(schema, [&left, &right]) => {
                        Transformed::yes(checked.call(vec![*left, *right]))
                    }
                    _ => Transformed::no(Expr::BinaryExpr(BinaryExpr { left, op, right })),
                },
                Expr::Negative(inner) if integers(schema, [&inner]) => {
                    Transformed::yes(Checked::Negate.call(vec![*inner]))
                }
                Expr::ScalarFunction(f)
                    if f.func.name() == "abs"
                        && matches!(f.args.as_slice(), [arg] if integers(schema, [arg])) =>
                {
                    Transformed::yes(Checked::Abs.call(f.args))
                }
                other => crate::expr_rewrite::cast_aggregate_arguments(
                    other,
                    "sum",
                    |args| of_bigint(schema, args),
                    &BIGINT_SUM,
                ),
            })
        })
    }
}

fn integer(ty: &DataType) -> bool {
    matches!(ty, DataType::Int16 | DataType::Int32 | DataType::Int64)
}

/// Whether every one of `operands` is an integer, all of one type.
fn integers<const N: usize>(schema: &DFSchema, operands: [&Expr; N]) -> bool {
    let mut types = operands.iter().map(|e| e.get_type(schema).ok());
    match types.next().flatten() {
        Some(first) => integer(&first) && types.all(|t| t.as_ref() == Some(&first)),
        None => false,
    }
}

/// Whether `args` are one bigint, not a smaller integer that coercion made one to sum
/// (a sum of those is a bigint, as in PostgreSQL).
fn of_bigint(schema: &DFSchema, args: &[Expr]) -> bool {
    let [arg] = args else {
        return false;
    };
    let mut arg = arg;
    while let Expr::Cast(Cast { expr, .. }) = arg
        && matches!(expr.get_type(schema), Ok(ty) if integer(&ty))
    {
        arg = expr.as_ref();
    }
    matches!(arg.get_type(schema), Ok(DataType::Int64))
}

/// The operators computed with a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Checked {
    Add,
    Subtract,
    Multiply,
    Negate,
    Abs,
}

static FUNCTIONS: LazyLock<[Arc<ScalarUDF>; 5]> = LazyLock::new(|| {
    [
        Checked::Add,
        Checked::Subtract,
        Checked::Multiply,
        Checked::Negate,
        Checked::Abs,
    ]
    .map(|op| {
        Arc::new(ScalarUDF::new_from_impl(CheckedOperator {
            op,
            signature: Signature::any(op.arity(), Volatility::Immutable),
        }))
    })
});

impl Checked {
    fn of(op: Operator) -> Option<Checked> {
        match op {
            Operator::Plus => Some(Checked::Add),
            Operator::Minus => Some(Checked::Subtract),
            Operator::Multiply => Some(Checked::Multiply),
            _ => None,
        }
    }

    fn arity(self) -> usize {
        match self {
            Checked::Negate | Checked::Abs => 1,
            Checked::Add | Checked::Subtract | Checked::Multiply => 2,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Checked::Add => "pmdb_int_add",
            Checked::Subtract => "pmdb_int_sub",
            Checked::Multiply => "pmdb_int_mul",
            Checked::Negate => "pmdb_int_neg",
            Checked::Abs => "pmdb_int_abs",
        }
    }

    fn call(self, args: Vec<Expr>) -> Expr {
        let func = Arc::clone(&FUNCTIONS[self as usize]);
        Expr::ScalarFunction(ScalarFunction { func, args })
    }

    fn apply(self, args: &[ColumnarValue]) -> DfResult<ArrayRef> {
        let datum = |v: &ColumnarValue| -> DfResult<Box<dyn Datum>> {
            Ok(match v {
                ColumnarValue::Array(a) => Box::new(Arc::clone(a)),
                ColumnarValue::Scalar(s) => Box::new(s.to_scalar()?),
            })
        };
        let out = match (self, args) {
            (Checked::Negate, [v]) => numeric::neg(&v.to_array(1)?),
            (Checked::Abs, [v]) => abs(&v.to_array(1)?),
            (op, [l, r]) => {
                let kernel = match op {
                    Checked::Add => numeric::add,
                    Checked::Subtract => numeric::sub,
                    _ => numeric::mul,
                };
                kernel(datum(l)?.as_ref(), datum(r)?.as_ref())
            }
            _ => {
                return Err(external(SqlError::Query(format!(
                    "{} takes {} arguments",
                    self.name(),
                    self.arity()
                ))));
            }
        };
        out.map_err(|e| match e {
            ArrowError::ArithmeticOverflow(_) => external(SqlError::user(
                state::NUMERIC_OUT_OF_RANGE,
                format!("{} out of range", type_name(args)),
            )),
            other => other.into(),
        })
    }
}

/// The absolute values of `a`, integers; an overflow error for the least value of the
/// type, which has no positive twin.
fn abs(a: &ArrayRef) -> Result<ArrayRef, ArrowError> {
    fn checked<T: ArrowPrimitiveType>(
        a: &PrimitiveArray<T>,
        abs: impl Fn(T::Native) -> Option<T::Native>,
    ) -> Result<ArrayRef, ArrowError> {
        let out: PrimitiveArray<T> =
            a.try_unary(|v| abs(v).ok_or_else(|| ArrowError::ArithmeticOverflow("abs".into())))?;
        Ok(Arc::new(out))
    }
    match a.data_type() {
        DataType::Int16 => checked(a.as_primitive::<Int16Type>(), i16::checked_abs),
        DataType::Int32 => checked(a.as_primitive::<Int32Type>(), i32::checked_abs),
        DataType::Int64 => checked(a.as_primitive::<Int64Type>(), i64::checked_abs),
        other => Err(ArrowError::InvalidArgumentError(format!(
            "pmdb_int_abs of {other}"
        ))),
    }
}

/// `pmdb_int_add(a, b)` and its kin: the operator, failing where its type overflows.
#[derive(Debug, PartialEq, Eq, Hash)]
struct CheckedOperator {
    op: Checked,
    signature: Signature,
}

impl ScalarUDFImpl for CheckedOperator {
    fn name(&self) -> &str {
        self.op.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> DfResult<DataType> {
        Ok(args.first().cloned().unwrap_or(DataType::Int64))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let out = self.op.apply(&args.args)?;
        crate::udf_result::shaped(crate::udf_result::all_scalar(&args.args), out)
    }
}

/// PostgreSQL's name for the integer type of `args`, as its range errors give it.
fn type_name(args: &[ColumnarValue]) -> &'static str {
    match args.first().map(ColumnarValue::data_type) {
        Some(DataType::Int16) => "smallint",
        Some(DataType::Int32) => "integer",
        _ => "bigint",
    }
}
