//! The codec of one column chunk: up to [`MAX_CHUNK_ROWS`] values of one column, laid
//! out as Arrow lays them out in memory (validity bits, fixed-width little-endian values
//! or 32-bit offsets then string bytes), behind a small header and a CRC. Decoding
//! checks every length, offset and the CRC before Arrow sees a byte. Byte table:
//! `docs/format.md`, "Part 4".

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, BooleanArray, Date32Array, Decimal128Array,
    Float32Array, Float64Array, Int16Array, Int32Array, Int64Array, IntervalMonthDayNanoArray,
    StringArray, Time64MicrosecondArray, TimestampMicrosecondArray,
};
use datafusion::arrow::buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use datafusion::arrow::datatypes::ArrowNativeType;

use crate::arrow_conv::UTC;
use crate::error::CodecError;
use crate::reader::Reader;
use crate::text_forms::is_canonical_uuid;
use crate::types::SqlType;

/// Rows a chunk holds at most; a scan hands out one chunk as one record batch.
pub const MAX_CHUNK_ROWS: usize = 8192;

const VERSION: u8 = 1;
const WHAT: &str = "column chunk";

/// How a column's values are laid out.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Layout {
    /// `width` bytes a value, little-endian.
    Fixed(usize),
    /// One bit a value.
    Bits,
    /// 32-bit offsets (one more than rows, the first 0), then the UTF-8 bytes.
    Utf8,
    /// As `Utf8`, for bytes of any value.
    Bytes,
}

impl Layout {
    fn of(ty: SqlType) -> Layout {
        match ty {
            SqlType::Boolean => Layout::Bits,
            SqlType::SmallInt => Layout::Fixed(2),
            SqlType::Int | SqlType::Date | SqlType::Real => Layout::Fixed(4),
            SqlType::BigInt
            | SqlType::Time
            | SqlType::Timestamp
            | SqlType::TimestampTz
            | SqlType::Double => Layout::Fixed(8),
            // An interval as Arrow's months (i32), days (i32) and nanoseconds (i64).
            SqlType::Decimal { .. } | SqlType::Interval => Layout::Fixed(16),
            // A uuid's Arrow form is its canonical text.
            SqlType::Char(_)
            | SqlType::Varchar(_)
            | SqlType::Text
            | SqlType::Uuid
            | SqlType::Json
            | SqlType::Jsonb
            | SqlType::Hstore
            | SqlType::Enum(_) => Layout::Utf8,
            SqlType::Bytea => Layout::Bytes,
        }
    }

    fn code(self) -> u8 {
        match self {
            Layout::Fixed(_) => 0,
            Layout::Bits => 1,
            Layout::Utf8 => 2,
            Layout::Bytes => 3,
        }
    }
}

fn bits_of(rows: usize, bit: impl Fn(usize) -> bool) -> Vec<u8> {
    let mut out = vec![0u8; rows.div_ceil(8)];
    for i in (0..rows).filter(|&i| bit(i)) {
        out[i / 8] |= 1 << (i % 8);
    }
    out
}

/// Appends the chunk of `array` (of column type `ty`'s Arrow type, at most
/// [`MAX_CHUNK_ROWS`] rows) to `out`.
pub fn encode_chunk(ty: SqlType, array: &dyn Array, out: &mut Vec<u8>) {
    let rows = array.len();
    assert!(
        rows <= MAX_CHUNK_ROWS,
        "a chunk holds at most {MAX_CHUNK_ROWS} rows"
    );
    let start = out.len();
    let layout = Layout::of(ty);
    out.extend_from_slice(&[VERSION, layout.code(), 0, 0]);
    out.extend_from_slice(&(rows as u32).to_le_bytes());
    out.extend_from_slice(&(array.null_count() as u32).to_le_bytes());
    let len_at = out.len();
    out.extend_from_slice(&[0; 4]);
    if array.null_count() > 0 {
        out.extend_from_slice(&bits_of(rows, |i| array.is_valid(i)));
    }
    let data_start = out.len();
    match layout {
        Layout::Fixed(width) => {
            let values = array.to_data();
            let buf = &values.buffers()[0];
            let from = values.offset() * width;
            out.extend_from_slice(&buf.as_slice()[from..from + rows * width]);
        }
        Layout::Bits => {
            let values = array.as_boolean();
            out.extend_from_slice(&bits_of(rows, |i| values.value(i)));
        }
        Layout::Utf8 | Layout::Bytes => {
            let (offsets, bytes) = match layout {
                Layout::Utf8 => {
                    let a = array.as_string::<i32>();
                    (a.value_offsets(), a.value_data())
                }
                _ => {
                    let a = array.as_binary::<i32>();
                    (a.value_offsets(), a.value_data())
                }
            };
            let base = offsets[0];
            for o in offsets {
                out.extend_from_slice(&((o - base) as u32).to_le_bytes());
            }
            out.extend_from_slice(&bytes[base as usize..offsets[rows] as usize]);
        }
    }
    let data_len = (out.len() - data_start) as u32;
    out[len_at..len_at + 4].copy_from_slice(&data_len.to_le_bytes());
    let crc = crc32fast::hash(&out[start..]);
    out.extend_from_slice(&crc.to_le_bytes());
}

