//! Bad input gets a clear error, never a panic, and loses no committed data: oversized or
//! empty keys, oversized values, unknown or foreign subtables, bad names and options, a
//! full pool, a corrupted chunk, a pool that is not a database. Damaged pools — a changed
//! root word, a damaged catalog slot (its crc fixed up or not), a forged chunk record
//! count, an impossible committed lsn — give an error or reported damage, and free
//! nothing. A read-only open changes no byte of the pool.

use pmdb_engine::{Db, DbError, DbOptions, WriteBatch, WriteOptions};
use pmdb_pmem::{Pool, PoolOptions};

fn open(dir: &std::path::Path) -> Db {
    Db::open(dir, DbOptions::small()).unwrap()
}

#[test]
fn limits_are_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let t = db.subtable("t").unwrap();
    t.put(b"ok", b"v").unwrap();
    let big_key = vec![b'k'; 1025];
    assert!(matches!(
        t.put(&big_key, b"v"),
        Err(DbError::KeyTooLarge {
            len: 1025,
            max: 1024
        })
    ));
    assert!(matches!(
        t.put(b"k", vec![0u8; 4097]),
        Err(DbError::ValueTooLarge {
            len: 4097,
            max: 4096
        })
    ));
    assert!(matches!(t.put(b"", b"v"), Err(DbError::EmptyKey)));
    // A batch with one bad op is refused whole.
    let mut wb = WriteBatch::new();
    wb.put(&t, b"fine", b"v");
    wb.put(&t, &big_key, b"v");
    let err = db.write(wb, WriteOptions::default()).unwrap_err();
    assert!(err.to_string().contains("exceeds the limit"), "{err}");
    assert!(t.get(b"fine").unwrap().is_none());
    assert_eq!(t.get_owned(b"ok").unwrap(), Some(b"v".to_vec()));
}

#[test]
fn a_batch_larger_than_a_memtable_commits_whole_and_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let (t_len, value) = {
        let db = open(dir.path());
        let t = db.subtable("t").unwrap();
        let mut wb = WriteBatch::new();
        let value = vec![7u8; db.options().max_value_size];
        let mut i = 0u32;
        while (wb.len() * value.len()) as u64 <= 3 * db.options().memtable_size {
            wb.put(&t, i.to_be_bytes(), &value);
            i += 1;
        }
        db.write(wb, WriteOptions::default()).unwrap();
        assert_eq!(t.scan::<&[u8]>(..).count(), i as usize);
        // The memtable it landed in took no other group: the next write starts another.
        t.put(b"k", b"v").unwrap();
        let stats = &db.subtable_stats()[0];
        assert!(stats.memtables >= 2, "{stats:?}");
        (i, value)
    };
    let db = open(dir.path());
    let t = db.existing_subtable("t").unwrap();
    assert_eq!(t.scan::<&[u8]>(..).count(), t_len as usize + 1);
    for i in 0..t_len {
        assert_eq!(t.get_owned(i.to_be_bytes()).unwrap(), Some(value.clone()));
    }
    assert_eq!(t.get_owned(b"k").unwrap(), Some(b"v".to_vec()));
}

#[test]
fn a_batch_larger_than_the_pool_is_refused_whole() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let t = db.subtable("t").unwrap();
    t.put(b"before", b"v").unwrap();
    let mut wb = WriteBatch::new();
    let value = vec![7u8; db.options().max_value_size];
    let cap = db.device().max_zones * db.device().zone_size;
    let mut i = 0u32;
    while (wb.len() * value.len()) as u64 <= cap {
        wb.put(&t, i.to_be_bytes(), &value);
        i += 1;
    }
    let err = db.write(wb, WriteOptions::default()).unwrap_err();
    assert!(matches!(err, DbError::PoolFull), "{err}");
    assert_eq!(t.scan::<&[u8]>(..).count(), 1);
    t.put(b"k", b"v").unwrap();
    assert_eq!(t.get_owned(b"k").unwrap(), Some(b"v".to_vec()));
    drop((t, db));
    let db = open(dir.path());
    let t = db.existing_subtable("t").unwrap();
    assert_eq!(t.scan::<&[u8]>(..).count(), 2);
}

