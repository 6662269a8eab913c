//! PostgreSQL arrays on the wire: the array type of each element type, and an array's
//! two forms — text (`{1,2,"a b",NULL}`, braces nested per dimension) and binary
//! (dimensions, element type, then each element's length and bytes) — written from the
//! elements' own encodings, and the binary form read back into them (the text form is
//! [`pmdb_sql::array_text`]'s). Encoding and decoding the elements is the caller's.

use std::borrow::Cow;

use bytes::{BufMut, BytesMut};
use pgwire::api::Type;
use pmdb_sql::array_text::{ArrayIn, MAX_DIMS};
use postgres_types::{IsNull, Kind, ToSql};

use pgwire::types::ToSqlText;

/// The array type whose elements are of type `element`; `None` for a type without one
/// here.
pub fn array_type(element: &Type) -> Option<Type> {
    let array = match *element {
        Type::BOOL => Type::BOOL_ARRAY,
        Type::INT2 => Type::INT2_ARRAY,
        Type::INT4 => Type::INT4_ARRAY,
        Type::INT8 => Type::INT8_ARRAY,
        Type::OID => Type::OID_ARRAY,
        Type::FLOAT4 => Type::FLOAT4_ARRAY,
        Type::FLOAT8 => Type::FLOAT8_ARRAY,
        Type::NUMERIC => Type::NUMERIC_ARRAY,
        Type::TEXT => Type::TEXT_ARRAY,
        Type::VARCHAR => Type::VARCHAR_ARRAY,
        Type::BPCHAR => Type::BPCHAR_ARRAY,
        Type::NAME => Type::NAME_ARRAY,
        Type::DATE => Type::DATE_ARRAY,
        Type::TIME => Type::TIME_ARRAY,
        Type::TIMESTAMP => Type::TIMESTAMP_ARRAY,
        Type::TIMESTAMPTZ => Type::TIMESTAMPTZ_ARRAY,
        Type::INTERVAL => Type::INTERVAL_ARRAY,
        Type::BYTEA => Type::BYTEA_ARRAY,
        Type::UUID => Type::UUID_ARRAY,
        Type::JSON => Type::JSON_ARRAY,
        Type::JSONB => Type::JSONB_ARRAY,
        _ => return None,
    };
    Some(array)
}

/// The element type of array type `ty`; `None` when `ty` is no array.
pub fn element_type(ty: &Type) -> Option<Type> {
    match ty.kind() {
        Kind::Array(element) => Some(element.clone()),
        _ => None,
    }
}

/// An array to send: its element type, its dimensions (none when it is empty), and its
/// elements in row-major order, each in both formats (`None` for a NULL).
#[derive(Debug)]
pub struct ArrayOut {
    pub element: Type,
    pub dims: Vec<usize>,
    pub text: Vec<Option<BytesMut>>,
    pub binary: Vec<Option<BytesMut>>,
}

type BoxError = Box<dyn std::error::Error + Sync + Send>;

fn int32(n: usize) -> Result<i32, BoxError> {
    i32::try_from(n).map_err(|_| "array too large".into())
}

