//! The settings functions: `set_config(name, value, is_local)`, which drivers and
//! frameworks call to set the session's time zone (Django at each new connection) —
//! pmdb shows TIMESTAMPTZ values in UTC only, so it takes TimeZone set to UTC (in any of
//! its names), and any setting to the value it has (asyncpg turns `jit` off, which it
//! is), and refuses any other zone or setting with 0A000, rather than accept a value it
//! would ignore — and `current_setting(name [, missing_ok])`, which reads the
//! connection's settings as its server keeps them (asyncpg reads `jit` before it looks
//! up types).

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, StringArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result as DfResult;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};
use datafusion::prelude::SessionContext;
use parking_lot::RwLock;

use crate::arrow_conv::names_utc;
use crate::error::{SqlError, external};
use crate::udf_result::shaped;

pub(crate) fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::from(SetConfig::new(SettingValues::default())));
}

/// Gives a session `current_setting` and `set_config`, reading `values`.
pub(crate) fn register_current_setting(ctx: &SessionContext, values: SettingValues) {
    ctx.register_udf(ScalarUDF::from(CurrentSetting::new(values.clone())));
    ctx.register_udf(ScalarUDF::from(SetConfig::new(values)));
}

/// A connection's settings as `current_setting` reads them, by name in lower case: the
/// server that keeps the settings stores each change here.
#[derive(Clone, Debug, Default)]
pub struct SettingValues(Arc<RwLock<Arc<BTreeMap<String, String>>>>);

impl SettingValues {
    pub fn store(&self, values: &BTreeMap<String, String>) {
        *self.0.write() = Arc::new(values.clone());
    }

    fn get(&self, name: &str) -> Option<String> {
        self.0.read().get(&name.to_lowercase()).cloned()
    }
}

#[derive(Debug)]
struct CurrentSetting {
    signature: Signature,
    values: SettingValues,
}

impl CurrentSetting {
    fn new(values: SettingValues) -> CurrentSetting {
        CurrentSetting {
            signature: Signature::one_of(
                vec![
                    TypeSignature::Exact(vec![DataType::Utf8]),
                    TypeSignature::Exact(vec![DataType::Utf8, DataType::Boolean]),
                ],
                Volatility::Stable,
            ),
            values,
        }
    }
}

impl PartialEq for CurrentSetting {
    fn eq(&self, other: &CurrentSetting) -> bool {
        Arc::ptr_eq(&self.values.0, &other.values.0)
    }
}

impl Eq for CurrentSetting {}

impl Hash for CurrentSetting {
    fn hash<H: Hasher>(&self, state: &mut H) {
        Arc::as_ptr(&self.values.0).hash(state);
    }
}

impl ScalarUDFImpl for CurrentSetting {
    fn name(&self) -> &str {
        "current_setting"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let names = arrays[0].as_string::<i32>();
        let missing_ok = arrays.get(1).map(|a| a.as_boolean());
        let out = (0..args.number_rows)
            .map(|i| {
                if names.is_null(i) {
                    return Ok(None);
                }
                let name = names.value(i);
                match self.values.get(name) {
                    Some(v) => Ok(Some(v)),
                    None if missing_ok.is_some_and(|m| m.is_valid(i) && m.value(i)) => Ok(None),
                    None => Err(SqlError::user(
                        "42704",
                        format!("unrecognized configuration parameter \"{name}\""),
                    )),
                }
            })
            .collect::<Result<StringArray, SqlError>>()
            .map_err(external)?;
        let scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        shaped(scalar, Arc::new(out))
    }
}

#[derive(Debug)]
struct SetConfig {
    signature: Signature,
    values: SettingValues,
}

impl SetConfig {
    fn new(values: SettingValues) -> SetConfig {
        SetConfig {
            signature: Signature::exact(
                vec![DataType::Utf8, DataType::Utf8, DataType::Boolean],
                Volatility::Volatile,
            ),
            values,
        }
    }
}

impl PartialEq for SetConfig {
    fn eq(&self, other: &SetConfig) -> bool {
        Arc::ptr_eq(&self.values.0, &other.values.0)
    }
}

impl Eq for SetConfig {}

impl Hash for SetConfig {
    fn hash<H: Hasher>(&self, state: &mut H) {
        Arc::as_ptr(&self.values.0).hash(state);
    }
}

/// What `set_config(name, value)` sets to, or why it cannot: `now` is the setting's
/// value, if it has one.
fn set(name: &str, value: &str, now: Option<&str>) -> Result<String, SqlError> {
    if (name.eq_ignore_ascii_case("timezone") && names_utc(value)) || now == Some(value) {
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
                let (name, value) = (names.value(i), values.value(i));
                set(name, value, self.values.get(name).as_deref()).map(Some)
            })
            .collect::<Result<StringArray, SqlError>>()
            .map_err(external)?;
        let scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        shaped(scalar, Arc::new(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_utc_time_zones_and_values_already_set_are_set() {
        for zone in ["UTC", "Etc/UTC", "utc", "GMT", "+00:00"] {
            assert_eq!(set("TimeZone", zone, Some("UTC")).unwrap(), zone);
        }
        for (name, value) in [
            ("TimeZone", "Europe/Paris"),
            ("TimeZone", "+01"),
            ("search_path", ""),
            ("jit", "on"),
        ] {
            assert_eq!(
                set(name, value, Some("off")).unwrap_err().sqlstate(),
                "0A000"
            );
        }
        assert_eq!(set("jit", "off", Some("off")).unwrap(), "off");
        assert!(set("jit", "off", None).is_err());
    }
}
