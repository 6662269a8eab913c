//! `to_char(timestamp | timestamptz | date | time, template)` with PostgreSQL's template
//! patterns (`YYYY-MM-DD HH24:MI:SS`, `Mon`, `Day`, `AM`, `FM` …), in place of
//! DataFusion's, which reads strftime's and gives PostgreSQL's templates back unchanged.
//! A template's other characters are copied, double-quoted text literally, and `\"` is
//! a double quote, as in PostgreSQL. A timestamptz is shown
//! in UTC (`TZ` is `UTC`, `OF` `+00`). `to_char` of numbers and intervals is refused
//! with 0A000.

use std::sync::Arc;

use chrono::{Datelike, NaiveDate, NaiveDateTime, Timelike};
use datafusion::arrow::array::{Array, AsArray, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, TimeUnit, TimestampMicrosecondType};
use datafusion::arrow::temporal_conversions::as_datetime;
use datafusion::common::Result as DfResult;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

use crate::error::{SqlError, external};
use crate::udf_result::shaped;

pub(crate) fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::from(ToChar::new()));
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// How a name is written: as the pattern's own letters are (`MON`, `Mon`, `mon`).
fn cased(name: &str, pattern: &str) -> String {
    let mut letters = pattern.chars().filter(char::is_ascii_alphabetic);
    let first_upper = letters.next().is_some_and(|c| c.is_ascii_uppercase());
    let rest_upper = letters.next().is_some_and(|c| c.is_ascii_uppercase());
    match (first_upper, rest_upper) {
        (true, true) => name.to_uppercase(),
        (true, false) => name.to_owned(),
        _ => name.to_lowercase(),
    }
}

/// The patterns, matched in any case, longest first where one begins another (`HH24`
/// before `HH`); the case a name or a meridiem is written in is the output's.
const PATTERNS: &[&str] = &[
    "YYYY", "YYY", "YY", "Y", "MONTH", "MON", "MM", "MI", "MS", "DDD", "DD", "DAY", "DY", "D",
    "HH24", "HH12", "HH", "SS", "US", "A.M.", "P.M.", "AM", "PM", "TZ", "OF", "Q", "J",
];

/// `at` written by `template`.
fn formatted(at: NaiveDateTime, template: &str) -> String {
    let mut out = String::with_capacity(template.len() + 8);
    let mut rest = template;
    while !rest.is_empty() {
        if let Some(quoted) = rest.strip_prefix('"') {
            let end = quoted.find('"').unwrap_or(quoted.len());
            out.push_str(&quoted[..end]);
            rest = quoted.get(end + 1..).unwrap_or("");
            continue;
        }
        if let Some(escaped) = rest.strip_prefix("\\\"") {
            out.push('"');
            rest = escaped;
            continue;
        }
        // FM: no padding for the pattern after it.
        let (fill, body) = match rest.strip_prefix("FM").or_else(|| rest.strip_prefix("fm")) {
            Some(body) => (false, body),
            None => (true, rest),
        };
        let found = PATTERNS.iter().find(|p| {
            body.as_bytes()
                .get(..p.len())
                .is_some_and(|b| b.eq_ignore_ascii_case(p.as_bytes()))
        });
        let Some(pattern) = found else {
            let mut chars = rest.chars();
            out.extend(chars.next());
            rest = chars.as_str();
            continue;
        };
        // The bytes matched are ASCII: the slice ends on a character boundary.
        let (written, after) = body.split_at(pattern.len());
        out.push_str(&field(at, pattern, written, fill));
        rest = after;
    }
    out
}

