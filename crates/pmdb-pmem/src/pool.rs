//! The pool: a directory of extent files (or, under the crash simulator, in-memory
//! extents), mapped and checked at open, grown by whole extents, with bounds-checked
//! access by `PmOff`, the persistence primitives, and the root area.

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use crate::backend::{Backend, BackendChoice, FsKind, filesystem_kind};
use crate::crashsim::{CrashImage, SimStore};
use crate::emulation::{Emulation, Emulator};
use crate::error::{PmemError, Result};
use crate::flush::{FlushInsn, flush_insn, flush_lines, store_fence};
use crate::halloc::{AllocState, RecoveryReport};
use crate::layout::{
    ExtentHeader, FORMAT_VERSION, Geometry, HeaderError, MAX_EXTENTS, ROOT_OFF, ROOT_WORDS,
    validate_geometry,
};
use crate::mapping::Mapping;
use crate::off::PmOff;
use crate::options::{DEFAULT_MAX_EXTENTS, DEFAULT_ZONE_SIZE, PoolOptions};

const LOCK_FILE: &str = "pool.lock";
const EXTENT_PREFIX: &str = "extent-";
const EXTENT_SUFFIX: &str = ".pm";
const TMP_SUFFIX: &str = ".tmp";

struct Extent {
    map: Mapping,
    // Keeps the file open for the mapping's lifetime (and for fsync on growth).
    _file: Option<File>,
}

enum Store {
    Dir { path: PathBuf, _lock: File },
    Sim(Arc<SimStore>),
}

/// A persistent-memory pool.
pub struct Pool {
    store: Store,
    backend: Backend,
    uuid: [u8; 16],
    geometry: Geometry,
    max_extents: u32,
    extents: Box<[OnceLock<Extent>]>,
    n_extents: AtomicU32,
    grow_lock: Mutex<()>,
    pub(crate) alloc: Mutex<AllocState>,
    emu: Emulator,
    recovery: RecoveryReport,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("backend", &self.backend)
            .field("uuid", &self.uuid_string())
            .field("extents", &self.extent_count())
            .finish_non_exhaustive()
    }
}

/// Everything a pool is made of before recovery runs.
struct Parts {
    store: Store,
    backend: Backend,
    uuid: [u8; 16],
    geometry: Geometry,
    max_extents: u32,
    extents: Vec<Extent>,
}

impl Pool {
    /// Creates a new pool in `dir` (created if missing; must hold no pool yet).
    pub fn create(dir: impl AsRef<Path>, options: &PoolOptions) -> Result<Pool> {
        let dir = dir.as_ref();
        let (geometry, max_extents) = create_geometry(options)?;
        fs::create_dir_all(dir).map_err(|e| PmemError::io(dir, e))?;
        let lock = lock_dir(dir)?;
        if !list_extents(dir)?.is_empty() {
            return Err(PmemError::AlreadyExists { path: dir.into() });
        }
        let uuid = new_uuid();
        let mut extents = Vec::new();
        let mut backend = None;
        for index in 0..options.initial_extents {
            let (extent, b) = create_file_extent(
                dir,
                index as u16,
                &uuid,
                &geometry,
                max_extents,
                backend.map_or(options.backend, choice_of),
            )?;
            backend = Some(b);
            extents.push(extent);
        }
        sync_dir(dir)?;
        Pool::assemble(
            Parts {
                store: Store::Dir {
                    path: dir.into(),
                    _lock: lock,
                },
                backend: backend.expect("initial_extents >= 1 was validated"),
                uuid,
                geometry,
                max_extents,
                extents,
            },
            options,
        )
    }

