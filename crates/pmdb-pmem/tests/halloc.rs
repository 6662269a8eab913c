//! The zone allocator's API contract: grants, commits, releases, owner generations,
//! reachability and statistics, across reopen.

mod common;

use common::{check_zone, pattern, pattern_len};
use pmdb_pmem::{OwnerId, PmemError, Pool, PoolOptions};

fn sim() -> Pool {
    Pool::create_sim(&PoolOptions::small()).unwrap()
}

/// Reopens a simulated pool from its persisted state (nothing unfenced survives).
fn reopen(pool: &Pool) -> Pool {
    Pool::open_image(&pool.crash(0).unwrap(), &PoolOptions::small()).unwrap()
}

#[test]
fn dropped_grant_returns_its_zone() {
    let pool = sim();
    let owner = pool.create_owner().unwrap();
    let first = pool.alloc_zone(owner).unwrap().off();
    assert_eq!(pool.alloc_stats().free_zones, 8);
    let again = pool.alloc_zone(owner).unwrap();
    assert_eq!(again.off(), first, "the dropped zone is handed out again");
    assert_eq!(pool.alloc_stats().reserved_zones, 1);
}

#[test]
fn uncommitted_zone_is_free_after_crash() {
    let pool = sim();
    let owner = pool.create_owner().unwrap();
    let grant = pool.alloc_zone(owner).unwrap();
    pool.write(grant.off(), &pattern(owner, grant.off(), 1))
        .unwrap();
    pool.persist(grant.off(), pattern_len()).unwrap();
    let image = pool.crash(0).unwrap();
    drop(grant);
    let after = Pool::open_image(&image, &PoolOptions::small()).unwrap();
    assert!(after.is_live(owner));
    assert!(after.zones_of(owner).is_empty());
    assert_eq!(after.alloc_stats().free_zones, 8);
}

#[test]
fn release_frees_every_zone_with_one_store() {
    let pool = sim();
    let owner = pool.create_owner().unwrap();
    let keep = pool.create_owner().unwrap();
    let zones: Vec<_> = (0..5)
        .map(|_| pool.alloc_zone(owner).unwrap().commit().unwrap())
        .collect();
    let kept = pool.alloc_zone(keep).unwrap().commit().unwrap();
    assert_eq!(pool.zones_of(owner), zones);
    pool.release_owner(owner).unwrap();
    assert!(!pool.is_live(owner));
    assert!(pool.zones_of(owner).is_empty());
    let after = reopen(&pool);
    assert!(!after.is_live(owner));
    assert_eq!(after.zones_of(keep), vec![kept]);
    assert_eq!(after.alloc_stats().free_zones, 7);
    assert!(matches!(
        after.release_owner(owner),
        Err(PmemError::DeadOwner { .. })
    ));
    assert!(matches!(
        after.alloc_zone(owner).map(|g| g.off()),
        Err(PmemError::DeadOwner { .. })
    ));
}

#[test]
fn reused_owner_slot_does_not_adopt_old_zones() {
    let pool = sim();
    let old = pool.create_owner().unwrap();
    let zone = pool.alloc_zone(old).unwrap().commit().unwrap();
    pool.release_owner(old).unwrap();
    let new = pool.create_owner().unwrap();
    assert_eq!(new.slot(), old.slot(), "slot reused");
    assert_eq!(new.generation(), old.generation() + 1);
    let after = reopen(&pool);
    assert!(after.zones_of(new).is_empty());
    assert_eq!(after.zone_owner(zone), None);
    assert!(after.free_zones().contains(&zone));
}

#[test]
fn commit_for_an_owner_released_meanwhile_fails_and_frees() {
    let pool = sim();
    let owner = pool.create_owner().unwrap();
    let grant = pool.alloc_zone(owner).unwrap();
    let off = grant.off();
    pool.release_owner(owner).unwrap();
    assert!(matches!(grant.commit(), Err(PmemError::DeadOwner { .. })));
    assert!(pool.free_zones().contains(&off));
    assert_eq!(pool.alloc_stats().reserved_zones, 0);
}

