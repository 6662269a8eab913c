//! The pool's media: its mapped extents, addressed by `PmOff` with every access bounds
//! checked, grown one whole extent at a time, and made durable by the backend's
//! persistence. The data API reaches only the zones; the metadata words (root, owner
//! registry, owner words, extent count) are reached through `meta_*` alone, so no caller
//! can scribble over them by mistake.

use std::path::{Path, PathBuf};
#[cfg(feature = "crashsim")]
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::backend::Backend;
#[cfg(feature = "crashsim")]
use crate::crashsim::{SimStore, image_path};
use crate::emulation::{Emulation, Emulator};
use crate::error::{PmemError, Result};
use crate::extent_file::ExtentDir;
use crate::flush::{CACHE_LINE, prefetch_lines};
use crate::layout::{EXTENT_COUNT_OFF, ExtentHeader, Geometry};
use crate::mapping::Mapping;
use crate::off::PmOff;
use crate::persist::Persistence;

/// Extent 0's count of the extents the pool has grown to.
const EXTENT_COUNT: PmOff = PmOff::new(0, EXTENT_COUNT_OFF);

/// Where a pool's extents live.
pub(crate) enum Store {
    Dir(ExtentDir),
    #[cfg(feature = "crashsim")]
    Sim(Arc<SimStore>),
}

impl Store {
    fn backend(&self) -> Backend {
        match self {
            Store::Dir(dir) => dir.backend(),
            #[cfg(feature = "crashsim")]
            Store::Sim(_) => Backend::CrashSim,
        }
    }

    fn persistence(&self) -> Persistence {
        match self {
            Store::Dir(dir) => Persistence::of_files(dir.backend()),
            #[cfg(feature = "crashsim")]
            Store::Sim(sim) => Persistence::Sim(Arc::clone(sim)),
        }
    }

    fn add_extent(&self, header: &ExtentHeader) -> Result<Mapping> {
        match self {
            Store::Dir(dir) => dir.add_extent(header),
            #[cfg(feature = "crashsim")]
            Store::Sim(sim) => sim.add_extent(header),
        }
    }

    fn extent_path(&self, index: u16) -> PathBuf {
        match self {
            Store::Dir(dir) => dir.extent_path(index),
            #[cfg(feature = "crashsim")]
            Store::Sim(_) => image_path(index),
        }
    }
}

/// The mapped extents of one pool.
pub(crate) struct Media {
    store: Store,
    persistence: Persistence,
    uuid: [u8; 16],
    geometry: Geometry,
    max_extents: u32,
    /// Opened to look only: every store fails with `ReadOnly` (file extents are also
    /// mapped `PROT_READ`, so a store that got past this check could not reach them).
    read_only: bool,
    /// A slot per extent the pool may grow to, filled once: growth never moves a mapping
    /// that a reader holds a slice of.
    extents: Box<[OnceLock<Mapping>]>,
    n_extents: AtomicU32,
    grow_lock: Mutex<()>,
    emu: Emulator,
}

// The simulator's files may outlive the pool and still be crashed; its working pointers
// must not outlive the mappings.
#[cfg(feature = "crashsim")]
impl Drop for Media {
    fn drop(&mut self) {
        if let Store::Sim(sim) = &self.store {
            sim.close();
        }
    }
}

impl Media {
    /// Takes over the extents of the pool whose extent 0 carries `header`, after holding
    /// them against the extent count that extent 0 records.
    pub fn new(
        store: Store,
        header: &ExtentHeader,
        max_extents: u32,
        maps: Vec<Mapping>,
        emulation: Emulation,
        read_only: bool,
    ) -> Result<Media> {
        let extents: Box<[OnceLock<Mapping>]> = (0..max_extents).map(|_| OnceLock::new()).collect();
        let n_extents = AtomicU32::new(maps.len() as u32);
        for (slot, map) in extents.iter().zip(maps) {
            let _ = slot.set(map);
        }
        let media = Media {
            persistence: store.persistence(),
            store,
            uuid: header.uuid,
            geometry: header.geometry,
            max_extents,
            read_only,
            extents,
            n_extents,
            grow_lock: Mutex::new(()),
            emu: Emulator::new(emulation),
        };
        media.settle_extent_count()?;
        Ok(media)
    }

