//! RETURNING: an INSERT's, UPDATE's or DELETE's list evaluated over the rows it wrote (an
//! UPDATE's new values, a DELETE's old ones), by DataFusion, in a catalog of its own that
//! holds only those rows under the statement's name for the table, so an expression sees
//! exactly what the statement left, not the table as another read would.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{
    CatalogProvider, CatalogProviderList, MemoryCatalogProvider, MemoryCatalogProviderList,
    MemorySchemaProvider, SchemaProvider,
};
use datafusion::dataframe::DataFrame;
use datafusion::datasource::MemTable;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{FromTable, SelectItem, Statement};

use crate::arrow_conv::BatchBuilder;
use crate::ast_build;
use crate::dml::target;
use crate::error::{Result, SqlError, df_error};
use crate::insert::inserted_into;
use crate::output::{CommandTag, Output};
use crate::rowcode::encode_row;
use crate::session::Session;
use crate::table::Table;
use crate::types::Value;

/// The name the written rows have in the RETURNING query's own catalog.
const ROWS: &str = "__pmdb_returning";

/// `items` over `rows` of `table`, which the statement calls `alias`; `tag` is the
/// statement's.
pub(crate) async fn project(
    session: &Session,
    table: &Table,
    alias: &str,
    items: &[SelectItem],
    rows: &[Vec<Value>],
    tag: CommandTag,
) -> Result<Output> {
    let schema = Arc::clone(table.schema());
    let all: Vec<usize> = (0..table.types().len()).collect();
    let types: Arc<[_]> = table.types().into();
    let mut builder = BatchBuilder::new(types, &schema, &all, rows.len());
    let mut bytes = Vec::new();
    let codec = |e: crate::error::CodecError| SqlError::Query(format!("RETURNING: {e}"));
    for row in rows {
        bytes.clear();
        encode_row(table.types(), row, &mut bytes).map_err(codec)?;
        builder.push(&[], &bytes).map_err(codec)?;
    }
    let batch = builder
        .finish()
        .map_err(|e| SqlError::Query(format!("RETURNING: {e}")))?;
    let plan = plan(session, schema, vec![batch], alias, items).await?;
    let schema = Arc::clone(plan.schema().inner());
    let batches = session.collect(plan).await?;
    Ok(Output::Returned {
        tag,
        schema,
        batches,
    })
}

/// The RETURNING query over `batches` (rows of `schema`, the table's), in a catalog
/// that holds nothing else.
async fn plan(
    session: &Session,
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    alias: &str,
    items: &[SelectItem],
) -> Result<DataFrame> {
    let written = MemTable::try_new(schema, vec![batches]).map_err(df_error)?;
    let state = session.ctx.state();
    let names = state.config().options().catalog.clone();
    let tables = MemorySchemaProvider::new();
    tables
        .register_table(ROWS.into(), Arc::new(written))
        .map_err(df_error)?;
    let catalog = MemoryCatalogProvider::new();
    catalog
        .register_schema(&names.default_schema, Arc::new(tables))
        .map_err(df_error)?;
    let catalogs = MemoryCatalogProviderList::new();
    catalogs.register_catalog(names.default_catalog, Arc::new(catalog));
    let state = SessionStateBuilder::new_from_existing(state)
        .with_catalog_list(Arc::new(catalogs))
        .build();

    let query = ast_build::select(
        items.to_vec(),
        vec![ast_build::table(
            &crate::names::RelName::public(ROWS),
            alias,
        )],
    )?;
    let statement = DfStatement::Statement(Box::new(Statement::Query(Box::new(query))));
    let plan = state.statement_to_plan(statement).await.map_err(df_error)?;
    Ok(DataFrame::new(state, plan))
}

/// A statement's RETURNING clause, taken apart for planning.
pub(crate) struct Returning {
    items: Vec<SelectItem>,
    table: crate::names::RelName,
    alias: String,
    /// The statement without it, which DataFusion can plan (for its parameters).
    pub without: DfStatement,
}

impl Returning {
    /// The RETURNING of an INSERT, UPDATE or DELETE that has one.
    pub(crate) fn of(statement: &DfStatement) -> Result<Option<Returning>> {
        let DfStatement::Statement(s) = statement else {
            return Ok(None);
        };
        let mut without = s.as_ref().clone();
        let (items, (table, alias)) = match &mut without {
            Statement::Insert(i) => {
                let Some(items) = i.returning.take() else {
                    return Ok(None);
                };
                (items, inserted_into(i)?)
            }
            Statement::Update(u) => {
                let Some(items) = u.returning.take() else {
                    return Ok(None);
                };
                (items, target(&u.table)?)
            }
            Statement::Delete(d) => {
                let Some(items) = d.returning.take() else {
                    return Ok(None);
                };
                let (FromTable::WithFromKeyword(from) | FromTable::WithoutKeyword(from)) = &d.from;
                let [t] = from.as_slice() else {
                    return Err(SqlError::unsupported("DELETE from several tables"));
                };
                (items, target(t)?)
            }
            _ => return Ok(None),
        };
        Ok(Some(Returning {
            items,
            table,
            alias,
            without: DfStatement::Statement(Box::new(without)),
        }))
    }

    /// The columns the clause gives.
    pub(crate) async fn columns(&self, session: &Session) -> Result<SchemaRef> {
        let table = session.catalog.table_or_error(&self.table)?;
        let schema = Arc::clone(table.schema());
        let frame = plan(session, schema, Vec::new(), &self.alias, &self.items).await?;
        Ok(Arc::clone(frame.schema().inner()))
    }
}
