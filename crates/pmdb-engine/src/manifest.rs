//! The manifest: which SST files exist, per subtable and level, and which memtables they
//! have made redundant. Version edits (`format::manifest`) are appended to the live
//! manifest file and synced before the engine acts on them; CURRENT names the live file
//! and is switched by writing CURRENT.tmp, syncing it, renaming it over CURRENT and
//! syncing the directory. Every writable open writes a fresh manifest holding one edit
//! that describes the whole version, so a log never grows without bound across opens;
//! a long-running database starts a fresh one once its log passes `ROTATE_BYTES`.
//!
//! A record that fails its check ends the log only if no valid record follows it: that
//! is a write torn by a crash (nothing acted on it, as it was never synced). A damaged
//! record with valid records after it is media damage, reported, never skipped.

use std::collections::BTreeMap;
use std::sync::Arc;

use pmdb_pmem::{FileSystem, PmemError, WritableFile, format_uuid};

use crate::error::{DbError, Result};
use crate::format::manifest::{
    Change, Edit, FileMeta, MANIFEST_MAGIC, MANIFEST_MAGIC_V1, MANIFEST_MAGIC_V2,
    MANIFEST_MAGIC_V3, MARK_MAX_EDIT, ManifestMark, WriteTotals, decode_current, encode_current,
    manifest_name,
};

const CURRENT: &str = "CURRENT";
const CURRENT_TMP: &str = "CURRENT.tmp";
/// A manifest log longer than this is replaced by a fresh one at the next edit.
const ROTATE_BYTES: u64 = 4 << 20;

/// The name of SST file `number`.
pub(crate) fn sst_name(number: u64) -> String {
    format!("{number:06}.sst")
}

fn sst_number(name: &str) -> Option<u64> {
    name.strip_suffix(".sst")
        .filter(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()))
        .and_then(|n| n.parse().ok())
}

/// What the manifest says: the version the edits so far add up to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct VersionSet {
    pub next_file: u64,
    pub last_seq: u64,
    pub next_memtable: u64,
    pub next_subtable: u32,
    /// Every live file, by number.
    pub files: BTreeMap<u64, FileMeta>,
    /// Per subtable, the highest memtable id wholly in SSTs.
    pub flushed: BTreeMap<u32, u64>,
    /// What flushes and compactions have written since the database was created.
    pub totals: WriteTotals,
    /// The number of the last edit applied.
    pub edit: u64,
    /// The uuid of the pool whose database the manifest belongs to; `None` in a manifest
    /// written before manifests named it.
    pub database: Option<[u8; 16]>,
    /// The number of the manifest file it was read from, if any.
    pub read_from: Option<u64>,
}

impl VersionSet {
    /// Applies `edit`, checking it against the version: a file added twice or deleted
    /// without existing, or an edit out of order, is damage.
    pub fn apply(&mut self, edit: &Edit) -> std::result::Result<(), String> {
        if edit.number != self.edit + 1 {
            return Err(format!(
                "edit {} follows edit {}: edits are missing",
                edit.number, self.edit
            ));
        }
        let mut next = self.clone();
        for change in &edit.changes {
            match change {
                Change::NextFile(n) => next.next_file = next.next_file.max(*n),
                Change::LastSeq(n) => next.last_seq = next.last_seq.max(*n),
                Change::NextMemtable(n) => next.next_memtable = next.next_memtable.max(*n),
                Change::NextSubtable(n) => next.next_subtable = next.next_subtable.max(*n),
                Change::AddFile(f) => {
                    if next.files.insert(f.number, f.clone()).is_some() {
                        return Err(format!("file {} is added twice", f.number));
                    }
                    next.next_file = next.next_file.max(after(f.number, "file number")?);
                    next.last_seq = next.last_seq.max(f.max_seq);
                }
                Change::DeleteFile {
                    subtable,
                    level,
                    number,
                } => match next.files.remove(number) {
                    Some(f) if f.subtable == *subtable && f.level == *level => {}
                    _ => {
                        return Err(format!(
                            "file {number} is deleted from subtable {subtable} level {level}, which does not hold it"
                        ));
                    }
                },
                Change::Flushed { subtable, memtable } => {
                    let bound = next.flushed.entry(*subtable).or_default();
                    *bound = (*bound).max(*memtable);
                    next.next_memtable = next.next_memtable.max(after(*memtable, "memtable id")?);
                }
                Change::DropSubtable { subtable } => {
                    next.files.retain(|_, f| f.subtable != *subtable);
                    next.flushed.remove(subtable);
                    next.next_subtable = next.next_subtable.max(after(*subtable, "subtable id")?);
                }
                Change::Written(w) => {
                    next.totals = next.totals.checked_add(*w).ok_or_else(|| {
                        format!("the write totals overflow: {:?} plus {w:?}", next.totals)
                    })?;
                }
                Change::Database(uuid) => match next.database {
                    Some(named) if named != *uuid => {
                        return Err(format!(
                            "the manifest names two databases, {} and {}",
                            format_uuid(&named),
                            format_uuid(uuid)
                        ));
                    }
                    _ => next.database = Some(*uuid),
                },
            }
        }
        next.edit = edit.number;
        *self = next;
        Ok(())
    }

