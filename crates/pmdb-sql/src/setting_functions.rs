//! The settings functions: `set_config(name, value, is_local)`, which drivers and
//! frameworks call to set the session's time zone (Django at each new connection) and
//! pg_dump's scripts to empty the search path, and `current_setting(name [,
//! missing_ok])`, which reads the connection's settings as its server keeps them
//! (asyncpg reads `jit` before it looks up types).
//!
//! A server that keeps the settings checks each `set_config` as it checks a SET (its
//! [`SettingCheck`]) and takes the change once the statement has run. Without one (an
//! engine on its own), `set_config` takes TimeZone set to UTC (in any of its names) and
//! any setting set to the value it has (asyncpg turns `jit` off, which it is), and
//! refuses any other with 0A000, rather than accept a value it would ignore.

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
use parking_lot::{Mutex, RwLock};

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

/// How a server checks `set_config(name, value)` as it checks a SET: the value as the
/// setting will show it, or why it cannot be set.
pub type SettingCheck = Arc<dyn Fn(&str, &str) -> Result<String, SqlError> + Send + Sync>;

/// A change `set_config` asked for, which the server takes once its statement ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingChange {
    /// In lower case.
    pub name: String,
    pub value: String,
    /// Until the end of the block (`is_local`), as `SET LOCAL`.
    pub local: bool,
}

/// A connection's settings as `current_setting` reads them, by name in lower case: the
/// server that keeps the settings stores each change here, and takes the changes
/// `set_config` asks for from here.
#[derive(Clone, Default)]
pub struct SettingValues(Arc<Shared>);

#[derive(Default)]
struct Shared {
    values: RwLock<Arc<BTreeMap<String, String>>>,
    check: RwLock<Option<SettingCheck>>,
    asked: Mutex<Vec<SettingChange>>,
}

impl std::fmt::Debug for SettingValues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SettingValues")
            .field("values", &self.0.values.read())
            .finish_non_exhaustive()
    }
}

impl SettingValues {
    pub fn store(&self, values: &BTreeMap<String, String>) {
        *self.0.values.write() = Arc::new(values.clone());
    }

    fn get(&self, name: &str) -> Option<String> {
        self.0.values.read().get(&name.to_lowercase()).cloned()
    }

    /// Lets `set_config` change settings: each change `check` takes is kept for
    /// [`SettingValues::take_changes`].
    pub fn take_changes_checked_by(&self, check: SettingCheck) {
        *self.0.check.write() = Some(check);
    }

    /// The changes `set_config` asked for since the last call, in order.
    pub fn take_changes(&self) -> Vec<SettingChange> {
        std::mem::take(&mut *self.0.asked.lock())
    }

    /// What `set_config(name, value, local)` sets the setting to.
    fn set(&self, name: &str, value: &str, local: bool) -> Result<String, SqlError> {
        let check = self.0.check.read().clone();
        let Some(check) = check else {
            return set(name, value, self.get(name).as_deref());
        };
        let value = check(&name.to_lowercase(), value)?;
        self.0.asked.lock().push(SettingChange {
            name: name.to_lowercase(),
            value: value.clone(),
            local,
        });
        Ok(value)
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
        let scalar = crate::udf_result::all_scalar(&args.args);
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

/// What `set_config(name, value)` sets to in an engine on its own, or why it cannot:
/// `now` is the setting's value, if it has one.
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
        let local = arrays[2].as_boolean();
        let out = (0..args.number_rows)
            .map(|i| {
                if names.is_null(i) || values.is_null(i) {
                    return Ok(None);
                }
                let (name, value) = (names.value(i), values.value(i));
                let local = local.is_valid(i) && local.value(i);
                self.values.set(name, value, local).map(Some)
            })
            .collect::<Result<StringArray, SqlError>>()
            .map_err(external)?;
        let scalar = crate::udf_result::all_scalar(&args.args);
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
