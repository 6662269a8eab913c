//! The catalog's limits: it grows past one zone as subtables and memtables come (and
//! reuses the slots of dropped ones), a full owner table is a typed error, and a pool
//! with small zones opens with the default options.

use pmdb_engine::{DEFAULT_MAX_KEY, Db, DbError, DbOptions};
use pmdb_pmem::PoolOptions;

/// 16 KiB zones: 61 catalog slots per zone.
fn small_zones(max_owners: u32) -> DbOptions {
    DbOptions {
        pool: PoolOptions {
            zone_size: Some(16 << 10),
            zones_per_extent: 64,
            max_owners,
            max_extents: Some(8),
            ..PoolOptions::default()
        },
        memtable_size: 16 << 10,
        ..DbOptions::default()
    }
}

#[test]
fn subtables_created_and_dropped_in_a_loop_never_fill_the_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let options = small_zones(1024);
    let db = Db::open(dir.path(), options.clone()).unwrap();
    let mut live = Vec::new();
    // 600 subtables over time, each with a memtable: ten times what one catalog zone
    // holds; at most 90 are live at once, so dropped slots must be reused.
    for i in 0..600u32 {
        let name = format!("t{i:04}");
        db.subtable(&name)
            .unwrap()
            .put(b"k", name.as_bytes())
            .unwrap();
        live.push(name);
        if live.len() > 90 {
            db.drop_subtable(&live.remove(0)).unwrap();
        }
    }
    // Now fill past one zone without dropping.
    for i in 0..150u32 {
        let name = format!("u{i:04}");
        db.subtable(&name)
            .unwrap()
            .put(b"k", name.as_bytes())
            .unwrap();
        live.push(name);
    }
    drop(db);
    let db = Db::open(dir.path(), options).unwrap();
    let stats = db.recovery_stats();
    assert!(stats.damage.is_empty(), "{:?}", stats.damage);
    // 240 subtables and 240 memtables: at least 8 zones of 61 slots, and far fewer than
    // 1500 entries would need had nothing been reused.
    assert!(
        (8..=12).contains(&stats.catalog_zones),
        "{} catalog zones",
        stats.catalog_zones
    );
    let mut names = live.clone();
    names.sort();
    assert_eq!(db.subtable_names(), names);
    for name in &live {
        let value = db.existing_subtable(name).unwrap().get_owned(b"k").unwrap();
        assert_eq!(value.as_deref(), Some(name.as_bytes()), "{name}");
    }
    // Every live owner is a memtable's or the catalog's.
    assert_eq!(db.device().alloc.live_owners, live.len() as u64 + 1);
}

#[test]
fn a_full_owner_table_is_a_typed_error_and_keeps_the_database() {
    let dir = tempfile::tempdir().unwrap();
    // The catalog's owner and three memtables.
    let options = small_zones(4);
    let db = Db::open(dir.path(), options.clone()).unwrap();
    for name in ["a", "b", "c"] {
        db.subtable(name).unwrap().put(b"k", b"v").unwrap();
    }
    let d = db.subtable("d").unwrap();
    let err = d.put(b"k", b"v").unwrap_err();
    assert!(
        matches!(err, DbError::OwnersFull { max_owners: 4 }),
        "{err:?}"
    );
    assert!(err.to_string().contains("owner table is full"), "{err}");
    // The other subtables keep taking writes.
    db.existing_subtable("a")
        .unwrap()
        .put(b"k2", b"v2")
        .unwrap();
    drop((d, db));
    let db = Db::open(dir.path(), options).unwrap();
    let a = db.existing_subtable("a").unwrap();
    assert_eq!(a.get_owned(b"k2").unwrap(), Some(b"v2".to_vec()));
    assert_eq!(
        db.existing_subtable("d").unwrap().get_owned(b"k").unwrap(),
        None
    );
}

#[test]
fn a_pool_with_small_zones_opens_with_the_default_options() {
    let dir = tempfile::tempdir().unwrap();
    let options = small_zones(64);
    let db = Db::open(dir.path(), options.clone()).unwrap();
    let max_key = db.options().max_key_size;
    let max_value = db.options().max_value_size;
    assert!(max_key < DEFAULT_MAX_KEY && max_key > 7 << 10, "{max_key}");
    assert!(max_value >= max_key, "{max_value}");
    let t = db.subtable("t").unwrap();
    let key = vec![b'k'; max_key];
    t.put(&key, vec![b'v'; max_value]).unwrap();
    assert!(matches!(
        t.put(vec![b'k'; max_key + 1], b"v"),
        Err(DbError::KeyTooLarge { .. })
    ));
    drop((t, db));
    let db = Db::open(dir.path(), options.clone()).unwrap();
    let value = db.existing_subtable("t").unwrap().get_owned(&key).unwrap();
    assert_eq!(value.map(|v| v.len()), Some(max_value));
    drop(db);
    // A limit the user chose is not lowered: one that cannot fit is refused.
    let chosen = DbOptions {
        max_key_size: 16_300,
        ..options
    };
    match Db::open(dir.path(), chosen) {
        Err(DbError::InvalidOption { name, .. }) => assert_eq!(name, "max_key_size"),
        other => panic!("{:?}", other.err()),
    }
}
