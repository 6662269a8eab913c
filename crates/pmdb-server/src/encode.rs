//! Results on the wire: the PostgreSQL type of each Arrow column, and rows encoded in
//! the text or the binary format the client asked for, column by column, as DataRow
//! messages of a query's result or as the CopyData of a COPY … TO STDOUT.

use std::sync::Arc;

use chrono::{DateTime, NaiveDate, NaiveDateTime};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Field, Float32Type, Float64Type, Int8Type, Int16Type,
    Int32Type, Int64Type, IntervalUnit, Schema, Time32MillisecondType, Time32SecondType,
    Time64MicrosecondType, Time64NanosecondType, TimeUnit, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt8Type, UInt16Type,
    UInt32Type, UInt64Type,
};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use pgwire::api::Type;
use pgwire::api::portal::Format;
use pgwire::api::results::{CopyEncoder, CopyTextOptions, DataRowEncoder, FieldInfo};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::copy::CopyData;
use pgwire::messages::data::DataRow;
use pgwire::types::ToSqlText;
use pmdb_sql::hstore::Hstore;
use pmdb_sql::text_forms::{parse_uuid, timestamp_text, uuid_text};
use pmdb_sql::time_of_day::time_text;
use pmdb_sql::types::{Interval, SqlType};
use pmdb_sql::{CopyEncoding, CopyOutFormat, interval_at, text_type};
use postgres_types::{Kind, ToSql};

use crate::copy_csv;
use crate::float_text::{Float4, Float8};
use crate::numeric::Numeric;
use crate::pg_array::{ArrayOut, array_type, element_type};
use crate::pg_record::RecordOut;

/// The PostgreSQL type a column of `ty` is sent as; types without one are sent as
/// text, formatted the way Arrow prints them.
pub fn pg_type(ty: &DataType) -> Type {
    match ty {
        DataType::Boolean => Type::BOOL,
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => Type::INT2,
        DataType::Int32 | DataType::UInt16 => Type::INT4,
        // PostgreSQL's one unsigned type.
        DataType::UInt32 => Type::OID,
        DataType::Int64 | DataType::UInt64 => Type::INT8,
        DataType::Float16 | DataType::Float32 => Type::FLOAT4,
        DataType::Float64 => Type::FLOAT8,
        DataType::Decimal128(..) => Type::NUMERIC,
        DataType::Date32 | DataType::Date64 => Type::DATE,
        DataType::Time32(_) | DataType::Time64(_) => Type::TIME,
        DataType::Timestamp(_, None) => Type::TIMESTAMP,
        DataType::Timestamp(_, Some(_)) => Type::TIMESTAMPTZ,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => Type::BYTEA,
        DataType::Interval(IntervalUnit::MonthDayNano) => Type::INTERVAL,
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            // PostgreSQL has one array type per element type, whatever the dimensions.
            let element = pg_type(f.data_type());
            element_type(&element)
                .or(Some(element))
                .and_then(|e| array_type(&e))
                .unwrap_or(Type::TEXT)
        }
        // A row value: PostgreSQL's anonymous record.
        DataType::Struct(_) => Type::RECORD,
        _ => Type::TEXT,
    }
}

/// Field metadata naming the PostgreSQL type of a catalog column that Arrow's type
/// does not tell: a vector (`int2vector`, `oidvector`) that is an Arrow list, or a
/// `"char"` that is Arrow text.
pub const VECTOR_TYPE: &str = "pmdb.vector_type";

/// The PostgreSQL type of a result column: the one its field's metadata names (a uuid
/// is Arrow text), else its Arrow type's.
pub fn pg_type_of(f: &Field) -> Type {
    match f.metadata().get(VECTOR_TYPE).map(String::as_str) {
        Some("int2vector") => return Type::INT2_VECTOR,
        Some("oidvector") => return Type::OID_VECTOR,
        Some("char") => return Type::CHAR,
        _ => {}
    }
    match text_type(f) {
        Some(SqlType::Uuid) => Type::UUID,
        Some(SqlType::Json) => Type::JSON,
        Some(SqlType::Jsonb) => Type::JSONB,
        Some(SqlType::Char(_)) => Type::BPCHAR,
        Some(SqlType::Varchar(_)) => Type::VARCHAR,
        Some(SqlType::Enum(id)) => enum_type(id),
        Some(SqlType::Hstore) => hstore_type(),
        _ => match f.data_type() {
            // An array of a type Arrow holds as text, told by its item's metadata.
            DataType::List(item) | DataType::LargeList(item) if text_type(item).is_some() => {
                match pg_type_of(item) {
                    e if matches!(e.kind(), Kind::Enum(_)) => Type::new(
                        format!("_{}", e.name()),
                        e.oid() + 1,
                        Kind::Array(e),
                        "public".into(),
                    ),
                    e => array_type(&e).unwrap_or(Type::TEXT_ARRAY),
                }
            }
            other => pg_type(other),
        },
    }
}