    /// Fewer extents than extent 0 records means an extent file was lost, and with it
    /// whatever its zones held. More means a crash came between a new extent's rename and
    /// the publish of its count (or the pool predates the count): no zone of it can have
    /// been committed yet, so it is adopted (read-only, in DRAM alone).
    fn settle_extent_count(&self) -> Result<()> {
        let recorded = self.meta_load(EXTENT_COUNT);
        let present = self.extent_count();
        if recorded > present as u64 {
            return Err(PmemError::Corrupt {
                path: self.store.extent_path(present as u16),
                reason: format!(
                    "extent file is missing: extent 0 records {recorded} extents, {present} are present"
                ),
            });
        }
        if recorded < present as u64 && !self.read_only {
            self.meta_publish(EXTENT_COUNT, present as u64)?;
        }
        Ok(())
    }

    pub fn backend(&self) -> Backend {
        self.store.backend()
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Fails with `ReadOnly` if the media was opened to look only.
    pub(crate) fn writable(&self, what: &'static str) -> Result<()> {
        if self.read_only {
            return Err(PmemError::ReadOnly { what });
        }
        Ok(())
    }

    /// The pool directory (none for a simulated pool).
    pub fn dir(&self) -> Option<&Path> {
        match &self.store {
            Store::Dir(dir) => Some(dir.path()),
            #[cfg(feature = "crashsim")]
            Store::Sim(_) => None,
        }
    }

    #[cfg(feature = "crashsim")]
    pub fn sim(&self) -> Option<&Arc<SimStore>> {
        match &self.store {
            Store::Sim(sim) => Some(sim),
            Store::Dir(_) => None,
        }
    }

    pub fn uuid(&self) -> &[u8; 16] {
        &self.uuid
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    pub fn max_extents(&self) -> u32 {
        self.max_extents
    }

    pub fn extent_count(&self) -> u32 {
        self.n_extents.load(Ordering::Acquire)
    }

    /// Bytes mapped by `extents` extents.
    pub fn bytes_of(&self, extents: u32) -> u64 {
        (0..extents as u16)
            .map(|e| self.geometry.extent_len(e))
            .sum()
    }

    pub fn emulation(&self) -> Emulation {
        self.emu.knobs()
    }

    pub fn charge_read(&self) {
        self.emu.charge_read();
    }

    /// The mapping of `off`'s extent and a pointer to `len` bytes at `off`, anywhere in
    /// the extent (metadata included).
    fn locate(&self, off: PmOff, len: usize) -> Result<(&Mapping, *mut u8)> {
        let oob = || PmemError::OutOfBounds {
            off,
            len: len as u64,
        };
        let map = self
            .extents
            .get(off.extent() as usize)
            .and_then(OnceLock::get)
            .ok_or_else(oob)?;
        let end = off.offset().checked_add(len as u64).ok_or_else(oob)?;
        if end > map.len() as u64 {
            return Err(oob());
        }
        // SAFETY: `offset <= end <= map.len()`, so the pointer stays inside the mapping
        // (or one past its end when `len` is 0).
        Ok((map, unsafe { map.as_ptr().add(off.offset() as usize) }))
    }

    /// Pointer to `len` bytes at `off` inside the zone data area of an extent.
    fn data_ptr(&self, off: PmOff, len: usize) -> Result<*mut u8> {
        if off.offset() < self.geometry.data_off(off.extent()) {
            return Err(PmemError::OutOfBounds {
                off,
                len: len as u64,
            });
        }
        Ok(self.locate(off, len)?.1)
    }

    /// Starts loading `len` bytes at `off` into the cache; out-of-bounds ranges are
    /// ignored (a hint has nothing to report).
    pub fn prefetch(&self, off: PmOff, len: usize) {
        if let Ok(ptr) = self.data_ptr(off, len) {
            prefetch_lines(ptr, len);
        }
    }

    pub fn read(&self, off: PmOff, len: usize) -> Result<&[u8]> {
        let ptr = self.data_ptr(off, len)?;
        // SAFETY: `len` bytes at `ptr` are mapped (checked) for as long as `&self` lives,
        // since an extent is unmapped only when the media drops; any byte value is a valid
        // `u8`; and writers never modify a range after publishing it, which is the only
        // way a reader learns of it.
        Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
    }

    pub fn write(&self, off: PmOff, data: &[u8]) -> Result<()> {
        self.writable("a write")?;
        let ptr = self.data_ptr(off, data.len())?;
        // SAFETY: `data.len()` bytes at `ptr` are mapped and writable (checked); `data` is
        // the caller's memory and cannot overlap a range the caller has only borrowed
        // immutably from this pool, since published ranges are never written.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), ptr, data.len()) };
        Ok(())
    }

    pub fn fill(&self, off: PmOff, len: usize, byte: u8) -> Result<()> {
        self.writable("a fill")?;
        let ptr = self.data_ptr(off, len)?;
        // SAFETY: `len` bytes at `ptr` are mapped and writable (checked).
        unsafe { std::ptr::write_bytes(ptr, byte, len) };
        Ok(())
    }

    /// Makes the first write to each page of `[off, off + len)` (data area) take no page
    /// fault: the pages are allocated and mapped writable now. No byte changes, so any
    /// range may be pre-faulted at any time, whoever writes to it meanwhile.
    pub fn prefault(&self, off: PmOff, len: usize) -> Result<()> {
        self.writable("pre-faulting")?;
        self.data_ptr(off, len)?;
        let (map, _) = self.locate(off, len)?;
        map.populate_write(off.offset() as usize, len)
            .map_err(|e| PmemError::io(self.store.extent_path(off.extent()), e))
    }

    fn atomic_at(&self, off: PmOff, data_only: bool) -> Result<&AtomicU64> {
        if !off.offset().is_multiple_of(8) {
            return Err(PmemError::Misaligned { off });
        }
        let ptr = if data_only {
            self.data_ptr(off, 8)?
        } else {
            self.locate(off, 8)?.1
        };
        // SAFETY: 8 mapped bytes (checked), 8-byte aligned because extents are page
        // aligned and `off` is a multiple of 8, mapped as long as `&self` lives; 8-byte
        // words that protocols publish are only ever accessed atomically.
        Ok(unsafe { AtomicU64::from_ptr(ptr.cast()) })
    }

    pub fn load_u64(&self, off: PmOff) -> Result<u64> {
        Ok(self.atomic_at(off, true)?.load(Ordering::Acquire))
    }

    pub fn store_u64(&self, off: PmOff, value: u64) -> Result<()> {
        self.writable("a store")?;
        self.atomic_at(off, true)?.store(value, Ordering::Release);
        Ok(())
    }

    pub fn publish_u64(&self, off: PmOff, value: u64) -> Result<()> {
        self.store_u64(off, value)?;
        self.persist(off, 8)
    }

    /// Loads an 8-byte metadata word; `off` comes from the geometry, so it is in bounds.
    pub fn meta_load(&self, off: PmOff) -> u64 {
        self.atomic_at(off, false)
            .expect("metadata word inside geometry")
            .load(Ordering::Acquire)
    }

    /// Stores and persists an 8-byte metadata word (owner words, registry, root, extent
    /// count); `off` comes from the geometry, so it is in bounds. Fails only read-only.
    pub fn meta_publish(&self, off: PmOff, value: u64) -> Result<()> {
        self.writable("a metadata publish")?;
        self.atomic_at(off, false)
            .expect("metadata word inside geometry")
            .store(value, Ordering::Release);
        self.persist(off, 8).expect("metadata word inside geometry");
        Ok(())
    }

    pub fn flush(&self, off: PmOff, len: usize) -> Result<()> {
        self.writable("a flush")?;
        let (map, _) = self.locate(off, len)?;
        let lines = self
            .persistence
            .flush(map, off, len)
            .map_err(|e| PmemError::io(self.store.extent_path(off.extent()), e))?;
        self.emu.charge_flush(lines, lines * CACHE_LINE);
        Ok(())
    }

    pub fn fence(&self) {
        self.persistence.fence();
    }

    pub fn persist(&self, off: PmOff, len: usize) -> Result<()> {
        self.flush(off, len)?;
        self.fence();
        Ok(())
    }

    /// Adds one extent and then publishes the new extent count; `PoolFull` at the
    /// maximum. Returns the new extent's index.
    pub fn grow(&self) -> Result<u16> {
        self.writable("growing the pool")?;
        let _guard = self.grow_lock.lock();
        let n = self.extent_count();
        if n >= self.max_extents {
            return Err(PmemError::PoolFull {
                max_extents: self.max_extents,
                max_bytes: self.bytes_of(self.max_extents),
            });
        }
        let index = n as u16;
        let header = ExtentHeader::new(self.uuid, index, self.geometry, self.max_extents);
        let map = self.store.add_extent(&header)?;
        let _ = self.extents[index as usize].set(map);
        self.n_extents.store(n + 1, Ordering::Release);
        self.meta_publish(EXTENT_COUNT, n as u64 + 1)?;
        Ok(index)
    }
}
