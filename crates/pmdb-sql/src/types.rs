//! The SQL types a column may have and the values it holds. A value is checked against
//! its column's type before it is encoded, so what reaches storage always fits: integers
//! in range, decimals within their precision, strings within their length.

use std::cmp::Ordering;
use std::fmt;

use crate::error::CodecError;
pub use crate::interval::Interval;
use crate::time_of_day::MICROS_PER_DAY;

/// Most digits of a DECIMAL (what an `i128` holds exactly).
pub const MAX_DECIMAL_PRECISION: u8 = 38;

/// A column's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SqlType {
    SmallInt,
    Int,
    BigInt,
    /// `precision` digits, `scale` of them after the point; stored as the unscaled
    /// integer. `unconstrained` is NUMERIC written without a precision, held as
    /// [`SqlType::UNCONSTRAINED_NUMERIC`]'s precision and scale but shown to clients
    /// as PostgreSQL shows that type (`numeric`, no modifier).
    Decimal {
        precision: u8,
        scale: u8,
        unconstrained: bool,
    },
    Real,
    Double,
    /// Fixed length: shorter values are blank-padded when compared, as in SQL.
    Char(u32),
    Varchar(u32),
    Text,
    /// Days since 1970-01-01.
    Date,
    /// Microseconds since midnight, 0 to 24:00:00 (PostgreSQL's TIME), no time zone.
    Time,
    /// Microseconds since 1970-01-01 00:00:00, no time zone.
    Timestamp,
    /// Microseconds since 1970-01-01 00:00:00 UTC: an instant, shown in UTC.
    TimestampTz,
    Boolean,
    /// Bytes of any value (BYTEA).
    Bytea,
    /// 16 bytes; Arrow carries it as its canonical text (lower-case hex with hyphens),
    /// which sorts as the bytes do.
    Uuid,
    /// JSON text as it was given (checked to be JSON).
    Json,
    /// JSON in its canonical text ([`crate::json`]): equal values, equal text.
    Jsonb,
    /// Months, days and microseconds ([`crate::interval`]).
    Interval,
    /// A value of the enum type with this id ([`crate::enum_type`]), held as its
    /// label's text.
    Enum(u64),
    /// The hstore extension's type: a set of keys with text values, held as its
    /// canonical text ([`crate::hstore`]).
    Hstore,
}

/// One value of a column; `Null` fits every type.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Boolean(bool),
    SmallInt(i16),
    Int(i32),
    BigInt(i64),
    /// The unscaled integer of a DECIMAL (the scale is the column's).
    Decimal(i128),
    Real(f32),
    Double(f64),
    /// CHAR, VARCHAR and TEXT.
    Str(String),
    Date(i32),
    /// Microseconds since midnight (TIME).
    Time(i64),
    /// TIMESTAMP and TIMESTAMPTZ.
    Timestamp(i64),
    Bytes(Vec<u8>),
    Uuid(u128),
    Interval(Interval),
}

impl SqlType {
    /// NUMERIC without a precision. PostgreSQL's has no bound short of 131072 digits;
    /// pmdb's keeps 38 digits, 10 after the point: the type DataFusion gives
    /// `::numeric`, so a cast and a column agree, and a product of two values keeps
    /// 18 digits before the point within an `i128`.
    pub const UNCONSTRAINED_NUMERIC: SqlType = SqlType::Decimal {
        precision: MAX_DECIMAL_PRECISION,
        scale: 10,
        unconstrained: true,
    };

    /// A DECIMAL declared with this precision and scale.
    pub const fn decimal(precision: u8, scale: u8) -> SqlType {
        SqlType::Decimal {
            precision,
            scale,
            unconstrained: false,
        }
    }