#[test]
fn unknown_foreign_and_badly_named_subtables() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let err = db.existing_subtable("nope").err().unwrap();
    assert!(matches!(err, DbError::UnknownSubtable { .. }));
    assert_eq!(err.to_string(), "unknown subtable \"nope\"");
    assert!(matches!(db.subtable(""), Err(DbError::InvalidName { .. })));
    assert!(matches!(
        db.subtable(&"x".repeat(201)),
        Err(DbError::InvalidName { .. })
    ));

    let other_dir = tempfile::tempdir().unwrap();
    let other = open(other_dir.path());
    let foreign = other.subtable("t").unwrap();
    let mut wb = WriteBatch::new();
    wb.put(&foreign, b"k", b"v");
    assert!(matches!(
        db.write(wb, WriteOptions::default()),
        Err(DbError::ForeignSubtable)
    ));
    assert!(matches!(
        db.snapshot().get(&foreign, b"k"),
        Err(DbError::ForeignSubtable)
    ));
}

#[test]
fn options_that_cannot_work_are_refused_and_limits_fit_the_zone() {
    let dir = tempfile::tempdir().unwrap();
    let huge_key = DbOptions {
        max_key_size: 64 << 10,
        ..DbOptions::small()
    };
    match Db::open(dir.path(), huge_key) {
        Err(DbError::InvalidOption { name, .. }) => assert_eq!(name, "max_key_size"),
        other => panic!("{:?}", other.err()),
    }
    // A value limit beyond the 32 KiB zone is lowered to what fits, and enforced.
    let big_values = DbOptions {
        max_value_size: 64 << 10,
        ..DbOptions::small()
    };
    let db = Db::open(dir.path(), big_values).unwrap();
    let max = db.options().max_value_size;
    assert!(max < 32 << 10 && max > 30 << 10, "{max}");
    let t = db.subtable("t").unwrap();
    t.put(b"k", vec![1u8; max]).unwrap();
    assert!(matches!(
        t.put(b"k", vec![1u8; max + 1]),
        Err(DbError::ValueTooLarge { .. })
    ));
    assert_eq!(t.get_owned(b"k").unwrap().map(|v| v.len()), Some(max));
    drop((t, db));
    let no_create = DbOptions {
        create_if_missing: false,
        ..DbOptions::small()
    };
    let err = Db::open(dir.path().join("none"), no_create).err().unwrap();
    assert!(matches!(err, DbError::NoDatabase { .. }), "{err}");
}

#[test]
fn pool_full_fails_the_write_and_keeps_the_database() {
    let dir = tempfile::tempdir().unwrap();
    // No background jobs to give PM back: the pool does fill.
    let mut options = DbOptions::small().manual_tiering();
    options.pool.max_extents = Some(1);
    let mut written = Vec::new();
    {
        let db = Db::open(dir.path(), options.clone()).unwrap();
        let t = db.subtable("t").unwrap();
        let value = vec![7u8; 3000];
        let err = loop {
            let key = format!("k{:05}", written.len());
            match t.put(&key, &value) {
                Ok(()) => written.push(key),
                Err(e) => break e,
            }
        };
        assert!(matches!(err, DbError::PoolFull), "{err}");
        assert!(written.len() > 50);
        // Still readable, and still refusing cleanly.
        assert_eq!(t.get_owned(&written[0]).unwrap(), Some(value.clone()));
        assert!(matches!(t.put(b"more", b"x"), Err(DbError::PoolFull)));
        let n = t.scan::<&[u8]>(..).count();
        assert_eq!(n, written.len());
    }
    let db = Db::open(dir.path(), options).unwrap();
    let t = db.subtable("t").unwrap();
    for key in &written {
        assert_eq!(
            t.get_owned(key).unwrap().map(|v| v.len()),
            Some(3000),
            "{key}"
        );
    }
}

