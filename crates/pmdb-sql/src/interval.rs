//! INTERVAL as PostgreSQL has it: months, days and microseconds kept apart (a month is
//! not a number of days until it is added to a date), read from PostgreSQL's input forms
//! (`1 year 2 mons 3 days 04:05:06.5`, `2 hours 30 minutes`, `-1 day ago`, `@ 3 days`,
//! ISO 8601 `P1Y2M3DT4H`), written in its default output style, compared as PostgreSQL
//! compares them (a month as 30 days, a day as 24 hours) and sent in its binary form.

use std::fmt;

use crate::error::{SqlError, state};

const USECS_PER_SEC: i64 = 1_000_000;
const USECS_PER_MINUTE: i64 = 60 * USECS_PER_SEC;
const USECS_PER_HOUR: i64 = 60 * USECS_PER_MINUTE;
const USECS_PER_DAY: i64 = 24 * USECS_PER_HOUR;
const DAYS_PER_MONTH: i64 = 30;

/// One interval value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Interval {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

impl Interval {
    /// The value PostgreSQL orders and compares intervals by: the span in microseconds
    /// with a month as 30 days and a day as 24 hours (`'1 mon' = '30 days'`).
    pub fn span(&self) -> i128 {
        i128::from(self.micros)
            + i128::from(self.days) * i128::from(USECS_PER_DAY)
            + i128::from(self.months) * i128::from(DAYS_PER_MONTH * USECS_PER_DAY)
    }

    /// PostgreSQL's binary form: microseconds (i64), days (i32), months (i32), big-endian.
    pub fn to_binary(self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&self.micros.to_be_bytes());
        out[8..12].copy_from_slice(&self.days.to_be_bytes());
        out[12..].copy_from_slice(&self.months.to_be_bytes());
        out
    }

    /// Reads PostgreSQL's binary form; `None` unless it is 16 bytes.
    pub fn from_binary(raw: &[u8]) -> Option<Interval> {
        let raw: &[u8; 16] = raw.try_into().ok()?;
        Some(Interval {
            micros: i64::from_be_bytes(raw[..8].try_into().ok()?),
            days: i32::from_be_bytes(raw[8..12].try_into().ok()?),
            months: i32::from_be_bytes(raw[12..].try_into().ok()?),
        })
    }

    /// From Arrow's month-day-nanosecond form, the nanoseconds rounded to microseconds.
    pub fn from_nanos(months: i32, days: i32, nanos: i64) -> Interval {
        let micros = nanos / 1000 + (nanos % 1000) / 500;
        Interval {
            months,
            days,
            micros,
        }
    }

    /// This interval times `factor`, as PostgreSQL's `interval_mul` computes it: the
    /// fraction of the months carried to days (30 a month), that of the days to the time;
    /// `None` if a part does not fit.
    pub fn scaled(&self, factor: f64) -> Option<Interval> {
        let months = f64::from(self.months) * factor;
        let days = f64::from(self.days) * factor + months.fract() * DAYS_PER_MONTH as f64;
        let micros = self.micros as f64 * factor + days.fract() * USECS_PER_DAY as f64;
        let fit = |v: f64, max: f64| (v.is_finite() && v.abs() <= max).then_some(v);
        Some(Interval {
            months: fit(months.trunc(), i32::MAX as f64)? as i32,
            days: fit(days.trunc(), i32::MAX as f64)? as i32,
            micros: fit(micros.round(), (i64::MAX / 1000) as f64)? as i64,
        })
    }

    /// Arrow's nanoseconds of the time part; `None` past what an i64 of them holds.
    pub fn nanos(&self) -> Option<i64> {
        self.micros.checked_mul(1000)
    }
}