    /// Opens the pool in `dir`: checks every extent header, maps the extents and runs
    /// allocator recovery.
    pub fn open(dir: impl AsRef<Path>, options: &PoolOptions) -> Result<Pool> {
        let dir = dir.as_ref();
        let meta = fs::metadata(dir).map_err(|e| PmemError::io(dir, e))?;
        if !meta.is_dir() {
            return Err(PmemError::NoPool { path: dir.into() });
        }
        let lock = lock_dir(dir)?;
        remove_incomplete_extents(dir)?;
        let names = list_extents(dir)?;
        if names.is_empty() {
            return Err(PmemError::NoPool { path: dir.into() });
        }
        let mut extents = Vec::with_capacity(names.len());
        let mut first: Option<(ExtentHeader, Backend)> = None;
        for (i, (index, path)) in names.iter().enumerate() {
            if *index as usize != i {
                return Err(PmemError::Corrupt {
                    path: dir.join(extent_name(i as u16)),
                    reason: "extent file is missing".into(),
                });
            }
            let (file, header) = read_extent_header(path)?;
            check_extent(path, &header, *index, first.as_ref().map(|f| &f.0), options)?;
            let choice = first.as_ref().map_or(options.backend, |f| choice_of(f.1));
            let (map, backend) = map_file(path, &file, header.extent_len, choice)?;
            if first.is_none() {
                first = Some((header, backend));
            }
            extents.push(Extent {
                map,
                _file: Some(file),
            });
        }
        let (header, backend) = first.expect("at least one extent");
        let max_extents = open_max_extents(options, &header, extents.len())?;
        Pool::assemble(
            Parts {
                store: Store::Dir {
                    path: dir.into(),
                    _lock: lock,
                },
                backend,
                uuid: header.uuid,
                geometry: header.geometry,
                max_extents,
                extents,
            },
            options,
        )
    }

    /// Creates a pool on the crash simulator (no files).
    pub fn create_sim(options: &PoolOptions) -> Result<Pool> {
        let (geometry, max_extents) = create_geometry(options)?;
        let sim = Arc::new(SimStore::new());
        let uuid = new_uuid();
        let mut extents = Vec::new();
        for index in 0..options.initial_extents {
            extents.push(create_sim_extent(
                &sim,
                index as u16,
                &uuid,
                &geometry,
                max_extents,
            )?);
        }
        Pool::assemble(
            Parts {
                store: Store::Sim(sim),
                backend: Backend::CrashSim,
                uuid,
                geometry,
                max_extents,
                extents,
            },
            options,
        )
    }

    /// Opens a crash image on the crash simulator, running recovery as `open` does.
    pub fn open_image(image: &CrashImage, options: &PoolOptions) -> Result<Pool> {
        let sim = Arc::new(SimStore::new());
        let mut extents = Vec::with_capacity(image.extents.len());
        let mut first: Option<ExtentHeader> = None;
        for (i, bytes) in image.extents.iter().enumerate() {
            let path = PathBuf::from(format!("<crash image>/{}", extent_name(i as u16)));
            let header = ExtentHeader::decode(bytes).map_err(|e| header_error(&path, e))?;
            check_extent(&path, &header, i as u16, first.as_ref(), options)?;
            if bytes.len() as u64 != header.extent_len {
                return Err(PmemError::Truncated {
                    path,
                    found: bytes.len() as u64,
                    expected: header.extent_len,
                });
            }
            let map = Mapping::anon(bytes.len()).map_err(|e| PmemError::io(&path, e))?;
            // SAFETY: the fresh mapping holds `bytes.len()` bytes and aliases nothing.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), map.as_ptr(), bytes.len()) };
            sim.add_extent(map.as_ptr(), map.len());
            extents.push(Extent { map, _file: None });
            first.get_or_insert(header);
        }
        let header = first.ok_or_else(|| PmemError::NoPool {
            path: "<crash image>".into(),
        })?;
        let max_extents = open_max_extents(options, &header, extents.len())?;
        Pool::assemble(
            Parts {
                store: Store::Sim(sim),
                backend: Backend::CrashSim,
                uuid: header.uuid,
                geometry: header.geometry,
                max_extents,
                extents,
            },
            options,
        )
    }

    fn assemble(parts: Parts, options: &PoolOptions) -> Result<Pool> {
        let slots: Box<[OnceLock<Extent>]> =
            (0..parts.max_extents).map(|_| OnceLock::new()).collect();
        let n = parts.extents.len() as u32;
        for (slot, extent) in slots.iter().zip(parts.extents) {
            let _ = slot.set(extent);
        }
        let mut pool = Pool {
            store: parts.store,
            backend: parts.backend,
            uuid: parts.uuid,
            geometry: parts.geometry,
            max_extents: parts.max_extents,
            extents: slots,
            n_extents: AtomicU32::new(n),
            grow_lock: Mutex::new(()),
            alloc: Mutex::new(AllocState::default()),
            emu: Emulator::new(options.emulation),
            recovery: RecoveryReport::default(),
        };
        let (state, report) = crate::halloc::recover(&pool);
        pool.alloc = Mutex::new(state);
        pool.recovery = report;
        Ok(pool)
    }