#[test]
fn corrupted_chunk_is_reported_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let t = db.subtable("t").unwrap();
        t.put(b"before", b"intact-1").unwrap();
        t.put(b"victim", b"CORRUPT-ME-PLEASE").unwrap();
        t.put(b"after", b"intact-2").unwrap();
    }
    let extent = dir.path().join("extent-00000.pm");
    let mut bytes = std::fs::read(&extent).unwrap();
    let at = bytes
        .windows(17)
        .position(|w| w == b"CORRUPT-ME-PLEASE")
        .expect("value in the extent");
    bytes[at] ^= 0x20;
    std::fs::write(&extent, bytes).unwrap();

    let db = open(dir.path());
    let damage = &db.recovery_stats().damage;
    assert_eq!(damage.len(), 1, "{damage:?}");
    assert!(damage[0].contains("fails its crc"), "{damage:?}");
    // The lost chunk may have held any key's newest version: no read of the subtable
    // answers from the memtable or below it, the intact records included.
    let t = db.subtable("t").unwrap();
    for key in [&b"before"[..], b"after", b"victim"] {
        let err = t.get_owned(key).unwrap_err();
        assert!(err.to_string().contains("lost records"), "{err}");
    }
    assert!(t.scan::<&[u8]>(..).next().unwrap().is_err());
    assert!(db.read_only().is_some());
    drop((t, db));
    // Fenced off, the damaged subtable still refuses to answer; a new subtable takes
    // writes, and they survive the next open, the damaged memtable still there.
    let fenced = DbOptions {
        fence_damaged: true,
        ..DbOptions::small()
    };
    let db = Db::open(dir.path(), fenced.clone()).unwrap();
    db.subtable("u").unwrap().put(b"new", b"v").unwrap();
    drop(db);
    let db = Db::open(dir.path(), fenced).unwrap();
    assert_eq!(db.recovery_stats().damage.len(), 1);
    let u = db.existing_subtable("u").unwrap();
    assert_eq!(u.get_owned(b"new").unwrap(), Some(b"v".to_vec()));
    let t = db.existing_subtable("t").unwrap();
    assert!(t.get_owned(b"after").is_err());
}

#[test]
fn a_pool_that_is_not_a_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    {
        let pool = Pool::create(dir.path(), &PoolOptions::small()).unwrap();
        pool.publish_root(0, 0x1234).unwrap();
    }
    let mut options = DbOptions::small();
    options.pool = PoolOptions::small();
    let err = Db::open(dir.path(), options).err().unwrap();
    assert!(
        matches!(err, DbError::NotADatabase { found: 0x1234, .. }),
        "{err}"
    );
}

#[test]
fn a_damaged_chunk_opens_read_only_or_fences_its_subtable() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let t = db.subtable("t").unwrap();
        t.put(b"before", b"intact-1").unwrap();
        t.put(b"victim", b"HEADER-GOES-BAD").unwrap();
        // Not the last part: recovery meets the damage while scanning, not at the head.
        t.put(
            b"behind",
            b"unreadable once the header before it is damaged",
        )
        .unwrap();
        db.subtable("u")
            .unwrap()
            .put(b"other", b"intact-2")
            .unwrap();
    }
    let extent = dir.path().join("extent-00000.pm");
    let mut bytes = std::fs::read(&extent).unwrap();
    let value_at = bytes
        .windows(15)
        .position(|w| w == b"HEADER-GOES-BAD")
        .expect("value in the extent");
    // The chunk header sits before the record header (16 bytes) and key (6 bytes).
    let header_at = value_at - 6 - 16 - 48;
    bytes[header_at + 9] ^= 0x01; // inside the lsn field: the header crc no longer matches
    std::fs::write(&extent, bytes).unwrap();

    // By default: read-only, saying which memtable is damaged and what else to do.
    let db = open(dir.path());
    let damage = db.recovery_stats().damage.clone();
    assert!(
        damage.iter().any(|d| d.contains("damaged chunk header")),
        "{damage:?}"
    );
    let reason = db.read_only().unwrap_or_default().to_string();
    assert!(
        reason.contains("memtable") && reason.contains("fence_damaged"),
        "{reason}"
    );
    let t = db.subtable("t").unwrap();
    assert!(t.get_owned(b"before").is_err());
    assert!(matches!(t.put(b"x", b"y"), Err(DbError::ReadOnly { .. })));
    assert!(matches!(db.compact(), Err(DbError::ReadOnly { .. })));
    drop((t, db));

    // Fenced: the damaged subtable is read and refuses writes and compaction; the other
    // takes writes, enough for several memtables, without a stall.
    let fenced = DbOptions {
        fence_damaged: true,
        max_stall: std::time::Duration::from_secs(60),
        ..DbOptions::small()
    };
    let db = Db::open(dir.path(), fenced.clone()).unwrap();
    assert_eq!(db.read_only(), None);
    assert_eq!(
        db.recovery_stats().fenced.len(),
        1,
        "{}",
        db.recovery_stats()
    );
    let t = db.existing_subtable("t").unwrap();
    assert!(t.get_owned(b"before").is_err());
    let err = t.put(b"later", b"refused").unwrap_err();
    assert!(
        matches!(&err, DbError::Fenced { name, .. } if name == "t"),
        "{err}"
    );
    let u = db.existing_subtable("u").unwrap();
    let value = vec![5u8; 2000];
    for i in 0..400u32 {
        u.put(i.to_be_bytes(), &value).unwrap();
    }
    let err = db.compact().unwrap_err();
    assert!(matches!(err, DbError::Fenced { .. }), "{err}");
    assert_eq!(db.tier_stats().stalls, 0);
    drop((t, u, db));

    let db = Db::open(dir.path(), fenced).unwrap();
    let (t, u) = (
        db.existing_subtable("t").unwrap(),
        db.existing_subtable("u").unwrap(),
    );
    assert!(t.get_owned(b"later").is_err());
    assert_eq!(u.get_owned(b"other").unwrap(), Some(b"intact-2".to_vec()));
    for i in 0..400u32 {
        assert_eq!(u.get_owned(i.to_be_bytes()).unwrap(), Some(value.clone()));
    }
}

