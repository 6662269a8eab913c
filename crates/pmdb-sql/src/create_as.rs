//! Tables a query fills: CREATE TABLE … AS SELECT and materialized views. The query runs
//! at the statement's read point, its columns become the new table's (named as the
//! statement or the query names them, typed by their Arrow types; no primary key, as in
//! PostgreSQL), and its rows fill the table before the table appears (see
//! [`crate::catalog::Catalog::create_table_filled`]); REFRESH MATERIALIZED VIEW runs a
//! view's query again into a new table that takes the view's place.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, Field, TimeUnit};
use datafusion::dataframe::DataFrame;
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{CreateTable, DataType as SqlDataType, Query, Statement};

use crate::arrow_conv::{arrow_type, text_type};
use crate::error::{Result, SqlError, df_error, state};
use crate::names::{RelName, ident_name, object_name};
use crate::provider::load_batch;
use crate::read_point::ReadPoint;
use crate::schema::{ColumnDef, TableDef};
use crate::session::Session;
use crate::table::{Table, TableWriter};
use crate::types::{MAX_DECIMAL_PRECISION, SqlType};

/// The column type query column `field` (to be called `name`) makes: the one its
/// metadata names, else its Arrow type's.
pub(crate) fn field_type(name: &str, field: &Field) -> Result<SqlType> {
    match text_type(field) {
        Some(ty) => Ok(ty),
        None => column_type(name, field.data_type()),
    }
}

/// The column type a query's column of Arrow type `ty` makes; 0A000 for one pmdb has
/// no column type for.
fn column_type(name: &str, ty: &DataType) -> Result<SqlType> {
    Ok(match ty {
        DataType::Boolean => SqlType::Boolean,
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => SqlType::SmallInt,
        DataType::Int32 | DataType::UInt16 => SqlType::Int,
        DataType::Int64 | DataType::UInt32 => SqlType::BigInt,
        // What `::numeric` gives, as PostgreSQL's is unconstrained.
        ty if ty == &arrow_type(SqlType::UNCONSTRAINED_NUMERIC) => SqlType::UNCONSTRAINED_NUMERIC,
        DataType::Decimal128(p, s) if *p <= MAX_DECIMAL_PRECISION && *s >= 0 => {
            SqlType::decimal(*p, *s as u8)
        }
        DataType::Float16 | DataType::Float32 => SqlType::Real,
        DataType::Float64 => SqlType::Double,
        // PostgreSQL makes text of an untyped NULL too.
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null => SqlType::Text,
        DataType::Date32 | DataType::Date64 => SqlType::Date,
        DataType::Time64(_) | DataType::Time32(_) => SqlType::Time,
        DataType::Timestamp(
            TimeUnit::Microsecond | TimeUnit::Millisecond | TimeUnit::Second,
            None,
        )
        | DataType::Timestamp(TimeUnit::Nanosecond, None) => SqlType::Timestamp,
        DataType::Timestamp(_, Some(_)) => SqlType::TimestampTz,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => SqlType::Bytea,
        other => {
            return Err(SqlError::unsupported(format!(
                "CREATE TABLE … AS with column {name:?} of type {other}"
            )));
        }
    })
}

/// A table a query fills: CREATE TABLE … AS, or a materialized view.
pub(crate) struct QueryTable {
    pub name: RelName,
    /// The query, its views already expanded.
    pub query: Query,
    /// The names given to the first columns (the others are named as the query names
    /// them).
    pub columns: Vec<String>,
    pub if_not_exists: bool,
    /// For a materialized view, its query as stored.
    pub materialized: Option<String>,
}

/// Runs CREATE TABLE … AS `create`; the rows it wrote (`None`: the table existed and
/// IF NOT EXISTS was given).
pub(crate) async fn run(
    session: &Session,
    read_point: &ReadPoint,
    create: &CreateTable,
) -> Result<Option<u64>> {
    let Some(query) = &create.query else {
        return Err(SqlError::Query("not a CREATE TABLE … AS".into()));
    };
    if !create.constraints.is_empty()
        || create
            .columns
            .iter()
            .any(|c| c.data_type != SqlDataType::Unspecified || !c.options.is_empty())
    {
        return Err(SqlError::unsupported(
            "column types or constraints in CREATE TABLE … AS: name the query's columns",
        ));
    }
    if create.or_replace || create.temporary || create.external {
        return Err(SqlError::unsupported(
            "CREATE OR REPLACE, TEMPORARY or EXTERNAL tables",
        ));
    }
    let table = QueryTable {
        name: object_name(&create.name)?,
        query: (**query).clone(),
        columns: create.columns.iter().map(|c| ident_name(&c.name)).collect(),
        if_not_exists: create.if_not_exists,
        materialized: None,
    };
    create_filled(session, read_point, table).await
}