    /// The changes that rebuild this version from nothing.
    fn snapshot(&self) -> Vec<Change> {
        let mut changes: Vec<Change> = self.database.map(Change::Database).into_iter().collect();
        changes.extend([
            Change::NextFile(self.next_file),
            Change::LastSeq(self.last_seq),
            Change::NextMemtable(self.next_memtable),
            Change::NextSubtable(self.next_subtable),
            Change::Written(self.totals),
        ]);
        changes.extend(self.files.values().cloned().map(Change::AddFile));
        changes.extend(
            self.flushed
                .iter()
                .map(|(&subtable, &memtable)| Change::Flushed { subtable, memtable }),
        );
        changes
    }
}

/// The number after `n`, which an edit names: the last number of its kind is damage, as
/// no writer hands it out.
fn after<T>(n: T, what: &str) -> std::result::Result<T, String>
where
    T: Copy + Into<u64> + TryFrom<u64> + std::fmt::Display,
{
    n.into()
        .checked_add(1)
        .and_then(|m| T::try_from(m).ok())
        .ok_or_else(|| format!("the edit names {what} {n}, the last there is"))
}

/// The live manifest of a writable database.
pub(crate) struct Manifest {
    fs: Arc<dyn FileSystem>,
    number: u64,
    log: Box<dyn WritableFile>,
    set: VersionSet,
    durable: OnDurable,
}

/// Told each manifest mark once its edit is synced (and, for a fresh manifest, made
/// current), before the engine acts on the edit: the database publishes it in the
/// pool's root area.
pub(crate) type OnDurable = Arc<dyn Fn(ManifestMark) -> Result<()> + Send + Sync>;

/// Holds the manifest an open read (`set`, from file `read_from`, if there was one)
/// to the pool's `mark` of how far the manifest was durable: one that ends before the
/// mark's edit, or an older file than the mark's, lost edits the engine acted on (a
/// damaged last record, an older copy, a lost manifest), and is refused with nothing
/// changed. A newer file than the mark's is one a crash made current before its mark.
pub(crate) fn check_mark(
    fs: &dyn FileSystem,
    set: &VersionSet,
    mark: Option<ManifestMark>,
) -> Result<()> {
    let Some(mark) = mark else {
        return Ok(());
    };
    let marked = manifest_name(mark.file);
    let lost = match set.read_from {
        None => format!(
            "{} is missing, but the pool records that {marked} was current",
            fs.describe(CURRENT)
        ),
        Some(n) if n < mark.file => format!(
            "{} names {}, but the pool records that {marked} was made current after it: an older copy",
            fs.describe(CURRENT),
            manifest_name(n)
        ),
        Some(n) if n == mark.file && set.edit < mark.edit => format!(
            "{} ends at edit {}, but the pool records edit {} as durable and acted on: its last records are damaged or lost, or it is an older copy",
            fs.describe(&marked),
            set.edit,
            mark.edit
        ),
        _ => return Ok(()),
    };
    Err(DbError::Corrupt(format!(
        "{lost}; the manifest is damaged; nothing was changed"
    )))
}

