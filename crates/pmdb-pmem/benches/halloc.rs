//! Criterion benchmarks of halloc: zone allocation + commit, and the recovery scan of a
//! pool with over a million owner words. Pools live on /dev/shm (Memory backend) when it
//! is tmpfs, else in the system temp directory.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use pmdb_pmem::{Pool, PoolOptions};

fn bench_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    }
}

fn zone_alloc_commit(c: &mut Criterion) {
    let dir = bench_dir();
    let pool = Pool::create(dir.path(), &PoolOptions::default()).unwrap();
    c.bench_function("halloc/zone alloc + commit", |b| {
        b.iter_custom(|iters| {
            let mut owner = pool.create_owner().unwrap();
            let mut elapsed = Duration::ZERO;
            for i in 0..iters {
                let t = Instant::now();
                let off = pool.alloc_zone(owner).unwrap().commit().unwrap();
                elapsed += t.elapsed();
                black_box(off);
                // Recycle (untimed) so the pool stays within its first extent.
                if i % 16 == 15 {
                    pool.release_owner(owner).unwrap();
                    owner = pool.create_owner().unwrap();
                }
            }
            pool.release_owner(owner).unwrap();
            elapsed
        })
    });
}

/// A pool of 2^20 zones of 4 KiB (sparse: only owner words are ever written), half of
/// them committed to 1,024 owners, then reopened: header checks, registry scan and the
/// scan of all 1,048,576 owner words.
fn recovery_scan(c: &mut Criterion) {
    const ZONES: u32 = 1 << 20;
    let dir = bench_dir();
    let options = PoolOptions {
        zone_size: Some(4096),
        zones_per_extent: ZONES,
        max_extents: Some(1),
        ..PoolOptions::default()
    };
    {
        let pool = Pool::create(dir.path(), &options).unwrap();
        for _ in 0..1024 {
            let owner = pool.create_owner().unwrap();
            for _ in 0..ZONES / 2048 {
                pool.alloc_zone(owner).unwrap().commit().unwrap();
            }
        }
    }
    let mut group = c.benchmark_group("halloc");
    group.sample_size(20);
    group.bench_function("recovery scan (1,048,576 owner words)", |b| {
        b.iter(|| {
            let pool = Pool::open(dir.path(), &PoolOptions::default()).unwrap();
            assert_eq!(pool.recovery_report().words_scanned, ZONES as u64);
            black_box(pool.recovery_report().owned_zones)
        })
    });
    group.finish();
}

criterion_group!(benches, zone_alloc_commit, recovery_scan);
criterion_main!(benches);
