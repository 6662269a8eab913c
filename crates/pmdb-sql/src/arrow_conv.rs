//! Between stored rows and Arrow: each SQL type's Arrow type, the builder that fills
//! Arrow arrays straight from row bytes (no `Value` in between), and the reader that
//! turns an Arrow row back into values for a write.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, BinaryBuilder, BooleanBuilder, Date32Builder,
    Decimal128Builder, Float32Builder, Float64Builder, Int16Builder, Int32Builder, Int64Builder,
    IntervalMonthDayNanoArray, IntervalMonthDayNanoBuilder, RecordBatch, RecordBatchOptions,
    StringArray, StringBuilder, Time64MicrosecondArray, Time64MicrosecondBuilder,
    TimestampMicrosecondBuilder,
};
use datafusion::arrow::compute::{CastOptions, cast_with_options};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Field as ArrowField, Float32Type, Float64Type, Int16Type,
    Int32Type, Int64Type, IntervalMonthDayNano, IntervalMonthDayNanoType, IntervalUnit, Schema,
    SchemaRef, Time64MicrosecondType, TimeUnit, TimestampMicrosecondType,
};
use datafusion::arrow::error::ArrowError;

use crate::error::CodecError;
use crate::error::{SqlError, state};
use crate::rowcode::{Field, walk_row_from};
use crate::schema::{ColumnDef, TableDef};
use crate::text_forms::{parse_bytea, parse_uuid, uuid_text};
use crate::types::{Interval, SqlType, Value};

/// Name of the extra column a keyed scan adds: the row's stored key.
pub const KEY_COLUMN: &str = "__pmdb_key";

/// The time zone of TIMESTAMPTZ's Arrow type (DataFusion's own `now()` has it too).
pub const UTC: &str = "+00:00";

/// Whether the time zone `name` (as `SET TIME ZONE` or `set_config` give it) is UTC,
/// the one pmdb shows TIMESTAMPTZ values in.
pub fn names_utc(name: &str) -> bool {
    let name = name.trim().trim_matches('\'').to_ascii_lowercase();
    let name = name.strip_prefix("etc/").unwrap_or(&name);
    matches!(
        name,
        "utc"
            | "gmt"
            | "z"
            | "zulu"
            | "universal"
            | "uct"
            | "+00"
            | "+00:00"
            | "00:00"
            | "0"
            | "local"
            | "default"
    )
}

/// Field metadata naming the PostgreSQL type of a column whose Arrow type does not say
/// it (a uuid is Arrow text): the server describes the column by it.
const PG_TYPE: &str = "pmdb.pg_type";

pub fn arrow_type(ty: SqlType) -> DataType {
    match ty {
        SqlType::SmallInt => DataType::Int16,
        SqlType::Int => DataType::Int32,
        SqlType::BigInt => DataType::Int64,
        SqlType::Decimal {
            precision, scale, ..
        } => DataType::Decimal128(precision, scale as i8),
        SqlType::Real => DataType::Float32,
        SqlType::Double => DataType::Float64,
        SqlType::Char(_) | SqlType::Varchar(_) | SqlType::Text | SqlType::Enum(_) => DataType::Utf8,
        SqlType::Date => DataType::Date32,
        SqlType::Time => DataType::Time64(TimeUnit::Microsecond),
        SqlType::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
        SqlType::TimestampTz => DataType::Timestamp(TimeUnit::Microsecond, Some(UTC.into())),
        SqlType::Boolean => DataType::Boolean,
        SqlType::Bytea => DataType::Binary,
        SqlType::Uuid | SqlType::Json | SqlType::Jsonb | SqlType::Hstore => DataType::Utf8,
        SqlType::Interval => DataType::Interval(IntervalUnit::MonthDayNano),
    }
}