    /// The backend in use.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The cache-flush instruction in use (Dax and Memory backends).
    pub fn flush_insn(&self) -> FlushInsn {
        flush_insn()
    }

    /// The pool directory (none for a simulated pool).
    pub fn dir(&self) -> Option<&Path> {
        match &self.store {
            Store::Dir { path, .. } => Some(path),
            Store::Sim(_) => None,
        }
    }

    /// The pool uuid in the usual 8-4-4-4-12 form.
    pub fn uuid_string(&self) -> String {
        format_uuid(&self.uuid)
    }

    pub fn zone_size(&self) -> u64 {
        self.geometry.zone_size
    }

    pub fn zones_per_extent(&self) -> u32 {
        self.geometry.zones_per_extent
    }

    pub fn max_owners(&self) -> u32 {
        self.geometry.max_owners
    }

    pub fn extent_count(&self) -> u32 {
        self.n_extents.load(Ordering::Acquire)
    }

    pub fn max_extents(&self) -> u32 {
        self.max_extents
    }

    /// Bytes the pool maps now.
    pub fn mapped_bytes(&self) -> u64 {
        (0..self.extent_count() as u16)
            .map(|e| self.geometry.extent_len(e))
            .sum()
    }

    /// The emulation knobs in force.
    pub fn emulation(&self) -> Emulation {
        self.emu.knobs()
    }

