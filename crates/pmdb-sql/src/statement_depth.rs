//! How deep a statement's expressions can nest, read from its tokens before it is
//! parsed. The parser reads a chain of binary operators (`a = 1 OR a = 2 OR …`,
//! `1 + 1 + …`, `SELECT … UNION SELECT …`) in a loop, but makes of it a tree as deep as
//! the chain is long, and every clone, drop and walk of that tree recurses once per
//! level: a chain of a few thousand overflowed a connection's stack, which aborts the
//! whole server. A statement that could nest deeper than [`MAX_STATEMENT_DEPTH`] is refused with
//! PostgreSQL's 54001 before its tree exists.
//!
//! The bound counts, for each open parenthesis or bracket, the operators and operator
//! keywords read inside it, plus one per level; it is never below the depth of the
//! expressions the parser makes (each level of those needs an operator or a
//! parenthesis).

use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

use crate::error::{Result, SqlError, state};

/// The deepest nesting a statement may have. PostgreSQL, whose parser flattens chains
/// of AND and OR, takes deeper ones; pmdb's planner takes time quadratic in a chain's
/// length (a release build plans a chain of 1,000 ORs in about half a second).
pub const MAX_STATEMENT_DEPTH: usize = 2_000;

/// The stack of a thread that runs statements: five times what a debug build (whose
/// frames are the largest) needs for one nested [`MAX_STATEMENT_DEPTH`] deep
/// (`tests/deep_statements.rs`). It is address space, taken from memory only as deep as
/// a statement goes.
pub const STATEMENT_STACK: usize = 256 << 20;

/// Refuses `sql` if its expressions could nest deeper than [`MAX_STATEMENT_DEPTH`].
pub(crate) fn check(sql: &str) -> Result<()> {
    // Each level takes at least one byte of text: a shorter text cannot be too deep.
    if sql.len() <= MAX_STATEMENT_DEPTH {
        return Ok(());
    }
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize() else {
        // The parser refuses it with the tokenizer's own message.
        return Ok(());
    };
    let depth = bound(&tokens);
    if depth > MAX_STATEMENT_DEPTH {
        return Err(SqlError::user(
            state::STACK_DEPTH,
            format!(
                "stack depth limit exceeded: the statement's expressions nest up to {depth} \
                 levels deep (operators in a chain count one level each); pmdb takes {MAX_STATEMENT_DEPTH}"
            ),
        ));
    }
    Ok(())
}

/// The bound on the nesting of `tokens`' expressions described in the module's comment.
fn bound(tokens: &[Token]) -> usize {
    // The operators counted at each open level, the outermost first.
    let mut levels: Vec<usize> = vec![0];
    let mut open = 1usize; // the sum over `levels` of (count + 1)
    let mut deepest = open;
    for token in tokens {
        match token {
            Token::LParen | Token::LBracket | Token::LBrace => {
                levels.push(0);
                open += 1;
            }
            Token::RParen | Token::RBracket | Token::RBrace => {
                if levels.len() > 1
                    && let Some(count) = levels.pop()
                {
                    open -= count + 1;
                }
            }
            Token::SemiColon => {
                // A statement after it starts from nothing.
                open = 1;
                levels.clear();
                levels.push(0);
            }
            t if operator(t) => {
                if let Some(count) = levels.last_mut() {
                    *count += 1;
                    open += 1;
                }
            }
            _ => {}
        }
        deepest = deepest.max(open);
    }
    deepest
}

/// Whether `token` may join two expressions or wrap one: an operator or one of the
/// keywords that act as one.
fn operator(token: &Token) -> bool {
    match token {
        Token::Word(w) => matches!(
            w.keyword,
            Keyword::AND
                | Keyword::OR
                | Keyword::NOT
                | Keyword::IS
                | Keyword::LIKE
                | Keyword::ILIKE
                | Keyword::SIMILAR
                | Keyword::BETWEEN
                | Keyword::IN
                | Keyword::CASE
                | Keyword::COLLATE
                | Keyword::AT
                | Keyword::UNION
                | Keyword::EXCEPT
                | Keyword::INTERSECT
        ),
        Token::EOF
        | Token::Number(..)
        | Token::Char(_)
        | Token::Whitespace(_)
        | Token::Comma
        | Token::Period
        | Token::Placeholder(_) => false,
        t if literal(t) => false,
        _ => true,
    }
}

/// Whether `token` is a string literal of any quoting.
fn literal(token: &Token) -> bool {
    matches!(
        token,
        Token::SingleQuotedString(_)
            | Token::DoubleQuotedString(_)
            | Token::TripleSingleQuotedString(_)
            | Token::TripleDoubleQuotedString(_)
            | Token::DollarQuotedString(_)
            | Token::SingleQuotedByteStringLiteral(_)
            | Token::DoubleQuotedByteStringLiteral(_)
            | Token::TripleSingleQuotedByteStringLiteral(_)
            | Token::TripleDoubleQuotedByteStringLiteral(_)
            | Token::SingleQuotedRawStringLiteral(_)
            | Token::DoubleQuotedRawStringLiteral(_)
            | Token::TripleSingleQuotedRawStringLiteral(_)
            | Token::TripleDoubleQuotedRawStringLiteral(_)
            | Token::NationalStringLiteral(_)
            | Token::QuoteDelimitedStringLiteral(_)
            | Token::NationalQuoteDelimitedStringLiteral(_)
            | Token::EscapedStringLiteral(_)
            | Token::UnicodeStringLiteral(_)
            | Token::HexStringLiteral(_)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth(sql: &str) -> usize {
        bound(
            &Tokenizer::new(&PostgreSqlDialect {}, sql)
                .tokenize()
                .unwrap(),
        )
    }

    #[test]
    fn a_chain_counts_each_operator_and_a_list_does_not() {
        let chain = (0..100).map(|i| format!("a = {i}")).collect::<Vec<_>>();
        assert_eq!(
            depth(&format!("SELECT 1 WHERE {}", chain.join(" OR "))),
            1 + 199
        );
        let list = (0..100).map(|i| i.to_string()).collect::<Vec<_>>();
        assert_eq!(
            depth(&format!("SELECT 1 WHERE a IN ({})", list.join(", "))),
            3
        );
        // Rows of VALUES are levels of their own, closed one after the other.
        let rows = (0..100).map(|i| format!("({i}, -{i})")).collect::<Vec<_>>();
        assert_eq!(
            depth(&format!("INSERT INTO t VALUES {}", rows.join(", "))),
            3
        );
    }

    #[test]
    fn parentheses_add_their_levels_and_statements_start_anew() {
        assert_eq!(depth("SELECT ((1 + 2) * 3)"), 4);
        assert_eq!(depth("SELECT 1 UNION SELECT 2 UNION SELECT 3"), 3);
        assert_eq!(depth("SELECT 1 + 2 + 3; SELECT 4"), 3);
        assert_eq!(depth("SELECT 'a + b + c', \"x-y\", $1"), 1);
    }

    #[test]
    fn a_statement_deeper_than_the_limit_is_54001() {
        let chain = vec!["a = 1"; MAX_STATEMENT_DEPTH].join(" OR ");
        let err = check(&format!("SELECT 1 FROM t WHERE {chain}")).unwrap_err();
        assert_eq!(err.sqlstate(), state::STACK_DEPTH);
        assert!(
            err.to_string().contains("stack depth limit exceeded"),
            "{err}"
        );
        let list = vec!["1"; 4 * MAX_STATEMENT_DEPTH].join(", ");
        check(&format!("SELECT 1 FROM t WHERE a IN ({list})")).unwrap();
    }
}
