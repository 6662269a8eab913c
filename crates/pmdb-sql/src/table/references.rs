//! The rows a foreign key's parent holds, as the writer of a referencing row looks them
//! up: by the parent's primary key, or through the unique index of the referenced
//! columns. The writer locks the parent row it finds (FOR KEY SHARE, as PostgreSQL's
//! check does), so it cannot go until the referencing row's block ends, and then checks
//! it as the block wrote it or as committed now.

use std::sync::Arc;

use super::Table;
use crate::error::{Result, SqlError, state};
use crate::keycode::encode_key;
use crate::large_rows::Committed;
use crate::read_point::OwnOrCommitted;
use crate::read_point::SqlTxn;
use crate::schema::ForeignKeyDef;
use crate::types::Value;

/// A foreign key of a table, with its parent's handle as the catalog had it when the
/// writer was made (under the referencing table's write lock, which DDL that changes
/// the key also takes).
#[derive(Clone)]
pub struct Reference {
    pub def: ForeignKeyDef,
    pub parent: Arc<Table>,
}

impl Table {
    /// The row keys of the rows that may hold `values` in `columns` (the primary key's
    /// columns, or a unique index's, in the order of `columns`): the one key the values
    /// make, or those the index holds for them, as committed now or as `txn` reads
    /// them. `None` if the columns are no unique key (the definition was checked, so
    /// only damage gets here).
    pub(crate) fn keys_holding(
        &self,
        columns: &[u16],
        values: &[Value],
        txn: Option<&SqlTxn>,
    ) -> Result<Vec<Vec<u8>>> {
        let ordered = |key: &[u16]| -> Vec<Value> {
            key.iter()
                .map(|c| {
                    let at = columns.iter().position(|x| x == c).expect("same columns");
                    values[at].clone()
                })
                .collect()
        };
        match crate::key_rules::unique_key_of(&self.def, columns) {
            Some(None) => Ok(vec![self.key_for(&ordered(&self.def.primary_key))?]),
            Some(Some(i)) => {
                let ix = &self.indexes[i];
                let mut prefix = Vec::new();
                encode_key(&ix.types, &ordered(&ix.def.columns), &mut prefix)
                    .map_err(|e| SqlError::user(state::DATA_EXCEPTION, e.to_string()))?;
                let mut keys = Vec::new();
                let mut scan = ix.subtable.scan(prefix.clone()..);
                while let Some(e) = scan.next_ref() {
                    let entry = e?.key;
                    if !entry.starts_with(&prefix) {
                        break;
                    }
                    keys.push(entry[prefix.len()..].to_vec());
                }
                if let Some(txn) = txn {
                    for entry in txn.keys_with_prefix(&ix.subtable, &prefix)? {
                        let key = entry[prefix.len()..].to_vec();
                        if !keys.contains(&key) {
                            keys.push(key);
                        }
                    }
                }
                Ok(keys)
            }
            None => Err(SqlError::Query(format!(
                "the columns a foreign key references are no unique key of table {:?}",
                self.def.name
            ))),
        }
    }

    /// The row stored under `key` as `txn` wrote it, else as committed now.
    pub(crate) fn row_for_check(
        &self,
        key: &[u8],
        txn: Option<&SqlTxn>,
    ) -> Result<Option<Vec<Value>>> {
        match txn {
            Some(txn) => txn
                .own_or_committed(&self.rows, key)?
                .map(|v| self.decode(&OwnOrCommitted(txn), key, &v)),
            None => self
                .rows
                .get(key)?
                .map(|v| self.decode(&Committed, key, &v)),
        }
        .transpose()
    }

    /// Checks that every stored row (committed now) with `fk`'s columns all non-NULL
    /// has its row in `parent`, for ALTER TABLE ADD FOREIGN KEY (23503 otherwise).
    pub(crate) fn check_stored_references(&self, fk: &ForeignKeyDef, parent: &Table) -> Result<()> {
        let mut scan = self.rows.scan::<[u8]>(..);
        while let Some(e) = scan.next_ref() {
            let e = e?;
            let row = self.decode(&Committed, e.key, e.value)?;
            let Some(values) = key_of_row(fk, &row) else {
                continue;
            };
            let found = match in_types(&values, parent, &fk.parent_columns) {
                None => false,
                Some(wanted) => {
                    let mut found = false;
                    for key in parent.keys_holding(&fk.parent_columns, &wanted, None)? {
                        if let Some(r) = parent.row_for_check(&key, None)?
                            && holds(&r, &fk.parent_columns, &wanted)
                        {
                            found = true;
                            break;
                        }
                    }
                    found
                }
            };
            if !found {
                return Err(self.missing_parent(fk, parent, &values));
            }
        }
        Ok(())
    }

    /// A row of this table whose `fk` values are `values` has no parent row.
    pub(crate) fn missing_parent(
        &self,
        fk: &ForeignKeyDef,
        parent: &Table,
        values: &[Value],
    ) -> SqlError {
        SqlError::user(
            state::FOREIGN_KEY_VIOLATION,
            format!(
                "insert or update on table \"{}\" violates foreign key constraint \"{}\"",
                self.def.name, fk.name
            ),
        )
        .with_detail(format!(
            "Key ({})=({}) is not present in table \"{}\".",
            self.column_names(&fk.columns).join(", "),
            shown(values, &fk.columns, self),
            parent.def.name
        ))
    }

    /// PostgreSQL's detail of a row a constraint refused.
    pub(crate) fn failing_row(&self, row: &[Value]) -> String {
        let all: Vec<u16> = (0..row.len() as u16).collect();
        format!("Failing row contains ({}).", shown(row, &all, self))
    }

    /// The names of the columns at `positions`.
    pub(crate) fn column_names(&self, positions: &[u16]) -> Vec<&str> {
        positions
            .iter()
            .map(|&c| self.def.columns[usize::from(c)].name.as_str())
            .collect()
    }
}

/// The values of `fk`'s columns in `row`; `None` if one is NULL: the row references
/// nothing (MATCH SIMPLE).
pub(crate) fn key_of_row(fk: &ForeignKeyDef, row: &[Value]) -> Option<Vec<Value>> {
    fk.columns
        .iter()
        .map(|&c| Some(row[usize::from(c)].clone()).filter(|v| *v != Value::Null))
        .collect()
}

/// `values` as values of the columns `columns` of `table`; `None` if one cannot be (no
/// row of the table holds it).
pub(crate) fn in_types(values: &[Value], table: &Table, columns: &[u16]) -> Option<Vec<Value>> {
    values
        .iter()
        .zip(columns)
        .map(|(v, &c)| crate::key_rules::converted(v, table.types[usize::from(c)]))
        .collect()
}

/// Whether `row` holds `values` in `columns`.
pub(crate) fn holds(row: &[Value], columns: &[u16], values: &[Value]) -> bool {
    columns
        .iter()
        .zip(values)
        .all(|(&c, v)| row[usize::from(c)].sql_cmp(v) == Some(std::cmp::Ordering::Equal))
}

/// `values` (of the columns `columns` of `table`) as PostgreSQL's messages show them.
pub(crate) fn shown(values: &[Value], columns: &[u16], table: &Table) -> String {
    values
        .iter()
        .zip(columns)
        .map(|(v, &c)| match v {
            Value::Null => "null".to_owned(),
            Value::Str(s) => s.clone(),
            Value::Bytes(b) => crate::text_forms::bytea_text(b),
            Value::Uuid(u) => crate::text_forms::uuid_text(*u),
            v => v.display(table.def.columns[usize::from(c)].ty),
        })
        .collect::<Vec<_>>()
        .join(", ")
}
