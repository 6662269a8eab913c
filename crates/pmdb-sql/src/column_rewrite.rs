//! DROP COLUMN and ALTER COLUMN … TYPE, the changes stored rows cannot follow in place:
//! the new definition (a dropped column takes the indexes, keys, foreign keys and CHECK
//! constraints that use it along, as in PostgreSQL) and the conversion of each row, for
//! a table rebuild ([`Catalog::rebuild_table`]). Values change type by PostgreSQL's
//! assignment casts (to text in its text form, to an integer rounded), or by the
//! `USING` expression, planned over the old row.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use datafusion::common::DFSchema;
use datafusion::execution::context::SessionState;
use datafusion::physical_plan::PhysicalExpr;
use datafusion::sql::sqlparser::ast::{Expr as SqlExpr, ExprWithAlias};

use crate::arrow_conv::{arrays_of, arrow_schema, cast_to_column, row_values};
use crate::catalog::{Catalog, Convert, Rebuild};
use crate::error::{Result, SqlError, df_error, state, undefined_column};
use crate::key_rules::comparable;
use crate::names::may_refer_to;
use crate::schema::{ColumnDef, TableDef};
use crate::types::{SqlType, Value};

/// ALTER COLUMN `column` TYPE, planned.
pub(crate) struct TypeChange {
    pub column: String,
    pub ty: SqlType,
    /// The USING expression over the old row.
    using: Option<Arc<dyn PhysicalExpr>>,
}

/// Plans ALTER COLUMN `column` TYPE `ty` [USING `using`] on a table of definition
/// `def`: without USING, the column's type must convert to `ty` by an assignment cast
/// (42804 otherwise, as in PostgreSQL).
pub(crate) fn type_change(
    state: &SessionState,
    def: &TableDef,
    column: &str,
    ty: SqlType,
    using: Option<&SqlExpr>,
) -> Result<TypeChange> {
    let p = def
        .column(column)
        .ok_or_else(|| undefined_column(column, &def.name))?;
    let from = def.columns[p].ty;
    let using = match using {
        None if assignable(from, ty) => None,
        None => {
            return Err(SqlError::user(
                state::DATATYPE_MISMATCH,
                format!(
                    "column \"{column}\" cannot be cast automatically to type {}",
                    ty.to_string().to_lowercase()
                ),
            )
            .with_detail(format!(
                "You might need to specify \"USING {column}::{}\".",
                ty.to_string().to_lowercase()
            )));
        }
        Some(e) => {
            let schema = arrow_schema(def, None);
            let df_schema = DFSchema::try_from(schema.as_ref().clone()).map_err(df_error)?;
            let expr = state
                .create_logical_expr_from_sql_expr(
                    ExprWithAlias {
                        expr: e.clone(),
                        alias: None,
                    },
                    &df_schema,
                )
                .map_err(df_error)?;
            Some(
                state
                    .create_physical_expr(expr, &df_schema)
                    .map_err(df_error)?,
            )
        }
    };
    Ok(TypeChange {
        column: column.to_owned(),
        ty,
        using,
    })
}

/// Whether PostgreSQL converts a value of type `from` to `to` in an assignment: numbers
/// to numbers, anything to a string type, strings to strings, dates and timestamps to
/// each other.
fn assignable(from: SqlType, to: SqlType) -> bool {
    use SqlType as T;
    let number = |t| {
        matches!(
            t,
            T::SmallInt | T::Int | T::BigInt | T::Decimal { .. } | T::Real | T::Double
        )
    };
    let time = |t| matches!(t, T::Date | T::Timestamp | T::TimestampTz);
    from == to || is_string(to) || (number(from) && number(to)) || (time(from) && time(to))
}

fn is_string(ty: SqlType) -> bool {
    matches!(ty, SqlType::Char(_) | SqlType::Varchar(_) | SqlType::Text)
}

/// Table `old` after `drops` (the named columns, with what needs them) and `changes`
/// (new column types): what [`Catalog::rebuild_table`] makes of it. The foreign keys
/// between a changed column and another table's must stay comparable (42804).
pub(crate) fn rebuilt(
    catalog: &Catalog,
    old: &TableDef,
    drops: &[String],
    changes: &[TypeChange],
    cascade: bool,
) -> Result<Rebuild> {
    for d in drops {
        if old.column(d).is_none() {
            return Err(undefined_column(d, &old.name));
        }
    }
    let mut def = old.clone();
    for c in changes {
        let p = old
            .column(&c.column)
            .ok_or_else(|| undefined_column(&c.column, &old.name))?;
        def.columns[p].ty = c.ty;
        // A column given a type is no longer of the domain it was declared of.
        def.columns[p].domain = None;
    }
    keys_stay_comparable(catalog, &def)?;
    let kept = |c: &ColumnDef| !drops.contains(&c.name);
    if !def.columns.iter().any(kept) {
        return Err(SqlError::unsupported(format!(
            "dropping every column of table \"{}\" (pmdb's tables have at least one)",
            old.name
        )));
    }
    let mut positions = Vec::with_capacity(def.columns.len());
    let mut next = 0u16;
    for c in &def.columns {
        positions.push(kept(c).then(|| {
            next += 1;
            next - 1
        }));
    }
    let moved = |columns: &[u16]| -> Option<Vec<u16>> {
        columns.iter().map(|&c| positions[c as usize]).collect()
    };
    def.columns.retain(kept);
    def.primary_key = moved(&def.primary_key).unwrap_or_default();
    def.indexes = std::mem::take(&mut def.indexes)
        .into_iter()
        .filter_map(|mut ix| {
            ix.columns = moved(&ix.columns)?;
            Some(ix)
        })
        .collect();
    def.foreign_keys = std::mem::take(&mut def.foreign_keys)
        .into_iter()
        .filter_map(|mut fk| {
            fk.columns = moved(&fk.columns)?;
            if fk.parent == old.id {
                fk.parent_columns = moved(&fk.parent_columns)?;
            }
            Some(fk)
        })
        .collect();
    def.checks
        .retain(|c| !drops.iter().any(|d| may_refer_to(&c.expr, d)));
    let dropping = match drops {
        [one] => format!("column {one} of table {}", old.name),
        _ => format!("columns {} of table {}", drops.join(", "), old.name),
    };
    Ok(Rebuild {
        def,
        positions,
        cascade,
        dropping,
    })
}

