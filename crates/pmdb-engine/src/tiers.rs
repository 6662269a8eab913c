//! The capacity tier of one open database: the SST directory, its manifest, the block
//! cache and the read mode, and what the jobs that fill it have done: since the database
//! was opened ([`TierStats`]) and since it was created (the manifest's write totals).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use pmdb_pmem::{FileSystem, PmemError};

use crate::error::{DbError, Result};
use crate::format::manifest::{Change, FileMeta, WriteTotals};
use crate::format::sst::{Compression, SstIdentity};
use crate::manifest::{Manifest, sst_name};
use crate::options::DbOptions;
use crate::sst::cache::BlockCache;
use crate::sst::place::check_place;
use crate::sst::table::Sst;
use crate::sst::writer::SstWriter;
use crate::sst::{ReadMode, SstMeta, SstOptions};
use crate::table::Table;

/// What the global index and the SST levels have done since the database was opened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TierStats {
    /// Frozen memtables merged into the global index.
    pub merges: u64,
    /// Global-index generations compacted to SSTs (their PM freed).
    pub flushes: u64,
    /// Level compactions (trivial moves included).
    pub compactions: u64,
    /// Bytes written to SST files, and read from them by compactions.
    pub sst_bytes_written: u64,
    pub compaction_bytes_read: u64,
    /// Write stalls: commits that waited for the background jobs to make room.
    pub stalls: u64,
    /// Time commits waited for room, in total and at most in one stall.
    pub stall_time: Duration,
    pub longest_stall: Duration,
    /// Bytes the block cache holds now.
    pub block_cache_bytes: u64,
    /// The last error a background job met, if any (it retries).
    pub last_error: Option<String>,
}

pub(crate) struct Tiers {
    pub fs: Arc<dyn FileSystem>,
    /// The uuid of the database's pool: every SST it writes carries it, and every SST it
    /// opens must.
    database: [u8; 16],
    /// `None` when the database is read-only.
    manifest: Mutex<Option<Manifest>>,
    cache: Option<Arc<BlockCache>>,
    pub read_mode: ReadMode,
    pub sst: SstOptions,
    pub stats: Mutex<TierStats>,
    /// The manifest's write totals as of its last edit.
    totals: Mutex<WriteTotals>,
    /// Bytes compaction may still write before it must wait (`compaction_rate`).
    rate: Mutex<(Instant, u64)>,
    rate_limit: u64,
}

impl Tiers {
    /// The tier of database `database` over `fs`, logging to `manifest` (none:
    /// read-only), whose write totals are `totals` so far.
    pub fn new(
        database: [u8; 16],
        fs: Arc<dyn FileSystem>,
        manifest: Option<Manifest>,
        totals: WriteTotals,
        options: &DbOptions,
    ) -> Tiers {
        let cache = (options.block_cache_bytes > 0 && options.read_mode != ReadMode::Direct)
            .then(|| Arc::new(BlockCache::new(options.block_cache_bytes)));
        Tiers {
            fs,
            database,
            manifest: Mutex::new(manifest),
            cache,
            read_mode: options.read_mode,
            sst: SstOptions {
                block_size: options.block_size,
                compression: if options.compression {
                    Compression::Lz4
                } else {
                    Compression::None
                },
                ..SstOptions::default()
            },
            stats: Mutex::new(TierStats::default()),
            totals: Mutex::new(totals),
            rate: Mutex::new((Instant::now(), 0)),
            rate_limit: options.compaction_rate,
        }
    }

    /// Opens the SST file `meta` describes, which must be that file (`check_place`).
    pub fn open_table(&self, meta: FileMeta) -> Result<Arc<Table>> {
        let name = sst_name(meta.number);
        let file = self.fs.open(&name).map_err(|e| match e {
            PmemError::MissingFile { path } => DbError::Corrupt(format!(
                "{}: missing, yet the manifest names it (SST {} of subtable {}, level {}, {} \
                 bytes); nothing was changed",
                path.display(),
                meta.number,
                meta.subtable,
                meta.level,
                meta.size
            )),
            e => e.into(),
        })?;
        let sst = Sst::open(
            file,
            meta.number,
            self.fs.describe(&name),
            self.read_mode,
            self.cache.clone(),
        )?;
        check_place(&sst, &meta, &self.database)?;
        Ok(Arc::new(Table { meta, sst }))
    }

    /// A new SST file to write for `subtable`.
    pub fn new_writer(&self, subtable: u32) -> Result<(u64, SstWriter)> {
        let number = {
            let mut manifest = self.manifest.lock();
            let m = manifest.as_mut().ok_or_else(read_only)?;
            m.new_file_number()
        };
        let file = self.fs.create(&sst_name(number))?;
        let identity = SstIdentity {
            database: self.database,
            number,
            subtable,
        };
        Ok((number, SstWriter::new(file, &self.sst, identity)?))
    }

    /// Logs `changes` as one durable manifest edit. The names of the files it adds are
    /// made durable first (their bytes are, by the writer's sync): an edit must never name
    /// a file a crash can take away.
    pub fn log(&self, changes: Vec<Change>) -> Result<()> {
        self.fs.sync_dir()?;
        let mut manifest = self.manifest.lock();
        let m = manifest.as_mut().ok_or_else(read_only)?;
        m.log(changes)?;
        *self.totals.lock() = m.totals();
        Ok(())
    }

    /// What flushes and compactions have written since the database was created.
    pub fn totals(&self) -> WriteTotals {
        *self.totals.lock()
    }

    /// Removes files no version names any more (their edit is durable).
    pub fn remove_files(&self, numbers: &HashSet<u64>) {
        if let Some(m) = self.manifest.lock().as_ref() {
            m.remove_files(numbers.iter().copied());
        }
    }

    pub fn cache_bytes(&self) -> u64 {
        self.cache.as_ref().map_or(0, |c| c.weight())
    }

    /// Counts `written` bytes against the compaction rate, waiting while over it.
    pub fn throttle(&self, written: u64) {
        if self.rate_limit == 0 {
            return;
        }
        let wait = {
            let mut rate = self.rate.lock();
            let (since, bytes) = &mut *rate;
            *bytes += written;
            let allowed = since.elapsed().as_secs_f64() * self.rate_limit as f64;
            if since.elapsed() > Duration::from_secs(1) {
                *since = Instant::now();
                *bytes = 0;
            }
            Duration::from_secs_f64(((*bytes as f64 - allowed) / self.rate_limit as f64).max(0.0))
        };
        if !wait.is_zero() {
            std::thread::sleep(wait.min(Duration::from_millis(100)));
        }
    }

    pub fn record_error(&self, e: &DbError) {
        self.stats.lock().last_error = Some(e.to_string());
    }
}

fn read_only() -> DbError {
    DbError::ReadOnly {
        reason: "the SST directory was opened read-only".into(),
    }
}

/// What compaction keeps of a written file.
pub(crate) fn file_meta(
    number: u64,
    subtable: u32,
    level: u8,
    horizon: u64,
    m: SstMeta,
) -> FileMeta {
    FileMeta {
        number,
        subtable,
        level,
        size: m.file_len,
        entries: m.entries,
        min_seq: m.min_seq,
        max_seq: m.max_seq,
        horizon,
        smallest: m.smallest,
        largest: m.largest,
    }
}
