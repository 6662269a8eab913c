//! The tokens of a statement the parser does not know, read by hand where pmdb gives it
//! a parsed form of its own (COMMENT ON CONSTRAINT, REFRESH MATERIALIZED VIEW).

use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

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
