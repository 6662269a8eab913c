//! Crash simulation of the engine: random multi-subtable batch workloads crashed at every
//! fence. After recovery every acknowledged batch is present, the batch in flight is all
//! there or not at all, scans are ordered both ways, sequence numbers only grow, a
//! read-only open (recovery in DRAM alone) sees what the writable one does, and the
//! recovered database accepts writes that survive a second crash.

use std::collections::BTreeMap;
use std::sync::Arc;

use pmdb_engine::{Db, DbError, DbOptions, WriteBatch, WriteOptions};
use pmdb_pmem::{AckLog, CrashTest, Pool};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const SUBTABLES: [&str; 3] = ["alpha", "beta", "gamma"];
const KEYS: u32 = 40;

type Model = BTreeMap<(usize, Vec<u8>), Vec<u8>>;

#[derive(Clone, Debug)]
struct Batch {
    /// (subtable index, key, Some(value) for a put, None for a delete)
    ops: Vec<(usize, Vec<u8>, Option<Vec<u8>>)>,
}

/// Small zones and memtables, so the workloads cross zones and freeze memtables.
fn options() -> DbOptions {
    DbOptions {
        memtable_size: 64 << 10,
        ..DbOptions::small().manual_tiering()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:03}").into_bytes()
}

fn random_batch(rng: &mut SmallRng, id: u64) -> Batch {
    let n = rng.random_range(1..=5);
    let ops = (0..n)
        .map(|j| {
            let sub = rng.random_range(0..SUBTABLES.len());
            let k = key(rng.random_range(0..KEYS));
            if rng.random_bool(0.2) {
                (sub, k, None)
            } else {
                let len = rng.random_range(0..700);
                let mut v = format!("batch{id}/op{j}/").into_bytes();
                v.resize(v.len() + len, b'a' + (id % 26) as u8);
                (sub, k, Some(v))
            }
        })
        .collect();
    Batch { ops }
}

fn apply(model: &mut Model, batch: &Batch) {
    for (sub, k, v) in &batch.ops {
        match v {
            Some(v) => model.insert((*sub, k.clone()), v.clone()),
            None => model.remove(&(*sub, k.clone())),
        };
    }
}

fn workload(
    seed: u64,
    batches: u64,
    options: DbOptions,
) -> impl Fn(&Arc<Pool>, &mut AckLog<Batch>) {
    move |pool, acks| {
        let db = Db::open_pool(Arc::clone(pool), options.clone()).unwrap();
        let subs: Vec<_> = SUBTABLES.iter().map(|n| db.subtable(n).unwrap()).collect();
        let mut rng = SmallRng::seed_from_u64(seed);
        for id in 0..batches {
            let batch = random_batch(&mut rng, id);
            let mut wb = WriteBatch::new();
            for (sub, k, v) in &batch.ops {
                match v {
                    Some(v) => wb.put(&subs[*sub], k, v),
                    None => wb.delete(&subs[*sub], k),
                }
            }
            db.write(wb, WriteOptions::default()).unwrap();
            acks.ack(batch);
        }
        if batches >= 300 {
            let frozen = db.subtable_stats().iter().any(|s| s.memtables > 1);
            assert!(frozen, "the workload must cover memtable freezes");
        }
    }
}

/// The database's contents, read by forward scans (checked against reverse scans and
/// point gets).
fn contents(db: &Db) -> Result<Model, String> {
    let mut out = Model::new();
    for (i, name) in SUBTABLES.iter().enumerate() {
        let Ok(sub) = db.existing_subtable(name) else {
            continue;
        };
        let fwd: Vec<(Vec<u8>, Vec<u8>)> = sub
            .scan::<&[u8]>(..)
            .map(|e| e.map(|e| e.to_owned()))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        let mut rev: Vec<(Vec<u8>, Vec<u8>)> = sub
            .scan_rev::<&[u8]>(..)
            .map(|e| e.map(|e| e.to_owned()))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        rev.reverse();
        if fwd != rev {
            return Err(format!("{name}: forward and reverse scans differ"));
        }
        if fwd.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(format!("{name}: scan out of order"));
        }
        for k in (0..KEYS).map(key) {
            let got = sub.get_owned(&k).map_err(|e| e.to_string())?;
            let scanned = fwd.iter().find(|(sk, _)| *sk == k).map(|(_, v)| v.clone());
            if got != scanned {
                return Err(format!("{name}: get and scan disagree on {k:?}"));
            }
        }
        out.extend(fwd.into_iter().map(|(k, v)| ((i, k), v)));
    }
    Ok(out)
}