impl ToSql for ArrayOut {
    fn to_sql(&self, _ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        out.put_i32(int32(self.dims.len())?);
        out.put_i32(i32::from(self.binary.iter().any(Option::is_none)));
        out.put_u32(self.element.oid());
        for &d in &self.dims {
            out.put_i32(int32(d)?);
            out.put_i32(1);
        }
        for e in &self.binary {
            match e {
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
        element_type(ty).is_some() || is_vector(ty)
    }

    postgres_types::to_sql_checked!();
}

/// PostgreSQL's vector types of its catalogs (`int2vector`, `oidvector`): arrays of one
/// dimension in binary, their elements separated by spaces in text, which clients split
/// rather than parse as an array (SQLAlchemy's psycopg dialect).
fn is_vector(ty: &Type) -> bool {
    *ty == Type::INT2_VECTOR || *ty == Type::OID_VECTOR
}

impl ToSqlText for ArrayOut {
    fn to_sql_text(
        &self,
        ty: &Type,
        out: &mut BytesMut,
        _options: &pgwire::types::format::FormatOptions,
    ) -> Result<IsNull, BoxError> {
        if is_vector(ty) {
            for (i, e) in self.text.iter().enumerate() {
                if i > 0 {
                    out.put_u8(b' ');
                }
                out.put_slice(e.as_deref().ok_or("a NULL in a vector")?);
            }
        } else if self.dims.is_empty() {
            out.put_slice(b"{}");
        } else {
            let mut next = self.text.iter();
            write_text(&self.dims, &mut next, out);
        }
        Ok(IsNull::No)
    }
}

/// Writes the elements of one dimension (`dims[0]` of them, each a sub-array when more
/// dimensions follow), taking them from `elements`.
fn write_text<'a>(
    dims: &[usize],
    elements: &mut impl Iterator<Item = &'a Option<BytesMut>>,
    out: &mut BytesMut,
) {
    out.put_u8(b'{');
    for i in 0..dims[0] {
        if i > 0 {
            out.put_u8(b',');
        }
        if dims.len() > 1 {
            write_text(&dims[1..], elements, out);
            continue;
        }
        match elements.next() {
            Some(Some(text)) => write_element(text, out),
            _ => out.put_slice(b"NULL"),
        }
    }
    out.put_u8(b'}');
}

/// An element's text, in double quotes (with `"` and `\` escaped) when it would
/// otherwise read differently: empty, `NULL`, or holding a delimiter, a brace, a quote, a
/// backslash or white space.
fn write_element(text: &[u8], out: &mut BytesMut) {
    let special =
        |b: &u8| matches!(b, b'"' | b'\\' | b'{' | b'}' | b',') || b.is_ascii_whitespace();
    let quote = text.is_empty() || text.eq_ignore_ascii_case(b"null") || text.iter().any(special);
    if !quote {
        out.put_slice(text);
        return;
    }
    out.put_u8(b'"');
    for &b in text {
        if b == b'"' || b == b'\\' {
            out.put_u8(b'\\');
        }
        out.put_u8(b);
    }
    out.put_u8(b'"');
}

/// Reads an array in the binary format; `element` is the element type the parameter
/// was declared with, which the array must name.
pub fn parse_binary<'a>(raw: &'a [u8], element: &Type) -> Result<ArrayIn<'a>, String> {
    let mut rest = raw;
    let int = |rest: &mut &'a [u8], what: &str| -> Result<i32, String> {
        let (head, tail) = rest
            .split_first_chunk::<4>()
            .ok_or_else(|| format!("array data ends before its {what}"))?;
        *rest = tail;
        Ok(i32::from_be_bytes(*head))
    };
    let ndim = usize::try_from(int(&mut rest, "dimensions")?)
        .ok()
        .filter(|&n| n <= MAX_DIMS)
        .ok_or("invalid number of array dimensions")?;
    let _has_nulls = int(&mut rest, "flags")?;
    let oid = int(&mut rest, "element type")? as u32;
    if oid != element.oid() {
        return Err(format!(
            "wrong element type: array of OID {oid}, {element} expected"
        ));
    }
    let mut dims = Vec::with_capacity(ndim);
    let mut total: usize = 1;
    for _ in 0..ndim {
        let size = usize::try_from(int(&mut rest, "dimension")?)
            .map_err(|_| "negative array dimension")?;
        let _lower_bound = int(&mut rest, "lower bound")?;
        total = total
            .checked_mul(size)
            .filter(|&t| t <= raw.len())
            .ok_or("array size exceeds its data")?;
        dims.push(size);
    }
    if ndim == 0 {
        total = 0;
    }
    let mut elements = Vec::with_capacity(total);
    for _ in 0..total {
        let len = int(&mut rest, "element length")?;
        let Ok(len) = usize::try_from(len) else {
            elements.push(None);
            continue;
        };
        if rest.len() < len {
            return Err("array element longer than its data".into());
        }
        let (value, tail) = rest.split_at(len);
        elements.push(Some(Cow::Borrowed(value)));
        rest = tail;
    }
    if !rest.is_empty() {
        return Err("array data continues after its last element".into());
    }
    if dims.contains(&0) {
        dims.clear();
    }
    Ok(ArrayIn { dims, elements })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmdb_sql::array_text::parse_text;

    #[test]
    fn written_arrays_read_back() {
        let elements: Vec<Option<BytesMut>> = ["x", "", "NULL", "a\"b\\c", "d e"]
            .iter()
            .map(|s| Some(BytesMut::from(s.as_bytes())))
            .chain([None])
            .collect();
        let array = ArrayOut {
            element: Type::TEXT,
            dims: vec![2, 3],
            text: elements.clone(),
            binary: elements.clone(),
        };
        let mut text = BytesMut::new();
        array
            .to_sql_text(&Type::TEXT_ARRAY, &mut text, &Default::default())
            .unwrap();
        assert_eq!(&text[..], br#"{{x,"","NULL"},{"a\"b\\c","d e",NULL}}"#);
        let back = parse_text(&text).unwrap();
        assert_eq!(back.dims, vec![2, 3]);
        let mut binary = BytesMut::new();
        array.to_sql(&Type::TEXT_ARRAY, &mut binary).unwrap();
        let from_binary = parse_binary(&binary, &Type::TEXT).unwrap();
        assert_eq!(from_binary, back);
        assert!(parse_binary(&binary, &Type::INT4).is_err());
    }

    #[test]
    fn damaged_binary_arrays_are_errors() {
        let array = ArrayOut {
            element: Type::INT4,
            dims: vec![2],
            text: vec![None, None],
            binary: vec![Some(BytesMut::from(&[0, 0, 0, 1][..])), None],
        };
        let mut binary = BytesMut::new();
        array.to_sql(&Type::INT4_ARRAY, &mut binary).unwrap();
        for cut in 0..binary.len() {
            assert!(
                parse_binary(&binary[..cut], &Type::INT4).is_err(),
                "cut at {cut}"
            );
        }
        let mut huge = binary.clone();
        huge[12..16].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(parse_binary(&huge, &Type::INT4).is_err());
    }
}
