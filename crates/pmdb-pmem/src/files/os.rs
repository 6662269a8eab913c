//! Files in a real directory: `pread`, `fsync`, `rename(2)`, and read-only shared mappings.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use super::{FileBytes, FileSystem, ReadableFile, WritableFile};
use crate::error::{PmemError, Result};
use crate::mapping::Mapping;

/// A real directory, created if missing.
#[derive(Debug)]
pub struct OsFiles {
    dir: PathBuf,
}

impl OsFiles {
    /// The directory `dir`, created (with its parents) if missing.
    pub fn open(dir: impl AsRef<Path>) -> Result<OsFiles> {
        let dir = dir.as_ref().to_path_buf();
        fs::create_dir_all(&dir).map_err(|e| PmemError::io(&dir, e))?;
        Ok(OsFiles { dir })
    }

    /// The directory `dir` as it is, for inspection: nothing is created, and a missing
    /// directory reads as an empty one.
    pub fn existing(dir: impl AsRef<Path>) -> Result<OsFiles> {
        Ok(OsFiles {
            dir: dir.as_ref().to_path_buf(),
        })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl FileSystem for OsFiles {
    fn create(&self, name: &str) -> Result<Box<dyn WritableFile>> {
        let path = self.path(name);
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| PmemError::io(&path, e))?;
        Ok(Box::new(OsWritable {
            file: std::io::BufWriter::with_capacity(256 << 10, file),
            path,
            len: 0,
        }))
    }

    fn open(&self, name: &str) -> Result<Arc<dyn ReadableFile>> {
        let path = self.path(name);
        let file = File::open(&path).map_err(|e| PmemError::file_io(&path, e))?;
        let len = file.metadata().map_err(|e| PmemError::io(&path, e))?.len();
        Ok(Arc::new(OsReadable {
            file,
            path,
            len,
            map: OnceLock::new(),
        }))
    }

    fn rename(&self, from: &str, to: &str) -> Result<()> {
        let from = self.path(from);
        fs::rename(&from, self.path(to)).map_err(|e| PmemError::file_io(&from, e))
    }

    fn remove(&self, name: &str) -> Result<()> {
        let path = self.path(name);
        fs::remove_file(&path).map_err(|e| PmemError::file_io(&path, e))
    }

    fn list(&self) -> Result<Vec<String>> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(PmemError::io(&self.dir, e)),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| PmemError::io(&self.dir, e))?;
            if let Some(name) = entry.file_name().to_str() {
                names.push(name.to_string());
            }
        }
        names.sort();
        Ok(names)
    }

    fn sync_dir(&self) -> Result<()> {
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| PmemError::io(&self.dir, e))
    }

    fn describe(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }
}

struct OsWritable {
    file: std::io::BufWriter<File>,
    path: PathBuf,
    len: u64,
}

impl WritableFile for OsWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.file
            .write_all(data)
            .map_err(|e| PmemError::io(&self.path, e))?;
        self.len += data.len() as u64;
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        self.file
            .flush()
            .and_then(|()| self.file.get_ref().sync_data())
            .map_err(|e| PmemError::io(&self.path, e))
    }

    fn len(&self) -> u64 {
        self.len
    }
}

struct OsReadable {
    file: File,
    path: PathBuf,
    len: u64,
    map: OnceLock<FileBytes>,
}

/// A whole file mapped read-only.
struct MappedFile(Mapping);

impl AsRef<[u8]> for MappedFile {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: the mapping is `len` readable bytes that live as long as `self`. The
        // files mapped here are never written again once complete (pmdb only maps
        // finished, synced files and never truncates or rewrites them), so no byte
        // changes under the shared borrow.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr(), self.0.len()) }
    }
}

impl ReadableFile for OsReadable {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<()> {
        self.file
            .read_exact_at(buf, off)
            .map_err(|e| PmemError::io(&self.path, e))
    }

    fn map(&self) -> Result<FileBytes> {
        if let Some(map) = self.map.get() {
            return Ok(Arc::clone(map));
        }
        let bytes: FileBytes = if self.len == 0 {
            Arc::new(Vec::<u8>::new())
        } else {
            let map = Mapping::file(&self.file, self.len as usize, false, false)
                .map_err(|e| PmemError::io(&self.path, e))?;
            Arc::new(MappedFile(map))
        };
        Ok(Arc::clone(self.map.get_or_init(|| bytes)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_sync_rename_read_and_map() {
        let dir = tempfile::tempdir().unwrap();
        let fs = OsFiles::open(dir.path().join("sst")).unwrap();
        let mut f = fs.create("a.tmp").unwrap();
        f.append(b"hello ").unwrap();
        f.append(b"world").unwrap();
        assert_eq!(f.len(), 11);
        f.sync().unwrap();
        drop(f);
        fs.rename("a.tmp", "a").unwrap();
        fs.sync_dir().unwrap();
        assert_eq!(fs.list().unwrap(), vec!["a".to_string()]);
        let r = fs.open("a").unwrap();
        let mut buf = [0u8; 5];
        r.read_at(6, &mut buf).unwrap();
        assert_eq!(&buf, b"world");
        assert!(r.read_at(8, &mut buf).is_err(), "read past the end");
        assert_eq!((*r.map().unwrap()).as_ref(), b"hello world");
        assert_eq!(fs.read_all("a").unwrap(), b"hello world");
        fs.remove("a").unwrap();
        assert!(matches!(fs.open("a"), Err(PmemError::MissingFile { .. })));
    }
}
