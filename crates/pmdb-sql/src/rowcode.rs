//! The row codec: a table's row as stored in its subtable (the key holds the primary key;
//! the row holds every column). Compact: a null bitmap, then each non-null value in
//! column order, fixed-width numbers little-endian and strings length-prefixed. Byte
//! table: `docs/format.md`, "Row".

use crate::error::CodecError;
use crate::reader::Reader;
use crate::types::{Interval, SqlType, Value, fits_length, fits_precision};

/// Most columns a table may have (the row's column count is a u16).
pub const MAX_COLUMNS: usize = 1600;

/// Appends the encoding of the row `values` of columns `types` to `out`.
pub fn encode_row(
    types: &[SqlType],
    values: &[Value],
    out: &mut Vec<u8>,
) -> Result<(), CodecError> {
    if types.len() != values.len() || types.len() > MAX_COLUMNS {
        return Err(CodecError::Mismatch(format!(
            "a row of {} columns given {} values (at most {MAX_COLUMNS} columns)",
            types.len(),
            values.len()
        )));
    }
    out.extend_from_slice(&(types.len() as u16).to_le_bytes());
    let bitmap_at = out.len();
    out.resize(bitmap_at + types.len().div_ceil(8), 0);
    for (i, (ty, v)) in types.iter().zip(values).enumerate() {
        ty.check(v)?;
        match v {
            Value::Null => out[bitmap_at + i / 8] |= 1 << (i % 8),
            Value::Boolean(b) => out.push(u8::from(*b)),
            Value::SmallInt(x) => out.extend_from_slice(&x.to_le_bytes()),
            Value::Int(x) | Value::Date(x) => out.extend_from_slice(&x.to_le_bytes()),
            Value::BigInt(x) | Value::Timestamp(x) | Value::Time(x) => {
                out.extend_from_slice(&x.to_le_bytes())
            }
            Value::Decimal(x) => out.extend_from_slice(&x.to_le_bytes()),
            Value::Real(x) => out.extend_from_slice(&x.to_le_bytes()),
            Value::Double(x) => out.extend_from_slice(&x.to_le_bytes()),
            Value::Str(s) => {
                put_varint(out, s.len() as u64);
                out.extend_from_slice(s.as_bytes());
            }
            Value::Bytes(b) => {
                put_varint(out, b.len() as u64);
                out.extend_from_slice(b);
            }
            Value::Uuid(u) => out.extend_from_slice(&u.to_be_bytes()),
            Value::Interval(v) => {
                out.extend_from_slice(&v.months.to_le_bytes());
                out.extend_from_slice(&v.days.to_le_bytes());
                out.extend_from_slice(&v.micros.to_le_bytes());
            }
        }
    }
    Ok(())
}

/// The length of the encoding [`encode_row`] gives `values`, without making it.
pub fn encoded_len(values: &[Value]) -> usize {
    let fields: usize = values
        .iter()
        .map(|v| match v {
            Value::Null => 0,
            Value::Boolean(_) => 1,
            Value::SmallInt(_) => 2,
            Value::Int(_) | Value::Date(_) | Value::Real(_) => 4,
            Value::BigInt(_) | Value::Timestamp(_) | Value::Time(_) | Value::Double(_) => 8,
            Value::Decimal(_) | Value::Uuid(_) | Value::Interval(_) => 16,
            Value::Str(s) => varint_len(s.len() as u64) + s.len(),
            Value::Bytes(b) => varint_len(b.len() as u64) + b.len(),
        })
        .sum();
    2 + values.len().div_ceil(8) + fields
}

fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// One stored value, borrowed from the row's bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Field<'a> {
    Null,
    Boolean(bool),
    SmallInt(i16),
    /// INT and DATE.
    Int(i32),
    /// BIGINT, TIMESTAMP and TIMESTAMPTZ.
    BigInt(i64),
    Decimal(i128),
    Real(f32),
    Double(f64),
    Str(&'a str),
    Bytes(&'a [u8]),
    Uuid(u128),
    Interval(Interval),
    /// Not in the row: it was written before the column was added (see
    /// [`walk_row_from`]).
    Absent,
}

impl<'a> Field<'a> {
    /// `v` as a stored field.
    pub fn of(v: &'a Value) -> Field<'a> {
        match v {
            Value::Null => Field::Null,
            Value::Boolean(b) => Field::Boolean(*b),
            Value::SmallInt(x) => Field::SmallInt(*x),
            Value::Int(x) | Value::Date(x) => Field::Int(*x),
            Value::BigInt(x) | Value::Timestamp(x) | Value::Time(x) => Field::BigInt(*x),
            Value::Decimal(x) => Field::Decimal(*x),
            Value::Real(x) => Field::Real(*x),
            Value::Double(x) => Field::Double(*x),
            Value::Str(s) => Field::Str(s),
            Value::Bytes(b) => Field::Bytes(b),
            Value::Uuid(u) => Field::Uuid(*u),
            Value::Interval(v) => Field::Interval(*v),
        }
    }
}

/// Decodes a whole row of columns `types`; every byte must belong to it.
pub fn decode_row(types: &[SqlType], bytes: &[u8]) -> Result<Vec<Value>, CodecError> {
    decode_row_from(types, types.len(), &[], bytes)
}

/// Decodes a row of a table whose columns from `required` on were added after some of
/// its rows were written: such a row ends early, and each column it lacks takes its
/// `missing` value (NULL past the end of `missing`).
pub fn decode_row_from(
    types: &[SqlType],
    required: usize,
    missing: &[Value],
    bytes: &[u8],
) -> Result<Vec<Value>, CodecError> {
    let mut values = Vec::with_capacity(types.len());
    walk_row_from(types, required, bytes, |i, field| {
        values.push(match field {
            Field::Absent => missing.get(i).cloned().unwrap_or(Value::Null),
            Field::Null => Value::Null,
            Field::Boolean(b) => Value::Boolean(b),
            Field::SmallInt(x) => Value::SmallInt(x),
            Field::Int(x) if types[i] == SqlType::Date => Value::Date(x),
            Field::Int(x) => Value::Int(x),
            Field::BigInt(x) if matches!(types[i], SqlType::Timestamp | SqlType::TimestampTz) => {
                Value::Timestamp(x)
            }
            Field::BigInt(x) if types[i] == SqlType::Time => Value::Time(x),
            Field::BigInt(x) => Value::BigInt(x),
            Field::Decimal(x) => Value::Decimal(x),
            Field::Real(x) => Value::Real(x),
            Field::Double(x) => Value::Double(x),
            Field::Str(s) => Value::Str(s.to_owned()),
            Field::Bytes(b) => Value::Bytes(b.to_vec()),
            Field::Uuid(u) => Value::Uuid(u),
            Field::Interval(v) => Value::Interval(v),
        })
    })?;
    Ok(values)
}

/// Walks a whole row of columns `types`, giving `f` each column's position and value
/// in order, checked against its column; every byte must belong to the row. This is
/// the one reader of the row layout: [`decode_row`] and the scans that fill Arrow
/// arrays straight from storage both use it.
pub fn walk_row<'a>(
    types: &[SqlType],
    bytes: &'a [u8],
    f: impl FnMut(usize, Field<'a>),
) -> Result<(), CodecError> {
    walk_row_from(types, types.len(), bytes, f)
}

/// As [`walk_row`], for a row that may end after column `required` (a row written
/// before the columns after it were added): each column it lacks is given to `f` as
/// [`Field::Absent`].
pub fn walk_row_from<'a>(
    types: &[SqlType],
    required: usize,
    bytes: &'a [u8],
    mut f: impl FnMut(usize, Field<'a>),
) -> Result<(), CodecError> {
    let mut r = Reader::new("row", bytes);
    let count = u16::from_le_bytes(r.take()?) as usize;
    if count > types.len() || count < required.min(types.len()) {
        return Err(r.invalid(format!(
            "{count} columns where the table has {} ({required} in every row)",
            types.len()
        )));
    }
    let all = types;
    let types = &all[..count];
    let bitmap = r.slice(count.div_ceil(8))?;
    if !count.is_multiple_of(8) && bitmap[count / 8] >> (count % 8) != 0 {
        return Err(r.invalid("null bits set past the last column".into()));
    }
    for (i, ty) in types.iter().enumerate() {
        if bitmap[i / 8] & (1 << (i % 8)) != 0 {
            f(i, Field::Null);
            continue;
        }
        let v = match *ty {
            SqlType::Boolean => match r.byte()? {
                0 => Field::Boolean(false),
                1 => Field::Boolean(true),
                b => return Err(r.invalid(format!("boolean byte {b:#04x}"))),
            },
            SqlType::SmallInt => Field::SmallInt(i16::from_le_bytes(r.take()?)),
            SqlType::Int | SqlType::Date => Field::Int(i32::from_le_bytes(r.take()?)),
            SqlType::BigInt | SqlType::Timestamp | SqlType::TimestampTz => {
                Field::BigInt(i64::from_le_bytes(r.take()?))
            }
            SqlType::Time => {
                let v = i64::from_le_bytes(r.take()?);
                if !(0..=crate::time_of_day::MICROS_PER_DAY).contains(&v) {
                    return Err(r.invalid(format!("a time of {v} microseconds")));
                }
                Field::BigInt(v)
            }
            SqlType::Decimal { precision, .. } => {
                let v = i128::from_le_bytes(r.take()?);
                if !fits_precision(precision, v) {
                    return Err(r.invalid(format!("{v} does not fit {ty}")));
                }
                Field::Decimal(v)
            }
            SqlType::Real => Field::Real(f32::from_le_bytes(r.take()?)),
            SqlType::Double => Field::Double(f64::from_le_bytes(r.take()?)),
            SqlType::Bytea => Field::Bytes(length_prefixed(&mut r)?),
            SqlType::Uuid => Field::Uuid(u128::from_be_bytes(r.take()?)),
            SqlType::Interval => {
                let v = Interval {
                    months: i32::from_le_bytes(r.take()?),
                    days: i32::from_le_bytes(r.take()?),
                    micros: i64::from_le_bytes(r.take()?),
                };
                if v.nanos().is_none() {
                    return Err(r.invalid(format!("an interval of {} microseconds", v.micros)));
                }
                Field::Interval(v)
            }
            SqlType::Char(_)
            | SqlType::Varchar(_)
            | SqlType::Text
            | SqlType::Json
            | SqlType::Jsonb
            | SqlType::Hstore
            | SqlType::Enum(_) => {
                let s = std::str::from_utf8(length_prefixed(&mut r)?)
                    .map_err(|_| r.invalid("a string that is not UTF-8".into()))?;
                if !fits_length(*ty, s) {
                    return Err(r.invalid(format!("a string too long for {ty}")));
                }
                Field::Str(s)
            }
        };
        f(i, v);
    }
    r.finish()?;
    for i in count..all.len() {
        f(i, Field::Absent);
    }
    Ok(())
}

/// A varint length and that many bytes.
fn length_prefixed<'a>(r: &mut Reader<'a>) -> Result<&'a [u8], CodecError> {
    let len = varint(r)?;
    let len = usize::try_from(len)
        .ok()
        .filter(|&l| l <= r.left())
        .ok_or_else(|| r.invalid(format!("a value of {len} bytes")))?;
    r.slice(len)
}

