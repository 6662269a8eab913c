//! What a row must satisfy before it is written: the column count, each column's type
//! and length, NOT NULL (the primary key's columns included), its CHECK constraints,
//! and the uniqueness of the primary key and the unique indexes, whose violations are
//! reported here.

use super::Table;
use super::references::shown;
use crate::error::{Result, SqlError, state};
use crate::types::{SqlType, Value};

impl Table {
    /// Checks `row` against the columns (count, types, lengths, NOT NULL and the
    /// primary key's implied NOT NULL) and the CHECK constraints.
    pub(super) fn check(&self, row: &[Value]) -> Result<()> {
        if row.len() != self.types.len() {
            return Err(SqlError::user(
                state::DATA_EXCEPTION,
                format!(
                    "table {:?} has {} columns; a row of {} values was given",
                    self.def.name,
                    self.types.len(),
                    row.len()
                ),
            ));
        }
        for (i, (col, v)) in self.def.columns.iter().zip(row).enumerate() {
            if matches!(v, Value::Null)
                && (col.not_null || self.def.primary_key.contains(&(i as u16)))
            {
                return Err(SqlError::user(
                    state::NOT_NULL_VIOLATION,
                    format!(
                        "null value in column \"{}\" of relation \"{}\" violates not-null \
                         constraint",
                        col.name, self.def.name
                    ),
                )
                .with_detail(self.failing_row(row)));
            }
            col.ty.check(v).map_err(|_| match col.ty {
                // What PostgreSQL says of a string longer than its column.
                SqlType::Char(n) | SqlType::Varchar(n) if matches!(v, Value::Str(_)) => {
                    let name = if matches!(col.ty, SqlType::Char(_)) {
                        "character"
                    } else {
                        "character varying"
                    };
                    SqlError::user(
                        state::STRING_DATA_RIGHT_TRUNCATION,
                        format!("value too long for type {name}({n})"),
                    )
                }
                // PostgreSQL's words for a number beyond a declared precision.
                SqlType::Decimal {
                    precision,
                    scale,
                    unconstrained,
                } => SqlError::user(
                    state::NUMERIC_OUT_OF_RANGE,
                    format!(
                        "numeric field overflow: value {} does not fit column {:?}: \
                         {} holds at most {} digits before the point{}",
                        v.display(col.ty),
                        col.name,
                        col.ty,
                        precision - scale,
                        if unconstrained {
                            " (pmdb's NUMERIC without a precision keeps 38 digits, 10 of them \
                             after the point)"
                        } else {
                            ""
                        }
                    ),
                ),
                _ => SqlError::user(
                    state::DATA_EXCEPTION,
                    format!(
                        "value {} does not fit column {:?} of type {}",
                        v.display(col.ty),
                        col.name,
                        col.ty
                    ),
                ),
            })?;
        }
        self.check_constraints(&[row])
    }

    /// The positions of the unique indexes.
    pub(super) fn unique_indexes(&self) -> &[usize] {
        &self.unique
    }

    /// A row that repeats the values of unique index `i`.
    pub(super) fn duplicate_in_index(&self, i: usize, row: &[Value]) -> SqlError {
        let ix = &self.indexes[i];
        SqlError::user(
            state::UNIQUE_VIOLATION,
            format!(
                "duplicate key value violates unique constraint \"{}\"",
                ix.def.name
            ),
        )
        .with_detail(format!(
            "Key ({})=({}) already exists.",
            self.index_column_names(i).join(", "),
            shown(&key_values(row, &ix.def.columns), &ix.def.columns, self)
        ))
    }

    pub(super) fn duplicate(&self, row: &[Value]) -> SqlError {
        let cols: Vec<&str> = self
            .def
            .primary_key
            .iter()
            .map(|&c| self.def.columns[c as usize].name.as_str())
            .collect();
        SqlError::user(
            state::UNIQUE_VIOLATION,
            format!(
                "duplicate key value violates unique constraint \"{}\"",
                self.def.primary_key_constraint()
            ),
        )
        .with_detail(format!(
            "Key ({})=({}) already exists.",
            cols.join(", "),
            shown(
                &key_values(row, &self.def.primary_key),
                &self.def.primary_key,
                self
            )
        ))
    }
}

/// The values of `row` in `columns`.
fn key_values(row: &[Value], columns: &[u16]) -> Vec<Value> {
    columns
        .iter()
        .map(|&c| row[usize::from(c)].clone())
        .collect()
}
