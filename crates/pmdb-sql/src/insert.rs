//! Writing an INSERT's rows, as computed before any lock is taken: under the table's
//! write lock, each row's keys claimed (see [`crate::table::TableWriter`]); when a claim
//! is held by another writer, the table's lock is let go, the claim waited for, and the
//! rows written anew, so that no writer waits for a claim while it holds a table.

use std::sync::Arc;

use crate::catalog::Catalog;
use crate::error::Result;
use crate::read_point::ReadPoint;
use crate::row_locks::RowLocks;
use crate::table::{Table, TableWriter};
use crate::types::Value;

/// What an INSERT wrote: the table, its rows (as `rows_of` gave them) and how many.
pub(crate) struct Inserted {
    pub table: Arc<Table>,
    pub rows: Vec<Vec<Value>>,
    pub count: u64,
}

/// Inserts into table `name` the rows `rows_of` gives for the table's current handle,
/// in one batch.
pub(crate) async fn insert_rows(
    catalog: &Catalog,
    row_locks: &Arc<RowLocks>,
    read_point: &ReadPoint,
    name: &str,
    rows_of: impl Fn(&Table) -> Result<Vec<Vec<Value>>>,
) -> Result<Inserted> {
    let mut locker = read_point.locker(row_locks);
    loop {
        let (table, guard) = catalog.lock_table_async(name).await?;
        let rows = rows_of(&table)?;
        let mut writer = TableWriter::new(&table)
            .through(read_point)
            .claiming(&mut locker);
        let written = rows.iter().try_for_each(|row| writer.insert(row));
        if let Some(claim) = writer.blocked().map(<[u8]>::to_vec) {
            drop(writer);
            drop(guard);
            locker.claim_waiting(table.as_ref(), &claim).await?;
            continue;
        }
        written?;
        writer.commit().await?;
        let count = writer.rows();
        drop(writer);
        return Ok(Inserted { table, rows, count });
    }
}
