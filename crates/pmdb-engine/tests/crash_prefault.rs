//! Crash simulation of zone turnover with the prefaulter on: small zones and memtables,
//! so the workload takes a new zone every few writes, a new memtable every other zone,
//! and grows the pool by extents ahead of need. At every fence the crash image must
//! recover with the acknowledged writes (the one in flight done or not), no damage, and
//! no zone lost or leaked: every zone is free or held by the catalog or by a memtable
//! the catalog names.

use std::collections::BTreeMap;
use std::sync::Arc;

use pmdb_engine::{Db, DbOptions};
use pmdb_pmem::{AckLog, CrashTest, Pool};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
/// An acknowledged put: key and value.
type Put = (Vec<u8>, Vec<u8>);

/// 32 KiB zones, 16 to an extent, memtables of two zones, three spares.
fn options() -> DbOptions {
    DbOptions {
        memtable_size: 64 << 10,
        prefault_zones: 3,
        ..DbOptions::small().manual_tiering()
    }
}

fn workload(seed: u64, puts: u32) -> impl Fn(&Arc<Pool>, &mut AckLog<Put>) {
    move |pool, acks| {
        let db = Db::open_pool(Arc::clone(pool), options()).unwrap();
        let t = db.subtable("t").unwrap();
        let mut rng = SmallRng::seed_from_u64(seed);
        for i in 0..puts {
            let key = format!("key{:02}", rng.random_range(0..50)).into_bytes();
            let mut value = format!("put{i}/").into_bytes();
            value.resize(rng.random_range(500..3000), b'a' + (i % 26) as u8);
            t.put(&key, &value).unwrap();
            acks.ack((key, value));
        }
        let alloc = db.device().alloc;
        assert!(alloc.extents > 1, "the workload must cover pool growth");
        assert!(
            alloc.free_zones >= 3,
            "spares kept ahead: {} free zones",
            alloc.free_zones
        );
    }
}

fn check(pool: &Arc<Pool>, acked: &[&Put], in_flight: Option<&Put>) -> Result<(), String> {
    let db =
        Db::open_pool(Arc::clone(pool), options()).map_err(|e| format!("open after crash: {e}"))?;
    if !db.recovery_stats().damage.is_empty() {
        return Err(format!("damage reported: {:?}", db.recovery_stats().damage));
    }
    let alloc = db.device().alloc;
    if alloc.free_zones + alloc.owned_zones != alloc.zones || alloc.reserved_zones != 0 {
        return Err(format!("zones neither free nor owned: {alloc:?}"));
    }
    let memtables: usize = db.subtable_stats().iter().map(|s| s.memtables).sum();
    if alloc.live_owners != 1 + memtables as u64 {
        return Err(format!(
            "{} live owners, but only the catalog and {memtables} memtables are reachable",
            alloc.live_owners
        ));
    }
    let mut before = Model::new();
    for (k, v) in acked {
        before.insert(k.clone(), v.clone());
    }
    let mut after = before.clone();
    if let Some((k, v)) = in_flight {
        after.insert(k.clone(), v.clone());
    }
    let got: Model = match db.existing_subtable("t") {
        Ok(t) => t
            .scan::<&[u8]>(..)
            .map(|e| e.map(|e| e.to_owned()))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?,
        Err(_) => Model::new(),
    };
    if got != before && got != after {
        return Err(format!(
            "recovered {} keys: neither the {} acknowledged puts nor them and the one in flight",
            got.len(),
            acked.len()
        ));
    }
    // The recovered database goes on taking zones from where the crash left off.
    let t = db.subtable("t").map_err(|e| e.to_string())?;
    for i in 0..8u32 {
        t.put(format!("after{i}"), vec![b'z'; 2500])
            .map_err(|e| format!("write after recovery: {e}"))?;
    }
    Ok(())
}

#[test]
fn zone_turnover_with_spares_survives_every_crash_point() {
    let mut points = 0;
    for seed in [1u64, 2] {
        let report = CrashTest::new(seed)
            .options(options().pool)
            .max_points(3000)
            .run(workload(seed, 400), check)
            .unwrap_or_else(|f| panic!("{f}"));
        assert_eq!(
            report.points as u64,
            report.fences + 1,
            "every fence tested"
        );
        points += report.points;
    }
    assert!(points >= 1000, "only {points} crash points");
}
