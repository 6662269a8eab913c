//! CREATE TABLE … AS SELECT: the query runs at the statement's read point, its columns
//! become the new table's (named as the query names them, typed by their Arrow types;
//! no primary key, as in PostgreSQL), and its rows fill the table before the table
//! appears (see [`crate::catalog::Catalog::create_table_filled`]).

use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::dataframe::DataFrame;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{CreateTable, Statement};

use crate::arrow_conv::text_type;
use crate::error::{Result, SqlError, df_error};
use crate::names::object_name;
use crate::provider::load_batch;
use crate::read_point::ReadPoint;
use crate::schema::{ColumnDef, TableDef};
use crate::session::Session;
use crate::table::TableWriter;
use crate::types::{MAX_DECIMAL_PRECISION, SqlType};

/// The column type a query's column of Arrow type `ty` makes; 0A000 for one pmdb has
/// no column type for.
fn column_type(name: &str, ty: &DataType) -> Result<SqlType> {
    Ok(match ty {
        DataType::Boolean => SqlType::Boolean,
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => SqlType::SmallInt,
        DataType::Int32 | DataType::UInt16 => SqlType::Int,
        DataType::Int64 | DataType::UInt32 => SqlType::BigInt,
        DataType::Decimal128(p, s) if *p <= MAX_DECIMAL_PRECISION && *s >= 0 => SqlType::Decimal {
            precision: *p,
            scale: *s as u8,
        },
        DataType::Float16 | DataType::Float32 => SqlType::Real,
        DataType::Float64 => SqlType::Double,
        // PostgreSQL makes text of an untyped NULL too.
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null => SqlType::Text,
        DataType::Date32 | DataType::Date64 => SqlType::Date,
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
    if !create.columns.is_empty() || !create.constraints.is_empty() {
        return Err(SqlError::unsupported(
            "column names or constraints in CREATE TABLE … AS: name the query's columns",
        ));
    }
    if create.or_replace || create.temporary || create.external {
        return Err(SqlError::unsupported(
            "CREATE OR REPLACE, TEMPORARY or EXTERNAL tables",
        ));
    }
    let name = object_name(&create.name)?;
    let state = session.statement_state(read_point.clone());
    let plan = state
        .statement_to_plan(DfStatement::Statement(Box::new(Statement::Query(
            query.clone(),
        ))))
        .await
        .map_err(df_error)?;
    let columns = plan
        .schema()
        .fields()
        .iter()
        .map(|f| {
            Ok(ColumnDef::new(
                f.name().clone(),
                match text_type(f) {
                    Some(ty) => ty,
                    None => column_type(f.name(), f.data_type())?,
                },
                false,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    let batches = session.collect(DataFrame::new(state, plan)).await?;
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
    };
    let if_not_exists = create.if_not_exists;
    session
        .off_executor(move |catalog| {
            let runtime = tokio::runtime::Handle::current();
            catalog.create_table_filled(def, if_not_exists, |table| {
                // The table is new: no other writer can know it yet.
                let mut writer = TableWriter::for_load(table, Vec::new())?;
                runtime.block_on(async {
                    for batch in &batches {
                        load_batch(table, &mut writer, batch).await?;
                    }
                    writer.commit().await?;
                    Ok(writer.rows())
                })
            })
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn query_columns_map_to_column_types() {
        assert_eq!(column_type("a", &DataType::Int64).unwrap(), SqlType::BigInt);
        assert_eq!(
            column_type("a", &DataType::Decimal128(12, 2)).unwrap(),
            SqlType::Decimal {
                precision: 12,
                scale: 2
            }
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