/// The Arrow field of a column `name` of type `ty`: nullable (see [`arrow_schema`]),
/// marked with its PostgreSQL type where Arrow's does not tell it.
pub fn arrow_field(name: &str, ty: SqlType) -> ArrowField {
    let field = ArrowField::new(name, arrow_type(ty), true);
    match ty {
        SqlType::Uuid | SqlType::Json | SqlType::Jsonb | SqlType::Hstore => {
            let name = ty.to_string().to_lowercase();
            field.with_metadata([(PG_TYPE.to_owned(), name)].into())
        }
        SqlType::Char(n) => {
            field.with_metadata([(PG_TYPE.to_owned(), format!("bpchar({n})"))].into())
        }
        SqlType::Varchar(n) => {
            field.with_metadata([(PG_TYPE.to_owned(), format!("varchar({n})"))].into())
        }
        SqlType::Enum(id) => field.with_metadata(enum_metadata(id)),
        _ => field,
    }
}

/// The metadata of a field holding values of enum type `id` (as their labels' text).
pub fn enum_metadata(id: u64) -> std::collections::HashMap<String, String> {
    [(PG_TYPE.to_owned(), format!("enum({id})"))].into()
}

/// Field metadata of a parameter read as a value of a domain: the domain's id. A client
/// is told the parameter is of the domain (PostgreSQL's ParameterDescription); a result
/// column has the base type's field, as PostgreSQL's RowDescription names the base type.
const DOMAIN: &str = "pmdb.domain";

/// `field`, a parameter's, marked as read as a value of domain `id`.
pub fn with_domain(field: &ArrowField, id: u64) -> ArrowField {
    let mut metadata = field.metadata().clone();
    metadata.insert(DOMAIN.to_owned(), id.to_string());
    field.clone().with_metadata(metadata)
}

/// The domain a parameter's field says it is read as.
pub fn domain_of(field: &ArrowField) -> Option<u64> {
    field.metadata().get(DOMAIN)?.parse().ok()
}

/// `array` cast to the Arrow type of column `col`; a value that does not fit (overflow,
/// lost precision) is an error naming the column, never a silent NULL.
pub fn cast_to_column(array: &ArrayRef, col: &ColumnDef) -> Result<ArrayRef, SqlError> {
    let strict = CastOptions {
        safe: false,
        ..Default::default()
    };
    let to = arrow_type(col.ty);
    if let Some(text) = text_input(array, col.ty) {
        return text;
    }
    if matches!(col.ty, SqlType::Char(_)) && array.data_type().is_string() {
        let text = cast_with_options(array, &DataType::Utf8, &strict)
            .map_err(|e| SqlError::Query(e.to_string()))?;
        let strings = text.as_string::<i32>();
        if strings.iter().flatten().all(|s| !s.ends_with(' ')) {
            return Ok(text);
        }
        return Ok(Arc::new(
            strings
                .iter()
                .map(|s| s.map(without_trailing_blanks))
                .collect::<StringArray>(),
        ));
    }
    if let Some(decimals) = crate::float_numeric::as_decimals(array, &to) {
        return decimals.map_err(|e| {
            let message = format!("column {:?} ({}): {e}", col.name, col.ty);
            e.with_message(message)
        });
    }
    crate::numeric_places::check_strings(array, &to).map_err(|e| {
        let message = format!("column {:?}: {}", col.name, e.message());
        e.with_message(message)
    })?;
    let array = &crate::integer_casts::rounded_for(array, &to)?;
    cast_with_options(array, &to, &strict).map_err(|e| {
        // A number that does not fit a numeric column is out of range, as PostgreSQL
        // says; anything else is data of the wrong form.
        let sqlstate = if array.data_type().is_numeric() && to.is_numeric() {
            state::NUMERIC_OUT_OF_RANGE
        } else {
            state::DATA_EXCEPTION
        };
        SqlError::user(sqlstate, format!("column {:?} ({}): {e}", col.name, col.ty))
    })
}

/// Whether `f` holds uuids (as their text).
pub fn is_uuid(f: &ArrowField) -> bool {
    text_type(f) == Some(SqlType::Uuid)
}

