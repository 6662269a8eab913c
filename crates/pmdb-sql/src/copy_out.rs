//! COPY table [(columns)] | (query) TO STDOUT: the rows, read at the statement's read
//! point as any query reads them, with how the client wants them written (text, CSV or
//! binary, delimiter, NULL, header); the server writes them as CopyData, the shell as
//! lines.

use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{CopySource, CopyTarget, Expr, Ident, SelectItem, Statement};

use crate::ast_build;
use crate::copy_options::{CopyOptions, Encoding, check_listed};
use crate::error::{Result, SqlError, state};
use crate::names::{ident_name, object_name};
use crate::output::{CopyEncoding, CopyOutFormat, Output};
use crate::read_point::ReadPoint;
use crate::session::Session;

/// Runs `statement`, a COPY … TO STDOUT.
pub(crate) async fn run(
    session: &Session,
    read_point: &ReadPoint,
    statement: &Statement,
) -> Result<Output> {
    let Statement::Copy {
        source,
        to: true,
        target,
        options,
        legacy_options,
        values,
    } = statement
    else {
        return Err(SqlError::Query("not a COPY … TO".into()));
    };
    if !matches!(target, CopyTarget::Stdout) {
        return Err(SqlError::unsupported(
            "COPY … TO a file or program: copy TO STDOUT (psql's \\copy writes a client file)",
        ));
    }
    if !values.is_empty() {
        return Err(SqlError::unsupported("COPY … TO with inline values"));
    }
    let o = CopyOptions::parse(options, legacy_options)?;
    o.check_direction(true)?;
    let encoding = match o.encoding.unwrap_or(Encoding::Text) {
        Encoding::Text => CopyEncoding::Text,
        Encoding::Csv => CopyEncoding::Csv,
        Encoding::Binary => CopyEncoding::Binary,
        Encoding::Parquet => {
            return Err(SqlError::unsupported("COPY … TO STDOUT in Parquet"));
        }
    };
    if encoding == CopyEncoding::Binary && (o.header || o.delimiter.is_some() || o.null.is_some()) {
        return Err(SqlError::user(
            state::SYNTAX,
            "cannot specify DELIMITER, NULL or HEADER in BINARY mode",
        ));
    }
    if encoding == CopyEncoding::Text && o.header {
        return Err(SqlError::unsupported(
            "COPY … TO in text with HEADER (use CSV)",
        ));
    }
    let query = match source {
        CopySource::Query(q) => q.as_ref().clone(),
        CopySource::Table {
            table_name,
            columns,
        } => {
            let name = object_name(table_name)?;
            if session.catalog.view(&name).is_some() {
                return Err(SqlError::user(
                    state::WRONG_OBJECT_TYPE,
                    format!("cannot copy from view {name:?}: try the COPY (SELECT ...) TO variant"),
                ));
            }
            let table = session.catalog.table_or_error(&name)?;
            let names: Vec<String> = if columns.is_empty() {
                table.def().columns.iter().map(|c| c.name.clone()).collect()
            } else {
                columns.iter().map(ident_name).collect()
            };
            let projection = names
                .iter()
                .map(|n| {
                    table
                        .def()
                        .column(n)
                        .ok_or_else(|| crate::error::undefined_column(n, &name.name))?;
                    Ok(SelectItem::UnnamedExpr(Expr::Identifier(
                        Ident::with_quote('"', n),
                    )))
                })
                .collect::<Result<Vec<_>>>()?;
            ast_build::select(projection, vec![ast_build::table(&name, &name.name)])?
        }
    };
    let statement = DfStatement::Statement(Box::new(Statement::Query(Box::new(query))));
    let state = session.statement_state(read_point.clone());
    let plan = state
        .statement_to_plan(statement)
        .await
        .map_err(crate::error::df_error)?;
    let schema = std::sync::Arc::clone(plan.schema().inner());
    let batches = session
        .collect(datafusion::dataframe::DataFrame::new(state, plan))
        .await?;
    let csv = encoding == CopyEncoding::Csv;
    let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    check_listed("FORCE_QUOTE", &o.force_quote, &names)?;
    let force_quote = names.iter().map(|n| o.force_quote.contains(n)).collect();
    Ok(Output::CopyOut {
        schema,
        batches,
        format: CopyOutFormat {
            encoding,
            delimiter: o.delimiter.unwrap_or(if csv { b',' } else { b'\t' }),
            null: o
                .null
                .unwrap_or_else(|| if csv { String::new() } else { "\\N".into() }),
            header: o.header,
            quote: o.quote.unwrap_or(b'"'),
            escape: o.escape.or(o.quote).unwrap_or(b'"'),
            force_quote,
        },
    })
}