/// PostgreSQL's default output style (`IntervalStyle = postgres`).
impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        // Whether nothing is written yet, and whether the last part written was negative
        // (a positive part after it then carries its `+`).
        let (mut empty, mut negative) = (true, false);
        let mut part = |value: i64, unit: &str, out: &mut String| {
            if value == 0 {
                return;
            }
            let space = if empty { "" } else { " " };
            let plus = if negative && value > 0 { "+" } else { "" };
            let plural = if value != 1 { "s" } else { "" };
            out.push_str(&format!("{space}{plus}{value} {unit}{plural}"));
            negative = value < 0;
            empty = false;
        };
        let months = i64::from(self.months);
        part(months / 12, "year", &mut out);
        part(months % 12, "mon", &mut out);
        part(i64::from(self.days), "day", &mut out);
        if empty || self.micros != 0 {
            let space = if empty { "" } else { " " };
            let sign = if self.micros < 0 {
                "-"
            } else if negative {
                "+"
            } else {
                ""
            };
            let t = self.micros.unsigned_abs();
            let (hours, rest) = (t / 3_600_000_000, t % 3_600_000_000);
            let (minutes, rest) = (rest / 60_000_000, rest % 60_000_000);
            let (seconds, fraction) = (rest / 1_000_000, rest % 1_000_000);
            out.push_str(&format!(
                "{space}{sign}{hours:02}:{minutes:02}:{seconds:02}"
            ));
            if fraction != 0 {
                let digits = format!("{fraction:06}");
                out.push('.');
                out.push_str(digits.trim_end_matches('0'));
            }
        }
        f.write_str(&out)
    }
}

/// The interval the text `s` gives, read as PostgreSQL reads interval input.
pub fn parse(s: &str) -> Result<Interval, SqlError> {
    let invalid = || {
        SqlError::user(
            state::INVALID_DATETIME_FORMAT,
            format!("invalid input syntax for type interval: \"{s}\""),
        )
    };
    let text = s.trim().to_ascii_lowercase();
    let mut sum = Sum::default();
    if let Some(iso) = text.strip_prefix('p') {
        iso_8601(iso, &mut sum).ok_or_else(invalid)?;
    } else {
        postgres_form(text.strip_prefix('@').unwrap_or(&text), &mut sum).ok_or_else(invalid)?;
    }
    sum.finish().ok_or_else(|| {
        SqlError::user(
            state::INTERVAL_FIELD_OVERFLOW,
            format!("interval field value out of range: \"{s}\""),
        )
    })
}

/// The parts read so far, wide enough that no input overflows before it is checked.
#[derive(Default)]
struct Sum {
    months: f64,
    days: f64,
    micros: f64,
    negate: bool,
}

impl Sum {
    /// Adds `n` of `unit`; `None` for a unit PostgreSQL does not know.
    fn add(&mut self, n: f64, unit: &str) -> Option<()> {
        let (months, days, micros) = match unit {
            "ms" | "msec" | "msecs" | "millisecond" | "milliseconds" => (0.0, 0.0, 1e3),
            "us" | "usec" | "usecs" | "microsecond" | "microseconds" => (0.0, 0.0, 1.0),
            _ => match unit.strip_suffix('s').unwrap_or(unit) {
                "" | "sec" | "second" => (0.0, 0.0, USECS_PER_SEC as f64),
                "m" | "min" | "minute" => (0.0, 0.0, USECS_PER_MINUTE as f64),
                "h" | "hr" | "hour" => (0.0, 0.0, USECS_PER_HOUR as f64),
                "d" | "day" => (0.0, 1.0, 0.0),
                "w" | "week" => (0.0, 7.0, 0.0),
                "mon" | "month" => (1.0, 0.0, 0.0),
                "y" | "yr" | "year" => (12.0, 0.0, 0.0),
                "decade" => (120.0, 0.0, 0.0),
                "century" | "centurie" => (1200.0, 0.0, 0.0),
                "millennium" | "millennia" => (12000.0, 0.0, 0.0),
                _ => return None,
            },
        };
        self.months += n * months;
        self.days += n * days;
        self.micros += n * micros;
        Some(())
    }

