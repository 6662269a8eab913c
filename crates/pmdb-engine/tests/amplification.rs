//! Write and space amplification as `Db::amplification` and `Db::live_bytes` report
//! them: committed bytes are counted once whether they are in PM or flushed, the totals
//! flushes and compactions wrote survive reopening (each open starts a fresh manifest),
//! and overwrites show in the space held but not in the live bytes.

use pmdb_engine::{Amplification, Db, DbOptions};

const KEYS: u32 = 400;
const VALUE: usize = 200;
/// A record as PM stores it (docs/format.md): 16-byte header, key, value, padding to 8.
const RECORD: u64 = (16 + 8 + VALUE as u64).next_multiple_of(8);
/// Key and value bytes of one key's newest version.
const LIVE_PER_KEY: u64 = 8 + VALUE as u64;

/// Small levels, so a few rounds of overwrites reach level 2 by real compactions.
fn options() -> DbOptions {
    DbOptions {
        l1_target: 32 << 10,
        target_file_size: 16 << 10,
        ..DbOptions::small().manual_tiering().pool_max(8 << 20)
    }
}

/// One round: every key set to a value of `VALUE` bytes naming the round.
fn write_round(db: &Db, round: u32) {
    let t = db.subtable("t").unwrap();
    for i in 0..KEYS {
        let value = format!("{round}:{i}:").into_bytes();
        let mut v = value.repeat(VALUE / value.len() + 1);
        v.truncate(VALUE);
        t.put(format!("key{i:05}"), v).unwrap();
    }
}

/// The totals that must survive a reopen.
fn totals(a: &Amplification) -> (u64, u64, u64, u64) {
    (
        a.committed_bytes,
        a.flushed_bytes,
        a.flush_bytes_written,
        a.compaction_bytes_written,
    )
}

#[test]
fn totals_survive_reopen_and_overwrites_raise_the_space_held() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    for round in 0..4 {
        write_round(&db, round);
    }
    let a = db.amplification();
    assert_eq!(a.committed_bytes, 4 * u64::from(KEYS) * RECORD, "{a:?}");
    assert_eq!((a.flushed_bytes, a.sst_bytes_written()), (0, 0), "{a:?}");
    assert_eq!(a.write_amp(), Some(1.0));
    assert_eq!(a.space_amp(), None, "live bytes not measured");
    let mut calls = Vec::new();
    let live = db
        .live_bytes(|keys, bytes| calls.push((keys, bytes)))
        .unwrap();
    assert_eq!(live, u64::from(KEYS) * LIVE_PER_KEY);
    assert_eq!(calls.last(), Some(&(u64::from(KEYS), live)));
    let measured = Amplification {
        live_bytes: Some(live),
        ..a.clone()
    };
    assert!(measured.space_amp().unwrap() > 1.0, "{measured:?}");

    // Recovery counts what is in PM as the commits did.
    drop(db);
    let db = Db::open(dir.path(), options()).unwrap();
    assert_eq!(totals(&db.amplification()), totals(&a));

    db.compact().unwrap();
    let a = db.amplification();
    assert_eq!(a.committed_bytes, 4 * u64::from(KEYS) * RECORD, "{a:?}");
    assert!(a.flushed_bytes > 0 && a.flush_bytes_written > 0, "{a:?}");
    assert_eq!(a.sst_bytes_written(), db.tier_stats().sst_bytes_written);
    assert!(a.write_amp().unwrap() > 1.0, "{a:?}");
    assert!(a.sst_bytes_live > 0);
    assert_eq!(db.live_bytes(|_, _| ()).unwrap(), live);

    // Each open writes a fresh manifest, which carries the totals.
    drop(db);
    for _ in 0..3 {
        drop(db_reopened(&dir, &a));
    }

    // Overwrites: the bytes held grow, the live bytes do not.
    let db = Db::open(dir.path(), options()).unwrap();
    let held = |a: &Amplification| a.pm_bytes_in_use + a.sst_bytes_live;
    let before = db.amplification();
    for round in 4..8 {
        write_round(&db, round);
    }
    let after = db.amplification();
    assert_eq!(
        after.committed_bytes - before.committed_bytes,
        4 * u64::from(KEYS) * RECORD
    );
    assert!(held(&after) > held(&before), "{before:?} then {after:?}");
    assert_eq!(db.live_bytes(|_, _| ()).unwrap(), live);

    db.compact().unwrap();
    write_round(&db, 8);
    db.compact().unwrap();
    let a = db.amplification();
    assert!(a.compaction_bytes_written > 0, "{a:?}");
    assert!(a.flushed_bytes > before.flushed_bytes, "{a:?}");
    assert!(
        a.write_amp().unwrap() > after.write_amp().unwrap(),
        "{after:?} then {a:?}"
    );
    drop(db);
    drop(db_reopened(&dir, &a));

    // A read-only open reports the same totals.
    let db = Db::open_read_only(dir.path(), options()).unwrap();
    assert_eq!(totals(&db.amplification()), totals(&a));
}

/// The database reopened, its totals checked against `a`'s.
fn db_reopened(dir: &tempfile::TempDir, a: &Amplification) -> Db {
    let db = Db::open(dir.path(), options()).unwrap();
    let again = db.amplification();
    assert_eq!(totals(&again), totals(a));
    assert_eq!(again.sst_bytes_live, a.sst_bytes_live);
    db
}
