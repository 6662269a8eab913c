//! [`Db`]: opening a database (recovery included), its subtables, atomic writes,
//! snapshots, and what it reports about itself.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pmdb_pmem::{AllocStats, Backend, Emulation, PmemError, Pool};

use crate::amplification::{self, Amplification};
use crate::batch::WriteBatch;
use crate::catalog::Catalog;
use crate::commit::Pipeline;
use crate::committer::PendingCommit;
use crate::core::Core;
use crate::error::{DbError, Result};
use crate::format::manifest::{Change, Edit};
use crate::levels::Levels;
use crate::manifest::{self, Manifest};
use crate::options::{DbOptions, WriteOptions};
use crate::recovery::{self, RecoveryStats};
use crate::registry::Registry;
use crate::seq::SeqTracker;
use crate::snapshot::Snapshot;
use crate::subtable::Subtable;
use crate::table::Table;
use crate::tiers::{TierStats, Tiers};
use crate::txn::{Isolation, Transaction};

/// A database: a pool holding named subtables. Cheap to clone; all clones share it.
#[derive(Clone)]
pub struct Db {
    core: Arc<Core>,
}

impl Drop for Db {
    /// The committer thread lets go of the database, so that closing it (when no other
    /// handle holds it) happens here, and a reopen right after finds it closed.
    fn drop(&mut self) {
        self.core.committer.stop();
    }
}

/// What the device under a database is and holds (see [`Db::device`]).
#[derive(Clone, Debug)]
pub struct DeviceStats {
    pub backend: Backend,
    pub emulation: Emulation,
    pub zone_size: u64,
    pub mapped_bytes: u64,
    /// Zones the pool holds once grown to its cap.
    pub max_zones: u64,
    pub alloc: AllocStats,
}

/// What one subtable holds (see [`Db::subtable_stats`]).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SubtableStats {
    pub name: String,
    /// Memtables in its read view, the active one included.
    pub memtables: usize,
    /// Records (versions) written to its memtables.
    pub records: u64,
    /// Entries in its memtables' DRAM indexes: one per key and memtable.
    pub index_keys: u64,
    /// Versions the indexes still hold (older ones no reader needs are dropped).
    pub index_versions: u64,
    /// DRAM the indexes occupy, in bytes (global-index generations included).
    pub index_bytes: u64,
    /// PM bytes of its memtables' logs (the active one included).
    pub memtable_bytes: u64,
    /// Global-index generations (those sealed among them), and the PM bytes of the
    /// memtables merged into them.
    pub gi_generations: usize,
    pub sealed_generations: usize,
    pub gi_bytes: u64,
    /// Per SST level (L0 first): files and bytes.
    pub levels: Vec<(usize, u64)>,
}

impl SubtableStats {
    /// Bytes in SST files.
    pub fn sst_bytes(&self) -> u64 {
        self.levels.iter().map(|(_, b)| b).sum()
    }

    /// PM bytes its data holds: memtables and global-index generations.
    pub fn pm_bytes(&self) -> u64 {
        self.memtable_bytes + self.gi_bytes
    }
}

impl SubtableStats {
    /// Index DRAM per key, in bytes (0 when empty).
    pub fn index_bytes_per_key(&self) -> f64 {
        if self.index_keys == 0 {
            0.0
        } else {
            self.index_bytes as f64 / self.index_keys as f64
        }
    }
}

impl Db {
    /// Opens the database in `path` to look only: nothing in the directory changes. The
    /// pool is mapped read-only; recovery runs in DRAM (a partial last group is rolled
    /// back in memory, nothing is freed or published), and every write, subtable
    /// creation or drop fails with [`DbError::ReadOnly`].
    pub fn open_read_only(path: impl AsRef<Path>, mut options: DbOptions) -> Result<Db> {
        options.pool.read_only = true;
        options.create_if_missing = false;
        Db::open(path, options)
    }

