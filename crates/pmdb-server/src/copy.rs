//! COPY … FROM STDIN on the wire: the client's CopyData pieces are cut into lines,
//! each line into fields in PostgreSQL's text format (tab-separated, `\N` for NULL,
//! backslash escapes) or CSV ([`crate::copy_csv`]: a quoted field may go on over
//! several lines), or read as binary tuples ([`crate::copy_binary`]), and
//! every few thousand rows go to pmdb-sql's [`CopyIn`] as a batch of text columns,
//! which it casts to the columns' types.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use pmdb_sql::{CopyFormat, CopyIn, SqlError};

use crate::copy_binary::BinaryRows;
use crate::copy_csv;

/// Rows per batch handed on.
const BATCH_ROWS: usize = 4096;

/// A COPY being received.
pub struct Receiving {
    pub copy: CopyIn,
    /// Bytes of a line not complete yet.
    partial: Vec<u8>,
    rows: Vec<Vec<Option<String>>>,
    header_left: bool,
    /// The end marker `\.` was seen: anything after it is ignored.
    ended: bool,
    /// The first error; the rest of the data is then read and dropped, and the COPY
    /// fails at its end.
    pub failed: Option<SqlError>,
    line: u64,
    /// The tuples of a binary COPY.
    binary: BinaryRows,
    /// CSV: how each column reads NULL.
    nulls: copy_csv::Nulls,
    /// CSV: the lines of a record whose quoted field is still open.
    open_record: Option<String>,
}

fn bad(line: u64, message: impl std::fmt::Display) -> SqlError {
    SqlError::user("22P04", format!("COPY line {line}: {message}"))
}

impl Receiving {
    pub fn new(copy: CopyIn) -> Receiving {
        let flags = |names: &[String]| copy.columns.iter().map(|c| names.contains(c)).collect();
        let nulls = copy_csv::Nulls {
            text: copy.format.null.clone(),
            force_not_null: flags(&copy.format.force_not_null),
            force_null: flags(&copy.format.force_null),
        };
        Receiving {
            nulls,
            open_record: None,
            header_left: copy.format.header,
            copy,
            partial: Vec::new(),
            rows: Vec::new(),
            ended: false,
            failed: None,
            line: 0,
            binary: BinaryRows::default(),
        }
    }

    /// Takes a CopyData piece.
    pub async fn data(&mut self, bytes: &[u8]) {
        if self.failed.is_some() || self.ended {
            return;
        }
        if self.copy.format.binary {
            match self.binary.feed(bytes, &self.copy.types) {
                Ok(rows) => {
                    self.line += rows.len() as u64;
                    self.rows.extend(rows);
                }
                Err((sqlstate, message)) => {
                    let line = self.line + 1;
                    self.failed = Some(SqlError::user(
                        sqlstate,
                        format!("COPY line {line}: {message}"),
                    ));
                    return;
                }
            }
            if self.rows.len() >= BATCH_ROWS {
                self.flush().await;
            }
            return;
        }
        self.partial.extend_from_slice(bytes);
        let mut start = 0;
        while let Some(n) = self.partial[start..].iter().position(|&b| b == b'\n') {
            let line = self.partial[start..start + n].to_vec();
            start += n + 1;
            if let Err(e) = self.line(&line) {
                self.failed = Some(e);
                return;
            }
            if self.ended {
                break;
            }
        }
        self.partial.drain(..start);
        if self.rows.len() >= BATCH_ROWS {
            self.flush().await;
        }
    }

    /// The data is complete: the last line, and the rest of the rows.
    pub async fn done(&mut self) {
        if self.copy.format.binary && self.failed.is_none() && self.binary.incomplete() {
            self.failed = Some(bad(self.line + 1, "unexpected EOF in COPY data"));
        }
        if !self.partial.is_empty() && self.failed.is_none() && !self.ended {
            let line = std::mem::take(&mut self.partial);
            if let Err(e) = self.line(&line) {
                self.failed = Some(e);
            }
        }
        if self.open_record.is_some() && self.failed.is_none() {
            self.failed = Some(bad(self.line, "unterminated CSV quoted field"));
        }
        self.flush().await;
    }

