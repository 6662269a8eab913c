//! `Db` and `Subtable`: opening a database, the subtables in it, writes through the group
//! commit, and point reads that borrow values straight from PM.

use std::collections::{BTreeMap, HashMap};
use std::ops::{Deref, RangeBounds};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};
use pmdb_pmem::{PmemError, Pool};

use crate::batch::WriteBatch;
use crate::catalog::{Catalog, SubtableDesc, validate_name};
use crate::commit::{CommitState, Committer};
use crate::error::{DbError, Result};
use crate::format::record::{self, Kind};
use crate::keys;
use crate::memtable::Memtable;
use crate::options::{DbOptions, WriteOptions};
use crate::recovery::{self, RecoveryStats};
use crate::scan::Scan;

pub(crate) struct SubtableState {
    pub id: u32,
    pub name: String,
    /// Newest first: the active memtable, then the frozen ones.
    pub memtables: RwLock<Vec<Arc<Memtable>>>,
}

pub(crate) struct DbInner {
    pub pool: Arc<Pool>,
    pub options: DbOptions,
    pub catalog: Catalog,
    pub subtables: RwLock<HashMap<String, Arc<SubtableState>>>,
    pub catalog_lock: Mutex<u32>,
    pub committer: Committer,
    pub commit_state: Mutex<CommitState>,
    pub visible_seq: AtomicU64,
    pub next_memtable_id: AtomicU64,
    pub poisoned: AtomicBool,
    pub snapshots: Mutex<BTreeMap<u64, usize>>,
    pub recovery: RecoveryStats,
}

/// A database: a pool holding named subtables. Cheap to clone; all clones share it.
#[derive(Clone)]
pub struct Db {
    inner: Arc<DbInner>,
}

/// A named, ordered key-value table (an LSM instance) inside a database.
#[derive(Clone)]
pub struct Subtable {
    pub(crate) db: Arc<DbInner>,
    pub(crate) state: Arc<SubtableState>,
}

/// A value borrowed from PM with no copy. The memory stays valid while the guard lives.
pub struct ValueRef<'a> {
    _guard: crossbeam_epoch::Guard,
    bytes: &'a [u8],
}

impl Deref for ValueRef<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.bytes
    }
}

impl AsRef<[u8]> for ValueRef<'_> {
    fn as_ref(&self) -> &[u8] {
        self.bytes
    }
}

impl std::fmt::Debug for ValueRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ValueRef").field(&self.bytes).finish()
    }
}

/// A consistent view of the database as of one sequence number.
pub struct Snapshot {
    db: Arc<DbInner>,
    seq: u64,
}

impl Db {
    /// Opens the database in `path`, creating it if `options.create_if_missing`.
    pub fn open(path: impl AsRef<Path>, options: DbOptions) -> Result<Db> {
        let path = path.as_ref();
        let pool = match Pool::open(path, &options.pool) {
            Ok(pool) => pool,
            Err(PmemError::NotFound { .. } | PmemError::NoPool { .. })
                if options.create_if_missing =>
            {
                Pool::create(path, &options.pool)?
            }
            Err(PmemError::NotFound { .. } | PmemError::NoPool { .. }) => {
                return Err(DbError::NoDatabase {
                    path: path.display().to_string(),
                });
            }
            Err(e) => return Err(e.into()),
        };
        Db::open_pool(Arc::new(pool), options)
    }

    /// Opens (or creates) the database in an already open pool — the crash simulator's
    /// way in.
    pub fn open_pool(pool: Arc<Pool>, mut options: DbOptions) -> Result<Db> {
        options.fit_to(pool.zone_size())?;
        let path = pool.dir().map_or_else(
            || "<simulated pool>".to_string(),
            |d| d.display().to_string(),
        );
        let catalog = if Catalog::exists(&pool, &path)? {
            Catalog::open(&pool)?
        } else if options.create_if_missing {
            Catalog::create(&pool)?
        } else {
            return Err(DbError::NoDatabase { path });
        };
        let recovered = recovery::recover(&pool, &catalog, &options)?;
        log::info!("{path}: {}", recovered.stats);
        for damage in &recovered.stats.damage {
            log::warn!("{path}: {damage}");
        }
        let subtables = recovered
            .subtables
            .into_iter()
            .map(|s| (s.name.clone(), s))
            .collect();
        let inner = DbInner {
            pool,
            catalog,
            subtables: RwLock::new(subtables),
            catalog_lock: Mutex::new(recovered.next_subtable_id),
            committer: Committer::default(),
            commit_state: Mutex::new(CommitState::new(recovered.max_seq + 1, recovered.next_lsn)),
            visible_seq: AtomicU64::new(recovered.max_seq),
            next_memtable_id: AtomicU64::new(recovered.next_memtable_id),
            poisoned: AtomicBool::new(false),
            snapshots: Mutex::new(BTreeMap::new()),
            recovery: recovered.stats,
            options,
        };
        Ok(Db {
            inner: Arc::new(inner),
        })
    }

