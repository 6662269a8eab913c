//! How a written range becomes durable on each backend: CPU cache write-back and a store
//! fence on Dax and Memory, `msync` of the dirty pages on File, and on the crash simulator
//! pending lines that only a fence lets reach its persisted image.

#[cfg(feature = "crashsim")]
use std::sync::Arc;

use crate::backend::Backend;
#[cfg(feature = "crashsim")]
use crate::crashsim::SimStore;
use crate::flush::{CACHE_LINE, flush_lines, store_fence};
use crate::mapping::Mapping;
use crate::off::PmOff;

/// The persistence mechanism of one pool.
pub(crate) enum Persistence {
    /// Dax and Memory: clwb/clflushopt/clflush, then sfence.
    CacheFlush,
    /// File: the page cache is written back by `msync`, which also waits for the device.
    Msync,
    #[cfg(feature = "crashsim")]
    Sim(Arc<SimStore>),
}

impl Persistence {
    /// The mechanism of a file-backed pool on `backend`.
    pub fn of_files(backend: Backend) -> Persistence {
        if backend == Backend::File {
            Persistence::Msync
        } else {
            Persistence::CacheFlush
        }
    }

    /// Writes back `len` bytes at `off` of the extent mapped at `map`, which must contain
    /// them. Returns the cache lines written back, for emulation to charge.
    pub fn flush(&self, map: &Mapping, off: PmOff, len: usize) -> std::io::Result<usize> {
        let offset = off.offset() as usize;
        match self {
            Persistence::CacheFlush => Ok(flush_lines(map.as_ptr().wrapping_add(offset), len)),
            Persistence::Msync => {
                map.msync(offset, len)?;
                Ok(len.div_ceil(CACHE_LINE))
            }
            #[cfg(feature = "crashsim")]
            Persistence::Sim(sim) => {
                sim.flush(off.extent() as usize, offset, len);
                Ok(len.div_ceil(CACHE_LINE))
            }
        }
    }

    /// Orders earlier flushes before later stores; after it, flushed lines are durable.
    pub fn fence(&self) {
        match self {
            Persistence::CacheFlush => store_fence(),
            // msync already waited for the device.
            Persistence::Msync => {}
            #[cfg(feature = "crashsim")]
            Persistence::Sim(sim) => sim.fence(),
        }
    }
}
