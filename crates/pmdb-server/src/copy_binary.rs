//! COPY … FROM STDIN in PostgreSQL's binary format (asyncpg's `copy_records_to_table`
//! sends it): the signature and header, then tuples of length-prefixed fields in each
//! column type's binary form, then the trailer. Each field is written as the text
//! PostgreSQL would print for it, so the rows then take the text path's casts and
//! checks.

use crate::numeric::Numeric;
use chrono::{NaiveDate, NaiveDateTime};
use pmdb_sql::text_forms::uuid_text;
use pmdb_sql::types::Interval;
use pmdb_sql::types::SqlType;

/// A problem with the data: its SQLSTATE (22P04 for the format, 22P03 for a field's
/// bytes) and message.
pub type Damage = (&'static str, String);

fn format_error(message: impl Into<String>) -> Damage {
    ("22P04", message.into())
}

/// The signature a binary COPY starts with.
const SIGNATURE: &[u8] = b"PGCOPY\n\xff\r\n\0";

/// Days and microseconds in PostgreSQL's binary dates and timestamps count from here.
fn epoch() -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2000, 1, 1)
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .expect("a valid date")
}

/// The tuples of a binary COPY as its pieces arrive.
#[derive(Default)]
pub struct BinaryRows {
    pending: Vec<u8>,
    header_read: bool,
    /// The trailer was read: the data is complete.
    pub ended: bool,
}

/// Where a read of `pending` got to: `None` when more bytes are needed.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let out = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(out)
    }

    fn i16(&mut self) -> Option<i16> {
        self.take(2).map(|b| i16::from_be_bytes([b[0], b[1]]))
    }

    fn i32(&mut self) -> Option<i32> {
        self.take(4)
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
}

impl BinaryRows {
    /// Takes a piece of the data: the rows it completes, each field as text (`types`
    /// are the columns'), or what is wrong with it.
    pub fn feed(
        &mut self,
        bytes: &[u8],
        types: &[SqlType],
    ) -> Result<Vec<Vec<Option<String>>>, Damage> {
        self.pending.extend_from_slice(bytes);
        let mut rows = Vec::new();
        let mut c = Cursor {
            bytes: &self.pending,
            at: 0,
        };
        let mut consumed = 0;
        loop {
            if self.ended {
                break;
            }
            if !self.header_read {
                let Some(signature) = c.take(SIGNATURE.len()) else {
                    break;
                };
                if signature != SIGNATURE {
                    return Err(format_error("COPY file signature not recognized"));
                }
                let (Some(flags), Some(extension)) = (c.i32(), c.i32()) else {
                    break;
                };
                if flags & (1 << 16) != 0 {
                    return Err(format_error("COPY file with OIDs is not supported"));
                }
                let extension = usize::try_from(extension)
                    .map_err(|_| format_error("invalid COPY file header (bad extension length)"))?;
                if c.take(extension).is_none() {
                    break;
                }
                self.header_read = true;
                consumed = c.at;
                continue;
            }
            let Some(count) = c.i16() else { break };
            if count == -1 {
                self.ended = true;
                consumed = c.at;
                break;
            }
            if usize::try_from(count).ok() != Some(types.len()) {
                return Err(format_error(format!(
                    "row field count is {count}, expected {}",
                    types.len()
                )));
            }
            let mut row = Vec::with_capacity(types.len());
            let mut complete = true;
            for &ty in types {
                let Some(len) = c.i32() else {
                    complete = false;
                    break;
                };
                if len == -1 {
                    row.push(None);
                    continue;
                }
                let len = usize::try_from(len)
                    .map_err(|_| format_error(format!("invalid field length {len}")))?;
                let Some(raw) = c.take(len) else {
                    complete = false;
                    break;
                };
                row.push(Some(field_text(ty, raw).map_err(|e| ("22P03", e))?));
            }
            if !complete {
                break;
            }
            rows.push(row);
            consumed = c.at;
        }
        self.pending.drain(..consumed);
        Ok(rows)
    }

    /// Whether bytes of an unfinished tuple or header are left.
    pub fn incomplete(&self) -> bool {
        !self.ended && (!self.pending.is_empty() || !self.header_read)
    }
}

