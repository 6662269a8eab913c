//! Results on the wire: the PostgreSQL type of each Arrow column, and rows encoded in
//! the text or the binary format the client asked for, column by column.

use std::sync::Arc;

use chrono::{DateTime, NaiveDate, NaiveDateTime};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Field, Float32Type, Float64Type, Int8Type, Int16Type,
    Int32Type, Int64Type, Schema, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use pgwire::api::Type;
use pgwire::api::portal::Format;
use pgwire::api::results::{DataRowEncoder, FieldInfo};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::data::DataRow;
use rust_decimal::Decimal;

/// The PostgreSQL type a column of `ty` is sent as; types without one are sent as
/// text, formatted the way Arrow prints them.
pub fn pg_type(ty: &DataType) -> Type {
    match ty {
        DataType::Boolean => Type::BOOL,
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => Type::INT2,
        DataType::Int32 | DataType::UInt16 => Type::INT4,
        DataType::Int64 | DataType::UInt32 | DataType::UInt64 => Type::INT8,
        DataType::Float16 | DataType::Float32 => Type::FLOAT4,
        DataType::Float64 => Type::FLOAT8,
        DataType::Decimal128(..) => Type::NUMERIC,
        DataType::Date32 | DataType::Date64 => Type::DATE,
        DataType::Timestamp(_, None) => Type::TIMESTAMP,
        DataType::Timestamp(_, Some(_)) => Type::TIMESTAMPTZ,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => Type::BYTEA,
        _ => Type::TEXT,
    }
}

/// The row description of `schema`, each column in the format `format` gives it.
pub fn fields(schema: &Schema, format: &Format) -> Vec<FieldInfo> {
    schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| field(f, format, i))
        .collect()
}

fn field(f: &Field, format: &Format, i: usize) -> FieldInfo {
    FieldInfo::new(
        f.name().clone(),
        None,
        None,
        pg_type(f.data_type()),
        format.format_for(i),
    )
}

fn internal(message: String) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "ERROR".into(),
        "XX000".into(),
        message,
    )))
}

/// Encodes every row of `batches` against `schema` (the fields [`fields`] gave).
pub fn rows(batches: &[RecordBatch], schema: Arc<Vec<FieldInfo>>) -> PgWireResult<Vec<DataRow>> {
    let mut out = Vec::with_capacity(batches.iter().map(RecordBatch::num_rows).sum());
    let mut encoder = DataRowEncoder::new(Arc::clone(&schema));
    let options = FormatOptions::default().with_null("");
    for batch in batches {
        let formatters = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| internal(e.to_string()))?;
        for row in 0..batch.num_rows() {
            for (c, column) in batch.columns().iter().enumerate() {
                encode(&mut encoder, column, &formatters[c], row)?;
            }
            out.push(encoder.take_row());
        }
    }
    Ok(out)
}

fn encode(
    e: &mut DataRowEncoder,
    column: &ArrayRef,
    text: &ArrayFormatter<'_>,
    row: usize,
) -> PgWireResult<()> {
    macro_rules! primitive {
        ($t:ty, $into:ty) => {{
            let a = column.as_primitive::<$t>();
            let v: Option<$into> = a
                .is_valid(row)
                .then(|| <$into>::try_from(a.value(row)))
                .transpose()
                .map_err(|_| internal(format!("{} out of range", a.value(row))))?;
            e.encode_field(&v)
        }};
    }
    if column.is_null(row) {
        return e.encode_field(&None::<i32>);
    }
    match column.data_type() {
        DataType::Boolean => e.encode_field(&Some(column.as_boolean().value(row))),
        DataType::Int8 => primitive!(Int8Type, i16),
        DataType::Int16 => primitive!(Int16Type, i16),
        DataType::UInt8 => primitive!(UInt8Type, i16),
        DataType::Int32 => primitive!(Int32Type, i32),
        DataType::UInt16 => primitive!(UInt16Type, i32),
        DataType::Int64 => primitive!(Int64Type, i64),
        DataType::UInt32 => primitive!(UInt32Type, i64),
        DataType::UInt64 => primitive!(UInt64Type, i64),
        DataType::Float32 => e.encode_field(&Some(column.as_primitive::<Float32Type>().value(row))),
        DataType::Float64 => e.encode_field(&Some(column.as_primitive::<Float64Type>().value(row))),
        DataType::Decimal128(_, scale) => {
            let raw = column.as_primitive::<Decimal128Type>().value(row);
            let scale = u32::try_from(*scale).map_err(|_| internal("negative scale".into()))?;
            let d = Decimal::try_from_i128_with_scale(raw, scale)
                .map_err(|e| internal(format!("numeric {raw}e-{scale}: {e}")))?;
            e.encode_field(&Some(d))
        }
        DataType::Date32 => {
            let days = column.as_primitive::<Date32Type>().value(row);
            let date = NaiveDate::from_num_days_from_ce_opt(days + 719_163)
                .ok_or_else(|| internal(format!("date {days} out of range")))?;
            e.encode_field(&Some(date))
        }
        DataType::Timestamp(unit, tz) => {
            let v = match unit {
                TimeUnit::Second => {
                    column.as_primitive::<TimestampSecondType>().value(row) * 1_000_000_000
                }
                TimeUnit::Millisecond => {
                    column.as_primitive::<TimestampMillisecondType>().value(row) * 1_000_000
                }
                TimeUnit::Microsecond => {
                    column.as_primitive::<TimestampMicrosecondType>().value(row) * 1_000
                }
                TimeUnit::Nanosecond => column.as_primitive::<TimestampNanosecondType>().value(row),
            };
            let at = DateTime::from_timestamp_nanos(v);
            match tz {
                None => e.encode_field(&Some::<NaiveDateTime>(at.naive_utc())),
                Some(_) => e.encode_field(&Some(at)),
            }
        }
        DataType::Binary => e.encode_field(&Some(column.as_binary::<i32>().value(row))),
        DataType::LargeBinary => e.encode_field(&Some(column.as_binary::<i64>().value(row))),
        DataType::BinaryView => e.encode_field(&Some(column.as_binary_view().value(row))),
        _ => e.encode_field(&Some(text.value(row).to_string())),
    }
}
