//! Parameters of the extended protocol: each bound value, decoded from the text or
//! binary format of its PostgreSQL type, becomes a DataFusion scalar, which the prepared
//! statement runs with (pmdb-sql turns it into a literal where a statement needs one);
//! an array becomes a list of its elements' values.

use std::sync::Arc;

use chrono::{DateTime, FixedOffset, NaiveDate, NaiveDateTime};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, IntervalMonthDayNano, TimeUnit};
use datafusion::common::ScalarValue;
use pgwire::api::Type;
use pgwire::api::portal::Portal;
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::types::FromSqlText;
use pgwire::types::format::FormatOptions;
use postgres_types::FromSqlOwned;
use postgres_types::Kind;

use pmdb_sql::array_text::{one_dimension, parse_text};
use pmdb_sql::hstore::Hstore;
use pmdb_sql::text_forms::{parse_uuid, uuid_text};
use pmdb_sql::time_of_day::{MICROS_PER_DAY, parse_time};
use pmdb_sql::types::Interval;
use pmdb_sql::{UTC, interval_input};

use crate::encode::parameter_type;
use crate::numeric::Numeric;
use crate::pg_array::{element_type, parse_binary};

fn user_error(code: &str, message: String) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "ERROR".into(),
        code.into(),
        message,
    )))
}

/// The type of parameter `i`: the client's, else the one planning found, else text.
pub fn param_type(given: &[Option<Type>], planned: &[Option<FieldRef>], i: usize) -> Type {
    given
        .get(i)
        .cloned()
        .flatten()
        .filter(|t| *t != Type::UNKNOWN)
        .or_else(|| {
            planned
                .get(i)
                .cloned()
                .flatten()
                .map(|f| parameter_type(&f))
        })
        .unwrap_or(Type::TEXT)
}

/// The type a parameter the client declared of type `ty` is planned as, for the types
/// whose values a plan of another type could lose (numbers, booleans, dates and
/// times); `None` for the others, text and unknown among them, which the plan types.
pub fn declared_type(ty: &Type) -> Option<DataType> {
    Some(match *ty {
        Type::BOOL => DataType::Boolean,
        Type::INT2 => DataType::Int16,
        Type::INT4 => DataType::Int32,
        Type::INT8 => DataType::Int64,
        Type::FLOAT4 => DataType::Float32,
        Type::FLOAT8 => DataType::Float64,
        Type::NUMERIC => pmdb_sql::arrow_type(pmdb_sql::SqlType::UNCONSTRAINED_NUMERIC),
        Type::DATE => DataType::Date32,
        Type::TIMESTAMP => DataType::Timestamp(TimeUnit::Microsecond, None),
        Type::TIMESTAMPTZ => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        Type::INTERVAL => pmdb_sql::arrow_type(pmdb_sql::SqlType::Interval),
        _ => return None,
    })
}

/// Days from 0001-01-01 (chrono's day 1) to 1970-01-01.
const UNIX_EPOCH_DAYS_FROM_CE: i32 = 719_163;

/// A value as received: its bytes (`None` for a NULL) in the text or binary format.
#[derive(Clone, Copy)]
struct Raw<'a> {
    bytes: Option<&'a [u8]>,
    binary: bool,
}

impl<'a> Raw<'a> {
    /// The value decoded as a `T`, by the format it came in.
    fn get<T: FromSqlOwned + FromSqlText<'a>>(self, ty: &Type) -> PgWireResult<Option<T>> {
        if !T::accepts(ty) {
            return Err(PgWireError::InvalidRustTypeForParameter(
                ty.name().to_owned(),
            ));
        }
        let Some(bytes) = self.bytes else {
            return Ok(None);
        };
        let value = if self.binary {
            T::from_sql(ty, bytes)
        } else {
            T::from_sql_text(ty, bytes, &FormatOptions::default())
        };
        value.map(Some).map_err(PgWireError::FailedToParseParameter)
    }
}