    /// What recovery found when this pool was opened.
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.recovery
    }

    pub(crate) fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    pub(crate) fn sim(&self) -> Option<&Arc<SimStore>> {
        match &self.store {
            Store::Sim(sim) => Some(sim),
            Store::Dir { .. } => None,
        }
    }

    fn extent(&self, index: u16) -> Option<&Extent> {
        self.extents.get(index as usize)?.get()
    }

    /// Pointer to `len` bytes at `off`, anywhere inside an extent (metadata included).
    pub(crate) fn raw_ptr(&self, off: PmOff, len: usize) -> Result<*mut u8> {
        let oob = || PmemError::OutOfBounds {
            off,
            len: len as u64,
        };
        let extent = self.extent(off.extent()).ok_or_else(oob)?;
        let end = off.offset().checked_add(len as u64).ok_or_else(oob)?;
        if end > extent.map.len() as u64 {
            return Err(oob());
        }
        // SAFETY: `[offset, end)` was just checked to lie inside the mapping.
        Ok(unsafe { extent.map.as_ptr().add(off.offset() as usize) })
    }

    /// Pointer to `len` bytes at `off` inside the zone data area of an extent.
    fn data_ptr(&self, off: PmOff, len: usize) -> Result<*mut u8> {
        if off.offset() < self.geometry.data_off(off.extent()) {
            return Err(PmemError::OutOfBounds {
                off,
                len: len as u64,
            });
        }
        self.raw_ptr(off, len)
    }

    /// Borrows `len` bytes of PM at `off` with no copy.
    ///
    /// Writers in pmdb never modify a range after publishing it, so a published range is
    /// stable for as long as the pool (and the reader's epoch) lives.
    pub fn read(&self, off: PmOff, len: usize) -> Result<&[u8]> {
        let ptr = self.data_ptr(off, len)?;
        // SAFETY: in bounds (checked) and the mapping lives as long as `&self`.
        Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
    }

    /// Copies `data` into PM at `off`. Not durable until flushed and fenced.
    pub fn write(&self, off: PmOff, data: &[u8]) -> Result<()> {
        let ptr = self.data_ptr(off, data.len())?;
        // SAFETY: in bounds (checked); `data` is ordinary memory, never PM of this range.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), ptr, data.len()) };
        Ok(())
    }

    /// Sets `len` bytes at `off` to `byte`. Not durable until flushed and fenced.
    pub fn fill(&self, off: PmOff, len: usize, byte: u8) -> Result<()> {
        let ptr = self.data_ptr(off, len)?;
        // SAFETY: in bounds (checked).
        unsafe { std::ptr::write_bytes(ptr, byte, len) };
        Ok(())
    }

    fn atomic_at(&self, off: PmOff, data_only: bool) -> Result<&AtomicU64> {
        if !off.offset().is_multiple_of(8) {
            return Err(PmemError::Misaligned { off });
        }
        let ptr = if data_only {
            self.data_ptr(off, 8)?
        } else {
            self.raw_ptr(off, 8)?
        };
        // SAFETY: 8 in-bounds bytes, 8-byte aligned (extents are page aligned), living as
        // long as `&self`; all 8-byte metadata words are only accessed atomically.
        Ok(unsafe { AtomicU64::from_ptr(ptr.cast()) })
    }

    /// Loads the 8-byte word at `off` (data area, 8-byte aligned).
    pub fn load_u64(&self, off: PmOff) -> Result<u64> {
        Ok(self.atomic_at(off, true)?.load(Ordering::Acquire))
    }

    /// Stores the 8-byte word at `off` atomically; not durable until flushed and fenced.
    pub fn store_u64(&self, off: PmOff, value: u64) -> Result<()> {
        self.atomic_at(off, true)?.store(value, Ordering::Release);
        Ok(())
    }

    /// Stores and persists an 8-byte word: the publish step of every protocol.
    pub fn publish_u64(&self, off: PmOff, value: u64) -> Result<()> {
        self.store_u64(off, value)?;
        self.persist(off, 8)
    }

    pub(crate) fn meta_load(&self, off: PmOff) -> u64 {
        self.atomic_at(off, false)
            .expect("metadata word inside geometry")
            .load(Ordering::Acquire)
    }

    /// Stores and persists an 8-byte metadata word (owner words, registry, root).
    pub(crate) fn meta_publish(&self, off: PmOff, value: u64) {
        self.atomic_at(off, false)
            .expect("metadata word inside geometry")
            .store(value, Ordering::Release);
        self.persist(off, 8).expect("metadata word inside geometry");
    }

    /// Writes back the cache lines (or pages, on File) covering `[off, off + len)`.
    pub fn flush(&self, off: PmOff, len: usize) -> Result<()> {
        let ptr = self.raw_ptr(off, len)?;
        let lines = match self.backend {
            Backend::Dax | Backend::Memory => flush_lines(ptr, len),
            Backend::File => {
                let extent = self.extent(off.extent()).expect("checked by raw_ptr");
                extent
                    .map
                    .msync(off.offset() as usize, len)
                    .map_err(|e| PmemError::io(self.extent_path(off.extent()), e))?;
                len.div_ceil(crate::flush::CACHE_LINE)
            }
            Backend::CrashSim => {
                let sim = self.sim().expect("crashsim pool has a sim store");
                sim.flush(off.extent() as usize, off.offset() as usize, len);
                len.div_ceil(crate::flush::CACHE_LINE)
            }
        };
        self.emu
            .charge_flush(lines, lines * crate::flush::CACHE_LINE);
        Ok(())
    }

    /// Orders earlier flushes before later stores; after it, flushed lines are durable.
    pub fn fence(&self) {
        match self.backend {
            Backend::Dax | Backend::Memory => store_fence(),
            // msync already waited for the device.
            Backend::File => {}
            Backend::CrashSim => self.sim().expect("crashsim pool").fence(),
        }
    }

    /// `flush` then `fence`.
    pub fn persist(&self, off: PmOff, len: usize) -> Result<()> {
        self.flush(off, len)?;
        self.fence();
        Ok(())
    }

    /// Charges the emulated read latency of one PM access of `bytes` bytes.
    pub fn charge_read(&self, _bytes: usize) {
        self.emu.charge_read();
    }

    /// Number of 8-byte root words.
    pub const ROOT_WORDS: usize = ROOT_WORDS;

    fn root_off(index: usize) -> PmOff {
        assert!(index < ROOT_WORDS, "root word {index} out of range");
        PmOff::new(0, ROOT_OFF + index as u64 * 8)
    }

    /// Reads root word `index` (< `ROOT_WORDS`).
    pub fn root(&self, index: usize) -> u64 {
        self.meta_load(Self::root_off(index))
    }

    /// Publishes root word `index`: one atomic 8-byte store, flushed and fenced.
    pub fn publish_root(&self, index: usize, value: u64) {
        self.meta_publish(Self::root_off(index), value);
    }

    /// Adds one extent; `PoolFull` at the maximum. Returns the new extent's index.
    pub(crate) fn grow(&self) -> Result<u16> {
        let _guard = self.grow_lock.lock();
        let n = self.extent_count();
        if n >= self.max_extents {
            return Err(PmemError::PoolFull {
                max_extents: self.max_extents,
                max_bytes: (0..self.max_extents as u16)
                    .map(|e| self.geometry.extent_len(e))
                    .sum(),
            });
        }
        let index = n as u16;
        let extent = match &self.store {
            Store::Dir { path, .. } => {
                let (extent, _) = create_file_extent(
                    path,
                    index,
                    &self.uuid,
                    &self.geometry,
                    self.max_extents,
                    choice_of(self.backend),
                )?;
                sync_dir(path)?;
                extent
            }
            Store::Sim(sim) => {
                create_sim_extent(sim, index, &self.uuid, &self.geometry, self.max_extents)?
            }
        };
        let _ = self.extents[index as usize].set(extent);
        self.n_extents.store(n + 1, Ordering::Release);
        Ok(index)
    }

    fn extent_path(&self, index: u16) -> PathBuf {
        match &self.store {
            Store::Dir { path, .. } => path.join(extent_name(index)),
            Store::Sim(_) => PathBuf::from(format!("<crash image>/{}", extent_name(index))),
        }
    }

    /// Crash image of the current state (crash simulator only): every 8-byte word that
    /// differs between working memory and the persisted image takes either value.
    pub fn crash(&self, seed: u64) -> Option<CrashImage> {
        self.sim().map(|sim| sim.crash(seed))
    }
}

