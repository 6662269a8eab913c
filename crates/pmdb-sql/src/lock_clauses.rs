//! The locking clauses of a SELECT (`FOR UPDATE | NO KEY UPDATE | SHARE | KEY SHARE
//! [OF t, …] [NOWAIT | SKIP LOCKED]`) as PostgreSQL means them. The parser knows only
//! `FOR UPDATE` and `FOR SHARE` with one table after `OF`: [`rewrite_clauses`] spells
//! the other forms in those terms before parsing, and [`clause`] reads them back.

use datafusion::sql::sqlparser::ast::{LockClause, LockType, NonBlock, Statement};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

use crate::error::{Result, SqlError, state};
use crate::names::ident_name;
use crate::row_locks::{LockMode, WaitPolicy};

/// First part of the name after `OF` that [`rewrite_clauses`] writes for the modes the
/// parser does not know; the table's name, if any, follows.
const NO_KEY_UPDATE: &str = "__pmdb_no_key_update";
const KEY_SHARE: &str = "__pmdb_key_share";

/// One locking clause as PostgreSQL means it.
pub(crate) struct Clause {
    pub mode: LockMode,
    /// The table (or alias) it names; every table of FROM when `None`.
    pub of: Option<String>,
    pub policy: WaitPolicy,
}

pub(crate) fn clause(c: &LockClause) -> Result<Clause> {
    let parts: Vec<String> = match &c.of {
        None => Vec::new(),
        Some(name) => name
            .0
            .iter()
            .map(|p| p.as_ident().map(ident_name))
            .collect::<Option<_>>()
            .ok_or_else(|| SqlError::user(state::SYNTAX, format!("bad table name {name}")))?,
    };
    let (mode, names) = match (parts.first().map(String::as_str), c.lock_type) {
        (Some(NO_KEY_UPDATE), LockType::Update) => (LockMode::NoKeyUpdate, &parts[1..]),
        (Some(KEY_SHARE), LockType::Share) => (LockMode::KeyShare, &parts[1..]),
        (_, LockType::Update) => (LockMode::Update, &parts[..]),
        (_, LockType::Share) => (LockMode::Share, &parts[..]),
    };
    let of = match names {
        [] => None,
        [name] => Some(name.clone()),
        _ => {
            return Err(SqlError::user(
                state::SYNTAX,
                format!(
                    "{} must name tables without a schema: {}",
                    mode.clause(),
                    names.join(".")
                ),
            ));
        }
    };
    let policy = match c.nonblock {
        None => WaitPolicy::Wait,
        Some(NonBlock::Nowait) => WaitPolicy::NoWait,
        Some(NonBlock::SkipLocked) => WaitPolicy::SkipLocked,
    };
    Ok(Clause { mode, of, policy })
}

/// A SELECT without FROM with a locking clause (`SELECT 1 FOR UPDATE`), which the
/// parser refuses and PostgreSQL runs: there is no table row to lock, so it is parsed
/// without its clause. `None` for any other text (a clause naming a table with OF, which
/// no FROM holds, is left to the parser's error).
pub(crate) fn without_tables(sql: &str) -> Option<Vec<Statement>> {
    let tokens = crate::tokens::located(sql)?;
    let keyword = |i: usize| match tokens.get(i).map(|t| &t.token) {
        Some(Token::Word(w)) => Some(w.keyword),
        _ => None,
    };
    if keyword(0) != Some(Keyword::SELECT) {
        return None;
    }
    let mut depth = 0usize;
    let mut clause = None;
    for (i, t) in tokens.iter().enumerate() {
        match &t.token {
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            Token::SemiColon if depth == 0 && i + 1 < tokens.len() => return None,
            _ if depth > 0 => {}
            Token::Word(w) if w.keyword == Keyword::FROM => return None,
            Token::Word(w) if w.keyword == Keyword::FOR && clause.is_none() => {
                let width = match (keyword(i + 1), keyword(i + 2), keyword(i + 3)) {
                    (Some(Keyword::NO), Some(Keyword::KEY), Some(Keyword::UPDATE)) => 4,
                    (Some(Keyword::KEY), Some(Keyword::SHARE), _) => 3,
                    (Some(Keyword::UPDATE | Keyword::SHARE), ..) => 2,
                    _ => return None,
                };
                let tail = match (keyword(i + width), keyword(i + width + 1)) {
                    (Some(Keyword::OF), _) => return None,
                    (Some(Keyword::NOWAIT), _) => 1,
                    (Some(Keyword::SKIP), Some(Keyword::LOCKED)) => 2,
                    _ => 0,
                };
                clause = Some((i, i + width + tail));
            }
            _ => {}
        }
    }
    let (from, to) = clause?;
    let end = tokens.get(to).map_or(sql.len(), |t| t.bytes.start);
    let text = format!("{} {}", &sql[..tokens[from].bytes.start], &sql[end..]);
    Parser::parse_sql(&PostgreSqlDialect {}, &text).ok()
}