/// A value of type `ty`.
fn scalar(raw: Raw<'_>, ty: &Type) -> PgWireResult<ScalarValue> {
    let micros = |t: NaiveDateTime| t.and_utc().timestamp_micros();
    Ok(match ty {
        &Type::INT2 => ScalarValue::Int16(raw.get::<i16>(ty)?),
        &Type::INT4 => ScalarValue::Int32(raw.get::<i32>(ty)?),
        &Type::INT8 => ScalarValue::Int64(raw.get::<i64>(ty)?),
        &Type::OID => ScalarValue::UInt32(raw.get::<u32>(ty)?),
        &Type::NUMERIC => match numeric(raw)? {
            Some(n) => ScalarValue::Decimal128(Some(n.mantissa), 38, n.scale as i8),
            None => ScalarValue::Decimal128(None, 38, 0),
        },
        &Type::FLOAT4 => ScalarValue::Float32(raw.get::<f32>(ty)?),
        &Type::FLOAT8 => ScalarValue::Float64(raw.get::<f64>(ty)?),
        &Type::BOOL => ScalarValue::Boolean(raw.get::<bool>(ty)?),
        &Type::DATE => ScalarValue::Date32(
            raw.get::<NaiveDate>(ty)?
                .map(|d| chrono::Datelike::num_days_from_ce(&d) - UNIX_EPOCH_DAYS_FROM_CE),
        ),
        &Type::TIMESTAMP => {
            ScalarValue::TimestampMicrosecond(raw.get::<NaiveDateTime>(ty)?.map(micros), None)
        }
        &Type::TIMESTAMPTZ => ScalarValue::TimestampMicrosecond(
            raw.get::<DateTime<FixedOffset>>(ty)?
                .map(|t| micros(t.naive_utc())),
            Some(UTC.into()),
        ),
        &Type::BYTEA => ScalarValue::Binary(raw.get::<Vec<u8>>(ty)?),
        &Type::UUID => ScalarValue::Utf8(uuid(raw)?.map(uuid_text)),
        &Type::JSON | &Type::JSONB => ScalarValue::Utf8(json(raw, ty == &Type::JSONB)?),
        &Type::INTERVAL => ScalarValue::IntervalMonthDayNano(interval(raw)?),
        &Type::TIME => ScalarValue::Time64Microsecond(time(raw)?),
        &Type::TEXT | &Type::VARCHAR | &Type::BPCHAR | &Type::NAME | &Type::UNKNOWN => {
            ScalarValue::Utf8(raw.get::<String>(ty)?)
        }
        // A label, in either format.
        other if matches!(other.kind(), Kind::Enum(_)) => ScalarValue::Utf8(label(raw)?),
        other if i64::from(other.oid()) == crate::pg_catalog::oids::HSTORE_TYPE => {
            ScalarValue::Utf8(hstore(raw)?)
        }
        // A value of a domain is its base type's.
        other if let Kind::Domain(base) = other.kind() => scalar(raw, base)?,
        other => match element_type(other) {
            Some(element) => array(raw, &element)?,
            None => {
                return Err(user_error(
                    "0A000",
                    format!("parameters of type {other} are not supported"),
                ));
            }
        },
    })
}

/// An array whose elements are of type `element`, as a list (one dimension).
fn array(raw: Raw<'_>, element: &Type) -> PgWireResult<ScalarValue> {
    // A NULL of the element type gives the list's element type.
    let element_data_type = scalar(
        Raw {
            bytes: None,
            binary: raw.binary,
        },
        element,
    )?
    .data_type();
    let Some(bytes) = raw.bytes else {
        let list = DataType::List(Arc::new(Field::new_list_field(element_data_type, true)));
        return ScalarValue::try_from(list).map_err(|e| user_error("XX000", e.to_string()));
    };
    let parsed = if raw.binary {
        parse_binary(bytes, element)
    } else {
        parse_text(bytes)
    }
    .map_err(|why| user_error("22P02", why))?;
    one_dimension(&parsed.dims).map_err(|e| user_error(e.sqlstate(), e.to_string()))?;
    let values = parsed
        .elements
        .iter()
        .map(|e| {
            scalar(
                Raw {
                    bytes: e.as_deref(),
                    binary: raw.binary,
                },
                element,
            )
        })
        .collect::<PgWireResult<Vec<_>>>()?;
    Ok(ScalarValue::List(ScalarValue::new_list_nullable(
        &values,
        &element_data_type,
    )))
}

/// A decimal: PostgreSQL's NUMERIC, in text or binary, of up to 38 digits.
fn numeric(raw: Raw<'_>) -> PgWireResult<Option<Numeric>> {
    let Some(bytes) = raw.bytes else {
        return Ok(None);
    };
    let read = if raw.binary {
        Numeric::from_binary(bytes)
    } else {
        std::str::from_utf8(bytes)
            .map_err(|_| ("22021", "a numeric parameter that is not UTF-8".to_owned()))
            .and_then(Numeric::parse)
    };
    read.map(Some)
        .map_err(|(code, message)| user_error(code, message))
}