/// Damage to the structures that make data reachable, done with the device layer's API
/// at the places docs/format.md gives.
mod damage {
    use std::collections::BTreeMap;
    use std::path::Path;

    use pmdb_engine::{Db, DbError, DbOptions, WriteBatch, WriteOptions};
    use pmdb_pmem::{ObjPool, OwnerId, PmOff, Pool, PoolOptions};

    /// First root words of the engine's root cells.
    pub const OWNER_CELL: usize = 1;
    pub const LSN_CELL: usize = 5;
    const KIND_MEMTABLE: u64 = 2;

    type Rows = BTreeMap<(String, Vec<u8>), Vec<u8>>;

    /// A database with two subtables, ending with a batch across both.
    pub fn database(dir: &Path) -> Rows {
        let db = Db::open(dir, DbOptions::small()).unwrap();
        let mut rows = Rows::new();
        for name in ["a", "b"] {
            let t = db.subtable(name).unwrap();
            for i in 0..20 {
                let (k, v) = (format!("k{i:02}"), format!("{name}-value-{i}"));
                t.put(&k, &v).unwrap();
                rows.insert((name.into(), k.into_bytes()), v.into_bytes());
            }
        }
        let mut wb = WriteBatch::new();
        for name in ["a", "b"] {
            wb.put(&db.existing_subtable(name).unwrap(), b"last", b"both");
            rows.insert((name.into(), b"last".to_vec()), b"both".to_vec());
        }
        db.write(wb, WriteOptions::default()).unwrap();
        rows
    }

    pub fn rows_of(db: &Db) -> Rows {
        let mut rows = Rows::new();
        for name in db.subtable_names() {
            for e in db.existing_subtable(&name).unwrap().scan::<&[u8]>(..) {
                let (k, v) = e.unwrap().into_parts();
                rows.insert((name.clone(), k), v);
            }
        }
        rows
    }

    /// Opens the pool under the database, to damage or to inspect it.
    pub fn pool(dir: &Path) -> Pool {
        Pool::open(dir, &PoolOptions::default()).unwrap()
    }

    /// Live owners and their zones: what recovery must not free.
    pub fn owners(dir: &Path) -> Vec<(OwnerId, Vec<PmOff>)> {
        let pool = pool(dir);
        pool.owners()
            .into_iter()
            .map(|o| (o, pool.zones_of(o)))
            .collect()
    }

    pub fn check_word(cell: usize, copy_at: usize, value: u64) -> u64 {
        let mut h = crc32fast::Hasher::new();
        h.update(&(cell as u64).to_le_bytes());
        h.update(&(copy_at as u64).to_le_bytes());
        h.update(&value.to_le_bytes());
        (u64::from(u32::from_le_bytes(*b"PMRC")) << 32) | u64::from(h.finalize())
    }

    /// Writes `value` into both copies of a cell with valid check words: damage no
    /// checksum can catch.
    pub fn forge_cell(pool: &Pool, cell: usize, value: u64) {
        for at in [0, 2] {
            pool.publish_root(cell + at, value).unwrap();
            pool.publish_root(cell + at + 1, check_word(cell, at, value))
                .unwrap();
        }
    }

