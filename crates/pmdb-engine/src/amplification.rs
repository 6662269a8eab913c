//! Write and space amplification ([`Amplification`]): the bytes the database has written
//! and holds, set against what users committed and what is live. The cumulative parts
//! come from the manifest's write totals, so they span restarts; the rest is measured in
//! the open database, the live bytes by a full scan.

use crate::core::Core;
use crate::error::{DbError, Result};
use crate::read::Scan;

/// Keys between two calls of a live-bytes scan's progress callback.
const PROGRESS_EVERY: u64 = 4096;

/// How many bytes the database writes and holds per byte users gave it (see
/// [`crate::Db::amplification`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Amplification {
    /// Bytes of the records users committed, as PM stores them (header, key, value,
    /// padding): those flushed out of PM since the database was created, and those in its
    /// memtables and global index now. Each was written once, into PM, by its commit.
    pub committed_bytes: u64,
    /// Of `committed_bytes`, those flushes took out of PM into SSTs.
    pub flushed_bytes: u64,
    /// Bytes of the SST files flushes wrote since the database was created.
    pub flush_bytes_written: u64,
    /// Bytes of the SST files level compactions wrote since the database was created.
    pub compaction_bytes_written: u64,
    /// PM the database's zones occupy now (zones owned × zone size).
    pub pm_bytes_in_use: u64,
    /// Bytes of the live SST files.
    pub sst_bytes_live: u64,
    /// Key and value bytes of the newest visible version of every key, when measured
    /// ([`crate::Db::live_bytes`]).
    pub live_bytes: Option<u64>,
}

impl Amplification {
    /// Bytes written to SST files, by flushes and compactions.
    pub fn sst_bytes_written(&self) -> u64 {
        self.flush_bytes_written
            .saturating_add(self.compaction_bytes_written)
    }

    /// Bytes written per byte committed: each committed byte once into PM, then every
    /// SST byte a flush or compaction wrote. `None` while nothing is committed.
    pub fn write_amp(&self) -> Option<f64> {
        (self.committed_bytes > 0).then(|| {
            (self.committed_bytes as f64 + self.sst_bytes_written() as f64)
                / self.committed_bytes as f64
        })
    }

    /// Bytes held (PM zones and SST files) per live byte. `None` unless the live bytes
    /// were measured and there are some.
    pub fn space_amp(&self) -> Option<f64> {
        let live = self.live_bytes.filter(|&l| l > 0)?;
        Some((self.pm_bytes_in_use as f64 + self.sst_bytes_live as f64) / live as f64)
    }
}

/// Everything but the live bytes, which take a scan. Racing a merge or a flush, it may
/// count some records twice for a moment: a job counts them where they go before it
/// swaps in the view without them.
pub(crate) fn measure(core: &Core) -> Amplification {
    let totals = core.tiers.totals();
    let (mut in_pm, mut sst) = (0u64, 0u64);
    for state in core.registry.all() {
        let view = state.view.load();
        let memtables = view.memtables().iter().map(|m| m.record_bytes());
        let gis = view.gis.iter().map(|g| g.record_bytes());
        in_pm = memtables.chain(gis).fold(in_pm, u64::saturating_add);
        sst = view
            .levels
            .files()
            .map(|t| t.meta.size)
            .fold(sst, u64::saturating_add);
    }
    Amplification {
        committed_bytes: totals.flushed_record_bytes.saturating_add(in_pm),
        flushed_bytes: totals.flushed_record_bytes,
        flush_bytes_written: totals.flush_bytes,
        compaction_bytes_written: totals.compaction_bytes,
        pm_bytes_in_use: core
            .pool
            .alloc_stats()
            .owned_zones
            .saturating_mul(core.pool.zone_size()),
        sst_bytes_live: sst,
        live_bytes: None,
    }
}

/// Key and value bytes of the newest visible version of every key of every subtable, by
/// scanning each at a snapshot; `progress` gets the keys and bytes counted so far every
/// few thousand keys. A subtable dropped meanwhile holds nothing live.
pub(crate) fn live_bytes(core: &Core, mut progress: impl FnMut(u64, u64)) -> Result<u64> {
    let (mut keys, mut bytes) = (0u64, 0u64);
    for state in core.registry.all() {
        let mut scan = Scan::new::<[u8]>(&state, &(..), core.seqs.pin(), false);
        while let Some(entry) = scan.next_ref() {
            let entry = match entry {
                Ok(entry) => entry,
                Err(DbError::SubtableDropped { .. }) => break,
                Err(e) => return Err(e),
            };
            keys += 1;
            bytes = bytes.saturating_add((entry.key.len() + entry.value.len()) as u64);
            if keys.is_multiple_of(PROGRESS_EVERY) {
                progress(keys, bytes);
            }
        }
    }
    progress(keys, bytes);
    Ok(bytes)
}