    fn line(&mut self, raw: &[u8]) -> Result<(), SqlError> {
        self.line += 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw == b"\\." && self.open_record.is_none() {
            self.ended = true;
            return Ok(());
        }
        if std::mem::take(&mut self.header_left) {
            return Ok(());
        }
        let text = std::str::from_utf8(raw).map_err(|e| bad(self.line, e))?;
        let format = &self.copy.format;
        let fields = if format.csv {
            let record = match self.open_record.take() {
                Some(mut open) => {
                    open.push('\n');
                    open.push_str(text);
                    open
                }
                None => text.to_owned(),
            };
            let dialect = copy_csv::Dialect {
                delimiter: format.delimiter,
                quote: format.quote,
                escape: format.escape,
            };
            match copy_csv::fields(&record, dialect, &self.nulls) {
                Ok(Some(fields)) => fields,
                Ok(None) => {
                    self.open_record = Some(record);
                    return Ok(());
                }
                Err(e) => return Err(bad(self.line, e)),
            }
        } else {
            text_fields(text, format).map_err(|e| bad(self.line, e))?
        };
        if fields.len() != self.copy.columns.len() {
            return Err(bad(
                self.line,
                format!(
                    "{} fields for {} columns",
                    fields.len(),
                    self.copy.columns.len()
                ),
            ));
        }
        self.rows.push(fields);
        Ok(())
    }

    async fn flush(&mut self) {
        if self.rows.is_empty() || self.failed.is_some() {
            return;
        }
        let rows = std::mem::take(&mut self.rows);
        let schema = Arc::new(Schema::new(
            self.copy
                .columns
                .iter()
                .map(|c| Field::new(c, DataType::Utf8, true))
                .collect::<Vec<_>>(),
        ));
        let columns: Vec<ArrayRef> = (0..self.copy.columns.len())
            .map(|c| {
                Arc::new(
                    rows.iter()
                        .map(|r| r[c].as_deref())
                        .collect::<StringArray>(),
                ) as _
            })
            .collect();
        let sent = match RecordBatch::try_new(schema, columns) {
            Ok(batch) => self.copy.send(batch).await,
            Err(e) => Err(SqlError::Query(e.to_string())),
        };
        if let Err(e) = sent {
            self.failed = Some(e);
        }
    }
}

/// Fields of a line in the text format.
fn text_fields(line: &str, f: &CopyFormat) -> Result<Vec<Option<String>>, String> {
    line.split(f.delimiter as char)
        .map(|field| {
            if field == f.null {
                Ok(None)
            } else {
                unescape(field).map(Some)
            }
        })
        .collect()
}

/// A text-format field with its backslash escapes resolved.
fn unescape(field: &str) -> Result<String, String> {
    if !field.contains('\\') {
        return Ok(field.to_owned());
    }
    let mut out = Vec::with_capacity(field.len());
    let mut bytes = field.bytes().peekable();
    while let Some(b) = bytes.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        let Some(e) = bytes.next() else {
            return Err("a backslash at the end of a field".into());
        };
        out.push(match e {
            b'b' => 8,
            b'f' => 12,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'v' => 11,
            b'0'..=b'7' => {
                let mut v = u32::from(e - b'0');
                for _ in 0..2 {
                    match bytes.peek() {
                        Some(&d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            bytes.next();
                        }
                        _ => break,
                    }
                }
                (v & 0xff) as u8
            }
            b'x' => {
                let mut v = 0u32;
                let mut digits = 0;
                while digits < 2 {
                    match bytes.peek().and_then(|d| (*d as char).to_digit(16)) {
                        Some(d) => {
                            v = v * 16 + d;
                            bytes.next();
                            digits += 1;
                        }
                        None => break,
                    }
                }
                if digits == 0 { b'x' } else { v as u8 }
            }
            other => other,
        });
    }
    String::from_utf8(out).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text() -> CopyFormat {
        CopyFormat {
            csv: false,
            binary: false,
            delimiter: b'\t',
            header: false,
            null: "\\N".into(),
            quote: b'"',
            escape: b'"',
            force_not_null: Vec::new(),
            force_null: Vec::new(),
        }
    }

    #[test]
    fn text_format_fields_nulls_and_escapes() {
        let f = text();
        assert_eq!(
            text_fields("1\t\\N\t\ta\\tb\\\\c\\101\\x41", &f).unwrap(),
            [
                Some("1".into()),
                None,
                Some(String::new()),
                Some("a\tb\\cAA".into())
            ]
        );
        assert!(text_fields("bad\\", &f).is_err());
    }
}
