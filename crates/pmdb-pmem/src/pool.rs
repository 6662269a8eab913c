//! The pool: the one type callers hold. It opens or creates the media (extent files, or
//! the crash simulator's memory), hands it to the allocator, which recovers on top of it,
//! and offers both through one API: data access and persistence by `PmOff`, the root
//! words, and zones and owners. It also hands out the files beside it, so that a
//! simulated pool's files are the simulator's, crashed with the pool.

use std::path::Path;
use std::sync::Arc;

use crate::backend::Backend;
#[cfg(feature = "crashsim")]
use crate::crashsim::{CrashImage, SimStore};
use crate::emulation::Emulation;
use crate::error::Result;
use crate::extent_file::ExtentDir;
#[cfg(feature = "crashsim")]
use crate::files::SimFiles;
use crate::files::{FileSystem, OsFiles};
use crate::flush::{FlushInsn, flush_insn};
use crate::halloc::{AllocStats, Heap, OwnerId, RecoveryReport, ZoneGrant};
use crate::layout::{ExtentHeader, ROOT_WORDS, root_off};
use crate::mapping::Mapping;
use crate::media::{Media, Store};
use crate::off::PmOff;
use crate::options::PoolOptions;
use crate::uuid::{format_uuid, new_uuid};

/// A persistent-memory pool.
pub struct Pool {
    heap: Heap,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("backend", &self.backend())
            .field("uuid", &self.uuid_string())
            .field("extents", &self.extent_count())
            .finish_non_exhaustive()
    }
}

impl Pool {
    /// Creates a new pool in `dir` (created if missing; must hold no pool yet).
    pub fn create(dir: impl AsRef<Path>, options: &PoolOptions) -> Result<Pool> {
        let (geometry, max_extents) = options.new_pool_geometry()?;
        let header = ExtentHeader::new(new_uuid(), 0, geometry, max_extents);
        let (dir, map) = ExtentDir::create(dir.as_ref(), &header, options.backend)?;
        Pool::create_on(Store::Dir(dir), &header, map, options)
    }

    /// Opens the pool in `dir`: checks every extent header and the extent count, maps the
    /// extents and runs allocator recovery. With `options.read_only` nothing in the
    /// directory is changed, by the open or afterwards: allocator recovery is in DRAM
    /// only, and every write fails with `PmemError::ReadOnly`.
    pub fn open(dir: impl AsRef<Path>, options: &PoolOptions) -> Result<Pool> {
        let (dir, header, maps) = ExtentDir::open(dir.as_ref(), options)?;
        Pool::open_on(Store::Dir(dir), &header, maps, options)
    }

    /// Creates a pool on the crash simulator (no files).
    #[cfg(feature = "crashsim")]
    pub fn create_sim(options: &PoolOptions) -> Result<Pool> {
        let (geometry, max_extents) = options.new_pool_geometry()?;
        let header = ExtentHeader::new(new_uuid(), 0, geometry, max_extents);
        let sim = Arc::new(SimStore::new());
        let map = sim.add_extent(&header)?;
        Pool::create_on(Store::Sim(sim), &header, map, options)
    }

    /// Opens a crash image on the crash simulator, checking and recovering as `open` does.
    #[cfg(feature = "crashsim")]
    pub fn open_image(image: &CrashImage, options: &PoolOptions) -> Result<Pool> {
        let (sim, header, maps) = SimStore::open_image(image, options)?;
        Pool::open_on(Store::Sim(sim), &header, maps, options)
    }

    /// A new pool whose extent 0 is `map`: the other initial extents come by growth, which
    /// records each in the extent count.
    fn create_on(
        store: Store,
        header: &ExtentHeader,
        map: Mapping,
        options: &PoolOptions,
    ) -> Result<Pool> {
        let media = Media::new(
            store,
            header,
            header.max_extents,
            vec![map],
            options.emulation,
            false,
        )?;
        for _ in 1..options.initial_extents {
            media.grow()?;
        }
        Ok(Pool {
            heap: Heap::recover(media),
        })
    }

    fn open_on(
        store: Store,
        header: &ExtentHeader,
        maps: Vec<Mapping>,
        options: &PoolOptions,
    ) -> Result<Pool> {
        let max_extents = options.max_extents_at_open(header.max_extents, maps.len())?;
        let media = Media::new(
            store,
            header,
            max_extents,
            maps,
            options.emulation,
            options.read_only,
        )?;
        Ok(Pool {
            heap: Heap::recover(media),
        })
    }

