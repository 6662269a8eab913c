//! The crash simulator's filesystem: a flat directory whose state lives in the pool's
//! `SimStore`, under the same mutex as the pool's words, so that every crash image holds
//! the files as they were at the very crash point its words were taken at.
//!
//! The model. Each file is an inode with working bytes (everything appended) and durable
//! bytes (as of its last `sync`); files are append-only, so the durable bytes are a prefix
//! of the working ones and are kept as a length. The directory exists twice: the working
//! directory (name -> inode) that the program sees, and the durable directory as of the
//! last `sync_dir`. `create`, `rename` and `remove` change the working directory at once
//! and queue a directory operation; `sync_dir` applies the queue, in order, to the
//! durable directory.
//!
//! Every call that changes what a crash could leave (`create`, `sync`, `rename`, `remove`,
//! `sync_dir`; not `append`, which only reaches the page cache) is a crash point on the
//! same counter as the pool's fences, so a crash can fall between any two of them.
//!
//! What a crash leaves, drawn with the crash image's seeded generator:
//! - the directory is the durable directory plus a random-length prefix of the queued
//!   operations, applied in order — filesystems commit metadata through a journal, in
//!   order, so a later rename never lands without the operations before it, and no
//!   operation is ever half-applied;
//! - each file holds its durable bytes plus a random-length prefix of its unsynced bytes,
//!   whose tail is sometimes torn: a random-length run of it replaced by zeros or by
//!   garbage. A file created but never synced may come back empty or with a prefix.
//!
//! A crash image holds the result as plain bytes; reopening it restores them as files
//! both working and durable.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::ErrorKind;
use std::path::PathBuf;
use std::sync::Arc;

use rand::Rng;
use rand::rngs::SmallRng;

use super::{FileBytes, FileSystem, ReadableFile, WritableFile};
use crate::crashsim::SimStore;
use crate::error::{PmemError, Result};

/// How errors name file `name` of the simulator, which has no directory.
fn file_path(name: &str) -> PathBuf {
    PathBuf::from(format!("<crash image>/files/{name}"))
}

fn not_found(name: &str) -> PmemError {
    PmemError::MissingFile {
        path: file_path(name),
    }
}

type Ino = u64;

struct Inode {
    /// Everything appended. Shared with the readers that opened the file, so opening is
    /// cheap and a reader keeps its snapshot if the file is written on.
    bytes: Arc<Vec<u8>>,
    /// Length of the prefix made durable by the last `sync`.
    durable: usize,
}

/// A directory operation not yet made durable by `sync_dir`.
enum DirOp {
    Link { name: String, ino: Ino },
    Rename { from: String, to: String },
    Unlink { name: String },
}

impl DirOp {
    fn apply(&self, dir: &mut BTreeMap<String, Ino>) {
        match self {
            DirOp::Link { name, ino } => {
                dir.insert(name.clone(), *ino);
            }
            DirOp::Rename { from, to } => {
                // The queue replays the working directory's history, so `from` is there.
                if let Some(ino) = dir.remove(from) {
                    dir.insert(to.clone(), ino);
                }
            }
            DirOp::Unlink { name } => {
                dir.remove(name);
            }
        }
    }
}

/// The simulated filesystem's state, kept inside the `SimStore`.
#[derive(Default)]
pub(crate) struct FileState {
    inodes: BTreeMap<Ino, Inode>,
    next_ino: Ino,
    working: BTreeMap<String, Ino>,
    durable: BTreeMap<String, Ino>,
    pending: Vec<DirOp>,
}

impl FileState {
    /// The files of a crash image, each durable as it stands.
    pub fn from_image(files: &[(String, Vec<u8>)]) -> FileState {
        let mut state = FileState::default();
        for (name, bytes) in files {
            let ino = state.new_inode(bytes.clone());
            state.working.insert(name.clone(), ino);
            state.durable.insert(name.clone(), ino);
        }
        state
    }

    /// What a crash now leaves of the files, sorted by name (see the module doc).
    pub fn crash(&self, rng: &mut SmallRng) -> Vec<(String, Vec<u8>)> {
        let mut dir = self.durable.clone();
        let applied = rng.random_range(0..=self.pending.len());
        for op in &self.pending[..applied] {
            op.apply(&mut dir);
        }
        dir.into_iter()
            .map(|(name, ino)| {
                let inode = &self.inodes[&ino];
                let unsynced = inode.bytes.len() - inode.durable;
                let kept = rng.random_range(0..=unsynced);
                let mut bytes = inode.bytes[..inode.durable + kept].to_vec();
                if kept > 0 && rng.random_ratio(1, 3) {
                    let torn = rng.random_range(1..=kept);
                    let tail = &mut bytes[inode.durable + kept - torn..];
                    if rng.random::<bool>() {
                        tail.fill(0);
                    } else {
                        rng.fill(tail);
                    }
                }
                (name, bytes)
            })
            .collect()
    }

    fn new_inode(&mut self, bytes: Vec<u8>) -> Ino {
        let ino = self.next_ino;
        self.next_ino += 1;
        let durable = bytes.len();
        self.inodes.insert(
            ino,
            Inode {
                bytes: Arc::new(bytes),
                durable,
            },
        );
        ino
    }