    /// Opens the database in `path`, creating it if `options.create_if_missing` (read-only
    /// if `options.pool.read_only`, as [`Db::open_read_only`]).
    pub fn open(path: impl AsRef<Path>, options: DbOptions) -> Result<Db> {
        let path = path.as_ref();
        let pool = match Pool::open(path, &options.pool) {
            Ok(pool) => pool,
            Err(PmemError::NotFound { .. } | PmemError::NoPool { .. })
                if options.create_if_missing && !options.pool.read_only =>
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
    /// way in. A read-only pool gives a read-only database.
    pub fn open_pool(pool: Arc<Pool>, mut options: DbOptions) -> Result<Db> {
        options.fit_to(&pool)?;
        let path = pool.dir().map_or_else(
            || "<simulated pool>".to_string(),
            |d| d.display().to_string(),
        );
        let catalog = if Catalog::exists(&pool, &path)? {
            Catalog::open(&pool)?
        } else if options.create_if_missing && !pool.is_read_only() {
            Catalog::create(&pool)?
        } else {
            return Err(DbError::NoDatabase { path });
        };
        let sst_dir = match (&options.sst_dir, pool.dir()) {
            (Some(dir), _) => dir.clone(),
            (None, Some(dir)) => dir.join("sst"),
            (None, None) => PathBuf::from("sst"),
        };
        let fs = pool.files(&sst_dir)?;
        let mut set = manifest::read(&*fs, &pool.uuid())?;
        let mark = Catalog::manifest_mark(&pool)
            .map_err(|e| DbError::Corrupt(format!("{e}; nothing was changed")))?;
        manifest::check_mark(&*fs, &set, mark)?;
        let mut tiers = Tiers::new(pool.uuid(), Arc::clone(&fs), None, set.totals, &options);
        let mut tables: HashMap<u32, Vec<Arc<Table>>> = HashMap::new();
        for meta in set.files.values() {
            let table = tiers.open_table(meta.clone())?;
            tables.entry(meta.subtable).or_default().push(table);
        }
        let levels = tables
            .into_iter()
            .map(|(sub, t)| (sub, Arc::new(Levels::new(t))))
            .collect();
        let mut recovered = recovery::recover(&pool, &catalog, &options, &set.flushed, levels)?;
        recovered.max_seq = recovered.max_seq.max(set.last_seq);
        recovered.next_memtable_id = recovered.next_memtable_id.max(set.next_memtable);
        recovered.next_subtable_id = recovered.next_subtable_id.max(set.next_subtable);
        if recovered.stats.read_only.is_none() {
            // Files of subtables the catalog no longer lists: their drop was committed,
            // its manifest edit was not.
            let live: HashSet<u32> = recovered.subtables.iter().map(|s| s.id).collect();
            let gone: BTreeSet<u32> = set
                .files
                .values()
                .map(|f| f.subtable)
                .filter(|s| !live.contains(s))
                .collect();
            for &subtable in &gone {
                set.apply(&Edit {
                    number: set.edit + 1,
                    changes: vec![Change::DropSubtable { subtable }],
                })
                .map_err(DbError::Corrupt)?;
            }
            set.database = Some(pool.uuid());
            set.next_memtable = recovered.next_memtable_id;
            set.next_subtable = recovered.next_subtable_id;
            set.last_seq = recovered.max_seq;
            let totals = set.totals;
            tiers = Tiers::new(
                pool.uuid(),
                fs,
                Some(Manifest::start(
                    Arc::clone(&tiers.fs),
                    marks_in(&pool),
                    set,
                )?),
                totals,
                &options,
            );
        }
        log::info!("{path}: {}", recovered.stats);
        for damage in &recovered.stats.damage {
            log::warn!("{path}: {damage}");
        }
        let prefaulter = if recovered.stats.read_only.is_none() && options.prefault_zones > 0 {
            Some(pool.prefault_ahead(options.prefault_zones)?)
        } else {
            None
        };
        let registry = Registry::new(
            Arc::clone(&pool),
            catalog,
            recovered.subtables,
            recovered.next_subtable_id,
            recovered.next_memtable_id,
            recovered.stats.read_only.clone(),
        );
        let core = Core::new(
            pool,
            options,
            registry,
            SeqTracker::new(recovered.max_seq),
            Pipeline::new(recovered.next_lsn),
            recovered.stats,
            prefaulter,
            tiers,
        );
        Ok(Db {
            core: Arc::new(core),
        })
    }

    /// The engine core, for the crate's own tests of its parts.
    #[cfg(test)]
    pub(crate) fn core(&self) -> &Core {
        &self.core
    }

    fn handle(&self, state: Arc<crate::registry::SubtableState>) -> Subtable {
        Subtable {
            core: Arc::clone(&self.core),
            state,
        }
    }

    /// The subtable `name`, created (durably) if it does not exist.
    pub fn subtable(&self, name: &str) -> Result<Subtable> {
        Ok(self.handle(self.core.registry.get_or_create(name)?))
    }

    /// The subtable `name`; `UnknownSubtable` if it does not exist.
    pub fn existing_subtable(&self, name: &str) -> Result<Subtable> {
        let state = self
            .core
            .registry
            .by_name(name)
            .ok_or_else(|| DbError::UnknownSubtable { name: name.into() })?;
        Ok(self.handle(state))
    }

    /// Drops the subtable `name` durably. Readers that still hold its values or scans
    /// keep reading them; its PM is released once they are done.
    pub fn drop_subtable(&self, name: &str) -> Result<()> {
        let state = self
            .core
            .registry
            .by_name(name)
            .ok_or_else(|| DbError::UnknownSubtable { name: name.into() })?;
        self.core.drop_subtable(&state)
    }

    /// Names of all subtables, sorted.
    pub fn subtable_names(&self) -> Vec<String> {
        self.core
            .registry
            .all()
            .iter()
            .map(|s| s.name.clone())
            .collect()
    }

    /// Commits `batch` atomically across its subtables.
    pub fn write(&self, batch: WriteBatch, options: WriteOptions) -> Result<()> {
        self.core.write(batch, options.sync)
    }

    /// Commits `batch` as [`Db::write`] does, without holding the caller's thread: the
    /// returned future resolves when the batch is durable and visible. For async tasks (on
    /// a thread that said [`crate::lead_commits_here`], it commits before it returns).
    pub fn write_async(&self, batch: WriteBatch, options: WriteOptions) -> PendingCommit {
        self.core.commit_async(batch, options.sync, None)
    }

    /// A snapshot of everything committed so far.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::new(Arc::clone(&self.core))
    }

    /// Begins an optimistic transaction with snapshot isolation.
    pub fn transaction(&self) -> Transaction {
        self.transaction_with(Isolation::Snapshot)
    }

    /// Begins an optimistic transaction with the given isolation.
    pub fn transaction_with(&self, isolation: Isolation) -> Transaction {
        Transaction::new(Arc::clone(&self.core), isolation)
    }

    /// The oldest sequence number a live snapshot still reads at, if any.
    pub fn oldest_snapshot(&self) -> Option<u64> {
        self.core.seqs.oldest_snapshot()
    }

    /// The sequence number of the newest visible commit.
    pub fn last_seq(&self) -> u64 {
        self.core.seqs.visible()
    }

    /// The options in force (limits and budgets as fitted to the pool).
    pub fn options(&self) -> &DbOptions {
        &self.core.options
    }

    /// Why the database refuses writes, if it does (see [`RecoveryStats::read_only`]).
    pub fn read_only(&self) -> Option<&str> {
        self.core.recovery.read_only.as_deref()
    }

    /// What recovery did when this database was opened.
    pub fn recovery_stats(&self) -> &RecoveryStats {
        &self.core.recovery
    }

    /// The device underneath: backend, emulation, geometry and occupancy.
    pub fn device(&self) -> DeviceStats {
        let pool = &self.core.pool;
        DeviceStats {
            backend: pool.backend(),
            emulation: pool.emulation(),
            zone_size: pool.zone_size(),
            mapped_bytes: pool.mapped_bytes(),
            max_zones: pool.max_zones(),
            alloc: pool.alloc_stats(),
        }
    }

    /// Merges every frozen memtable into the global index, compacts every global-index
    /// generation to SSTs (freeing its PM) whatever the flush watermark, and every level
    /// over its target into the next, in the caller's thread; returns when nothing is
    /// left to do.
    pub fn compact(&self) -> Result<()> {
        self.core.registry.writable()?;
        self.core.jobs.compact_all()
    }

    /// What the global index and the SST levels have done since the database opened.
    pub fn tier_stats(&self) -> TierStats {
        self.core.jobs.stats()
    }

    /// Write and space amplification, less the live bytes (see [`Db::live_bytes`]): what
    /// users committed, what flushes and compactions wrote since the database was
    /// created, and the PM and SST bytes it holds now.
    pub fn amplification(&self) -> Amplification {
        amplification::measure(&self.core)
    }

    /// Key and value bytes of the newest visible version of every key: a full scan of
    /// every subtable, which takes a while on a large database. `progress` is called
    /// every few thousand keys with the keys and bytes counted so far, and once at the
    /// end.
    pub fn live_bytes(&self, progress: impl FnMut(u64, u64)) -> Result<u64> {
        amplification::live_bytes(&self.core, progress)
    }

    /// Reads and checks every block of every live SST file; one line per file that fails.
    pub fn verify_tables(&self) -> Vec<String> {
        let mut problems = Vec::new();
        for s in self.core.registry.all() {
            for t in s.view.load().levels.files() {
                if let Err(e) = t.sst.verify() {
                    problems.push(format!("{}: {e}", t.sst.name()));
                }
            }
        }
        problems
    }

    /// What each subtable holds, sorted by name.
    pub fn subtable_stats(&self) -> Vec<SubtableStats> {
        self.core
            .registry
            .all()
            .iter()
            .map(|s| {
                let view = s.view.load();
                let mut stats = SubtableStats {
                    name: s.name.clone(),
                    memtables: view.memtables().len(),
                    records: 0,
                    index_keys: 0,
                    index_versions: 0,
                    index_bytes: 0,
                    memtable_bytes: 0,
                    gi_generations: view.gis.len(),
                    sealed_generations: view.gis.iter().filter(|g| g.is_sealed()).count(),
                    gi_bytes: view.gis.iter().map(|g| g.bytes()).sum(),
                    levels: (0..=view.levels.depth())
                        .map(|l| (view.levels.level(l).len(), view.levels.bytes(l)))
                        .collect(),
                };
                for g in &view.gis {
                    let usage = g.index.usage();
                    stats.index_keys += usage.keys;
                    stats.index_versions += usage.versions;
                    stats.index_bytes += usage.bytes;
                }
                for m in view.memtables() {
                    let usage = m.index.usage();
                    stats.records += m.records();
                    stats.memtable_bytes += m.used();
                    stats.index_keys += usage.keys;
                    stats.index_versions += usage.versions;
                    stats.index_bytes += usage.bytes;
                }
                stats
            })
            .collect()
    }
}

/// Where the manifest's marks go: the pool's root cell for them.
fn marks_in(pool: &Arc<Pool>) -> manifest::OnDurable {
    let pool = Arc::clone(pool);
    Arc::new(move |mark| Catalog::publish_manifest_mark(&pool, mark))
}
