//! CREATE EXTENSION and DROP EXTENSION as statements: what they ask for, checked before
//! the catalog ([`crate::catalog::Catalog::create_extension`]) is touched. pmdb installs
//! an extension in `public` at the version it has; a statement asking for another
//! schema or version is refused (0A000). The parser wants `WITH` before the options and
//! a version that is a word; [`parse`] takes PostgreSQL's grammar, where `WITH` is
//! optional and the version may be a string.

use datafusion::sql::sqlparser::ast::{
    CreateExtension, DropExtension, Ident, ReferentialAction, Statement,
};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::Token;

use crate::catalog::Catalog;
use crate::error::{Result, SqlError};
use crate::extension::INSTALLABLE;
use crate::names::{PUBLIC, ident_name};
use crate::notices::Notice;

fn is_keyword(t: &Token, k: Keyword) -> bool {
    matches!(t, Token::Word(w) if w.keyword == k && w.quote_style.is_none())
}

/// A name or a version: a word, or (`string`) a string as a version may be.
fn word(t: Option<&Token>, string: bool) -> Option<Ident> {
    match t? {
        Token::Word(w) => Some(match w.quote_style {
            Some(q) => Ident::with_quote(q, w.value.clone()),
            None => Ident::new(w.value.clone()),
        }),
        Token::SingleQuotedString(s) if string => Some(Ident::with_quote('"', s.clone())),
        _ => None,
    }
}

/// `sql` as one CREATE EXTENSION in PostgreSQL's grammar: `CREATE EXTENSION [IF NOT
/// EXISTS] name [WITH] [SCHEMA s] [VERSION v] [CASCADE]`; `None` if it is not one (the
/// parser's error stands).
pub(crate) fn parse(sql: &str) -> Option<Result<Vec<Statement>>> {
    let tokens = crate::tokens::significant(sql)?;
    let [create, extension, rest @ ..] = tokens.as_slice() else {
        return None;
    };
    if !(is_keyword(create, Keyword::CREATE) && is_keyword(extension, Keyword::EXTENSION)) {
        return None;
    }
    let mut at = 0;
    let if_not_exists = rest.len() > 3
        && is_keyword(&rest[0], Keyword::IF)
        && is_keyword(&rest[1], Keyword::NOT)
        && is_keyword(&rest[2], Keyword::EXISTS);
    if if_not_exists {
        at = 3;
    }
    let name = word(rest.get(at), false)?;
    at += 1;
    if rest.get(at).is_some_and(|t| is_keyword(t, Keyword::WITH)) {
        at += 1;
    }
    let mut made = CreateExtension {
        name,
        if_not_exists,
        cascade: false,
        schema: None,
        version: None,
    };
    while let Some(t) = rest.get(at) {
        if is_keyword(t, Keyword::SCHEMA) && made.schema.is_none() {
            made.schema = Some(word(rest.get(at + 1), false)?);
            at += 2;
        } else if is_keyword(t, Keyword::VERSION) && made.version.is_none() {
            made.version = Some(word(rest.get(at + 1), true)?);
            at += 2;
        } else if is_keyword(t, Keyword::CASCADE) && !made.cascade {
            made.cascade = true;
            at += 1;
        } else {
            return None;
        }
    }
    Some(Ok(vec![Statement::CreateExtension(made)]))
}

/// CREATE EXTENSION: whether it made the extension (false: `IF NOT EXISTS` found it).
pub fn create(catalog: &Catalog, s: &CreateExtension) -> Result<bool> {
    let name = ident_name(&s.name);
    if let Some(schema) = &s.schema
        && ident_name(schema) != PUBLIC
    {
        return Err(SqlError::unsupported(format!(
            "CREATE EXTENSION … SCHEMA {schema} (pmdb installs extensions in public)"
        )));
    }
    if let Some(version) = &s.version {
        let wanted = ident_name(version);
        let have = INSTALLABLE
            .iter()
            .find(|a| a.name == name)
            .map(|a| a.version);
        if have.is_some_and(|v| v != wanted) {
            return Err(SqlError::unsupported(format!(
                "CREATE EXTENSION {name} VERSION {wanted} (pmdb has version {})",
                have.unwrap_or_default()
            )));
        }
    }
    // CASCADE installs the extensions it needs: pmdb's need none.
    catalog.create_extension(&name, s.if_not_exists)
}

/// DROP EXTENSION of each name; the notices `IF EXISTS` gives for names not installed.
pub fn drop(catalog: &Catalog, s: &DropExtension) -> Result<Vec<Notice>> {
    let cascade = matches!(s.cascade_or_restrict, Some(ReferentialAction::Cascade));
    let names: Vec<String> = s.names.iter().map(ident_name).collect();
    for name in &names {
        if catalog.extension(name).is_none() && !s.if_exists {
            return Err(SqlError::user(
                crate::error::state::UNDEFINED_OBJECT,
                format!("extension \"{name}\" does not exist"),
            ));
        }
    }
    let mut skipped = Vec::new();
    for name in &names {
        if !catalog.drop_extension(name, s.if_exists, cascade)? {
            skipped.push(Notice::skipped_missing("extension", name));
        }
    }
    Ok(skipped)
}
