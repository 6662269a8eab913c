//! `CREATE DATABASE name [WITH] option [=] value …` as PostgreSQL takes it, where the SQL
//! parser takes no options at all (Rails' `db:create` writes `ENCODING = 'utf8'`).
//!
//! An option that says what every pmdb database already is, is taken: UTF8 encoding,
//! the C collation (strings compare by their bytes), the empty templates, the one
//! owner, the default tablespace, connections allowed without a limit. Any other value
//! is refused with 0A000 rather than accepted and ignored.

use datafusion::sql::sqlparser::ast::Statement;
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::Token;

use crate::error::{Result, SqlError};

/// `sql` as a CREATE DATABASE statement with options; `None` for anything else (one
/// without options is the parser's, and one that is not well formed keeps the parser's
/// error).
pub(crate) fn parse(sql: &str) -> Option<Result<Vec<Statement>>> {
    let dialect = PostgreSqlDialect {};
    let mut p = Parser::new(&dialect).try_with_sql(sql).ok()?;
    if !p.parse_keywords(&[Keyword::CREATE, Keyword::DATABASE]) {
        return None;
    }
    let name = p.parse_object_name(false).ok()?;
    let with = p.parse_keyword(Keyword::WITH);
    let mut options = Vec::new();
    loop {
        match p.next_token().token {
            Token::EOF | Token::SemiColon => break,
            Token::Word(w) => {
                let mut option = w.value.to_ascii_uppercase();
                if option == "CONNECTION" {
                    p.parse_keyword(Keyword::LIMIT).then_some(())?;
                    option.push_str(" LIMIT");
                }
                let _ = p.consume_token(&Token::Eq);
                let value = match p.next_token().token {
                    Token::Word(w) => w.value,
                    Token::SingleQuotedString(s) => s,
                    Token::Number(n, _) => n,
                    Token::Minus => match p.next_token().token {
                        Token::Number(n, _) => format!("-{n}"),
                        _ => return None,
                    },
                    _ => return None,
                };
                options.push((option, value));
            }
            _ => return None,
        }
    }
    if options.is_empty() && !with {
        return None;
    }
    Some(
        options
            .iter()
            .try_for_each(|(option, value)| check(option, value))
            .and_then(|()| {
                Parser::parse_sql(&dialect, &format!("CREATE DATABASE {name}"))
                    .map_err(|e| SqlError::user(crate::error::state::SYNTAX, e.to_string()))
            }),
    )
}

/// Whether a database made with `option` = `value` is one pmdb makes.
fn check(option: &str, value: &str) -> Result<()> {
    let v = value.to_ascii_lowercase();
    let taken = match option {
        "ENCODING" => matches!(v.as_str(), "utf8" | "utf-8" | "unicode" | "6"),
        "LOCALE" | "LC_COLLATE" | "LC_CTYPE" => {
            matches!(v.as_str(), "c" | "posix" | "c.utf8" | "c.utf-8")
        }
        "LOCALE_PROVIDER" => v == "libc",
        "TEMPLATE" => matches!(v.as_str(), "template0" | "template1"),
        "OWNER" => value == crate::identity::OWNER,
        "TABLESPACE" => v == "pg_default",
        "ALLOW_CONNECTIONS" => matches!(v.as_str(), "true" | "on" | "1" | "yes"),
        "IS_TEMPLATE" => matches!(v.as_str(), "false" | "off" | "0" | "no"),
        "CONNECTION LIMIT" => v == "-1",
        // How a template is copied: pmdb's are empty.
        "STRATEGY" => matches!(v.as_str(), "wal_log" | "file_copy"),
        _ => false,
    };
    if taken {
        return Ok(());
    }
    Err(SqlError::unsupported(format!(
        "CREATE DATABASE … {option} {value}: a pmdb database is UTF8, compares strings by \
         their bytes (the C locale), starts empty, is owned by {} and takes connections \
         without a limit",
        crate::identity::OWNER
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(sql: &str) -> bool {
        parse(sql).expect("a CREATE DATABASE").is_err()
    }

    #[test]
    fn options_that_name_what_pmdb_makes_are_taken() {
        for sql in [
            "CREATE DATABASE \"app_dev\" ENCODING = 'utf8'",
            "CREATE DATABASE a WITH OWNER = pmdb ENCODING 'UTF8' TEMPLATE template0 \
             LC_COLLATE 'C' LC_CTYPE = 'C.UTF-8' CONNECTION LIMIT = -1;",
            "create database a with is_template false allow_connections true",
        ] {
            let made = parse(sql).expect("a CREATE DATABASE").expect(sql);
            assert!(matches!(
                made.as_slice(),
                [Statement::CreateDatabase { .. }]
            ));
        }
        assert!(parse("CREATE DATABASE a").is_none());
        assert!(parse("CREATE TABLE a (x INT)").is_none());
    }

    #[test]
    fn other_values_are_refused() {
        assert!(refused("CREATE DATABASE a ENCODING 'LATIN1'"));
        assert!(refused("CREATE DATABASE a LC_COLLATE 'en_US.UTF-8'"));
        assert!(refused("CREATE DATABASE a TEMPLATE other"));
        assert!(refused("CREATE DATABASE a OWNER alice"));
        assert!(refused("CREATE DATABASE a CONNECTION LIMIT 5"));
        assert!(refused("CREATE DATABASE a OID 5"));
    }
}
