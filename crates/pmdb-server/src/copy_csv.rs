//! COPY's CSV format as PostgreSQL reads and writes it, with its options: the QUOTE and
//! ESCAPE characters (a quoted field holds the delimiter, line breaks, and a quote or
//! escape written after the escape), FORCE_QUOTE on the way out, FORCE_NOT_NULL and
//! FORCE_NULL on the way in. A field is NULL when it is unquoted and equal to the NULL
//! text, or quoted and equal to it in a FORCE_NULL column; FORCE_NOT_NULL reads the
//! unquoted NULL text as that text.

use std::sync::Arc;

use bytes::BytesMut;
use pgwire::api::results::FieldInfo;
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::copy::CopyData;
use pgwire::types::ToSqlText;
use pgwire::types::format::FormatOptions;
use postgres_types::IsNull;

/// The characters a CSV COPY is written with.
#[derive(Clone, Copy, Debug)]
pub struct Dialect {
    pub delimiter: u8,
    pub quote: u8,
    pub escape: u8,
}

/// What a CSV COPY FROM reads each column as, besides the [`Dialect`].
#[derive(Clone, Debug, Default)]
pub struct Nulls {
    pub text: String,
    /// Per column: the NULL text unquoted is that text, not NULL.
    pub force_not_null: Vec<bool>,
    /// Per column: the NULL text quoted is NULL too.
    pub force_null: Vec<bool>,
}

/// The fields of CSV `record` (one or more lines joined by `\n`); `None` when a quoted
/// field is still open at its end, so that the record goes on on the next line.
pub fn fields(
    record: &str,
    dialect: Dialect,
    nulls: &Nulls,
) -> Result<Option<Vec<Option<String>>>, String> {
    let [delimiter, quote, escape] =
        [dialect.delimiter, dialect.quote, dialect.escape].map(char::from);
    let mut fields = Vec::new();
    let mut chars = record.chars().peekable();
    loop {
        let mut value = String::new();
        let (mut quoted, mut in_quote) = (false, false);
        let record_ended = loop {
            let Some(c) = chars.next() else {
                if in_quote {
                    return Ok(None);
                }
                break true;
            };
            if in_quote {
                // The escape takes the next character as it is when that is a quote or
                // the escape; a quote that is not escaped ends the quoted part.
                if c == escape && chars.peek().is_some_and(|&n| n == quote || n == escape) {
                    value.extend(chars.next());
                } else if c == quote {
                    in_quote = false;
                } else {
                    value.push(c);
                }
            } else if c == delimiter {
                break false;
            } else if c == quote {
                (quoted, in_quote) = (true, true);
            } else {
                value.push(c);
            }
        };
        let column = fields.len();
        let flag = |flags: &[bool]| flags.get(column).copied().unwrap_or(false);
        let is_null = value == nulls.text
            && match quoted {
                false => !flag(&nulls.force_not_null),
                true => flag(&nulls.force_null),
            };
        fields.push((!is_null).then_some(value));
        if record_ended {
            return Ok(Some(fields));
        }
    }
}

/// Writes rows in CSV, one CopyData per row.
pub struct Encoder {
    fields: Arc<Vec<FieldInfo>>,
    dialect: Dialect,
    null: String,
    /// Per column: always quoted (unless NULL).
    force_quote: Vec<bool>,
    column: usize,
    row: BytesMut,
    value: BytesMut,
}

impl Encoder {
    pub fn new(
        fields: Arc<Vec<FieldInfo>>,
        dialect: Dialect,
        null: String,
        force_quote: Vec<bool>,
    ) -> Encoder {
        Encoder {
            fields,
            dialect,
            null,
            force_quote,
            column: 0,
            row: BytesMut::new(),
            value: BytesMut::new(),
        }
    }

    /// The header line: the columns' names, quoted only where they need it (FORCE_QUOTE
    /// is for values).
    pub fn header<'a>(&mut self, names: impl IntoIterator<Item = &'a str>) -> CopyData {
        let forced = std::mem::take(&mut self.force_quote);
        for name in names {
            self.text(Some(name.as_bytes()));
        }
        self.force_quote = forced;
        self.take_copy()
    }

    /// Writes one field's text (`None`: NULL).
    pub fn text(&mut self, value: Option<&[u8]>) {
        if self.column > 0 {
            self.row.extend_from_slice(&[self.dialect.delimiter]);
        }
        match value {
            None => self.row.extend_from_slice(self.null.as_bytes()),
            Some(v) => self.quoted(v),
        }
        self.column += 1;
        if self.column == self.fields.len() {
            self.row.extend_from_slice(b"\n");
        }
    }

    fn quoted(&mut self, v: &[u8]) {
        let Dialect {
            delimiter,
            quote,
            escape,
        } = self.dialect;
        // As PostgreSQL decides: a value that would read back otherwise is quoted, and
        // so is `\.` alone on its line, which would end the data.
        let quote_it = self.force_quote.get(self.column).copied().unwrap_or(false)
            || v == self.null.as_bytes()
            || v.iter()
                .any(|&b| b == delimiter || b == quote || b == b'\n' || b == b'\r')
            || (self.fields.len() == 1 && v == b"\\.");
        if !quote_it {
            self.row.extend_from_slice(v);
            return;
        }
        self.row.extend_from_slice(&[quote]);
        for &b in v {
            if b == quote || b == escape {
                self.row.extend_from_slice(&[escape]);
            }
            self.row.extend_from_slice(&[b]);
        }
        self.row.extend_from_slice(&[quote]);
    }

    /// The row written, once its last field is.
    pub fn take_copy(&mut self) -> CopyData {
        self.column = 0;
        CopyData::new(self.row.split().freeze())
    }
}