    /// The catalog's committed slots as (tag, slot address), found through copy A of
    /// the owner cell.
    pub fn slots(pool: &Pool) -> Vec<(u64, PmOff)> {
        let owner = OwnerId::from_raw(pool.root(OWNER_CELL)).unwrap();
        pool.zones_of(owner)
            .into_iter()
            .flat_map(|zone| ObjPool::open(pool, zone).unwrap().live(pool))
            .map(|(_, off, tag)| (tag, off))
            .collect()
    }

    /// The owner of the memtable in the first memtable slot.
    pub fn memtable_owner(pool: &Pool) -> OwnerId {
        let (_, slot) = slots(pool)
            .into_iter()
            .find(|(tag, _)| tag >> 56 == KIND_MEMTABLE)
            .unwrap();
        let raw = pool.load_u64(slot.checked_add(16).unwrap()).unwrap();
        OwnerId::from_raw(raw).unwrap()
    }

    /// Rewrites `len` bytes at `at` in the slot at `slot` and, with `reseal`, its crc
    /// (over the tag and the slot, the head word of a memtable slot left out).
    pub fn patch_slot(pool: &Pool, tag: u64, slot: PmOff, at: usize, bytes: &[u8], reseal: bool) {
        let mut b = pool.read(slot, 256).unwrap().to_vec();
        b[at..at + bytes.len()].copy_from_slice(bytes);
        if reseal {
            let mut h = crc32fast::Hasher::new();
            h.update(&tag.to_le_bytes());
            let (skip, end) = if tag >> 56 == KIND_MEMTABLE {
                (24, 40)
            } else {
                (240, 248)
            };
            h.update(&b[..skip]);
            h.update(&b[end..252]);
            let crc = h.finalize().to_le_bytes();
            b[252..].copy_from_slice(&crc);
        }
        pool.write(slot, &b).unwrap();
        pool.persist(slot, 256).unwrap();
    }

    /// Rolls back the last part of the first memtable's log, as a crash while its group
    /// was published would have left it: the group the database ended with is partial.
    pub fn make_last_group_partial(pool: &Pool) {
        let (_, slot) = slots(pool)
            .into_iter()
            .find(|(tag, _)| tag >> 56 == KIND_MEMTABLE)
            .unwrap();
        let head = slot.checked_add(24).unwrap();
        let start = pool.load_u64(head).unwrap() >> 32;
        pool.publish_u64(head, (start << 32) | start).unwrap();
    }

    /// Every file of the directory with its bytes.
    pub fn files(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .flat_map(|path| {
                if path.is_dir() {
                    files(&path)
                } else {
                    let bytes = std::fs::read(&path).unwrap();
                    vec![(path, bytes)]
                }
            })
            .collect();
        files.sort();
        files
    }

    /// Opens the damaged database twice (the first open must change nothing a second
    /// one would judge differently) and returns what the second saw.
    pub fn open_twice(dir: &Path) -> Result<Db, DbError> {
        drop(Db::open(dir, DbOptions::small()));
        Db::open(dir, DbOptions::small())
    }
}

use damage::*;

/// The owners and zones, the rows: none lost to a damaged pool's opens.
fn assert_nothing_freed(
    dir: &std::path::Path,
    owners: &[(pmdb_pmem::OwnerId, Vec<pmdb_pmem::PmOff>)],
) {
    assert_eq!(damage::owners(dir), owners, "an owner or zone was freed");
}

#[test]
fn one_changed_word_of_a_root_cell_loses_nothing() {
    for word in 1..=8 {
        let dir = tempfile::tempdir().unwrap();
        let rows = database(dir.path());
        let owners = damage::owners(dir.path());
        {
            let pool = damage::pool(dir.path());
            pool.publish_root(word, pool.root(word) ^ 0x0100).unwrap();
        }
        // The other copy verifies: no damage a crash could not have left.
        let db = open_twice(dir.path()).unwrap();
        assert!(db.recovery_stats().damage.is_empty(), "word {word}");
        assert_eq!(rows_of(&db), rows, "word {word}");
        drop(db);
        assert_nothing_freed(dir.path(), &owners);
    }
}