/// 42804 if a foreign key of `def` (from it, or to it from another table) pairs
/// columns whose types no longer compare.
fn keys_stay_comparable(catalog: &Catalog, def: &TableDef) -> Result<()> {
    let type_of = |table: u64, column: u16| -> Option<SqlType> {
        if table == def.id {
            return Some(def.columns[column as usize].ty);
        }
        catalog
            .table_by_id(table)
            .map(|t| t.def().columns[column as usize].ty)
    };
    let own = def.foreign_keys.iter().map(|fk| (def.id, fk.clone()));
    let others = catalog
        .referencing(def.id)
        .into_iter()
        .filter(|(t, _)| t.def().id != def.id)
        .map(|(t, fk)| (t.def().id, fk));
    for (child, fk) in own.chain(others) {
        for (&c, &p) in fk.columns.iter().zip(&fk.parent_columns) {
            if let (Some(a), Some(b)) = (type_of(child, c), type_of(fk.parent, p))
                && !comparable(a, b)
            {
                return Err(SqlError::user(
                    state::DATATYPE_MISMATCH,
                    format!(
                        "foreign key constraint \"{}\" cannot be implemented",
                        fk.name
                    ),
                )
                .with_detail(format!(
                    "Key columns are of incompatible types: {} and {}.",
                    a.to_string().to_lowercase(),
                    b.to_string().to_lowercase()
                )));
            }
        }
    }
    Ok(())
}

/// The conversion of rows of table `old` into rows of `new` (the definition
/// [`rebuilt`] made), `changes` applied.
pub(crate) fn converter(
    old: &TableDef,
    new: &TableDef,
    positions: &[Option<u16>],
    changes: Arc<Vec<TypeChange>>,
) -> Convert {
    let (old, new, positions) = (old.clone(), new.clone(), positions.to_vec());
    Box::new(move |rows| {
        if changes.is_empty() {
            return Ok(rows
                .into_iter()
                .map(|row| {
                    row.into_iter()
                        .zip(&positions)
                        .filter(|(_, p)| p.is_some())
                        .map(|(v, _)| v)
                        .collect()
                })
                .collect());
        }
        let types = old.types();
        let refs: Vec<&[Value]> = rows.iter().map(Vec::as_slice).collect();
        let batch = RecordBatch::try_new(arrow_schema(&old, None), arrays_of(&types, &refs))
            .map_err(|e| SqlError::Query(e.to_string()))?;
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(new.columns.len());
        for (i, column) in old.columns.iter().enumerate() {
            let Some(at) = positions[i] else { continue };
            let target = &new.columns[at as usize];
            let array = match changes.iter().find(|c| c.column == column.name) {
                None => Arc::clone(batch.column(i)),
                Some(TypeChange { using: Some(e), .. }) => e
                    .evaluate(&batch)
                    .and_then(|v| v.into_array(batch.num_rows()))
                    .map_err(df_error)?,
                Some(_) => assigned(batch.column(i), column.ty, &rows, i, target)?,
            };
            columns.push(cast_to_column(&array, target)?);
        }
        let new_types = new.types();
        Ok((0..rows.len())
            .map(|r| row_values(&columns, &new_types, r))
            .collect())
    })
}

/// Column `i` of `rows` (also as `array`), of type `from`, as an assignment converts it
/// to `target`: to a string type in PostgreSQL's text form, from a fraction to an
/// integer rounded (numeric half away from zero, floating point half to even).
fn assigned(
    array: &ArrayRef,
    from: SqlType,
    rows: &[Vec<Value>],
    i: usize,
    target: &ColumnDef,
) -> Result<ArrayRef> {
    if is_string(target.ty) && !is_string(from) {
        let text: StringArray = rows
            .iter()
            .map(|r| (r[i] != Value::Null).then(|| r[i].display(from)))
            .collect();
        return Ok(Arc::new(text));
    }
    let to = crate::arrow_conv::arrow_type(target.ty);
    if let Some(decimals) = crate::float_numeric::as_decimals(array, &to) {
        return decimals;
    }
    crate::integer_casts::rounded_for(array, &to)
}
