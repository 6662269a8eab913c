//! The SQL standard's `FETCH FIRST | NEXT [n] ROW | ROWS ONLY`, as the LIMIT it means
//! (DataFusion plans no FETCH clause): [`as_limit`] rewrites it in every query of a
//! statement, and [`rewrite_parenthesized`] spells `FETCH FIRST (expr) ROWS ONLY`,
//! which SQLAlchemy writes and the parser does not read, as `LIMIT (expr)` before
//! parsing. `WITH TIES` keeps the rows that tie with the last one in the ORDER BY: the
//! query is numbered (`row_number()`) and ranked (`rank()`) in that order and cut where
//! the rank passes OFFSET + FETCH (a row of rank r has fewer than r rows before it, so
//! those within the cut are the first rows and every tie of the last). `PERCENT` is
//! refused with 0A000.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    ExcludeSelectItem, Expr, Ident, LimitClause, ObjectName, OrderByKind, Query, SelectItem,
    SetExpr, Statement, TableFactor, TableWithJoins, Value, VisitMut, VisitorMut,
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
        if fetch.percent {
            return ControlFlow::Break(SqlError::unsupported("FETCH FIRST … PERCENT"));
        }
        let count = fetch
            .quantity
            .unwrap_or_else(|| Expr::value(Value::Number("1".into(), false)));
        if fetch.with_ties {
            return match with_ties(query, count) {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => ControlFlow::Break(e),
            };
        }
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

const ROW_NUMBER: &str = "__pmdb_row_number";
const RANK: &str = "__pmdb_rank";

/// Rewrites `query`, whose FETCH takes `count` rows WITH TIES, into the numbered and
/// ranked query its rows are cut from (see the module's comment).
fn with_ties(query: &mut Query, count: Expr) -> Result<()> {
    let Some(order_by) = query.order_by.take() else {
        return Err(SqlError::user(
            state::SYNTAX,
            "WITH TIES cannot be specified without ORDER BY clause",
        ));
    };
    let OrderByKind::Expressions(keys) = &order_by.kind else {
        return Err(SqlError::unsupported("FETCH … WITH TIES with ORDER BY ALL"));
    };
    if !query.locks.is_empty() {
        return Err(SqlError::unsupported(
            "FETCH … WITH TIES with a locking clause",
        ));
    }
    let SetExpr::Select(select) = query.body.as_mut() else {
        return Err(SqlError::unsupported(
            "FETCH … WITH TIES of a set operation",
        ));
    };
    let offset = match query.limit_clause.take() {
        None => None,
        Some(LimitClause::LimitOffset {
            limit: None,
            offset,
            limit_by,
        }) if limit_by.is_empty() => offset.map(|o| o.value),
        Some(_) => {
            return Err(SqlError::user(
                state::SYNTAX,
                "multiple LIMIT clauses not allowed",
            ));
        }
    };
    let keys: Vec<String> = keys.iter().map(ToString::to_string).collect();
    let keys = keys.join(", ");
    let parse_expr = |text: &str| {
        Parser::new(&PostgreSqlDialect {})
            .try_with_sql(text)
            .and_then(|mut p| p.parse_expr())
            .map_err(|e| SqlError::user(state::SYNTAX, e.to_string()))
    };
    for (function, alias) in [("row_number", ROW_NUMBER), ("rank", RANK)] {
        select.projection.push(SelectItem::ExprWithAlias {
            expr: parse_expr(&format!("{function}() OVER (ORDER BY {keys})"))?,
            alias: Ident::new(alias),
        });
    }
    let skipped = offset.map_or_else(|| "0".to_owned(), |o| format!("({o})"));
    let outer = format!(
        "SELECT * FROM (SELECT 1) AS __pmdb_ties WHERE {ROW_NUMBER} > {skipped} \
         AND {RANK} <= {skipped} + ({count}) ORDER BY {ROW_NUMBER}"
    );
    let mut outer = Parser::new(&PostgreSqlDialect {})
        .try_with_sql(&outer)
        .and_then(|mut p| p.parse_query())
        .map_err(|e| SqlError::user(state::SYNTAX, e.to_string()))?;
    let inner = Query {
        with: None,
        body: std::mem::replace(&mut query.body, outer.body.clone()),
        order_by: None,
        limit_clause: None,
        fetch: None,
        locks: Vec::new(),
        for_clause: None,
        settings: None,
        format_clause: None,
        pipe_operators: Vec::new(),
    };
    if let SetExpr::Select(s) = outer.body.as_mut() {
        if let Some(TableWithJoins {
            relation: TableFactor::Derived { subquery, .. },
            ..
        }) = s.from.first_mut()
        {
            **subquery = inner;
        }
        if let Some(SelectItem::Wildcard(options)) = s.projection.first_mut() {
            options.opt_exclude = Some(ExcludeSelectItem::Multiple(vec![
                ObjectName::from(vec![Ident::new(ROW_NUMBER)]),
                ObjectName::from(vec![Ident::new(RANK)]),
            ]));
        }
    }
    query.body = outer.body;
    query.order_by = outer.order_by;
    Ok(())
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
    // WITH TIES counts: the tokens of each, and the expression.
    let mut counts: Vec<(usize, usize, Expr)> = Vec::new();
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
        let rows = matches!(keyword(end + 1), Some(Keyword::ROW | Keyword::ROWS));
        if rows
            && keyword(end + 2) == Some(Keyword::WITH)
            && keyword(end + 3) == Some(Keyword::TIES)
        {
            // The count is parsed on its own, put where a marker stands in the text.
            let inner: String = tokens[significant[k + 2].0 + 1..significant[end].0]
                .iter()
                .map(ToString::to_string)
                .collect();
            let count = Parser::new(&dialect)
                .try_with_sql(&inner)
                .and_then(|mut p| p.parse_expr())
                .ok()?;
            counts.push((significant[k + 2].0, significant[end].0, count));
            k = end + 4;
            continue;
        }
        let closes = rows && keyword(end + 2) == Some(Keyword::ONLY);
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
    if limits.is_empty() && counts.is_empty() {
        return None;
    }
    let marker = |n: usize| format!("{COUNT_MARKER}{n}");
    let rewritten: Vec<Token> = tokens
        .into_iter()
        .enumerate()
        .filter_map(|(i, t)| {
            if let Some(n) = counts.iter().position(|(from, _, _)| *from == i) {
                Some(Token::SingleQuotedString(marker(n)))
            } else if counts
                .iter()
                .any(|(from, to, _)| (*from..=*to).contains(&i))
            {
                None
            } else if limits.contains(&i) {
                Some(Token::make_keyword("LIMIT"))
            } else if dropped.contains(&i) {
                Some(Token::Whitespace(Whitespace::Space))
            } else {
                Some(t)
            }
        })
        .collect();
    let mut statements = Parser::new(&dialect)
        .with_tokens(rewritten)
        .parse_statements()
        .ok()?;
    let mut counts: Vec<Option<Expr>> = counts.into_iter().map(|(_, _, e)| Some(e)).collect();
    for s in &mut statements {
        let _ = s.visit(&mut PutCounts {
            counts: &mut counts,
            marker: &marker,
        });
    }
    counts.iter().all(Option::is_none).then_some(statements)
}

