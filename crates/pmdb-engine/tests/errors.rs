//! Bad input gets a clear error, never a panic, and loses no committed data: oversized or
//! empty keys, oversized values, unknown or foreign subtables, bad names and options, a
//! full pool, a corrupted chunk, a pool that is not a database.

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
    let mut options = DbOptions::small();
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
    let t = db.subtable("t").unwrap();
    assert_eq!(t.get_owned(b"before").unwrap(), Some(b"intact-1".to_vec()));
    assert_eq!(t.get_owned(b"after").unwrap(), Some(b"intact-2".to_vec()));
    assert_eq!(t.get_owned(b"victim").unwrap(), None);
    // The database keeps working, and what it writes now survives the next open even
    // though the damaged memtable is still there.
    t.put(b"new", b"v").unwrap();
    drop((t, db));
    let db = open(dir.path());
    assert_eq!(db.recovery_stats().damage.len(), 1);
    let t = db.subtable("t").unwrap();
    assert_eq!(t.get_owned(b"new").unwrap(), Some(b"v".to_vec()));
    assert_eq!(t.get_owned(b"after").unwrap(), Some(b"intact-2".to_vec()));
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
fn writes_after_a_damaged_chunk_header_survive_the_next_open() {
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

    let db = open(dir.path());
    let damage = db.recovery_stats().damage.clone();
    assert!(
        damage.iter().any(|d| d.contains("damaged chunk header")),
        "{damage:?}"
    );
    let t = db.subtable("t").unwrap();
    assert_eq!(t.get_owned(b"before").unwrap(), Some(b"intact-1".to_vec()));
    t.put(b"later", b"kept").unwrap();
    drop((t, db));

    let db = open(dir.path());
    let t = db.subtable("t").unwrap();
    assert_eq!(t.get_owned(b"later").unwrap(), Some(b"kept".to_vec()));
    assert_eq!(t.get_owned(b"before").unwrap(), Some(b"intact-1".to_vec()));
}
