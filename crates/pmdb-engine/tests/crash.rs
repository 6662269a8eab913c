//! Crash simulation of the engine: random multi-subtable batch workloads crashed at every
//! fence. After recovery every acknowledged batch is present, the batch in flight is all
//! there or not at all, scans are ordered both ways, sequence numbers only grow, a
//! read-only open (recovery in DRAM alone) sees what the writable one does, and the
//! recovered database accepts writes that survive a second crash.

mod common;

use std::sync::Arc;

use common::{Batch, Shape};
use pmdb_engine::{Db, DbOptions, WriteBatch, WriteOptions};
use pmdb_pmem::{AckLog, CrashTest, Pool};

const SHAPE: Shape = Shape {
    subtables: &["alpha", "beta", "gamma"],
    keys: 40,
    max_ops: 5,
    deletes: 0.2,
    max_pad: 700,
};

/// Small zones and memtables, so the workloads cross zones and freeze memtables.
fn options() -> DbOptions {
    DbOptions {
        memtable_size: 64 << 10,
        ..DbOptions::small().manual_tiering()
    }
}

fn workload(
    seed: u64,
    batches: u64,
    options: DbOptions,
) -> impl Fn(&Arc<Pool>, &mut AckLog<Batch>) {
    move |pool, acks| {
        let db = SHAPE.write_batches(pool, options.clone(), seed, batches, acks, |_, _| {});
        if batches >= 300 {
            let frozen = db.subtable_stats().iter().any(|s| s.memtables > 1);
            assert!(frozen, "the workload must cover memtable freezes");
        }
    }
}

fn check(pool: &Arc<Pool>, acked: &[&Batch], in_flight: Option<&Batch>) -> Result<(), String> {
    let (db, _) = SHAPE.recovered(pool, &options(), acked, in_flight, true)?;
    let ops: u64 = acked.iter().map(|b| b.ops.len() as u64).sum();
    let last = db.last_seq();
    if last < ops {
        return Err(format!(
            "last seq {last} below the {ops} acknowledged operations"
        ));
    }

    // The recovered database takes new writes, with larger seqs, that survive a crash.
    let sub = db.subtable("delta").map_err(|e| e.to_string())?;
    let alpha = db.subtable(SHAPE.subtables[0]).map_err(|e| e.to_string())?;
    let mut wb = WriteBatch::new();
    wb.put(&sub, b"after", b"recovery");
    wb.put(&alpha, b"zzz", b"last");
    db.write(wb, WriteOptions::default())
        .map_err(|e| e.to_string())?;
    if db.last_seq() <= last {
        return Err("seq did not grow after recovery".into());
    }
    let expected = SHAPE.contents(&db)?;
    drop((sub, alpha, db));
    let image = pool.crash(0x5eed).expect("simulated pool");
    let pool2 = Arc::new(Pool::open_image(&image, &options().pool).map_err(|e| e.to_string())?);
    let db2 = Db::open_pool(pool2, options()).map_err(|e| format!("second open: {e}"))?;
    if SHAPE.contents(&db2)? != expected
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
