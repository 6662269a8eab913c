//! A session's cursors: `DECLARE name [NO] SCROLL CURSOR [WITH[OUT] HOLD] FOR query`
//! runs the query at the statement's read point and keeps its rows (so the cursor reads
//! the snapshot it was declared at, as PostgreSQL's does), FETCH returns them from the
//! cursor's position on, and CLOSE drops it. A cursor without HOLD ends with its
//! transaction block (and is refused outside one, 25P01); one WITH HOLD lives until
//! CLOSE or the session's end. The rows are kept, so a cursor moves backward unless it
//! was declared NO SCROLL (55000 then), as PostgreSQL's does when its plan allows.
//! MOVE moves as FETCH does and returns no rows.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{
    CloseCursor, FetchDirection, Ident, ObjectName, Statement, Value as Literal,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;

use crate::error::{Result, SqlError, state};
use crate::names::ident_name;
use crate::output::{CommandTag, Output};

/// What marks a FETCH as a MOVE: the parser knows no MOVE, so `MOVE …` is parsed as
/// `FETCH …` with this as its INTO target, which PostgreSQL's FETCH never has.
const MOVE_MARKER: &str = "__pmdb_move";

/// `DECLARE name … CURSOR … FOR query` whose query the parser does not read in that
/// place: one with locking clauses (`FOR UPDATE`, as SQLAlchemy's server-side cursors
/// send it). The query is parsed on its own, as any query is, and put in the DECLARE.
/// The cursor's query runs when it is declared, so its rows are locked then, to the
/// block's end.
pub(crate) fn parse_declare(sql: &str) -> Option<Vec<Statement>> {
    use datafusion::sql::sqlparser::keywords::Keyword;
    use datafusion::sql::sqlparser::tokenizer::Token;
    let tokens = crate::tokens::located(sql)?;
    let word = |i: usize| match tokens.get(i).map(|t| &t.token) {
        Some(Token::Word(w)) => Some(w.keyword),
        _ => None,
    };
    if word(0) != Some(Keyword::DECLARE) {
        return None;
    }
    let cursor = (1..tokens.len()).find(|&i| word(i) == Some(Keyword::CURSOR))?;
    let at = (cursor + 1..tokens.len()).find(|&i| word(i) == Some(Keyword::FOR))?;
    let head = format!("{} SELECT 1", &sql[..tokens[at].bytes.end]);
    let mut declared = Parser::parse_sql(&PostgreSqlDialect {}, &head).ok()?;
    let text = &sql[tokens[at].bytes.end..];
    let query = Parser::parse_sql(&PostgreSqlDialect {}, text)
        .ok()
        .or_else(|| crate::lock_clauses::rewrite_clauses(text))
        .or_else(|| crate::lock_clauses::without_tables(text))?;
    let (Some(Statement::Declare { stmts }), [Statement::Query(q)]) =
        (declared.first_mut(), query.as_slice())
    else {
        return None;
    };
    let [d] = stmts.as_mut_slice() else {
        return None;
    };
    d.for_query = Some(q.clone());
    Some(declared)
}