    /// The subtable `name`, created (durably) if it does not exist.
    pub fn subtable(&self, name: &str) -> Result<Subtable> {
        if let Ok(s) = self.existing_subtable(name) {
            return Ok(s);
        }
        validate_name(name)?;
        let mut next_id = self.inner.catalog_lock.lock();
        if let Ok(s) = self.existing_subtable(name) {
            return Ok(s);
        }
        let desc = SubtableDesc {
            id: *next_id,
            name: name.into(),
        };
        self.inner.catalog.add_subtable(&self.inner.pool, &desc)?;
        *next_id += 1;
        let state = Arc::new(SubtableState {
            id: desc.id,
            name: desc.name,
            memtables: RwLock::new(Vec::new()),
        });
        self.inner
            .subtables
            .write()
            .insert(name.into(), Arc::clone(&state));
        Ok(Subtable {
            db: Arc::clone(&self.inner),
            state,
        })
    }

    /// The subtable `name`; `UnknownSubtable` if it was never created.
    pub fn existing_subtable(&self, name: &str) -> Result<Subtable> {
        let state = self
            .inner
            .subtables
            .read()
            .get(name)
            .cloned()
            .ok_or_else(|| DbError::UnknownSubtable { name: name.into() })?;
        Ok(Subtable {
            db: Arc::clone(&self.inner),
            state,
        })
    }

    /// Names of all subtables, sorted.
    pub fn subtable_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.inner.subtables.read().keys().cloned().collect();
        names.sort();
        names
    }

    /// Commits `batch` atomically across its subtables.
    pub fn write(&self, batch: WriteBatch, options: WriteOptions) -> Result<()> {
        for op in &batch.ops {
            if !Arc::ptr_eq(&op.subtable.db, &self.inner) {
                return Err(DbError::ForeignSubtable);
            }
            self.inner.check_limits(&op.key, &op.value)?;
        }
        if batch.is_empty() {
            return Ok(());
        }
        self.inner.committer.write(&self.inner, batch, options.sync)
    }

    /// A snapshot of everything committed so far.
    pub fn snapshot(&self) -> Snapshot {
        let seq = self.inner.visible_seq.load(Ordering::Acquire);
        *self.inner.snapshots.lock().entry(seq).or_default() += 1;
        Snapshot {
            db: Arc::clone(&self.inner),
            seq,
        }
    }

    /// The oldest sequence number a live snapshot still reads at, if any.
    pub fn oldest_snapshot(&self) -> Option<u64> {
        self.inner.snapshots.lock().keys().next().copied()
    }

    /// The sequence number of the newest visible commit.
    pub fn last_seq(&self) -> u64 {
        self.inner.visible_seq.load(Ordering::Acquire)
    }

    /// The options in force (limits as fitted to the pool's zone size).
    pub fn options(&self) -> &DbOptions {
        &self.inner.options
    }

    /// What recovery did when this database was opened.
    pub fn recovery_stats(&self) -> &RecoveryStats {
        &self.inner.recovery
    }

    /// The pool underneath.
    pub fn pool(&self) -> &Arc<Pool> {
        &self.inner.pool
    }

    /// Per-subtable occupancy: (name, memtables, records indexed).
    pub fn subtable_stats(&self) -> Vec<(String, usize, u64)> {
        let subs = self.inner.subtables.read();
        let mut out: Vec<(String, usize, u64)> = subs
            .values()
            .map(|s| {
                let mems = s.memtables.read();
                (
                    s.name.clone(),
                    mems.len(),
                    mems.iter().map(|m| m.records()).sum(),
                )
            })
            .collect();
        out.sort();
        out
    }
}

impl DbInner {
    fn check_limits(&self, key: &[u8], value: &[u8]) -> Result<()> {
        if key.is_empty() {
            return Err(DbError::EmptyKey);
        }
        if key.len() > self.options.max_key_size {
            return Err(DbError::KeyTooLarge {
                len: key.len(),
                max: self.options.max_key_size,
            });
        }
        if value.len() > self.options.max_value_size {
            return Err(DbError::ValueTooLarge {
                len: value.len(),
                max: self.options.max_value_size,
            });
        }
        Ok(())
    }