/// A parameter's type as planned: its field's, or the domain it is read as, over that.
pub fn parameter_type(field: &Field) -> Type {
    let base = pg_type_of(field);
    match pmdb_sql::domain_of(field) {
        Some(id) => Type::new(
            format!("domain_{id}"),
            u32::try_from(crate::pg_catalog::oids::domain_type(id)).unwrap_or(0),
            Kind::Domain(base),
            "public".into(),
        ),
        None => base,
    }
}

/// The hstore extension's type, as the wire names it.
pub fn hstore_type() -> Type {
    Type::new(
        "hstore".into(),
        u32::try_from(crate::pg_catalog::oids::HSTORE_TYPE).unwrap_or(0),
        Kind::Simple,
        "public".into(),
    )
}

/// Enum type `id`, as the wire names it: the oid is what the wire carries; a client
/// reads the name from pg_type. Its array type's oid is the next one
/// ([`crate::pg_catalog::oids::enum_array`]).
fn enum_type(id: u64) -> Type {
    Type::new(
        format!("enum_{id}"),
        u32::try_from(crate::pg_catalog::oids::enum_type(id)).unwrap_or(0),
        Kind::Enum(Vec::new()),
        "public".into(),
    )
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
        pg_type_of(f),
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

/// A TIMESTAMP or (with `zone`) a TIMESTAMPTZ, in UTC, as PostgreSQL writes it: in
/// text, ISO with only the fraction's digits that are not trailing zeros
/// (`2024-01-02 03:04:05.5`, then `+00` for a TIMESTAMPTZ); in binary, as any
/// timestamp (the microseconds are the same for both).
#[derive(Debug)]
struct Timestamp {
    at: NaiveDateTime,
    zone: bool,
}

impl ToSql for Timestamp {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<postgres_types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        // Both types are microseconds since 2000-01-01 UTC.
        self.at.to_sql(&Type::TIMESTAMP, out)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::TIMESTAMP || *ty == Type::TIMESTAMPTZ
    }

    postgres_types::to_sql_checked!();
}

impl ToSqlText for Timestamp {
    fn to_sql_text(
        &self,
        _ty: &Type,
        out: &mut bytes::BytesMut,
        _options: &pgwire::types::format::FormatOptions,
    ) -> Result<postgres_types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        out.extend_from_slice(timestamp_text(self.at, self.zone).as_bytes());
        Ok(postgres_types::IsNull::No)
    }
}

/// A value of a PostgreSQL type Arrow has no type for, with its binary and text forms:
/// `$name($held)`, accepted as `$ty`.
macro_rules! wire_value {
    ($(#[$doc:meta])* $name:ident $(<$lt:lifetime>)? ($held:ty), $ty:expr,
     binary: |$b:ident, $bout:ident| $binary:expr,
     text: |$t:ident, $tout:ident| $text:expr $(,)?) => {
        $(#[$doc])*
        #[derive(Debug)]
        struct $name $(<$lt>)? ($held);

        impl $(<$lt>)? ToSql for $name $(<$lt>)? {
            fn to_sql(
                &self,
                _ty: &Type,
                out: &mut bytes::BytesMut,
            ) -> Result<postgres_types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
                let ($b, $bout) = (&self.0, out);
                $binary;
                Ok(postgres_types::IsNull::No)
            }

            fn accepts(ty: &Type) -> bool {
                *ty == $ty
            }

            postgres_types::to_sql_checked!();
        }

        impl $(<$lt>)? ToSqlText for $name $(<$lt>)? {
            fn to_sql_text(
                &self,
                _ty: &Type,
                out: &mut bytes::BytesMut,
                _options: &pgwire::types::format::FormatOptions,
            ) -> Result<postgres_types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
                let ($t, $tout) = (&self.0, out);
                $text;
                Ok(postgres_types::IsNull::No)
            }
        }
    };
}

