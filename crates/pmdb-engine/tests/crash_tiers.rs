//! The crash world over the tiers: batch workloads whose memtables merge into the global
//! index and are compacted to SST files (`Db::compact` between batches), crashed at every
//! crash point of the pool and of the simulated SST directory together — memtable to
//! global index, global index to level 1, level compactions, manifest writes, CURRENT
//! switches and the batch free of PM. After recovery every acknowledged batch is present,
//! the one in flight all there or not at all, nothing is duplicated or resurrected, scans
//! agree with gets both ways, and once compacted again the pool holds no zone beyond the
//! catalog's and the active memtables'.

use std::collections::BTreeMap;
use std::sync::Arc;

use pmdb_engine::{Db, DbOptions, WriteBatch, WriteOptions};
use pmdb_pmem::{AckLog, CrashTest, Pool};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const SUBTABLES: [&str; 2] = ["alpha", "beta"];
const KEYS: u32 = 60;

type Model = BTreeMap<(usize, Vec<u8>), Vec<u8>>;

#[derive(Clone, Debug)]
struct Batch {
    ops: Vec<(usize, Vec<u8>, Option<Vec<u8>>)>,
}

/// Small memtables, generations and levels, so a few hundred batches cross every tier.
fn options() -> DbOptions {
    DbOptions {
        memtable_size: 32 << 10,
        gi_budget: 64 << 10,
        l1_target: 8 << 10,
        level_ratio: 2,
        target_file_size: 4 << 10,
        block_size: 1 << 10,
        ..DbOptions::small().manual_tiering()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:03}").into_bytes()
}

fn random_batch(rng: &mut SmallRng, id: u64) -> Batch {
    let n = rng.random_range(1..=4);
    let ops = (0..n)
        .map(|j| {
            let sub = rng.random_range(0..SUBTABLES.len());
            let k = key(rng.random_range(0..KEYS));
            if rng.random_bool(0.15) {
                (sub, k, None)
            } else {
                let mut v = format!("batch{id}/op{j}/").into_bytes();
                v.resize(v.len() + rng.random_range(0..400), b'a' + (id % 26) as u8);
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
            if id % 40 == 39 {
                db.compact().unwrap();
            }
        }
        let stats = db.tier_stats();
        assert!(
            stats.merges > 0 && stats.flushes > 0 && stats.compactions > 0,
            "the workload must cross every tier: {stats:?}"
        );
    }
}

/// The database's contents by forward scan, checked against reverse scans and gets.
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
            .map_err(|e| format!("{name}: scan: {e}"))?;
        let mut rev: Vec<(Vec<u8>, Vec<u8>)> = sub
            .scan_rev::<&[u8]>(..)
            .map(|e| e.map(|e| e.to_owned()))
            .collect::<Result<_, _>>()
            .map_err(|e| format!("{name}: reverse scan: {e}"))?;
        rev.reverse();
        if fwd != rev {
            return Err(format!("{name}: forward and reverse scans differ"));
        }
        for k in (0..KEYS).map(key) {
            let got = sub.get_owned(&k).map_err(|e| format!("{name}: get: {e}"))?;
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
    let db =
        Db::open_pool(Arc::clone(pool), options()).map_err(|e| format!("open after crash: {e}"))?;
    if !db.recovery_stats().damage.is_empty() {
        return Err(format!("damage reported: {:?}", db.recovery_stats().damage));
    }
    let mut before = Model::new();
    acked.iter().for_each(|b| apply(&mut before, b));
    let mut after = before.clone();
    if let Some(b) = in_flight {
        apply(&mut after, b);
    }
    let got = contents(&db)?;
    if got != before && got != after {
        let wrong: Vec<_> = after
            .iter()
            .filter(|(k, v)| got.get(*k) != Some(v) && before.get(*k) != got.get(*k))
            .map(|(k, _)| k)
            .take(3)
            .collect();
        return Err(format!(
            "state after recovery is neither the acknowledged prefix nor it plus the batch in flight ({} acked batches; e.g. {wrong:?})",
            acked.len()
        ));
    }
    // Everything compacts down again, and then PM holds only the catalog and the active
    // memtables: no zone of a flushed memtable is left behind.
    db.compact()
        .map_err(|e| format!("compaction after recovery: {e}"))?;
    if contents(&db)? != got {
        return Err("compaction after recovery changed the contents".into());
    }
    let zone = db.device().zone_size;
    let active: u64 = db
        .subtable_stats()
        .iter()
        .map(|s| s.memtables as u64 * (db.options().memtable_size / zone + 2))
        .sum();
    let owned = db.device().alloc.owned_zones;
    let catalog = db.recovery_stats().catalog_zones as u64;
    if owned > catalog + active {
        return Err(format!(
            "{owned} zones owned after compaction, beyond the catalog's {catalog} and the active memtables' {active}: leaked"
        ));
    }
    Ok(())
}

fn run(seed: u64, batches: u64, options: DbOptions) -> Result<usize, String> {
    CrashTest::new(seed)
        .options(options.pool.clone())
        .max_points(1300)
        .run(workload(seed, batches, options), check)
        .map(|r| r.images)
        .map_err(|f| f.to_string())
}

// Two tests so the halves run in parallel; together over 10,000 crash points.
#[test]
fn the_tiers_survive_every_crash_point_seeds_1_to_6() {
    let images: usize = (1..=6).map(|s| run(s, 400, options()).unwrap()).sum();
    assert!(images >= 5000, "{images} crash images");
}

#[test]
fn the_tiers_survive_every_crash_point_seeds_7_to_12() {
    let images: usize = (7..=12).map(|s| run(s, 400, options()).unwrap()).sum();
    assert!(images >= 5000, "{images} crash images");
}

#[test]
fn crash_world_catches_pm_freed_before_the_manifest_edit() {
    let options = DbOptions {
        broken_free_before_manifest: true,
        ..options()
    };
    let failure =
        run(21, 240, options).expect_err("freeing PM before the SSTs are live must lose data");
    assert!(
        failure.contains("neither the acknowledged prefix"),
        "{failure}"
    );
}
