//! SST files are bound to their database and their place: a file swapped with another
//! of the same database, or replaced by a file of another database, is refused at open
//! with an error naming it, and nothing is served from it or changed; so are a truncated
//! file and a manifest of another database. A missing SST file, a missing manifest and a
//! CURRENT naming a missing manifest each say what is missing (not that a pool directory
//! is). A manifest whose last record is damaged, or an older copy of it, or none where
//! the pool records one, is refused: the pool's mark of how far the manifest was durable
//! tells them from a write a crash tore.

use std::fs;
use std::path::{Path, PathBuf};

use pmdb_engine::{Db, DbError, DbOptions};

const KEYS: u32 = 1500;
const VALUE: usize = 120;

/// Small files and manual tiering, so a compaction leaves several SSTs.
fn options() -> DbOptions {
    DbOptions {
        l1_target: 32 << 10,
        target_file_size: 8 << 10,
        ..DbOptions::small().manual_tiering().pool_max(8 << 20)
    }
}

/// A database at `dir` whose data is all in SSTs: two subtables, each key's value of
/// `VALUE` bytes made of `fill` and the key's number.
fn build(dir: &Path, fill: u8) -> Vec<(String, Vec<u8>)> {
    let db = Db::open(dir, options()).unwrap();
    let mut expected = Vec::new();
    for name in ["a", "b"] {
        let t = db.subtable(name).unwrap();
        for i in 0..KEYS {
            let mut v = vec![fill; VALUE];
            v[..4].copy_from_slice(&i.to_be_bytes());
            t.put(format!("key{i:05}"), &v).unwrap();
            expected.push((format!("{name}/key{i:05}"), v));
        }
    }
    db.compact().unwrap();
    expected
}