/// Reads the version the directory's manifest holds; an empty version if the directory
/// holds no CURRENT and no SST file (a new database, or one whose first manifest was
/// never made current). A manifest that names another database than `database` (a pool
/// uuid) is refused: acting on it would take this database's memtables for flushed and
/// its SST files for unnamed.
pub(crate) fn read(fs: &dyn FileSystem, database: &[u8; 16]) -> Result<VersionSet> {
    let current = match fs.read_all(CURRENT) {
        Ok(bytes) => bytes,
        Err(PmemError::MissingFile { .. }) => {
            let ssts = fs
                .list()?
                .iter()
                .filter(|n| sst_number(n).is_some())
                .count();
            if ssts > 0 {
                return Err(DbError::Corrupt(format!(
                    "{} is missing, but the directory holds {ssts} SST files: the manifest is lost; nothing was changed",
                    fs.describe(CURRENT)
                )));
            }
            return Ok(VersionSet::default());
        }
        Err(e) => return Err(e.into()),
    };
    let number = decode_current(&current)
        .map_err(|e| DbError::Corrupt(format!("{}: {e}", fs.describe(CURRENT))))?;
    let name = manifest_name(number);
    let bytes = fs.read_all(&name).map_err(|e| match e {
        PmemError::MissingFile { path } => DbError::Corrupt(format!(
            "{} names {name}, but {} is missing: the manifest is lost; nothing was changed",
            fs.describe(CURRENT),
            path.display()
        )),
        e => e.into(),
    })?;
    let mut set =
        replay(&bytes).map_err(|e| DbError::Corrupt(format!("{}: {e}", fs.describe(&name))))?;
    set.read_from = Some(number);
    match set.database {
        Some(named) if named != *database => Err(DbError::Corrupt(format!(
            "{}: the manifest of database {}, not of this one ({}); nothing was changed",
            fs.describe(&name),
            format_uuid(&named),
            format_uuid(database)
        ))),
        _ => Ok(set),
    }
}

/// The version a manifest file's edits add up to.
fn replay(bytes: &[u8]) -> std::result::Result<VersionSet, String> {
    let magic = bytes.get(..MANIFEST_MAGIC.len());
    if ![
        MANIFEST_MAGIC,
        MANIFEST_MAGIC_V3,
        MANIFEST_MAGIC_V2,
        MANIFEST_MAGIC_V1,
    ]
    .iter()
    .any(|m| magic == Some(&m[..]))
    {
        return Err("not a pmdb manifest (bad magic)".into());
    }
    let mut set = VersionSet::default();
    let mut at = MANIFEST_MAGIC.len();
    while at < bytes.len() {
        match Edit::decode_record(&bytes[at..]) {
            Ok((edit, len)) => {
                set.apply(&edit)
                    .map_err(|e| format!("record at byte {at}: {e}"))?;
                at += len;
            }
            Err(e) => {
                if let Some(next) = (at + 1..bytes.len()).find(|&o| {
                    Edit::decode_record(&bytes[o..]).is_ok_and(|(e, _)| e.number > set.edit)
                }) {
                    return Err(format!(
                        "record at byte {at} is damaged ({e}), and a valid record follows at byte {next}"
                    ));
                }
                log::warn!(
                    "manifest: the record at byte {at} was torn by a crash ({e}); the {} bytes from there are ignored",
                    bytes.len() - at
                );
                break;
            }
        }
    }
    Ok(set)
}

impl Manifest {
    /// Starts a fresh manifest holding `set`, makes it current, and removes what the
    /// directory holds that no version names: older manifests and SST files a crash left
    /// behind before an edit named them.
    pub fn start(
        fs: Arc<dyn FileSystem>,
        durable: OnDurable,
        mut set: VersionSet,
    ) -> Result<Manifest> {
        let number = set.next_file;
        set.next_file += 1;
        let mut manifest = Manifest {
            log: fs.create(&manifest_name(number))?,
            fs,
            number,
            set: VersionSet::default(),
            durable,
        };
        manifest.log.append(MANIFEST_MAGIC)?;
        let snapshot = Edit {
            number: 1,
            changes: set.snapshot(),
        };
        manifest.write(snapshot)?;
        manifest.make_current()?;
        manifest.mark_durable()?;
        manifest.remove_unnamed()?;
        Ok(manifest)
    }

