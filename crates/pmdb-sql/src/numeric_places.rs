//! A number given for a NUMERIC without a precision (a literal, a parameter, COPY's
//! text) is refused, not rounded, when it has more places than that type keeps (10):
//! PostgreSQL would keep them all, so rounding would lose what the client wrote without
//! a word. Numbers computed in a statement (`x * 1.05`, `x / 3`) are rounded to the
//! type's places, as PostgreSQL rounds a quotient to its own precision, and so are
//! floating-point numbers, approximate already (see [`crate::float_numeric`]).
//!
//! Such a type is the Arrow type of a NUMERIC(38,10) too, which PostgreSQL rounds: a
//! number given for that declared type is refused alike, but for UPDATE's and upserts'
//! SET, which know the column.

use datafusion::arrow::array::{ArrayRef, AsArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{Result as DfResult, ScalarValue};
use datafusion::logical_expr::expr::Cast;
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::optimizer::AnalyzerRule;
use datafusion::sql::sqlparser::ast::{Expr as SqlExpr, UnaryOperator, Value};

use crate::error::{SqlError, external, state};
use crate::types::{MAX_DECIMAL_PRECISION, SqlType};

/// The Arrow type of a NUMERIC without a precision, and its places.
fn unconstrained() -> (DataType, i8) {
    let (precision, scale) = match SqlType::UNCONSTRAINED_NUMERIC {
        SqlType::Decimal {
            precision, scale, ..
        } => (precision, scale),
        _ => (MAX_DECIMAL_PRECISION, 0),
    };
    let scale = i8::try_from(scale).unwrap_or(0);
    (DataType::Decimal128(precision, scale), scale)
}

/// The places of a NUMERIC without a precision, if `ty` is its Arrow type.
fn kept_places(ty: &DataType) -> Option<i8> {
    let (numeric, places) = unconstrained();
    (ty == &numeric).then_some(places)
}

/// An error if the decimal `unscaled` × 10^-`scale` has digits beyond the places of
/// `to`, a NUMERIC without a precision; `Ok` for any other type.
fn check_unscaled(unscaled: i128, scale: i8, to: &DataType) -> Result<(), SqlError> {
    let Some(kept) = kept_places(to) else {
        return Ok(());
    };
    let dropped = i32::from(scale) - i32::from(kept);
    if dropped <= 0 {
        return Ok(());
    }
    let exact = match 10i128.checked_pow(dropped.unsigned_abs()) {
        Some(p) => unscaled % p == 0,
        None => unscaled == 0,
    };
    if exact {
        return Ok(());
    }
    Err(too_many_places(
        &ScalarValue::Decimal128(Some(unscaled), 38, scale).to_string(),
        kept,
    ))
}

/// As [`check_unscaled`], for a number written as text (`0.000000000001`, `1E-27`);
/// text that is no number is left to the conversion to refuse.
fn check_text(text: &str, to: &DataType) -> Result<(), SqlError> {
    let Some(kept) = kept_places(to) else {
        return Ok(());
    };
    let number = text.trim();
    let unsigned = number.strip_prefix(['-', '+']).unwrap_or(number);
    let Some((digits, scale)) = crate::numeric_literals::decimal_parts(unsigned) else {
        return Ok(());
    };
    let dropped = usize::try_from(scale - i64::from(kept)).unwrap_or(0);
    let kept_digits = digits.len().saturating_sub(dropped);
    if digits[kept_digits..].bytes().all(|b| b == b'0') {
        Ok(())
    } else {
        Err(too_many_places(number, kept))
    }
}

/// As [`check_text`], for an expression assigned to a column of type `ty` (an UPDATE's
/// or an upsert's SET): a number or a string written there is checked.
pub(crate) fn check_assigned(e: &SqlExpr, ty: SqlType) -> Result<(), SqlError> {
    if ty != SqlType::UNCONSTRAINED_NUMERIC {
        return Ok(());
    }
    let to = unconstrained().0;
    let mut negative = false;
    let mut e = e;
    loop {
        match e {
            SqlExpr::Value(v) => {
                return match &v.value {
                    Value::Number(text, _) | Value::SingleQuotedString(text) => {
                        // Shown with its sign when refused.
                        check_text(&format!("{}{text}", if negative { "-" } else { "" }), &to)
                    }
                    _ => Ok(()),
                };
            }
            SqlExpr::UnaryOp {
                op: UnaryOperator::Minus,
                expr,
            } => {
                negative = !negative;
                e = expr;
            }
            SqlExpr::UnaryOp {
                op: UnaryOperator::Plus,
                expr,
            }
            | SqlExpr::Nested(expr) => e = expr,
            _ => return Ok(()),
        }
    }
}

fn too_many_places(number: &str, kept: i8) -> SqlError {
    SqlError::user(
        state::NUMERIC_OUT_OF_RANGE,
        format!(
            "numeric value {number} has more than {kept} digits after the point, the most \
             pmdb's NUMERIC without a precision keeps; declare the column NUMERIC(p,s) with \
             s up to 38 to keep them"
        ),
    )
}

/// An error if the decimal `unscaled` × 10^-`scale` has more digits before the point
/// than the DECIMAL `to` holds (PostgreSQL's numeric field overflow).
fn check_range(unscaled: i128, scale: i8, to: &DataType) -> Result<(), SqlError> {
    let &DataType::Decimal128(precision, to_scale) = to else {
        return Ok(());
    };
    let integer_digits = |v: i128, s: i8| {
        let places = u32::try_from(s).unwrap_or(0);
        let whole = 10i128
            .checked_pow(places)
            .map_or(0, |p| v / p)
            .unsigned_abs();
        whole.checked_ilog10().map_or(0, |d| d + 1)
    };
    let room = u32::from(precision).saturating_sub(u32::try_from(to_scale).unwrap_or(0));
    if integer_digits(unscaled, scale) > room {
        return Err(SqlError::user(
            state::NUMERIC_OUT_OF_RANGE,
            format!(
                "numeric field overflow: {} has more than {room} digits before the point",
                ScalarValue::Decimal128(Some(unscaled), 38, scale)
            ),
        ));
    }
    Ok(())
}

/// As [`check_unscaled`], for a value that is about to become a `to`; a decimal with
/// more digits before the point than `to` holds is refused too.
pub(crate) fn check(value: &ScalarValue, to: &DataType) -> Result<(), SqlError> {
    match value {
        ScalarValue::Decimal128(Some(v), _, s) => {
            check_range(*v, *s, to)?;
            check_unscaled(*v, *s, to)
        }
        ScalarValue::Utf8(Some(text)) => check_text(text, to),
        _ => Ok(()),
    }
}

/// As [`check`], for each string of `array` about to become a `to`.
pub(crate) fn check_strings(array: &ArrayRef, to: &DataType) -> Result<(), SqlError> {
    if kept_places(to).is_none() {
        return Ok(());
    }
    match array.as_string_opt::<i32>() {
        Some(strings) => strings.iter().flatten().try_for_each(|s| check_text(s, to)),
        None => Ok(()),
    }
}

/// Checks each literal cast to a NUMERIC without a precision: the values of an INSERT,
/// the right sides of an UPDATE's SET, `1E-27::numeric`.
#[derive(Debug)]
pub(crate) struct ExactInput;

impl AnalyzerRule for ExactInput {
    fn name(&self) -> &str {
        "pmdb_exact_numeric_input"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> DfResult<LogicalPlan> {
        crate::expr_rewrite::rewrite_expressions(plan, |e, _| {
            if let Expr::Cast(Cast { expr, field }) = &e
                && let Expr::Literal(value, _) = expr.as_ref()
            {
                check(value, field.data_type()).map_err(external)?;
            }
            Ok(Transformed::no(e))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_beyond_ten_are_refused_unless_zero() {
        let numeric = unconstrained().0;
        assert!(check_unscaled(1, 27, &numeric).is_err());
        assert!(check_unscaled(10i128.pow(17), 27, &numeric).is_ok());
        assert!(check_unscaled(12_345, 4, &numeric).is_ok());
        assert!(check_unscaled(123_456_789_012, 12, &numeric).is_err());
        assert!(check_unscaled(1, 27, &DataType::Decimal128(38, 2)).is_ok());
        assert!(check_unscaled(i128::MAX, 127, &numeric).is_err());
    }

    #[test]
    fn digits_before_the_point_are_bounded() {
        let overflow = |v: i128, s: i8, p: u8, to: i8| {
            check(
                &ScalarValue::Decimal128(Some(v), 38, s),
                &DataType::Decimal128(p, to),
            )
            .is_err()
        };
        assert!(overflow(10i128.pow(30), 0, 38, 10));
        assert!(!overflow(10i128.pow(27), 0, 38, 10));
        assert!(overflow(-12_345, 2, 4, 2));
        assert!(!overflow(-9_999, 2, 4, 2));
        assert!(!overflow(1, 27, 38, 30));
    }

    #[test]
    fn assigned_numbers_are_checked_with_their_sign() {
        use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
        use datafusion::sql::sqlparser::parser::Parser;
        let assigned = |sql: &str, ty| {
            let e = Parser::new(&PostgreSqlDialect {})
                .try_with_sql(sql)
                .and_then(|mut p| p.parse_expr())
                .expect(sql);
            check_assigned(&e, ty)
        };
        let e = assigned("-(0.00000000001)", SqlType::UNCONSTRAINED_NUMERIC).unwrap_err();
        assert!(e.message().contains("-0.00000000001"), "{e}");
        assert!(assigned("'1e-27'", SqlType::UNCONSTRAINED_NUMERIC).is_err());
        assert!(assigned("x / 3", SqlType::UNCONSTRAINED_NUMERIC).is_ok());
        assert!(assigned("0.00000000001", SqlType::decimal(38, 12)).is_ok());
    }

    #[test]
    fn text_is_read_for_its_places() {
        let numeric = unconstrained().0;
        assert!(check_text("1E-27", &numeric).is_err());
        assert!(check_text(" -0.000000000001 ", &numeric).is_err());
        assert!(check_text("0.000000000100", &numeric).is_ok());
        assert!(check_text("1.5e3", &numeric).is_ok());
        assert!(check_text("0e-40", &numeric).is_ok());
        assert!(check_text("NaN", &numeric).is_ok());
        assert!(check_text("1E-27", &DataType::Utf8).is_ok());
    }
}
