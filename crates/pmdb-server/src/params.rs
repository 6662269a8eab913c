//! Parameters of the extended protocol: each bound value, decoded from the text or
//! binary format of its PostgreSQL type, becomes a DataFusion scalar, which the prepared
//! statement runs with (pmdb-sql turns it into a literal where a statement needs one).

use chrono::{DateTime, FixedOffset, NaiveDate, NaiveDateTime};
use datafusion::arrow::datatypes::{DataType, IntervalMonthDayNano};
use datafusion::common::ScalarValue;
use pgwire::api::Type;
use pgwire::api::portal::Portal;
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use rust_decimal::Decimal;

use pmdb_sql::text_forms::{parse_uuid, uuid_text};
use pmdb_sql::types::Interval;
use pmdb_sql::{UTC, interval_input};

use crate::encode::pg_type;

fn user_error(code: &str, message: String) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "ERROR".into(),
        code.into(),
        message,
    )))
}

/// The type of parameter `i`: the client's, else the one planning found, else text.
pub fn param_type(given: &[Option<Type>], planned: &[Option<DataType>], i: usize) -> Type {
    given
        .get(i)
        .cloned()
        .flatten()
        .filter(|t| *t != Type::UNKNOWN)
        .or_else(|| planned.get(i).cloned().flatten().map(|t| pg_type(&t)))
        .unwrap_or(Type::TEXT)
}

/// Days from 0001-01-01 (chrono's day 1) to 1970-01-01.
const UNIX_EPOCH_DAYS_FROM_CE: i32 = 719_163;

/// Parameter `i` of `portal`, of type `ty`.
fn scalar<S: Clone>(portal: &Portal<S>, i: usize, ty: &Type) -> PgWireResult<ScalarValue> {
    let micros = |t: NaiveDateTime| t.and_utc().timestamp_micros();
    Ok(match ty {
        &Type::INT2 => ScalarValue::Int16(portal.parameter::<i16>(i, ty)?),
        &Type::INT4 => ScalarValue::Int32(portal.parameter::<i32>(i, ty)?),
        &Type::INT8 => ScalarValue::Int64(portal.parameter::<i64>(i, ty)?),
        &Type::OID => ScalarValue::UInt32(portal.parameter::<u32>(i, ty)?),
        &Type::NUMERIC => match portal.parameter::<Decimal>(i, ty)? {
            Some(d) => ScalarValue::Decimal128(Some(d.mantissa()), 38, d.scale() as i8),
            None => ScalarValue::Decimal128(None, 38, 0),
        },
        &Type::FLOAT4 => ScalarValue::Float32(portal.parameter::<f32>(i, ty)?),
        &Type::FLOAT8 => ScalarValue::Float64(portal.parameter::<f64>(i, ty)?),
        &Type::BOOL => ScalarValue::Boolean(portal.parameter::<bool>(i, ty)?),
        &Type::DATE => ScalarValue::Date32(
            portal
                .parameter::<NaiveDate>(i, ty)?
                .map(|d| chrono::Datelike::num_days_from_ce(&d) - UNIX_EPOCH_DAYS_FROM_CE),
        ),
        &Type::TIMESTAMP => ScalarValue::TimestampMicrosecond(
            portal.parameter::<NaiveDateTime>(i, ty)?.map(micros),
            None,
        ),
        &Type::TIMESTAMPTZ => ScalarValue::TimestampMicrosecond(
            portal
                .parameter::<DateTime<FixedOffset>>(i, ty)?
                .map(|t| micros(t.naive_utc())),
            Some(UTC.into()),
        ),
        &Type::BYTEA => ScalarValue::Binary(portal.parameter::<Vec<u8>>(i, ty)?),
        &Type::UUID => ScalarValue::Utf8(uuid(portal, i)?.map(uuid_text)),
        &Type::JSON | &Type::JSONB => ScalarValue::Utf8(json(portal, i, ty == &Type::JSONB)?),
        &Type::INTERVAL => ScalarValue::IntervalMonthDayNano(interval(portal, i)?),
        &Type::TEXT | &Type::VARCHAR | &Type::BPCHAR | &Type::NAME | &Type::UNKNOWN => {
            ScalarValue::Utf8(portal.parameter::<String>(i, ty)?)
        }
        other => {
            return Err(user_error(
                "0A000",
                format!("parameters of type {other} are not supported"),
            ));
        }
    })
}

/// Parameter `i` of `portal`, a UUID: 16 bytes in binary, else any text PostgreSQL
/// reads as one.
fn uuid<S: Clone>(portal: &Portal<S>, i: usize) -> PgWireResult<Option<u128>> {
    let Some(Some(raw)) = portal.parameters.get(i) else {
        return Ok(None);
    };
    let invalid = || user_error("22P02", format!("invalid uuid parameter {raw:?}"));
    if portal.parameter_format.is_binary(i) {
        let bytes: [u8; 16] = raw.as_ref().try_into().map_err(|_| invalid())?;
        return Ok(Some(u128::from_be_bytes(bytes)));
    }
    let text = std::str::from_utf8(raw).map_err(|_| invalid())?;
    parse_uuid(text)
        .map(Some)
        .map_err(|e| user_error("22P02", e.to_string()))
}

/// Parameter `i` of `portal`, an interval: PostgreSQL's 16 bytes in binary, else any
/// text PostgreSQL reads as one.
fn interval<S: Clone>(portal: &Portal<S>, i: usize) -> PgWireResult<Option<IntervalMonthDayNano>> {
    let Some(Some(raw)) = portal.parameters.get(i) else {
        return Ok(None);
    };
    let invalid = || user_error("22P03", format!("invalid interval parameter {raw:?}"));
    if portal.parameter_format.is_binary(i) {
        let v = Interval::from_binary(raw).ok_or_else(invalid)?;
        let nanos = v
            .nanos()
            .ok_or_else(|| user_error("22015", format!("interval out of range: {v}")))?;
        return Ok(Some(IntervalMonthDayNano::new(v.months, v.days, nanos)));
    }
    let text = std::str::from_utf8(raw).map_err(|_| invalid())?;
    interval_input(text)
        .map(Some)
        .map_err(|e| user_error(e.sqlstate(), e.to_string()))
}

/// Parameter `i` of `portal`, a json or (`jsonb`) jsonb value, as its text: in binary,
/// a jsonb value has a version byte (1) before it.
fn json<S: Clone>(portal: &Portal<S>, i: usize, jsonb: bool) -> PgWireResult<Option<String>> {
    let Some(Some(raw)) = portal.parameters.get(i) else {
        return Ok(None);
    };
    let mut bytes = raw.as_ref();
    if jsonb && portal.parameter_format.is_binary(i) {
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
    planned: &[Option<DataType>],
) -> PgWireResult<Vec<ScalarValue>> {
    (0..portal.parameter_len())
        .map(|i| {
            let ty = param_type(&portal.statement.parameter_types, planned, i);
            scalar(portal, i, &ty)
        })
        .collect()
}