/// An enum type's label: its text in either format.
fn label(raw: Raw<'_>) -> PgWireResult<Option<String>> {
    raw.bytes
        .map(|b| {
            std::str::from_utf8(b)
                .map(str::to_owned)
                .map_err(|_| user_error("22021", "an enum label that is not UTF-8".into()))
        })
        .transpose()
}

/// An hstore, as its canonical text: hstore's binary form, or its text input.
fn hstore(raw: Raw<'_>) -> PgWireResult<Option<String>> {
    let Some(bytes) = raw.bytes else {
        return Ok(None);
    };
    let value = if raw.binary {
        Hstore::from_binary(bytes)
    } else {
        std::str::from_utf8(bytes)
            .map_err(|_| pmdb_sql::SqlError::user("22021", "an hstore parameter that is not UTF-8"))
            .and_then(Hstore::parse)
    };
    value
        .map(|h| Some(h.to_text()))
        .map_err(|e| user_error(e.sqlstate(), e.to_string()))
}

/// A UUID: 16 bytes in binary, else any text PostgreSQL reads as one.
fn uuid(raw: Raw<'_>) -> PgWireResult<Option<u128>> {
    let Some(bytes) = raw.bytes else {
        return Ok(None);
    };
    let invalid = || user_error("22P02", format!("invalid uuid parameter {bytes:?}"));
    if raw.binary {
        let bytes: [u8; 16] = bytes.try_into().map_err(|_| invalid())?;
        return Ok(Some(u128::from_be_bytes(bytes)));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| invalid())?;
    parse_uuid(text)
        .map(Some)
        .map_err(|e| user_error("22P02", e.to_string()))
}

/// An interval: PostgreSQL's 16 bytes in binary, else any text PostgreSQL reads as one.
fn interval(raw: Raw<'_>) -> PgWireResult<Option<IntervalMonthDayNano>> {
    let Some(bytes) = raw.bytes else {
        return Ok(None);
    };
    let invalid = || user_error("22P03", format!("invalid interval parameter {bytes:?}"));
    if raw.binary {
        let v = Interval::from_binary(bytes).ok_or_else(invalid)?;
        let nanos = v
            .nanos()
            .ok_or_else(|| user_error("22015", format!("interval out of range: {v}")))?;
        return Ok(Some(IntervalMonthDayNano::new(v.months, v.days, nanos)));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| invalid())?;
    interval_input(text)
        .map(Some)
        .map_err(|e| user_error(e.sqlstate(), e.to_string()))
}

/// A time of day in microseconds: in binary, an i64 (big-endian).
fn time(raw: Raw<'_>) -> PgWireResult<Option<i64>> {
    let Some(bytes) = raw.bytes else {
        return Ok(None);
    };
    let invalid = || user_error("22P03", format!("invalid time parameter {bytes:?}"));
    if raw.binary {
        let micros = i64::from_be_bytes(bytes.try_into().map_err(|_| invalid())?);
        if !(0..=MICROS_PER_DAY).contains(&micros) {
            return Err(user_error(
                "22008",
                format!("time out of range: {micros} microseconds"),
            ));
        }
        return Ok(Some(micros));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| invalid())?;
    parse_time(text)
        .map(Some)
        .map_err(|e| user_error(e.sqlstate(), e.to_string()))
}

/// A json or (`jsonb`) jsonb value, as its text: in binary, a jsonb value has a
/// version byte (1) before it.
fn json(raw: Raw<'_>, jsonb: bool) -> PgWireResult<Option<String>> {
    let Some(mut bytes) = raw.bytes else {
        return Ok(None);
    };
    if jsonb && raw.binary {
        bytes = match bytes.split_first() {
            Some((1, rest)) => rest,
            _ => {
                return Err(user_error(
                    "22P03",
                    "unsupported jsonb version number".into(),
                ));
            }
        };
    }
    std::str::from_utf8(bytes)
        .map(|t| Some(t.to_owned()))
        .map_err(|_| user_error("22021", "a json parameter that is not UTF-8".into()))
}

/// The values bound in `portal`, each decoded by its type (see [`param_type`]).
pub fn values<S: Clone>(
    portal: &Portal<S>,
    planned: &[Option<FieldRef>],
) -> PgWireResult<Vec<ScalarValue>> {
    (0..portal.parameter_len())
        .map(|i| {
            let ty = param_type(&portal.statement.parameter_types, planned, i);
            let raw = Raw {
                bytes: portal.parameters.get(i).and_then(|p| p.as_deref()),
                binary: portal.parameter_format.is_binary(i),
            };
            scalar(raw, &ty)
        })
        .collect()
}