wire_value!(
    /// A CHAR(n) value, kept without trailing blanks, with its n: blank-padded to n
    /// characters as PostgreSQL sends it, in text and in binary alike.
    Padded<'a>((&'a str, usize)),
    Type::BPCHAR,
    binary: |p, out| pad_into(p, out),
    text: |p, out| pad_into(p, out),
);

fn pad_into((text, width): &(&str, usize), out: &mut bytes::BytesMut) {
    out.extend_from_slice(text.as_bytes());
    let blanks = width.saturating_sub(text.chars().count());
    out.extend(std::iter::repeat_n(b' ', blanks));
}

wire_value!(
    /// A UUID, held as its canonical text by Arrow: 16 bytes in binary.
    Uuid(u128),
    Type::UUID,
    binary: |u, out| out.extend_from_slice(&u.to_be_bytes()),
    text: |u, out| out.extend_from_slice(uuid_text(*u).as_bytes()),
);

wire_value!(
    /// A jsonb value, held as its text by Arrow: in binary, a version byte (1) before the
    /// text.
    Jsonb(String),
    Type::JSONB,
    binary: |j, out| {
        out.extend_from_slice(&[1]);
        out.extend_from_slice(j.as_bytes())
    },
    text: |j, out| out.extend_from_slice(j.as_bytes()),
);

wire_value!(
    /// An hstore, held as its canonical text by Arrow: in binary, hstore's pair count
    /// and lengths ([`pmdb_sql::hstore::Hstore::to_binary`]).
    HstoreField(Hstore),
    hstore_type(),
    binary: |h, out| out.extend_from_slice(&h.to_binary()),
    text: |h, out| out.extend_from_slice(h.to_text().as_bytes()),
);

wire_value!(
    /// A time of day in microseconds: PostgreSQL's text, its 8 bytes in binary.
    TimeField(i64),
    Type::TIME,
    binary: |v, out| out.extend_from_slice(&v.to_be_bytes()),
    text: |v, out| out.extend_from_slice(time_text(*v).as_bytes()),
);

wire_value!(
    /// An interval: PostgreSQL's output style in text, its 16 bytes in binary.
    IntervalField(Interval),
    Type::INTERVAL,
    binary: |v, out| out.extend_from_slice(&v.to_binary()),
    text: |v, out| out.extend_from_slice(v.to_string().as_bytes()),
);

/// What takes a row's values one after the other: a DataRow's encoder or a COPY's.
trait FieldEncoder {
    fn field<T: ToSql + ToSqlText + Sized>(&mut self, value: &T) -> PgWireResult<()>;
}

impl FieldEncoder for DataRowEncoder {
    fn field<T: ToSql + ToSqlText + Sized>(&mut self, value: &T) -> PgWireResult<()> {
        self.encode_field(value)
    }
}

impl FieldEncoder for copy_csv::Encoder {
    fn field<T: ToSql + ToSqlText + Sized>(&mut self, value: &T) -> PgWireResult<()> {
        self.value(value)
    }
}

impl FieldEncoder for CopyEncoder {
    fn field<T: ToSql + ToSqlText + Sized>(&mut self, value: &T) -> PgWireResult<()> {
        self.encode_field(value)
    }
}

/// Encodes each row of `batches` with `encoder`, handing it to `row` when complete.
fn each_row<E: FieldEncoder>(
    batches: &[RecordBatch],
    encoder: &mut E,
    mut row_done: impl FnMut(&mut E),
) -> PgWireResult<()> {
    let options = FormatOptions::default().with_null("");
    for batch in batches {
        let formatters = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| internal(e.to_string()))?;
        let kinds: Vec<Option<SqlType>> = batch
            .schema()
            .fields()
            .iter()
            .map(|f| text_type(f))
            .collect();
        for row in 0..batch.num_rows() {
            for (c, column) in batch.columns().iter().enumerate() {
                encode_as(encoder, kinds[c], column, &formatters[c], row)?;
            }
            row_done(encoder);
        }
    }
    Ok(())
}