fn create_geometry(options: &PoolOptions) -> Result<(Geometry, u32)> {
    let geometry = Geometry {
        zone_size: options.zone_size.unwrap_or(DEFAULT_ZONE_SIZE),
        zones_per_extent: options.zones_per_extent,
        max_owners: options.max_owners,
    };
    validate_geometry(&geometry)
        .map_err(|(name, reason)| PmemError::InvalidOption { name, reason })?;
    let max_extents = options.max_extents.unwrap_or(DEFAULT_MAX_EXTENTS);
    if max_extents == 0 || max_extents > MAX_EXTENTS {
        return Err(PmemError::InvalidOption {
            name: "max_extents",
            reason: format!("{max_extents} is not in 1..={MAX_EXTENTS}"),
        });
    }
    if options.initial_extents == 0 || options.initial_extents > max_extents {
        return Err(PmemError::InvalidOption {
            name: "initial_extents",
            reason: format!(
                "{} is not in 1..={max_extents} (the maximum)",
                options.initial_extents
            ),
        });
    }
    Ok((geometry, max_extents))
}

fn open_max_extents(options: &PoolOptions, header: &ExtentHeader, present: usize) -> Result<u32> {
    let max = options.max_extents.unwrap_or(header.max_extents);
    if max == 0 || max > MAX_EXTENTS {
        return Err(PmemError::InvalidOption {
            name: "max_extents",
            reason: format!("{max} is not in 1..={MAX_EXTENTS}"),
        });
    }
    Ok(max.max(present as u32))
}

fn header_for(uuid: &[u8; 16], index: u16, geometry: &Geometry, max_extents: u32) -> ExtentHeader {
    ExtentHeader {
        version: FORMAT_VERSION,
        uuid: *uuid,
        extent: index,
        max_extents,
        geometry: *geometry,
        extent_len: geometry.extent_len(index),
    }
}

/// Creates extent `index` as `<name>.tmp`, writes and syncs its header, then renames it
/// into place: a crash leaves either no extent or a complete one.
fn create_file_extent(
    dir: &Path,
    index: u16,
    uuid: &[u8; 16],
    geometry: &Geometry,
    max_extents: u32,
    choice: BackendChoice,
) -> Result<(Extent, Backend)> {
    let path = dir.join(extent_name(index));
    let tmp = dir.join(format!("{}{TMP_SUFFIX}", extent_name(index)));
    let header = header_for(uuid, index, geometry, max_extents);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .map_err(|e| PmemError::io(&tmp, e))?;
    file.set_len(header.extent_len)
        .map_err(|e| PmemError::io(&tmp, e))?;
    file.write_all_at(&header.encode(), 0)
        .map_err(|e| PmemError::io(&tmp, e))?;
    file.sync_all().map_err(|e| PmemError::io(&tmp, e))?;
    fs::rename(&tmp, &path).map_err(|e| PmemError::io(&path, e))?;
    let (map, backend) = map_file(&path, &file, header.extent_len, choice)?;
    Ok((
        Extent {
            map,
            _file: Some(file),
        },
        backend,
    ))
}

