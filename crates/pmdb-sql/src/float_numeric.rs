//! Floating-point numbers made decimals through their decimal digits, as PostgreSQL
//! makes them, where Arrow's cast multiplies the double by 10^scale and so invents
//! digits (`987654321.987::numeric` gave `987654321.9869999104`).
//!
//! A number with a fraction written in SQL is a numeric to PostgreSQL, which DataFusion
//! reads as a double: it becomes the shortest decimal that reads back as that double,
//! which is what was written whenever it had at most 15 significant digits. A double
//! computed in a query and cast to numeric keeps 15 significant digits (6 for a REAL), as
//! PostgreSQL's `float8_numeric` does. A value written to a decimal column cannot be told
//! from a literal, so it is read as one. Then the digits are rounded to the scale half
//! away from zero, as a numeric is.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Decimal128Array};
use datafusion::arrow::datatypes::{DataType, Float32Type, Float64Type};
use datafusion::common::{Result as DfResult, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use crate::error::{SqlError, external, state};
use crate::types::fits_precision;

/// How many significant digits of a double are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Digits {
    /// As few as read back as the same double (a literal, a value written).
    Shortest,
    /// PostgreSQL's DBL_DIG (15) or FLT_DIG (6).
    Significant(usize),
}

/// `x` as the unscaled integer of a DECIMAL(`precision`, `scale`); 22003 if it has no
/// such value (out of range, NaN, infinite).
fn decimal_of(x: f64, digits: Digits, precision: u8, scale: i8) -> Result<i128, SqlError> {
    let out_of_range = || {
        SqlError::user(
            state::NUMERIC_OUT_OF_RANGE,
            format!("numeric field overflow: {x} does not fit a NUMERIC({precision},{scale})"),
        )
    };
    if !x.is_finite() {
        return Err(out_of_range());
    }
    // Scientific form: "-9.87654321987e8".
    let text = match digits {
        Digits::Shortest => format!("{x:e}"),
        Digits::Significant(n) => format!("{x:.*e}", n.saturating_sub(1)),
    };
    let (mantissa, exponent) = text.split_once('e').ok_or_else(out_of_range)?;
    let exponent: i32 = exponent.parse().map_err(|_| out_of_range())?;
    let negative = mantissa.starts_with('-');
    let fraction_digits = mantissa.split_once('.').map_or(0, |(_, f)| f.len());
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let m: i128 = digits.parse().map_err(|_| out_of_range())?;
    // x = m * 10^(exponent - fraction_digits); unscaled = x * 10^scale.
    let shift = exponent - fraction_digits as i32 + i32::from(scale);
    let unscaled = if shift >= 0 {
        10i128
            .checked_pow(shift as u32)
            .and_then(|p| m.checked_mul(p))
            .ok_or_else(out_of_range)?
    } else {
        match 10i128.checked_pow(shift.unsigned_abs()) {
            // Half away from zero.
            Some(p) => (m + p / 2) / p,
            // More places dropped than an i128 has digits: m < 10^18 rounds to 0.
            None => 0,
        }
    };
    let unscaled = if negative { -unscaled } else { unscaled };
    if fits_precision(precision, unscaled) {
        Ok(unscaled)
    } else {
        Err(out_of_range())
    }
}

/// Where the floating-point numbers being made decimals come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// Values written to a column: literals among them, which cannot be told apart.
    Written,
    /// A column of its own type (a column's type changed).
    Stored,
}

/// `array` of doubles or reals as decimals of type `to`; `None` when `array` holds no
/// floating-point numbers or `to` is no decimal.
pub(crate) fn as_decimals(
    array: &ArrayRef,
    to: &DataType,
    source: Source,
) -> Option<Result<ArrayRef, SqlError>> {
    let &DataType::Decimal128(precision, scale) = to else {
        return None;
    };
    let converted = match array.data_type() {
        DataType::Float64 => decimals(
            array.as_primitive::<Float64Type>().iter(),
            match source {
                Source::Written => Digits::Shortest,
                Source::Stored => Digits::Significant(15),
            },
            precision,
            scale,
        ),
        DataType::Float32 => decimals(
            array
                .as_primitive::<Float32Type>()
                .iter()
                .map(|v| v.map(f64::from)),
            Digits::Significant(6),
            precision,
            scale,
        ),
        _ => return None,
    };
    Some(converted.map(|a| Arc::new(a) as ArrayRef))
}

