//! `SET CONSTRAINTS {ALL | name, …} {DEFERRED | IMMEDIATE}` as a statement: the parser
//! knows no SET CONSTRAINTS, so [`parse`] reads it into a `SET` of a variable no client
//! can name, which [`of_statement`] recognises. [`crate::deferred_checks`] runs it.

use datafusion::sql::sqlparser::ast::{Expr, Ident, ObjectName, Set, Statement, Value as SqlValue};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

/// The variable a parsed SET CONSTRAINTS sets.
const MARKER: &str = "__pmdb_set_constraints";

/// A `SET CONSTRAINTS` statement: the constraints it names (`None`: ALL) and whether
/// it defers them.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct SetConstraints {
    pub names: Option<Vec<String>>,
    pub deferred: bool,
}

/// `sql` as one SET CONSTRAINTS statement, if it is one.
pub(crate) fn parse(sql: &str) -> Option<Vec<Statement>> {
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let mut words = tokens
        .into_iter()
        .filter(|t| !matches!(t, Token::Whitespace(_)));
    let set = matches!(words.next(), Some(Token::Word(w)) if w.keyword == Keyword::SET);
    let constraints = matches!(
        words.next(),
        Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("constraints")
    );
    if !set || !constraints {
        return None;
    }
    let mut rest: Vec<Token> = words.collect();
    if rest.last() == Some(&Token::SemiColon) {
        rest.pop();
    }
    let deferred = match rest.pop()? {
        Token::Word(w) if w.keyword == Keyword::DEFERRED => true,
        Token::Word(w) if w.keyword == Keyword::IMMEDIATE => false,
        _ => return None,
    };
    let mut values = vec![Expr::value(SqlValue::Boolean(deferred))];
    match rest.as_slice() {
        [Token::Word(w)] if w.keyword == Keyword::ALL && w.quote_style.is_none() => {}
        names => {
            // Names, each perhaps schema-qualified, separated by commas.
            for name in names.split(|t| *t == Token::Comma) {
                // A name, perhaps qualified: words with periods between them.
                let qualified = name.iter().enumerate().all(|(i, t)| match t {
                    Token::Word(_) => i % 2 == 0,
                    Token::Period => i % 2 == 1,
                    _ => false,
                });
                let Some(Token::Word(last)) = name.last().filter(|_| qualified) else {
                    return None;
                };
                let folded = match last.quote_style {
                    Some(_) => last.value.clone(),
                    None => last.value.to_lowercase(),
                };
                values.push(Expr::Identifier(Ident::new(folded)));
            }
        }
    }
    Some(vec![Statement::Set(Set::SingleAssignment {
        scope: None,
        hivevar: false,
        variable: ObjectName::from(vec![Ident::new(MARKER)]),
        values,
    })])
}

/// The SET CONSTRAINTS `s` is, if it is one.
pub(crate) fn of_statement(s: &Statement) -> Option<SetConstraints> {
    let Statement::Set(Set::SingleAssignment {
        variable, values, ..
    }) = s
    else {
        return None;
    };
    if variable.to_string() != MARKER {
        return None;
    }
    let (first, names) = values.split_first()?;
    let deferred = matches!(first, Expr::Value(v) if v.value == SqlValue::Boolean(true));
    let names: Vec<String> = names
        .iter()
        .filter_map(|e| match e {
            Expr::Identifier(i) => Some(i.value.clone()),
            _ => None,
        })
        .collect();
    Some(SetConstraints {
        names: (!names.is_empty()).then_some(names),
        deferred,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(sql: &str) -> Option<SetConstraints> {
        of_statement(&parse(sql)?.pop()?)
    }

    #[test]
    fn set_constraints_is_read_in_postgresql_forms() {
        assert_eq!(
            parsed("SET CONSTRAINTS ALL DEFERRED"),
            Some(SetConstraints {
                names: None,
                deferred: true
            })
        );
        assert_eq!(
            parsed("set constraints public.A_fk, \"B_fk\" immediate;"),
            Some(SetConstraints {
                names: Some(vec!["a_fk".into(), "B_fk".into()]),
                deferred: false
            })
        );
        assert_eq!(parsed("SET CONSTRAINTS ALL"), None);
        assert_eq!(parsed("SET search_path = public"), None);
        assert_eq!(parsed("SET CONSTRAINTS a b DEFERRED"), None);
    }
}