    fn media(&self) -> &Media {
        self.heap.media()
    }

    pub(crate) fn heap(&self) -> &Heap {
        &self.heap
    }

    #[cfg(feature = "crashsim")]
    pub(crate) fn sim(&self) -> Option<&Arc<SimStore>> {
        self.media().sim()
    }

    /// Crash image of the current state (crash simulator only): every 8-byte word that
    /// differs between working memory and the persisted image takes either value, and
    /// the files keep their durable state and a random part of the rest.
    #[cfg(feature = "crashsim")]
    pub fn crash(&self, seed: u64) -> Option<CrashImage> {
        self.sim().map(|sim| sim.crash(seed))
    }

    /// The files that go with this pool: on the crash simulator its filesystem, crashed
    /// at the same points as the pool (`dir` is ignored); otherwise the directory `dir`,
    /// created if missing — unless the pool is read-only, when it must exist, since a
    /// read-only open creates nothing.
    pub fn files(&self, dir: &Path) -> Result<Arc<dyn FileSystem>> {
        #[cfg(feature = "crashsim")]
        if let Some(sim) = self.sim() {
            return Ok(Arc::new(SimFiles::new(Arc::clone(sim))));
        }
        let files = if self.is_read_only() {
            OsFiles::existing(dir)?
        } else {
            OsFiles::open(dir)?
        };
        Ok(Arc::new(files))
    }

    /// Whether the pool was opened read-only (`PoolOptions::read_only`).
    pub fn is_read_only(&self) -> bool {
        self.media().is_read_only()
    }

    /// The backend in use.
    pub fn backend(&self) -> Backend {
        self.media().backend()
    }

    /// The cache-flush instruction in use (Dax and Memory backends).
    pub fn flush_insn(&self) -> FlushInsn {
        flush_insn()
    }

    /// The pool directory (none for a simulated pool).
    pub fn dir(&self) -> Option<&Path> {
        self.media().dir()
    }

    /// The pool uuid, made when the pool was created: what names the database its files
    /// belong to.
    pub fn uuid(&self) -> [u8; 16] {
        *self.media().uuid()
    }

    /// The pool uuid in the usual 8-4-4-4-12 form.
    pub fn uuid_string(&self) -> String {
        format_uuid(self.media().uuid())
    }

    pub fn zone_size(&self) -> u64 {
        self.media().geometry().zone_size
    }

    pub fn zones_per_extent(&self) -> u32 {
        self.media().geometry().zones_per_extent
    }

    pub fn max_owners(&self) -> u32 {
        self.media().geometry().max_owners
    }

    pub fn extent_count(&self) -> u32 {
        self.media().extent_count()
    }

    pub fn max_extents(&self) -> u32 {
        self.media().max_extents()
    }

    /// Whether this is the crash simulator's pool: there every write and free must
    /// happen at a point the workload decides, so work other layers would hand to a
    /// thread of their own runs inline instead.
    pub fn is_simulated(&self) -> bool {
        #[cfg(feature = "crashsim")]
        return self.backend() == Backend::CrashSim;
        #[cfg(not(feature = "crashsim"))]
        false
    }

    /// Zones the pool holds once grown to its maximum.
    pub fn max_zones(&self) -> u64 {
        u64::from(self.max_extents()) * u64::from(self.zones_per_extent())
    }

    /// Bytes the pool maps now.
    pub fn mapped_bytes(&self) -> u64 {
        self.media().bytes_of(self.extent_count())
    }

    /// The emulation knobs in force.
    pub fn emulation(&self) -> Emulation {
        self.media().emulation()
    }

    /// What recovery found when this pool was opened.
    pub fn recovery_report(&self) -> &RecoveryReport {
        self.heap.recovery_report()
    }

    /// Borrows `len` bytes of PM at `off` with no copy.
    ///
    /// Writers in pmdb never modify a range after publishing it, so a published range is
    /// stable for as long as the pool lives and its owner is not released (the engine
    /// releases an owner only once no reader holds it).
    pub fn read(&self, off: PmOff, len: usize) -> Result<&[u8]> {
        self.media().read(off, len)
    }

    /// Starts loading `len` bytes at `off` into the CPU cache without waiting, so a later
    /// read of them finds them there; out-of-bounds ranges are ignored.
    pub fn prefetch(&self, off: PmOff, len: usize) {
        self.media().prefetch(off, len);
    }