#[test]
fn a_lost_catalog_owner_is_an_error_and_frees_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let rows = database(dir.path());
    let owners = damage::owners(dir.path());
    let saved: Vec<u64> = {
        let pool = damage::pool(dir.path());
        let saved = (OWNER_CELL..OWNER_CELL + 4).map(|i| pool.root(i)).collect();
        // Both copies changed: the cell does not verify.
        pool.publish_root(OWNER_CELL, 12345).unwrap();
        pool.publish_root(OWNER_CELL + 2, 12345).unwrap();
        saved
    };
    let err = open_twice(dir.path()).err().unwrap();
    assert!(matches!(err, DbError::Corrupt(_)), "{err}");
    assert!(err.to_string().contains("catalog owner"), "{err}");
    assert_nothing_freed(dir.path(), &owners);
    // Forged with valid checks to name a memtable's owner: its zones are no catalog.
    {
        let pool = damage::pool(dir.path());
        pool.publish_root(OWNER_CELL, saved[0]).unwrap();
        let victim = memtable_owner(&pool);
        forge_cell(&pool, OWNER_CELL, victim.to_raw());
    }
    let db = open_twice(dir.path()).unwrap();
    assert!(db.read_only().is_some());
    assert!(!db.recovery_stats().damage.is_empty());
    assert!(matches!(db.subtable("new"), Err(DbError::ReadOnly { .. })));
    drop(db);
    assert_nothing_freed(dir.path(), &owners);
    {
        let pool = damage::pool(dir.path());
        for (i, word) in saved.iter().enumerate() {
            pool.publish_root(OWNER_CELL + i, *word).unwrap();
        }
    }
    let db = Db::open(dir.path(), DbOptions::small()).unwrap();
    assert_eq!(rows_of(&db), rows);
    assert!(db.recovery_stats().damage.is_empty());
}

#[test]
fn a_damaged_committed_lsn_opens_read_only_and_frees_nothing() {
    for forged in [None, Some(u64::MAX)] {
        let dir = tempfile::tempdir().unwrap();
        let rows = database(dir.path());
        let owners = damage::owners(dir.path());
        {
            let pool = damage::pool(dir.path());
            // An owner the catalog does not name: a writable open would free it.
            pool.create_owner().unwrap();
            match forged {
                Some(lsn) => forge_cell(&pool, LSN_CELL, lsn),
                None => {
                    pool.publish_root(LSN_CELL, 7).unwrap();
                    pool.publish_root(LSN_CELL + 2, 7).unwrap();
                }
            }
        }
        let owners_now = damage::owners(dir.path());
        assert_eq!(owners_now.len(), owners.len() + 1);
        let db = open_twice(dir.path()).unwrap();
        let reason = db.read_only().map(str::to_string);
        assert!(reason.is_some(), "{forged:?}");
        assert!(
            db.recovery_stats()
                .damage
                .iter()
                .any(|d| d.contains("committed lsn"))
                || reason.as_deref().unwrap().contains("exhausted"),
            "{forged:?}: {:?}",
            db.recovery_stats()
        );
        assert_eq!(rows_of(&db), rows, "{forged:?}");
        let t = db.existing_subtable("a").unwrap();
        assert!(matches!(t.put(b"x", b"y"), Err(DbError::ReadOnly { .. })));
        drop((t, db));
        assert_nothing_freed(dir.path(), &owners_now);
    }
}

#[test]
fn a_committed_lsn_leaving_no_next_lsn_opens_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let rows = database(dir.path());
    forge_cell(&damage::pool(dir.path()), LSN_CELL, (1 << 56) - 1);
    let db = open_twice(dir.path()).unwrap();
    let reason = db.read_only().unwrap_or_default();
    assert!(reason.contains("exhausted"), "{reason}");
    assert_eq!(rows_of(&db), rows);
    let t = db.existing_subtable("a").unwrap();
    assert!(matches!(t.put(b"x", b"y"), Err(DbError::ReadOnly { .. })));
}