    fn create(&mut self, name: &str) -> Ino {
        let ino = self.new_inode(Vec::new());
        self.working.insert(name.to_string(), ino);
        self.pending.push(DirOp::Link {
            name: name.to_string(),
            ino,
        });
        ino
    }

    // An inode missing here was unlinked and collected while still open for writing; as
    // on POSIX, what is written to it goes nowhere.
    fn append(&mut self, ino: Ino, data: &[u8]) {
        if let Some(inode) = self.inodes.get_mut(&ino) {
            Arc::make_mut(&mut inode.bytes).extend_from_slice(data);
        }
    }

    fn sync(&mut self, ino: Ino) {
        if let Some(inode) = self.inodes.get_mut(&ino) {
            inode.durable = inode.bytes.len();
        }
    }

    fn rename(&mut self, from: &str, to: &str) -> Result<()> {
        let ino = self.working.remove(from).ok_or_else(|| not_found(from))?;
        self.working.insert(to.to_string(), ino);
        self.pending.push(DirOp::Rename {
            from: from.to_string(),
            to: to.to_string(),
        });
        Ok(())
    }

    fn remove(&mut self, name: &str) -> Result<()> {
        self.working.remove(name).ok_or_else(|| not_found(name))?;
        self.pending.push(DirOp::Unlink {
            name: name.to_string(),
        });
        Ok(())
    }

    fn sync_dir(&mut self) {
        for op in std::mem::take(&mut self.pending) {
            op.apply(&mut self.durable);
        }
        // Both directories are now equal; an inode neither names can never be seen again.
        let linked: BTreeSet<Ino> = self.durable.values().copied().collect();
        self.inodes.retain(|ino, _| linked.contains(ino));
    }

    fn open(&self, name: &str) -> Result<Arc<Vec<u8>>> {
        let ino = self.working.get(name).ok_or_else(|| not_found(name))?;
        Ok(Arc::clone(&self.inodes[ino].bytes))
    }
}

/// The simulator's filesystem, a handle on the files of one `SimStore`.
pub(crate) struct SimFiles {
    store: Arc<SimStore>,
}

impl fmt::Debug for SimFiles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SimFiles")
    }
}

impl SimFiles {
    pub fn new(store: Arc<SimStore>) -> SimFiles {
        SimFiles { store }
    }
}

impl FileSystem for SimFiles {
    fn create(&self, name: &str) -> Result<Box<dyn WritableFile>> {
        let ino = self.store.file_point(|files| files.create(name));
        Ok(Box::new(SimWritable {
            store: Arc::clone(&self.store),
            ino,
            len: 0,
        }))
    }

    fn open(&self, name: &str) -> Result<Arc<dyn ReadableFile>> {
        let bytes = self.store.files(|files| files.open(name))?;
        Ok(Arc::new(SimReadable {
            bytes,
            name: name.to_string(),
        }))
    }

    fn rename(&self, from: &str, to: &str) -> Result<()> {
        self.store.file_point(|files| files.rename(from, to))
    }

    fn remove(&self, name: &str) -> Result<()> {
        self.store.file_point(|files| files.remove(name))
    }

    fn list(&self) -> Result<Vec<String>> {
        Ok(self
            .store
            .files(|files| files.working.keys().cloned().collect()))
    }

    fn sync_dir(&self) -> Result<()> {
        self.store.file_point(FileState::sync_dir);
        Ok(())
    }

    fn describe(&self, name: &str) -> String {
        file_path(name).display().to_string()
    }
}

struct SimWritable {
    store: Arc<SimStore>,
    ino: Ino,
    len: u64,
}

impl WritableFile for SimWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.store.files(|files| files.append(self.ino, data));
        self.len += data.len() as u64;
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        self.store.file_point(|files| files.sync(self.ino));
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }
}

struct SimReadable {
    bytes: Arc<Vec<u8>>,
    name: String,
}

impl ReadableFile for SimReadable {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<()> {
        let src = usize::try_from(off)
            .ok()
            .and_then(|start| self.bytes.get(start..start.checked_add(buf.len())?))
            .ok_or_else(|| PmemError::io(file_path(&self.name), ErrorKind::UnexpectedEof.into()))?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn map(&self) -> Result<FileBytes> {
        Ok(Arc::clone(&self.bytes) as FileBytes)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::Path;

    use crate::options::PoolOptions;
    use crate::pool::Pool;

    #[test]
    fn files_are_crashed_after_their_pool_is_closed() {
        let pool = Pool::create_sim(&PoolOptions::small()).unwrap();
        let fs = pool.files(Path::new("")).unwrap();
        let sim = std::sync::Arc::clone(pool.sim().unwrap());
        sim.arm(BTreeSet::from([sim.fences()]), 1, 2);
        drop(pool);
        let mut f = fs.create("after").unwrap();
        f.append(b"x").unwrap();
        let images = sim.take_images();
        assert_eq!(images.len(), 2);
        let reopened = Pool::open_image(&images[0], &PoolOptions::small()).unwrap();
        assert!(
            reopened
                .files(Path::new(""))
                .unwrap()
                .list()
                .unwrap()
                .is_empty()
        );
    }
}