/// Rows of the chunk in `bytes`, read from its header only (the CRC is not checked).
pub fn chunk_rows(bytes: &[u8]) -> Result<usize, CodecError> {
    let mut r = Reader::new(WHAT, bytes);
    r.slice(4)?;
    let rows = u32::from_le_bytes(r.take()?) as usize;
    if rows > MAX_CHUNK_ROWS {
        return Err(r.invalid(format!("{rows} rows, more than {MAX_CHUNK_ROWS}")));
    }
    Ok(rows)
}

/// The array of column type `ty` stored in `bytes`.
pub fn decode_chunk(ty: SqlType, bytes: &[u8]) -> Result<ArrayRef, CodecError> {
    let invalid = |reason: String| CodecError::Invalid { what: WHAT, reason };
    let Some(body_len) = bytes.len().checked_sub(4) else {
        return Err(CodecError::Truncated {
            what: WHAT,
            at: bytes.len(),
        });
    };
    let (body, crc) = bytes.split_at(body_len);
    if crc32fast::hash(body) != u32::from_le_bytes(crc.try_into().expect("4 bytes")) {
        return Err(invalid("checksum mismatch".into()));
    }
    let mut r = Reader::new(WHAT, body);
    let [version, code, _, _] = r.take()?;
    if version != VERSION {
        return Err(invalid(format!("unknown version {version}")));
    }
    let layout = Layout::of(ty);
    if code != layout.code() {
        return Err(invalid(format!("layout {code}, but the column is {ty}")));
    }
    let rows = chunk_rows(bytes)?;
    r.slice(4)?;
    let nulls = u32::from_le_bytes(r.take()?) as usize;
    let data_len = u32::from_le_bytes(r.take()?) as usize;
    if nulls > rows {
        return Err(invalid(format!("{nulls} nulls in {rows} rows")));
    }
    let validity = if nulls > 0 {
        let bits = NullBuffer::new(BooleanBuffer::new(
            Buffer::from(r.slice(rows.div_ceil(8))?),
            0,
            rows,
        ));
        if bits.null_count() != nulls {
            return Err(invalid(format!(
                "{} null bits, the header says {nulls}",
                bits.null_count()
            )));
        }
        Some(bits)
    } else {
        None
    };
    if r.left() != data_len {
        return Err(invalid(format!(
            "{} data bytes, the header says {data_len}",
            r.left()
        )));
    }
    let data = r.rest();
    let fixed = |width: usize| -> Result<Buffer, CodecError> {
        if data.len() != rows * width {
            return Err(invalid(format!(
                "{} bytes for {rows} values of {width} bytes",
                data.len()
            )));
        }
        Ok(Buffer::from(data))
    };
    fn values<T: ArrowNativeType>(buf: Buffer, rows: usize) -> ScalarBuffer<T> {
        ScalarBuffer::new(buf, 0, rows)
    }
    let arrow = |e: datafusion::arrow::error::ArrowError| invalid(e.to_string());
    let array: ArrayRef = match (ty, layout) {
        (SqlType::Boolean, _) => {
            if data.len() != rows.div_ceil(8) {
                return Err(invalid(format!("{} bytes for {rows} bits", data.len())));
            }
            Arc::new(BooleanArray::new(
                BooleanBuffer::new(Buffer::from(data), 0, rows),
                validity,
            ))
        }
        (SqlType::SmallInt, _) => {
            Arc::new(Int16Array::try_new(values(fixed(2)?, rows), validity).map_err(arrow)?)
        }
        (SqlType::Int, _) => {
            Arc::new(Int32Array::try_new(values(fixed(4)?, rows), validity).map_err(arrow)?)
        }
        (SqlType::Date, _) => {
            Arc::new(Date32Array::try_new(values(fixed(4)?, rows), validity).map_err(arrow)?)
        }
        (SqlType::Real, _) => {
            Arc::new(Float32Array::try_new(values(fixed(4)?, rows), validity).map_err(arrow)?)
        }
        (SqlType::BigInt, _) => {
            Arc::new(Int64Array::try_new(values(fixed(8)?, rows), validity).map_err(arrow)?)
        }
        (SqlType::Time, _) => Arc::new(
            Time64MicrosecondArray::try_new(values(fixed(8)?, rows), validity).map_err(arrow)?,
        ),
        (SqlType::Timestamp, _) => Arc::new(
            TimestampMicrosecondArray::try_new(values(fixed(8)?, rows), validity).map_err(arrow)?,
        ),
        (SqlType::TimestampTz, _) => Arc::new(
            TimestampMicrosecondArray::try_new(values(fixed(8)?, rows), validity)
                .map_err(arrow)?
                .with_timezone(UTC),
        ),
        (SqlType::Double, _) => {
            Arc::new(Float64Array::try_new(values(fixed(8)?, rows), validity).map_err(arrow)?)
        }
        (SqlType::Interval, _) => Arc::new(
            IntervalMonthDayNanoArray::try_new(values(fixed(16)?, rows), validity)
                .map_err(arrow)?,
        ),
        (
            SqlType::Decimal {
                precision, scale, ..
            },
            _,
        ) => Arc::new(
            Decimal128Array::try_new(values(fixed(16)?, rows), validity)
                .and_then(|a| a.with_precision_and_scale(precision, scale as i8))
                .map_err(arrow)?,
        ),
        (
            SqlType::Char(_)
            | SqlType::Varchar(_)
            | SqlType::Text
            | SqlType::Uuid
            | SqlType::Json
            | SqlType::Jsonb
            | SqlType::Hstore
            | SqlType::Enum(_),
            _,
        ) => {
            let (offsets, text) = offsets_and_bytes(data, rows).map_err(invalid)?;
            let strings = StringArray::try_new(offsets, text, validity).map_err(arrow)?;
            if ty == SqlType::Uuid && !strings.iter().flatten().all(is_canonical_uuid) {
                return Err(invalid("a uuid that is not in its canonical form".into()));
            }
            Arc::new(strings)
        }
        (SqlType::Bytea, _) => {
            let (offsets, bytes) = offsets_and_bytes(data, rows).map_err(invalid)?;
            Arc::new(BinaryArray::try_new(offsets, bytes, validity).map_err(arrow)?)
        }
    };
    Ok(array)
}

