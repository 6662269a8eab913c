//! Timestamps, times, intervals, floats and arrays cast to text in PostgreSQL's output
//! form (`2016-10-10 00:00:00`, `1 day 02:00:00`, `8`, `{1,2,"a b"}`), where
//! DataFusion's cast writes Arrow's (`2016-10-10T00:00:00`, `8.0`, `[1, 2, a b]`): drivers build SQL literals
//! from such casts (asyncpg's mogrify), and applications compare and store the text.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float32Type, Float64Type, IntervalUnit, TimeUnit};
use datafusion::arrow::datatypes::{Time64MicrosecondType, TimestampMicrosecondType};
use datafusion::arrow::temporal_conversions::as_datetime;
use datafusion::common::Result as DfResult;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use crate::array_text::list_element;
use crate::arrow_conv::interval_at;
use crate::error::{SqlError, external};
use crate::text_forms::{bytea_text, double_text, real_text, timestamp_text};
use crate::time_of_day::time_text;
use crate::udf_result::shaped;

/// Whether a cast of a `from` value to text must be written in PostgreSQL's form.
pub(crate) fn needs_pg_text(from: &DataType) -> bool {
    matches!(
        from,
        DataType::Timestamp(..)
            | DataType::Time64(_)
            | DataType::Interval(IntervalUnit::MonthDayNano)
            | DataType::Float32
            | DataType::Float64
    ) || list_element(from).is_some()
}

/// `e` (of a type [`needs_pg_text`] accepts) as PostgreSQL's text.
pub(crate) fn pg_text(e: Expr) -> Expr {
    Expr::ScalarFunction(ScalarFunction::new_udf(
        Arc::new(ScalarUDF::from(PgText::new())),
        vec![e],
    ))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct PgText {
    signature: Signature,
}

impl PgText {
    fn new() -> PgText {
        PgText {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for PgText {
    fn name(&self) -> &str {
        "pmdb_text"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let [arg] = args.args.as_slice() else {
            return Err(external(SqlError::Query(
                "pmdb_text takes one argument".into(),
            )));
        };
        let scalar = matches!(arg, ColumnarValue::Scalar(_));
        let array = arg.to_array(args.number_rows)?;
        let out: StringArray = texts(&array, false)?.into_iter().collect();
        shaped(scalar, Arc::new(out))
    }
}

/// Each value of `array` as PostgreSQL writes it; `in_array` when the values are an
/// array's elements (booleans are then `t` and `f`).
fn texts(array: &ArrayRef, in_array: bool) -> DfResult<Vec<Option<String>>> {
    let valid = |i: usize| array.is_valid(i);
    Ok(match array.data_type() {
        // In microseconds, PostgreSQL's precision (and a range nanoseconds lack).
        DataType::Timestamp(_, zone) => cast(
            array,
            &DataType::Timestamp(TimeUnit::Microsecond, zone.clone()),
        )?
        .as_primitive::<TimestampMicrosecondType>()
        .iter()
        .map(|v| {
            v.and_then(as_datetime::<TimestampMicrosecondType>)
                .map(|at| timestamp_text(at, zone.is_some()))
        })
        .collect(),
        DataType::Time64(_) => cast(array, &DataType::Time64(TimeUnit::Microsecond))?
            .as_primitive::<Time64MicrosecondType>()
            .iter()
            .map(|v| v.map(time_text))
            .collect(),
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..) => {
            let mut out = Vec::with_capacity(array.len());
            for i in 0..array.len() {
                if !valid(i) {
                    out.push(None);
                    continue;
                }
                let values = match array.data_type() {
                    DataType::List(_) => array.as_list::<i32>().value(i),
                    DataType::LargeList(_) => array.as_list::<i64>().value(i),
                    _ => array.as_fixed_size_list().value(i),
                };
                let elements = texts(&values, true)?;
                let nested = list_element(values.data_type()).is_some();
                let items: Vec<String> = elements
                    .into_iter()
                    .map(|e| match e {
                        None => "NULL".to_string(),
                        Some(s) if nested => s,
                        Some(s) => quoted_element(&s),
                    })
                    .collect();
                out.push(Some(format!("{{{}}}", items.join(","))));
            }
            out
        }
        DataType::Interval(IntervalUnit::MonthDayNano) => (0..array.len())
            .map(|i| valid(i).then(|| interval_at(array.as_ref(), i).to_string()))
            .collect(),
        DataType::Boolean if in_array => array
            .as_boolean()
            .iter()
            .map(|b| b.map(|b| if b { "t" } else { "f" }.to_string()))
            .collect(),
        DataType::Binary => array
            .as_binary::<i32>()
            .iter()
            .map(|b| b.map(bytea_text))
            .collect(),
        DataType::Float64 => array
            .as_primitive::<Float64Type>()
            .iter()
            .map(|v| v.map(double_text))
            .collect(),
        DataType::Float32 => array
            .as_primitive::<Float32Type>()
            .iter()
            .map(|v| v.map(real_text))
            .collect(),
        _ => {
            let strings = cast(array, &DataType::Utf8)?;
            strings
                .as_string::<i32>()
                .iter()
                .map(|s| s.map(str::to_string))
                .collect()
        }
    })
}

/// An element of an array's text, in double quotes where PostgreSQL puts them.
fn quoted_element(s: &str) -> String {
    let plain = !s.is_empty()
        && !s.eq_ignore_ascii_case("null")
        && !s
            .chars()
            .any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\') || c.is_ascii_whitespace());
    if plain {
        return s.to_string();
    }
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        if matches!(c, '"' | '\\') {
            q.push('\\');
        }
        q.push(c);
    }
    q.push('"');
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_elements_are_quoted_as_postgresql_quotes_them() {
        assert_eq!(quoted_element("a"), "a");
        assert_eq!(quoted_element(""), "\"\"");
        assert_eq!(quoted_element("NULL"), "\"NULL\"");
        assert_eq!(quoted_element("a b"), "\"a b\"");
        assert_eq!(quoted_element("x\"y\\z"), "\"x\\\"y\\\\z\"");
        assert_eq!(quoted_element("{1}"), "\"{1}\"");
    }
}