    /// Whether `value` fits a column of this type.
    pub fn check(&self, value: &Value) -> Result<(), CodecError> {
        let fits = match (self, value) {
            (_, Value::Null) => true,
            (SqlType::SmallInt, Value::SmallInt(_))
            | (SqlType::Int, Value::Int(_))
            | (SqlType::BigInt, Value::BigInt(_))
            | (SqlType::Real, Value::Real(_))
            | (SqlType::Double, Value::Double(_))
            | (
                SqlType::Text | SqlType::Json | SqlType::Jsonb | SqlType::Enum(_) | SqlType::Hstore,
                Value::Str(_),
            )
            | (SqlType::Date, Value::Date(_))
            | (SqlType::Timestamp | SqlType::TimestampTz, Value::Timestamp(_))
            | (SqlType::Boolean, Value::Boolean(_))
            | (SqlType::Bytea, Value::Bytes(_))
            | (SqlType::Uuid, Value::Uuid(_))
            | (SqlType::Interval, Value::Interval(_)) => true,
            (SqlType::Time, Value::Time(us)) => (0..=MICROS_PER_DAY).contains(us),
            (SqlType::Decimal { precision, .. }, Value::Decimal(v)) => {
                fits_precision(*precision, *v)
            }
            (SqlType::Char(_) | SqlType::Varchar(_), Value::Str(s)) => fits_length(*self, s),
            _ => false,
        };
        if fits {
            Ok(())
        } else {
            Err(CodecError::Mismatch(format!(
                "{value:?} does not fit a column of type {self}"
            )))
        }
    }
}

/// Whether the unscaled decimal `v` has at most `precision` digits.
pub fn fits_precision(precision: u8, v: i128) -> bool {
    (1..=MAX_DECIMAL_PRECISION).contains(&precision)
        && v.unsigned_abs() < 10u128.pow(u32::from(precision))
}

/// Whether `s` fits a string column of type `ty` (characters, not bytes, count).
pub fn fits_length(ty: SqlType, s: &str) -> bool {
    match ty {
        // Fewer bytes than the limit means fewer characters: skip the count.
        SqlType::Char(n) | SqlType::Varchar(n) => {
            s.len() <= n as usize || s.chars().count() <= n as usize
        }
        _ => true,
    }
}

impl fmt::Display for SqlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SqlType::SmallInt => f.write_str("SMALLINT"),
            SqlType::Int => f.write_str("INT"),
            SqlType::BigInt => f.write_str("BIGINT"),
            SqlType::Decimal {
                unconstrained: true,
                ..
            } => f.write_str("NUMERIC"),
            SqlType::Decimal {
                precision, scale, ..
            } => write!(f, "DECIMAL({precision},{scale})"),
            SqlType::Real => f.write_str("REAL"),
            SqlType::Double => f.write_str("DOUBLE"),
            SqlType::Char(n) => write!(f, "CHAR({n})"),
            SqlType::Varchar(n) => write!(f, "VARCHAR({n})"),
            SqlType::Text => f.write_str("TEXT"),
            SqlType::Date => f.write_str("DATE"),
            SqlType::Time => f.write_str("TIME"),
            SqlType::Timestamp => f.write_str("TIMESTAMP"),
            SqlType::TimestampTz => f.write_str("TIMESTAMPTZ"),
            SqlType::Boolean => f.write_str("BOOLEAN"),
            SqlType::Bytea => f.write_str("BYTEA"),
            SqlType::Uuid => f.write_str("UUID"),
            SqlType::Json => f.write_str("JSON"),
            SqlType::Jsonb => f.write_str("JSONB"),
            SqlType::Interval => f.write_str("INTERVAL"),
            SqlType::Enum(id) => write!(f, "ENUM TYPE #{id}"),
            SqlType::Hstore => f.write_str("HSTORE"),
        }
    }
}

