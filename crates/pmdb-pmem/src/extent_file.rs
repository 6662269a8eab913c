//! Extent files: a pool directory holds `extent-NNNNN.pm` files and a lock file that keeps
//! a second opener out. A new extent is written as `.tmp`, synced and renamed into place,
//! so a crash leaves it whole or absent; open clears what an absent one left behind. The
//! first extent mapped settles the backend, and every later one is mapped the same way.

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::backend::{Backend, BackendChoice, FsKind, filesystem_kind};
use crate::error::{PmemError, Result};
use crate::extent_check::{check_extent, check_length, decode_header};
use crate::layout::{ExtentHeader, HEADER_LEN};
use crate::mapping::Mapping;
use crate::options::PoolOptions;

const LOCK_FILE: &str = "pool.lock";
const EXTENT_PREFIX: &str = "extent-";
const EXTENT_SUFFIX: &str = ".pm";
const TMP_SUFFIX: &str = ".tmp";

/// A locked pool directory and the backend its extents are mapped with.
pub(crate) struct ExtentDir {
    path: PathBuf,
    backend: Backend,
    // Held, never read: the lock lasts as long as the open file.
    _lock: Option<File>,
}

impl ExtentDir {
    /// Makes `dir` (created if missing; it must hold no extent yet) a pool directory
    /// with extent 0, whose mapping settles the backend.
    pub fn create(
        dir: &Path,
        first: &ExtentHeader,
        choice: BackendChoice,
    ) -> Result<(ExtentDir, Mapping)> {
        fs::create_dir_all(dir).map_err(|e| PmemError::io(dir, e))?;
        let lock = lock_dir(dir, true)?;
        if !list_extents(dir)?.is_empty() {
            return Err(PmemError::AlreadyExists { path: dir.into() });
        }
        let (map, backend) = create_extent(dir, first, choice)?;
        let this = ExtentDir {
            path: dir.into(),
            backend,
            _lock: lock,
        };
        Ok((this, map))
    }

    /// Opens the pool directory `dir`: checks every extent header and maps the extents
    /// in order. Returns extent 0's header with the mappings. Read-only (per `options`),
    /// the lock is shared, leftover `.tmp` extents are left alone and the extents are
    /// opened and mapped for reading only.
    pub fn open(
        dir: &Path,
        options: &PoolOptions,
    ) -> Result<(ExtentDir, ExtentHeader, Vec<Mapping>)> {
        let meta = fs::metadata(dir).map_err(|e| PmemError::io(dir, e))?;
        if !meta.is_dir() {
            return Err(PmemError::NoPool { path: dir.into() });
        }
        let lock = lock_dir(dir, !options.read_only)?;
        if !options.read_only {
            remove_incomplete_extents(dir)?;
        }
        let names = list_extents(dir)?;
        let mut first: Option<(ExtentHeader, Backend)> = None;
        let mut maps = Vec::with_capacity(names.len());
        for (i, (index, path)) in names.iter().enumerate() {
            if *index as usize != i {
                return Err(PmemError::Corrupt {
                    path: dir.join(extent_name(i as u16)),
                    reason: "extent file is missing".into(),
                });
            }
            let choice = first.as_ref().map_or(options.backend, |(_, b)| same(*b));
            let extent0 = first.as_ref().map(|(header, _)| header);
            let (header, map, backend) = open_extent(path, *index, extent0, choice, options)?;
            first.get_or_insert((header, backend));
            maps.push(map);
        }
        let Some((first, backend)) = first else {
            return Err(PmemError::NoPool { path: dir.into() });
        };
        let this = ExtentDir {
            path: dir.into(),
            backend,
            _lock: lock,
        };
        Ok((this, first, maps))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    pub fn extent_path(&self, index: u16) -> PathBuf {
        self.path.join(extent_name(index))
    }

    /// Adds the extent `header` describes, mapped like the others.
    pub fn add_extent(&self, header: &ExtentHeader) -> Result<Mapping> {
        let (map, _) = create_extent(&self.path, header, same(self.backend))?;
        Ok(map)
    }
}

/// The choice that maps a further extent as the first one was mapped.
fn same(backend: Backend) -> BackendChoice {
    match backend {
        Backend::Dax => BackendChoice::Dax,
        Backend::Memory => BackendChoice::Memory,
        _ => BackendChoice::File,
    }
}

/// Creates an extent as `<name>.tmp`, writes and syncs its first page, renames it into
/// place and syncs the directory: a crash leaves either no extent or a complete one.
fn create_extent(
    dir: &Path,
    header: &ExtentHeader,
    choice: BackendChoice,
) -> Result<(Mapping, Backend)> {
    let path = dir.join(extent_name(header.extent));
    let tmp = dir.join(format!("{}{TMP_SUFFIX}", extent_name(header.extent)));
    let io = |e| PmemError::io(&tmp, e);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .map_err(io)?;
    file.set_len(header.extent_len).map_err(io)?;
    file.write_all_at(&header.page(), 0).map_err(io)?;
    file.sync_all().map_err(io)?;
    fs::rename(&tmp, &path).map_err(|e| PmemError::io(&path, e))?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| PmemError::io(dir, e))?;
    map_file(&path, &file, header.extent_len, choice, true)
}