/// PostgreSQL's `FETCH` and `MOVE` (one statement) where the parser has no form for
/// them: MOVE (as the FETCH it moves like, marked), negative counts (`FETCH -2`,
/// `MOVE RELATIVE -1`), whose sign the parser does not take, and a cursor's name alone
/// (`FETCH c`: the next row).
pub(crate) fn parse_move(sql: &str) -> Option<Vec<Statement>> {
    use datafusion::sql::sqlparser::keywords::Keyword;
    use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer, Whitespace};
    let trimmed = sql.trim_start();
    let (first, rest) = trimmed.split_at(trimmed.find(char::is_whitespace)?);
    let moved = first.eq_ignore_ascii_case("move");
    if !(moved || first.eq_ignore_ascii_case("fetch"))
        || rest.trim_end().trim_end_matches(';').contains(';')
    {
        return None;
    }
    let dialect = PostgreSqlDialect {};
    let tokens = Tokenizer::new(&dialect, &format!("FETCH{rest}"))
        .tokenize()
        .ok()?;
    // A minus before a number joins it.
    let mut joined: Vec<Token> = Vec::with_capacity(tokens.len());
    let mut minus = false;
    for t in tokens {
        match t {
            Token::Minus => minus = true,
            Token::Number(n, long) if minus => {
                joined.push(Token::Number(format!("-{n}"), long));
                minus = false;
            }
            t => {
                if std::mem::take(&mut minus) {
                    joined.push(Token::Minus);
                }
                joined.push(t);
            }
        }
    }
    let words: Vec<&Token> = joined
        .iter()
        .filter(|t| !matches!(t, Token::Whitespace(_) | Token::SemiColon))
        .collect();
    // FROM (or IN) before the cursor's name may be left out (`MOVE FORWARD 5 c`).
    if let [_, .., before, Token::Word(_)] = words.as_slice()
        && !matches!(before, Token::Word(w) if matches!(w.keyword, Keyword::FROM | Keyword::IN))
        && let Some(last) = joined
            .iter()
            .rposition(|t| !matches!(t, Token::Whitespace(_) | Token::SemiColon))
    {
        joined.splice(
            last..last,
            [
                Token::make_keyword("FROM"),
                Token::Whitespace(Whitespace::Space),
            ],
        );
    }
    let words: Vec<&Token> = joined
        .iter()
        .filter(|t| !matches!(t, Token::Whitespace(_) | Token::SemiColon))
        .collect();
    // One word after FETCH names a cursor, whatever the word (`FETCH next`: the cursor
    // called next, as PostgreSQL reads it).
    if let [_, Token::Word(name)] = words.as_slice() {
        let name = name.clone();
        joined = Tokenizer::new(&dialect, "FETCH NEXT FROM ")
            .tokenize()
            .ok()?;
        joined.push(Token::Word(name));
    }
    let mut parsed = Parser::new(&dialect)
        .with_tokens(joined)
        .parse_statements()
        .ok()?;
    match parsed.as_mut_slice() {
        [Statement::Fetch { into, .. }] if into.is_none() => {
            if moved {
                *into = Some(ObjectName::from(vec![Ident::new(MOVE_MARKER)]));
            }
            Some(parsed)
        }
        _ => None,
    }
}

/// Whether a FETCH's INTO target is the mark of a MOVE; an error for any other target.
pub(crate) fn is_move(into: &Option<ObjectName>) -> Result<bool> {
    match into {
        None => Ok(false),
        Some(name) if name.to_string() == MOVE_MARKER => Ok(true),
        Some(name) => Err(SqlError::unsupported(format!("FETCH … INTO {name}"))),
    }
}

/// A MOVE, as a portal the protocol bound can make it (it reads its rows once, so it
/// steps forward only): the name it moves (folded) and how many rows it passes (`None`:
/// all of them), or 55000 for a MOVE another way. `None` for another statement.
pub fn forward_move(statement: &DfStatement) -> Option<(String, Result<Option<u64>>)> {
    let DfStatement::Statement(s) = statement else {
        return None;
    };
    let Statement::Fetch {
        name,
        direction,
        into,
        ..
    } = s.as_ref()
    else {
        return None;
    };
    if !is_move(into).ok()? {
        return None;
    }
    use FetchDirection as D;
    let steps = match direction {
        D::Next | D::Forward { limit: None } => Ok(Some(1)),
        // A negative count steps backward.
        D::Count { limit } | D::Forward { limit: Some(limit) } => count(limit)
            .and_then(|k| u64::try_from(k).map_err(|_| only_forward()))
            .map(Some),
        D::All | D::ForwardAll => Ok(None),
        _ => Err(only_forward()),
    };
    Some((ident_name(name), steps))
}

fn only_forward() -> SqlError {
    SqlError::user("55000", "cursor can only scan forward")
}

struct Cursor {
    rows: RecordBatch,
    /// PostgreSQL's position: 0 before the first row, `n + 1` after the last.
    at: usize,
    scroll: bool,
    hold: bool,
}

#[derive(Default)]
pub(crate) struct Cursors(HashMap<String, Cursor>);

fn no_cursor(name: &str) -> SqlError {
    SqlError::user("34000", format!("cursor \"{name}\" does not exist"))
}

/// The count of a FETCH direction's literal.
fn count(limit: &datafusion::sql::sqlparser::ast::ValueWithSpan) -> Result<i64> {
    match &limit.value {
        Literal::Number(n, _) => n.parse::<i64>().ok(),
        _ => None,
    }
    .ok_or_else(|| SqlError::user(state::SYNTAX, format!("FETCH count {limit}")))
}