    /// The write totals of every edit so far.
    pub fn totals(&self) -> WriteTotals {
        self.set.totals
    }

    /// A number for a new file, logged with the next edit.
    pub fn new_file_number(&mut self) -> u64 {
        let n = self.set.next_file;
        self.set.next_file += 1;
        n
    }

    /// Logs `changes` as one edit, durable when this returns.
    pub fn log(&mut self, mut changes: Vec<Change>) -> Result<()> {
        changes.push(Change::NextFile(self.set.next_file));
        let edit = Edit {
            number: self.set.edit + 1,
            changes,
        };
        if self.log.len() > ROTATE_BYTES || edit.number > MARK_MAX_EDIT {
            let mut next = self.set.clone();
            next.apply(&edit).map_err(DbError::Corrupt)?;
            *self = Manifest::start(Arc::clone(&self.fs), Arc::clone(&self.durable), next)?;
            return Ok(());
        }
        self.write(edit)?;
        self.mark_durable()
    }

    /// Appends `edit` and syncs it.
    fn write(&mut self, edit: Edit) -> Result<()> {
        let mut next = self.set.clone();
        next.apply(&edit).map_err(DbError::Corrupt)?;
        self.log.append(&edit.encode_record())?;
        self.log.sync()?;
        self.set = next;
        Ok(())
    }

    fn mark_durable(&self) -> Result<()> {
        (self.durable)(ManifestMark {
            file: self.number,
            edit: self.set.edit,
        })
    }

    fn make_current(&mut self) -> Result<()> {
        let mut tmp = self.fs.create(CURRENT_TMP)?;
        tmp.append(&encode_current(self.number))?;
        tmp.sync()?;
        drop(tmp);
        self.fs.sync_dir()?;
        self.fs.rename(CURRENT_TMP, CURRENT)?;
        self.fs.sync_dir()?;
        Ok(())
    }

    fn remove_unnamed(&self) -> Result<()> {
        let live = manifest_name(self.number);
        for name in self.fs.list()? {
            let stale = match sst_number(&name) {
                Some(n) => !self.set.files.contains_key(&n),
                None => name.starts_with("MANIFEST-") && name != live,
            };
            if stale {
                self.fs.remove(&name)?;
            }
        }
        self.fs.sync_dir()?;
        Ok(())
    }

