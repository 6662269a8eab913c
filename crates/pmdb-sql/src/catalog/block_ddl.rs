//! DDL as part of a transaction, as in PostgreSQL: a DDL statement in a block commits
//! or rolls back with the block, and one outside any block runs in a transaction of its
//! own, so that a statement that changes the catalog in several steps is whole or absent.
//!
//! The transaction holds the catalog's lock ([`crate::row_locks::CATALOG_LOCK`]) from
//! its first DDL statement to its end, so one transaction at a time changes the
//! catalog. Its catalog entries are written in the transaction: a crash before COMMIT
//! leaves the entries as they were, and the subtables made meanwhile, which no entry
//! names, are dropped at the next open. In memory the changes show at once (the
//! transaction's own statements need them); the catalog keeps an image of its maps from
//! the first DDL statement and from each savepoint after it, and a rollback puts an
//! image back: the handles it holds revived, those made since retired and their
//! subtables dropped. Subtables the DDL let go of are dropped only after COMMIT. A table
//! handle made by DDL that has not committed is pending: a writer of another transaction
//! that meets one waits for the catalog's lock (its DDL's end) and looks the table up
//! again, so no other transaction's rows go into a table that may yet vanish. Other
//! sessions read the catalog as last committed meanwhile (the image of the first DDL
//! statement): they neither see a table, column or view that may yet vanish nor miss one
//! that may yet come back.

use std::collections::HashSet;
use std::sync::{Arc, Weak};

use pmdb_engine::{WriteBatch, WriteOptions};

use super::{Catalog, CatalogImage};
use crate::error::{Result, SqlError};
use crate::names::RelName;
use crate::read_point::{BlockCatalog, SqlTxn};
use crate::sequence::{self, Sequence};
use crate::table::{Table, count_key};
use crate::view::ViewDef;

/// What the catalog holds in memory at one point of a transaction.
struct Image {
    maps: CatalogImage,
    /// How many subtables the transaction had let go of then.
    released: usize,
}

/// Who reads the catalog: each client session is one, and reads the catalog as last
/// committed while another session's transaction changes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Viewer(u64);

/// The catalog changes of the transaction that holds the catalog's lock.
pub(super) struct BlockDdl {
    txn: Weak<SqlTxn>,
    /// The session whose transaction it is, which reads the catalog as changed.
    viewer: Viewer,
    /// The image of the first DDL statement, then one per savepoint taken after it.
    images: Vec<Image>,
    /// Subtables the transaction's DDL let go of, dropped once it commits.
    released: Vec<String>,
}

impl Catalog {
    /// A new reader of the catalog, for a client session.
    pub(crate) fn new_viewer(&self) -> Viewer {
        Viewer(
            self.viewers
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        )
    }

    /// Calls `f` with the image of the catalog as last committed if a transaction of a
    /// session other than `viewer` is changing it, else with `None` (the maps are as
    /// committed, or `viewer`'s own transaction changed them); the maps do not change
    /// meanwhile.
    fn seen_by<R>(&self, viewer: Viewer, f: impl FnOnce(Option<&Image>) -> R) -> R {
        let block = self.block.lock();
        match &*block {
            Some(b) if b.viewer != viewer => f(b.images.first()),
            _ => f(None),
        }
    }

    /// Whether a transaction of a session other than `viewer` is changing the catalog.
    pub(crate) fn changed_by_other(&self, viewer: Viewer) -> bool {
        self.seen_by(viewer, |image| image.is_some())
    }

    /// Table `name` as `viewer` reads it (see [`Catalog::seen_by`]).
    pub fn table_seen_by(&self, name: &RelName, viewer: Viewer) -> Option<Arc<Table>> {
        self.seen_by(viewer, |image| match image {
            Some(i) => i.maps.tables.get(name).cloned(),
            None => self.table(name),
        })
    }

    /// The tables as `viewer` reads them.
    pub fn tables_seen_by(&self, viewer: Viewer) -> Vec<Arc<Table>> {
        self.seen_by(viewer, |image| match image {
            Some(i) => i.maps.tables.values().cloned().collect(),
            None => self.tables(),
        })
    }

    /// The catalog's maps as `viewer` reads them (`None`: as they are now, uncommitted
    /// DDL of any session included).
    pub fn image_seen_by(&self, viewer: Option<Viewer>) -> CatalogImage {
        match viewer {
            Some(v) => self.seen_by(v, |image| match image {
                Some(i) => i.maps.clone(),
                None => self.current_image(),
            }),
            None => self.current_image(),
        }
    }

