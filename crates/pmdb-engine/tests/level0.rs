//! Level 0: each flushed generation becomes one SST file of level 0, merged with
//! nothing, so files there overlap and a read must take the newest version among them
//! (tombstones included) before it looks deeper. Checked against a model after rounds of
//! puts and deletes flushed by the background flusher (no compaction thread, so level 0
//! keeps every file), after the merge of level 0 into level 1, and after a reopen.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use pmdb_engine::{Db, DbOptions};

const KEYS: u64 = 1500;
const ROUNDS: u64 = 6;

/// Every generation flushed as soon as the flusher sees it; level 0 never compacted by a
/// thread.
fn options() -> DbOptions {
    DbOptions {
        flush_watermark: Some(0),
        compaction_threads: 0,
        l0_compaction_trigger: 1000,
        ..DbOptions::small().pool_max(16 << 20)
    }
}

/// A well-mixed function of `n` (splitmix64).
fn mix(n: u64) -> u64 {
    let mut z = n.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn key(k: u64) -> Vec<u8> {
    format!("key{k:06}").into_bytes()
}

/// Writes a round: most keys rewritten, some deleted, in a mixed order.
fn round(db: &Db, r: u64, model: &mut BTreeMap<Vec<u8>, Vec<u8>>) {
    let t = db.subtable("t").unwrap();
    for i in 0..KEYS {
        let k = mix(r * KEYS + i) % KEYS;
        let roll = mix(k ^ (r << 32)) % 10;
        if r > 0 && roll < 2 {
            t.delete(key(k)).unwrap();
            model.remove(&key(k));
        } else {
            let v = format!("round {r} key {k} ").repeat(20).into_bytes();
            t.put(key(k), &v).unwrap();
            model.insert(key(k), v);
        }
    }
}

/// Waits until every frozen memtable is merged and every generation flushed.
fn settle(db: &Db) {
    let start = Instant::now();
    loop {
        let s = &db.subtable_stats()[0];
        if s.memtables == 1 && s.gi_generations == 0 {
            return;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{s:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, when: &str) {
    let t = db.subtable("t").unwrap();
    for k in 0..KEYS {
        let got = t.get(key(k)).unwrap();
        let text = |v: Option<&[u8]>| v.map(|v| String::from_utf8_lossy(v).into_owned());
        assert_eq!(
            text(got.as_deref()),
            text(model.get(&key(k)).map(Vec::as_slice)),
            "{when}: key {k}"
        );
    }
    let scanned: Vec<(Vec<u8>, Vec<u8>)> = t
        .scan::<&[u8]>(..)
        .map(|e| e.unwrap().into_parts())
        .collect();
    let expected: Vec<(Vec<u8>, Vec<u8>)> =
        model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert!(
        scanned == expected,
        "{when}: the scan differs from the model"
    );
}

/// Files of level `level` of subtable `t`.
fn files(db: &Db, level: usize) -> usize {
    db.subtable_stats()[0].levels.get(level).map_or(0, |l| l.0)
}

#[test]
fn overlapping_level0_files_read_newest_first_and_merge_into_level1() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    let mut model = BTreeMap::new();
    for r in 0..ROUNDS {
        round(&db, r, &mut model);
        settle(&db);
    }
    let flushed = files(&db, 0);
    assert!(flushed >= 4, "{:?}", db.subtable_stats());
    assert_eq!(files(&db, 1), 0, "nothing merged into level 1 by a flush");
    assert_eq!(db.tier_stats().compactions, 0);
    check(&db, &model, "level 0 alone");

    drop(db);
    let db = Db::open(dir.path(), options()).unwrap();
    assert_eq!(files(&db, 0), flushed);
    check(&db, &model, "level 0 after a reopen");

    db.compact().unwrap();
    assert_eq!(files(&db, 0), 0, "{:?}", db.subtable_stats());
    assert!(files(&db, 1) > 0);
    check(&db, &model, "level 0 merged into level 1");

    // Rounds over level 1: level 0 files again on top, tombstones hiding what is below.
    for r in ROUNDS..ROUNDS + 3 {
        round(&db, r, &mut model);
        settle(&db);
    }
    assert!(files(&db, 0) >= 2 && files(&db, 1) > 0);
    check(&db, &model, "level 0 over level 1");
    drop(db);
    let db = Db::open(dir.path(), options()).unwrap();
    check(&db, &model, "level 0 over level 1 after a reopen");
}

#[test]
fn a_compaction_thread_merges_level0_once_it_holds_the_trigger() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        dir.path(),
        DbOptions {
            compaction_threads: 1,
            l0_compaction_trigger: 2,
            ..options()
        },
    )
    .unwrap();
    let mut model = BTreeMap::new();
    for r in 0..ROUNDS {
        round(&db, r, &mut model);
        settle(&db);
    }
    let start = Instant::now();
    while files(&db, 0) >= 2 {
        assert!(start.elapsed() < Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(db.tier_stats().compactions > 0 && files(&db, 1) > 0);
    check(&db, &model, "after the compaction thread");
}