fn varint(r: &mut Reader<'_>) -> Result<u64, CodecError> {
    let mut v = 0u64;
    for i in 0..10 {
        let b = r.byte()?;
        if i == 9 && b > 1 {
            break;
        }
        v |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Ok(v);
        }
    }
    Err(r.invalid("a length of more than 64 bits".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::tests::{any_typed_value, same};
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn rows_round_trip(cols in proptest::collection::vec(any_typed_value(), 0..20)) {
            let (types, values): (Vec<SqlType>, Vec<Value>) = cols.into_iter().unzip();
            let mut row = Vec::new();
            encode_row(&types, &values, &mut row).unwrap();
            prop_assert_eq!(encoded_len(&values), row.len());
            let back = decode_row(&types, &row).unwrap();
            prop_assert!(same(&back, &values), "{:?} decoded as {:?}", values, back);
        }

        #[test]
        fn varint_lengths_are_what_is_written(v in any::<u64>()) {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            prop_assert_eq!(varint_len(v), out.len());
        }

        /// Damaged and cut rows are errors, never panics; a cut row never decodes.
        #[test]
        fn damaged_rows_do_not_panic(
            cols in proptest::collection::vec(any_typed_value(), 1..8),
            flip in any::<usize>(),
            cut in any::<usize>(),
        ) {
            let (types, values): (Vec<SqlType>, Vec<Value>) = cols.into_iter().unzip();
            let mut row = Vec::new();
            encode_row(&types, &values, &mut row).unwrap();
            let mut bad = row.clone();
            let i = flip % bad.len();
            bad[i] ^= 0xa5;
            let _ = decode_row(&types, &bad);
            row.truncate(cut % row.len());
            prop_assert!(decode_row(&types, &row).is_err());
        }
    }

    #[test]
    fn nulls_take_one_bit_and_wrong_schemas_are_refused() {
        let types = [SqlType::Int, SqlType::Text, SqlType::Double];
        let mut row = Vec::new();
        encode_row(
            &types,
            &[Value::Null, Value::Str("ab".into()), Value::Null],
            &mut row,
        )
        .unwrap();
        assert_eq!(row, [3, 0, 0b101, 2, b'a', b'b']);
        assert!(decode_row(&types[..2], &row).is_err());
        assert!(decode_row(&[SqlType::Int, SqlType::Text, SqlType::BigInt], &row).is_ok());
        // A row written before a fourth column was added: that column is its missing
        // value; a row with fewer columns than every row has is damage.
        let four = [
            SqlType::Int,
            SqlType::Text,
            SqlType::Double,
            SqlType::BigInt,
        ];
        let missing = [Value::Null, Value::Null, Value::Null, Value::BigInt(7)];
        let old = decode_row_from(&four, 3, &missing, &row).unwrap();
        assert_eq!(old[3], Value::BigInt(7));
        assert!(decode_row_from(&four, 4, &missing, &row).is_err());
        assert!(decode_row(&four, &row).is_err());
        let mut spare_bit = row.clone();
        spare_bit[2] |= 0x80;
        assert!(decode_row(&types, &spare_bit).is_err());
        let huge = [1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f];
        assert!(decode_row(&[SqlType::Text], &huge).is_err());
        assert!(encode_row(&types, &[Value::Int(1)], &mut row).is_err());
        assert!(encode_row(&[SqlType::Int], &[Value::Str("x".into())], &mut row).is_err());
    }
}