/// The SQL type of the values `f` holds as text when it is not plain text (uuid, json,
/// jsonb, CHAR(n), VARCHAR(n), an enum type), as its metadata names it. A field that is no longer
/// text (a cast keeps its input's metadata) has none.
pub fn text_type(f: &ArrowField) -> Option<SqlType> {
    if f.data_type() != &DataType::Utf8 {
        return None;
    }
    match f.metadata().get(PG_TYPE)?.as_str() {
        "uuid" => Some(SqlType::Uuid),
        "json" => Some(SqlType::Json),
        "jsonb" => Some(SqlType::Jsonb),
        "hstore" => Some(SqlType::Hstore),
        other => {
            let (kind, rest) = other.split_once('(')?;
            let n: u64 = rest.strip_suffix(')')?.parse().ok()?;
            match kind {
                "bpchar" => Some(SqlType::Char(u32::try_from(n).ok()?)),
                "varchar" => Some(SqlType::Varchar(u32::try_from(n).ok()?)),
                "enum" => Some(SqlType::Enum(n)),
                _ => None,
            }
        }
    }
}

/// `batch` with the values of its CHAR(n) columns blank-padded to n characters, as
/// PostgreSQL shows them (they are kept without trailing blanks, which CHAR's
/// comparisons ignore).
pub fn padded_chars(batch: &RecordBatch) -> RecordBatch {
    let schema = batch.schema();
    let widths: Vec<Option<u32>> = schema
        .fields()
        .iter()
        .map(|f| match text_type(f) {
            Some(SqlType::Char(n)) if f.data_type() == &DataType::Utf8 => Some(n),
            _ => None,
        })
        .collect();
    if widths.iter().all(Option::is_none) {
        return batch.clone();
    }
    let columns = batch
        .columns()
        .iter()
        .zip(&widths)
        .map(|(c, w)| match w {
            Some(n) => Arc::new(
                c.as_string::<i32>()
                    .iter()
                    .map(|v| v.map(|s| pad(s, *n as usize)))
                    .collect::<StringArray>(),
            ) as ArrayRef,
            None => Arc::clone(c),
        })
        .collect();
    RecordBatch::try_new(schema, columns).unwrap_or_else(|_| batch.clone())
}

fn pad(s: &str, n: usize) -> String {
    let have = s.chars().count();
    let mut out = String::with_capacity(s.len() + n.saturating_sub(have));
    out.push_str(s);
    out.extend(std::iter::repeat_n(' ', n.saturating_sub(have)));
    out
}

/// A CHAR(n) value as it is kept: without trailing blanks.
pub fn without_trailing_blanks(s: &str) -> &str {
    s.trim_end_matches(' ')
}

/// Text read as a BYTEA, UUID, JSON, JSONB, HSTORE, INTERVAL or TIME the way PostgreSQL reads
/// it (Arrow's cast would take a string's bytes as they are, or read it by Arrow's
/// rules): `None` when `array` is not text or `ty` not one of them.
pub(crate) fn text_input(array: &ArrayRef, ty: SqlType) -> Option<Result<ArrayRef, SqlError>> {
    let strings = array.as_string_opt::<i32>()?;
    Some(match ty {
        SqlType::Bytea => strings
            .iter()
            .map(|s| s.map(parse_bytea).transpose())
            .collect::<Result<BinaryArray, _>>()
            .map(|a| Arc::new(a) as ArrayRef),
        SqlType::Uuid => strings
            .iter()
            .map(|s| s.map(|s| parse_uuid(s).map(uuid_text)).transpose())
            .collect::<Result<StringArray, _>>()
            .map(|a| Arc::new(a) as ArrayRef),
        SqlType::Json | SqlType::Jsonb => strings
            .iter()
            .map(|s| {
                s.map(|s| crate::json::input(s, ty == SqlType::Jsonb))
                    .transpose()
            })
            .collect::<Result<StringArray, _>>()
            .map(|a| Arc::new(a) as ArrayRef),
        SqlType::Hstore => strings
            .iter()
            .map(|s| {
                s.map(|s| crate::hstore::Hstore::parse(s).map(|h| h.to_text()))
                    .transpose()
            })
            .collect::<Result<StringArray, _>>()
            .map(|a| Arc::new(a) as ArrayRef),
        SqlType::Interval => strings
            .iter()
            .map(|s| s.map(interval_input).transpose())
            .collect::<Result<IntervalMonthDayNanoArray, _>>()
            .map(|a| Arc::new(a) as ArrayRef),
        SqlType::Time => strings
            .iter()
            .map(|s| s.map(crate::time_of_day::parse_time).transpose())
            .collect::<Result<Time64MicrosecondArray, _>>()
            .map(|a| Arc::new(a) as ArrayRef),
        _ => return None,
    })
}

