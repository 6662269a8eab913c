//! TIME values as PostgreSQL reads and writes them: microseconds since midnight, from
//! `00:00:00` to `24:00:00` inclusive. Input is `H:MM[:SS[.fraction]]` with an optional
//! `AM`/`PM`, an optional date before it and an optional zone after it (both ignored,
//! as PostgreSQL ignores them for a time without zone), or `allballs`; a fraction past
//! microseconds is rounded. Output is `HH:MM:SS` with as many fraction digits as the
//! microseconds need. Every time and timestamp in a plan is one in microseconds
//! ([`MicrosecondTimes`]).

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::Result as DfResult;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::logical_expr::expr::{Cast, Placeholder, TryCast};
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan};
use datafusion::optimizer::AnalyzerRule;
use datafusion::sql::sqlparser::ast::{Expr as SqlExpr, FunctionArguments};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;

use crate::error::{SqlError, state};

/// Microseconds in a day: the largest TIME, `24:00:00`, as PostgreSQL allows.
pub const MICROS_PER_DAY: i64 = 86_400_000_000;

/// The microseconds since midnight the TIME text `s` names.
pub fn parse_time(s: &str) -> Result<i64, SqlError> {
    let invalid = || {
        SqlError::user(
            state::INVALID_DATETIME_FORMAT,
            format!("invalid input syntax for type time: \"{s}\""),
        )
    };
    let out_of_range = || {
        SqlError::user(
            state::DATETIME_OUT_OF_RANGE,
            format!("date/time field value out of range: \"{s}\""),
        )
    };
    let text = s.trim().to_ascii_lowercase();
    if text == "allballs" {
        return Ok(0);
    }
    let text = without_date(&text);
    let (text, meridiem) = without_meridiem(text);
    let text = without_zone(text);
    let mut parts = text.split(':');
    let hour = number(parts.next()).ok_or_else(invalid)?;
    let minute = number(parts.next()).ok_or_else(invalid)?;
    let (second, micros) = match parts.next() {
        None => (0, 0),
        Some(sec) => seconds(sec).ok_or_else(invalid)?,
    };
    if parts.next().is_some() {
        return Err(invalid());
    }
    let hour = match meridiem {
        None => hour,
        Some(_) if !(1..=12).contains(&hour) => return Err(out_of_range()),
        Some(Meridiem::Am) => hour % 12,
        Some(Meridiem::Pm) => hour % 12 + 12,
    };
    if hour > 24 || minute > 59 || second > 60 {
        return Err(out_of_range());
    }
    let total = ((hour * 60 + minute) * 60 + second) * 1_000_000 + micros;
    if total > MICROS_PER_DAY {
        return Err(out_of_range());
    }
    Ok(total)
}

/// PostgreSQL's text of the time `micros` after midnight.
pub fn time_text(micros: i64) -> String {
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    let mut text = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    if frac != 0 {
        let digits = format!("{frac:06}");
        text.push('.');
        text.push_str(digits.trim_end_matches('0'));
    }
    text
}

enum Meridiem {
    Am,
    Pm,
}

/// `s` without a leading `YYYY-MM-DD` and the space or `T` after it.
fn without_date(s: &str) -> &str {
    let b = s.as_bytes();
    let dated = b.len() > 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b[..10]
            .iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
        && matches!(b[10], b' ' | b't');
    if dated { s[11..].trim_start() } else { s }
}

fn without_meridiem(s: &str) -> (&str, Option<Meridiem>) {
    if let Some(rest) = s.strip_suffix("am") {
        (rest.trim_end(), Some(Meridiem::Am))
    } else if let Some(rest) = s.strip_suffix("pm") {
        (rest.trim_end(), Some(Meridiem::Pm))
    } else {
        (s, None)
    }
}

/// `s` without a trailing zone (`Z`, `+HH`, `-HH:MM`, `+HHMM`).
fn without_zone(s: &str) -> &str {
    if let Some(rest) = s.strip_suffix('z') {
        return rest.trim_end();
    }
    match s.rfind(['+', '-']) {
        Some(at)
            if at > 0
                && s[at + 1..].len() >= 2
                && s[at + 1..].bytes().all(|c| c.is_ascii_digit() || c == b':') =>
        {
            s[..at].trim_end()
        }
        _ => s,
    }
}

/// A field of one or two digits.
fn number(part: Option<&str>) -> Option<i64> {
    let part = part?;
    if part.is_empty() || part.len() > 2 || !part.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    part.parse().ok()
}

