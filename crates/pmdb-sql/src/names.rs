//! Names as PostgreSQL reads them: unquoted identifiers fold to lower case, and a
//! table may be named with pmdb's one schema (`public`) and database before it.

use datafusion::sql::sqlparser::ast::ObjectName;

use crate::error::{Result, SqlError, state};

/// A name as DataFusion resolves it: unquoted identifiers fold to lower case.
pub fn ident_name(ident: &datafusion::sql::sqlparser::ast::Ident) -> String {
    if ident.quote_style.is_some() {
        ident.value.clone()
    } else {
        ident.value.to_lowercase()
    }
}

/// The table named by `name` (an optional `public.` schema is allowed).
pub fn object_name(name: &ObjectName) -> Result<String> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| {
            p.as_ident()
                .map(ident_name)
                .ok_or_else(|| SqlError::user(state::SYNTAX, format!("bad name {name}")))
        })
        .collect::<Result<_>>()?;
    match parts.as_slice() {
        [n] => Ok(n.clone()),
        [s, n] if s == "public" => Ok(n.clone()),
        [c, s, n] if c == "pmdb" && s == "public" => Ok(n.clone()),
        _ => Err(SqlError::user(
            state::UNDEFINED_TABLE,
            format!("{name}: pmdb has one schema, public"),
        )),
    }
}

/// Whether SQL text `sql` may refer to column `column`: it has an identifier of that
/// name, or a select list's `*` (which takes every column). Never misses a reference;
/// may see one that is not there (a name of something else), which errs on the side of
/// keeping.
pub fn may_refer_to(sql: &str, column: &str) -> bool {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::keywords::Keyword;
    use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize() else {
        return true;
    };
    let mut before = &Token::EOF;
    for t in tokens.iter().filter(|t| !matches!(t, Token::Whitespace(_))) {
        let refers = match t {
            Token::Word(w) => {
                let name = if w.quote_style.is_some() {
                    w.value.clone()
                } else {
                    w.value.to_lowercase()
                };
                name == column
            }
            // `SELECT *`, `, *`, `t.*`; not `count(*)` nor a product.
            Token::Mul => match before {
                Token::Comma | Token::Period => true,
                Token::Word(w) => matches!(
                    w.keyword,
                    Keyword::SELECT | Keyword::DISTINCT | Keyword::ALL
                ),
                _ => false,
            },
            _ => false,
        };
        if refers {
            return true;
        }
        before = t;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_found_by_their_names() {
        assert!(may_refer_to("price > 0", "price"));
        assert!(may_refer_to("\"Price\" > 0", "Price"));
        assert!(!may_refer_to("\"Price\" > 0", "price"));
        assert!(may_refer_to("SELECT * FROM t", "anything"));
        assert!(may_refer_to("SELECT a, t.* FROM t", "anything"));
        assert!(!may_refer_to("SELECT count(*), a * 2 FROM t", "b"));
        assert!(!may_refer_to(
            "SELECT a, b FROM t WHERE c = 'price'",
            "price"
        ));
    }
}