/// Makes `table` with the rows of its query at `read_point`; the rows it wrote
/// (`None`: a relation of its name existed and IF NOT EXISTS was given).
pub(crate) async fn create_filled(
    session: &Session,
    read_point: &ReadPoint,
    table: QueryTable,
) -> Result<Option<u64>> {
    let QueryTable {
        name,
        query,
        columns: given,
        if_not_exists,
        materialized,
    } = table;
    if if_not_exists && session.catalog.names_a_relation(&name) {
        return Ok(None);
    }
    let (columns, batches) = rows_of(session, read_point, query, &given).await?;
    let def = TableDef {
        id: 0,
        schema: name.schema,
        name: name.name,
        primary_key_name: None,
        columns,
        primary_key: Vec::new(),
        indexes: Vec::new(),
        next_index_id: 0,
        foreign_keys: Vec::new(),
        checks: Vec::new(),
        comment: None,
        constraint_comments: Vec::new(),
        materialized,
    };
    session
        .off_executor(move |catalog| {
            catalog.create_table_filled(def, if_not_exists, |table| fill(table, &batches))
        })
        .await
}

/// REFRESH MATERIALIZED VIEW `name`: its query runs again at `read_point` and its
/// rows replace the view's, in one catalog change (its indexes kept, refilled).
/// Readers go on reading the rows they had meanwhile, so it is concurrent either way;
/// CONCURRENTLY asks, as in PostgreSQL, for a unique index to identify rows by.
pub(crate) async fn refresh(
    session: &Session,
    read_point: &ReadPoint,
    name: RelName,
    concurrently: bool,
) -> Result<()> {
    let table = session.catalog.table_or_error(&name)?;
    let Some(text) = table.def().materialized.clone() else {
        return Err(SqlError::user(
            state::WRONG_OBJECT_TYPE,
            format!("\"{}\" is not a materialized view", name.name),
        ));
    };
    if concurrently && !table.def().indexes.iter().any(|i| i.unique) {
        return Err(SqlError::user(
            state::OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!(
                "cannot refresh materialized view \"{}.{}\" concurrently (create a unique \
                 index on one or more of its columns)",
                name.schema, name.name
            ),
        ));
    }
    let query = crate::view_expansion::stored_query(&name.name, &text)?;
    let mut statement = Statement::Query(Box::new(query));
    crate::view_expansion::expand(&session.catalog, session.viewer, &mut statement)?;
    let Statement::Query(query) = statement else {
        unreachable!("a query expands to a query")
    };
    let names: Vec<String> = table.def().columns.iter().map(|c| c.name.clone()).collect();
    let (columns, batches) = rows_of(session, read_point, *query, &names).await?;
    if columns.iter().map(|c| c.ty).ne(table.def().types()) {
        return Err(SqlError::user(
            state::WRONG_OBJECT_TYPE,
            format!(
                "the query of materialized view \"{}\" no longer gives the columns it was made \
                 with (make it again)",
                name.name
            ),
        ));
    }
    session
        .off_executor(move |catalog| {
            catalog.refill_table(&name, |table| fill(table, &batches).map(|_| ()))
        })
        .await
}

/// The columns and the rows of `query` at `read_point`, the first columns named
/// `given`.
async fn rows_of(
    session: &Session,
    read_point: &ReadPoint,
    query: Query,
    given: &[String],
) -> Result<(Vec<ColumnDef>, Vec<RecordBatch>)> {
    let (state, plan) = plan_query(session, read_point, query).await?;
    let fields: Vec<String> = plan
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let names = crate::view_expansion::column_names(
        given,
        &fields,
        "too many column names were specified",
    )?;
    let columns = plan
        .schema()
        .fields()
        .iter()
        .zip(names)
        .map(|(f, name)| Ok(ColumnDef::new(name.clone(), field_type(&name, f)?, false)))
        .collect::<Result<Vec<_>>>()?;
    let batches = session.collect(DataFrame::new(state, plan)).await?;
    Ok((columns, batches))
}

/// `query` planned at `read_point`, with the state that runs the plan.
pub(crate) async fn plan_query(
    session: &Session,
    read_point: &ReadPoint,
    query: Query,
) -> Result<(SessionState, LogicalPlan)> {
    let state = session.statement_state(read_point.clone());
    let statement = DfStatement::Statement(Box::new(Statement::Query(Box::new(query))));
    let plan = state.statement_to_plan(statement).await.map_err(df_error)?;
    Ok((state, plan))
}

/// Writes `batches` into `table`, which is new: no other writer can know it yet.
fn fill(table: &Arc<Table>, batches: &[RecordBatch]) -> Result<u64> {
    let runtime = tokio::runtime::Handle::current();
    let mut writer = TableWriter::for_load(table, Vec::new())?;
    runtime.block_on(async {
        for batch in batches {
            load_batch(table, &mut writer, batch).await?;
        }
        writer.commit().await?;
        Ok(writer.rows())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_columns_map_to_column_types() {
        assert_eq!(column_type("a", &DataType::Int64).unwrap(), SqlType::BigInt);
        assert_eq!(
            column_type("a", &DataType::Decimal128(12, 2)).unwrap(),
            SqlType::decimal(12, 2)
        );
        assert_eq!(column_type("a", &DataType::Null).unwrap(), SqlType::Text);
        let list = DataType::List(Arc::new(datafusion::arrow::datatypes::Field::new(
            "x",
            DataType::Int32,
            true,
        )));
        assert_eq!(column_type("a", &list).unwrap_err().sqlstate(), "0A000");
    }
}