#[test]
fn a_damaged_catalog_slot_is_reported_and_frees_nothing() {
    // Without the crc fixed up: the slot fails its crc. With it: a name length of 0,
    // which no encoder writes.
    for reseal in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let rows = database(dir.path());
        {
            let pool = damage::pool(dir.path());
            let (tag, slot) = slots(&pool)
                .into_iter()
                .find(|(tag, _)| *tag == (1 << 56) | 1)
                .expect("subtable 1's slot");
            patch_slot(&pool, tag, slot, 4, &[0, 0], reseal);
            pool.create_owner().unwrap();
        }
        let owners = damage::owners(dir.path());
        let db = open_twice(dir.path()).unwrap();
        let damage = &db.recovery_stats().damage;
        assert!(
            damage.iter().any(|d| d.contains("catalog slot")),
            "{damage:?}"
        );
        assert!(db.read_only().is_some());
        // The subtable whose slot is damaged is unknown; the other is all there.
        let visible = rows_of(&db);
        assert!(!visible.is_empty());
        assert!(visible.iter().all(|(k, v)| rows.get(k) == Some(v)));
        drop(db);
        assert_nothing_freed(dir.path(), &owners);
    }
}

#[test]
fn a_memtable_slot_naming_another_subtable_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    database(dir.path());
    let owners = damage::owners(dir.path());
    {
        let pool = damage::pool(dir.path());
        let (tag, slot) = slots(&pool)
            .into_iter()
            .find(|(tag, _)| tag >> 56 == 2)
            .unwrap();
        // A valid slot, crc and all, for a subtable that does not exist.
        patch_slot(&pool, tag, slot, 8, &77u32.to_le_bytes(), true);
    }
    let db = open_twice(dir.path()).unwrap();
    let damage = &db.recovery_stats().damage;
    assert!(
        damage.iter().any(|d| d.contains("does not list")),
        "{damage:?}"
    );
    drop(db);
    assert_nothing_freed(dir.path(), &owners);
}

#[test]
fn a_head_word_moved_back_is_reported_and_later_writes_survive() {
    let dir = tempfile::tempdir().unwrap();
    let mut rows = database(dir.path());
    let owners = damage::owners(dir.path());
    {
        // The head word is outside its slot's crc: moved back 8 bytes, into the last
        // chunk, it still passes every check of its own.
        let pool = damage::pool(dir.path());
        let (_, slot) = slots(&pool)
            .into_iter()
            .find(|(tag, _)| tag >> 56 == 2)
            .unwrap();
        let head = slot.checked_add(24).unwrap();
        let word = pool.load_u64(head).unwrap();
        pool.publish_u64(head, word - 8).unwrap();
    }
    let db = open_twice(dir.path()).unwrap();
    let damage = db.recovery_stats().damage.clone();
    assert!(damage.iter().any(|d| d.contains("head word")), "{damage:?}");
    assert!(db.read_only().is_some());
    assert_eq!(rows_of(&db), rows);
    drop(db);
    // Fenced, the subtable of the damaged memtable refuses writes and the other takes
    // them; nothing is overwritten.
    let fenced = DbOptions {
        fence_damaged: true,
        ..DbOptions::small()
    };
    let db = Db::open(dir.path(), fenced.clone()).unwrap();
    let mut refused = 0;
    for name in ["a", "b"] {
        let t = db.existing_subtable(name).unwrap();
        for i in 0..5 {
            let (k, v) = (format!("later{i}"), format!("{name}-later-{i}"));
            match t.put(&k, &v) {
                Ok(()) => {
                    rows.insert((name.into(), k.into_bytes()), v.into_bytes());
                }
                Err(DbError::Fenced { .. }) => refused += 1,
                Err(e) => panic!("{e}"),
            }
        }
    }
    assert_eq!(refused, 5, "one subtable is fenced off");
    drop(db);
    let db = Db::open(dir.path(), fenced).unwrap();
    let damage = &db.recovery_stats().damage;
    assert!(damage.iter().all(|d| d.contains("head word")), "{damage:?}");
    assert_eq!(rows_of(&db), rows);
    drop(db);
    let now = damage::owners(dir.path());
    assert!(
        owners.iter().all(|o| now.contains(o)),
        "an owner or zone was freed"
    );
}

