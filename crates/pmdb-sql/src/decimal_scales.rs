//! The scales of decimal results where Arrow's differ from PostgreSQL's.
//!
//! Division: Arrow keeps four places more than the dividend has (`1 / 3.0` gave
//! `0.3333`), where PostgreSQL keeps at least 16 significant digits
//! (`0.33333333333333333333`). The dividend is given more places first, up to 16, as
//! many as its integer digits and the divisor's places leave room for in 38 digits, so
//! the quotient has up to 20.
//!
//! `ceil`, `floor` and `trunc` without places keep their argument's scale in Arrow
//! (`ceil(1.5)` was `2.0`); in PostgreSQL they give whole numbers.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result as DfResult;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::logical_expr::expr::{BinaryExpr, Cast, ScalarFunction};
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan, Operator};
use datafusion::optimizer::AnalyzerRule;

use crate::types::MAX_DECIMAL_PRECISION;

/// The most digits a decimal holds.
const MAX_DIGITS: i16 = MAX_DECIMAL_PRECISION as i16;
/// The places Arrow's division adds to its dividend's.
const DIVISION_PLACES: i16 = 4;
/// The places a dividend is given, at most.
const DIVIDEND_PLACES: i16 = 16;

/// Runs after DataFusion's type coercion, which makes both sides of a division with a
/// decimal in it decimals.
#[derive(Debug)]
pub(crate) struct DecimalScales;

impl AnalyzerRule for DecimalScales {
    fn name(&self) -> &str {
        "pmdb_decimal_scales"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> DfResult<LogicalPlan> {
        crate::expr_rewrite::rewrite_expressions(plan, |e, schema| {
            if let Expr::ScalarFunction(ScalarFunction { func, args }) = &e
                && matches!(func.name(), "ceil" | "floor" | "trunc")
                && let [arg] = args.as_slice()
                && let Ok(DataType::Decimal128(precision, scale)) = arg.get_type(schema)
                && scale > 0
            {
                // One digit more before the point: ceil(9.5) is 10.
                let digits = (precision - scale.unsigned_abs()).saturating_add(1);
                let whole = DataType::Decimal128(digits.min(MAX_DECIMAL_PRECISION), 0);
                return Ok(Transformed::yes(Expr::Cast(Cast::new(Box::new(e), whole))));
            }
            let Expr::BinaryExpr(BinaryExpr {
                left,
                op: Operator::Divide,
                right,
            }) = e
            else {
                return Ok(Transformed::no(e));
            };
            let types = (left.get_type(schema), right.get_type(schema));
            let widened = match types {
                (Ok(DataType::Decimal128(p1, s1)), Ok(DataType::Decimal128(_, s2))) => {
                    dividend_type(p1, s1, s2)
                }
                _ => None,
            };
            Ok(match widened {
                Some(to) => Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
                    Box::new(Expr::Cast(Cast::new(left, to))),
                    Operator::Divide,
                    right,
                ))),
                None => Transformed::no(Expr::BinaryExpr(BinaryExpr::new(
                    left,
                    Operator::Divide,
                    right,
                ))),
            })
        })
    }
}

/// The type a DECIMAL(`precision`, `scale`) dividend is given before it is divided by
/// a decimal of `divisor_scale` places; `None` when it has as many places as it can.
/// Arrow multiplies the dividend by 10^(4 + divisor's places), which must stay within 38
/// digits.
fn dividend_type(precision: u8, scale: i8, divisor_scale: i8) -> Option<DataType> {
    let (precision, scale, divisor_scale) = (
        i16::from(precision),
        i16::from(scale),
        i16::from(divisor_scale),
    );
    let integer_digits = precision - scale;
    let places =
        DIVIDEND_PLACES.min(MAX_DIGITS - DIVISION_PLACES - divisor_scale.max(0) - integer_digits);
    if places <= scale {
        return None;
    }
    Some(DataType::Decimal128(
        u8::try_from(integer_digits + places).ok()?,
        i8::try_from(places).ok()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dividend_gets_places_as_room_allows() {
        // 1 / 3.0: the integer is a DECIMAL(20,0).
        assert_eq!(dividend_type(20, 0, 1), Some(DataType::Decimal128(33, 13)));
        assert_eq!(dividend_type(15, 2, 0), Some(DataType::Decimal128(29, 16)));
        // NUMERIC without a precision: no room for more.
        assert_eq!(dividend_type(38, 10, 0), None);
        assert_eq!(dividend_type(5, 2, 20), Some(DataType::Decimal128(14, 11)));
        assert_eq!(dividend_type(5, 2, 33), None);
    }
}
