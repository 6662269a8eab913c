//! Fractions made integers as PostgreSQL makes them: a numeric (a number with a fraction
//! written in SQL among them) rounded half away from zero, a floating-point number half
//! to even (`3.7::int` is 4, `2.5::int` 3, `2.5::float8::int` 2), where Arrow's and
//! DataFusion's casts cut the fraction off. Both an assignment (a
//! value written to an integer column, a column's type changed) and a cast in a query
//! (through the analyzer rule of [`crate::type_input`]) round first.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, Float64Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::common::{Result as DfResult, ScalarValue};
use datafusion::logical_expr::expr::{Cast, ScalarFunction};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use crate::error::{SqlError, state};

fn integer(ty: &DataType) -> bool {
    matches!(ty, DataType::Int16 | DataType::Int32 | DataType::Int64)
}

/// `array`, about to become integers of type `to`, with its fractions rounded as
/// PostgreSQL rounds them; as it is when `to` is no integer or it holds none.
pub(crate) fn rounded_for(array: &ArrayRef, to: &DataType) -> Result<ArrayRef, SqlError> {
    if !integer(to) {
        return Ok(Arc::clone(array));
    }
    match array.data_type() {
        DataType::Decimal128(p, s) if *s > 0 => cast(array, &DataType::Decimal128(*p, 0))
            .map_err(|e| SqlError::user(state::NUMERIC_OUT_OF_RANGE, e.to_string())),
        DataType::Float32 | DataType::Float64 => {
            let doubles =
                cast(array, &DataType::Float64).map_err(|e| SqlError::Query(e.to_string()))?;
            let rounded: Float64Array = doubles
                .as_primitive::<Float64Type>()
                .unary(f64::round_ties_even);
            Ok(Arc::new(rounded))
        }
        _ => Ok(Arc::clone(array)),
    }
}

/// `CAST(expr AS to)` with `expr` of type `from`, rounding first where `to` is an
/// integer type and `from` holds fractions; `None` where nothing needs rounding.
pub(crate) fn rounding_cast(expr: &Expr, from: &DataType, to: &DataType) -> Option<Expr> {
    if !integer(to) {
        return None;
    }
    let rounded = match from {
        DataType::Decimal128(p, s) if *s > 0 => Expr::Cast(Cast::new(
            Box::new(expr.clone()),
            DataType::Decimal128(*p, 0),
        )),
        DataType::Float32 | DataType::Float64 => Expr::ScalarFunction(ScalarFunction::new_udf(
            Arc::new(ScalarUDF::from(Rint::new())),
            vec![Expr::Cast(Cast::new(
                Box::new(expr.clone()),
                DataType::Float64,
            ))],
        )),
        _ => return None,
    };
    Some(Expr::Cast(Cast::new(Box::new(rounded), to.clone())))
}

/// A double rounded half to even (C's `rint`, what PostgreSQL's float-to-integer
/// casts use).
#[derive(Debug, PartialEq, Eq, Hash)]
struct Rint {
    signature: Signature,
}

impl Rint {
    fn new() -> Rint {
        Rint {
            signature: Signature::exact(vec![DataType::Float64], Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for Rint {
    fn name(&self) -> &str {
        "pmdb_rint"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Float64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let [arg] = args.args.as_slice() else {
            return Err(crate::error::external(SqlError::Query(
                "pmdb_rint takes one argument".into(),
            )));
        };
        Ok(match arg {
            ColumnarValue::Scalar(v) => ColumnarValue::Scalar(match v {
                ScalarValue::Float64(x) => ScalarValue::Float64(x.map(f64::round_ties_even)),
                other => other.clone(),
            }),
            ColumnarValue::Array(a) => ColumnarValue::Array(Arc::new(
                a.as_primitive::<Float64Type>()
                    .unary::<_, Float64Type>(f64::round_ties_even),
            )),
        })
    }
}