impl Encoder {
    /// Writes one field: `value` as PostgreSQL's text of the column's type.
    pub fn value<T: ToSqlText + Sized>(&mut self, value: &T) -> PgWireResult<()> {
        let ty = self
            .fields
            .get(self.column)
            .map(|f| f.datatype().clone())
            .ok_or_else(|| PgWireError::ApiError("a field past the row's end".into()))?;
        self.value.clear();
        let mut text = std::mem::take(&mut self.value);
        let null = value
            .to_sql_text(&ty, &mut text, &FormatOptions::default())
            .map_err(PgWireError::ApiError)?;
        match null {
            IsNull::Yes => self.text(None),
            IsNull::No => self.text(Some(&text)),
        }
        self.value = text;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: Dialect = Dialect {
        delimiter: b',',
        quote: b'"',
        escape: b'"',
    };
    const STARS: Dialect = Dialect {
        delimiter: b'|',
        quote: b'*',
        escape: b'!',
    };

    fn read(record: &str, dialect: Dialect, nulls: &Nulls) -> Option<Vec<Option<String>>> {
        fields(record, dialect, nulls).unwrap()
    }

    fn s(v: &str) -> Option<String> {
        Some(v.to_owned())
    }

    #[test]
    fn quotes_escapes_and_nulls_are_read_as_postgresql_reads_them() {
        let nulls = Nulls::default();
        assert_eq!(
            read(r#"1,"a,b","say ""hi""",,"""#, PLAIN, &nulls),
            Some(vec![s("1"), s("a,b"), s("say \"hi\""), None, s("")])
        );
        // Quoting may start and stop inside a field.
        assert_eq!(read(r#"ab"c,d"e"#, PLAIN, &nulls), Some(vec![s("abc,de")]));
        // A quoted field open at the end of a line goes on on the next.
        assert_eq!(read("1,\"two", PLAIN, &nulls), None);
        assert_eq!(
            read("1,\"two\nlines\"", PLAIN, &nulls),
            Some(vec![s("1"), s("two\nlines")])
        );
        let nulls = Nulls {
            text: "n-u-l-l".into(),
            force_not_null: vec![true, false],
            force_null: vec![false, true],
        };
        assert_eq!(
            read("*!**|*n-u-l-l*", STARS, &nulls),
            Some(vec![s("*"), None])
        );
        assert_eq!(
            read("n-u-l-l|bb", STARS, &nulls),
            Some(vec![s("n-u-l-l"), s("bb")])
        );
        assert_eq!(
            read("*a!!b*|n-u-l-l", STARS, &nulls),
            Some(vec![s("a!b"), None])
        );
    }

    fn fields_of(n: usize) -> Arc<Vec<FieldInfo>> {
        Arc::new(
            (0..n)
                .map(|i| {
                    FieldInfo::new(
                        format!("c{i}"),
                        None,
                        None,
                        pgwire::api::Type::TEXT,
                        pgwire::api::results::FieldFormat::Text,
                    )
                })
                .collect(),
        )
    }

    fn written(e: &mut Encoder, values: &[Option<&str>]) -> String {
        for v in values {
            e.text(v.map(str::as_bytes));
        }
        String::from_utf8(e.take_copy().data.to_vec()).unwrap()
    }

    #[test]
    fn fields_are_quoted_and_escaped_as_postgresql_writes_them() {
        let mut e = Encoder::new(fields_of(3), PLAIN, String::new(), vec![]);
        assert_eq!(
            written(&mut e, &[Some("a,b"), None, Some("")]),
            "\"a,b\",,\"\"\n"
        );
        assert_eq!(
            written(&mut e, &[Some("say \"hi\""), Some("x"), Some("2\nlines")]),
            "\"say \"\"hi\"\"\",x,\"2\nlines\"\n"
        );
        let mut e = Encoder::new(fields_of(2), STARS, "n-u-l-l".into(), vec![true]);
        assert_eq!(e.header(["a", "b~"]).data.as_ref(), b"a|b~\n");
        assert_eq!(written(&mut e, &[Some("a1"), Some("b1")]), "*a1*|b1\n");
        assert_eq!(written(&mut e, &[Some("*"), None]), "*!**|n-u-l-l\n");
        assert_eq!(written(&mut e, &[None, Some("a!b")]), "n-u-l-l|a!b\n");
        let mut e = Encoder::new(fields_of(1), PLAIN, String::new(), vec![]);
        assert_eq!(written(&mut e, &[Some("\\.")]), "\"\\.\"\n");
    }
}
