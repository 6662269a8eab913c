//! Reclamation: PM under a reader is released only once the reader has left. A borrowed
//! value and a live scan are held across the drop of their subtable while new writes
//! reuse every free zone; both still read the right bytes, and the zones come back to the
//! pool once they are dropped. A pool capped far below the data written never fills while
//! the background jobs give its PM back. Also: scans are `Send + 'static` and resume where
//! they stopped, and handles of a dropped subtable fail cleanly.

use pmdb_engine::{Db, DbError, DbOptions, WriteBatch, WriteOptions};

fn options() -> DbOptions {
    DbOptions {
        memtable_size: 64 << 10,
        ..DbOptions::small()
    }
}

fn value(i: u32) -> Vec<u8> {
    format!("value-{i:05}-").repeat(20).into_bytes()
}

#[test]
fn readers_keep_a_dropped_subtable_in_pm_until_they_leave() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    let old = db.subtable("old").unwrap();
    for i in 0..300u32 {
        old.put(format!("k{i:05}"), value(i)).unwrap();
    }
    let held = old.get("k00007").unwrap().unwrap();
    let mut scan = old.scan::<&str>(..);
    for i in 0..10u32 {
        let e = scan.next().unwrap().unwrap();
        assert_eq!(e.key(), format!("k{i:05}").as_bytes());
    }
    let free_before = db.device().alloc.free_zones;

    db.drop_subtable("old").unwrap();
    assert!(matches!(
        db.existing_subtable("old"),
        Err(DbError::UnknownSubtable { .. })
    ));
    assert!(matches!(
        old.get("k00001"),
        Err(DbError::SubtableDropped { .. })
    ));
    assert!(matches!(
        old.put("k", "v"),
        Err(DbError::NoSuchSubtable { .. })
    ));

    // Fill every free zone (and more) with other data: had the dropped subtable's zones
    // been released, these writes would land on them.
    let new = db.subtable("new").unwrap();
    for i in 0..(free_before as u32 + 8) * 40 {
        new.put(format!("n{i:06}"), vec![0xa5; 700]).unwrap();
    }
    assert_eq!(&*held, value(7).as_slice());
    for i in 10..300u32 {
        let e = scan.next().unwrap().unwrap();
        assert_eq!(e.key(), format!("k{i:05}").as_bytes());
        assert_eq!(e.value(), value(i).as_slice(), "entry {i}");
    }
    assert!(scan.next().is_none());

    // Once both readers are gone, the dropped memtables' zones are free again.
    let free_held = db.device().alloc.free_zones;
    drop((held, scan));
    let free_after = db.device().alloc.free_zones;
    assert!(
        free_after > free_held,
        "zones held {free_held}, after release {free_after}"
    );
    drop(old);
    let path = dir.path().to_path_buf();
    drop((new, db));
    let db = Db::open(&path, options()).unwrap();
    assert_eq!(db.subtable_names(), vec!["new".to_string()]);
    assert_eq!(db.recovery_stats().released_owners, 0);
    assert_eq!(db.subtable("old").unwrap().scan::<&str>(..).count(), 0);
}

/// A 512 KiB pool takes 10 MB of writes, with flushes slowed down so that writers run
/// ahead of them: commits wait for the jobs to free PM when it runs short (sealing a
/// global-index generation early), and never fail with `PoolFull`.
#[test]
fn a_capped_pool_takes_many_times_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = DbOptions::small();
    o.pool.max_extents = Some(1);
    o.compaction_rate = 4 << 20;
    let cap = u64::from(o.pool.zones_per_extent) * o.pool.zone_size.unwrap();
    let value = |i: u32, round: u32| format!("{round}:{i:05}:").repeat(300).into_bytes();
    let keys = 3000u32;
    {
        let db = Db::open(dir.path(), o.clone()).unwrap();
        let t = db.subtable("t").unwrap();
        for i in 0..keys {
            t.put(format!("k{i:05}"), value(i, 0)).unwrap();
        }
        for i in (0..keys).step_by(7) {
            t.put(format!("k{i:05}"), value(i, 1)).unwrap();
        }
        let d = db.device();
        assert!(d.alloc.zones * d.zone_size <= cap);
        let stats = db.tier_stats();
        assert!(stats.flushes > 10, "{stats:?}");
        assert!(db.subtable_stats()[0].sst_bytes() > 10 * cap);
    }
    let db = Db::open(dir.path(), o).unwrap();
    let t = db.subtable("t").unwrap();
    for i in 0..keys {
        let round = u32::from(i % 7 == 0);
        assert_eq!(
            t.get_owned(format!("k{i:05}")).unwrap(),
            Some(value(i, round)),
            "k{i:05}"
        );
    }
}

#[test]
fn scans_are_send_and_static_and_resume_where_they_stopped() {
    fn send_static<T: Send + 'static>(t: T) -> T {
        t
    }
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    let t = db.subtable("t").unwrap();
    for i in 0..200u32 {
        t.put(format!("k{i:03}"), i.to_string()).unwrap();
    }
    let mut fwd = send_static(t.scan("k050".."k150"));
    let mut rev = send_static(t.scan_rev("k050".."k150"));
    let first: Vec<_> = fwd
        .by_ref()
        .take(10)
        .map(|e| e.unwrap().into_parts().0)
        .collect();
    assert_eq!(first.last().unwrap(), b"k059");
    // Writes after the scan started are not seen by it; the scan goes on from its place.
    t.put("k060", "changed").unwrap();
    t.delete("k061").unwrap();
    let rest = std::thread::spawn(move || {
        let rest: Vec<_> = fwd.map(|e| e.unwrap()).collect();
        let back: Vec<_> = rev.by_ref().map(|e| e.unwrap().key().to_vec()).collect();
        (rest, back)
    });
    let (rest, back) = rest.join().unwrap();
    assert_eq!(rest.len(), 90);
    assert_eq!((rest[0].key(), rest[0].value()), (&b"k060"[..], &b"60"[..]));
    assert_eq!(back.len(), 100);
    assert_eq!(back[0], b"k149");
    assert_eq!(t.get_owned("k060").unwrap().unwrap(), b"changed");
    assert_eq!(t.scan("k050".."k150").count(), 99);
}

#[test]
fn a_batch_naming_a_dropped_subtable_fails_alone() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    let keep = db.subtable("keep").unwrap();
    let gone = db.subtable("gone").unwrap();
    let mut stale = WriteBatch::new();
    stale.put(&keep, "a", "1");
    stale.put(gone.id(), "b", "2");
    db.drop_subtable("gone").unwrap();
    assert!(matches!(
        db.write(stale, WriteOptions::default()),
        Err(DbError::NoSuchSubtable { .. })
    ));
    assert!(keep.get("a").unwrap().is_none());
    keep.put("c", "3").unwrap();
    assert_eq!(keep.get_owned("c").unwrap().unwrap(), b"3");
    // A new subtable of the same name starts empty.
    let again = db.subtable("gone").unwrap();
    assert_eq!(again.scan::<&str>(..).count(), 0);
    assert_ne!(again.id(), gone.id());
}
