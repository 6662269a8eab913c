//! The order-preserving key encoding: a tuple of values (a primary key, or an index key
//! followed by the primary key) becomes bytes whose lexicographic order is the tuples'
//! SQL order ([`Value::sql_cmp`], column by column), so a subtable's own order serves
//! point reads, range scans and `ORDER BY` on the key. Byte table: `docs/format.md`,
//! "Key tuple".

use crate::error::CodecError;
use crate::reader::Reader;
use crate::types::{SqlType, Value};

const NULL: u8 = 0x00;
const PRESENT: u8 = 0x01;
/// A zero byte inside a string is written as `00 FF`; the string ends with `00 00`.
const ESCAPE: u8 = 0xFF;

/// Appends the encoding of `values` (checked against `types`, one each) to `out`.
pub fn encode_key(
    types: &[SqlType],
    values: &[Value],
    out: &mut Vec<u8>,
) -> Result<(), CodecError> {
    if types.len() != values.len() {
        return Err(CodecError::Mismatch(format!(
            "a key of {} columns given {} values",
            types.len(),
            values.len()
        )));
    }
    for (ty, v) in types.iter().zip(values) {
        if *ty == SqlType::Interval {
            return Err(CodecError::Mismatch("an interval is no key column".into()));
        }
        ty.check(v)?;
        encode_value(v, out);
    }
    Ok(())
}

fn encode_value(v: &Value, out: &mut Vec<u8>) {
    if *v == Value::Null {
        out.push(NULL);
        return;
    }
    out.push(PRESENT);
    match v {
        Value::Null => {}
        Value::Boolean(b) => out.push(u8::from(*b)),
        Value::SmallInt(x) => out.extend_from_slice(&((*x as u16) ^ 1 << 15).to_be_bytes()),
        Value::Int(x) | Value::Date(x) => {
            out.extend_from_slice(&((*x as u32) ^ 1 << 31).to_be_bytes())
        }
        Value::BigInt(x) | Value::Timestamp(x) | Value::Time(x) => {
            out.extend_from_slice(&((*x as u64) ^ 1 << 63).to_be_bytes())
        }
        Value::Decimal(x) => out.extend_from_slice(&((*x as u128) ^ 1 << 127).to_be_bytes()),
        Value::Real(x) => out.extend_from_slice(&ordered_f32(*x).to_be_bytes()),
        Value::Double(x) => out.extend_from_slice(&ordered_f64(*x).to_be_bytes()),
        Value::Str(s) => escaped(s.as_bytes(), out),
        Value::Bytes(b) => escaped(b, out),
        Value::Uuid(u) => out.extend_from_slice(&u.to_be_bytes()),
        // Refused by `encode_key`: the catalog makes no interval a key or index column.
        Value::Interval(_) => {}
    }
}

fn escaped(bytes: &[u8], out: &mut Vec<u8>) {
    for &b in bytes {
        out.push(b);
        if b == 0 {
            out.push(ESCAPE);
        }
    }
    out.extend_from_slice(&[0, 0]);
}

/// Float bits whose unsigned order is SQL's: -0 as +0, every NaN as one NaN above +inf.
fn ordered_f64(x: f64) -> u64 {
    let x = if x.is_nan() { f64::NAN } else { x + 0.0 };
    let bits = x.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

fn ordered_f32(x: f32) -> u32 {
    let x = if x.is_nan() { f32::NAN } else { x + 0.0 };
    let bits = x.to_bits();
    if bits >> 31 == 1 {
        !bits
    } else {
        bits | 1 << 31
    }
}

fn f64_from_ordered(bits: u64) -> f64 {
    f64::from_bits(if bits >> 63 == 1 {
        bits & !(1 << 63)
    } else {
        !bits
    })
}

fn f32_from_ordered(bits: u32) -> f32 {
    f32::from_bits(if bits >> 31 == 1 {
        bits & !(1 << 31)
    } else {
        !bits
    })
}

/// Decodes a whole key of columns `types`; every byte must belong to it.
pub fn decode_key(types: &[SqlType], bytes: &[u8]) -> Result<Vec<Value>, CodecError> {
    let (values, rest) = decode_key_prefix(types, bytes)?;
    if !rest.is_empty() {
        return Err(CodecError::Invalid {
            what: "key",
            reason: format!("{} bytes after the last column", rest.len()),
        });
    }
    Ok(values)
}

/// Decodes the tuple of columns `types` at the start of `bytes` (an index entry's
/// index columns) and gives back the bytes after it (the row key).
pub fn decode_key_prefix<'a>(
    types: &[SqlType],
    bytes: &'a [u8],
) -> Result<(Vec<Value>, &'a [u8]), CodecError> {
    let mut r = Reader::new("key", bytes);
    let values = types
        .iter()
        .map(|ty| value(&mut r, *ty))
        .collect::<Result<Vec<_>, _>>()?;
    let rest = r.rest();
    Ok((values, rest))
}