/// The text `s` read as PostgreSQL reads interval input, as Arrow holds it.
pub fn interval_input(s: &str) -> Result<IntervalMonthDayNano, SqlError> {
    let v = crate::interval::parse(s)?;
    let nanos = v.nanos().ok_or_else(|| {
        SqlError::user(
            state::INTERVAL_FIELD_OVERFLOW,
            format!("interval out of range: \"{s}\""),
        )
    })?;
    Ok(IntervalMonthDayNano::new(v.months, v.days, nanos))
}

/// The Arrow schema of a table's rows, with the stored key last as column `key` if
/// given. Every column is nullable to Arrow: pmdb checks NOT NULL itself when it
/// writes, with PostgreSQL's error, where Arrow would fail the batch with its own.
pub fn arrow_schema(def: &TableDef, key: Option<&str>) -> SchemaRef {
    let mut fields: Vec<ArrowField> = def
        .columns
        .iter()
        .map(|c| arrow_field(&c.name, c.ty))
        .collect();
    if let Some(key) = key {
        fields.push(ArrowField::new(key, DataType::Binary, false));
    }
    Arc::new(Schema::new(fields))
}

enum Builder {
    Boolean(BooleanBuilder),
    SmallInt(Int16Builder),
    Int(Int32Builder),
    Date(Date32Builder),
    BigInt(Int64Builder),
    Timestamp(TimestampMicrosecondBuilder),
    Time(Time64MicrosecondBuilder),
    Decimal(Decimal128Builder),
    Real(Float32Builder),
    Double(Float64Builder),
    Str(StringBuilder),
    Bytes(BinaryBuilder),
    Interval(IntervalMonthDayNanoBuilder),
}

impl Builder {
    fn new(ty: SqlType, capacity: usize) -> Builder {
        match ty {
            SqlType::Boolean => Builder::Boolean(BooleanBuilder::with_capacity(capacity)),
            SqlType::SmallInt => Builder::SmallInt(Int16Builder::with_capacity(capacity)),
            SqlType::Int => Builder::Int(Int32Builder::with_capacity(capacity)),
            SqlType::Date => Builder::Date(Date32Builder::with_capacity(capacity)),
            SqlType::BigInt => Builder::BigInt(Int64Builder::with_capacity(capacity)),
            SqlType::Timestamp => {
                Builder::Timestamp(TimestampMicrosecondBuilder::with_capacity(capacity))
            }
            SqlType::Time => Builder::Time(Time64MicrosecondBuilder::with_capacity(capacity)),
            SqlType::TimestampTz => Builder::Timestamp(
                TimestampMicrosecondBuilder::with_capacity(capacity).with_timezone(UTC),
            ),
            SqlType::Bytea => Builder::Bytes(BinaryBuilder::with_capacity(capacity, capacity * 16)),
            SqlType::Decimal {
                precision, scale, ..
            } => Builder::Decimal(
                Decimal128Builder::with_capacity(capacity)
                    .with_precision_and_scale(precision, scale as i8)
                    .expect("a validated definition's precision and scale"),
            ),
            SqlType::Real => Builder::Real(Float32Builder::with_capacity(capacity)),
            SqlType::Double => Builder::Double(Float64Builder::with_capacity(capacity)),
            SqlType::Char(_)
            | SqlType::Varchar(_)
            | SqlType::Text
            | SqlType::Uuid
            | SqlType::Json
            | SqlType::Jsonb
            | SqlType::Hstore
            | SqlType::Enum(_) => {
                Builder::Str(StringBuilder::with_capacity(capacity, capacity * 16))
            }
            SqlType::Interval => {
                Builder::Interval(IntervalMonthDayNanoBuilder::with_capacity(capacity))
            }
        }
    }