    /// Removes files the version no longer names (after the edit that dropped them is
    /// durable). A file that cannot be removed now is removed at the next open.
    pub fn remove_files(&self, numbers: impl IntoIterator<Item = u64>) {
        for n in numbers {
            if let Err(e) = self.fs.remove(&sst_name(n)) {
                log::warn!("{}: not removed ({e})", self.fs.describe(&sst_name(n)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use pmdb_pmem::OsFiles;

    use super::*;
    use crate::format::record::Kind;
    use crate::keys::IKey;

    /// The database the tests' manifests belong to.
    const DB: [u8; 16] = *b"pmdb test pool 1";

    fn no_mark() -> OnDurable {
        Arc::new(|_| Ok(()))
    }

    fn file(number: u64, level: u8) -> FileMeta {
        FileMeta {
            number,
            subtable: 1,
            level,
            size: 100,
            entries: 3,
            min_seq: 1,
            max_seq: 10 * number,
            horizon: 0,
            smallest: IKey::new(b"a", 1, Kind::Put).as_slice().to_vec(),
            largest: IKey::new(b"z", 1, Kind::Put).as_slice().to_vec(),
        }
    }

    #[test]
    fn edits_survive_reopen_and_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let fs: Arc<dyn FileSystem> = Arc::new(OsFiles::open(dir.path()).unwrap());
        assert_eq!(read(&*fs, &DB).unwrap(), VersionSet::default());
        let mut m = Manifest::start(Arc::clone(&fs), no_mark(), VersionSet::default()).unwrap();
        let a = m.new_file_number();
        m.log(vec![Change::AddFile(file(a, 1))]).unwrap();
        let b = m.new_file_number();
        m.log(vec![
            Change::AddFile(file(b, 2)),
            Change::DeleteFile {
                subtable: 1,
                level: 1,
                number: a,
            },
            Change::Flushed {
                subtable: 1,
                memtable: 9,
            },
            Change::Written(written(10, 20, 0)),
        ])
        .unwrap();
        m.log(vec![Change::Written(written(0, 0, 5))]).unwrap();
        let set = read(&*fs, &DB).unwrap();
        assert_eq!(set.files.keys().copied().collect::<Vec<_>>(), vec![b]);
        assert_eq!(set.flushed.get(&1), Some(&9));
        assert_eq!(set.next_memtable, 10);
        assert_eq!(set.last_seq, 10 * b);
        assert_eq!(set.totals, written(10, 20, 5));
        assert_eq!(m.totals(), set.totals);
        drop(m);
        let m = Manifest::start(Arc::clone(&fs), no_mark(), set.clone()).unwrap();
        let fresh = read(&*fs, &DB).unwrap();
        assert_eq!(fresh.files, set.files);
        assert_eq!(
            fresh.totals, set.totals,
            "a fresh manifest carries the totals"
        );
        let manifests = fs
            .list()
            .unwrap()
            .into_iter()
            .filter(|n| n.starts_with("MANIFEST-"))
            .count();
        assert_eq!(manifests, 1, "the older manifest is removed");
        assert_eq!(m.set.files, set.files);
    }

    fn written(flushed: u64, flush: u64, compaction: u64) -> WriteTotals {
        WriteTotals {
            flushed_record_bytes: flushed,
            flush_bytes: flush,
            compaction_bytes: compaction,
        }
    }

    /// A log past `ROTATE_BYTES` is replaced by a fresh manifest, which starts with the
    /// totals every edit before it added up to.
    #[test]
    fn rotation_carries_the_write_totals_forward() {
        let dir = tempfile::tempdir().unwrap();
        let fs: Arc<dyn FileSystem> = Arc::new(OsFiles::open(dir.path()).unwrap());
        let mut m = Manifest::start(Arc::clone(&fs), no_mark(), VersionSet::default()).unwrap();
        let first = m.number;
        // Edits of about 128 KiB each: files with the longest key bounds.
        let bound = |c: u8| IKey::new(&[c; 64 << 10], 1, Kind::Put).as_slice().to_vec();
        let mut edits = 0;
        while m.number == first {
            let mut f = file(m.new_file_number(), 1);
            (f.smallest, f.largest) = (bound(b'a'), bound(b'z'));
            m.log(vec![
                Change::AddFile(f.clone()),
                Change::Written(written(3, 2, 1)),
            ])
            .unwrap();
            m.log(vec![Change::DeleteFile {
                subtable: 1,
                level: 1,
                number: f.number,
            }])
            .unwrap();
            edits += 1;
            assert!(edits < 100, "the manifest never rotated");
        }
        let set = read(&*fs, &DB).unwrap();
        assert_eq!(set.totals, written(3 * edits, 2 * edits, edits));
        assert_eq!(m.totals(), set.totals);
    }

    #[test]
    fn totals_that_overflow_are_damage() {
        let mut set = VersionSet::default();
        let add = |number, w| Edit {
            number,
            changes: vec![Change::Written(w)],
        };
        set.apply(&add(1, written(u64::MAX - 1, 0, 7))).unwrap();
        assert!(
            set.apply(&add(2, written(2, 0, 0)))
                .unwrap_err()
                .contains("overflow")
        );
        assert_eq!(set.totals, written(u64::MAX - 1, 0, 7));
        for change in [
            Change::AddFile(FileMeta {
                number: u64::MAX,
                ..file(3, 1)
            }),
            Change::Flushed {
                subtable: 1,
                memtable: u64::MAX,
            },
            Change::DropSubtable { subtable: u32::MAX },
        ] {
            let err = set
                .apply(&Edit {
                    number: 2,
                    changes: vec![change],
                })
                .unwrap_err();
            assert!(err.contains("the last there is"), "{err}");
        }
    }

    #[test]
    fn bad_edits_are_refused() {
        let mut set = VersionSet::default();
        let add = |number| Edit {
            number,
            changes: vec![Change::AddFile(file(3, 1))],
        };
        set.apply(&add(1)).unwrap();
        assert!(set.apply(&add(2)).unwrap_err().contains("twice"));
        assert!(set.apply(&add(5)).unwrap_err().contains("missing"));
        let delete = Edit {
            number: 2,
            changes: vec![Change::DeleteFile {
                subtable: 1,
                level: 2,
                number: 3,
            }],
        };
        assert!(set.apply(&delete).unwrap_err().contains("does not hold"));
        assert_eq!(set.files.len(), 1, "a refused edit changes nothing");
    }

    #[test]
    fn a_torn_tail_is_ignored_and_damage_before_valid_records_is_not() {
        let mut bytes = MANIFEST_MAGIC.to_vec();
        for number in 1..=3 {
            bytes.extend_from_slice(
                &Edit {
                    number,
                    changes: vec![Change::LastSeq(number * 100)],
                }
                .encode_record(),
            );
        }
        let whole = bytes.len();
        assert_eq!(replay(&bytes).unwrap().last_seq, 300);
        for cut in whole - 20..whole {
            assert_eq!(replay(&bytes[..cut]).unwrap().last_seq, 200, "cut at {cut}");
        }
        let mut middle = bytes.clone();
        middle[MANIFEST_MAGIC.len() + 10] ^= 1;
        assert!(
            replay(&middle)
                .unwrap_err()
                .contains("valid record follows")
        );
        assert!(replay(b"PMDBMANX").unwrap_err().contains("magic"));
        let mut v1 = bytes.clone();
        v1[..MANIFEST_MAGIC_V1.len()].copy_from_slice(MANIFEST_MAGIC_V1);
        let set = replay(&v1).unwrap();
        assert_eq!((set.last_seq, set.totals), (300, WriteTotals::default()));
        for older in [MANIFEST_MAGIC_V2, MANIFEST_MAGIC_V3] {
            let mut v = bytes.clone();
            v[..older.len()].copy_from_slice(older);
            assert_eq!(replay(&v).unwrap().last_seq, 300);
        }
    }

    /// A manifest names its database; read for another, it is refused. One written before
    /// manifests named their database is read for any.
    #[test]
    fn a_manifest_of_another_database_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let fs: Arc<dyn FileSystem> = Arc::new(OsFiles::open(dir.path()).unwrap());
        let set = VersionSet {
            database: Some(DB),
            last_seq: 77,
            ..VersionSet::default()
        };
        let m = Manifest::start(Arc::clone(&fs), no_mark(), set).unwrap();
        assert_eq!(read(&*fs, &DB).unwrap().last_seq, 77);
        let err = read(&*fs, b"another database").unwrap_err().to_string();
        assert!(
            err.contains(&manifest_name(m.number)) && err.contains("not of this one"),
            "{err}"
        );
        drop(m);
        let unnamed = Manifest::start(Arc::clone(&fs), no_mark(), VersionSet::default()).unwrap();
        assert_eq!(read(&*fs, b"another database").unwrap().database, None);
        drop(unnamed);
        let mut two = VersionSet::default();
        let edit = |number, uuid| Edit {
            number,
            changes: vec![Change::Database(uuid)],
        };
        two.apply(&edit(1, DB)).unwrap();
        two.apply(&edit(2, DB)).unwrap();
        assert!(
            two.apply(&edit(3, *b"another database"))
                .unwrap_err()
                .contains("two databases")
        );
    }

    #[test]
    fn ssts_without_current_are_damage_not_a_new_database() {
        let dir = tempfile::tempdir().unwrap();
        let fs = OsFiles::open(dir.path()).unwrap();
        let mut f = fs.create(&sst_name(4)).unwrap();
        f.append(b"x").unwrap();
        drop(f);
        assert!(
            matches!(read(&fs, &DB), Err(DbError::Corrupt(m)) if m.contains("manifest is lost"))
        );
    }
}
