//! The crash simulator's backing store: besides the working memory the program writes,
//! it keeps a persisted image that only flushed-and-fenced cache lines reach. A crash
//! image takes, for every 8-byte word that differs between the two, either value at
//! random — any subset of unfenced stores may have reached the media. Its extents are
//! anonymous mappings, made new or copied from a crash image and checked as files are.
//!
//! The store also holds the simulated filesystem's state (`files::sim`), under the same
//! lock, and counts crash points for both: every fence and every file operation that
//! changes what a crash could leave is one, so an image captured at a point holds the
//! pool's words and the files as of that same instant.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::error::{PmemError, Result};
use crate::extent_check::{check_extent, check_length, decode_header};
use crate::files::FileState;
use crate::flush::CACHE_LINE;
use crate::layout::ExtentHeader;
use crate::mapping::Mapping;
use crate::off::PmOff;
use crate::options::PoolOptions;

/// The media contents of a simulated pool after a crash: what recovery gets to see.
#[derive(Clone, Debug)]
pub struct CrashImage {
    pub(crate) extents: Vec<Vec<u8>>,
    /// The simulated filesystem's files after the crash, by name.
    pub(crate) files: Vec<(String, Vec<u8>)>,
    /// Crash points (fences and file operations) passed before the crash.
    pub point: u64,
    /// Seed of the word mix (and of the files' fate) that produced this image.
    pub seed: u64,
}

impl CrashImage {
    /// Overwrites the 8-byte word at `off` (aligned), to simulate media damage.
    pub fn damage_word(&mut self, off: PmOff, value: u64) {
        let at = off.offset() as usize;
        self.extents[off.extent() as usize][at..at + 8].copy_from_slice(&value.to_le_bytes());
    }
}

const MIX_PAGE: usize = 4096;

struct SimExtent {
    /// The pool's mapping of the extent; `None` once the pool has closed (the files, and
    /// so crash images, may outlive it).
    working: Option<*const u8>,
    len: usize,
    persisted: Vec<u8>,
}

struct PendingLine {
    extent: usize,
    off: usize,
    bytes: [u8; CACHE_LINE],
}

struct Capture {
    points: BTreeSet<u64>,
    seed: u64,
    mixes: u32,
    images: Vec<CrashImage>,
}

struct SimState {
    extents: Vec<SimExtent>,
    pending: Vec<PendingLine>,
    /// Crash points passed: fences and file operations.
    fences: u64,
    capture: Option<Capture>,
    files: FileState,
}

/// Persisted image, pending flushes, files and crash-point counter of one simulated pool.
pub(crate) struct SimStore {
    state: Mutex<SimState>,
}

// SAFETY: the raw `working` pointers are what keeps the auto traits away. They point into
// mappings owned by the same pool's media, which any thread may use; they are read only
// under the state mutex, and the media clears them (`close`) before it unmaps.
unsafe impl Send for SimStore {}
// SAFETY: as above; every field is behind the state mutex.
unsafe impl Sync for SimStore {}

impl SimStore {
    pub fn new() -> SimStore {
        SimStore {
            state: Mutex::new(SimState {
                extents: Vec::new(),
                pending: Vec::new(),
                fences: 0,
                capture: None,
                files: FileState::default(),
            }),
        }
    }

    /// Opens a crash image on a fresh store: each extent is checked as a file would be,
    /// then copied into working memory, and the image's files are restored as durable.
    /// Returns extent 0's header with the mappings.
    pub fn open_image(
        image: &CrashImage,
        options: &PoolOptions,
    ) -> Result<(Arc<SimStore>, ExtentHeader, Vec<Mapping>)> {
        let sim = Arc::new(SimStore::new());
        sim.state.lock().files = FileState::from_image(&image.files);
        let mut first: Option<ExtentHeader> = None;
        let mut maps = Vec::with_capacity(image.extents.len());
        for (index, bytes) in image.extents.iter().enumerate() {
            let path = image_path(index as u16);
            let header = decode_header(&path, bytes)?;
            check_length(&path, bytes.len() as u64, &header)?;
            check_extent(&path, &header, index as u16, first.as_ref(), options)?;
            maps.push(sim.add_mapping(&path, bytes)?);
            first.get_or_insert(header);
        }
        let first = first.ok_or_else(|| PmemError::NoPool {
            path: "<crash image>".into(),
        })?;
        Ok((sim, first, maps))
    }

    /// Adds the extent `header` describes, its first page already persisted, as a file
    /// that was written, synced and renamed into place would be.
    pub fn add_extent(&self, header: &ExtentHeader) -> Result<Mapping> {
        let path = image_path(header.extent);
        let mut bytes = header.page();
        bytes.resize(header.extent_len as usize, 0);
        self.add_mapping(&path, &bytes)
    }

    /// Maps `bytes` as working memory, which the persisted image starts equal to.
    fn add_mapping(&self, path: &std::path::Path, bytes: &[u8]) -> Result<Mapping> {
        let map = Mapping::anon(bytes.len()).map_err(|e| PmemError::io(path, e))?;
        // SAFETY: the fresh mapping holds `bytes.len()` writable bytes and aliases nothing,
        // `bytes` least of all.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), map.as_ptr(), bytes.len()) };
        self.state.lock().extents.push(SimExtent {
            working: Some(map.as_ptr()),
            len: bytes.len(),
            persisted: bytes.to_vec(),
        });
        Ok(map)
    }

    /// The pool is about to unmap its extents: crash images taken later (through the
    /// files, which may outlive it) keep only the extents' persisted words.
    pub fn close(&self) {
        for ext in &mut self.state.lock().extents {
            ext.working = None;
        }
    }