    fn append(&mut self, f: Field<'_>) {
        match (self, f) {
            (Builder::Boolean(b), Field::Boolean(v)) => b.append_value(v),
            (Builder::SmallInt(b), Field::SmallInt(v)) => b.append_value(v),
            (Builder::Int(b), Field::Int(v)) => b.append_value(v),
            (Builder::Date(b), Field::Int(v)) => b.append_value(v),
            (Builder::BigInt(b), Field::BigInt(v)) => b.append_value(v),
            (Builder::Timestamp(b), Field::BigInt(v)) => b.append_value(v),
            (Builder::Time(b), Field::BigInt(v)) => b.append_value(v),
            (Builder::Decimal(b), Field::Decimal(v)) => b.append_value(v),
            (Builder::Real(b), Field::Real(v)) => b.append_value(v),
            (Builder::Double(b), Field::Double(v)) => b.append_value(v),
            (Builder::Str(b), Field::Str(v)) => b.append_value(v),
            (Builder::Str(b), Field::Uuid(v)) => b.append_value(uuid_text(v)),
            (Builder::Bytes(b), Field::Bytes(v)) => b.append_value(v),
            (Builder::Interval(b), Field::Interval(v)) => append_interval(b, v),
            (b, _) => b.append_null(),
        }
    }

    /// Appends `v`, a value of the builder's type (any other is NULL).
    fn append_value(&mut self, v: &Value) {
        match (self, v) {
            (Builder::Boolean(b), Value::Boolean(x)) => b.append_value(*x),
            (Builder::SmallInt(b), Value::SmallInt(x)) => b.append_value(*x),
            (Builder::Int(b), Value::Int(x)) => b.append_value(*x),
            (Builder::Date(b), Value::Date(x)) => b.append_value(*x),
            (Builder::BigInt(b), Value::BigInt(x)) => b.append_value(*x),
            (Builder::Timestamp(b), Value::Timestamp(x)) => b.append_value(*x),
            (Builder::Time(b), Value::Time(x)) => b.append_value(*x),
            (Builder::Decimal(b), Value::Decimal(x)) => b.append_value(*x),
            (Builder::Real(b), Value::Real(x)) => b.append_value(*x),
            (Builder::Double(b), Value::Double(x)) => b.append_value(*x),
            (Builder::Str(b), Value::Str(x)) => b.append_value(x),
            (Builder::Str(b), Value::Uuid(x)) => b.append_value(uuid_text(*x)),
            (Builder::Bytes(b), Value::Bytes(x)) => b.append_value(x),
            (Builder::Interval(b), Value::Interval(x)) => append_interval(b, *x),
            (b, _) => b.append_null(),
        }
    }

    fn append_null(&mut self) {
        match self {
            Builder::Boolean(b) => b.append_null(),
            Builder::SmallInt(b) => b.append_null(),
            Builder::Int(b) => b.append_null(),
            Builder::Date(b) => b.append_null(),
            Builder::BigInt(b) => b.append_null(),
            Builder::Timestamp(b) => b.append_null(),
            Builder::Time(b) => b.append_null(),
            Builder::Decimal(b) => b.append_null(),
            Builder::Real(b) => b.append_null(),
            Builder::Double(b) => b.append_null(),
            Builder::Str(b) => b.append_null(),
            Builder::Bytes(b) => b.append_null(),
            Builder::Interval(b) => b.append_null(),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Builder::Boolean(b) => Arc::new(b.finish()),
            Builder::SmallInt(b) => Arc::new(b.finish()),
            Builder::Int(b) => Arc::new(b.finish()),
            Builder::Date(b) => Arc::new(b.finish()),
            Builder::BigInt(b) => Arc::new(b.finish()),
            Builder::Timestamp(b) => Arc::new(b.finish()),
            Builder::Time(b) => Arc::new(b.finish()),
            Builder::Decimal(b) => Arc::new(b.finish()),
            Builder::Real(b) => Arc::new(b.finish()),
            Builder::Double(b) => Arc::new(b.finish()),
            Builder::Str(b) => Arc::new(b.finish()),
            Builder::Bytes(b) => Arc::new(b.finish()),
            Builder::Interval(b) => Arc::new(b.finish()),
        }
    }
}

