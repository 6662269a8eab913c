//! `set_config(name, value, is_local)`, which drivers and frameworks call to set the
//! session's time zone (Django at each new connection). pmdb shows TIMESTAMPTZ values
//! in UTC only, so it takes TimeZone set to UTC (in any of its names) and refuses any
//! other zone or setting with 0A000, rather than accept a value it would ignore.

use datafusion::arrow::array::{Array, AsArray, StringArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result as DfResult, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

use crate::arrow_conv::names_utc;
use crate::error::{SqlError, external};

pub(crate) fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::from(SetConfig::new()));
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct SetConfig {
    signature: Signature,
}

impl SetConfig {
    fn new() -> SetConfig {
        SetConfig {
            signature: Signature::exact(
                vec![DataType::Utf8, DataType::Utf8, DataType::Boolean],
                Volatility::Volatile,
            ),
        }
    }
}

/// What `set_config(name, value)` sets to, or why it cannot.
fn set(name: &str, value: &str) -> Result<String, SqlError> {
    if name.eq_ignore_ascii_case("timezone") && names_utc(value) {
        Ok(value.to_owned())
    } else {
        Err(SqlError::unsupported(format!(
            "set_config({name:?}, {value:?}): pmdb sets only TimeZone, to UTC"
        )))
    }
}

impl ScalarUDFImpl for SetConfig {
    fn name(&self) -> &str {
        "set_config"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let (names, values) = (arrays[0].as_string::<i32>(), arrays[1].as_string::<i32>());
        let out = (0..args.number_rows)
            .map(|i| {
                if names.is_null(i) || values.is_null(i) {
                    return Ok(None);
                }
                set(names.value(i), values.value(i)).map(Some)
            })
            .collect::<Result<StringArray, SqlError>>()
            .map_err(external)?;
        Ok(if args.number_rows == 1 {
            ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?)
        } else {
            ColumnarValue::Array(std::sync::Arc::new(out))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_utc_time_zones_are_set() {
        for zone in ["UTC", "Etc/UTC", "utc", "GMT", "+00:00"] {
            assert_eq!(set("TimeZone", zone).unwrap(), zone);
        }
        for (name, value) in [
            ("TimeZone", "Europe/Paris"),
            ("TimeZone", "+01"),
            ("search_path", ""),
        ] {
            assert_eq!(set(name, value).unwrap_err().sqlstate(), "0A000");
        }
    }
}
