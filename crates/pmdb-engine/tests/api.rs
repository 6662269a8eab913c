//! The engine's API behaviour: snapshots, scans with bounds in both directions, memtable
//! freezes, concurrent writers through the group commit, the File backend's sync option,
//! and recovery statistics.

use std::sync::Arc;

use pmdb_engine::{Db, DbOptions, WriteBatch, WriteOptions};
use pmdb_pmem::BackendChoice;

fn keys_of(it: pmdb_engine::Scan) -> Vec<Vec<u8>> {
    it.map(|e| e.unwrap().key().to_vec()).collect()
}

#[test]
fn scans_honour_bounds_in_both_directions() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), DbOptions::small()).unwrap();
    let t = db.subtable("t").unwrap();
    for k in ["a", "b", "c", "d", "e"] {
        t.put(k, k.to_uppercase()).unwrap();
    }
    t.delete("c").unwrap();
    let k = |s: &[&str]| s.iter().map(|x| x.as_bytes().to_vec()).collect::<Vec<_>>();
    assert_eq!(keys_of(t.scan("b".."e")), k(&["b", "d"]));
    assert_eq!(keys_of(t.scan("b"..="e")), k(&["b", "d", "e"]));
    assert_eq!(keys_of(t.scan_rev("b"..="e")), k(&["e", "d", "b"]));
    assert_eq!(keys_of(t.scan_rev::<&str>(..)), k(&["e", "d", "b", "a"]));
    assert_eq!(keys_of(t.scan("x".."z")), Vec::<Vec<u8>>::new());
    // Inverted or empty ranges are empty, not a panic.
    assert!(keys_of(t.scan("e".."b")).is_empty());
    assert!(keys_of(t.scan_rev("b".."b")).is_empty());
    assert_eq!(keys_of(t.scan("b"..="b")), k(&["b"]));
    let first = t.scan::<&str>(..).next().unwrap().unwrap();
    assert_eq!((first.key(), first.value()), (&b"a"[..], &b"A"[..]));
}

#[test]
fn snapshots_are_isolated_from_later_writes() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), DbOptions::small()).unwrap();
    let t = db.subtable("t").unwrap();
    t.put("k", "v1").unwrap();
    let snap = db.snapshot();
    assert_eq!(db.oldest_snapshot(), Some(snap.seq()));
    t.put("k", "v2").unwrap();
    t.put("new", "x").unwrap();
    assert_eq!(snap.get(&t, "k").unwrap().unwrap().to_vec(), b"v1");
    assert!(snap.get(&t, "new").unwrap().is_none());
    assert_eq!(
        keys_of(snap.scan::<&str>(&t, ..).unwrap()),
        vec![b"k".to_vec()]
    );
    assert_eq!(t.get_owned("k").unwrap().unwrap(), b"v2");
    drop(snap);
    assert_eq!(db.oldest_snapshot(), None);
}

#[test]
fn frozen_memtables_stay_readable_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let options = DbOptions {
        memtable_size: 32 << 10,
        ..DbOptions::small().manual_tiering()
    };
    {
        let db = Db::open(dir.path(), options.clone()).unwrap();
        let t = db.subtable("t").unwrap();
        for i in 0..400u32 {
            t.put(format!("k{i:04}"), vec![i as u8; 500]).unwrap();
        }
        t.put("k0000", "overwritten").unwrap();
        let stats = db.subtable_stats();
        assert!(stats[0].memtables > 4, "memtables: {stats:?}");
    }
    let db = Db::open(dir.path(), options).unwrap();
    let t = db.subtable("t").unwrap();
    assert_eq!(t.get_owned("k0000").unwrap().unwrap(), b"overwritten");
    assert_eq!(
        t.get_owned("k0399").unwrap().unwrap(),
        vec![399u32 as u8; 500]
    );
    assert_eq!(t.scan::<&str>(..).count(), 400);
    let stats = db.recovery_stats();
    assert_eq!(stats.records, 401);
    assert!(stats.memtables > 4 && stats.zones >= stats.memtables);
    assert!(
        stats.to_string().contains("recovered 401 records"),
        "{stats}"
    );
}