/// The offsets (`rows + 1` of them, rising from 0 to the end) and the bytes after them.
fn offsets_and_bytes(data: &[u8], rows: usize) -> Result<(OffsetBuffer<i32>, Buffer), String> {
    let offsets_len = (rows + 1) * 4;
    if data.len() < offsets_len {
        return Err(format!("{} bytes for {} offsets", data.len(), rows + 1));
    }
    let (offsets, bytes) = data.split_at(offsets_len);
    let offsets: Vec<i32> = offsets
        .chunks_exact(4)
        .map(|o| i32::from_le_bytes(o.try_into().expect("4 bytes")))
        .collect();
    let ordered = offsets[0] == 0
        && offsets.windows(2).all(|w| w[0] <= w[1])
        && usize::try_from(offsets[rows]).is_ok_and(|end| end == bytes.len());
    if !ordered {
        return Err("value offsets do not rise from 0 to the end of the data".into());
    }
    Ok((
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        Buffer::from(bytes),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrow_conv::arrow_type;
    use datafusion::arrow::array::new_empty_array;
    use proptest::prelude::*;

    const TYPES: [SqlType; 13] = [
        SqlType::TimestampTz,
        SqlType::Time,
        SqlType::Bytea,
        SqlType::Uuid,
        SqlType::Boolean,
        SqlType::SmallInt,
        SqlType::Int,
        SqlType::Date,
        SqlType::BigInt,
        SqlType::Timestamp,
        SqlType::decimal(12, 2),
        SqlType::Double,
        SqlType::Text,
    ];

    /// An array of `ty` from `seeds` (`None` is a null).
    fn array_of(ty: SqlType, seeds: &[Option<i64>]) -> ArrayRef {
        let v = |s: &Option<i64>| *s;
        match ty {
            SqlType::Boolean => Arc::new(BooleanArray::from(
                seeds
                    .iter()
                    .map(|s| v(s).map(|x| x % 2 == 0))
                    .collect::<Vec<_>>(),
            )),
            SqlType::SmallInt => Arc::new(Int16Array::from(
                seeds
                    .iter()
                    .map(|s| v(s).map(|x| x as i16))
                    .collect::<Vec<_>>(),
            )),
            SqlType::Int => Arc::new(Int32Array::from(
                seeds
                    .iter()
                    .map(|s| v(s).map(|x| x as i32))
                    .collect::<Vec<_>>(),
            )),
            SqlType::Date => Arc::new(Date32Array::from(
                seeds
                    .iter()
                    .map(|s| v(s).map(|x| x as i32))
                    .collect::<Vec<_>>(),
            )),
            SqlType::BigInt => Arc::new(Int64Array::from(seeds.iter().map(v).collect::<Vec<_>>())),
            SqlType::Time => Arc::new(Time64MicrosecondArray::from(
                seeds.iter().map(v).collect::<Vec<_>>(),
            )),
            SqlType::Timestamp => Arc::new(TimestampMicrosecondArray::from(
                seeds.iter().map(v).collect::<Vec<_>>(),
            )),
            SqlType::TimestampTz => Arc::new(
                TimestampMicrosecondArray::from(seeds.iter().map(v).collect::<Vec<_>>())
                    .with_timezone(UTC),
            ),
            SqlType::Bytea => {
                Arc::new(BinaryArray::from_iter(seeds.iter().map(|s| {
                    v(s).map(|x| x.to_le_bytes()[..(x as usize) % 9].to_vec())
                })))
            }
            SqlType::Uuid => Arc::new(StringArray::from_iter(seeds.iter().map(|s| {
                v(s).map(|x| crate::text_forms::uuid_text((x as u128).wrapping_mul(7919)))
            }))),
            SqlType::Decimal {
                precision, scale, ..
            } => Arc::new(
                Decimal128Array::from(
                    seeds
                        .iter()
                        .map(|s| v(s).map(|x| i128::from(x) % 10_i128.pow(12)))
                        .collect::<Vec<_>>(),
                )
                .with_precision_and_scale(precision, scale as i8)
                .unwrap(),
            ),
            SqlType::Double => Arc::new(Float64Array::from(
                seeds
                    .iter()
                    .map(|s| v(s).map(|x| x as f64 / 3.0))
                    .collect::<Vec<_>>(),
            )),
            _ => Arc::new(StringArray::from(
                seeds
                    .iter()
                    .map(|s| v(s).map(|x| format!("s{x}é").repeat((x as usize) % 4)))
                    .collect::<Vec<_>>(),
            )),
        }
    }

    fn seeds() -> impl Strategy<Value = Vec<Option<i64>>> {
        prop::collection::vec(prop::option::weighted(0.8, any::<i64>()), 0..300)
    }

    proptest! {
        #[test]
        fn chunks_round_trip(seeds in seeds(), t in 0..TYPES.len(), skip in 0usize..5) {
            let ty = TYPES[t];
            let full = array_of(ty, &seeds);
            // A slice starts inside Arrow's buffers, as a cut of a loaded batch does.
            let skip = skip.min(full.len());
            let array = full.slice(skip, full.len() - skip);
            let mut bytes = Vec::new();
            encode_chunk(ty, array.as_ref(), &mut bytes);
            prop_assert_eq!(chunk_rows(&bytes).unwrap(), array.len());
            let back = decode_chunk(ty, &bytes).unwrap();
            prop_assert_eq!(back.data_type(), &arrow_type(ty));
            prop_assert_eq!(back.to_data(), array.to_data());
        }

        #[test]
        fn damage_is_an_error(seeds in seeds(), t in 0..TYPES.len(), at in any::<prop::sample::Index>(), bit in 0u8..8, cut in any::<prop::sample::Index>()) {
            let ty = TYPES[t];
            let mut bytes = Vec::new();
            encode_chunk(ty, array_of(ty, &seeds).as_ref(), &mut bytes);
            let mut flipped = bytes.clone();
            flipped[at.index(bytes.len())] ^= 1 << bit;
            prop_assert!(decode_chunk(ty, &flipped).is_err());
            prop_assert!(decode_chunk(ty, &bytes[..cut.index(bytes.len())]).is_err());
        }
    }

    #[test]
    fn a_chunk_of_another_type_is_refused() {
        let mut bytes = Vec::new();
        encode_chunk(
            SqlType::Text,
            new_empty_array(&arrow_type(SqlType::Text)).as_ref(),
            &mut bytes,
        );
        let e = decode_chunk(SqlType::Int, &bytes).unwrap_err();
        assert!(e.to_string().contains("layout 2"), "{e}");
        // Same layout, other width: the length check catches it.
        let mut bytes = Vec::new();
        encode_chunk(
            SqlType::BigInt,
            array_of(SqlType::BigInt, &[Some(1), Some(2)]).as_ref(),
            &mut bytes,
        );
        let e = decode_chunk(SqlType::Int, &bytes).unwrap_err();
        assert!(
            e.to_string().contains("16 bytes for 2 values of 4 bytes"),
            "{e}"
        );
    }
}