/// `sql` parsed after writing its locking clauses in the forms the parser knows:
/// `FOR NO KEY UPDATE` and `FOR KEY SHARE` as `FOR UPDATE` / `FOR SHARE` with a marker
/// after `OF`, and `OF a, b` as one clause per table. `None` if there is nothing to
/// rewrite or it still does not parse.
pub(crate) fn rewrite_clauses(sql: &str) -> Option<Vec<Statement>> {
    let dialect = PostgreSqlDialect {};
    let tokens: Vec<Token> = Tokenizer::new(&dialect, sql)
        .tokenize()
        .ok()?
        .into_iter()
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .collect();
    let keyword = |t: Option<&Token>| match t {
        Some(Token::Word(w)) => Some(w.keyword),
        _ => None,
    };
    let mut out = Vec::with_capacity(tokens.len());
    let mut changed = false;
    let mut i = 0;
    while i < tokens.len() {
        if keyword(tokens.get(i)) != Some(Keyword::FOR) {
            out.push(tokens[i].clone());
            i += 1;
            continue;
        }
        let at = |k: usize| keyword(tokens.get(i + k));
        let (lock, marker, width) = match (at(1), at(2), at(3)) {
            (Some(Keyword::NO), Some(Keyword::KEY), Some(Keyword::UPDATE)) => {
                (Keyword::UPDATE, Some(NO_KEY_UPDATE), 4)
            }
            (Some(Keyword::KEY), Some(Keyword::SHARE), _) => (Keyword::SHARE, Some(KEY_SHARE), 3),
            (Some(Keyword::UPDATE), ..) => (Keyword::UPDATE, None, 2),
            (Some(Keyword::SHARE), ..) => (Keyword::SHARE, None, 2),
            _ => {
                out.push(tokens[i].clone());
                i += 1;
                continue;
            }
        };
        i += width;
        // OF name [, name …]: each name its words and periods.
        let mut names: Vec<Vec<Token>> = Vec::new();
        if keyword(tokens.get(i)) == Some(Keyword::OF) {
            i += 1;
            loop {
                let mut name = Vec::new();
                while let Some(t @ (Token::Word(_) | Token::Period)) = tokens.get(i) {
                    if matches!(t, Token::Word(w) if matches!(w.keyword, Keyword::NOWAIT | Keyword::SKIP | Keyword::FOR))
                        && !name.is_empty()
                        && !matches!(name.last(), Some(Token::Period))
                    {
                        break;
                    }
                    name.push(t.clone());
                    i += 1;
                }
                names.push(name);
                if tokens.get(i) != Some(&Token::Comma) {
                    break;
                }
                i += 1;
            }
        }
        let mut tail = Vec::new();
        match (keyword(tokens.get(i)), keyword(tokens.get(i + 1))) {
            (Some(Keyword::NOWAIT), _) => {
                tail.push(tokens[i].clone());
                i += 1;
            }
            (Some(Keyword::SKIP), Some(Keyword::LOCKED)) => {
                tail.extend_from_slice(&tokens[i..i + 2]);
                i += 2;
            }
            _ => {}
        }
        changed |= marker.is_some() || names.len() > 1;
        if names.is_empty() {
            names.push(Vec::new());
        }
        for name in names {
            out.push(Token::make_keyword("FOR"));
            out.push(Token::make_keyword(&format!("{lock:?}")));
            if marker.is_some() || !name.is_empty() {
                out.push(Token::make_keyword("OF"));
            }
            if let Some(m) = marker {
                out.push(Token::make_word(m, None));
                if !name.is_empty() {
                    out.push(Token::Period);
                }
            }
            out.extend(name);
            out.extend(tail.iter().cloned());
        }
    }
    if !changed {
        return None;
    }
    let spaced: Vec<Token> = out
        .into_iter()
        .flat_map(|t| {
            [
                t,
                Token::Whitespace(datafusion::sql::sqlparser::tokenizer::Whitespace::Space),
            ]
        })
        .collect();
    Parser::new(&dialect)
        .with_tokens(spaced)
        .parse_statements()
        .ok()
}
