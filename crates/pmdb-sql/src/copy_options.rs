//! The options of COPY, read in one place for COPY … FROM STDIN, COPY … FROM a file and
//! COPY … TO STDOUT: `WITH (FORMAT …, HEADER, DELIMITER …, NULL …, QUOTE …, ESCAPE …,
//! FORCE_QUOTE (…), FORCE_NOT_NULL (…), FORCE_NULL (…), ENCODING 'UTF8', FREEZE)` and
//! the older unparenthesized forms (`CSV HEADER QUOTE '*'`, `DELIMITER ','`, `NULL ''`).
//! The CSV options outside CSV, and each FORCE option the other way, are refused as in
//! PostgreSQL; each reader applies its own defaults to what the statement leaves unset
//! and refuses what it cannot honour.

use datafusion::sql::sqlparser::ast::{CopyLegacyCsvOption, CopyLegacyOption, CopyOption, Ident};

use crate::error::{Result, SqlError};
use crate::names::ident_name;

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
    /// CSV's quote and escape characters.
    pub quote: Option<u8>,
    pub escape: Option<u8>,
    /// Columns CSV always quotes (COPY TO).
    pub force_quote: Vec<String>,
    /// Columns whose unquoted NULL text is that text (COPY FROM).
    pub force_not_null: Vec<String>,
    /// Columns whose quoted NULL text is NULL too (COPY FROM).
    pub force_null: Vec<String>,
}

fn columns(list: &[Ident]) -> Vec<String> {
    list.iter().map(ident_name).collect()
}

/// A one-byte character option (QUOTE, ESCAPE).
fn single_byte(option: &str, c: char) -> Result<u8> {
    u8::try_from(c)
        .ok()
        .filter(u8::is_ascii)
        .ok_or_else(|| SqlError::unsupported(format!("COPY {option} {c:?}: one ASCII character")))
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
                CopyOption::Quote(c) => o.quote = Some(single_byte("quote", *c)?),
                CopyOption::Escape(c) => o.escape = Some(single_byte("escape", *c)?),
                CopyOption::ForceQuote(list) => o.force_quote = columns(list),
                CopyOption::ForceNotNull(list) => o.force_not_null = columns(list),
                CopyOption::ForceNull(list) => o.force_null = columns(list),
                CopyOption::Encoding(e) => utf8(e)?,
                // Rows are visible to others only once committed anyway.
                CopyOption::Freeze(_) => {}
            }
        }
        for option in legacy {
            match option {
                CopyLegacyOption::Csv(csv) => {
                    o.encoding = Some(Encoding::Csv);
                    for c in csv {
                        match c {
                            CopyLegacyCsvOption::Header => o.header = true,
                            CopyLegacyCsvOption::Quote(c) => {
                                o.quote = Some(single_byte("quote", *c)?)
                            }
                            CopyLegacyCsvOption::Escape(c) => {
                                o.escape = Some(single_byte("escape", *c)?)
                            }
                            CopyLegacyCsvOption::ForceQuote(list) => o.force_quote = columns(list),
                            CopyLegacyCsvOption::ForceNotNull(list) => {
                                o.force_not_null = columns(list)
                            }
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
        o.check_csv_options()?;
        Ok(o)
    }

    /// Refuses CSV's options in another format, as PostgreSQL does (0A000 there too).
    fn check_csv_options(&self) -> Result<()> {
        if self.encoding == Some(Encoding::Csv) {
            return Ok(());
        }
        let given = [
            ("quote", self.quote.is_some()),
            ("escape", self.escape.is_some()),
            ("force quote", !self.force_quote.is_empty()),
            ("force not null", !self.force_not_null.is_empty()),
            ("force null", !self.force_null.is_empty()),
        ];
        match given.iter().find(|(_, set)| *set) {
            Some((name, _)) => Err(SqlError::unsupported(format!(
                "COPY {name} available only in CSV mode"
            ))),
            None => Ok(()),
        }
    }

    /// Refuses what only a COPY the other way takes: FORCE_QUOTE in a COPY FROM,
    /// FORCE_NOT_NULL and FORCE_NULL in a COPY TO.
    pub(crate) fn check_direction(&self, to: bool) -> Result<()> {
        let wrong = match to {
            false => (!self.force_quote.is_empty()).then_some("force quote"),
            true => (!self.force_not_null.is_empty())
                .then_some("force not null")
                .or((!self.force_null.is_empty()).then_some("force null")),
        };
        match wrong {
            Some(name) => Err(SqlError::unsupported(format!(
                "COPY {name} only available using COPY {}",
                if to { "FROM" } else { "TO" }
            ))),
            None => Ok(()),
        }
    }
}

/// ENCODING: pmdb reads and writes UTF-8 only.
fn utf8(encoding: &str) -> Result<()> {
    let name = encoding.to_ascii_lowercase().replace(['-', '_'], "");
    match name.as_str() {
        "utf8" | "unicode" => Ok(()),
        _ => Err(SqlError::unsupported(format!(
            "COPY encoding {encoding:?}: pmdb reads and writes UTF8"
        ))),
    }
}

/// Each of `force`'s columns, 42P10 for one `columns` (what the COPY reads or writes)
/// lacks.
pub(crate) fn check_listed(option: &str, force: &[String], columns: &[String]) -> Result<()> {
    match force.iter().find(|f| !columns.contains(f)) {
        Some(missing) => Err(SqlError::user(
            "42P10",
            format!("{option} column \"{missing}\" not referenced by COPY"),
        )),
        None => Ok(()),
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

    #[test]
    fn csv_options_are_read_in_both_syntaxes_and_only_for_csv() {
        let new = options(
            "COPY t TO STDOUT WITH (FORMAT csv, QUOTE '*', ESCAPE '!', FORCE_QUOTE (\"A\", b), \
             ENCODING 'utf-8')",
        )
        .unwrap();
        let old =
            options("COPY t TO STDOUT CSV QUOTE '*' ESCAPE '!' FORCE QUOTE \"A\", b").unwrap();
        for o in [new, old] {
            assert_eq!((o.quote, o.escape), (Some(b'*'), Some(b'!')));
            assert_eq!(o.force_quote, ["A", "b"]);
            o.check_direction(true).unwrap();
            assert_eq!(o.check_direction(false).unwrap_err().sqlstate(), "0A000");
        }
        let from =
            options("COPY t FROM STDIN (FORMAT csv, FORCE_NOT_NULL (a), FORCE_NULL (b))").unwrap();
        assert_eq!(
            (from.force_not_null, from.force_null),
            (vec!["a".to_owned()], vec!["b".to_owned()])
        );
        for refused in [
            "COPY t FROM STDIN (QUOTE '*')",
            "COPY t TO STDOUT (FORMAT text, FORCE_QUOTE (a))",
            "COPY t FROM STDIN (FORMAT csv, ENCODING 'LATIN1')",
        ] {
            assert_eq!(
                options(refused).unwrap_err().sqlstate(),
                "0A000",
                "{refused}"
            );
        }
    }
}
