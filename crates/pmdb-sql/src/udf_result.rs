//! What pmdb's functions hand DataFusion back: one value when every argument was one
//! (a constant stays a constant), else an array of the rows.

use datafusion::arrow::array::ArrayRef;
use datafusion::common::{Result as DfResult, ScalarValue};
use datafusion::logical_expr::ColumnarValue;

/// `out`, computed for the call's rows, as a scalar when `scalar` (all the arguments
/// were scalars) says so.
pub(crate) fn shaped(scalar: bool, out: ArrayRef) -> DfResult<ColumnarValue> {
    Ok(if scalar {
        ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?)
    } else {
        ColumnarValue::Array(out)
    })
}