/// Encodes row `row` of `column`, whose values are of `kind` where Arrow holds them as
/// text (a uuid's binary form is its 16 bytes, a jsonb's has a version byte).
fn encode_as<E: FieldEncoder>(
    encoder: &mut E,
    kind: Option<SqlType>,
    column: &ArrayRef,
    formatter: &ArrayFormatter<'_>,
    row: usize,
) -> PgWireResult<()> {
    match kind {
        Some(SqlType::Uuid) if column.is_valid(row) => {
            let text = column.as_string::<i32>().value(row);
            let u = parse_uuid(text).map_err(|e| internal(e.to_string()))?;
            encoder.field(&Some(Uuid(u)))
        }
        Some(SqlType::Jsonb) if column.is_valid(row) => encoder.field(&Some(Jsonb(
            column.as_string::<i32>().value(row).to_owned(),
        ))),
        Some(SqlType::Char(width))
            if column.is_valid(row)
                && let Some(text) = column.as_string_opt::<i32>() =>
        {
            let width = usize::try_from(width).unwrap_or(usize::MAX);
            encoder.field(&Some(Padded((text.value(row), width))))
        }
        Some(SqlType::Hstore) if column.is_valid(row) => {
            let h = Hstore::parse(column.as_string::<i32>().value(row))
                .map_err(|e| internal(e.to_string()))?;
            encoder.field(&Some(HstoreField(h)))
        }
        _ => encode(encoder, column, formatter, row),
    }
}

/// Encodes every row of `batches` against `schema` (the fields [`fields`] gave).
pub fn rows(batches: &[RecordBatch], schema: Arc<Vec<FieldInfo>>) -> PgWireResult<Vec<DataRow>> {
    let mut out = Vec::with_capacity(batches.iter().map(RecordBatch::num_rows).sum());
    let mut encoder = DataRowEncoder::new(Arc::clone(&schema));
    each_row(batches, &mut encoder, |e| out.push(e.take_row()))?;
    Ok(out)
}

/// The binary COPY format's header: signature, flags, header extension length.
const BINARY_HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";

/// The CopyData of a COPY … TO STDOUT of `batches` (columns as `schema` has them), in
/// `format`: one per row, after the header line (CSV) or header (binary). The binary
/// trailer is the caller's.
pub fn copy_rows(
    schema: &Schema,
    batches: &[RecordBatch],
    format: &CopyOutFormat,
) -> PgWireResult<Vec<CopyData>> {
    let fields = Arc::new(fields(schema, &Format::UnifiedText));
    let delimiter = char::from(format.delimiter).to_string();
    let mut out = Vec::new();
    let mut encoder = match format.encoding {
        CopyEncoding::Binary => CopyEncoder::new_binary(fields),
        CopyEncoding::Text => CopyEncoder::new_text(
            fields,
            CopyTextOptions {
                delimiter: delimiter.into(),
                null_string: format.null.as_str().into(),
            },
        ),
        CopyEncoding::Csv => {
            let dialect = copy_csv::Dialect {
                delimiter: format.delimiter,
                quote: format.quote,
                escape: format.escape,
            };
            let mut csv = copy_csv::Encoder::new(
                fields,
                dialect,
                format.null.clone(),
                format.force_quote.clone(),
            );
            if format.header {
                out.push(csv.header(schema.fields().iter().map(|f| f.name().as_str())));
            }
            each_row(batches, &mut csv, |e| out.push(e.take_copy()))?;
            return Ok(out);
        }
    };
    each_row(batches, &mut encoder, |e| out.push(e.take_copy()))?;
    if out.is_empty() && format.encoding == CopyEncoding::Binary {
        // The encoder writes the header with the first row; with none, it is alone.
        out.push(CopyData::new(bytes::Bytes::from_static(BINARY_HEADER)));
    }
    Ok(out)
}

/// The bytes a COPY … TO STDOUT writes, as one stream (what a client saves to a file):
/// [`copy_rows`] joined, with the binary trailer.
pub fn copy_bytes(
    schema: &Schema,
    batches: &[RecordBatch],
    format: &CopyOutFormat,
) -> PgWireResult<Vec<u8>> {
    let mut out: Vec<u8> = copy_rows(schema, batches, format)?
        .into_iter()
        .flat_map(|d| d.data.to_vec())
        .collect();
    if format.encoding == CopyEncoding::Binary {
        out.extend_from_slice(&CopyEncoder::finish_copy_binary().data);
    }
    Ok(out)
}