    /// View `name` as `viewer` reads it.
    pub fn view_seen_by(&self, name: &RelName, viewer: Viewer) -> Option<Arc<ViewDef>> {
        self.seen_by(viewer, |image| match image {
            Some(i) => i.maps.views.get(name).cloned(),
            None => self.view(name),
        })
    }

    /// Makes the catalog's changes from now on part of `txn`, which holds the catalog's
    /// lock, until it ends (nothing if they are already); `viewer` is the session whose
    /// transaction it is.
    pub(crate) fn begin_ddl(self: &Arc<Self>, txn: &Arc<SqlTxn>, viewer: Viewer) -> Result<()> {
        let mut block = self.block.lock();
        match &*block {
            Some(b) if b.txn.as_ptr() == Arc::as_ptr(txn) => return Ok(()),
            Some(_) => {
                return Err(SqlError::Query(
                    "the catalog is changed by another transaction".into(),
                ));
            }
            None => {}
        }
        let image = self.image(0);
        *block = Some(BlockDdl {
            txn: Arc::downgrade(txn),
            viewer,
            images: vec![image],
            released: Vec::new(),
        });
        drop(block);
        txn.attach_catalog(Arc::clone(self) as Arc<dyn BlockCatalog>);
        Ok(())
    }

    /// The transaction the catalog's changes are part of, if one is.
    pub(crate) fn ddl_transaction(&self) -> Option<Arc<SqlTxn>> {
        self.block.lock().as_ref().and_then(|b| b.txn.upgrade())
    }

    /// The transaction of the catalog's changes: DDL runs in one.
    fn changes(&self) -> Result<Arc<SqlTxn>> {
        self.ddl_transaction()
            .ok_or_else(|| SqlError::Query("the catalog is changed outside a transaction".into()))
    }

    /// Writes catalog entries in the transaction of the catalog's changes.
    pub(super) fn write(&self, entries: WriteBatch) -> Result<()> {
        self.changes()?.write_catalog(&entries, &WriteBatch::new())
    }

    /// As [`Catalog::write`], with `bookkeeping`: tables' row counts and coverage by
    /// segments, which DML updates without validation, so that DDL which sets them
    /// never fails on such an update.
    pub(super) fn write_with_bookkeeping(
        &self,
        entries: WriteBatch,
        bookkeeping: WriteBatch,
    ) -> Result<()> {
        self.changes()?.write_catalog(&entries, &bookkeeping)
    }

    /// Lets go of subtable `name`: dropped once the catalog's changes commit.
    pub(super) fn release(&self, name: String) -> Result<()> {
        match self.block.lock().as_mut() {
            Some(b) => {
                b.released.push(name);
                Ok(())
            }
            None => Err(SqlError::Query(
                "the catalog is changed outside a transaction".into(),
            )),
        }
    }

    /// Puts `table` in the catalog's map in place of table `replaces` (its name before,
    /// or the same name), pending while the changes have not committed.
    pub(super) fn publish(&self, replaces: &RelName, table: Arc<Table>) {
        table.set_pending(self.block.lock().is_some());
        let mut tables = self.tables.write();
        tables.remove(replaces);
        tables.insert(table.name().clone(), table);
    }

    /// Refuses (0A000) DDL that reads the rows of `table` when the transaction of the
    /// catalog's changes changed them: the rows it reads are the committed ones.
    pub(crate) fn reading_rows(&self, table: &Table) -> Result<()> {
        match self.ddl_transaction() {
            Some(txn) if txn.changed(table.def().id) => Err(SqlError::unsupported(format!(
                "a schema change that reads the rows of table \"{}\" after this transaction \
                 changed them (commit the changes first)",
                table.def().name
            ))),
            _ => Ok(()),
        }
    }

    /// Tells the transaction of the catalog's changes that it no longer changes rows of
    /// table `id`, which its DDL dropped.
    pub(super) fn forget_rows_of(&self, id: u64) {
        if let Some(txn) = self.ddl_transaction() {
            txn.forget_table(id);
        }
    }

    fn image(&self, released: usize) -> Image {
        Image {
            maps: self.current_image(),
            released,
        }
    }

