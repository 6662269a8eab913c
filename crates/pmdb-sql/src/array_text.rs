//! PostgreSQL's text form of arrays — `{1,2,"a b",NULL}`, braces nested per dimension
//! (`{{1,2},{3,4}}`), quotes and backslashes as array_in reads them — and arrays as
//! DataFusion holds them: a list (one dimension: more are refused). Casts of text to an
//! array type (`'{1,2}'::int[]`) and array parameters in text read with it.

use std::borrow::Cow;

use datafusion::arrow::array::{Array, StringArray};
use datafusion::arrow::compute::{CastOptions, cast_with_options};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;

use crate::error::{Result, SqlError};

/// The most dimensions an array may have, as in PostgreSQL (MAXDIM).
pub const MAX_DIMS: usize = 6;

/// An array received: its dimensions (none when empty) and its elements in row-major
/// order, each as the bytes of its own encoding in the array's format.
#[derive(Debug, PartialEq)]
pub struct ArrayIn<'a> {
    pub dims: Vec<usize>,
    pub elements: Vec<Option<Cow<'a, [u8]>>>,
}

/// Reads an array in PostgreSQL's text form (`{1,2}`, `{{1,2},{3,4}}`, `{"a b",NULL}`).
pub fn parse_text(text: &[u8]) -> Result<ArrayIn<'_>, String> {
    let malformed = |why: &str| {
        format!(
            "malformed array literal: \"{}\" ({why})",
            String::from_utf8_lossy(text)
        )
    };
    let mut reader = TextReader { text, at: 0 };
    reader.skip_space();
    if reader.peek() != Some(b'{') {
        return Err(malformed(
            "array value must start with \"{\" or dimension information",
        ));
    }
    let tree = reader.node(0).map_err(malformed)?;
    reader.skip_space();
    if reader.at != text.len() {
        return Err(malformed("junk after closing right brace"));
    }
    let mut shape = Shape::default();
    shape.take(tree, 0).map_err(malformed)?;
    if shape.elements.is_empty() {
        shape.dims.clear();
    }
    Ok(ArrayIn {
        dims: shape.dims,
        elements: shape.elements,
    })
}

/// An array's text read into a tree: an element, or a brace-enclosed list.
enum Node<'a> {
    Element(Option<Cow<'a, [u8]>>),
    Array(Vec<Node<'a>>),
}

struct TextReader<'a> {
    text: &'a [u8],
    at: usize,
}

impl<'a> TextReader<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    /// An element, or `{…}` at nesting `depth`.
    fn node(&mut self, depth: usize) -> Result<Node<'a>, &'static str> {
        self.skip_space();
        if self.peek() != Some(b'{') {
            return self.element().map(Node::Element);
        }
        if depth >= MAX_DIMS {
            return Err("too many dimensions");
        }
        self.at += 1;
        self.skip_space();
        let mut items = Vec::new();
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(Node::Array(items));
        }
        loop {
            items.push(self.node(depth + 1)?);
            self.skip_space();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(Node::Array(items));
                }
                _ => return Err("unexpected end of input"),
            }
        }
    }

    /// One element: quoted (backslash escapes taken out), else up to the next delimiter
    /// or brace with surrounding space dropped; an unquoted `NULL` is a NULL.
    fn element(&mut self) -> Result<Option<Cow<'a, [u8]>>, &'static str> {
        let start = self.at;
        let quoted = self.peek() == Some(b'"');
        if quoted {
            self.at += 1;
        }
        let mut value = Vec::new();
        let mut escaped = false;
        loop {
            match self.peek() {
                None if quoted => return Err("unexpected end of input"),
                None => break,
                Some(b',' | b'}') if !quoted => break,
                Some(b'"') if quoted => {
                    self.at += 1;
                    return Ok(Some(Cow::Owned(value)));
                }
                Some(b'{' | b'"') if !quoted => return Err("unexpected character in an element"),
                Some(b'\\') => {
                    let next = self
                        .text
                        .get(self.at + 1)
                        .ok_or("unexpected end of input")?;
                    value.push(*next);
                    escaped = true;
                    self.at += 2;
                }
                Some(b) => {
                    value.push(b);
                    self.at += 1;
                }
            }
        }
        if self.at == start {
            return Err("unexpected delimiter");
        }
        while value.last().is_some_and(|b| b.is_ascii_whitespace()) {
            value.pop();
        }
        if !escaped && value.eq_ignore_ascii_case(b"null") {
            return Ok(None);
        }
        if !escaped {
            return Ok(Some(Cow::Borrowed(&self.text[start..start + value.len()])));
        }
        Ok(Some(Cow::Owned(value)))
    }
}

/// The dimensions and row-major elements of a tree that must be rectangular: every
/// list at one depth as long as the others, elements all at the deepest level.
#[derive(Default)]
struct Shape<'a> {
    dims: Vec<usize>,
    elements: Vec<Option<Cow<'a, [u8]>>>,
    element_depth: Option<usize>,
}