fn ssts(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir.join("sst"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .collect();
    files.sort();
    files
}

fn open_error(dir: &Path) -> String {
    match Db::open(dir, options()) {
        Ok(_) => panic!("the damaged database opened"),
        Err(e @ DbError::Corrupt(_)) => e.to_string(),
        Err(e) => panic!("expected a corruption error, got {e}"),
    }
}

/// Every value the database serves, by point read, equals what was written.
fn assert_serves(dir: &Path, expected: &[(String, Vec<u8>)]) {
    let db = Db::open(dir, options()).unwrap();
    for (key, value) in expected {
        let (sub, key) = key.split_once('/').unwrap();
        let t = db.existing_subtable(sub).unwrap();
        assert_eq!(t.get_owned(key.as_bytes()).unwrap().as_ref(), Some(value));
    }
}

/// The bytes of every file of the SST directory, to show an open changed none.
fn sst_dir_bytes(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<_> = fs::read_dir(dir.join("sst"))
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let bytes = fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn swapped_ssts_are_refused_and_nothing_changes() {
    let dir = tempfile::tempdir().unwrap();
    let expected = build(dir.path(), b'x');
    let files = ssts(dir.path());
    assert!(files.len() >= 4, "{files:?}");
    let (first, last) = (&files[0], &files[files.len() - 1]);
    let swap = |a: &Path, b: &Path| {
        let tmp = a.with_extension("tmp");
        fs::rename(a, &tmp).unwrap();
        fs::rename(b, a).unwrap();
        fs::rename(&tmp, b).unwrap();
    };
    swap(first, last);
    let before = sst_dir_bytes(dir.path());
    let err = open_error(dir.path());
    assert!(
        err.contains(first.to_str().unwrap())
            && err.contains("not the SST file the manifest names"),
        "{err}"
    );
    assert!(err.contains("the manifest names SST"), "{err}");
    let read_only = Db::open_read_only(dir.path(), options());
    assert!(matches!(read_only, Err(DbError::Corrupt(_))));
    assert_eq!(
        sst_dir_bytes(dir.path()),
        before,
        "a refused open changed files"
    );
    swap(first, last);
    assert_serves(dir.path(), &expected);
}

#[test]
fn an_sst_of_another_database_is_refused_even_when_it_matches_the_manifest() {
    let ours = tempfile::tempdir().unwrap();
    let theirs = tempfile::tempdir().unwrap();
    let expected = build(ours.path(), b'x');
    // The same keys, sequence numbers and sizes; other values.
    build(theirs.path(), b'y');
    let (mine, foreign) = (ssts(ours.path()), ssts(theirs.path()));
    assert_eq!(mine.len(), foreign.len());
    let target = &mine[mine.len() / 2];
    let source = theirs.path().join("sst").join(target.file_name().unwrap());
    assert_eq!(
        fs::metadata(target).unwrap().len(),
        fs::metadata(&source).unwrap().len(),
        "the other database's file is the same size"
    );
    let saved = fs::read(target).unwrap();
    fs::copy(&source, target).unwrap();
    let err = open_error(ours.path());
    assert!(
        err.contains(target.to_str().unwrap()) && err.contains("was written by database"),
        "{err}"
    );
    fs::write(target, saved).unwrap();
    assert_serves(ours.path(), &expected);
}

#[test]
fn missing_files_say_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let expected = build(dir.path(), b'x');
    let sst = ssts(dir.path())[1].clone();
    let saved = fs::read(&sst).unwrap();
    fs::remove_file(&sst).unwrap();
    let err = open_error(dir.path());
    assert!(
        err.contains(sst.to_str().unwrap()) && err.contains("missing, yet the manifest names it"),
        "{err}"
    );
    assert!(!err.contains("pool create"), "{err}");
    // Truncated: the file no longer ends with a footer.
    fs::write(&sst, &saved[..saved.len() - 10]).unwrap();
    let err = open_error(dir.path());
    assert!(err.contains(sst.to_str().unwrap()), "{err}");
    fs::write(&sst, saved).unwrap();

    let current = fs::read_to_string(dir.path().join("sst/CURRENT")).unwrap();
    let manifest = dir.path().join("sst").join(current.trim());
    let saved = fs::read(&manifest).unwrap();
    fs::remove_file(&manifest).unwrap();
    let err = open_error(dir.path());
    assert!(
        err.contains(&format!("names {}", current.trim()))
            && err.contains("the manifest is lost")
            && !err.contains("pool create"),
        "{err}"
    );
    fs::write(&manifest, saved).unwrap();
    assert_serves(dir.path(), &expected);
}

#[test]
fn a_manifest_of_another_database_is_refused_before_it_can_drop_files() {
    let ours = tempfile::tempdir().unwrap();
    let theirs = tempfile::tempdir().unwrap();
    let expected = build(ours.path(), b'x');
    // Another database with a manifest and no SST file: taken for ours, it would make
    // every SST file of ours one that no version names, which a writable open removes.
    drop(Db::open(theirs.path(), options()).unwrap());
    let before = sst_dir_bytes(ours.path());
    let saved = tempfile::tempdir().unwrap();
    let sst = ours.path().join("sst");
    for entry in fs::read_dir(&sst).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if name == "CURRENT" || name.starts_with("MANIFEST-") {
            fs::rename(&path, saved.path().join(&name)).unwrap();
        }
    }
    for entry in fs::read_dir(theirs.path().join("sst")).unwrap() {
        let path = entry.unwrap().path();
        fs::copy(&path, sst.join(path.file_name().unwrap())).unwrap();
    }
    let err = open_error(ours.path());
    assert!(
        err.contains("MANIFEST-") && err.contains("not of this one"),
        "{err}"
    );
    assert!(ssts(ours.path()).len() >= 4, "an SST file was removed");
    // Ours back: nothing was lost.
    for entry in fs::read_dir(theirs.path().join("sst")).unwrap() {
        fs::remove_file(sst.join(entry.unwrap().file_name())).unwrap();
    }
    for (path, _) in &before {
        let name = path.file_name().unwrap();
        if !path.exists() {
            fs::rename(saved.path().join(name), path).unwrap();
        }
    }
    assert_eq!(sst_dir_bytes(ours.path()), before);
    assert_serves(ours.path(), &expected);
}

/// Enough writes to another subtable that a compaction flushes some: the manifest
/// logs edits.
fn write_more(db: &Db) {
    let t = db.subtable("c").unwrap();
    for i in 0..KEYS {
        t.put(format!("late{i:05}"), [7u8; VALUE]).unwrap();
    }
    db.compact().unwrap();
}