/// One pattern's text for `at`, padded (zeros for numbers, blanks for names) if `fill`;
/// `written` is the pattern as the template has it.
fn field(at: NaiveDateTime, pattern: &str, written: &str, fill: bool) -> String {
    let number = |v: i64, width: usize| {
        if fill {
            format!("{v:0width$}")
        } else {
            v.to_string()
        }
    };
    let name = |n: &str, width: usize| {
        let n = cased(n, written);
        if fill { format!("{n:<width$}") } else { n }
    };
    let year = i64::from(at.year());
    let hour = i64::from(at.hour());
    let noon = at.hour() >= 12;
    let lower = written.starts_with(|c: char| c.is_ascii_lowercase());
    let meridiem = |m: &str| {
        if lower {
            m.to_lowercase()
        } else {
            m.to_owned()
        }
    };
    let month = MONTHS[at.month0() as usize];
    let day = DAYS[at.weekday().num_days_from_sunday() as usize];
    match pattern {
        "YYYY" => number(year, 4),
        "YYY" => number(year % 1000, 3),
        "YY" => number(year % 100, 2),
        "Y" => number(year % 10, 1),
        "MONTH" => name(month, 9),
        "MON" => cased(&month[..3], written),
        "MM" => number(i64::from(at.month()), 2),
        "DDD" => number(i64::from(at.ordinal()), 3),
        "DD" => number(i64::from(at.day()), 2),
        "DAY" => name(day, 9),
        "DY" => cased(&day[..3], written),
        "D" => number(i64::from(at.weekday().number_from_sunday()), 1),
        "HH24" => number(hour, 2),
        "HH" | "HH12" => number((hour + 11) % 12 + 1, 2),
        "MI" => number(i64::from(at.minute()), 2),
        "SS" => number(i64::from(at.second()), 2),
        "MS" => number(i64::from(at.nanosecond() / 1_000_000), 3),
        "US" => number(i64::from(at.nanosecond() / 1_000), 6),
        "AM" | "PM" => meridiem(if noon { "PM" } else { "AM" }),
        "A.M." | "P.M." => meridiem(if noon { "P.M." } else { "A.M." }),
        "TZ" => meridiem("UTC"),
        "OF" => "+00".into(),
        "Q" => number(i64::from(at.month0() / 3 + 1), 1),
        // The Julian day: days since 4714-11-24 BC (proleptic Gregorian).
        "J" => number(i64::from(at.num_days_from_ce()) + 1_721_425, 1),
        _ => String::new(),
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ToChar {
    signature: Signature,
}

impl ToChar {
    fn new() -> ToChar {
        ToChar {
            signature: Signature::any(2, Volatility::Stable),
        }
    }
}

/// The timestamp a `to_char` value stands for: a date at midnight, a time on day one
/// of year 0 (its year patterns show zeros, as PostgreSQL's do).
fn as_timestamp(array: &dyn Array) -> DfResult<Vec<Option<NaiveDateTime>>> {
    let micros = DataType::Timestamp(TimeUnit::Microsecond, None);
    let stamps = match array.data_type() {
        DataType::Time32(_) | DataType::Time64(_) => {
            let times = cast(array, &DataType::Time64(TimeUnit::Microsecond))?;
            let day_one = NaiveDate::from_ymd_opt(0, 1, 1).expect("a valid date");
            return Ok(times
                .as_primitive::<datafusion::arrow::datatypes::Time64MicrosecondType>()
                .iter()
                .map(|t| {
                    t.map(|us| {
                        day_one.and_hms_opt(0, 0, 0).expect("midnight")
                            + chrono::Duration::microseconds(us)
                    })
                })
                .collect());
        }
        DataType::Timestamp(_, _) | DataType::Date32 | DataType::Date64 => cast(array, &micros)?,
        other => {
            return Err(external(SqlError::unsupported(format!(
                "to_char of a {other} value (pmdb formats dates, times and timestamps)"
            ))));
        }
    };
    Ok(stamps
        .as_primitive::<TimestampMicrosecondType>()
        .iter()
        .map(|v| v.and_then(as_datetime::<TimestampMicrosecondType>))
        .collect())
}

impl ScalarUDFImpl for ToChar {
    fn name(&self) -> &str {
        "to_char"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> DfResult<DataType> {
        match args {
            [
                DataType::Timestamp(..)
                | DataType::Date32
                | DataType::Date64
                | DataType::Time32(_)
                | DataType::Time64(_)
                | DataType::Null,
                DataType::Utf8 | DataType::Null,
            ] => Ok(DataType::Utf8),
            [value, _] => Err(external(SqlError::unsupported(format!(
                "to_char of a {value} value with a template (pmdb formats dates, times and \
                 timestamps)"
            )))),
            _ => Err(external(SqlError::Query(
                "to_char takes a value and a template".into(),
            ))),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let [value, template] = args.args.as_slice() else {
            return Err(external(SqlError::Query(
                "to_char takes a value and a template".into(),
            )));
        };
        let scalar = crate::udf_result::all_scalar(&args.args);
        let values = value.to_array(args.number_rows)?;
        let templates = template.to_array(args.number_rows)?;
        let templates = cast(&templates, &DataType::Utf8)?;
        let at = if values.data_type() == &DataType::Null {
            vec![None; values.len()]
        } else {
            as_timestamp(values.as_ref())?
        };
        let out: StringArray = at
            .into_iter()
            .zip(templates.as_string::<i32>().iter())
            .map(|(at, template)| Some(formatted(at?, template?)))
            .collect();
        shaped(scalar, Arc::new(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f").unwrap()
    }

    #[test]
    fn templates_read_as_postgresql_reads_them() {
        let t = at("2024-03-05 14:07:09.123456");
        for (template, expected) in [
            ("YYYY-MM-DD HH24:MI:SS", "2024-03-05 14:07:09"),
            ("DD Mon YYYY", "05 Mar 2024"),
            ("Day, FMDD Month YYYY", "Tuesday  , 5 March     2024"),
            ("FMDay FMMonth", "Tuesday March"),
            ("HH12:MI AM", "02:07 PM"),
            ("hh:mi a.m.", "02:07 p.m."),
            ("MS US", "123 123456"),
            ("DY dy Q DDD", "TUE tue 1 065"),
            ("\"Week\" D, \\YYYY \\\"", "Week 3, \\2024 \""),
            ("YYYY-MM-DD\"T\"HH24:MI:SSOF", "2024-03-05T14:07:09+00"),
            ("J", "2460375"),
        ] {
            assert_eq!(formatted(t, template), expected, "{template}");
        }
        assert_eq!(
            formatted(at("2024-03-05 00:30:00"), "HH12 HH AM"),
            "12 12 AM"
        );
    }
}