/// What stands for a parenthesized WITH TIES count in the text parsed, numbered.
const COUNT_MARKER: &str = "__pmdb_fetch_count_";

/// Puts each WITH TIES count back where its marker stands.
struct PutCounts<'a, F: Fn(usize) -> String> {
    counts: &'a mut Vec<Option<Expr>>,
    marker: &'a F,
}

impl<F: Fn(usize) -> String> VisitorMut for PutCounts<'_, F> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        if let Some(fetch) = &mut query.fetch
            && let Some(Expr::Value(v)) = &fetch.quantity
            && let Value::SingleQuotedString(m) = &v.value
            && let Some(n) = (0..self.counts.len()).find(|&n| *m == (self.marker)(n))
        {
            fetch.quantity = self.counts[n].take();
        }
        ControlFlow::Continue(())
    }
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
    fn ties_are_numbered_and_ranked() {
        assert_eq!(
            limited(
                "SELECT a FROM t ORDER BY a DESC OFFSET 1 FETCH FIRST ($1::INTEGER) ROWS WITH TIES"
            ),
            "SELECT * EXCLUDE (__pmdb_row_number, __pmdb_rank) FROM (SELECT a, \
             row_number() OVER (ORDER BY a DESC) AS __pmdb_row_number, \
             rank() OVER (ORDER BY a DESC) AS __pmdb_rank FROM t) AS __pmdb_ties \
             WHERE __pmdb_row_number > (1) AND __pmdb_rank <= (1) + ($1::INTEGER) \
             ORDER BY __pmdb_row_number"
        );
    }

    #[test]
    fn percent_and_ties_without_order_are_refused() {
        for (sql, state) in [
            (
                "SELECT a FROM t FETCH FIRST 2 ROWS WITH TIES",
                state::SYNTAX,
            ),
            (
                "SELECT a FROM t FETCH FIRST 20 PERCENT ROWS ONLY",
                state::FEATURE_NOT_SUPPORTED,
            ),
        ] {
            let mut statement = Parser::parse_sql(&PostgreSqlDialect {}, sql)
                .unwrap()
                .remove(0);
            let e = as_limit(&mut statement).unwrap_err();
            assert_eq!(e.sqlstate(), state, "{sql}");
        }
    }
}
