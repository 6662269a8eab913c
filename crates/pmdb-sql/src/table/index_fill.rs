//! Index builds over a loaded table, in batches a memtable takes whole; a unique
//! index's build then reads its entries in order, and two neighbours with the same
//! values (none NULL) fail it.

use pmdb_engine::WriteBatch;

use super::Table;
use crate::error::{Result, SqlError, state};
use crate::keycode::decode_key_prefix;
use crate::large_rows::Committed;
use crate::types::Value;

impl Table {
    /// Writes the entries of index `i` for every stored row, in batches; for a unique
    /// index, 23505 if two rows share its values.
    pub fn fill_index(&self, i: usize) -> Result<()> {
        self.write_index_entries(i)?;
        if self.indexes[i].def.unique {
            self.check_unique(i)?;
        }
        Ok(())
    }

    fn check_unique(&self, i: usize) -> Result<()> {
        let ix = &self.indexes[i];
        let mut previous: Option<Vec<Value>> = None;
        let mut scan = ix.subtable.scan::<[u8]>(..);
        while let Some(e) = scan.next_ref() {
            let e = e?;
            let (values, _) =
                decode_key_prefix(&ix.types, e.key).map_err(|source| SqlError::Damaged {
                    what: format!("entry of index {:?}", ix.def.name),
                    source,
                })?;
            if values.contains(&Value::Null) {
                previous = None;
                continue;
            }
            if previous.as_ref() == Some(&values) {
                return Err(SqlError::user(
                    state::UNIQUE_VIOLATION,
                    format!(
                        "could not create unique index \"{}\": Key ({})=({}) is duplicated.",
                        ix.def.name,
                        self.index_column_names(i).join(", "),
                        values
                            .iter()
                            .zip(&ix.types)
                            .map(|(v, ty)| v.display(*ty))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
            previous = Some(values);
        }
        Ok(())
    }

    /// The names of index `i`'s columns.
    pub fn index_column_names(&self, i: usize) -> Vec<&str> {
        self.column_names(&self.indexes[i].def.columns)
    }

    fn write_index_entries(&self, i: usize) -> Result<()> {
        let ix = &self.indexes[i];
        let db_write = |batch: WriteBatch| -> Result<()> {
            self.db.write(batch, pmdb_engine::WriteOptions::default())?;
            Ok(())
        };
        let mut batch = WriteBatch::new();
        let mut bytes = 0usize;
        let limit = self.fill_batch_bytes();
        let mut scan = self.rows.scan::<[u8]>(..);
        while let Some(e) = scan.next_ref() {
            let e = e?;
            let row = self.decode(&Committed, e.key, e.value)?;
            let ik = self.index_key(ix, &row, e.key)?;
            bytes += ik.len() + 16;
            batch.put(&ix.subtable, &ik, []);
            if bytes >= limit {
                db_write(std::mem::take(&mut batch))?;
                bytes = 0;
            }
        }
        if !batch.is_empty() {
            db_write(batch)?;
        }
        Ok(())
    }
}

/// Bytes of the batches an index build or a bulk load commits, at most.
const FILL_BATCH_BYTES: usize = 8 << 20;

impl Table {
    /// Bytes of keys and values an index build or a bulk load puts into one batch: a
    /// few MiB, and at most a quarter of a memtable, which must take the whole batch
    /// (a load's chunks about double it).
    pub fn fill_batch_bytes(&self) -> usize {
        FILL_BATCH_BYTES.min((self.db.options().memtable_size / 4) as usize)
    }
}