fn create_sim_extent(
    sim: &SimStore,
    index: u16,
    uuid: &[u8; 16],
    geometry: &Geometry,
    max_extents: u32,
) -> Result<Extent> {
    let header = header_for(uuid, index, geometry, max_extents);
    let map =
        Mapping::anon(header.extent_len as usize).map_err(|e| PmemError::io("<crash image>", e))?;
    let bytes = header.encode();
    // SAFETY: the fresh mapping is larger than the header and aliases nothing.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), map.as_ptr(), bytes.len()) };
    sim.add_extent(map.as_ptr(), map.len());
    Ok(Extent { map, _file: None })
}

/// Maps an extent file and settles the backend: DAX if `MAP_SYNC` is granted (Auto or
/// Dax), Memory on tmpfs/ramfs, File otherwise.
fn map_file(
    path: &Path,
    file: &File,
    len: u64,
    choice: BackendChoice,
) -> Result<(Mapping, Backend)> {
    let io = |e| PmemError::io(path, e);
    let len = len as usize;
    match choice {
        BackendChoice::Dax => Mapping::file(file, len, true)
            .map(|m| (m, Backend::Dax))
            .map_err(|_| PmemError::DaxUnavailable { path: path.into() }),
        BackendChoice::Memory => Ok((
            Mapping::file(file, len, false).map_err(io)?,
            Backend::Memory,
        )),
        BackendChoice::File => Ok((Mapping::file(file, len, false).map_err(io)?, Backend::File)),
        BackendChoice::Auto => {
            if let Ok(map) = Mapping::file(file, len, true) {
                return Ok((map, Backend::Dax));
            }
            let dir = path.parent().unwrap_or(Path::new("."));
            let backend = match filesystem_kind(dir).map_err(io)? {
                FsKind::Ram => Backend::Memory,
                FsKind::Other(_) => Backend::File,
            };
            Ok((Mapping::file(file, len, false).map_err(io)?, backend))
        }
    }
}

fn choice_of(backend: Backend) -> BackendChoice {
    match backend {
        Backend::Dax => BackendChoice::Dax,
        Backend::Memory => BackendChoice::Memory,
        Backend::File | Backend::CrashSim => BackendChoice::File,
    }
}

fn read_extent_header(path: &Path) -> Result<(File, ExtentHeader)> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| PmemError::io(path, e))?;
    let len = file.metadata().map_err(|e| PmemError::io(path, e))?.len();
    let mut buf = vec![0u8; len.min(4096) as usize];
    file.read_exact_at(&mut buf, 0)
        .map_err(|e| PmemError::io(path, e))?;
    let header = ExtentHeader::decode(&buf).map_err(|e| header_error(path, e))?;
    if len != header.extent_len {
        return Err(if len < header.extent_len {
            PmemError::Truncated {
                path: path.into(),
                found: len,
                expected: header.extent_len,
            }
        } else {
            PmemError::Corrupt {
                path: path.into(),
                reason: format!(
                    "{len} bytes, longer than the {} its header states",
                    header.extent_len
                ),
            }
        });
    }
    Ok((file, header))
}

fn header_error(path: &Path, e: HeaderError) -> PmemError {
    let path = path.to_path_buf();
    match e {
        HeaderError::Short => PmemError::Truncated {
            path,
            found: 0,
            expected: crate::layout::HEADER_LEN,
        },
        HeaderError::BadMagic => PmemError::ForeignFile { path },
        HeaderError::Version(found) => PmemError::UnsupportedVersion {
            path,
            found,
            supported: FORMAT_VERSION,
        },
        HeaderError::Checksum => PmemError::Corrupt {
            path,
            reason: "header checksum mismatch".into(),
        },
        HeaderError::Invalid(reason) => PmemError::Corrupt {
            path,
            reason: format!("invalid header: {reason}"),
        },
    }
}