fn encode<E: FieldEncoder>(
    e: &mut E,
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
            e.field(&v)
        }};
    }
    // A column of type NULL (what a function of no result gives) marks no nulls.
    if column.is_null(row) || *column.data_type() == DataType::Null {
        return e.field(&None::<i32>);
    }
    match column.data_type() {
        DataType::Boolean => e.field(&Some(column.as_boolean().value(row))),
        DataType::Int8 => primitive!(Int8Type, i16),
        DataType::Int16 => primitive!(Int16Type, i16),
        DataType::UInt8 => primitive!(UInt8Type, i16),
        DataType::Int32 => primitive!(Int32Type, i32),
        DataType::UInt16 => primitive!(UInt16Type, i32),
        DataType::Int64 => primitive!(Int64Type, i64),
        DataType::UInt32 => e.field(&Some(column.as_primitive::<UInt32Type>().value(row))),
        DataType::UInt64 => primitive!(UInt64Type, i64),
        DataType::Float32 => e.field(&Some(Float4(
            column.as_primitive::<Float32Type>().value(row),
        ))),
        DataType::Float64 => e.field(&Some(Float8(
            column.as_primitive::<Float64Type>().value(row),
        ))),
        DataType::Decimal128(_, scale) => {
            let scale = u32::try_from(*scale).map_err(|_| internal("negative scale".into()))?;
            let mantissa = column.as_primitive::<Decimal128Type>().value(row);
            e.field(&Some(Numeric { mantissa, scale }))
        }
        DataType::Date32 => {
            let days = column.as_primitive::<Date32Type>().value(row);
            let date = NaiveDate::from_num_days_from_ce_opt(days + 719_163)
                .ok_or_else(|| internal(format!("date {days} out of range")))?;
            e.field(&Some(date))
        }
        DataType::Timestamp(unit, tz) => {
            // Each unit as it is: in nanoseconds, years before 1677 would overflow.
            let at = match unit {
                TimeUnit::Second => DateTime::from_timestamp(
                    column.as_primitive::<TimestampSecondType>().value(row),
                    0,
                ),
                TimeUnit::Millisecond => DateTime::from_timestamp_millis(
                    column.as_primitive::<TimestampMillisecondType>().value(row),
                ),
                TimeUnit::Microsecond => DateTime::from_timestamp_micros(
                    column.as_primitive::<TimestampMicrosecondType>().value(row),
                ),
                TimeUnit::Nanosecond => Some(DateTime::from_timestamp_nanos(
                    column.as_primitive::<TimestampNanosecondType>().value(row),
                )),
            }
            .ok_or_else(|| internal("timestamp out of range".into()))?;
            e.field(&Some(Timestamp {
                at: at.naive_utc(),
                zone: tz.is_some(),
            }))
        }
        DataType::Time32(unit) | DataType::Time64(unit) => {
            let micros = match unit {
                TimeUnit::Second => {
                    i64::from(column.as_primitive::<Time32SecondType>().value(row)) * 1_000_000
                }
                TimeUnit::Millisecond => {
                    i64::from(column.as_primitive::<Time32MillisecondType>().value(row)) * 1_000
                }
                TimeUnit::Microsecond => column.as_primitive::<Time64MicrosecondType>().value(row),
                TimeUnit::Nanosecond => {
                    column.as_primitive::<Time64NanosecondType>().value(row) / 1_000
                }
            };
            e.field(&Some(TimeField(micros)))
        }
        DataType::Utf8 => e.field(&Some(column.as_string::<i32>().value(row))),
        DataType::LargeUtf8 => e.field(&Some(column.as_string::<i64>().value(row))),
        DataType::Utf8View => e.field(&Some(column.as_string_view().value(row))),
        DataType::Binary => e.field(&Some(column.as_binary::<i32>().value(row))),
        DataType::LargeBinary => e.field(&Some(column.as_binary::<i64>().value(row))),
        DataType::BinaryView => e.field(&Some(column.as_binary_view().value(row))),
        DataType::Interval(IntervalUnit::MonthDayNano) => {
            e.field(&Some(IntervalField(interval_at(column, row))))
        }
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..)
            if element_type(&pg_type(column.data_type())).is_some() =>
        {
            let item = innermost_item(column.data_type());
            let mut array = ArrayOut {
                element: item.map_or(Type::TEXT, pg_type_of),
                dims: Vec::new(),
                text: Vec::new(),
                binary: Vec::new(),
            };
            let kind = item.and_then(text_type);
            add_dimension(&mut array, kind, &list_value(column, row), 0)?;
            if array.text.is_empty() {
                array.dims.clear();
            }
            e.field(&Some(array))
        }
        DataType::Struct(_) => {
            let fields = column.as_struct();
            let mut record = RecordOut {
                types: Vec::with_capacity(fields.num_columns()),
                text: Vec::with_capacity(fields.num_columns()),
                binary: Vec::with_capacity(fields.num_columns()),
            };
            let options = FormatOptions::default().with_null("");
            for field in fields.columns() {
                let ty = pg_type(field.data_type());
                let formatter = ArrayFormatter::try_new(field.as_ref(), &options)
                    .map_err(|e| internal(e.to_string()))?;
                let mut capture = Capture {
                    ty: ty.clone(),
                    text: &mut record.text,
                    binary: &mut record.binary,
                };
                encode(&mut capture, field, &formatter, row)?;
                record.types.push(ty);
            }
            e.field(&Some(record))
        }
        _ => e.field(&Some(text.value(row).to_string())),
    }
}

