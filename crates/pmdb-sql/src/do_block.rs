//! DO blocks: `DO [LANGUAGE plpgsql] $$ … $$`, PostgreSQL's anonymous code blocks,
//! which migrations write to make a type or an index only if it is missing, and
//! drivers' tests to raise notices and errors. The parser knows no DO, so [`parse`]
//! reads one into a statement it does know, `CALL pg_catalog."do"('body')`, which
//! [`body_of`] recognises. [`run`] runs the block's statements ([`crate::plpgsql`]) in
//! the session through a [`Host`]: as one statement, in the session's block (an
//! implicit one of its own when there is none), its RAISEs as notices or as errors,
//! its exception handlers over a savepoint each, as PL/pgSQL's are.

use async_trait::async_trait;
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Statement, Value,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::Token;
use futures::future::BoxFuture;

use crate::error::{Raised, Result, SqlError, state};
use crate::notices::{Notice, Severity};
use crate::output::Output;
use crate::plpgsql::{Block, Level, Raise, RaiseOption, Stmt, StmtKind, sqlstate_of};

/// The function name a DO statement is read into.
const DO: &str = "do";

/// `sql` as one DO statement, if it is one: `None` if it is not, an error for a DO of
/// another language.
pub(crate) fn parse(sql: &str) -> Option<Result<Vec<Statement>>> {
    let words = crate::tokens::significant(sql)?;
    let word = |t: &Token, k: &str| matches!(t, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(k));
    let (first, rest) = words.split_first()?;
    if !word(first, "DO") {
        return None;
    }
    let string = |t: &Token| match t {
        Token::DollarQuotedString(s) => Some(s.value.clone()),
        Token::SingleQuotedString(s) | Token::EscapedStringLiteral(s) => Some(s.clone()),
        _ => None,
    };
    let (body, language) = match rest {
        [code] => (string(code)?, None),
        [language, name, code] | [code, language, name] if word(language, "LANGUAGE") => {
            let Token::Word(name) = name else {
                return None;
            };
            (string(code)?, Some(name.value.to_lowercase()))
        }
        _ => return None,
    };
    if let Some(other) = language.filter(|l| l != "plpgsql") {
        return Some(Err(match other.as_str() {
            "sql" | "c" | "internal" => SqlError::unsupported(format!(
                "language \"{other}\" does not support inline code execution"
            )),
            _ => SqlError::user(
                state::UNDEFINED_OBJECT,
                format!("language \"{other}\" does not exist"),
            ),
        }));
    }
    let call = format!(
        "CALL pg_catalog.\"{DO}\"({})",
        crate::quote_functions::literal(&body)
    );
    Some(
        Parser::parse_sql(&PostgreSqlDialect {}, &call)
            .map_err(|e| SqlError::Query(format!("a DO block read back: {e}"))),
    )
}

/// The body of the DO statement `s` stands for, if it is one.
pub(crate) fn body_of(s: &Statement) -> Option<&str> {
    let Statement::Call(f) = s else {
        return None;
    };
    let [schema, name] = f.name.0.as_slice() else {
        return None;
    };
    let (schema, name) = (schema.as_ident()?, name.as_ident()?);
    if schema.value != "pg_catalog" || name.value != DO || name.quote_style.is_none() {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    match list.args.as_slice() {
        [FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(v)))] => match &v.value {
            Value::SingleQuotedString(s) | Value::EscapedStringLiteral(s) => Some(s),
            _ => None,
        },
        _ => None,
    }
}

/// What a DO block needs of the session it runs in.
#[async_trait]
pub(crate) trait Host: Send {
    /// Runs one SQL statement in the session's block.
    async fn statement(&mut self, sql: &str) -> Result<Output>;
    fn notice(&self, notice: Notice);
    /// Opens a savepoint of the block's own (an exception handler's).
    async fn savepoint(&mut self) -> Result<()>;
    /// Undoes what was done since the latest savepoint [`Host::savepoint`] opened, and
    /// forgets it.
    async fn roll_back_savepoint(&mut self) -> Result<()>;
    /// Forgets the latest savepoint [`Host::savepoint`] opened, keeping its changes.
    fn release_savepoint(&mut self) -> Result<()>;
}

