//! Crash simulation of batches larger than a memtable: each lands whole in one memtable
//! of its subtable, which grows past `memtable_size` for it. Crashed at every fence, the
//! recovered database holds every acknowledged batch and the one in flight whole or not
//! at all, a read-only open sees the same, and the database takes new writes after it.

mod common;

use std::sync::Arc;

use common::{Batch, Shape};
use pmdb_engine::DbOptions;
use pmdb_pmem::{AckLog, CrashTest, Pool};

/// One subtable, so a batch is one part: up to 60 values of up to 3.5 KB, about 100 KiB
/// on average, against 64 KiB memtables.
const SHAPE: Shape = Shape {
    subtables: &["alpha"],
    keys: 200,
    max_ops: 60,
    deletes: 0.1,
    max_pad: 3500,
};

fn options() -> DbOptions {
    let mut options = DbOptions {
        memtable_size: 64 << 10,
        ..DbOptions::small().manual_tiering()
    };
    options.pool.max_extents = Some(16);
    options
}

fn run(seed: u64, options: DbOptions) -> Result<usize, pmdb_pmem::CrashFailure> {
    assert!(
        acks_sizes(seed, 24)
            .iter()
            .any(|&b| b > options.memtable_size),
        "the workload must hold batches larger than a memtable"
    );
    let workload = |pool: &Arc<Pool>, acks: &mut AckLog<Batch>| {
        SHAPE.write_batches(pool, options.clone(), seed, 24, acks, |_, _| {});
    };
    let check = |pool: &Arc<Pool>, acked: &[&Batch], in_flight: Option<&Batch>| {
        let (db, _) = SHAPE.recovered(pool, &options, acked, in_flight, true)?;
        let alpha = db.subtable("alpha").map_err(|e| e.to_string())?;
        alpha
            .put(b"after", b"recovery")
            .map_err(|e| format!("write after recovery: {e}"))?;
        Ok(())
    };
    let report = CrashTest::new(seed)
        .options(options.pool.clone())
        .max_points(500)
        .run(workload, check)?;
    Ok(report.images)
}

/// The stored size of each batch the workload of `seed` writes (values and keys).
fn acks_sizes(seed: u64, batches: u64) -> Vec<u64> {
    use rand::SeedableRng;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    (0..batches)
        .map(|id| {
            SHAPE
                .random_batch(&mut rng, id)
                .ops
                .iter()
                .map(|(_, k, v)| (k.len() + v.as_ref().map_or(0, Vec::len)) as u64)
                .sum()
        })
        .collect()
}

#[test]
fn batches_larger_than_a_memtable_survive_every_crash_point() {
    let images: usize = (1..=6).map(|s| run(s, options()).unwrap()).sum();
    assert!(images >= 300, "{images} crash images");
}

#[test]
fn crash_test_of_large_batches_catches_heads_published_before_chunks_persist() {
    let options = DbOptions {
        broken_publish_before_persist: true,
        ..options()
    };
    let failure = run(7, options).expect_err("publishing before persisting must lose data");
    assert!(failure.to_string().contains("seed 7"), "{failure}");
}
