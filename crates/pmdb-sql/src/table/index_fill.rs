//! Index builds over a loaded table, in batches a memtable takes whole.

use pmdb_engine::WriteBatch;

use super::Table;
use crate::error::Result;

impl Table {
    /// Writes the entries of index `i` for every stored row, in batches.
    pub fn fill_index(&self, i: usize) -> Result<()> {
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
            let row = self.decode(e.value)?;
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
