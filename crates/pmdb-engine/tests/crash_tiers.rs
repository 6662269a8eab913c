//! The crash world over the tiers: batch workloads whose memtables merge into the global
//! index and are compacted to SST files (`Db::compact` between batches), crashed at every
//! crash point of the pool and of the simulated SST directory together — memtable to
//! global index, global index to level 1, level compactions, manifest writes, CURRENT
//! switches and the batch free of PM. After recovery every acknowledged batch is present,
//! the one in flight all there or not at all, nothing is duplicated or resurrected, scans
//! agree with gets both ways, and once compacted again the pool holds no zone beyond the
//! catalog's and the active memtables'.

mod common;

use std::sync::Arc;

use common::{Batch, Shape};
use pmdb_engine::DbOptions;
use pmdb_pmem::{AckLog, CrashTest, Pool};

const SHAPE: Shape = Shape {
    subtables: &["alpha", "beta"],
    keys: 60,
    max_ops: 4,
    deletes: 0.15,
    max_pad: 400,
};

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

fn workload(
    seed: u64,
    batches: u64,
    options: DbOptions,
) -> impl Fn(&Arc<Pool>, &mut AckLog<Batch>) {
    move |pool, acks| {
        let db = SHAPE.write_batches(pool, options.clone(), seed, batches, acks, |db, id| {
            if id % 40 == 39 {
                db.compact().unwrap();
            }
        });
        let stats = db.tier_stats();
        assert!(
            stats.merges > 0 && stats.flushes > 0 && stats.compactions > 0,
            "the workload must cross every tier: {stats:?}"
        );
    }
}

fn check(pool: &Arc<Pool>, acked: &[&Batch], in_flight: Option<&Batch>) -> Result<(), String> {
    let (db, got) = SHAPE.recovered(pool, &options(), acked, in_flight, false)?;
    // Everything compacts down again, and then PM holds only the catalog and the active
    // memtables: no zone of a flushed memtable is left behind.
    db.compact()
        .map_err(|e| format!("compaction after recovery: {e}"))?;
    if SHAPE.contents(&db)? != got {
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