    /// Copies `data` into PM at `off`. Not durable until flushed and fenced.
    pub fn write(&self, off: PmOff, data: &[u8]) -> Result<()> {
        self.media().write(off, data)
    }

    /// Sets `len` bytes at `off` to `byte`. Not durable until flushed and fenced.
    pub fn fill(&self, off: PmOff, len: usize, byte: u8) -> Result<()> {
        self.media().fill(off, len, byte)
    }

    /// Loads the 8-byte word at `off` (data area, 8-byte aligned).
    pub fn load_u64(&self, off: PmOff) -> Result<u64> {
        self.media().load_u64(off)
    }

    /// Stores the 8-byte word at `off` atomically; not durable until flushed and fenced.
    pub fn store_u64(&self, off: PmOff, value: u64) -> Result<()> {
        self.media().store_u64(off, value)
    }

    /// Stores and persists an 8-byte word: the publish step of every protocol.
    pub fn publish_u64(&self, off: PmOff, value: u64) -> Result<()> {
        self.media().publish_u64(off, value)
    }

    /// Writes back the cache lines (or pages, on File) covering `[off, off + len)`.
    pub fn flush(&self, off: PmOff, len: usize) -> Result<()> {
        self.media().flush(off, len)
    }

    /// Orders earlier flushes before later stores; after it, flushed lines are durable.
    pub fn fence(&self) {
        self.media().fence()
    }

    /// `flush` then `fence`.
    pub fn persist(&self, off: PmOff, len: usize) -> Result<()> {
        self.media().persist(off, len)
    }

    /// Charges the emulated read latency of one PM access of `bytes` bytes.
    pub fn charge_read(&self, _bytes: usize) {
        self.media().charge_read();
    }

    /// Number of 8-byte root words.
    pub const ROOT_WORDS: usize = ROOT_WORDS;

    /// Reads root word `index` (< `ROOT_WORDS`).
    pub fn root(&self, index: usize) -> u64 {
        self.media().meta_load(root_off(index))
    }

    /// Publishes root word `index`: one atomic 8-byte store, flushed and fenced. Fails
    /// only on a read-only pool.
    pub fn publish_root(&self, index: usize, value: u64) -> Result<()> {
        self.media().meta_publish(root_off(index), value)
    }

    /// Registers a new live owner (one 8-byte registry store, flushed and fenced).
    pub fn create_owner(&self) -> Result<OwnerId> {
        self.heap.create_owner()
    }

    /// Reserves a free zone for `owner`, growing the pool by one extent if none is free.
    /// Fails with `PoolFull` when the pool is at its maximum size.
    pub fn alloc_zone(&self, owner: OwnerId) -> Result<ZoneGrant<'_>> {
        self.heap.alloc_zone(owner)
    }

    /// Marks `owner` dead (one 8-byte store, flushed and fenced), then returns all its
    /// zones to the free list. Readers that may still see those zones must have left
    /// before this is called.
    pub fn release_owner(&self, owner: OwnerId) -> Result<()> {
        self.heap.release_owner(owner)
    }

    /// Releases every live owner for which `keep` is false — the owners recovery found
    /// committed but the caller cannot reach. Returns how many were released.
    pub fn retain_owners(&self, keep: impl FnMut(OwnerId) -> bool) -> Result<usize> {
        self.heap.retain_owners(keep)
    }

    /// The live owners, by slot.
    pub fn owners(&self) -> Vec<OwnerId> {
        self.heap.owners()
    }

    /// Whether `owner` is live.
    pub fn is_live(&self, owner: OwnerId) -> bool {
        self.heap.is_live(owner)
    }

    /// The zones committed to `owner`, in address order (empty if it is not live).
    pub fn zones_of(&self, owner: OwnerId) -> Vec<PmOff> {
        self.heap.zones_of(owner)
    }

    /// The owner that committed the zone starting at `zone_off`, per its owner word, if
    /// that owner is live.
    pub fn zone_owner(&self, zone_off: PmOff) -> Option<OwnerId> {
        self.heap.zone_owner(zone_off)
    }

    /// Free zones in address order (for checkers and `pmdb pool info`).
    pub fn free_zones(&self) -> Vec<PmOff> {
        self.heap.free_zones()
    }

    /// Zones in the extents mapped now.
    pub fn zone_count(&self) -> u64 {
        self.heap.zone_count()
    }

    pub fn alloc_stats(&self) -> AllocStats {
        self.heap.stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_is_shareable_across_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Pool>();
    }
}
