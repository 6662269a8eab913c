//! PostgreSQL's CREATE DOMAIN where the parser's grammar is narrower: `AS` is optional,
//! and NOT NULL and NULL are domain constraints. [`parse`] writes the statement in the
//! form the parser knows, NOT NULL as an unnamed `CHECK (VALUE IS NOT NULL)` (which
//! [`crate::domain_ddl::create_domain`] takes for the domain's NOT NULL) and NULL, which
//! says nothing, left out. ALTER DOMAIN, which the parser does not know, is refused
//! (0A000) rather than called a syntax error.

use datafusion::sql::sqlparser::ast::{Expr, Statement};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

use crate::error::{Result, SqlError};

/// Which part of the statement a token belongs to.
#[derive(Clone, Copy)]
enum Clause {
    Type,
    Collate,
    Default,
    Constraint,
    /// After a NOT NULL or NULL: a token here is one no clause takes, for the parser to
    /// refuse.
    Done,
}

fn is_keyword(t: &Token, k: Keyword) -> bool {
    matches!(t, Token::Word(w) if w.keyword == k && w.quote_style.is_none())
}

/// Whether `e` is `VALUE IS NOT NULL`.
pub(crate) fn is_not_null(e: &Expr) -> bool {
    matches!(e, Expr::IsNotNull(v)
        if matches!(v.as_ref(), Expr::Identifier(i)
            if i.quote_style.is_none() && i.value.eq_ignore_ascii_case("value")))
}

/// `sql` as one CREATE DOMAIN, if it is one the parser takes once written its way; an
/// ALTER DOMAIN refused.
pub(crate) fn parse(sql: &str) -> Option<Result<Vec<Statement>>> {
    let tokens: Vec<Token> = Tokenizer::new(&PostgreSqlDialect {}, sql)
        .tokenize()
        .ok()?
        .into_iter()
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .collect();
    let [create, domain, rest @ ..] = tokens.as_slice() else {
        return None;
    };
    if is_keyword(create, Keyword::ALTER) && is_keyword(domain, Keyword::DOMAIN) {
        return Some(Err(SqlError::unsupported(
            "ALTER DOMAIN (a domain keeps the rules it was made with; make a new one)",
        )));
    }
    if !(is_keyword(create, Keyword::CREATE) && is_keyword(domain, Keyword::DOMAIN)) {
        return None;
    }
    let mut out: Vec<Token> = vec![create.clone(), domain.clone()];
    // The name: words with periods between them.
    let mut at = 0;
    while let Some(t @ Token::Word(_)) = rest.get(at) {
        out.push(t.clone());
        at += 1;
        if rest.get(at) != Some(&Token::Period) {
            break;
        }
        out.push(Token::Period);
        at += 1;
    }
    if !rest.get(at).is_some_and(|t| is_keyword(t, Keyword::AS)) {
        out.push(Token::make_keyword("AS"));
    }
    // The clauses after the type, in any order as PostgreSQL takes them, written as
    // the parser wants them: COLLATE, then DEFAULT, then the constraints.
    let (mut collate, mut default, mut constraints) = (Vec::new(), Vec::new(), Vec::new());
    let mut clause = Clause::Type;
    let mut depth = 0usize;
    let mut previous: Option<&Token> = None;
    while let Some(t) = rest.get(at) {
        let next = rest.get(at + 1);
        let top = depth == 0;
        match t {
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            _ => {}
        }
        // NULL as a constraint: after the type or another constraint, never as (part
        // of) the default's expression.
        let after_operand = previous.is_some_and(|p| match p {
            Token::Word(w) => {
                w.quote_style.is_some()
                    || !matches!(w.keyword, Keyword::DEFAULT | Keyword::IS | Keyword::NOT)
            }
            Token::Number(..) | Token::SingleQuotedString(_) | Token::RParen => true,
            _ => false,
        });
        let not_null = is_keyword(t, Keyword::NOT)
            && next.is_some_and(|n| is_keyword(n, Keyword::NULL))
            && !previous.is_some_and(|p| is_keyword(p, Keyword::IS));
        let named = matches!(clause, Clause::Constraint)
            && previous.is_some_and(|p| is_keyword(p, Keyword::CONSTRAINT));
        previous = Some(t);
        if top && not_null {
            constraints.extend(
                Tokenizer::new(&PostgreSqlDialect {}, "CHECK (VALUE IS NOT NULL)")
                    .tokenize()
                    .ok()?,
            );
            clause = Clause::Done;
            previous = next;
            at += 2;
            continue;
        }
        if top && is_keyword(t, Keyword::NULL) && after_operand {
            clause = Clause::Done;
            at += 1;
            continue;
        }
        if top && is_keyword(t, Keyword::CONSTRAINT) {
            // `CONSTRAINT name NOT NULL` and `CONSTRAINT name NULL`: the name goes.
            let then = rest.get(at + 2);
            if then.is_some_and(|n| is_keyword(n, Keyword::NOT) || is_keyword(n, Keyword::NULL)) {
                previous = rest.get(at + 1);
                at += 2;
                continue;
            }
            clause = Clause::Constraint;
        } else if top && is_keyword(t, Keyword::CHECK) && !named {
            clause = Clause::Constraint;
        } else if top && is_keyword(t, Keyword::DEFAULT) {
            clause = Clause::Default;
        } else if top && is_keyword(t, Keyword::COLLATE) {
            clause = Clause::Collate;
        }
        match clause {
            Clause::Type | Clause::Done => out.push(t.clone()),
            Clause::Collate => collate.push(t.clone()),
            Clause::Default => default.push(t.clone()),
            Clause::Constraint => constraints.push(t.clone()),
        }
        at += 1;
    }
    out.extend(collate);
    out.extend(default);
    out.extend(constraints);
    let text: String = out.iter().map(|t| format!("{t} ")).collect();
    Parser::parse_sql(&PostgreSqlDialect {}, &text).ok().map(Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(sql: &str) -> String {
        parse(sql).unwrap_or_else(|| panic!("{sql}")).unwrap()[0].to_string()
    }

    #[test]
    fn domains_are_written_in_the_form_the_parser_knows() {
        assert_eq!(parsed("CREATE DOMAIN d int"), "CREATE DOMAIN d AS INT");
        assert_eq!(
            parsed("create domain s.d AS numeric(9,2) NOT NULL CHECK (VALUE > 0)"),
            "CREATE DOMAIN s.d AS NUMERIC(9,2) CHECK (VALUE IS NOT NULL) CHECK (VALUE > 0)"
        );
        assert_eq!(
            parsed("CREATE DOMAIN d AS int DEFAULT NULL NULL CONSTRAINT c NOT NULL"),
            "CREATE DOMAIN d AS INT DEFAULT NULL CHECK (VALUE IS NOT NULL)"
        );
        assert_eq!(
            parsed("CREATE DOMAIN d int NOT NULL CHECK (VALUE < 9) DEFAULT 3 COLLATE \"C\""),
            "CREATE DOMAIN d AS INT COLLATE \"C\" DEFAULT 3 CHECK (VALUE IS NOT NULL) CHECK (VALUE < 9)"
        );
        assert_eq!(
            parsed("CREATE DOMAIN d text CHECK (VALUE IS NOT NULL OR VALUE <> '')"),
            "CREATE DOMAIN d AS TEXT CHECK (VALUE IS NOT NULL OR VALUE <> '')"
        );
        assert!(parse("CREATE TABLE t (a int NOT NULL)").is_none());
        let refused = parse("ALTER DOMAIN d SET DEFAULT 1").unwrap().unwrap_err();
        assert_eq!(refused.sqlstate(), "0A000");
    }
}
