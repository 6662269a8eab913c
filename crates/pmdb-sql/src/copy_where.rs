//! `COPY table [(columns)] FROM STDIN [options] WHERE condition`, which the parser does
//! not know: only the rows the condition holds for are loaded, as in PostgreSQL. The
//! statement is parsed as the COPY without its WHERE and carried as a COPY whose source
//! is the query `SELECT columns FROM table WHERE condition` (a form PostgreSQL's grammar
//! has no other use for: a query is never copied FROM); [`RowFilter`] plans the
//! condition over the table's columns and keeps the rows it is true for.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::DFSchema;
use datafusion::execution::context::SessionState;
use datafusion::physical_plan::PhysicalExpr;
use datafusion::sql::sqlparser::ast::{
    CopySource, Expr, SelectItem, SetExpr, Statement, TableFactor,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::Token;

use crate::arrow_conv::{arrow_schema, cast_columns};
use crate::error::{Result, SqlError, df_error, state};
use crate::names::{RelName, ident_name, object_name};
use crate::schema::TableDef;

/// The COPY … FROM … WHERE `sql` is, as the query-sourced COPY this module reads;
/// `None` for any other text.
pub(crate) fn parse(sql: &str) -> Option<Result<Vec<Statement>>> {
    let tokens = crate::tokens::located(sql)?;
    let starts_copy = matches!(tokens.first(), Some(t) if matches!(&t.token, Token::Word(w) if w.keyword == Keyword::COPY));
    if !starts_copy {
        return None;
    }
    let mut depth = 0usize;
    let mut from = false;
    let mut at = None;
    for (i, t) in tokens.iter().enumerate() {
        match &t.token {
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            // A WHERE of a later statement is not this COPY's.
            Token::SemiColon => break,
            Token::Word(w) if depth == 0 && matches!(w.keyword, Keyword::FROM | Keyword::TO) => {
                from = true;
            }
            Token::Word(w) if depth == 0 && from && w.keyword == Keyword::WHERE => {
                at = Some(i);
                break;
            }
            _ => {}
        }
    }
    let at = at?;
    // The condition runs to the end of the text, or to a semicolon closing it.
    let rest = &tokens[at + 1..];
    if let Some(semi) = rest.iter().position(|t| t.token == Token::SemiColon)
        && semi + 1 < rest.len()
    {
        return None;
    }
    let head = &sql[..tokens[at].bytes.start];
    let condition = sql[tokens[at].bytes.end..].trim().trim_end_matches(';');
    Some(filtered_copy(head, condition))
}

fn filtered_copy(head: &str, condition: &str) -> Result<Vec<Statement>> {
    let dialect = PostgreSqlDialect {};
    let syntax = |e: datafusion::sql::sqlparser::parser::ParserError| {
        SqlError::user(state::SYNTAX, e.to_string())
    };
    let mut parsed = Parser::parse_sql(&dialect, head).map_err(syntax)?;
    let (Some(mut copy), true) = (parsed.pop(), parsed.is_empty()) else {
        return Err(SqlError::user(
            state::SYNTAX,
            "syntax error at or near \"WHERE\"",
        ));
    };
    let Statement::Copy {
        source: CopySource::Table {
            table_name,
            columns,
        },
        to: false,
        ..
    } = &copy
    else {
        return Err(SqlError::user(
            state::SYNTAX,
            "WHERE clause not allowed with COPY TO",
        ));
    };
    let listed = match columns.is_empty() {
        true => "*".to_owned(),
        false => columns
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    };
    let query = Parser::new(&dialect)
        .try_with_sql(&format!(
            "SELECT {listed} FROM {table_name} WHERE {condition}"
        ))
        .and_then(|mut p| p.parse_query())
        .map_err(syntax)?;
    if let Statement::Copy { source, .. } = &mut copy {
        *source = CopySource::Query(query);
    }
    Ok(vec![copy])
}

/// The table, the columns listed (none: every column) and the condition of a COPY …
/// FROM whose source [`parse`] made a query; `None` for another source.
pub(crate) fn target(source: &CopySource) -> Option<Result<(RelName, Vec<String>, Expr)>> {
    let CopySource::Query(q) = source else {
        return None;
    };
    let SetExpr::Select(select) = q.body.as_ref() else {
        return None;
    };
    let (Some(from), Some(condition)) = (select.from.first(), &select.selection) else {
        return None;
    };
    let TableFactor::Table { name, .. } = &from.relation else {
        return None;
    };
    Some((|| {
        let mut listed = Vec::new();
        for item in &select.projection {
            match item {
                SelectItem::Wildcard(_) => {}
                SelectItem::UnnamedExpr(Expr::Identifier(i)) => listed.push(ident_name(i)),
                _ => return Err(SqlError::unsupported("COPY (query) FROM")),
            }
        }
        Ok((object_name(name)?, listed, condition.clone()))
    })())
}

/// A COPY's WHERE, planned over its table's columns.
pub(crate) struct RowFilter {
    schema: SchemaRef,
    condition: Arc<dyn PhysicalExpr>,
}

impl RowFilter {
    /// Plans `condition` over the columns of `def` with the session's functions: it
    /// must give a boolean (42804) and may not hold a subquery (0A000), as in
    /// PostgreSQL.
    pub(crate) fn plan(
        state: &SessionState,
        def: &TableDef,
        condition: &Expr,
    ) -> Result<RowFilter> {
        let mut subquery = false;
        let _ = datafusion::sql::sqlparser::ast::visit_expressions(condition, |e| {
            subquery |= matches!(
                e,
                Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. }
            );
            std::ops::ControlFlow::<()>::Continue(())
        });
        if subquery {
            return Err(SqlError::unsupported(
                "cannot use subquery in COPY FROM WHERE condition",
            ));
        }
        let schema = arrow_schema(def, None);
        let df_schema =
            DFSchema::try_from_qualified_schema(def.name.as_str(), &schema).map_err(df_error)?;
        let logical = state
            .create_logical_expr(&condition.to_string(), &df_schema)
            .map_err(df_error)?;
        let condition = state
            .create_physical_expr(logical, &df_schema)
            .map_err(df_error)?;
        let ty = condition.data_type(&schema).map_err(df_error)?;
        if ty != DataType::Boolean && ty != DataType::Null {
            return Err(SqlError::user(
                state::DATATYPE_MISMATCH,
                format!("argument of WHERE must be type boolean, not type {ty}"),
            ));
        }
        Ok(RowFilter { schema, condition })
    }

    /// The rows of `batch` (every column of the table, in its order) the condition is
    /// true for, their columns of the table's types.
    pub(crate) fn keep(&self, def: &TableDef, batch: &RecordBatch) -> Result<RecordBatch> {
        let columns: Vec<ArrayRef> = cast_columns(def, batch.columns())?;
        let typed = RecordBatch::try_new(Arc::clone(&self.schema), columns)
            .map_err(|e| SqlError::Query(e.to_string()))?;
        let verdict = self
            .condition
            .evaluate(&typed)
            .and_then(|v| v.into_array(typed.num_rows()))
            .map_err(df_error)?;
        if verdict.data_type() == &DataType::Null {
            return Ok(typed.slice(0, 0));
        }
        filter_record_batch(&typed, verdict.as_boolean())
            .map_err(|e| SqlError::Query(e.to_string()))
    }
}
