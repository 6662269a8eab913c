//! `SELECT` with no select list, which PostgreSQL takes (`SELECT FROM t WHERE … FOR
//! UPDATE` to lock rows without reading them, `EXISTS (SELECT FROM …)`, `SELECT;`) and
//! the parser does not: each such SELECT is parsed with a marker column in its place,
//! which [`parse`] then takes out, leaving a select list of no column. Such a query
//! returns its rows with no column in them, as PostgreSQL's does.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, Query, SelectItem, SetExpr, Statement, Value, VisitMut, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer, Whitespace};

/// The marker column's name: no statement a client sends parses with it standing alone
/// right after a SELECT, since that SELECT is one the parser refuses.
const MARKER: &str = "__pmdb_no_columns__";

/// The statements of `sql` if it holds a SELECT with no select list and parses with
/// one in its place; `None` otherwise.
pub(crate) fn parse(sql: &str) -> Option<Vec<Statement>> {
    let dialect = PostgreSqlDialect {};
    let tokens = Tokenizer::new(&dialect, sql).tokenize().ok()?;
    let mut rewritten = Vec::with_capacity(tokens.len() + 8);
    let mut marked = false;
    for (i, token) in tokens.iter().enumerate() {
        rewritten.push(token.clone());
        let is_select = matches!(token, Token::Word(w) if w.keyword == Keyword::SELECT);
        if is_select && ends_select_list(tokens[i + 1..].iter()) {
            rewritten.extend([
                Token::Whitespace(Whitespace::Space),
                Token::make_keyword("NULL"),
                Token::Whitespace(Whitespace::Space),
                Token::make_keyword("AS"),
                Token::Whitespace(Whitespace::Space),
                Token::make_word(MARKER, None),
                Token::Whitespace(Whitespace::Space),
            ]);
            marked = true;
        }
    }
    if !marked {
        return None;
    }
    let mut statements = Parser::new(&dialect)
        .with_tokens(rewritten)
        .parse_statements()
        .ok()?;
    for s in &mut statements {
        let _ = s.visit(&mut TakeMarkers);
    }
    Some(statements)
}

/// Whether the first significant token of `rest` ends a select list before any item.
fn ends_select_list<'a>(mut rest: impl Iterator<Item = &'a Token>) -> bool {
    match rest.find(|t| !matches!(t, Token::Whitespace(_))) {
        None | Some(Token::SemiColon | Token::RParen | Token::EOF) => true,
        Some(Token::Word(w)) => {
            matches!(
                w.keyword,
                Keyword::FROM
                    | Keyword::WHERE
                    | Keyword::GROUP
                    | Keyword::HAVING
                    | Keyword::WINDOW
                    | Keyword::ORDER
                    | Keyword::LIMIT
                    | Keyword::OFFSET
                    | Keyword::FETCH
                    | Keyword::FOR
                    | Keyword::UNION
                    | Keyword::INTERSECT
                    | Keyword::EXCEPT
            ) && w.quote_style.is_none()
        }
        Some(_) => false,
    }
}

struct TakeMarkers;

impl VisitorMut for TakeMarkers {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        take_marker(&mut query.body);
        ControlFlow::Continue(())
    }
}

fn take_marker(body: &mut SetExpr) {
    match body {
        SetExpr::Select(select) => {
            if let [SelectItem::ExprWithAlias { expr, alias }] = select.projection.as_slice()
                && alias.value == MARKER
                && alias.quote_style.is_none()
                && matches!(expr, Expr::Value(v) if v.value == Value::Null)
            {
                select.projection.clear();
            }
        }
        SetExpr::SetOperation { left, right, .. } => {
            take_marker(left);
            take_marker(right);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn printed(sql: &str) -> Vec<String> {
        parse(sql)
            .unwrap_or_else(|| panic!("{sql} did not parse"))
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    #[test]
    fn select_lists_of_no_column_parse_as_empty() {
        assert_eq!(printed("SELECT"), ["SELECT"]);
        assert_eq!(printed("SELECT;"), ["SELECT"]);
        assert_eq!(
            printed("SELECT FROM t WHERE id = 1 FOR UPDATE"),
            ["SELECT FROM t WHERE id = 1 FOR UPDATE"]
        );
        assert_eq!(
            printed("SELECT a FROM t WHERE EXISTS (SELECT FROM u WHERE u.a = t.a)"),
            ["SELECT a FROM t WHERE EXISTS (SELECT FROM u WHERE u.a = t.a)"]
        );
        assert_eq!(
            printed("SELECT FROM t UNION ALL SELECT FROM u"),
            ["SELECT FROM t UNION ALL SELECT FROM u"]
        );
    }

    #[test]
    fn other_statements_are_left_to_the_parser() {
        assert!(parse("SELECT 1").is_none());
        assert!(parse("SELECT \"from\" FROM t").is_none());
        assert!(parse("SELECT a, FROM t").is_none());
    }
}
