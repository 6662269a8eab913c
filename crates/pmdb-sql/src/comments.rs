//! `COMMENT ON TABLE | COLUMN | CONSTRAINT … IS 'text' | NULL`: a table's, a column's or
//! a constraint's comment, kept in the table's definition (an empty text removes it, as
//! in PostgreSQL). The parser knows no `COMMENT ON CONSTRAINT`: [`parse`] reads it into
//! a `COMMENT ON COLUMN` of a name no client gives, which [`target`] recognises.

use datafusion::sql::sqlparser::ast::{CommentObject, Ident, ObjectName, Statement};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Span, Token};

use crate::catalog::Catalog;
use crate::error::{Result, SqlError, state, undefined_column};
use crate::names::{RelName, ident_name, object_name};

/// The first part of the name a parsed `COMMENT ON CONSTRAINT` gives its column.
const MARKER: &str = "__pmdb_constraint_comment";

/// What a comment is on.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Target {
    Table(RelName),
    Column { table: RelName, column: String },
    Constraint { table: RelName, name: String },
}

/// `sql` as one `COMMENT ON CONSTRAINT name ON table IS 'text' | NULL`, if it is one.
pub(crate) fn parse(sql: &str) -> Option<Vec<Statement>> {
    let words = crate::tokens::significant(sql)?;
    let keyword = |t: &Token, k: Keyword| matches!(t, Token::Word(w) if w.keyword == k);
    let [
        comment,
        on,
        constraint,
        Token::Word(name),
        on_table,
        rest @ ..,
    ] = words.as_slice()
    else {
        return None;
    };
    let words_ok = keyword(comment, Keyword::COMMENT)
        && keyword(on, Keyword::ON)
        && keyword(constraint, Keyword::CONSTRAINT)
        && keyword(on_table, Keyword::ON);
    let [table @ .., is, text] = rest else {
        return None;
    };
    if !words_ok || !keyword(is, Keyword::IS) {
        return None;
    }
    let comment = match text {
        Token::SingleQuotedString(s) => Some(s.clone()),
        Token::Word(w) if w.keyword == Keyword::NULL => None,
        _ => return None,
    };
    // The table's name: words with periods between them.
    let mut parts = vec![Ident::new(MARKER)];
    for (i, t) in table.iter().enumerate() {
        match t {
            Token::Word(w) if i % 2 == 0 => parts.push(w.to_ident(Span::empty())),
            Token::Period if i % 2 == 1 => {}
            _ => return None,
        }
    }
    if parts.len() < 2 || table.len() % 2 == 0 {
        return None;
    }
    parts.push(name.to_ident(Span::empty()));
    Some(vec![Statement::Comment {
        object_type: CommentObject::Column,
        object_name: ObjectName::from(parts),
        comment,
        if_exists: false,
    }])
}

/// What `COMMENT ON` statement `s` is on, and its text (`None`: remove it); 0A000 for
/// an object pmdb keeps no comment on.
pub(crate) fn target(s: &Statement) -> Result<(Target, Option<String>)> {
    let Statement::Comment {
        object_type,
        object_name: named,
        comment,
        if_exists: false,
    } = s
    else {
        return Err(SqlError::unsupported(format!("{s}")));
    };
    let text = comment.clone().filter(|c| !c.is_empty());
    let parts: Vec<&Ident> = named.0.iter().filter_map(|p| p.as_ident()).collect();
    if parts.len() != named.0.len() {
        return Err(SqlError::unsupported(format!("{s}")));
    }
    let split = |parts: &[&Ident]| -> Result<(RelName, String)> {
        let [table @ .., last] = parts else {
            return Err(SqlError::user(
                state::SYNTAX,
                format!("column name must be qualified: {named}"),
            ));
        };
        if table.is_empty() {
            return Err(SqlError::user(
                state::SYNTAX,
                format!("column name must be qualified: {named}"),
            ));
        }
        let table = ObjectName::from(table.iter().map(|i| (*i).clone()).collect::<Vec<_>>());
        Ok((object_name(&table)?, ident_name(last)))
    };
    let target = match object_type {
        CommentObject::Table => Target::Table(object_name(named)?),
        CommentObject::Column if parts.first().is_some_and(|p| p.value == MARKER) => {
            let (table, name) = split(&parts[1..])?;
            Target::Constraint { table, name }
        }
        CommentObject::Column => {
            let (table, column) = split(&parts)?;
            Target::Column { table, column }
        }
        other => {
            return Err(SqlError::unsupported(format!(
                "COMMENT ON {other}: pmdb keeps comments on tables, columns and constraints"
            )));
        }
    };
    Ok((target, text))
}

/// Sets (or with `None` removes) the comment on `target`.
pub(crate) fn set(catalog: &Catalog, target: &Target, text: Option<String>) -> Result<()> {
    let table = match target {
        Target::Table(t)
        | Target::Column { table: t, .. }
        | Target::Constraint { table: t, .. } => t,
    };
    catalog.change_table(table, |_, def| {
        match target {
            Target::Table(_) => def.comment = text,
            Target::Column { column, .. } => {
                let p = def
                    .column(column)
                    .ok_or_else(|| undefined_column(column, &def.name))?;
                def.columns[p].comment = text;
            }
            Target::Constraint { name, .. } => {
                if !def.has_constraint(name) && !def.is_primary_key_name(name) {
                    return Err(SqlError::user(
                        state::UNDEFINED_OBJECT,
                        format!(
                            "constraint \"{name}\" for table \"{}\" does not exist",
                            def.name
                        ),
                    ));
                }
                def.constraint_comments.retain(|(n, _)| n != name);
                if let Some(text) = text {
                    def.constraint_comments.push((name.clone(), text));
                }
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target_of(sql: &str) -> (Target, Option<String>) {
        let statements = match datafusion::sql::sqlparser::parser::Parser::parse_sql(
            &datafusion::sql::sqlparser::dialect::PostgreSqlDialect {},
            sql,
        ) {
            Ok(s) => s,
            Err(_) => parse(sql).expect("a COMMENT ON CONSTRAINT"),
        };
        target(&statements[0]).unwrap()
    }

    #[test]
    fn comments_name_what_they_are_on() {
        assert_eq!(
            target_of("COMMENT ON TABLE public.T IS 'x'"),
            (Target::Table(RelName::public("t")), Some("x".into()))
        );
        assert_eq!(
            target_of("COMMENT ON COLUMN t.\"Col\" IS NULL"),
            (
                Target::Column {
                    table: RelName::public("t"),
                    column: "Col".into()
                },
                None
            )
        );
        assert_eq!(
            target_of("COMMENT ON CONSTRAINT t_pkey ON public.t IS ''"),
            (
                Target::Constraint {
                    table: RelName::public("t"),
                    name: "t_pkey".into()
                },
                None
            )
        );
        assert_eq!(
            target_of("comment on constraint \"C\" on t is 'it''s';"),
            (
                Target::Constraint {
                    table: RelName::public("t"),
                    name: "C".into()
                },
                Some("it's".into())
            )
        );
        assert!(parse("COMMENT ON CONSTRAINT c ON IS 'x'").is_none());
        assert!(parse("COMMENT ON CONSTRAINT c ON t IS 5").is_none());
    }
}