#[test]
fn contradicting_global_index_words_leave_their_subtable_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let options = DbOptions::small().manual_tiering();
    {
        // Rounds of overwrites over several memtables, none merged: the newest memtable
        // holds every key's newest value.
        let db = Db::open(dir.path(), options.clone()).unwrap();
        let (t, u) = (db.subtable("t").unwrap(), db.subtable("u").unwrap());
        // First, so that the newest memtable is t's.
        u.put(b"other", b"kept").unwrap();
        for round in 0..6u8 {
            for i in 0..100u32 {
                t.put(i.to_be_bytes(), vec![round; 300]).unwrap();
            }
        }
    }
    let owners = damage::owners(dir.path());
    {
        // The newest memtable's word made to name itself, as a merge into a fresh
        // generation would: older memtables are not merged, which no merge leaves.
        let pool = damage::pool(dir.path());
        let (tag, slot) = slots(&pool)
            .into_iter()
            .filter(|(tag, _)| tag >> 56 == 2)
            .max_by_key(|(tag, _)| tag & ((1 << 56) - 1))
            .unwrap();
        let id = tag & ((1 << 56) - 1);
        let word = slot.checked_add(32).unwrap();
        assert_eq!(pool.load_u64(word).unwrap(), 0);
        pool.publish_u64(word, id).unwrap();
    }
    let db = open_twice(dir.path()).unwrap();
    let damage = &db.recovery_stats().damage;
    assert!(
        damage.iter().any(|d| d.contains("is not merged")),
        "{damage:?}"
    );
    assert!(db.read_only().is_some());
    // Nothing of the subtable is served (its newest values would read as older ones);
    // the other subtable is all there.
    assert!(matches!(
        db.existing_subtable("t"),
        Err(DbError::UnknownSubtable { .. })
    ));
    let u = db.existing_subtable("u").unwrap();
    assert_eq!(u.get_owned(b"other").unwrap(), Some(b"kept".to_vec()));
    drop((u, db));
    assert_nothing_freed(dir.path(), &owners);
}

#[test]
fn a_forged_chunk_record_count_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let rows = database(dir.path());
    let owners = damage::owners(dir.path());
    {
        let pool = damage::pool(dir.path());
        let zone = pool.zones_of(memtable_owner(&pool))[0];
        // The first chunk header, after the 64-byte zone header: its record count
        // raised to the most its payload could hold, and its crc fixed up.
        let at = zone.checked_add(64).unwrap();
        let mut h = pool.read(at, 48).unwrap().to_vec();
        let payload = u32::from_le_bytes(h[20..24].try_into().unwrap());
        h[32..36].copy_from_slice(&(payload / 16).to_le_bytes());
        let crc = crc32fast::hash(&h[..40]);
        h[40..44].copy_from_slice(&crc.to_le_bytes());
        pool.write(at, &h).unwrap();
        pool.persist(at, 48).unwrap();
    }
    let db = open_twice(dir.path()).unwrap();
    let damage = &db.recovery_stats().damage;
    assert!(damage.iter().any(|d| d.contains("counts")), "{damage:?}");
    assert_eq!(rows_of(&db), rows);
    drop(db);
    assert_nothing_freed(dir.path(), &owners);
}

#[test]
fn a_read_only_open_recovers_in_dram_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut rows = database(dir.path());
    {
        let pool = damage::pool(dir.path());
        make_last_group_partial(&pool);
        pool.create_owner().unwrap();
    }
    // The batch the database ended with is partial: neither of its parts is committed.
    rows.retain(|(_, k), _| k != b"last");
    let before = files(dir.path());
    let db = Db::open_read_only(dir.path(), DbOptions::small()).unwrap();
    assert_eq!(rows_of(&db), rows);
    let stats = db.recovery_stats();
    assert_eq!(stats.rolled_back_parts, 1);
    assert_eq!(stats.released_owners, 0);
    assert!(db.read_only().unwrap().contains("read-only"));
    let a = db.existing_subtable("a").unwrap();
    let refused = |r: Result<(), DbError>| {
        assert!(matches!(r, Err(DbError::ReadOnly { .. })), "{r:?}");
    };
    refused(a.put(b"k", b"v"));
    refused(a.delete(b"k00"));
    refused(db.subtable("new").map(drop));
    refused(db.drop_subtable("b"));
    drop((a, db));
    assert!(
        files(dir.path()) == before,
        "a read-only open changed the pool"
    );

    // Opened to write, the same recovery happens on the media.
    let db = Db::open(dir.path(), DbOptions::small()).unwrap();
    assert_eq!(rows_of(&db), rows);
    assert_eq!(db.recovery_stats().rolled_back_parts, 1);
    assert_eq!(db.recovery_stats().released_owners, 1);
    drop(db);
    assert!(files(dir.path()) != before);
}