/// Reads, checks and maps extent `index`.
fn open_extent(
    path: &Path,
    index: u16,
    first: Option<&ExtentHeader>,
    choice: BackendChoice,
    options: &PoolOptions,
) -> Result<(ExtentHeader, Mapping, Backend)> {
    let io = |e| PmemError::io(path, e);
    let file = OpenOptions::new()
        .read(true)
        .write(!options.read_only)
        .open(path)
        .map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    let mut page = vec![0u8; len.min(HEADER_LEN) as usize];
    file.read_exact_at(&mut page, 0).map_err(io)?;
    let header = decode_header(path, &page)?;
    check_length(path, len, &header)?;
    check_extent(path, &header, index, first, options)?;
    let (map, backend) = map_file(path, &file, header.extent_len, choice, !options.read_only)?;
    Ok((header, map, backend))
}

/// Maps an extent file and settles the backend: DAX if `MAP_SYNC` is granted (Auto or
/// Dax), Memory on tmpfs/ramfs, File otherwise.
fn map_file(
    path: &Path,
    file: &File,
    len: u64,
    choice: BackendChoice,
    writable: bool,
) -> Result<(Mapping, Backend)> {
    let io = |e| PmemError::io(path, e);
    let len = len as usize;
    match choice {
        BackendChoice::Dax => Mapping::file(file, len, true, writable)
            .map(|m| (m, Backend::Dax))
            .map_err(|_| PmemError::DaxUnavailable { path: path.into() }),
        BackendChoice::Memory => Ok((
            Mapping::file(file, len, false, writable).map_err(io)?,
            Backend::Memory,
        )),
        BackendChoice::File => Ok((
            Mapping::file(file, len, false, writable).map_err(io)?,
            Backend::File,
        )),
        BackendChoice::Auto => {
            if let Ok(map) = Mapping::file(file, len, true, writable) {
                return Ok((map, Backend::Dax));
            }
            let dir = path.parent().unwrap_or(Path::new("."));
            let backend = match filesystem_kind(dir).map_err(io)? {
                FsKind::Ram => Backend::Memory,
                FsKind::Other(_) => Backend::File,
            };
            Ok((
                Mapping::file(file, len, false, writable).map_err(io)?,
                backend,
            ))
        }
    }
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
            _ => return Err(PmemError::ForeignFile { path: entry.path() }),
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

/// Locks `dir`: exclusively to write, shared to read, so a reader and a writer exclude
/// each other and readers do not. A reader creates nothing: where the lock file is
/// missing (a pool copied without it) no writer holds it either, so it goes unlocked.
fn lock_dir(dir: &Path, write: bool) -> Result<Option<File>> {
    let path = dir.join(LOCK_FILE);
    let file = match OpenOptions::new()
        .read(true)
        .write(write)
        .create(write)
        .truncate(false)
        .open(&path)
    {
        Ok(file) => file,
        Err(e) if !write && e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(PmemError::io(&path, e)),
    };
    let locked = if write {
        file.try_lock()
    } else {
        file.try_lock_shared()
    };
    match locked {
        Ok(()) => Ok(Some(file)),
        Err(fs::TryLockError::WouldBlock) => Err(PmemError::Locked { path: dir.into() }),
        Err(fs::TryLockError::Error(e)) => Err(PmemError::io(&path, e)),
    }
}
