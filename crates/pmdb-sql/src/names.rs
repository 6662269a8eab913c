//! Names as PostgreSQL reads them: unquoted identifiers fold to lower case, and a
//! relation is named in a schema (`public` when no schema is given) of pmdb's one
//! database.

use std::fmt;

use datafusion::sql::sqlparser::ast::ObjectName;

use crate::error::{Result, SqlError, state};

/// The schema every database has, where unqualified names are looked up and made.
pub const PUBLIC: &str = "public";

/// A relation's name (a table's, view's, sequence's or index's): the schema it lives in
/// and its name there.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RelName {
    pub schema: String,
    pub name: String,
}

impl RelName {
    pub fn new(schema: impl Into<String>, name: impl Into<String>) -> RelName {
        RelName {
            schema: schema.into(),
            name: name.into(),
        }
    }

    /// `name` in the `public` schema.
    pub fn public(name: impl Into<String>) -> RelName {
        RelName::new(PUBLIC, name)
    }

    /// Relation `name` in this one's schema: where an index, a serial column's
    /// sequence or a rename of this relation lives.
    pub fn sibling(&self, name: impl Into<String>) -> RelName {
        RelName::new(self.schema.clone(), name)
    }

    /// The name as a PostgreSQL client writes it to find the relation again: the schema
    /// left out when it is `public`, each part quoted where it needs quotes.
    pub fn quoted(&self) -> String {
        let name = crate::quote_functions::ident(&self.name);
        if self.schema == PUBLIC {
            name
        } else {
            format!("{}.{name}", crate::quote_functions::ident(&self.schema))
        }
    }

    /// The bytes that tell this name apart in a catalog key: the name alone in `public`
    /// (as before pmdb had schemas), else the schema, a zero byte (which no identifier
    /// holds) and the name.
    pub fn key_bytes(&self) -> Vec<u8> {
        if self.schema == PUBLIC {
            return self.name.as_bytes().to_vec();
        }
        let mut k = Vec::with_capacity(self.schema.len() + 1 + self.name.len());
        k.extend_from_slice(self.schema.as_bytes());
        k.push(0);
        k.extend_from_slice(self.name.as_bytes());
        k
    }
}

/// `name`, or `schema.name` outside `public`, as PostgreSQL's messages show a relation.
impl fmt::Display for RelName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.schema == PUBLIC {
            f.write_str(&self.name)
        } else {
            write!(f, "{}.{}", self.schema, self.name)
        }
    }
}

/// Quoted, as a message shows a name: `"t"`, `"s.t"`.
impl fmt::Debug for RelName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

/// A name as DataFusion resolves it: unquoted identifiers fold to lower case.
pub fn ident_name(ident: &datafusion::sql::sqlparser::ast::Ident) -> String {
    if ident.quote_style.is_some() {
        ident.value.clone()
    } else {
        ident.value.to_lowercase()
    }
}

/// The relation named by `name`: `name`, `schema.name` or `database.schema.name`
/// (pmdb's one database is `pmdb`).
pub fn object_name(name: &ObjectName) -> Result<RelName> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| {
            p.as_ident()
                .map(ident_name)
                .ok_or_else(|| SqlError::user(state::SYNTAX, format!("bad name {name}")))
        })
        .collect::<Result<_>>()?;
    if let Some(p) = parts.iter().find(|p| p.contains('\0')) {
        return Err(SqlError::user(
            state::INVALID_NAME,
            format!("a name with a zero byte: {p:?}"),
        ));
    }
    match parts.as_slice() {
        [n] => Ok(RelName::public(n.clone())),
        [s, n] => Ok(RelName::new(s.clone(), n.clone())),
        [c, s, n] if c == "pmdb" => Ok(RelName::new(s.clone(), n.clone())),
        [_, _, _] => Err(SqlError::unsupported(format!(
            "cross-database references: {name}"
        ))),
        _ => Err(SqlError::user(
            state::SYNTAX,
            format!("improper qualified name (too many dotted names): {name}"),
        )),
    }
}

/// The database `name` names: one identifier (unquoted, folded to lower case).
pub fn database_name(name: &ObjectName) -> Result<String> {
    match name.0.as_slice() {
        [part] => part
            .as_ident()
            .map(ident_name)
            .ok_or_else(|| SqlError::user(state::SYNTAX, format!("bad database name {name}"))),
        _ => Err(SqlError::user(
            state::SYNTAX,
            format!("a database name is one identifier, not {name}"),
        )),
    }
}

/// The relation a text argument names, as PostgreSQL reads `'name'::regclass`:
/// unquoted parts fold to lower case, an optional schema (else `public`).
pub fn relation_named(text: &str) -> Result<RelName> {
    object_name(&parse_relation(text)?)
}

/// The name a text argument writes, as the parser reads it.
pub fn parse_relation(text: &str) -> Result<ObjectName> {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(text)
        .and_then(|mut p| p.parse_object_name(false))
        .map_err(|_| {
            SqlError::user(
                state::INVALID_NAME,
                format!("invalid name syntax: {text:?}"),
            )
        })
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
