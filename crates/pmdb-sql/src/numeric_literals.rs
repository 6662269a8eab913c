//! Numbers written with a fraction or an exponent (`2.5`, `1E-27`, `1.5e3`) read as the
//! exact decimals they are, as PostgreSQL reads them (numeric), where a double would
//! keep 15 to 17 significant digits of them.
//!
//! The planner reads such a number as a decimal of its own precision and scale (the
//! session's `parse_float_as_decimal`). Before that, each is written so that the planner
//! can: an exponent that leaves no places (`1.5e3`) is written out in full, because a
//! decimal of negative scale is not one pmdb's columns or clients take, and a number no
//! 38-digit decimal holds (`1e300`, `1e-50`, 40 significant digits) stays a double, as
//! it was read before.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    CastKind, DataType as SqlDataType, Expr as SqlExpr, Statement, Value, ValueWithSpan,
    visit_expressions_mut,
};

use crate::types::MAX_DECIMAL_PRECISION;

/// The most digits a decimal holds.
const MAX_DIGITS: usize = MAX_DECIMAL_PRECISION as usize;

/// `statement` with each number that has a fraction or an exponent written as the
/// planner reads it as an exact decimal (or, beyond 38 digits, as a double).
pub(crate) fn as_exact(statement: &mut Statement) {
    let _ = visit_expressions_mut(statement, |e| {
        if let SqlExpr::Value(ValueWithSpan {
            value: Value::Number(text, _),
            ..
        }) = e
            && let Some(form) = planner_form(text)
        {
            match form {
                Form::Decimal(written) => *text = written,
                Form::Double => *e = double(text),
            }
        }
        ControlFlow::<()>::Continue(())
    });
}

/// The double `text` reads as (digits, `NaN`, `Infinity`), as SQL the planner cannot
/// read as a decimal.
pub(crate) fn double(text: &str) -> SqlExpr {
    SqlExpr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(SqlExpr::value(Value::SingleQuotedString(text.to_owned()))),
        data_type: SqlDataType::DoublePrecision,
        array: false,
        format: None,
    }
}

/// How the planner is to read a number.
#[derive(Debug, PartialEq, Eq)]
enum Form {
    /// As a decimal, from this text.
    Decimal(String),
    /// As a double: no decimal holds it.
    Double,
}

/// How `text` (a number as the parser read it: digits, a point, an exponent) is to be
/// planned; `None` for an integer or a form the planner reads as it is.
fn planner_form(text: &str) -> Option<Form> {
    if !text.contains(['.', 'e', 'E']) {
        return None;
    }
    let text = text.replace('_', "");
    let (significant, scale) = decimal_parts(&text)?;
    let significant = significant.as_str();
    let fits = |precision: usize, scale: usize| precision <= MAX_DIGITS && scale <= MAX_DIGITS;
    if scale < 0 {
        // The places the exponent leaves written out as zeros: `1.5e3` is `1500`, with
        // an exponent of 0 so that it stays a decimal rather than becoming an integer.
        let zeros = usize::try_from(-scale).ok()?;
        if significant.is_empty() {
            return Some(Form::Decimal("0e0".into()));
        }
        return Some(if fits(significant.len().saturating_add(zeros), 0) {
            Form::Decimal(format!("{significant}{}e0", "0".repeat(zeros)))
        } else {
            Form::Double
        });
    }
    let scale = usize::try_from(scale).ok()?;
    if fits(significant.len().max(scale), scale) {
        // Without an exponent the planner reads it as written.
        text.contains(['e', 'E']).then(|| {
            let padded = format!(
                "{}{significant}",
                "0".repeat(scale.saturating_sub(significant.len()))
            );
            let (int, frac) = padded.split_at(padded.len() - scale);
            Form::Decimal(match (int, frac) {
                (int, "") => format!("{int}e0"),
                ("", frac) => format!("0.{frac}"),
                (int, frac) => format!("{int}.{frac}"),
            })
        })
    } else {
        Some(Form::Double)
    }
}

/// The unsigned number `text` (digits with an optional point and exponent: `12.50`,
/// `1E-27`) as its digits without leading zeros and its scale: the value is the digits
/// × 10^-scale, and the scale is negative where the exponent leaves no places.
pub(crate) fn decimal_parts(text: &str) -> Option<(String, i64)> {
    let (mantissa, exponent) = match text.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i64>().ok()?),
        None => (text, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if whole.is_empty() && fraction.is_empty()
        || !(whole.bytes().chain(fraction.bytes())).all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let digits = format!("{whole}{fraction}");
    let scale = i64::try_from(fraction.len()).ok()?.checked_sub(exponent)?;
    Some((digits.trim_start_matches('0').to_owned(), scale))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(text: &str) -> Option<Form> {
        planner_form(text)
    }

    fn decimal(text: &str) -> Option<Form> {
        Some(Form::Decimal(text.into()))
    }

    #[test]
    fn fractions_are_read_as_written() {
        assert_eq!(form("2.5"), None);
        assert_eq!(form("0.12345678901234567891"), None);
        assert_eq!(form("42"), None);
        assert_eq!(form("1_000.5"), None);
    }

    #[test]
    fn exponents_are_applied() {
        assert_eq!(form("1E-27"), decimal("0.000000000000000000000000001"));
        assert_eq!(form("1.5e3"), decimal("1500e0"));
        assert_eq!(form("2.50e1"), decimal("25.0"));
        assert_eq!(form("0e5"), decimal("0e0"));
        assert_eq!(form("1.25E+1"), decimal("12.5"));
        assert_eq!(form("1.5e1"), decimal("15e0"));
    }

    #[test]
    fn beyond_38_digits_is_a_double() {
        assert_eq!(form("1e300"), Some(Form::Double));
        assert_eq!(form("1e-50"), Some(Form::Double));
        assert_eq!(
            form("0.123456789012345678901234567890123456789"),
            Some(Form::Double)
        );
        assert_eq!(form("1e37"), decimal(&format!("1{}e0", "0".repeat(37))));
    }
}