    /// Puts the maps back as `image` holds them; gives the subtables made since, to drop.
    fn restore(&self, image: &Image, released_since: &[String]) -> Vec<String> {
        let kept: HashSet<String> = image
            .maps
            .tables
            .values()
            .flat_map(|t| t.subtable_names())
            .collect();
        let ids: HashSet<u64> = image.maps.tables.values().map(|t| t.def().id).collect();
        let mut tables = self.tables.write();
        let mut made: Vec<String> = released_since.to_vec();
        let mut counts = WriteBatch::new();
        for (name, t) in tables.iter() {
            if image
                .maps
                .tables
                .get(name)
                .is_none_or(|was| !Arc::ptr_eq(was, t))
            {
                t.retire();
                made.extend(t.subtable_names());
                if !ids.contains(&t.def().id)
                    && let Ok(cat) = self.catalog_subtable()
                {
                    // A table filled as it was made stored its count at once.
                    counts.delete(&cat, count_key(t.def().id));
                }
            }
        }
        if !counts.is_empty() {
            // Left behind (an error of the engine), a count names an id no table is
            // given.
            let _ = self.db.write(counts, WriteOptions::default());
        }
        for (name, t) in &image.maps.tables {
            if tables.get(name).is_none_or(|now| !Arc::ptr_eq(now, t)) {
                t.revive();
            }
        }
        *tables = image.maps.tables.clone();
        drop(tables);
        *self.views.write() = image.maps.views.clone();
        *self.enums.write() = image.maps.enums.clone();
        *self.domains.write() = image.maps.domains.clone();
        *self.schemas.write() = image.maps.schemas.clone();
        *self.extensions.write() = image.maps.extensions.clone();
        self.restore_sequences(image);
        made.retain(|sub| !kept.contains(sub));
        made.sort();
        made.dedup();
        made
    }

    /// Sequences made since `image` stop handing out values (their stored progress is
    /// deleted); those of the image that DDL dropped or handed over get a new handle that
    /// goes on from what they stored.
    fn restore_sequences(&self, image: &Image) {
        let mut map = self.sequences.write();
        let Ok(cat) = self.catalog_subtable() else {
            return;
        };
        let ids: HashSet<u64> = image.maps.sequences.values().map(|s| s.def().id).collect();
        for s in map.values() {
            if image
                .maps
                .sequences
                .get(&s.def().rel_name())
                .is_none_or(|was| !Arc::ptr_eq(was, s))
            {
                s.hold().mark_dropped();
                if !ids.contains(&s.def().id) {
                    // Stored at once by nextval, outside the transaction. Left behind,
                    // it is overwritten by the next sequence given this id.
                    let _ = cat.delete(sequence::state_key(s.def().id));
                }
            }
        }
        let mut restored = image.maps.sequences.clone();
        for (name, was) in restored.iter_mut() {
            if map.get(name).is_none_or(|now| !Arc::ptr_eq(now, was)) {
                *was = Arc::new(Sequence::new(
                    &self.db,
                    &cat,
                    was.def().clone(),
                    was.state(),
                ));
            }
        }
        *map = restored;
    }

    /// Drops subtables a rollback or a commit let go of. One left behind (an error of
    /// the engine) names no table, and the next open drops it.
    fn drop_subtables(&self, names: &[String]) {
        for name in names {
            if self.db.existing_subtable(name).is_ok() {
                let _ = self.db.drop_subtable(name);
            }
        }
    }

    fn moved_on(&self) {
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::Release);
    }
}

impl BlockCatalog for Catalog {
    fn mark(&self) -> usize {
        let mut block = self.block.lock();
        let Some(b) = block.as_mut() else {
            return 0;
        };
        let image = self.image(b.released.len());
        b.images.push(image);
        b.images.len() - 1
    }

    fn roll_back_to(&self, mark: usize) {
        let made = {
            let mut block = self.block.lock();
            let Some(b) = block.as_mut() else {
                return;
            };
            b.images.truncate(mark + 1);
            let Some(image) = b.images.last() else {
                return;
            };
            let at = image.released.min(b.released.len());
            let made = self.restore(image, &b.released[at..]);
            b.released.truncate(at);
            made
        };
        self.drop_subtables(&made);
        self.moved_on();
    }

    fn ended(&self, committed: bool) {
        let mut block = self.block.lock();
        let Some(b) = block.take() else {
            return;
        };
        let released = if committed {
            for t in self.tables.read().values() {
                t.set_pending(false);
            }
            b.released
        } else if let Some(image) = b.images.first() {
            // Under the block's lock, so that no other session reads the maps between
            // the image and their restoring.
            self.restore(image, &b.released)
        } else {
            Vec::new()
        };
        drop(block);
        self.drop_subtables(&released);
        self.moved_on();
    }
}
