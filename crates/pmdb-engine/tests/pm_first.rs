//! PM first: merged memtables stay in the global index, sealed generations included, and
//! are read from PM until the subtables hold more PM than the flush watermark; then the
//! coldest generations go to SSTs first, whatever their subtable, until they hold less,
//! and reads of what stayed in PM touch no SST. The background flusher does the work, as
//! in any database; each test waits for it to have nothing left to do.

use std::time::{Duration, Instant};

use pmdb_engine::{Db, DbOptions, ReadMode, SubtableStats};

const VALUE: usize = 1000;

/// 32 KiB zones, 128 KiB memtables, generations sealed at 512 KiB, a pool of 16 MiB.
fn options() -> DbOptions {
    DbOptions {
        read_mode: ReadMode::Pread,
        ..DbOptions::small().pool_max(16 << 20)
    }
}

fn value(key: &str) -> Vec<u8> {
    key.as_bytes().repeat(VALUE / key.len() + 1)[..VALUE].to_vec()
}

fn key(prefix: &str, i: usize) -> String {
    format!("{prefix}{i:06}")
}

/// Writes `n` keys named `prefix` and a number, in the order of their numbers.
fn write(db: &Db, subtable: &str, prefix: &str, n: usize) {
    let t = db.subtable(subtable).unwrap();
    for i in 0..n {
        let k = key(prefix, i);
        t.put(&k, value(&k)).unwrap();
    }
}

fn check(db: &Db, subtable: &str, prefix: &str, keys: std::ops::Range<usize>) {
    let t = db.subtable(subtable).unwrap();
    for i in keys {
        let k = key(prefix, i);
        let got = t.get(&k).unwrap();
        assert_eq!(got.as_deref(), Some(&value(&k)[..]), "{subtable}: {k}");
    }
}

/// The keys a scan of the whole subtable returns, each with its value checked.
fn scanned(db: &Db, subtable: &str) -> Vec<String> {
    let t = db.subtable(subtable).unwrap();
    t.scan::<&[u8]>(..)
        .map(|e| {
            let (k, v) = e.unwrap().into_parts();
            let k = String::from_utf8(k).unwrap();
            assert_eq!(v, value(&k), "{subtable}: {k}");
            k
        })
        .collect()
}

fn keys(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| key(prefix, i)).collect()
}

fn stats(db: &Db, subtable: &str) -> SubtableStats {
    db.subtable_stats()
        .into_iter()
        .find(|s| s.name == subtable)
        .unwrap()
}

/// Waits until the flusher has nothing left to do: no frozen memtable waits to be merged
/// and the subtables hold less PM than the watermark (or nothing is left to flush).
fn settle(db: &Db) {
    let start = Instant::now();
    loop {
        let all = db.subtable_stats();
        let merged = all.iter().all(|s| s.memtables == 1);
        let held: u64 = all.iter().map(SubtableStats::pm_bytes).sum();
        let flushable = all.iter().any(|s| s.gi_generations > 0);
        if merged && (held < db.options().flush_watermark() || !flushable) {
            // One more round of the flusher, for a flush under way.
            std::thread::sleep(Duration::from_millis(300));
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the flusher did not settle: {all:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn data_below_the_watermark_stays_in_pm_across_sealed_generations_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    let o = db.options();
    let cap = 16 << 20;
    assert_eq!(
        o.flush_watermark(),
        cap - o.gi_budget - (o.max_frozen_memtables as u64 + 1) * o.memtable_size,
        "the default watermark leaves a generation and the memtables room below the cap"
    );
    // About 4.3 MiB of records: eight generations' worth, a third of the watermark.
    const KEYS: usize = 4000;
    write(&db, "t", "k", KEYS);
    settle(&db);
    let s = stats(&db, "t");
    assert!(s.sealed_generations >= 4, "{s:?}");
    assert_eq!(
        s.sst_bytes(),
        0,
        "nothing flushed below the watermark: {s:?}"
    );
    assert_eq!(db.tier_stats().flushes, 0);
    assert!(s.pm_bytes() > (KEYS * VALUE) as u64, "{s:?}");
    check(&db, "t", "k", 0..KEYS);
    assert_eq!(scanned(&db, "t"), keys("k", KEYS));

    drop(db);
    let db = Db::open(dir.path(), options()).unwrap();
    let after = stats(&db, "t");
    assert_eq!(
        (after.gi_generations, after.sst_bytes()),
        (s.gi_generations, 0),
        "recovery rebuilds every generation in PM: {after:?}"
    );
    check(&db, "t", "k", 0..KEYS);

    // An explicit compaction sends everything below the active memtable to SSTs,
    // watermark or not.
    db.compact().unwrap();
    let s = stats(&db, "t");
    assert_eq!((s.gi_generations, s.memtables), (0, 1), "{s:?}");
    assert!(s.sst_bytes() > 0);
    check(&db, "t", "k", 0..KEYS);
}

#[test]
fn past_the_watermark_the_coldest_generations_go_first_and_pm_reads_touch_no_sst() {
    const WATERMARK: u64 = 3 << 20;
    const COLD: usize = 1500;
    const HOT: usize = 4000;
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        dir.path(),
        DbOptions {
            flush_watermark: Some(WATERMARK),
            ..options()
        },
    )
    .unwrap();
    write(&db, "cold", "c", COLD);
    write(&db, "hot", "h", HOT);
    settle(&db);

    let (cold, hot) = (stats(&db, "cold"), stats(&db, "hot"));
    let held = cold.pm_bytes() + hot.pm_bytes();
    assert!(
        held < WATERMARK,
        "flushed until under the watermark: {held}"
    );
    assert!(db.tier_stats().flushes > 0);
    // The cold subtable's generations are all older than the hot one's first.
    assert_eq!(cold.gi_generations, 0, "{cold:?}");
    assert!(cold.sst_bytes() > 0, "{cold:?}");
    // The hot one lost its oldest generations, and kept the rest in PM.
    assert!(hot.sst_bytes() > 0 && hot.gi_generations > 0, "{hot:?}");
    assert!(
        held > WATERMARK - 2 * db.options().gi_budget,
        "no more flushed than the watermark asks: {held}"
    );

    // The newest hot keys are in PM: reading them fills no block of the cache.
    let cached = db.tier_stats().block_cache_bytes;
    check(&db, "hot", "h", HOT - HOT / 4..HOT);
    assert_eq!(db.tier_stats().block_cache_bytes, cached);
    // The oldest were flushed: reading them does.
    check(&db, "hot", "h", 0..HOT / 4);
    check(&db, "cold", "c", 0..COLD);
    assert!(db.tier_stats().block_cache_bytes > cached);
    assert_eq!(scanned(&db, "hot"), keys("h", HOT));
}
