//! Row values (`ROW(a, b)`, a DataFusion struct) as PostgreSQL's anonymous `record`:
//! `(a,b)` in text, with record_out's quoting, and in binary the field count, then each
//! field's type oid, length and value.

use bytes::{BufMut, BytesMut};
use pgwire::types::ToSqlText;
use postgres_types::{IsNull, ToSql, Type};

/// One row value's fields, each kept in both formats (`None`: NULL).
#[derive(Debug)]
pub struct RecordOut {
    pub types: Vec<Type>,
    pub text: Vec<Option<BytesMut>>,
    pub binary: Vec<Option<BytesMut>>,
}

type BoxError = Box<dyn std::error::Error + Sync + Send>;

fn int32(n: usize) -> Result<i32, BoxError> {
    i32::try_from(n).map_err(|_| "row value too large".into())
}

impl ToSql for RecordOut {
    fn to_sql(&self, _ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        out.put_i32(int32(self.binary.len())?);
        for (ty, field) in self.types.iter().zip(&self.binary) {
            out.put_u32(ty.oid());
            match field {
                Some(bytes) => {
                    out.put_i32(int32(bytes.len())?);
                    out.put_slice(bytes);
                }
                None => out.put_i32(-1),
            }
        }
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::RECORD
    }

    postgres_types::to_sql_checked!();
}

impl ToSqlText for RecordOut {
    fn to_sql_text(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
        _options: &pgwire::types::format::FormatOptions,
    ) -> Result<IsNull, BoxError> {
        out.put_u8(b'(');
        for (i, field) in self.text.iter().enumerate() {
            if i > 0 {
                out.put_u8(b',');
            }
            if let Some(text) = field {
                write_field(text, out);
            }
        }
        out.put_u8(b')');
        Ok(IsNull::No)
    }
}

/// A field's text, in double quotes (with `"` and `\` doubled) where record_out puts
/// them: empty, or holding a delimiter, a quote, a backslash or white space.
fn write_field(text: &[u8], out: &mut BytesMut) {
    let quote = text.is_empty()
        || text
            .iter()
            .any(|b| matches!(b, b'(' | b')' | b',' | b'"' | b'\\') || b.is_ascii_whitespace());
    if !quote {
        out.put_slice(text);
        return;
    }
    out.put_u8(b'"');
    for &b in text {
        if matches!(b, b'"' | b'\\') {
            out.put_u8(b);
        }
        out.put_u8(b);
    }
    out.put_u8(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(fields: &[Option<&str>]) -> RecordOut {
        RecordOut {
            types: vec![Type::TEXT; fields.len()],
            text: fields.iter().map(|f| f.map(BytesMut::from)).collect(),
            binary: fields.iter().map(|f| f.map(BytesMut::from)).collect(),
        }
    }

    #[test]
    fn text_quotes_fields_as_record_out_does() {
        let r = record(&[None, Some("1"), Some(""), Some("a b"), Some("x\"y\\")]);
        let mut out = BytesMut::new();
        r.to_sql_text(&Type::RECORD, &mut out, &Default::default())
            .unwrap();
        assert_eq!(&out[..], br#"(,1,"","a b","x""y\\")"#);
    }

    #[test]
    fn binary_holds_each_fields_oid_and_length() {
        let r = record(&[Some("ab"), None]);
        let mut out = BytesMut::new();
        r.to_sql(&Type::RECORD, &mut out).unwrap();
        let mut want = Vec::new();
        want.extend_from_slice(&2i32.to_be_bytes());
        want.extend_from_slice(&Type::TEXT.oid().to_be_bytes());
        want.extend_from_slice(&2i32.to_be_bytes());
        want.extend_from_slice(b"ab");
        want.extend_from_slice(&Type::TEXT.oid().to_be_bytes());
        want.extend_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(&out[..], &want[..]);
    }
}