    /// The interval, fractions of months and days carried down as PostgreSQL carries
    /// them; `None` if a part does not fit.
    fn finish(self) -> Option<Interval> {
        let sign = if self.negate { -1.0 } else { 1.0 };
        let months = self.months.trunc();
        let days_total = self.days + (self.months - months) * DAYS_PER_MONTH as f64;
        let days = days_total.trunc();
        let micros = self.micros + (days_total - days) * USECS_PER_DAY as f64;
        let fit = |v: f64, max: f64| (v.is_finite() && v.abs() <= max).then_some(v);
        Some(Interval {
            months: fit(sign * months, i32::MAX as f64)? as i32,
            days: fit(sign * days, i32::MAX as f64)? as i32,
            // Arrow carries the time part in nanoseconds: at most 292 years of it.
            micros: fit((sign * micros).round(), (i64::MAX / 1000) as f64)? as i64,
        })
    }
}

/// `1 year 2 mons -3 days 04:05:06.5 ago` and its variants (units glued to numbers,
/// plural or not, abbreviated; a bare number is seconds).
fn postgres_form(text: &str, sum: &mut Sum) -> Option<()> {
    let tokens = tokens(text)?;
    let mut i = 0;
    let mut any = false;
    while i < tokens.len() {
        let t = &tokens[i];
        if t == "ago" {
            if sum.negate {
                return None;
            }
            sum.negate = true;
            i += 1;
            continue;
        }
        if t.contains(':') {
            sum.micros += time_of_day(t)?;
        } else {
            let n: f64 = t.parse().ok()?;
            let unit = tokens
                .get(i + 1)
                .filter(|u| u.starts_with(char::is_alphabetic));
            match unit {
                Some(u) if u != "ago" => {
                    sum.add(n, u)?;
                    i += 1;
                }
                _ => sum.add(n, "second")?,
            }
        }
        any = true;
        i += 1;
    }
    any.then_some(())
}

/// The text cut into numbers (with sign, point and colons) and words.
fn tokens(text: &str) -> Option<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c.is_ascii_digit() || matches!(c, '+' | '-' | '.' | ':') {
            let mut t = String::new();
            while let Some(&c) = chars.peek() {
                if c.is_ascii_digit()
                    || matches!(c, '.' | ':')
                    || (t.is_empty() && "+-".contains(c))
                {
                    t.push(c);
                    chars.next();
                } else {
                    break;
                }
            }
            out.push(t);
        } else if c.is_alphabetic() {
            let mut t = String::new();
            while let Some(&c) = chars.peek().filter(|c| c.is_alphabetic()) {
                t.push(c);
                chars.next();
            }
            out.push(t);
        } else {
            return None;
        }
    }
    Some(out)
}