/// Runs the block `body` holds.
pub(crate) async fn run(host: &mut dyn Host, body: &str) -> Result<()> {
    let block = crate::plpgsql::parse(body)?;
    run_block(host, &block, None).await.map(|_| ())
}

/// Whether a RETURN ended the statements.
type Returned = bool;

fn run_block<'a>(
    host: &'a mut dyn Host,
    block: &'a Block,
    caught: Option<&'a Raised>,
) -> BoxFuture<'a, Result<Returned>> {
    Box::pin(async move {
        if block.handlers.is_empty() {
            return run_statements(host, &block.body, caught).await;
        }
        host.savepoint().await?;
        let error = match run_statements(host, &block.body, caught).await {
            Ok(returned) => {
                host.release_savepoint()?;
                return Ok(returned);
            }
            Err(e) => e,
        };
        // Undone whether a handler catches the error or not, as PostgreSQL's
        // subtransaction: a handler further out then undoes its own block.
        host.roll_back_savepoint().await?;
        let sqlstate = error.sqlstate();
        let Some(handler) = block
            .handlers
            .iter()
            .find(|h| h.conditions.iter().any(|c| c.catches(sqlstate)))
        else {
            return Err(error);
        };
        let raised = raised_from(&error, None);
        run_statements(host, &handler.body, Some(&raised)).await
    })
}

fn run_statements<'a>(
    host: &'a mut dyn Host,
    statements: &'a [Stmt],
    caught: Option<&'a Raised>,
) -> BoxFuture<'a, Result<Returned>> {
    Box::pin(async move {
        for s in statements {
            let context = format!(
                "PL/pgSQL function inline_code_block line {} at {}",
                s.line,
                s.kind.name()
            );
            if run_statement(host, s, caught)
                .await
                .map_err(|e| in_context(e, &s.kind, &context))?
            {
                return Ok(true);
            }
        }
        Ok(false)
    })
}

async fn run_statement(host: &mut dyn Host, s: &Stmt, caught: Option<&Raised>) -> Result<Returned> {
    match &s.kind {
        StmtKind::Raise(raise) => raise_one(host, raise, s.line, caught).await?,
        StmtKind::Perform(query) => {
            host.statement(&format!("SELECT {query}")).await?;
        }
        StmtKind::Execute(expr) => {
            let command = texts(host, std::slice::from_ref(expr)).await?.remove(0);
            let command = command.ok_or_else(|| {
                SqlError::user("22004", "query string argument of EXECUTE is null")
            })?;
            host.statement(&command).await?;
        }
        StmtKind::Sql(sql) => {
            if let Output::Rows { .. } = host.statement(sql).await? {
                return Err(SqlError::Raised(Box::new(Raised {
                    sqlstate: state::SYNTAX.to_owned(),
                    message: "query has no destination for result data".into(),
                    detail: None,
                    hint: Some(
                        "If you want to discard the results of a SELECT, use PERFORM instead."
                            .into(),
                    ),
                    context: None,
                })));
            }
        }
        StmtKind::If {
            branches,
            otherwise,
        } => {
            for (condition, body) in branches {
                if truth(host, condition).await? {
                    return run_statements(host, body, caught).await;
                }
            }
            return run_statements(host, otherwise, caught).await;
        }
        StmtKind::Assert { condition, message } => {
            if !truth(host, condition).await? {
                let message = match message {
                    Some(m) => texts(host, std::slice::from_ref(m))
                        .await?
                        .remove(0)
                        .unwrap_or_else(|| "assertion failed".into()),
                    None => "assertion failed".into(),
                };
                return Err(SqlError::Raised(Box::new(Raised {
                    sqlstate: "P0004".into(),
                    message,
                    detail: None,
                    hint: None,
                    context: None,
                })));
            }
        }
        StmtKind::Null => {}
        StmtKind::Return => return Ok(true),
        StmtKind::Block(block) => return run_block(host, block, caught).await,
    }
    Ok(false)
}

