//! `REFRESH MATERIALIZED VIEW [CONCURRENTLY] name [WITH DATA]` as a statement: the
//! parser knows none, so [`parse`] reads it into the statement of the same meaning it
//! does know, Snowflake's `ALTER DYNAMIC TABLE name REFRESH`, which [`of_statement`]
//! recognises. [`crate::create_as::refresh`] runs it.

use datafusion::sql::sqlparser::ast::helpers::attached_token::AttachedToken;
use datafusion::sql::sqlparser::ast::{
    AlterTable, AlterTableOperation, AlterTableType, Ident, ObjectName, Statement,
};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::Token;

/// What marks CONCURRENTLY in the parsed statement.
const CONCURRENTLY: &str = "CONCURRENTLY";

/// A REFRESH MATERIALIZED VIEW statement.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Refresh {
    pub name: ObjectName,
    pub concurrently: bool,
}

/// `sql` as one REFRESH MATERIALIZED VIEW statement, if it is one. `WITH NO DATA`
/// parses, to be refused when it runs.
pub(crate) fn parse(sql: &str) -> Option<Vec<Statement>> {
    let words = crate::tokens::significant(sql)?;
    let keyword = |t: &Token, k: Keyword| matches!(t, Token::Word(w) if w.keyword == k && w.quote_style.is_none());
    let [refresh, materialized, view, rest @ ..] = words.as_slice() else {
        return None;
    };
    if !(keyword(refresh, Keyword::REFRESH)
        && keyword(materialized, Keyword::MATERIALIZED)
        && keyword(view, Keyword::VIEW))
    {
        return None;
    }
    let (concurrently, rest) = match rest {
        [first, rest @ ..] if keyword(first, Keyword::CONCURRENTLY) => (true, rest),
        _ => (false, rest),
    };
    // The name: words with periods between them, then WITH [NO] DATA perhaps.
    let mut parts = Vec::new();
    let mut at = 0;
    while let Some(Token::Word(w)) = rest.get(at) {
        parts.push(match w.quote_style {
            Some(q) => Ident::with_quote(q, w.value.as_str()),
            None => Ident::new(w.value.as_str()),
        });
        at += 1;
        if rest.get(at) != Some(&Token::Period) {
            break;
        }
        at += 1;
    }
    let with_data = match &rest[at.min(rest.len())..] {
        [] => true,
        [with, data] if keyword(with, Keyword::WITH) && keyword(data, Keyword::DATA) => true,
        [with, no, data]
            if keyword(with, Keyword::WITH)
                && keyword(no, Keyword::NO)
                && keyword(data, Keyword::DATA) =>
        {
            false
        }
        _ => return None,
    };
    if parts.is_empty() {
        return None;
    }
    let mut subpath = concurrently.then(|| CONCURRENTLY.to_owned());
    if !with_data {
        // No materialized view is left unpopulated: refused when it runs.
        subpath = Some("WITH NO DATA".to_owned());
    }
    Some(vec![Statement::AlterTable(AlterTable {
        name: ObjectName::from(parts),
        if_exists: false,
        only: false,
        operations: vec![AlterTableOperation::Refresh { subpath }],
        location: None,
        on_cluster: None,
        table_type: Some(AlterTableType::Dynamic),
        end_token: AttachedToken::empty(),
    })])
}

/// The REFRESH `s` is, if it is one: `Err` (0A000) for `WITH NO DATA`, which pmdb
/// cannot honour (its materialized views always hold their rows).
pub(crate) fn of_statement(s: &Statement) -> Option<crate::error::Result<Refresh>> {
    let Statement::AlterTable(AlterTable {
        name,
        operations,
        table_type: Some(AlterTableType::Dynamic),
        ..
    }) = s
    else {
        return None;
    };
    let [AlterTableOperation::Refresh { subpath }] = operations.as_slice() else {
        return None;
    };
    Some(match subpath.as_deref() {
        None => Ok(Refresh {
            name: name.clone(),
            concurrently: false,
        }),
        Some(CONCURRENTLY) => Ok(Refresh {
            name: name.clone(),
            concurrently: true,
        }),
        Some(_) => Err(crate::error::SqlError::unsupported(
            "REFRESH MATERIALIZED VIEW … WITH NO DATA (pmdb's materialized views always hold \
             their rows)",
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refresh(sql: &str) -> Option<Refresh> {
        let statements = parse(sql)?;
        of_statement(&statements[0]).map(|r| r.unwrap())
    }

    #[test]
    fn refresh_statements_are_read() {
        let r = refresh("REFRESH MATERIALIZED VIEW s.\"Mv\";").unwrap();
        assert_eq!(r.name.to_string(), "s.\"Mv\"");
        assert!(!r.concurrently);
        let r = refresh("refresh materialized view concurrently mv with data").unwrap();
        assert_eq!(r.name.to_string(), "mv");
        assert!(r.concurrently);
        let no_data = parse("REFRESH MATERIALIZED VIEW mv WITH NO DATA").unwrap();
        assert_eq!(
            of_statement(&no_data[0]).unwrap().unwrap_err().sqlstate(),
            "0A000"
        );
        assert!(parse("REFRESH MATERIALIZED VIEW").is_none());
        assert!(parse("REFRESH MATERIALIZED VIEW mv junk").is_none());
        assert!(parse("REFRESH VIEW mv").is_none());
        let other = datafusion::sql::sqlparser::parser::Parser::parse_sql(
            &datafusion::sql::sqlparser::dialect::PostgreSqlDialect {},
            "ALTER TABLE t ADD COLUMN c INT",
        )
        .unwrap();
        assert!(of_statement(&other[0]).is_none());
    }
}