/// `[-]hh:mm[:ss[.frac]]` in microseconds.
fn time_of_day(t: &str) -> Option<f64> {
    let (sign, t) = match t.strip_prefix('-') {
        Some(rest) => (-1.0, rest),
        None => (1.0, t.strip_prefix('+').unwrap_or(t)),
    };
    let parts: Vec<&str> = t.split(':').collect();
    let number = |p: &str| -> Option<f64> {
        (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
            .then(|| p.parse().ok())
            .flatten()
    };
    let (h, m, s) = match parts.as_slice() {
        [h, m] => (number(h)?, number(m)?, 0.0),
        [h, m, s] => (number(h)?, number(m)?, number(s)?),
        _ => return None,
    };
    if h.fract() != 0.0 || m.fract() != 0.0 || m >= 60.0 || s >= 60.0 {
        return None;
    }
    Some(sign * (h * USECS_PER_HOUR as f64 + m * USECS_PER_MINUTE as f64 + s * 1e6))
}

/// ISO 8601's `P…` form (after the `P`): `1Y2M3W4DT5H6M7.5S`.
fn iso_8601(text: &str, sum: &mut Sum) -> Option<()> {
    let mut in_time = false;
    let mut number = String::new();
    let mut any = false;
    for c in text.chars() {
        match c {
            't' if number.is_empty() && !in_time => in_time = true,
            '0'..='9' | '.' | '-' | '+' => number.push(c),
            _ => {
                let n: f64 = number.parse().ok()?;
                let unit = match (c, in_time) {
                    ('y', false) => "year",
                    ('m', false) => "month",
                    ('w', false) => "week",
                    ('d', false) => "day",
                    ('h', true) => "hour",
                    ('m', true) => "minute",
                    ('s', true) => "second",
                    _ => return None,
                };
                sum.add(n, unit)?;
                number.clear();
                any = true;
            }
        }
    }
    (any && number.is_empty()).then_some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn text(s: &str) -> String {
        parse(s).unwrap_or_else(|e| panic!("{s}: {e}")).to_string()
    }

    #[test]
    fn written_as_postgresql_writes_them() {
        // Each as PostgreSQL 15 shows `'<input>'::interval`.
        for (input, shown) in [
            ("1 day 2 hours", "1 day 02:00:00"),
            (
                "1 year 2 months 3 days 04:05:06.5",
                "1 year 2 mons 3 days 04:05:06.5",
            ),
            ("3 days", "3 days"),
            ("-1 day", "-1 days"),
            ("90 minutes", "01:30:00"),
            ("0", "00:00:00"),
            ("1 day ago", "-1 days"),
            ("@ 2 hours 3 mins", "02:03:00"),
            ("-1 days +02:03:00", "-1 days +02:03:00"),
            ("1 mon -1 day", "1 mon -1 days"),
            ("1.5 days", "1 day 12:00:00"),
            ("1.5 months", "1 mon 15 days"),
            ("2 weeks", "14 days"),
            ("P1Y2M3DT4H5M6S", "1 year 2 mons 3 days 04:05:06"),
            ("PT0.25S", "00:00:00.25"),
            ("-04:05:06", "-04:05:06"),
            ("1 decade", "10 years"),
            ("100 ms", "00:00:00.1"),
            ("1 hour 30", "01:00:30"),
            ("5 secs", "00:00:05"),
            ("1y 2mon", "1 year 2 mons"),
            ("1.5 years", "1 year 6 mons"),
            ("-1.5 days", "-1 days -12:00:00"),
            ("1 day -00:00:01", "1 day -00:00:01"),
            ("3 us", "00:00:00.000003"),
            ("2 centuries", "200 years"),
            ("10:00", "10:00:00"),
            ("1 day 10", "1 day 00:00:10"),
            ("ago 1 day", "-1 days"),
            ("+5 days", "5 days"),
            ("1 hour ago", "-01:00:00"),
        ] {
            assert_eq!(text(input), shown, "{input}");
        }
        for bad in [
            "",
            "1 fortnight",
            "abc",
            "1 day ago ago",
            "12:99",
            "P1X",
            "ago",
            "1,2 days",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} is refused");
        }
        assert_eq!(parse("1 dai").unwrap_err().sqlstate(), "22007");
        assert_eq!(parse("999999999999 years").unwrap_err().sqlstate(), "22015");
    }

    #[test]
    fn compared_by_span_as_postgresql_compares_them() {
        let span = |s: &str| parse(s).unwrap().span();
        assert_eq!(span("1 mon"), span("30 days"));
        assert!(span("1 mon") < span("40 days"));
        assert_eq!(span("1 day"), span("24 hours"));
        assert!(span("-1 day") < span("00:00:01"));
    }

    proptest! {
        /// What is written reads back as the same value, and the binary form round-trips.
        #[test]
        fn text_and_binary_round_trip(
            months in -100_000i32..100_000,
            days in -100_000i32..100_000,
            micros in -(1i64 << 50)..(1i64 << 50),
        ) {
            let v = Interval { months, days, micros };
            prop_assert_eq!(parse(&v.to_string()).unwrap(), v, "{}", v);
            prop_assert_eq!(Interval::from_binary(&v.to_binary()), Some(v));
        }

        #[test]
        fn any_text_is_a_value_or_an_error(s in "\\PC{0,24}") {
            let _ = parse(&s);
        }
    }
}
