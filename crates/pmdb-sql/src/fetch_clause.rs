//! The SQL standard's `FETCH FIRST | NEXT [n] ROW | ROWS ONLY`, as the LIMIT it means
//! (DataFusion plans no FETCH clause): [`as_limit`] rewrites it in every query of a
//! statement, and [`rewrite_parenthesized`] spells `FETCH FIRST (expr) ROWS ONLY`,
//! which SQLAlchemy writes and the parser does not read, as `LIMIT (expr)` before
//! parsing. `WITH TIES` and `PERCENT` are refused with 0A000.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, LimitClause, Query, Statement, Value, VisitMut, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer, Whitespace};

use crate::error::{Result, SqlError, state};

/// Rewrites each FETCH clause of `statement` as a LIMIT.
pub(crate) fn as_limit(statement: &mut Statement) -> Result<()> {
    match statement.visit(&mut FetchAsLimit) {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

struct FetchAsLimit;

impl VisitorMut for FetchAsLimit {
    type Break = SqlError;

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<SqlError> {
        let Some(fetch) = query.fetch.take() else {
            return ControlFlow::Continue(());
        };
        if fetch.with_ties || fetch.percent {
            return ControlFlow::Break(SqlError::unsupported("FETCH FIRST … WITH TIES or PERCENT"));
        }
        let count = fetch
            .quantity
            .unwrap_or_else(|| Expr::value(Value::Number("1".into(), false)));
        query.limit_clause = Some(match query.limit_clause.take() {
            None => LimitClause::LimitOffset {
                limit: Some(count),
                offset: None,
                limit_by: Vec::new(),
            },
            Some(LimitClause::LimitOffset {
                limit: None,
                offset,
                limit_by,
            }) => LimitClause::LimitOffset {
                limit: Some(count),
                offset,
                limit_by,
            },
            Some(_) => {
                return ControlFlow::Break(SqlError::user(
                    state::SYNTAX,
                    "multiple LIMIT clauses not allowed",
                ));
            }
        });
        ControlFlow::Continue(())
    }
}

/// `sql` with each `FETCH FIRST | NEXT ( … ) ROW | ROWS ONLY` written `LIMIT ( … )`,
/// parsed; `None` if it has none or does not parse so either.
pub(crate) fn rewrite_parenthesized(sql: &str) -> Option<Vec<Statement>> {
    let dialect = PostgreSqlDialect {};
    let tokens = Tokenizer::new(&dialect, sql).tokenize().ok()?;
    let significant: Vec<(usize, &Token)> = tokens
        .iter()
        .enumerate()
        .filter(|(_, t)| !matches!(t, Token::Whitespace(_)))
        .collect();
    let keyword = |k: usize| match significant.get(k) {
        Some((_, Token::Word(w))) => Some(w.keyword),
        _ => None,
    };
    // Token positions to drop, and where `LIMIT` goes.
    let mut dropped = Vec::new();
    let mut limits = Vec::new();
    let mut k = 0;
    while k < significant.len() {
        let opens = keyword(k) == Some(Keyword::FETCH)
            && matches!(keyword(k + 1), Some(Keyword::FIRST | Keyword::NEXT))
            && matches!(significant.get(k + 2), Some((_, Token::LParen)));
        if !opens {
            k += 1;
            continue;
        }
        let mut depth = 0usize;
        let mut end = k + 2;
        while let Some((_, t)) = significant.get(end) {
            match t {
                Token::LParen => depth += 1,
                Token::RParen => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                break;
            }
            end += 1;
        }
        let closes = matches!(keyword(end + 1), Some(Keyword::ROW | Keyword::ROWS))
            && keyword(end + 2) == Some(Keyword::ONLY);
        if !closes {
            k += 1;
            continue;
        }
        limits.push(significant[k].0);
        dropped.extend([
            significant[k + 1].0,
            significant[end + 1].0,
            significant[end + 2].0,
        ]);
        k = end + 3;
    }
    if limits.is_empty() {
        return None;
    }
    let rewritten: Vec<Token> = tokens
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            if limits.contains(&i) {
                Token::make_keyword("LIMIT")
            } else if dropped.contains(&i) {
                Token::Whitespace(Whitespace::Space)
            } else {
                t
            }
        })
        .collect();
    Parser::new(&dialect)
        .with_tokens(rewritten)
        .parse_statements()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limited(sql: &str) -> String {
        let mut statement = match Parser::parse_sql(&PostgreSqlDialect {}, sql) {
            Ok(mut s) => s.remove(0),
            Err(_) => rewrite_parenthesized(sql).unwrap().remove(0),
        };
        as_limit(&mut statement).unwrap();
        statement.to_string()
    }

    #[test]
    fn fetch_becomes_limit() {
        assert_eq!(
            limited("SELECT a FROM t ORDER BY a FETCH FIRST 2 ROWS ONLY"),
            "SELECT a FROM t ORDER BY a LIMIT 2"
        );
        assert_eq!(
            limited("SELECT a FROM t OFFSET 1 ROWS FETCH NEXT ROW ONLY"),
            "SELECT a FROM t LIMIT 1 OFFSET 1 ROWS"
        );
        assert_eq!(
            limited("SELECT a FROM t FETCH FIRST ($1::INTEGER) ROWS ONLY"),
            "SELECT a FROM t LIMIT ($1::INTEGER)"
        );
        assert_eq!(
            limited("SELECT (SELECT b FROM u FETCH FIRST 1 ROW ONLY) FROM t"),
            "SELECT (SELECT b FROM u LIMIT 1) FROM t"
        );
    }

    #[test]
    fn ties_and_percent_are_refused() {
        for sql in [
            "SELECT a FROM t ORDER BY a FETCH FIRST 2 ROWS WITH TIES",
            "SELECT a FROM t FETCH FIRST 20 PERCENT ROWS ONLY",
        ] {
            let mut statement = Parser::parse_sql(&PostgreSqlDialect {}, sql)
                .unwrap()
                .remove(0);
            let e = as_limit(&mut statement).unwrap_err();
            assert_eq!(e.sqlstate(), state::FEATURE_NOT_SUPPORTED, "{sql}");
        }
    }
}
