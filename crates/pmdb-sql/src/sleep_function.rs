//! `pg_sleep(seconds)`: waits, then returns nothing (a NULL). The wait is a timer on the
//! statement's task, so a cancel request or `statement_timeout` ends it at once, as in
//! PostgreSQL; no thread sleeps.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::common::{Result as DfResult, ScalarValue};
use datafusion::logical_expr::async_udf::{AsyncScalarUDF, AsyncScalarUDFImpl};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

pub(crate) fn register(ctx: &SessionContext) {
    ctx.register_udf(AsyncScalarUDF::new(Arc::new(Sleep::new())).into_scalar_udf());
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Sleep {
    signature: Signature,
}

impl Sleep {
    fn new() -> Sleep {
        Sleep {
            signature: Signature::exact(vec![DataType::Float64], Volatility::Volatile),
        }
    }
}

/// How long `seconds` asks to wait: nothing for a NULL, a negative number or NaN.
fn wait_of(seconds: Option<f64>) -> Duration {
    seconds.filter(|s| *s > 0.0).map_or(Duration::ZERO, |s| {
        Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX)
    })
}

impl ScalarUDFImpl for Sleep {
    fn name(&self) -> &str {
        "pg_sleep"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Null)
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        Err(datafusion::error::DataFusionError::Internal(
            "pg_sleep runs asynchronously".into(),
        ))
    }
}

#[async_trait]
impl AsyncScalarUDFImpl for Sleep {
    async fn invoke_async_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let seconds = ColumnarValue::values_to_arrays(&args.args)?;
        let seconds = seconds[0].as_primitive::<Float64Type>();
        // Each row waits in turn, as PostgreSQL calls the function once per row.
        for row in 0..args.number_rows {
            let s = seconds.is_valid(row).then(|| seconds.value(row));
            tokio::time::sleep(wait_of(s)).await;
        }
        Ok(ColumnarValue::Scalar(ScalarValue::Null))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_are_never_negative_and_never_overflow() {
        assert_eq!(wait_of(None), Duration::ZERO);
        assert_eq!(wait_of(Some(-1.0)), Duration::ZERO);
        assert_eq!(wait_of(Some(f64::NAN)), Duration::ZERO);
        assert_eq!(wait_of(Some(0.25)), Duration::from_millis(250));
        assert_eq!(wait_of(Some(1e300)), Duration::MAX);
    }
}