fn decimals(
    values: impl Iterator<Item = Option<f64>>,
    digits: Digits,
    precision: u8,
    scale: i8,
) -> Result<Decimal128Array, SqlError> {
    let values = values
        .map(|v| {
            v.map(|x| decimal_of(x, digits, precision, scale))
                .transpose()
        })
        .collect::<Result<Decimal128Array, SqlError>>()?;
    values
        .with_precision_and_scale(precision, scale)
        .map_err(|e| SqlError::Query(e.to_string()))
}

/// `CAST(expr AS to)` with `expr` of type `from`, made through decimal digits where
/// `from` is floating-point and `to` a decimal; `None` otherwise. A literal is folded.
pub(crate) fn numeric_cast(
    expr: &Expr,
    from: &DataType,
    to: &DataType,
) -> Option<Result<Expr, SqlError>> {
    let &DataType::Decimal128(precision, scale) = to else {
        return None;
    };
    let digits = match from {
        DataType::Float64 => Digits::Significant(15),
        DataType::Float32 => Digits::Significant(6),
        _ => return None,
    };
    Some(match literal(expr) {
        Some(x) => x
            .map(|x| decimal_of(x, Digits::Shortest, precision, scale))
            .transpose()
            .map(|v| Expr::Literal(ScalarValue::Decimal128(v, precision, scale), None)),
        None => Ok(Expr::ScalarFunction(ScalarFunction::new_udf(
            Arc::new(ScalarUDF::from(FloatNumeric {
                signature: Signature::any(1, Volatility::Immutable),
                digits,
                precision,
                scale,
            })),
            vec![expr.clone()],
        ))),
    })
}

/// The value of `expr` if it is a number with a fraction written in SQL (`2.5`, `-2.5`;
/// `Some(None)` for a NULL of its type), which DataFusion reads as a double.
pub(crate) fn literal(expr: &Expr) -> Option<Option<f64>> {
    match expr {
        Expr::Literal(ScalarValue::Float64(x), _) => Some(*x),
        Expr::Negative(e) => literal(e).map(|x| x.map(|x| -x)),
        _ => None,
    }
}

/// A double or real made a decimal through its significant digits.
#[derive(Debug, PartialEq, Eq, Hash)]
struct FloatNumeric {
    signature: Signature,
    digits: Digits,
    precision: u8,
    scale: i8,
}

impl ScalarUDFImpl for FloatNumeric {
    fn name(&self) -> &str {
        "pmdb_float_numeric"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Decimal128(self.precision, self.scale))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let [arg] = args.args.as_slice() else {
            return Err(external(SqlError::Query(
                "pmdb_float_numeric takes one argument".into(),
            )));
        };
        let scalar = matches!(arg, ColumnarValue::Scalar(_));
        let array = arg.to_array(1)?;
        let doubles = datafusion::arrow::compute::cast(&array, &DataType::Float64)?;
        let out = decimals(
            doubles.as_primitive::<Float64Type>().iter(),
            self.digits,
            self.precision,
            self.scale,
        )
        .map_err(external)?;
        crate::udf_result::shaped(scalar, Arc::new(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_keep_the_digits_they_were_written_with() {
        let d = |x: f64, p, s| decimal_of(x, Digits::Shortest, p, s).unwrap();
        assert_eq!(d(987654321.987, 38, 10), 9_876_543_219_870_000_000);
        assert_eq!(d(123456789012.34, 38, 10), 1_234_567_890_123_400_000_000);
        assert_eq!(d(-0.125, 10, 2), -13);
        assert_eq!(d(0.125, 10, 2), 13);
        assert_eq!(d(1e20, 38, 10), 10i128.pow(30));
        assert_eq!(d(1e-30, 38, 10), 0);
        assert_eq!(d(19.99, 4, 2), 1999);
        assert!(decimal_of(100.0, Digits::Shortest, 4, 2).is_err());
        assert!(decimal_of(f64::NAN, Digits::Shortest, 38, 10).is_err());
        assert!(decimal_of(1e300, Digits::Shortest, 38, 0).is_err());
    }

    #[test]
    fn computed_doubles_keep_fifteen_digits() {
        let d = |x: f64| decimal_of(x, Digits::Significant(15), 38, 20).unwrap();
        assert_eq!(d(0.1 + 0.2), 30_000_000_000_000_000_000);
        assert_eq!(
            decimal_of(1.0 / 3.0, Digits::Significant(15), 38, 20).unwrap(),
            33_333_333_333_333_300_000
        );
        assert_eq!(
            decimal_of(f64::from(0.1f32), Digits::Significant(6), 10, 3).unwrap(),
            100
        );
    }
}
