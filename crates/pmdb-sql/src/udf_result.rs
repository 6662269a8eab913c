//! What pmdb's functions hand DataFusion back: one value when every argument was one
//! (a constant stays a constant), else an array of the rows.

use datafusion::arrow::array::ArrayRef;
use datafusion::common::{Result as DfResult, ScalarValue};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs};

/// Whether every argument is one value (a constant): the result then is one too.
pub(crate) fn all_scalar(args: &[ColumnarValue]) -> bool {
    args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)))
}

/// A call's arguments as arrays of its rows.
pub(crate) struct Arguments {
    pub arrays: Vec<ArrayRef>,
    /// Every argument was one value ([`all_scalar`]).
    pub scalar: bool,
    /// How many rows to compute: one when `scalar`.
    pub rows: usize,
}

pub(crate) fn arguments(args: &ScalarFunctionArgs) -> DfResult<Arguments> {
    let scalar = all_scalar(&args.args);
    let arrays = args
        .args
        .iter()
        .map(|a| a.to_array(args.number_rows))
        .collect::<DfResult<Vec<_>>>()?;
    Ok(Arguments {
        arrays,
        scalar,
        rows: if scalar { 1 } else { args.number_rows },
    })
}

/// `out`, computed for the call's rows, as a scalar when `scalar` (all the arguments
/// were scalars) says so.
pub(crate) fn shaped(scalar: bool, out: ArrayRef) -> DfResult<ColumnarValue> {
    Ok(if scalar {
        ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?)
    } else {
        ColumnarValue::Array(out)
    })
}
