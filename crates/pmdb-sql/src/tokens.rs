//! The tokens of a statement the parser does not know, read by hand where pmdb gives it
//! a parsed form of its own (COMMENT ON CONSTRAINT, REFRESH MATERIALIZED VIEW, a DO
//! block's body), with where each stands in the text where that matters.

use std::ops::Range;

use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::tokenizer::{Location, Token, Tokenizer};

/// A token and where it stands in its text.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Located {
    pub token: Token,
    /// Its bytes in the text.
    pub bytes: Range<usize>,
    /// Its line, from 1.
    pub line: u64,
}

/// The tokens of `sql` without white space and comments, each with where it stands;
/// `None` if it does not tokenize.
pub(crate) fn located(sql: &str) -> Option<Vec<Located>> {
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql)
        .tokenize_with_location()
        .ok()?;
    // A location (line and column, from 1, in characters) as a byte offset.
    let lines: Vec<usize> = std::iter::once(0)
        .chain(sql.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let offset = |at: Location| -> Option<usize> {
        let start = *lines.get(usize::try_from(at.line).ok()?.checked_sub(1)?)?;
        let column = usize::try_from(at.column).ok()?.checked_sub(1)?;
        let within = sql[start..]
            .char_indices()
            .map(|(i, _)| i)
            .chain(std::iter::once(sql.len() - start))
            .nth(column)?;
        Some(start + within)
    };
    tokens
        .into_iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .map(|t| {
            Some(Located {
                bytes: offset(t.span.start)?..offset(t.span.end)?,
                line: t.span.start.line,
                token: t.token,
            })
        })
        .collect()
}

/// The tokens of `sql` without white space and a closing semicolon; `None` if it does
/// not tokenize.
pub(crate) fn significant(sql: &str) -> Option<Vec<Token>> {
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let mut words: Vec<Token> = tokens
        .into_iter()
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .collect();
    if words.last() == Some(&Token::SemiColon) {
        words.pop();
    }
    Some(words)
}