    /// The value of `key` at `snap`, borrowed from PM.
    pub(crate) fn get_at<'a>(
        &'a self,
        state: &SubtableState,
        key: &[u8],
        snap: u64,
    ) -> Result<Option<ValueRef<'a>>> {
        let guard = crossbeam_epoch::pin();
        let search = keys::internal(key, snap);
        let escaped_len = search.len() - 8;
        let memtables = state.memtables.read();
        for m in memtables.iter() {
            if let Some(off) = m.find(&search, escaped_len) {
                self.pool.charge_read(0);
                return self.value_at(off, guard);
            }
        }
        Ok(None)
    }

    /// The value of the record at `off` (`None` for a delete).
    pub(crate) fn value_at(
        &self,
        off: pmdb_pmem::PmOff,
        guard: crossbeam_epoch::Guard,
    ) -> Result<Option<ValueRef<'_>>> {
        let r = record::read(&self.pool, off)?;
        Ok(match r.kind {
            Kind::Put => Some(ValueRef {
                _guard: guard,
                bytes: r.value,
            }),
            Kind::Delete => None,
        })
    }
}

impl Subtable {
    pub fn name(&self) -> &str {
        &self.state.name
    }

    fn db(&self) -> Db {
        Db {
            inner: Arc::clone(&self.db),
        }
    }

    /// Sets `key` to `value` (a batch of one), durably.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.put(self, key, value);
        self.db().write(batch, WriteOptions::default())
    }

    /// Removes `key` (a batch of one), durably.
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.delete(self, key);
        self.db().write(batch, WriteOptions::default())
    }

    /// The current value of `key`, borrowed from PM with no copy.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<ValueRef<'_>>> {
        let snap = self.db.visible_seq.load(Ordering::Acquire);
        self.db.get_at(&self.state, key.as_ref(), snap)
    }

    /// The current value of `key`, copied.
    pub fn get_owned(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        Ok(self.get(key)?.map(|v| v.to_vec()))
    }

    /// Entries with keys in `range`, in ascending key order, as of now.
    pub fn scan<K: AsRef<[u8]> + ?Sized>(&self, range: impl RangeBounds<K>) -> Scan<'_> {
        let snap = self.db.visible_seq.load(Ordering::Acquire);
        Scan::new(&self.db, &self.state, &range, snap, false)
    }

    /// Entries with keys in `range`, in descending key order, as of now.
    pub fn scan_rev<K: AsRef<[u8]> + ?Sized>(&self, range: impl RangeBounds<K>) -> Scan<'_> {
        let snap = self.db.visible_seq.load(Ordering::Acquire);
        Scan::new(&self.db, &self.state, &range, snap, true)
    }
}

impl Snapshot {
    /// The sequence number this snapshot reads at.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    fn check<'a>(&self, sub: &'a Subtable) -> Result<&'a Subtable> {
        if Arc::ptr_eq(&sub.db, &self.db) {
            Ok(sub)
        } else {
            Err(DbError::ForeignSubtable)
        }
    }

    /// The value of `key` in `sub` as of this snapshot.
    pub fn get<'a>(
        &self,
        sub: &'a Subtable,
        key: impl AsRef<[u8]>,
    ) -> Result<Option<ValueRef<'a>>> {
        let sub = self.check(sub)?;
        sub.db.get_at(&sub.state, key.as_ref(), self.seq)
    }

    /// Ascending scan of `sub` as of this snapshot.
    pub fn scan<'a, K: AsRef<[u8]> + ?Sized>(
        &self,
        sub: &'a Subtable,
        range: impl RangeBounds<K>,
    ) -> Result<Scan<'a>> {
        let sub = self.check(sub)?;
        Ok(Scan::new(&sub.db, &sub.state, &range, self.seq, false))
    }

    /// Descending scan of `sub` as of this snapshot.
    pub fn scan_rev<'a, K: AsRef<[u8]> + ?Sized>(
        &self,
        sub: &'a Subtable,
        range: impl RangeBounds<K>,
    ) -> Result<Scan<'a>> {
        let sub = self.check(sub)?;
        Ok(Scan::new(&sub.db, &sub.state, &range, self.seq, true))
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        let mut snaps = self.db.snapshots.lock();
        if let Some(n) = snaps.get_mut(&self.seq) {
            *n -= 1;
            if *n == 0 {
                snaps.remove(&self.seq);
            }
        }
    }
}