/// A field of type `ty` in binary, as PostgreSQL's text for it.
fn field_text(ty: SqlType, raw: &[u8]) -> Result<String, String> {
    let fixed = |n: usize| -> Result<&[u8], String> {
        if raw.len() == n {
            Ok(raw)
        } else {
            Err(format!(
                "a {ty} field of {} bytes (expected {n})",
                raw.len()
            ))
        }
    };
    let utf8 = |b: &[u8]| {
        std::str::from_utf8(b)
            .map(str::to_owned)
            .map_err(|_| format!("a {ty} field that is not UTF-8"))
    };
    Ok(match ty {
        SqlType::Boolean => (fixed(1)?[0] != 0).to_string(),
        SqlType::SmallInt => i16::from_be_bytes(fixed(2)?.try_into().expect("2 bytes")).to_string(),
        SqlType::Int => i32::from_be_bytes(fixed(4)?.try_into().expect("4 bytes")).to_string(),
        SqlType::BigInt => i64::from_be_bytes(fixed(8)?.try_into().expect("8 bytes")).to_string(),
        SqlType::Real => f32::from_be_bytes(fixed(4)?.try_into().expect("4 bytes")).to_string(),
        SqlType::Double => f64::from_be_bytes(fixed(8)?.try_into().expect("8 bytes")).to_string(),
        SqlType::Decimal { .. } => Numeric::from_binary(raw)
            .map_err(|(_, e)| format!("a numeric field pmdb cannot read: {e}"))?
            .to_string(),
        SqlType::Date => {
            let days = i32::from_be_bytes(fixed(4)?.try_into().expect("4 bytes"));
            epoch()
                .date()
                .checked_add_signed(chrono::Duration::days(i64::from(days)))
                .ok_or_else(|| format!("date out of range: {days} days"))?
                .format("%Y-%m-%d")
                .to_string()
        }
        SqlType::Time => {
            let micros = i64::from_be_bytes(fixed(8)?.try_into().expect("8 bytes"));
            if !(0..=pmdb_sql::time_of_day::MICROS_PER_DAY).contains(&micros) {
                return Err(format!("time out of range: {micros} microseconds"));
            }
            pmdb_sql::time_of_day::time_text(micros)
        }
        SqlType::Timestamp | SqlType::TimestampTz => {
            let micros = i64::from_be_bytes(fixed(8)?.try_into().expect("8 bytes"));
            let t = epoch()
                .checked_add_signed(chrono::Duration::microseconds(micros))
                .ok_or_else(|| format!("timestamp out of range: {micros} microseconds"))?;
            let text = t.format("%Y-%m-%d %H:%M:%S%.6f").to_string();
            if ty == SqlType::TimestampTz {
                text + "+00"
            } else {
                text
            }
        }
        SqlType::Bytea => {
            let mut out = String::with_capacity(2 + raw.len() * 2);
            out.push_str("\\x");
            for b in raw {
                out.push_str(&format!("{b:02x}"));
            }
            out
        }
        SqlType::Uuid => uuid_text(u128::from_be_bytes(
            fixed(16)?.try_into().expect("16 bytes"),
        )),
        SqlType::Hstore => pmdb_sql::hstore::Hstore::from_binary(raw)
            .map_err(|e| e.to_string())?
            .to_text(),
        SqlType::Jsonb => match raw.split_first() {
            Some((1, text)) => utf8(text)?,
            _ => return Err("unsupported jsonb version number".into()),
        },
        // An enum value's binary form is its label's text, as PostgreSQL sends it.
        SqlType::Char(_)
        | SqlType::Varchar(_)
        | SqlType::Text
        | SqlType::Json
        | SqlType::Enum(_) => utf8(raw)?,
        SqlType::Interval => Interval::from_binary(fixed(16)?)
            .expect("16 bytes")
            .to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tuple(fields: &[Option<&[u8]>]) -> Vec<u8> {
        let mut out = (fields.len() as i16).to_be_bytes().to_vec();
        for f in fields {
            match f {
                None => out.extend_from_slice(&(-1i32).to_be_bytes()),
                Some(b) => {
                    out.extend_from_slice(&(b.len() as i32).to_be_bytes());
                    out.extend_from_slice(b);
                }
            }
        }
        out
    }

    #[test]
    fn tuples_are_read_across_pieces() {
        let types = [
            SqlType::Int,
            SqlType::Text,
            SqlType::Date,
            SqlType::TimestampTz,
        ];
        let mut data = SIGNATURE.to_vec();
        data.extend_from_slice(&[0; 8]);
        data.extend(tuple(&[
            Some(&7i32.to_be_bytes()),
            Some(b"seven"),
            Some(&(-1i32).to_be_bytes()),
            Some(&1_500_000i64.to_be_bytes()),
        ]));
        data.extend(tuple(&[None, None, None, None]));
        data.extend_from_slice(&(-1i16).to_be_bytes());
        let mut rows = BinaryRows::default();
        let mut got = Vec::new();
        for piece in data.chunks(5) {
            got.extend(rows.feed(piece, &types).unwrap());
        }
        assert!(rows.ended && !rows.incomplete());
        assert_eq!(
            got,
            [
                vec![
                    Some("7".to_owned()),
                    Some("seven".to_owned()),
                    Some("1999-12-31".to_owned()),
                    Some("2000-01-01 00:00:01.500000+00".to_owned())
                ],
                vec![None, None, None, None]
            ]
        );
    }

    #[test]
    fn damage_is_an_error() {
        let mut rows = BinaryRows::default();
        assert!(rows.feed(b"PGCOPY\nXXXXXXXXXXXX", &[SqlType::Int]).is_err());
        let mut rows = BinaryRows::default();
        let mut data = SIGNATURE.to_vec();
        data.extend_from_slice(&[0; 8]);
        data.extend(tuple(&[Some(&[1, 2])]));
        assert!(rows.feed(&data, &[SqlType::Int]).is_err(), "a 2-byte int");
        let mut rows = BinaryRows::default();
        let mut data = SIGNATURE.to_vec();
        data.extend_from_slice(&[0; 8]);
        data.extend(tuple(&[Some(b"x"), Some(b"y")]));
        assert!(
            rows.feed(&data, &[SqlType::Text]).is_err(),
            "two fields for one column"
        );
        let mut rows = BinaryRows::default();
        rows.feed(&SIGNATURE[..4], &[SqlType::Int]).unwrap();
        assert!(rows.incomplete());
    }
}