/// RAISE: a notice to the client, or the block's error.
async fn raise_one(
    host: &mut dyn Host,
    raise: &Raise,
    line: u64,
    caught: Option<&Raised>,
) -> Result<()> {
    if raise.again() {
        return match caught {
            Some(e) => Err(SqlError::Raised(Box::new(e.clone()))),
            None => Err(SqlError::user(
                "0Z002",
                "RAISE without parameters cannot be used outside an exception handler",
            )),
        };
    }
    // Every expression at once: the format's arguments, then the options' values.
    let mut exprs: Vec<String> = raise
        .format
        .iter()
        .flat_map(|(_, args)| args.clone())
        .collect();
    let arguments = exprs.len();
    exprs.extend(raise.options.iter().map(|(_, e)| e.clone()));
    let mut values = texts(host, &exprs).await?.into_iter();
    let args: Vec<Option<String>> = values.by_ref().take(arguments).collect();
    let mut message = match &raise.format {
        Some((format, _)) => Some(formatted(format, &args)?),
        None => None,
    };
    let mut sqlstate = raise.condition.as_ref().map(|(code, _)| code.clone());
    let (mut detail, mut hint) = (None, None);
    for ((option, _), value) in raise.options.iter().zip(values) {
        let value = value
            .ok_or_else(|| SqlError::user("22004", "RAISE statement option cannot be null"))?;
        match option {
            RaiseOption::Message => message = Some(value),
            RaiseOption::Detail => detail = Some(value),
            RaiseOption::Hint => hint = Some(value),
            RaiseOption::Errcode => sqlstate = Some(sqlstate_of(&value)?),
        }
    }
    let message = message
        .or_else(|| raise.condition.as_ref().map(|(_, written)| written.clone()))
        .unwrap_or_else(|| "unspecified".to_owned());
    let context = Some(format!(
        "PL/pgSQL function inline_code_block line {line} at RAISE"
    ));
    match raise.level {
        Level::Exception => Err(SqlError::Raised(Box::new(Raised {
            sqlstate: sqlstate.unwrap_or_else(|| "P0001".into()),
            message,
            detail,
            hint,
            context,
        }))),
        Level::Notice(severity) => {
            let default = match severity {
                Severity::Warning => "01000",
                _ => "00000",
            };
            host.notice(Notice {
                severity,
                sqlstate: sqlstate.unwrap_or_else(|| default.into()),
                message,
                detail,
                hint,
                context,
                // PostgreSQL's routine for RAISE, which clients show.
                routine: Some("exec_stmt_raise"),
            });
            Ok(())
        }
    }
}

/// RAISE's format with each `%` replaced by the next argument (NULL as `<NULL>`), and
/// `%%` by `%`.
fn formatted(format: &str, args: &[Option<String>]) -> Result<String> {
    let mut out = String::with_capacity(format.len());
    let mut args = args.iter();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
        } else if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
        } else {
            let arg = args.next().ok_or_else(|| {
                SqlError::user(state::SYNTAX, "too few parameters specified for RAISE")
            })?;
            out.push_str(arg.as_deref().unwrap_or("<NULL>"));
        }
    }
    if args.next().is_some() {
        return Err(SqlError::user(
            state::SYNTAX,
            "too many parameters specified for RAISE",
        ));
    }
    Ok(out)
}

/// The values of `exprs` as text (NULL as `None`), from one query.
async fn texts(host: &mut dyn Host, exprs: &[String]) -> Result<Vec<Option<String>>> {
    if exprs.is_empty() {
        return Ok(Vec::new());
    }
    let list: Vec<String> = exprs
        .iter()
        .map(|e| format!("CAST(({e}) AS TEXT)"))
        .collect();
    let batch = one_row(host, &format!("SELECT {}", list.join(", "))).await?;
    let mut out = Vec::with_capacity(exprs.len());
    for column in batch.columns() {
        let column = cast(column, &DataType::Utf8)
            .map_err(|e| SqlError::Query(format!("a DO block's value as text: {e}")))?;
        let strings = column.as_string::<i32>();
        out.push((!strings.is_null(0)).then(|| strings.value(0).to_owned()));
    }
    Ok(out)
}