/// Fills the arrays of one record batch from stored rows: only the projected columns
/// are built, each straight from the row's bytes.
pub struct BatchBuilder {
    types: Arc<[SqlType]>,
    /// Columns every stored row holds; the others were added later, and a row that
    /// lacks one has its value in `missing`.
    required: usize,
    missing: Arc<[Value]>,
    /// By table column: its builder when projected.
    slots: Vec<Option<Builder>>,
    /// Output order: a table column, or `None` for the key column.
    order: Vec<Option<usize>>,
    key: Option<BinaryBuilder>,
    schema: SchemaRef,
    rows: usize,
    capacity: usize,
}

impl BatchBuilder {
    /// `projection` holds positions in `table_schema` (whose last field is the key
    /// column when the table has `types.len() + 1` fields).
    pub fn new(
        types: Arc<[SqlType]>,
        table_schema: &SchemaRef,
        projection: &[usize],
        capacity: usize,
    ) -> BatchBuilder {
        let mut slots: Vec<Option<Builder>> = types.iter().map(|_| None).collect();
        let mut order = Vec::with_capacity(projection.len());
        let mut key = None;
        for &p in projection {
            if p == types.len() {
                key = Some(BinaryBuilder::with_capacity(capacity, capacity * 16));
                order.push(None);
            } else {
                slots[p] = Some(Builder::new(types[p], capacity));
                order.push(Some(p));
            }
        }
        let schema = Arc::new(
            table_schema
                .project(projection)
                .expect("projection in range"),
        );
        BatchBuilder {
            required: types.len(),
            missing: Arc::from(Vec::new()),
            types,
            slots,
            order,
            key,
            schema,
            rows: 0,
            capacity,
        }
    }

    /// Reads rows of a table whose rows hold at least their first `required` columns,
    /// older rows reading those added since as their `missing` values.
    pub fn with_missing(mut self, required: usize, missing: Arc<[Value]>) -> BatchBuilder {
        self.required = required;
        self.missing = missing;
        self
    }

    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_full(&self) -> bool {
        self.rows >= self.capacity
    }

    /// Appends the stored row `value` under `key`.
    pub fn push(&mut self, key: &[u8], value: &[u8]) -> Result<(), CodecError> {
        if self.order.iter().any(Option::is_some) {
            let (slots, missing) = (&mut self.slots, &self.missing);
            walk_row_from(&self.types, self.required, value, |i, f| {
                if let Some(b) = &mut slots[i] {
                    match f {
                        Field::Absent => b.append(missing.get(i).map_or(Field::Null, Field::of)),
                        f => b.append(f),
                    }
                }
            })?;
        }
        if let Some(k) = &mut self.key {
            k.append_value(key);
        }
        self.rows += 1;
        Ok(())
    }

    /// The batch of the rows pushed since the last call.
    pub fn finish(&mut self) -> Result<RecordBatch, ArrowError> {
        let columns: Vec<ArrayRef> = self
            .order
            .iter()
            .map(|slot| match slot {
                Some(i) => self.slots[*i].as_mut().expect("projected").finish(),
                None => Arc::new(self.key.as_mut().expect("key projected").finish()),
            })
            .collect();
        let rows = std::mem::take(&mut self.rows);
        RecordBatch::try_new_with_options(
            Arc::clone(&self.schema),
            columns,
            &RecordBatchOptions::new().with_row_count(Some(rows)),
        )
    }
}