impl Value {
    /// SQL's order of two values of one column: NULL first, floats with -0 equal to +0
    /// and NaN last (as PostgreSQL sorts them), strings by their UTF-8 bytes (the C
    /// collation). `None` for values of different types.
    pub fn sql_cmp(&self, other: &Value) -> Option<Ordering> {
        Some(match (self, other) {
            (Value::Null, Value::Null) => Ordering::Equal,
            (Value::Null, _) => Ordering::Less,
            (_, Value::Null) => Ordering::Greater,
            (Value::Boolean(a), Value::Boolean(b)) => a.cmp(b),
            (Value::SmallInt(a), Value::SmallInt(b)) => a.cmp(b),
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            (Value::BigInt(a), Value::BigInt(b)) => a.cmp(b),
            (Value::Decimal(a), Value::Decimal(b)) => a.cmp(b),
            (Value::Real(a), Value::Real(b)) => float_order(f64::from(*a), f64::from(*b)),
            (Value::Double(a), Value::Double(b)) => float_order(*a, *b),
            (Value::Str(a), Value::Str(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Value::Date(a), Value::Date(b)) => a.cmp(b),
            (Value::Timestamp(a), Value::Timestamp(b)) | (Value::Time(a), Value::Time(b)) => {
                a.cmp(b)
            }
            (Value::Bytes(a), Value::Bytes(b)) => a.cmp(b),
            (Value::Uuid(a), Value::Uuid(b)) => a.cmp(b),
            (Value::Interval(a), Value::Interval(b)) => a.span().cmp(&b.span()),
            _ => return None,
        })
    }
}

impl Value {
    /// The value as SQL text shows it in a column of type `ty` (for messages).
    pub fn display(&self, ty: SqlType) -> String {
        match self {
            Value::Null => "NULL".into(),
            Value::Boolean(b) => b.to_string(),
            Value::SmallInt(x) => x.to_string(),
            Value::Int(x) => x.to_string(),
            Value::BigInt(x) => x.to_string(),
            Value::Decimal(x) => {
                let scale = match ty {
                    SqlType::Decimal { scale, .. } => u32::from(scale),
                    _ => 0,
                };
                let digits = x.unsigned_abs().to_string();
                let sign = if *x < 0 { "-" } else { "" };
                if scale == 0 {
                    format!("{sign}{digits}")
                } else {
                    let padded = format!("{digits:0>width$}", width = scale as usize + 1);
                    let (int, frac) = padded.split_at(padded.len() - scale as usize);
                    format!("{sign}{int}.{frac}")
                }
            }
            Value::Real(x) => x.to_string(),
            Value::Double(x) => x.to_string(),
            Value::Str(s) => format!("'{}'", s.replace('\'', "''")),
            Value::Date(d) => {
                let (y, m, day) = civil_from_days(i64::from(*d));
                format!("{y:04}-{m:02}-{day:02}")
            }
            Value::Bytes(b) => format!("'{}'", crate::text_forms::bytea_text(b)),
            Value::Uuid(u) => format!("'{}'", crate::text_forms::uuid_text(*u)),
            Value::Interval(v) => format!("'{v}'"),
            Value::Time(us) => format!("'{}'", crate::time_of_day::time_text(*us)),
            Value::Timestamp(us) => {
                let zone = if ty == SqlType::TimestampTz {
                    "+00"
                } else {
                    ""
                };
                let secs = us.div_euclid(1_000_000);
                let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
                let t = secs.rem_euclid(86_400);
                let frac = us.rem_euclid(1_000_000);
                format!(
                    "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{frac:06}{zone}",
                    t / 3600,
                    t / 60 % 60,
                    t % 60
                )
            }
        }
    }
}

/// Year, month and day of a count of days since 1970-01-01 (the proleptic Gregorian
/// calendar; H. Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Floats as SQL sorts them: -0 equals +0, every NaN equals every other and sorts last.
fn float_order(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).expect("neither is NaN"),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A value of `ty`, NULL one time in ten.
    pub fn value_of(ty: SqlType) -> BoxedStrategy<Value> {
        let string = |max: usize| {
            proptest::collection::vec(prop_oneof![Just('\0'), Just('a'), any::<char>()], 0..=max)
                .prop_map(String::from_iter)
        };
        let v: BoxedStrategy<Value> = match ty {
            SqlType::SmallInt => any::<i16>().prop_map(Value::SmallInt).boxed(),
            SqlType::Int => any::<i32>().prop_map(Value::Int).boxed(),
            SqlType::BigInt => any::<i64>().prop_map(Value::BigInt).boxed(),
            SqlType::Decimal { precision, .. } => {
                let max = 10i128.pow(u32::from(precision)) - 1;
                (-max..=max).prop_map(Value::Decimal).boxed()
            }
            SqlType::Real => any::<f32>().prop_map(Value::Real).boxed(),
            SqlType::Double => any::<f64>().prop_map(Value::Double).boxed(),
            SqlType::Char(n) | SqlType::Varchar(n) => {
                string(n as usize).prop_map(Value::Str).boxed()
            }
            SqlType::Text | SqlType::Enum(_) => string(12).prop_map(Value::Str).boxed(),
            SqlType::Date => any::<i32>().prop_map(Value::Date).boxed(),
            SqlType::Time => (0..=MICROS_PER_DAY).prop_map(Value::Time).boxed(),
            SqlType::Timestamp | SqlType::TimestampTz => {
                any::<i64>().prop_map(Value::Timestamp).boxed()
            }
            SqlType::Boolean => any::<bool>().prop_map(Value::Boolean).boxed(),
            SqlType::Bytea => {
                proptest::collection::vec(prop_oneof![Just(0u8), Just(0xff), any::<u8>()], 0..12)
                    .prop_map(Value::Bytes)
                    .boxed()
            }
            SqlType::Uuid => any::<u128>().prop_map(Value::Uuid).boxed(),
            SqlType::Hstore => prop_oneof![
                Just(Value::Str(r#""a"=>"1", "bb"=>NULL"#.into())),
                Just(Value::Str(String::new())),
            ]
            .boxed(),
            SqlType::Json | SqlType::Jsonb => prop_oneof![
                Just(Value::Str("{\"a\": [1, 2.5]}".into())),
                Just(Value::Str("null".into())),
            ]
            .boxed(),
            SqlType::Interval => (any::<i32>(), any::<i32>(), -(1i64 << 52)..(1i64 << 52))
                .prop_map(|(months, days, micros)| {
                    Value::Interval(Interval {
                        months,
                        days,
                        micros,
                    })
                })
                .boxed(),
        };
        prop_oneof![1 => Just(Value::Null), 9 => v].boxed()
    }

    pub fn any_type() -> impl Strategy<Value = SqlType> {
        prop_oneof![
            Just(SqlType::SmallInt),
            Just(SqlType::Int),
            Just(SqlType::BigInt),
            (1..=MAX_DECIMAL_PRECISION, 0u8..=4)
                .prop_map(|(precision, scale)| SqlType::decimal(precision, scale)),
            Just(SqlType::UNCONSTRAINED_NUMERIC),
            Just(SqlType::Real),
            Just(SqlType::Double),
            Just(SqlType::Char(4)),
            Just(SqlType::Varchar(6)),
            Just(SqlType::Text),
            Just(SqlType::Date),
            Just(SqlType::Time),
            Just(SqlType::Timestamp),
            Just(SqlType::TimestampTz),
            Just(SqlType::Boolean),
            Just(SqlType::Bytea),
            Just(SqlType::Uuid),
            Just(SqlType::Json),
            Just(SqlType::Jsonb),
            any::<u64>().prop_map(SqlType::Enum),
            Just(SqlType::Interval),
            Just(SqlType::Hstore),
        ]
    }

    /// A type a key column may have and a value of it.
    pub fn any_key_typed_value() -> impl Strategy<Value = (SqlType, Value)> {
        any_typed_value().prop_filter("a key type", |(ty, _)| *ty != SqlType::Interval)
    }

    /// A type and a value of it.
    pub fn any_typed_value() -> impl Strategy<Value = (SqlType, Value)> {
        any_type().prop_flat_map(|ty| value_of(ty).prop_map(move |v| (ty, v)))
    }

    /// Whether two value lists are equal as SQL sees them (NaN equals NaN, -0 equals 0).
    pub fn same(a: &[Value], b: &[Value]) -> bool {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(x, y)| x.sql_cmp(y) == Some(Ordering::Equal))
    }

    #[test]
    fn values_are_checked_against_their_column() {
        let dec = SqlType::decimal(5, 2);
        assert!(dec.check(&Value::Decimal(99_999)).is_ok());
        assert!(dec.check(&Value::Decimal(-99_999)).is_ok());
        assert!(dec.check(&Value::Decimal(100_000)).is_err());
        assert!(SqlType::Varchar(3).check(&Value::Str("héé".into())).is_ok());
        assert!(
            SqlType::Varchar(3)
                .check(&Value::Str("four".into()))
                .is_err()
        );
        assert!(SqlType::Int.check(&Value::BigInt(1)).is_err());
        assert!(SqlType::Date.check(&Value::Null).is_ok());
        let e = SqlType::Int.check(&Value::Str("x".into())).unwrap_err();
        assert!(e.to_string().contains("INT"), "{e}");
    }

    #[test]
    fn sql_order_of_floats_and_nulls() {
        let d = Value::Double;
        assert_eq!(d(-0.0).sql_cmp(&d(0.0)), Some(Ordering::Equal));
        assert_eq!(
            d(f64::NAN).sql_cmp(&d(f64::INFINITY)),
            Some(Ordering::Greater)
        );
        assert_eq!(
            Value::Null.sql_cmp(&d(f64::NEG_INFINITY)),
            Some(Ordering::Less)
        );
        assert_eq!(Value::Int(1).sql_cmp(&Value::BigInt(1)), None);
    }
}