    /// Snapshots the cache lines covering `[off, off + len)` of `extent` into the
    /// pending set; the next fence makes them persisted.
    pub fn flush(&self, extent: usize, off: usize, len: usize) {
        let mut st = self.state.lock();
        let ext = &st.extents[extent];
        let working = ext.working.expect("flushes come through the open pool");
        let ext_len = ext.len;
        let start = off / CACHE_LINE * CACHE_LINE;
        let end = (off + len).min(ext_len);
        let mut line = start;
        while line < end {
            let mut bytes = [0u8; CACHE_LINE];
            // SAFETY: `line < end <= len`, and `len` is a multiple of the page size (hence
            // of the line size), so the whole line lies inside the working mapping, which
            // lives until `close`.
            unsafe {
                std::ptr::copy_nonoverlapping(working.add(line), bytes.as_mut_ptr(), CACHE_LINE)
            };
            st.pending.push(PendingLine {
                extent,
                off: line,
                bytes,
            });
            line += CACHE_LINE;
        }
    }

    /// A store fence, a crash point: captures crash images if this point is armed, then
    /// lets the pending lines reach the persisted image.
    pub fn fence(&self) {
        let mut st = self.state.lock();
        capture_if_armed(&mut st);
        let pending = std::mem::take(&mut st.pending);
        for line in pending {
            st.extents[line.extent].persisted[line.off..line.off + CACHE_LINE]
                .copy_from_slice(&line.bytes);
        }
        st.fences += 1;
    }

    /// A file operation, a crash point as a fence is: captures crash images if this point
    /// is armed, then applies `op` to the files.
    pub fn file_point<R>(&self, op: impl FnOnce(&mut FileState) -> R) -> R {
        let mut st = self.state.lock();
        capture_if_armed(&mut st);
        let out = op(&mut st.files);
        st.fences += 1;
        out
    }

    /// Reads or changes the files where no crash point is involved.
    pub fn files<R>(&self, op: impl FnOnce(&mut FileState) -> R) -> R {
        op(&mut self.state.lock().files)
    }

    /// Crash points (fences and file operations) passed so far.
    pub fn fences(&self) -> u64 {
        self.state.lock().fences
    }

    /// Arms capture: at each crash point whose index is in `points`, `mixes` crash images
    /// are taken, their word mixes seeded from `seed` and the point.
    pub fn arm(&self, points: BTreeSet<u64>, seed: u64, mixes: u32) {
        self.state.lock().capture = Some(Capture {
            points,
            seed,
            mixes,
            images: Vec::new(),
        });
    }

    /// Captures images now (the end of a workload) if this point is armed.
    pub fn capture_final(&self) {
        capture_if_armed(&mut self.state.lock());
    }

    /// Takes the captured images and disarms capture.
    pub fn take_images(&self) -> Vec<CrashImage> {
        self.state
            .lock()
            .capture
            .take()
            .map(|c| c.images)
            .unwrap_or_default()
    }

    /// A crash image of the current state with the given mix seed.
    pub fn crash(&self, seed: u64) -> CrashImage {
        let st = self.state.lock();
        mix(&st, st.fences, seed)
    }
}

/// Captures crash images at the current crash point if it is armed.
fn capture_if_armed(st: &mut SimState) {
    let point = st.fences;
    let Some(cap) = st.capture.as_ref().filter(|c| c.points.contains(&point)) else {
        return;
    };
    let (base, mixes) = (cap.seed, cap.mixes);
    let images: Vec<CrashImage> = (0..mixes as u64)
        .map(|m| mix(st, point, point_seed(base, point, m)))
        .collect();
    if let Some(cap) = st.capture.as_mut() {
        cap.images.extend(images);
    }
}

/// How errors name extent `index` of a simulated pool, which has no file.
pub(crate) fn image_path(index: u16) -> PathBuf {
    PathBuf::from(format!("<crash image>/extent {index}"))
}

/// The seed of mix `m` at crash point `point` of a run seeded with `base`.
fn point_seed(base: u64, point: u64, m: u64) -> u64 {
    splitmix(base ^ splitmix(point.wrapping_add(m.wrapping_mul(0x9e37_79b9))))
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn mix(st: &SimState, point: u64, seed: u64) -> CrashImage {
    let mut rng = SmallRng::seed_from_u64(seed);
    let extents = st
        .extents
        .iter()
        .map(|ext| {
            // A closed pool's unfenced stores are lost: one of the outcomes a crash allows.
            let Some(working) = ext.working else {
                return ext.persisted.clone();
            };
            // SAFETY: `working` maps `len` bytes, alive until `close` clears the pointer.
            let working = unsafe { std::slice::from_raw_parts(working, ext.len) };
            let mut out = ext.persisted.clone();
            // Whole pages compare with memcmp; only differing pages are mixed word by word.
            for ((o, w), p) in out
                .chunks_mut(MIX_PAGE)
                .zip(working.chunks(MIX_PAGE))
                .zip(ext.persisted.chunks(MIX_PAGE))
            {
                if w == p {
                    continue;
                }
                for ((o, w), p) in o
                    .chunks_exact_mut(8)
                    .zip(w.chunks_exact(8))
                    .zip(p.chunks_exact(8))
                {
                    if w != p && rng.random::<bool>() {
                        o.copy_from_slice(w);
                    }
                }
            }
            out
        })
        .collect();
    // Drawn after the words, so a seed's word mix does not depend on the files.
    let files = st.files.crash(&mut rng);
    CrashImage {
        extents,
        files,
        point,
        seed,
    }
}
