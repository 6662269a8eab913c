//! Files for the capacity tier: one flat directory of files that are written once
//! (appended, then synced), read by offset or through a read-only mapping, renamed and
//! removed by name. The engine keeps its SST files and manifest behind this API, so the
//! same code runs on a real directory ([`OsFiles`]) and, in tests, on the crash
//! simulator's filesystem, which is crashed at the same point as the pool.
//!
//! Durability follows POSIX as careful databases use it: a file's bytes are durable once
//! `sync` returns; a name created, renamed or removed is durable once `sync_dir` returns.

mod os;
#[cfg(feature = "crashsim")]
mod sim;

use std::fmt;
use std::sync::Arc;

use crate::error::Result;

pub use os::OsFiles;
#[cfg(feature = "crashsim")]
pub(crate) use sim::{FileState, SimFiles};

/// Bytes of a whole file, shared: a read-only mapping of it, or (on the simulator) a copy.
/// Holding one keeps the mapping alive.
pub type FileBytes = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// A flat directory of files.
pub trait FileSystem: Send + Sync + fmt::Debug {
    /// Creates file `name` (empty; an existing file of that name is truncated) for
    /// appending.
    fn create(&self, name: &str) -> Result<Box<dyn WritableFile>>;
    /// Opens file `name` for reading.
    fn open(&self, name: &str) -> Result<Arc<dyn ReadableFile>>;
    /// Renames `from` to `to`, replacing `to` atomically if it exists.
    fn rename(&self, from: &str, to: &str) -> Result<()>;
    /// Removes file `name`.
    fn remove(&self, name: &str) -> Result<()>;
    /// Names of the files in the directory, sorted.
    fn list(&self) -> Result<Vec<String>>;
    /// Makes the names created, renamed and removed so far durable.
    fn sync_dir(&self) -> Result<()>;
    /// How errors and reports name file `name` (its path, on a real directory).
    fn describe(&self, name: &str) -> String;

    /// The whole of file `name`, read into memory.
    fn read_all(&self, name: &str) -> Result<Vec<u8>> {
        let file = self.open(name)?;
        let mut buf = vec![0; file.len() as usize];
        file.read_at(0, &mut buf)?;
        Ok(buf)
    }
}

/// A file being written: appended to, then synced.
pub trait WritableFile: Send {
    /// Appends `data` at the end.
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Makes every byte appended so far durable, and the file's length with them.
    fn sync(&mut self) -> Result<()>;
    /// Bytes appended so far.
    fn len(&self) -> u64;
    /// Whether nothing has been appended.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A file being read. Files are never changed once written, so what is read, and a
/// mapping, stay valid for as long as the file is open.
pub trait ReadableFile: Send + Sync {
    /// Length in bytes.
    fn len(&self) -> u64;
    /// Whether the file is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Reads exactly `buf.len()` bytes at `off`; reading past the end is an error.
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<()>;
    /// The whole file, mapped read-only (made once, then shared).
    fn map(&self) -> Result<FileBytes>;
}