/// The live manifest's path, as CURRENT names it.
fn live_manifest(dir: &Path) -> PathBuf {
    let current = fs::read_to_string(dir.join("sst/CURRENT")).unwrap();
    dir.join("sst").join(current.trim())
}

#[test]
fn a_damaged_last_manifest_record_is_refused_not_taken_for_a_torn_write() {
    let dir = tempfile::tempdir().unwrap();
    let expected = build(dir.path(), b'x');
    // The build's edits are in the manifest of its open; a reopen starts a fresh one
    // with one edit and logs the compaction of new writes after it.
    {
        let db = Db::open(dir.path(), options()).unwrap();
        write_more(&db);
    }
    let manifest = live_manifest(dir.path());
    let mut bytes = fs::read(&manifest).unwrap();
    let last = bytes.len() - 3;
    bytes[last] ^= 0x40;
    fs::write(&manifest, &bytes).unwrap();
    let before = sst_dir_bytes(dir.path());
    let err = open_error(dir.path());
    assert!(
        err.contains("ends at edit") && err.contains("durable and acted on"),
        "{err}"
    );
    assert!(
        Db::open_read_only(dir.path(), options()).is_err(),
        "a read-only open served the damaged manifest"
    );
    assert_eq!(sst_dir_bytes(dir.path()), before, "an open changed a file");
    bytes[last] ^= 0x40;
    fs::write(&manifest, &bytes).unwrap();
    assert_serves(dir.path(), &expected);
}

#[test]
fn an_older_copy_of_the_manifest_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let expected = build(dir.path(), b'x');
    let sst = dir.path().join("sst");
    let old_manifest = live_manifest(dir.path());
    let old_current = fs::read(sst.join("CURRENT")).unwrap();
    let old_bytes = fs::read(&old_manifest).unwrap();
    let (new_manifest, first_edit_only) = {
        let db = Db::open(dir.path(), options()).unwrap();
        // The fresh manifest of this open, holding its first edit only.
        let manifest = live_manifest(dir.path());
        let bytes = fs::read(&manifest).unwrap();
        write_more(&db);
        (manifest, bytes)
    };
    assert_ne!(new_manifest, old_manifest);
    let new_current = fs::read(sst.join("CURRENT")).unwrap();
    let new_bytes = fs::read(&new_manifest).unwrap();
    assert!(
        new_bytes.len() > first_edit_only.len(),
        "the reopen logged no edit"
    );

    // CURRENT and the manifest it names restored from a copy made before the reopen.
    fs::write(sst.join("CURRENT"), &old_current).unwrap();
    fs::write(&old_manifest, &old_bytes).unwrap();
    let before = sst_dir_bytes(dir.path());
    let err = open_error(dir.path());
    assert!(err.contains("an older copy"), "{err}");
    assert_eq!(sst_dir_bytes(dir.path()), before, "an open changed a file");
    fs::remove_file(&old_manifest).unwrap();
    fs::write(sst.join("CURRENT"), &new_current).unwrap();

    // The live manifest restored from a copy made before its last edits.
    fs::write(&new_manifest, &first_edit_only).unwrap();
    let before = sst_dir_bytes(dir.path());
    let err = open_error(dir.path());
    assert!(err.contains("ends at edit 1"), "{err}");
    assert_eq!(sst_dir_bytes(dir.path()), before, "an open changed a file");

    fs::write(&new_manifest, &new_bytes).unwrap();

    // And no manifest or SST file at all, where the pool records a manifest.
    let aside = tempfile::tempdir().unwrap();
    let moved: Vec<PathBuf> = ssts(dir.path())
        .into_iter()
        .chain([new_manifest.clone(), sst.join("CURRENT")])
        .collect();
    for f in &moved {
        fs::rename(f, aside.path().join(f.file_name().unwrap())).unwrap();
    }
    let err = open_error(dir.path());
    assert!(
        err.contains("CURRENT") && err.contains("was current"),
        "{err}"
    );
    for f in &moved {
        fs::rename(aside.path().join(f.file_name().unwrap()), f).unwrap();
    }
    assert_serves(dir.path(), &expected);
}