/// Whole seconds and microseconds of `SS[.fraction]`, the fraction rounded half up.
fn seconds(part: &str) -> Option<(i64, i64)> {
    let (whole, fraction) = part.split_once('.').unwrap_or((part, ""));
    let whole = number(Some(whole))?;
    if !fraction.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let mut micros = 0i64;
    for (i, d) in fraction.bytes().take(7).enumerate() {
        let d = i64::from(d - b'0');
        match i {
            0..6 => micros = micros * 10 + d,
            _ => micros += i64::from(d >= 5),
        }
    }
    micros *= 10i64.pow(6u32.saturating_sub(fraction.len() as u32));
    Some((whole, micros))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_postgresqls_forms() {
        let at = |h: i64, m: i64, s: i64, us: i64| ((h * 60 + m) * 60 + s) * 1_000_000 + us;
        assert_eq!(parse_time("12:34:56").unwrap(), at(12, 34, 56, 0));
        assert_eq!(parse_time(" 1:02 ").unwrap(), at(1, 2, 0, 0));
        assert_eq!(parse_time("12:34:56.789").unwrap(), at(12, 34, 56, 789_000));
        assert_eq!(
            parse_time("12:34:56.1234567").unwrap(),
            at(12, 34, 56, 123_457)
        );
        assert_eq!(parse_time("04:05 PM").unwrap(), at(16, 5, 0, 0));
        assert_eq!(parse_time("12:00 am").unwrap(), 0);
        assert_eq!(parse_time("2003-04-12 04:05:06").unwrap(), at(4, 5, 6, 0));
        assert_eq!(parse_time("04:05:06+03:00").unwrap(), at(4, 5, 6, 0));
        assert_eq!(parse_time("24:00:00").unwrap(), MICROS_PER_DAY);
        assert_eq!(parse_time("allballs").unwrap(), 0);
    }

    #[test]
    fn refuses_what_postgresql_refuses() {
        for bad in ["", "12", "ab:cd", "12:34:56:78", "1:2:3.x", "123:00"] {
            let e = parse_time(bad).unwrap_err();
            assert_eq!(e.sqlstate(), state::INVALID_DATETIME_FORMAT, "{bad}");
        }
        for far in ["24:00:01", "25:00", "12:60", "13:00 pm"] {
            let e = parse_time(far).unwrap_err();
            assert_eq!(e.sqlstate(), state::DATETIME_OUT_OF_RANGE, "{far}");
        }
    }

    #[test]
    fn writes_postgresqls_text() {
        assert_eq!(time_text(0), "00:00:00");
        assert_eq!(time_text(45_296_789_000), "12:34:56.789");
        assert_eq!(time_text(45_296_000_001), "12:34:56.000001");
        assert_eq!(time_text(MICROS_PER_DAY), "24:00:00");
    }
}

/// What `localtime` and `localtimestamp` (bare keywords, as PostgreSQL writes them) stand
/// for: the statement's time without a zone, in the session's zone (UTC, pmdb's only).
pub(crate) fn local_clock_call(e: &SqlExpr) -> Option<SqlExpr> {
    let SqlExpr::Function(f) = e else {
        return None;
    };
    let [name] = f.name.0.as_slice() else {
        return None;
    };
    let to = match name.as_ident()?.value.to_ascii_lowercase().as_str() {
        "localtime" => "TIME",
        "localtimestamp" => "TIMESTAMP",
        _ => return None,
    };
    if !matches!(f.args, FunctionArguments::None) {
        return None;
    }
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(&format!("CAST(now() AS {to})"))
        .and_then(|mut p| p.parse_expr())
        .ok()
}

/// The analyzer rule, run before type coercion, that makes every time and timestamp in
/// a plan one in microseconds, PostgreSQL's unit and a column's: DataFusion reads SQL's
/// TIME as nanoseconds, which it cannot compare with a TIME column's microseconds, and
/// SQL's TIMESTAMP as nanoseconds too, which hold no year before 1677 or after 2262.
#[derive(Debug)]
pub(crate) struct MicrosecondTimes;

const MICROSECOND_TIME: DataType = DataType::Time64(TimeUnit::Microsecond);

impl AnalyzerRule for MicrosecondTimes {
    fn name(&self) -> &str {
        "pmdb_microsecond_times"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> DfResult<LogicalPlan> {
        crate::expr_rewrite::rewrite_expressions(plan, |e, schema| {
            Ok(match e {
                // `current_time`, `localtime`: nanoseconds from DataFusion's functions.
                Expr::ScalarFunction(_) if e.get_type(schema).is_ok_and(|t| other_time(&t)) => {
                    Transformed::yes(Expr::Cast(Cast::new(Box::new(e), MICROSECOND_TIME)))
                }
                Expr::Cast(Cast { expr, field }) => match in_microseconds(field.data_type()) {
                    Some(to) => Transformed::yes(Expr::Cast(Cast::new(expr, to))),
                    None => Transformed::no(Expr::Cast(Cast { expr, field })),
                },
                Expr::TryCast(TryCast { expr, field }) => {
                    match in_microseconds(field.data_type()) {
                        Some(to) => Transformed::yes(Expr::TryCast(TryCast::new(expr, to))),
                        None => Transformed::no(Expr::TryCast(TryCast { expr, field })),
                    }
                }
                Expr::Placeholder(Placeholder {
                    id,
                    field: Some(field),
                }) => {
                    let field = match in_microseconds(field.data_type()) {
                        Some(to) => Arc::new(field.as_ref().clone().with_data_type(to)),
                        None => {
                            return Ok(Transformed::no(Expr::Placeholder(
                                Placeholder::new_with_field(id, Some(field)),
                            )));
                        }
                    };
                    Transformed::yes(Expr::Placeholder(Placeholder::new_with_field(
                        id,
                        Some(field),
                    )))
                }
                other => Transformed::no(other),
            })
        })
    }
}

/// Whether `ty` is a time in a unit other than microseconds.
fn other_time(ty: &DataType) -> bool {
    matches!(ty, DataType::Time32(_) | DataType::Time64(_)) && *ty != MICROSECOND_TIME
}

/// `ty` in microseconds, when it is a time or timestamp in another unit.
pub(crate) fn in_microseconds(ty: &DataType) -> Option<DataType> {
    match ty {
        _ if other_time(ty) => Some(MICROSECOND_TIME),
        DataType::Timestamp(unit, zone) if *unit != TimeUnit::Microsecond => {
            Some(DataType::Timestamp(TimeUnit::Microsecond, zone.clone()))
        }
        _ => None,
    }
}
