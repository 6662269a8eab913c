//! Memory mappings of extents: shared file mappings (with `MAP_SYNC` when the filesystem
//! is DAX) and anonymous mappings for the crash simulator. The only place that calls
//! `mmap`, `munmap` and `msync`.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// An owned mapping of `len` bytes; unmapped on drop.
pub(crate) struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain shared memory owned by this value; concurrent access to its
// bytes is governed by the pool's publish protocol, not by the mapping itself.
unsafe impl Send for Mapping {}
// SAFETY: as above; `&Mapping` hands out only raw pointers.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `file` shared. With `sync`, asks for `MAP_SHARED_VALIDATE |
    /// MAP_SYNC`, which only a DAX filesystem grants. Without `writable` the pages are
    /// mapped `PROT_READ`, so not even a stray store can reach the file.
    pub fn file(file: &File, len: usize, sync: bool, writable: bool) -> io::Result<Mapping> {
        let flags = if sync {
            libc::MAP_SHARED_VALIDATE | libc::MAP_SYNC
        } else {
            libc::MAP_SHARED
        };
        Self::map(len, flags, file.as_raw_fd(), writable)
    }

    /// An anonymous, zero-filled private mapping.
    #[cfg(feature = "crashsim")]
    pub fn anon(len: usize) -> io::Result<Mapping> {
        Self::map(len, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, true)
    }

    fn map(len: usize, flags: i32, fd: i32, writable: bool) -> io::Result<Mapping> {
        if len == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty mapping"));
        }
        // SAFETY: a fresh mapping at an address the kernel chooses; it aliases no Rust
        // object, and the result is checked before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                if writable {
                    libc::PROT_READ | libc::PROT_WRITE
                } else {
                    libc::PROT_READ
                },
                flags,
                fd,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping {
            ptr: ptr.cast(),
            len,
        })
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Writes back the pages covering `[off, off + len)` and waits for the device.
    pub fn msync(&self, off: usize, len: usize) -> io::Result<()> {
        let page = page_size();
        let start = off / page * page;
        let end = (off + len).min(self.len);
        if end <= start {
            return Ok(());
        }
        // SAFETY: `[start, end)` lies inside this mapping and `start` is page aligned.
        let rc = unsafe { libc::msync(self.ptr.add(start).cast(), end - start, libc::MS_SYNC) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

impl Mapping {
    /// Faults in the pages covering `[off, off + len)` as a write would, allocating them
    /// (tmpfs, DAX blocks) and mapping them writable, without changing a byte:
    /// `MADV_POPULATE_WRITE` (Linux 5.14 and later; `EINVAL` before).
    pub fn populate_write(&self, off: usize, len: usize) -> io::Result<()> {
        let page = page_size();
        let start = off / page * page;
        let end = off
            .saturating_add(len)
            .min(self.len)
            .next_multiple_of(page)
            .min(self.len);
        if end <= start {
            return Ok(());
        }
        // SAFETY: `[start, end)` lies inside this mapping and `start` is page aligned;
        // MADV_POPULATE_WRITE only fills in page tables (as a write fault would) and never
        // changes the bytes a concurrent reader or writer sees.
        let rc = unsafe {
            libc::madvise(
                self.ptr.add(start).cast(),
                end - start,
                libc::MADV_POPULATE_WRITE,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` came from a successful mmap and are unmapped exactly once.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 { size as usize } else { 4096 }
}