impl Cursors {
    /// Keeps the rows of a cursor's query under `name`.
    pub(crate) fn declare(
        &mut self,
        name: &Ident,
        schema: SchemaRef,
        batches: &[RecordBatch],
        scroll: bool,
        hold: bool,
    ) -> Result<()> {
        let name = ident_name(name);
        if self.0.contains_key(&name) {
            return Err(SqlError::user(
                "42P03",
                format!("cursor \"{name}\" already exists"),
            ));
        }
        let rows = concat_batches(&schema, batches).map_err(|e| SqlError::Query(e.to_string()))?;
        self.0.insert(
            name,
            Cursor {
                rows,
                at: 0,
                scroll,
                hold,
            },
        );
        Ok(())
    }

    /// The columns the cursor called `name` (as stored: folded) returns.
    pub(crate) fn schema(&self, name: &str) -> Option<SchemaRef> {
        self.0.get(name).map(|c| c.rows.schema())
    }

    /// FETCH `direction` FROM `name`: the rows, tagged `FETCH n`.
    pub(crate) fn fetch(&mut self, name: &Ident, direction: &FetchDirection) -> Result<Output> {
        let key = ident_name(name);
        let cursor = self.0.get_mut(&key).ok_or_else(|| no_cursor(&key))?;
        let n = cursor.rows.num_rows() as i64;
        let at = cursor.at as i64;
        use FetchDirection as D;
        // The rows to return as a step from the position: how many, and which way.
        let (target, step): (i64, i64) = match direction {
            D::Next => (at + 1, 1),
            D::Prior => (at - 1, -1),
            D::First => (1, 0),
            D::Last => (n, 0),
            D::Absolute { limit } => {
                let k = count(limit)?;
                (if k < 0 { n + 1 + k } else { k }, 0)
            }
            D::Relative { limit } => (at + count(limit)?, 0),
            D::Count { limit } | D::Forward { limit: Some(limit) } => {
                let k = count(limit)?;
                (at + k, if k < 0 { -1 } else { 1 })
            }
            D::Forward { limit: None } => (at + 1, 1),
            D::All | D::ForwardAll => (n + 1, 1),
            D::Backward { limit: Some(limit) } => {
                let k = count(limit)?;
                (at - k, if k < 0 { 1 } else { -1 })
            }
            D::Backward { limit: None } => (at - 1, -1),
            D::BackwardAll => (0, -1),
        };
        let backward = step < 0 || (step == 0 && target < at);
        if backward && !cursor.scroll {
            return Err(SqlError::user(
                "55000",
                "cursor can only scan forward (it was declared NO SCROLL)",
            ));
        }
        let target = target.clamp(0, n + 1);
        // A single-row move (FIRST, LAST, ABSOLUTE, RELATIVE) returns the row it lands on;
        // a count returns every row it passes, in the order it passes them.
        let picked: Vec<i64> = if step == 0 {
            (1..=n).filter(|&r| r == target).collect()
        } else if step > 0 {
            ((at + 1)..=target.min(n)).collect()
        } else {
            ((target.max(1))..at.min(n + 1)).rev().collect()
        };
        cursor.at = target as usize;
        let indices = datafusion::arrow::array::UInt32Array::from(
            picked.iter().map(|&r| (r - 1) as u32).collect::<Vec<_>>(),
        );
        let columns = cursor
            .rows
            .columns()
            .iter()
            .map(|c| datafusion::arrow::compute::take(c.as_ref(), &indices, None))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| SqlError::Query(e.to_string()))?;
        let schema = cursor.rows.schema();
        let batch = RecordBatch::try_new_with_options(
            Arc::clone(&schema),
            columns,
            &datafusion::arrow::array::RecordBatchOptions::new().with_row_count(Some(picked.len())),
        )
        .map_err(|e| SqlError::Query(e.to_string()))?;
        Ok(Output::Returned {
            tag: CommandTag::fetch(picked.len() as u64),
            schema,
            batches: vec![batch],
        })
    }

    /// CLOSE `which`.
    pub(crate) fn close(&mut self, which: &CloseCursor) -> Result<()> {
        match which {
            CloseCursor::All => self.0.clear(),
            CloseCursor::Specific { name } => {
                let key = ident_name(name);
                self.0.remove(&key).ok_or_else(|| no_cursor(&key))?;
            }
        }
        Ok(())
    }

    /// The block ended: its cursors (those without HOLD) with it.
    pub(crate) fn block_ended(&mut self) {
        self.0.retain(|_, c| c.hold);
    }
}