/// Whether the condition `expr` holds (NULL does not).
async fn truth(host: &mut dyn Host, expr: &str) -> Result<bool> {
    let batch = one_row(host, &format!("SELECT CAST(({expr}) AS BOOLEAN)")).await?;
    let column = batch
        .column(0)
        .as_boolean_opt()
        .ok_or_else(|| SqlError::Query("a DO block's condition gave no truth value".into()))?;
    Ok(column.is_valid(0) && column.value(0))
}

async fn one_row(
    host: &mut dyn Host,
    query: &str,
) -> Result<datafusion::arrow::array::RecordBatch> {
    let Output::Rows { batches, .. } = host.statement(query).await? else {
        return Err(SqlError::Query(
            "a DO block's expression gave no rows".into(),
        ));
    };
    batches
        .into_iter()
        .find(|b| b.num_rows() > 0)
        .ok_or_else(|| SqlError::Query("a DO block's expression gave no rows".into()))
}

/// `e` as an error raised at `context`: a SQL statement's (PERFORM's too) with its
/// text before, as PostgreSQL shows it. Errors that are not the statement's (damage, the
/// engine's) stay as they are.
fn in_context(e: SqlError, kind: &StmtKind, context: &str) -> SqlError {
    let statement = match kind {
        StmtKind::Sql(sql) => Some(sql.clone()),
        StmtKind::Perform(query) => Some(format!("SELECT {query}")),
        _ => None,
    };
    let context = match (&e, statement) {
        (SqlError::Raised(r), _) if r.context.is_some() => return e,
        // The statement's own error, not one the block found with it.
        (SqlError::User { .. }, Some(statement)) => {
            format!("SQL statement \"{statement}\"\n{context}")
        }
        (SqlError::User { .. } | SqlError::Raised(_), _) => context.to_owned(),
        _ => return e,
    };
    SqlError::Raised(Box::new(raised_from(&e, Some(context))))
}

/// `e`'s fields as a raised error's, its context `context` where it had none.
fn raised_from(e: &SqlError, context: Option<String>) -> Raised {
    Raised {
        sqlstate: e.sqlstate().to_owned(),
        message: e.message(),
        detail: e.detail().map(str::to_owned),
        hint: e.hint().map(str::to_owned),
        context: e.context().map(str::to_owned).or(context),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn do_reads_into_a_call_and_back() {
        let s = parse("DO $$BEGIN RAISE NOTICE 'it''s'; END$$")
            .unwrap()
            .unwrap();
        assert_eq!(body_of(&s[0]), Some("BEGIN RAISE NOTICE 'it''s'; END"));
        let s = parse("do language plpgsql 'BEGIN NULL; END' ;")
            .unwrap()
            .unwrap();
        assert_eq!(body_of(&s[0]), Some("BEGIN NULL; END"));
        let s = parse("DO $x$ BEGIN RAISE NOTICE '\\'; END $x$ LANGUAGE plpgsql")
            .unwrap()
            .unwrap();
        assert_eq!(body_of(&s[0]), Some(" BEGIN RAISE NOTICE '\\'; END "));
        assert_eq!(
            parse("DO LANGUAGE sql $$ SELECT 1 $$")
                .unwrap()
                .unwrap_err()
                .sqlstate(),
            "0A000"
        );
        assert_eq!(
            parse("DO LANGUAGE plperl $$ 1 $$")
                .unwrap()
                .unwrap_err()
                .sqlstate(),
            "42704"
        );
        assert!(parse("DOUBLE").is_none() && parse("DO 1").is_none());
    }

    #[test]
    fn raise_formats_as_postgresql_does() {
        let args = [Some("1".to_owned()), None];
        assert_eq!(
            formatted("a % b % 100%%", &args).unwrap(),
            "a 1 b <NULL> 100%"
        );
        assert_eq!(formatted("%", &[]).unwrap_err().sqlstate(), "42601");
        assert_eq!(formatted("x", &args).unwrap_err().sqlstate(), "42601");
    }
}
