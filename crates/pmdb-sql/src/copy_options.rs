//! The options of COPY, read in one place for COPY … FROM STDIN and COPY … FROM a file:
//! `WITH (FORMAT …, HEADER, DELIMITER …, NULL …, FREEZE)` and the older unparenthesized
//! forms (`CSV HEADER`, `DELIMITER ','`, `NULL ''`). Each reader applies its own
//! defaults to what the statement leaves unset and refuses what it cannot honour.

use datafusion::sql::sqlparser::ast::{CopyLegacyCsvOption, CopyLegacyOption, CopyOption};

use crate::error::{Result, SqlError};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Encoding {
    Text,
    Csv,
    /// PostgreSQL's binary COPY format.
    Binary,
    /// A Parquet file (pmdb's own; files only).
    Parquet,
}

/// What a COPY statement says of its data; `None` where it says nothing.
#[derive(Debug, Default)]
pub(crate) struct CopyOptions {
    pub encoding: Option<Encoding>,
    pub delimiter: Option<u8>,
    pub header: bool,
    pub null: Option<String>,
}

fn delimiter(c: char) -> Result<u8> {
    u8::try_from(c)
        .ok()
        .filter(u8::is_ascii)
        .ok_or_else(|| SqlError::unsupported(format!("delimiter {c:?}: one ASCII character")))
}

fn refused(option: impl std::fmt::Display) -> SqlError {
    SqlError::unsupported(format!("COPY option {option}"))
}

impl CopyOptions {
    pub(crate) fn parse(options: &[CopyOption], legacy: &[CopyLegacyOption]) -> Result<Self> {
        let mut o = CopyOptions::default();
        for option in options {
            match option {
                CopyOption::Format(name) => {
                    o.encoding = Some(match name.value.to_lowercase().as_str() {
                        "text" => Encoding::Text,
                        "csv" => Encoding::Csv,
                        "binary" => Encoding::Binary,
                        "parquet" => Encoding::Parquet,
                        other => {
                            return Err(SqlError::unsupported(format!("COPY format {other}")));
                        }
                    })
                }
                CopyOption::Header(h) => o.header = *h,
                CopyOption::Delimiter(c) => o.delimiter = Some(delimiter(*c)?),
                CopyOption::Null(n) => o.null = Some(n.clone()),
                // Rows are visible to others only once committed anyway.
                CopyOption::Freeze(_) => {}
                other => return Err(refused(other)),
            }
        }
        for option in legacy {
            match option {
                CopyLegacyOption::Csv(csv) => {
                    o.encoding = Some(Encoding::Csv);
                    for c in csv {
                        match c {
                            CopyLegacyCsvOption::Header => o.header = true,
                            other => return Err(refused(other)),
                        }
                    }
                }
                CopyLegacyOption::Header => o.header = true,
                CopyLegacyOption::Binary => o.encoding = Some(Encoding::Binary),
                CopyLegacyOption::Delimiter(c) => o.delimiter = Some(delimiter(*c)?),
                CopyLegacyOption::Null(n) => o.null = Some(n.clone()),
                other => return Err(refused(other)),
            }
        }
        Ok(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::ast::Statement;

    fn options(sql: &str) -> Result<CopyOptions> {
        let s = crate::session::parse(sql).unwrap().pop_front().unwrap();
        let datafusion::sql::parser::Statement::Statement(s) = s else {
            panic!("{sql}: not a SQL statement");
        };
        let Statement::Copy {
            options,
            legacy_options,
            ..
        } = *s
        else {
            panic!("{sql}: not COPY");
        };
        CopyOptions::parse(&options, &legacy_options)
    }

    #[test]
    fn both_option_syntaxes_say_the_same() {
        let new = options("COPY t FROM STDIN WITH (FORMAT csv, HEADER, DELIMITER ';', NULL 'x')")
            .unwrap();
        let old = options("COPY t FROM STDIN DELIMITER ';' NULL 'x' CSV HEADER").unwrap();
        for o in [new, old] {
            assert_eq!(o.encoding, Some(Encoding::Csv));
            assert_eq!((o.delimiter, o.header), (Some(b';'), true));
            assert_eq!(o.null.as_deref(), Some("x"));
        }
        let none = options("COPY t FROM STDIN").unwrap();
        assert_eq!(
            (none.encoding, none.delimiter, none.null),
            (None, None, None)
        );
        let binary = options("COPY t TO STDOUT WITH (FORMAT binary)").unwrap();
        assert_eq!(binary.encoding, Some(Encoding::Binary));
        let e = options("COPY t FROM STDIN WITH (FORMAT xml)").unwrap_err();
        assert_eq!(e.sqlstate(), "0A000");
    }
}