fn check(pool: &Arc<Pool>, acked: &[&Batch], in_flight: Option<&Batch>) -> Result<(), String> {
    let unchanged = pool.crash(0).expect("simulated pool");
    let read_only = Pool::open_image(&unchanged, &options().pool.with_read_only())
        .map_err(|e| format!("read-only open after crash: {e}"))?;
    // Before the create completed there is no database to read; the writable open
    // creates an empty one.
    let seen_read_only = match Db::open_pool(Arc::new(read_only), options()) {
        Ok(db) => contents(&db)?,
        Err(DbError::NoDatabase { .. }) => Model::new(),
        Err(e) => return Err(format!("read-only open after crash: {e}")),
    };
    let db =
        Db::open_pool(Arc::clone(pool), options()).map_err(|e| format!("open after crash: {e}"))?;
    if !db.recovery_stats().damage.is_empty() {
        return Err(format!("damage reported: {:?}", db.recovery_stats().damage));
    }
    let mut before = Model::new();
    acked.iter().for_each(|b| apply(&mut before, b));
    let got = contents(&db)?;
    if got != seen_read_only {
        return Err("a read-only open saw other data than the writable open".into());
    }
    let mut after = before.clone();
    if let Some(b) = in_flight {
        apply(&mut after, b);
    }
    if got != before && got != after {
        let missing: Vec<_> = before
            .keys()
            .filter(|k| !got.contains_key(*k))
            .take(3)
            .collect();
        return Err(format!(
            "state after recovery is neither the acknowledged prefix nor it plus the batch in flight ({} acked batches; e.g. missing {missing:?})",
            acked.len()
        ));
    }
    let ops: u64 = acked.iter().map(|b| b.ops.len() as u64).sum();
    let last = db.last_seq();
    if last < ops {
        return Err(format!(
            "last seq {last} below the {ops} acknowledged operations"
        ));
    }

    // The recovered database takes new writes, with larger seqs, that survive a crash.
    let sub = db.subtable("delta").map_err(|e| e.to_string())?;
    let alpha = db.subtable(SUBTABLES[0]).map_err(|e| e.to_string())?;
    let mut wb = WriteBatch::new();
    wb.put(&sub, b"after", b"recovery");
    wb.put(&alpha, b"zzz", b"last");
    db.write(wb, WriteOptions::default())
        .map_err(|e| e.to_string())?;
    if db.last_seq() <= last {
        return Err("seq did not grow after recovery".into());
    }
    let expected = contents(&db)?;
    drop((sub, alpha, db));
    let image = pool.crash(0x5eed).expect("simulated pool");
    let pool2 = Arc::new(Pool::open_image(&image, &options().pool).map_err(|e| e.to_string())?);
    let db2 = Db::open_pool(pool2, options()).map_err(|e| format!("second open: {e}"))?;
    if contents(&db2)? != expected
        || db2
            .existing_subtable("delta")
            .ok()
            .and_then(|s| s.get_owned(b"after").ok().flatten())
            != Some(b"recovery".to_vec())
    {
        return Err("writes after recovery were lost by a second crash".into());
    }
    Ok(())
}

fn run(seed: u64, batches: u64) -> usize {
    let report = CrashTest::new(seed)
        .options(options().pool)
        .max_points(2000)
        .run(workload(seed, batches, options()), check)
        .unwrap_or_else(|f| panic!("{f}"));
    assert_eq!(
        report.points as u64,
        report.fences + 1,
        "every fence tested"
    );
    report.images
}

// Two tests so the two halves run in parallel; together they cover over 10,000 crash
// points.
#[test]
fn batches_survive_every_crash_point_seeds_1_to_8() {
    let images: usize = (1..=8).map(|s| run(s, 300)).sum();
    assert!(images >= 5000, "{images} crash images");
}

#[test]
fn batches_survive_every_crash_point_seeds_9_to_16() {
    let images: usize = (9..=16).map(|s| run(s, 300)).sum();
    assert!(images >= 5000, "{images} crash images");
}

#[test]
fn crash_test_catches_heads_published_before_chunks_persist() {
    let options = DbOptions {
        broken_publish_before_persist: true,
        ..options()
    };
    let failure = CrashTest::new(99)
        .options(options.pool.clone())
        .run(workload(99, 60, options), check)
        .expect_err("publishing before persisting must lose acknowledged data");
    assert!(failure.to_string().contains("seed 99"), "{failure}");
}