/// Checks one extent's header against its file name, extent 0 and the options.
fn check_extent(
    path: &Path,
    header: &ExtentHeader,
    index: u16,
    first: Option<&ExtentHeader>,
    options: &PoolOptions,
) -> Result<()> {
    if header.extent != index {
        return Err(PmemError::Corrupt {
            path: path.into(),
            reason: format!(
                "header says extent {}, file is extent {index}",
                header.extent
            ),
        });
    }
    if let Some(expected) = options.zone_size
        && expected != header.geometry.zone_size
    {
        return Err(PmemError::ZoneSizeMismatch {
            path: path.into(),
            found: header.geometry.zone_size,
            expected,
        });
    }
    if let Some(first) = first {
        if first.uuid != header.uuid {
            return Err(PmemError::ForeignExtent {
                path: path.into(),
                found: format_uuid(&header.uuid),
                expected: format_uuid(&first.uuid),
            });
        }
        if first.geometry.zone_size != header.geometry.zone_size {
            return Err(PmemError::ZoneSizeMismatch {
                path: path.into(),
                found: header.geometry.zone_size,
                expected: first.geometry.zone_size,
            });
        }
        if first.geometry != header.geometry {
            return Err(PmemError::Corrupt {
                path: path.into(),
                reason: "geometry differs from extent 0".into(),
            });
        }
    }
    Ok(())
}

fn extent_name(index: u16) -> String {
    format!("{EXTENT_PREFIX}{index:05}{EXTENT_SUFFIX}")
}

/// Extent files of `dir`, sorted by index.
fn list_extents(dir: &Path) -> Result<Vec<(u16, PathBuf)>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| PmemError::io(dir, e))? {
        let entry = entry.map_err(|e| PmemError::io(dir, e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(digits) = name
            .strip_prefix(EXTENT_PREFIX)
            .and_then(|n| n.strip_suffix(EXTENT_SUFFIX))
        else {
            continue;
        };
        match digits.parse::<u16>() {
            Ok(index) if digits.len() == 5 => out.push((index, entry.path())),
            _ => {
                return Err(PmemError::ForeignFile { path: entry.path() });
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Removes `*.pm.tmp` files: extents whose creation a crash interrupted before the
/// rename, which therefore never held a committed zone.
fn remove_incomplete_extents(dir: &Path) -> Result<()> {
    for entry in fs::read_dir(dir).map_err(|e| PmemError::io(dir, e))? {
        let entry = entry.map_err(|e| PmemError::io(dir, e))?;
        let name = entry.file_name();
        if name
            .to_str()
            .is_some_and(|n| n.starts_with(EXTENT_PREFIX) && n.ends_with(TMP_SUFFIX))
        {
            fs::remove_file(entry.path()).map_err(|e| PmemError::io(entry.path(), e))?;
        }
    }
    Ok(())
}

fn lock_dir(dir: &Path) -> Result<File> {
    let path = dir.join(LOCK_FILE);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| PmemError::io(&path, e))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(fs::TryLockError::WouldBlock) => Err(PmemError::Locked { path: dir.into() }),
        Err(fs::TryLockError::Error(e)) => Err(PmemError::io(&path, e)),
    }
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| PmemError::io(dir, e))
}

fn new_uuid() -> [u8; 16] {
    use rand::TryRngCore;
    let mut uuid = [0u8; 16];
    rand::rngs::OsRng
        .try_fill_bytes(&mut uuid)
        .unwrap_or_else(|_| {
            // No OS randomness: fall back to time and pid, which still tells pools apart.
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos() as u64;
            uuid[..8].copy_from_slice(&t.to_le_bytes());
            uuid[8..12].copy_from_slice(&std::process::id().to_le_bytes());
        });
    // RFC 4122 version 4, variant 1.
    uuid[6] = (uuid[6] & 0x0f) | 0x40;
    uuid[8] = (uuid[8] & 0x3f) | 0x80;
    uuid
}

fn format_uuid(u: &[u8; 16]) -> String {
    let hex: String = u.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_is_shareable_across_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Pool>();
    }

    #[test]
    fn uuids_are_version_4_and_distinct() {
        let (a, b) = (new_uuid(), new_uuid());
        assert_ne!(a, b);
        assert_eq!(a[6] >> 4, 4);
        let s = format_uuid(&a);
        assert_eq!(s.len(), 36);
        assert_eq!(s.matches('-').count(), 4);
    }
}