#[test]
fn retain_drops_unreachable_owners() {
    let pool = sim();
    let owners: Vec<OwnerId> = (0..4).map(|_| pool.create_owner().unwrap()).collect();
    for &o in &owners {
        let grant = pool.alloc_zone(o).unwrap();
        pool.write(grant.off(), &pattern(o, grant.off(), 3))
            .unwrap();
        pool.persist(grant.off(), pattern_len()).unwrap();
        grant.commit().unwrap();
    }
    let after = reopen(&pool);
    let dropped = after
        .retain_owners(|o| o == owners[1] || o == owners[3])
        .unwrap();
    assert_eq!(dropped, 2);
    assert_eq!(after.owners(), vec![owners[1], owners[3]]);
    for o in [owners[1], owners[3]] {
        let zones = after.zones_of(o);
        assert_eq!(zones.len(), 1);
        assert_eq!(check_zone(&after, o, zones[0]).unwrap(), 3);
        assert_eq!(after.zone_owner(zones[0]), Some(o));
    }
    assert_eq!(after.alloc_stats().free_zones, 6);
}

#[test]
fn owner_table_full_is_an_error() {
    let opts = PoolOptions {
        max_owners: 3,
        ..PoolOptions::small()
    };
    let pool = Pool::create_sim(&opts).unwrap();
    for _ in 0..3 {
        pool.create_owner().unwrap();
    }
    let err = pool.create_owner().unwrap_err();
    assert!(
        matches!(err, PmemError::OwnersFull { max_owners: 3 }),
        "{err}"
    );
}

#[test]
fn damaged_owner_words_are_reported_not_trusted() {
    let pool = sim();
    let owner = pool.create_owner().unwrap();
    let zone = pool.alloc_zone(owner).unwrap().commit().unwrap();
    let mut image = pool.crash(0).unwrap();
    // Corrupt the owner word of the zone: a slot beyond the registry.
    image.damage_word(zone_owner_word(&pool, zone), (1 << 24) | 0xff_ffff);
    let after = Pool::open_image(&image, &PoolOptions::small()).unwrap();
    let report = after.recovery_report();
    assert_eq!(report.anomalies.len(), 1, "{:?}", report.anomalies);
    assert!(report.anomalies[0].contains("invalid owner word"));
    assert!(after.free_zones().contains(&zone));
}

/// Extent 0's owner words follow the root area and registry; for the small geometry
/// (64 owners) they start at 4096 + 4096 + 64 * 8.
fn zone_owner_word(pool: &Pool, zone: pmdb_pmem::PmOff) -> pmdb_pmem::PmOff {
    let index = (zone.offset() - 16384) / pool.zone_size();
    pmdb_pmem::PmOff::new(0, 4096 + 4096 + 64 * 8 + index * 8)
}

/// On a file pool the prefaulter runs on a thread: once allocations leave fewer free
/// zones than it keeps, it grows the pool by an extent; it stops when dropped, after
/// which another may start; a second one at a time and a read-only pool are refused.
#[test]
fn prefaulter_grows_ahead_on_its_thread_and_stops_on_drop() {
    let dir = tempfile::tempdir().unwrap();
    let pool = std::sync::Arc::new(Pool::create(dir.path(), &PoolOptions::small()).unwrap());
    let prefaulter = pool.prefault_ahead(3).unwrap();
    assert!(matches!(
        pool.prefault_ahead(1),
        Err(PmemError::InvalidOption { .. })
    ));
    let owner = pool.create_owner().unwrap();
    let mut zones = Vec::new();
    for tag in 0..6 {
        let grant = pool.alloc_zone(owner).unwrap();
        let off = grant.off();
        pool.write(off, &pattern(owner, off, tag)).unwrap();
        pool.persist(off, pattern_len()).unwrap();
        zones.push((grant.commit().unwrap(), tag));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    // The new extent is counted before its zones join the free list: wait for both.
    while pool.extent_count() < 2 || pool.alloc_stats().free_zones < 2 + 8 {
        assert!(
            std::time::Instant::now() < deadline,
            "no growth ahead: {} extents, {:?}",
            pool.extent_count(),
            pool.alloc_stats()
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(pool.alloc_stats().free_zones, 2 + 8);
    drop(prefaulter);
    for (off, tag) in zones {
        assert_eq!(check_zone(&pool, owner, off).unwrap(), tag);
    }
    drop(pool.prefault_ahead(2).unwrap());
    drop(pool);

    let read_only = PoolOptions::small().with_read_only();
    let pool = std::sync::Arc::new(Pool::open(dir.path(), &read_only).unwrap());
    assert!(matches!(
        pool.prefault_ahead(2),
        Err(PmemError::ReadOnly { .. })
    ));
}
