//! Floating-point numbers made decimals through their decimal digits, as PostgreSQL
//! makes them, where Arrow's cast multiplies the double by 10^scale and so invents
//! digits (`987654321.987::float8::numeric` gave `987654321.9869999104`).
//!
//! A double keeps 15 significant digits (a real 6), as PostgreSQL's `float8_numeric`
//! and `float4_numeric` keep them, and those are rounded to the decimal's scale half
//! away from zero, as a numeric is: a floating-point number is approximate already, so
//! unlike a number given exactly (see [`crate::numeric_places`]) it is rounded to the
//! places of a NUMERIC without a precision too.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Decimal128Array};
use datafusion::arrow::datatypes::{DataType, Float32Type, Float64Type};
use datafusion::common::Result as DfResult;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use crate::error::{SqlError, external, state};
use crate::types::fits_precision;

/// The significant digits PostgreSQL keeps of a double (DBL_DIG) and of a real
/// (FLT_DIG) made a numeric.
const DOUBLE_DIGITS: usize = 15;
const REAL_DIGITS: usize = 6;

/// `x` as the unscaled integer of a DECIMAL(`precision`, `scale`) through its first
/// `significant` digits; 22003 if it has no such value (out of range, NaN, infinite).
fn decimal_of(x: f64, significant: usize, precision: u8, scale: i8) -> Result<i128, SqlError> {
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
    let text = format!("{x:.*e}", significant.saturating_sub(1));
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

/// `array` of doubles or reals as decimals of type `to`; `None` when `array` holds no
/// floating-point numbers or `to` is no decimal.
pub(crate) fn as_decimals(array: &ArrayRef, to: &DataType) -> Option<Result<ArrayRef, SqlError>> {
    let &DataType::Decimal128(precision, scale) = to else {
        return None;
    };
    let converted = match array.data_type() {
        DataType::Float64 => decimals(
            array.as_primitive::<Float64Type>().iter(),
            DOUBLE_DIGITS,
            precision,
            scale,
        ),
        DataType::Float32 => decimals(
            array
                .as_primitive::<Float32Type>()
                .iter()
                .map(|v| v.map(f64::from)),
            REAL_DIGITS,
            precision,
            scale,
        ),
        _ => return None,
    };
    Some(converted.map(|a| Arc::new(a) as ArrayRef))
}

fn decimals(
    values: impl Iterator<Item = Option<f64>>,
    significant: usize,
    precision: u8,
    scale: i8,
) -> Result<Decimal128Array, SqlError> {
    let values = values
        .map(|v| {
            v.map(|x| decimal_of(x, significant, precision, scale))
                .transpose()
        })
        .collect::<Result<Decimal128Array, SqlError>>()?;
    values
        .with_precision_and_scale(precision, scale)
        .map_err(|e| SqlError::Query(e.to_string()))
}

/// `CAST(expr AS to)` with `expr` of type `from`, made through decimal digits where
/// `from` is floating-point and `to` a decimal; `None` otherwise.
pub(crate) fn numeric_cast(expr: &Expr, from: &DataType, to: &DataType) -> Option<Expr> {
    let &DataType::Decimal128(precision, scale) = to else {
        return None;
    };
    let significant = match from {
        DataType::Float64 => DOUBLE_DIGITS,
        DataType::Float32 => REAL_DIGITS,
        _ => return None,
    };
    Some(Expr::ScalarFunction(ScalarFunction::new_udf(
        Arc::new(ScalarUDF::from(FloatNumeric {
            signature: Signature::any(1, Volatility::Immutable),
            significant,
            precision,
            scale,
        })),
        vec![expr.clone()],
    )))
}

/// A double or real made a decimal through its significant digits.
#[derive(Debug, PartialEq, Eq, Hash)]
struct FloatNumeric {
    signature: Signature,
    significant: usize,
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
            self.significant,
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
    fn doubles_keep_fifteen_digits() {
        let d = |x: f64, p, s| decimal_of(x, DOUBLE_DIGITS, p, s).unwrap();
        assert_eq!(d(987654321.987, 38, 10), 9_876_543_219_870_000_000);
        assert_eq!(d(123456789012.34, 38, 10), 1_234_567_890_123_400_000_000);
        assert_eq!(d(-0.125, 10, 2), -13);
        assert_eq!(d(0.125, 10, 2), 13);
        assert_eq!(d(1e20, 38, 10), 10i128.pow(30));
        assert_eq!(d(1e-30, 38, 10), 0);
        assert_eq!(d(19.99, 4, 2), 1999);
        assert_eq!(d(0.1 + 0.2, 38, 20), 30_000_000_000_000_000_000);
        assert_eq!(d(1.0 / 3.0, 38, 20), 33_333_333_333_333_300_000);
        assert_eq!(
            decimal_of(f64::from(0.1f32), REAL_DIGITS, 10, 3).unwrap(),
            100
        );
        assert!(decimal_of(100.0, DOUBLE_DIGITS, 4, 2).is_err());
        assert!(decimal_of(f64::NAN, DOUBLE_DIGITS, 38, 10).is_err());
        assert!(decimal_of(1e300, DOUBLE_DIGITS, 38, 0).is_err());
    }
}