#[test]
fn concurrent_writers_share_group_commits() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), DbOptions::small()).unwrap();
    let a = db.subtable("a").unwrap();
    let b = db.subtable("b").unwrap();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (db, a, b) = (db.clone(), a.clone(), b.clone());
            std::thread::spawn(move || {
                for i in 0..300 {
                    let mut wb = WriteBatch::new();
                    wb.put(&a, format!("t{t}-{i}"), "x");
                    wb.put(&b, format!("t{t}-{i}"), "y");
                    db.write(wb, WriteOptions::default()).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(a.scan::<&str>(..).count(), 1200);
    assert_eq!(b.scan::<&str>(..).count(), 1200);
    assert_eq!(db.last_seq(), 2400);
    let path = dir.path().to_path_buf();
    drop((a, b, db));
    let db = Db::open(
        &path,
        DbOptions {
            recovery_threads: 2,
            ..DbOptions::small()
        },
    )
    .unwrap();
    assert_eq!(db.recovery_stats().records, 2400);
    assert_eq!(db.last_seq(), 2400);
}

#[test]
fn file_backend_persists_with_and_without_sync() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = DbOptions::small();
    options.pool.backend = BackendChoice::File;
    {
        let db = Db::open(dir.path(), options.clone()).unwrap();
        let t = db.subtable("t").unwrap();
        let mut wb = WriteBatch::new();
        wb.put(&t, "relaxed", "1");
        db.write(wb, WriteOptions { sync: false }).unwrap();
        t.put("synced", "2").unwrap();
    }
    let db = Db::open(dir.path(), options).unwrap();
    assert_eq!(db.device().backend, pmdb_pmem::Backend::File);
    let t = db.subtable("t").unwrap();
    assert_eq!(t.get_owned("relaxed").unwrap().unwrap(), b"1");
    assert_eq!(t.get_owned("synced").unwrap().unwrap(), b"2");
}

#[test]
fn values_are_borrowed_from_pm() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), DbOptions::small()).unwrap();
    let t = db.subtable("t").unwrap();
    t.put("k", "zero-copy").unwrap();
    let v = t.get("k").unwrap().unwrap();
    // The bytes are the record's in the pool, not a copy: two reads give the same address.
    let again = t.get("k").unwrap().unwrap();
    assert_eq!(v.as_ptr(), again.as_ptr());
    assert_eq!(&*v, b"zero-copy");
}

#[test]
fn readers_see_every_acknowledged_write_while_memtables_freeze() {
    use std::sync::atomic::{AtomicU32, Ordering};
    const PER_WRITER: u32 = 1500;
    let dir = tempfile::tempdir().unwrap();
    let mut options = DbOptions {
        memtable_size: 32 << 10,
        ..DbOptions::small().manual_tiering()
    };
    // About 1 MiB of records in 32 KiB memtables: room enough, far from `PoolFull`.
    options.pool.max_extents = Some(16);
    let db = Db::open(dir.path(), options).unwrap();
    let t = db.subtable("t").unwrap();
    let key = |w: u32, i: u32| (w * PER_WRITER + i).to_be_bytes();
    // Two writers, so one group's indexing overlaps the next group's append and freeze.
    let done: Arc<[AtomicU32; 2]> = Arc::new([AtomicU32::new(0), AtomicU32::new(0)]);
    let writers: Vec<_> = (0..2u32)
        .map(|w| {
            let (t, done) = (t.clone(), done.clone());
            std::thread::spawn(move || {
                for i in 0..PER_WRITER {
                    t.put(key(w, i), vec![i as u8; 300]).unwrap();
                    done[w as usize].store(i + 1, Ordering::Release);
                }
            })
        })
        .collect();
    let mut checks = 0u32;
    // A writer that dies (a panic in the pipeline) must fail the test, not hang it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let acked = [0, 1].map(|w| done[w].load(Ordering::Acquire));
        assert!(
            std::time::Instant::now() < deadline,
            "writers stuck at {acked:?}"
        );
        let w = checks % 2;
        if acked[w as usize] > 0 {
            let i = checks.wrapping_mul(7919) % acked[w as usize];
            assert_eq!(
                t.get_owned(key(w, i)).unwrap(),
                Some(vec![i as u8; 300]),
                "writer {w} key {i} of {acked:?} acknowledged"
            );
            let seen = t.scan::<[u8]>(..).count() as u32;
            assert!(seen >= acked[0] + acked[1], "scan saw {seen} of {acked:?}");
        }
        checks += 1;
        if acked == [PER_WRITER; 2] {
            break;
        }
    }
    for w in writers {
        w.join().unwrap();
    }
    assert!(db.subtable_stats()[0].memtables > 10);
    assert!(checks > 10);
}