impl<'a> Shape<'a> {
    fn take(&mut self, node: Node<'a>, depth: usize) -> Result<(), &'static str> {
        const RAGGED: &str =
            "multidimensional arrays must have sub-arrays with matching dimensions";
        match node {
            Node::Element(e) => {
                if *self.element_depth.get_or_insert(depth) != depth {
                    return Err(RAGGED);
                }
                self.elements.push(e);
            }
            Node::Array(items) => {
                if self.element_depth.is_some_and(|d| depth >= d) {
                    return Err(RAGGED);
                }
                match self.dims.get(depth) {
                    Some(&n) if n != items.len() => return Err(RAGGED),
                    Some(_) => {}
                    None => self.dims.push(items.len()),
                }
                for item in items {
                    self.take(item, depth + 1)?;
                }
            }
        }
        Ok(())
    }
}

/// Refuses (0A000) an array of more than one dimension: an array type is a list of its
/// element type, one dimension deep.
pub fn one_dimension(dims: &[usize]) -> Result<()> {
    match dims.len() {
        0 | 1 => Ok(()),
        n => Err(SqlError::unsupported(format!(
            "an array of {n} dimensions (pmdb's arrays have one)"
        ))),
    }
}

/// The innermost element type of a list type (`None` for a type that is no list).
pub fn list_element(ty: &DataType) -> Option<&DataType> {
    match ty {
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            Some(list_element(f.data_type()).unwrap_or(f.data_type()))
        }
        _ => None,
    }
}

/// Text in PostgreSQL's array form read as an array of `element` values, each element
/// read as text cast to `element` is (22P02 for text that is no array, or an element
/// that is not of the type).
pub fn array_from_text(text: &str, element: &DataType) -> Result<ScalarValue> {
    let parsed = parse_text(text.as_bytes()).map_err(|e| SqlError::user("22P02", e))?;
    one_dimension(&parsed.dims)?;
    let strings = parsed
        .elements
        .iter()
        .map(|e| e.as_deref().map(String::from_utf8_lossy))
        .collect::<StringArray>();
    let options = CastOptions {
        safe: false,
        ..CastOptions::default()
    };
    let values = cast_with_options(&strings, element, &options).map_err(|e| {
        SqlError::user(
            "22P02",
            format!("invalid input for an array of {element}: {e}"),
        )
    })?;
    let scalars = (0..values.len())
        .map(|i| ScalarValue::try_from_array(&values, i))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| SqlError::Query(e.to_string()))?;
    Ok(ScalarValue::List(ScalarValue::new_list_nullable(
        &scalars, element,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(a: &ArrayIn<'_>) -> Vec<Option<String>> {
        a.elements
            .iter()
            .map(|e| e.as_ref().map(|b| String::from_utf8_lossy(b).into_owned()))
            .collect()
    }

    #[test]
    fn text_forms_read_as_postgresql_reads_them() {
        let a = parse_text(b"{1, 2 ,3}").unwrap();
        assert_eq!(a.dims, vec![3]);
        assert_eq!(
            text_of(&a),
            vec![Some("1".into()), Some("2".into()), Some("3".into())]
        );
        let a = parse_text(br#"{"a b",NULL,"NULL","q\"x",c\,d}"#).unwrap();
        assert_eq!(
            text_of(&a),
            vec![
                Some("a b".into()),
                None,
                Some("NULL".into()),
                Some("q\"x".into()),
                Some("c,d".into())
            ]
        );
        let a = parse_text(b"{{1,2},{3,4},{5,6}}").unwrap();
        assert_eq!(a.dims, vec![3, 2]);
        assert_eq!(a.elements.len(), 6);
        assert_eq!(parse_text(b"{}").unwrap().dims, Vec::<usize>::new());
        for bad in [
            &b"{1,2"[..],
            b"1,2",
            b"{{1,2},{3}}",
            b"{{1},2}",
            b"{1,,2}",
            b"{1}x",
            b"[1:2]={1,2}",
        ] {
            assert!(parse_text(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn text_casts_to_arrays_read_each_element() {
        let a = array_from_text("{1, NULL, 3}", &DataType::Int64).unwrap();
        assert_eq!(a.data_type(), DataType::new_list(DataType::Int64, true));
        assert_eq!(a.to_string(), "[1, , 3]");
        let two = array_from_text("{{1,2},{3,4}}", &DataType::Int32).unwrap_err();
        assert_eq!(two.sqlstate(), "0A000");
        assert_eq!(
            array_from_text("{1,x}", &DataType::Int32)
                .unwrap_err()
                .sqlstate(),
            "22P02"
        );
        assert_eq!(
            array_from_text("1,2", &DataType::Int32)
                .unwrap_err()
                .sqlstate(),
            "22P02"
        );
    }
}