/// `columns` (one per column of the table `def`, in its order) cast to the Arrow
/// types of its columns.
pub fn cast_columns(def: &TableDef, columns: &[ArrayRef]) -> Result<Vec<ArrayRef>, SqlError> {
    if columns.len() != def.columns.len() {
        return Err(SqlError::user(
            state::DATA_EXCEPTION,
            format!(
                "table {:?} has {} columns; {} were given",
                def.name,
                def.columns.len(),
                columns.len()
            ),
        ));
    }
    columns
        .iter()
        .zip(&def.columns)
        .map(|(a, c)| cast_to_column(a, c))
        .collect()
}

/// One array per column of `rows`, each a row of values of `types`.
pub fn arrays_of(types: &[SqlType], rows: &[&[Value]]) -> Vec<ArrayRef> {
    types
        .iter()
        .enumerate()
        .map(|(c, &ty)| {
            let mut b = Builder::new(ty, rows.len());
            for row in rows {
                b.append_value(&row[c]);
            }
            b.finish()
        })
        .collect()
}

/// The values of row `row` of `columns`, whose arrays have the Arrow types of `types`.
pub fn row_values(columns: &[ArrayRef], types: &[SqlType], row: usize) -> Vec<Value> {
    columns
        .iter()
        .zip(types)
        .map(|(a, &ty)| value_at(a.as_ref(), ty, row))
        .collect()
}

fn value_at(a: &dyn Array, ty: SqlType, row: usize) -> Value {
    if a.is_null(row) {
        return Value::Null;
    }
    match ty {
        SqlType::Boolean => Value::Boolean(a.as_boolean().value(row)),
        SqlType::SmallInt => Value::SmallInt(a.as_primitive::<Int16Type>().value(row)),
        SqlType::Int => Value::Int(a.as_primitive::<Int32Type>().value(row)),
        SqlType::Date => Value::Date(a.as_primitive::<Date32Type>().value(row)),
        SqlType::BigInt => Value::BigInt(a.as_primitive::<Int64Type>().value(row)),
        SqlType::Timestamp | SqlType::TimestampTz => {
            Value::Timestamp(a.as_primitive::<TimestampMicrosecondType>().value(row))
        }
        SqlType::Time => Value::Time(a.as_primitive::<Time64MicrosecondType>().value(row)),
        SqlType::Bytea => Value::Bytes(a.as_binary::<i32>().value(row).to_vec()),
        // A text that is no uuid stays text, which the column's check refuses.
        SqlType::Uuid => {
            let s = a.as_string::<i32>().value(row);
            parse_uuid(s).map_or_else(|_| Value::Str(s.to_owned()), Value::Uuid)
        }
        SqlType::Decimal { .. } => Value::Decimal(a.as_primitive::<Decimal128Type>().value(row)),
        SqlType::Real => Value::Real(a.as_primitive::<Float32Type>().value(row)),
        SqlType::Double => Value::Double(a.as_primitive::<Float64Type>().value(row)),
        SqlType::Char(_)
        | SqlType::Varchar(_)
        | SqlType::Text
        | SqlType::Json
        | SqlType::Jsonb
        | SqlType::Hstore
        | SqlType::Enum(_) => Value::Str(a.as_string::<i32>().value(row).to_owned()),
        SqlType::Interval => Value::Interval(interval_at(a, row)),
    }
}

/// The interval at `row` of an Arrow month-day-nanosecond array.
pub fn interval_at(a: &dyn Array, row: usize) -> Interval {
    let v = a.as_primitive::<IntervalMonthDayNanoType>().value(row);
    Interval::from_nanos(v.months, v.days, v.nanoseconds)
}

/// Appends `v`; one whose time part does not fit Arrow's nanoseconds (over 292 years of
/// hours) is appended as NULL, which no stored value is, so a read never loses a value
/// silently: such an interval cannot be written either.
fn append_interval(b: &mut IntervalMonthDayNanoBuilder, v: Interval) {
    match v.nanos() {
        Some(nanos) => b.append_value(IntervalMonthDayNano::new(v.months, v.days, nanos)),
        None => b.append_null(),
    }
}