/// The field of the elements of a list type, through its nested lists: its metadata
/// tells a type Arrow holds as text.
fn innermost_item(ty: &DataType) -> Option<&Field> {
    match ty {
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            innermost_item(f.data_type()).or(Some(f.as_ref()))
        }
        _ => None,
    }
}

/// The elements of row `row` of a list column.
fn list_value(column: &ArrayRef, row: usize) -> ArrayRef {
    match column.data_type() {
        DataType::LargeList(_) => column.as_list::<i64>().value(row),
        DataType::FixedSizeList(..) => column.as_fixed_size_list().value(row),
        _ => column.as_list::<i32>().value(row),
    }
}

/// Adds `values`, the items of one list at nesting `depth`, to `array`: their count as
/// that dimension (equal for every list at one depth: PostgreSQL's arrays are
/// rectangular), then each element encoded in both formats, or each sub-list in turn.
fn add_dimension(
    array: &mut ArrayOut,
    kind: Option<SqlType>,
    values: &ArrayRef,
    depth: usize,
) -> PgWireResult<()> {
    match array.dims.get(depth) {
        Some(&n) if n != values.len() => {
            return Err(internal(
                "an array whose sub-arrays differ in length has no PostgreSQL form".into(),
            ));
        }
        Some(_) => {}
        None => array.dims.push(values.len()),
    }
    if matches!(
        values.data_type(),
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..)
    ) {
        for i in 0..values.len() {
            if values.is_null(i) {
                return Err(internal("a NULL sub-array has no PostgreSQL form".into()));
            }
            add_dimension(array, kind, &list_value(values, i), depth + 1)?;
        }
        return Ok(());
    }
    let options = FormatOptions::default().with_null("");
    let formatter =
        ArrayFormatter::try_new(values.as_ref(), &options).map_err(|e| internal(e.to_string()))?;
    let mut capture = Capture {
        ty: array.element.clone(),
        text: &mut array.text,
        binary: &mut array.binary,
    };
    for i in 0..values.len() {
        encode_as(&mut capture, kind, values, &formatter, i)?;
    }
    Ok(())
}

/// Takes an array's elements (or a row value's fields) one after the other, as a row's
/// encoder takes fields, keeping each in both formats.
struct Capture<'a> {
    ty: Type,
    text: &'a mut Vec<Option<bytes::BytesMut>>,
    binary: &'a mut Vec<Option<bytes::BytesMut>>,
}

impl FieldEncoder for Capture<'_> {
    fn field<T: ToSql + ToSqlText + Sized>(&mut self, value: &T) -> PgWireResult<()> {
        let failed = |e: Box<dyn std::error::Error + Sync + Send>| internal(e.to_string());
        let mut binary = bytes::BytesMut::new();
        let is_null = value.to_sql(&self.ty, &mut binary).map_err(failed)?;
        let mut text = bytes::BytesMut::new();
        value
            .to_sql_text(&self.ty, &mut text, &Default::default())
            .map_err(failed)?;
        let null = matches!(is_null, postgres_types::IsNull::Yes);
        self.binary.push((!null).then_some(binary));
        self.text.push((!null).then_some(text));
        Ok(())
    }
}
