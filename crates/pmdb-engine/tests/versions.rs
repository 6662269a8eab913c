//! Versions dropped from the DRAM index: a memtable keeps one index entry per key and
//! drops versions no reader can see. Readers racing the writer must never notice: a read
//! of the latest value sees a value at least as new as the last it saw, a snapshot keeps
//! what it sees, and a scan keeps its snapshot even after the `Snapshot` it came from is
//! gone.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use pmdb_engine::{Db, DbOptions};

fn counter(v: &[u8]) -> u64 {
    u64::from_be_bytes(v.try_into().expect("8-byte values"))
}

#[test]
fn latest_reads_racing_updates_of_one_key_never_go_back() {
    let dir = tempfile::tempdir().unwrap();
    // One large memtable: a read that misses the active memtable's versions would find
    // nothing older to fall back on, and report the key missing.
    let options = DbOptions {
        memtable_size: 64 << 20,
        ..DbOptions::small()
    };
    let db = Db::open(dir.path(), options).unwrap();
    let t = db.subtable("t").unwrap();
    t.put(b"k", 0u64.to_be_bytes()).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (t, done) = (t.clone(), Arc::clone(&done));
            std::thread::spawn(move || {
                let (mut last, mut reads) = (0, 0u64);
                while !done.load(Ordering::Relaxed) || reads < 1000 {
                    let v = t.get(b"k").unwrap().expect("the key always exists");
                    let now = counter(&v);
                    assert!(now >= last, "read {now} after {last}");
                    last = now;
                    reads += 1;
                }
                last
            })
        })
        .collect();
    for i in 1..=5000u64 {
        t.put(b"k", i.to_be_bytes()).unwrap();
    }
    done.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    let stats = &db.subtable_stats()[0];
    assert_eq!(stats.index_keys, 1);
    assert!(
        stats.index_versions < 100,
        "{} versions of one key kept with no snapshot open",
        stats.index_versions
    );
}

#[test]
fn snapshots_and_scans_keep_the_versions_they_see() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), DbOptions::small()).unwrap();
    let t = db.subtable("t").unwrap();
    for k in 0..10u8 {
        t.put([k], 0u64.to_be_bytes()).unwrap();
    }
    let snap = db.snapshot();
    let scan = snap.scan::<&[u8]>(&t, ..).unwrap();
    let rev = snap.scan_rev::<&[u8]>(&t, ..).unwrap();
    for round in 1..=50u64 {
        for k in 0..10u8 {
            t.put([k], round.to_be_bytes()).unwrap();
        }
    }
    for k in 0..10u8 {
        assert_eq!(counter(&snap.get(&t, [k]).unwrap().unwrap()), 0);
        assert_eq!(counter(&t.get([k]).unwrap().unwrap()), 50);
    }
    // The scans hold registrations of their own.
    drop(snap);
    for round in 51..=100u64 {
        for k in 0..10u8 {
            t.put([k], round.to_be_bytes()).unwrap();
        }
    }
    for (scan, reverse) in [(scan, false), (rev, true)] {
        let mut seen: Vec<(Vec<u8>, u64)> = scan
            .map(|e| {
                let e = e.unwrap();
                (e.key().to_vec(), counter(e.value()))
            })
            .collect();
        if reverse {
            seen.reverse();
        }
        let want: Vec<(Vec<u8>, u64)> = (0..10u8).map(|k| (vec![k], 0)).collect();
        assert_eq!(seen, want);
    }
    // With nothing registered any more, the next version of each key drops all but the
    // one before it (which a read that started before it may still want).
    for k in 0..10u8 {
        t.put([k], 101u64.to_be_bytes()).unwrap();
    }
    let stats = &db.subtable_stats()[0];
    assert_eq!(stats.index_versions, 2 * stats.index_keys, "{stats:?}");
}