fn value(r: &mut Reader<'_>, ty: SqlType) -> Result<Value, CodecError> {
    match r.byte()? {
        NULL => return Ok(Value::Null),
        PRESENT => {}
        b => return Err(r.invalid(format!("presence byte {b:#04x}"))),
    }
    let v = match ty {
        SqlType::Boolean => match r.byte()? {
            0 => Value::Boolean(false),
            1 => Value::Boolean(true),
            b => return Err(r.invalid(format!("boolean byte {b:#04x}"))),
        },
        SqlType::SmallInt => Value::SmallInt((u16::from_be_bytes(r.take()?) ^ 1 << 15) as i16),
        SqlType::Int => Value::Int((u32::from_be_bytes(r.take()?) ^ 1 << 31) as i32),
        SqlType::Date => Value::Date((u32::from_be_bytes(r.take()?) ^ 1 << 31) as i32),
        SqlType::BigInt => Value::BigInt((u64::from_be_bytes(r.take()?) ^ 1 << 63) as i64),
        SqlType::Timestamp | SqlType::TimestampTz => {
            Value::Timestamp((u64::from_be_bytes(r.take()?) ^ 1 << 63) as i64)
        }
        SqlType::Time => Value::Time((u64::from_be_bytes(r.take()?) ^ 1 << 63) as i64),
        SqlType::Decimal { .. } => {
            Value::Decimal((u128::from_be_bytes(r.take()?) ^ 1 << 127) as i128)
        }
        SqlType::Real => Value::Real(f32_from_ordered(u32::from_be_bytes(r.take()?))),
        SqlType::Double => Value::Double(f64_from_ordered(u64::from_be_bytes(r.take()?))),
        SqlType::Char(_)
        | SqlType::Varchar(_)
        | SqlType::Text
        | SqlType::Json
        | SqlType::Jsonb
        | SqlType::Hstore
        | SqlType::Enum(_) => String::from_utf8(unescaped(r)?)
            .map(Value::Str)
            .map_err(|_| r.invalid("a string that is not UTF-8".into()))?,
        SqlType::Bytea => Value::Bytes(unescaped(r)?),
        SqlType::Uuid => Value::Uuid(u128::from_be_bytes(r.take()?)),
        SqlType::Interval => return Err(r.invalid("an interval in a key".into())),
    };
    // What decodes must also be what the column takes (a decimal within its precision,
    // a string within its length).
    ty.check(&v).map_err(|e| r.invalid(e.to_string()))?;
    Ok(v)
}

fn unescaped(r: &mut Reader<'_>) -> Result<Vec<u8>, CodecError> {
    let mut s = Vec::new();
    loop {
        match r.byte()? {
            0 => match r.byte()? {
                0 => break,
                ESCAPE => s.push(0),
                b => return Err(r.invalid(format!("string escape 00 {b:02x}"))),
            },
            b => s.push(b),
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::tests::{any_key_typed_value, same, value_of};
    use proptest::prelude::*;
    use std::cmp::Ordering;

    fn encoded(types: &[SqlType], values: &[Value]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_key(types, values, &mut out).unwrap();
        out
    }

    proptest! {
        /// Byte order is SQL order, and decoding gives the values back.
        #[test]
        fn byte_order_is_sql_order(
            pairs in proptest::collection::vec(any_key_typed_value().prop_flat_map(|(ty, a)| {
                value_of(ty).prop_map(move |b| (ty, a.clone(), b))
            }), 1..4)
        ) {
            let types: Vec<SqlType> = pairs.iter().map(|p| p.0).collect();
            let a: Vec<Value> = pairs.iter().map(|p| p.1.clone()).collect();
            let b: Vec<Value> = pairs.iter().map(|p| p.2.clone()).collect();
            let (ka, kb) = (encoded(&types, &a), encoded(&types, &b));
            let sql = a.iter().zip(&b)
                .map(|(x, y)| x.sql_cmp(y).unwrap())
                .find(|o| *o != Ordering::Equal)
                .unwrap_or(Ordering::Equal);
            prop_assert_eq!(ka.cmp(&kb), sql);
            let back = decode_key(&types, &ka).unwrap();
            prop_assert!(same(&back, &a), "{:?} decoded as {:?}", a, back);
        }

        /// Damaged keys are errors, never panics.
        #[test]
        fn damaged_keys_do_not_panic(
            (ty, v) in any_key_typed_value(), flip in any::<usize>(), cut in any::<usize>()
        ) {
            let mut k = encoded(&[ty], &[v]);
            let mut bad = k.clone();
            bad[flip % k.len()] ^= 0x5a;
            let _ = decode_key(&[ty], &bad);
            k.truncate(cut % k.len());
            prop_assert!(decode_key(&[ty], &k).is_err());
        }
    }

    #[test]
    fn strings_with_zero_bytes_keep_their_order() {
        let t = [SqlType::Text];
        let k = |s: &str| encoded(&t, &[Value::Str(s.into())]);
        assert!(k("a") < k("a\0"));
        assert!(k("a\0") < k("a\0\0"));
        assert!(k("a\0z") < k("ab"));
        assert!(encoded(&t, &[Value::Null]) < k(""));
        assert_eq!(
            decode_key(&t, &k("x\0y")).unwrap(),
            [Value::Str("x\0y".into())]
        );
    }

    #[test]
    fn refuses_what_does_not_fit() {
        let mut out = Vec::new();
        assert!(encode_key(&[SqlType::Int], &[Value::BigInt(1)], &mut out).is_err());
        assert!(encode_key(&[SqlType::Int, SqlType::Int], &[Value::Int(1)], &mut out).is_err());
        let k = encoded(&[SqlType::Int], &[Value::Int(7)]);
        assert!(decode_key(&[SqlType::BigInt], &k).is_err());
        let mut long = k.clone();
        long.push(0);
        assert!(decode_key(&[SqlType::Int], &long).is_err());
        // A decimal beyond its column's precision does not decode.
        let d = encoded(&[SqlType::decimal(10, 0)], &[Value::Decimal(9_999_999_999)]);
        assert!(decode_key(&[SqlType::decimal(4, 0)], &d).is_err());
    }
}
