//! Crash simulation of the zone allocator and object pools: at every fence of random
//! workloads, the crash image must recover with no zone both free and owned, no leak,
//! every committed zone intact, every acknowledged zone present and every acknowledged
//! release applied — also with a prefaulter keeping spare zones and growing the pool
//! ahead of need. A deliberately wrong protocol must be caught.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use common::{check_zone, pattern, pattern_len};
use pmdb_pmem::{AckLog, CrashTest, ObjPool, OwnerId, PmOff, PmemError, Pool, PoolOptions};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Root words 0..REACH hold the reachable owners.
const REACH: usize = 6;

#[derive(Clone, Debug)]
enum Ack {
    Zone {
        owner: OwnerId,
        off: PmOff,
        tag: u64,
    },
    Released {
        owner: OwnerId,
    },
}

#[derive(Clone, Copy, PartialEq)]
enum Protocol {
    Correct,
    /// Commits the zone before persisting its contents: publish before persist.
    PublishBeforePersist,
}

/// The allocator workload; with `spares` > 0, a prefaulter keeps that many free zones
/// pre-faulted and grows the pool ahead of need.
fn workload(
    seed: u64,
    ops: usize,
    protocol: Protocol,
    spares: usize,
) -> impl Fn(&Arc<Pool>, &mut AckLog<Ack>) {
    move |pool, acks| {
        let _prefaulter = (spares > 0).then(|| pool.prefault_ahead(spares).unwrap());
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut live: BTreeMap<usize, OwnerId> = BTreeMap::new();
        for _ in 0..ops {
            let roll = rng.random_range(0..100);
            if roll < 15 || live.is_empty() {
                let Some(slot) = (0..REACH).find(|s| !live.contains_key(s)) else {
                    continue;
                };
                let owner = pool.create_owner().expect("owner slots");
                pool.publish_root(slot, owner.to_raw()).unwrap();
                live.insert(slot, owner);
            } else if roll < 25 {
                let slot = *live.keys().nth(rng.random_range(0..live.len())).unwrap();
                let owner = live.remove(&slot).unwrap();
                pool.publish_root(slot, 0).unwrap();
                pool.release_owner(owner).unwrap();
                acks.ack(Ack::Released { owner });
            } else {
                let owner = *live.values().nth(rng.random_range(0..live.len())).unwrap();
                let grant = match pool.alloc_zone(owner) {
                    Ok(g) => g,
                    Err(PmemError::PoolFull { .. }) => continue,
                    Err(e) => panic!("alloc: {e}"),
                };
                let tag = rng.random::<u64>();
                let off = grant.off();
                pool.write(off, &pattern(owner, off, tag)).unwrap();
                if protocol == Protocol::Correct {
                    pool.persist(off, pattern_len()).unwrap();
                    grant.commit().unwrap();
                } else {
                    grant.commit().unwrap();
                    pool.persist(off, pattern_len()).unwrap();
                }
                acks.ack(Ack::Zone { owner, off, tag });
            }
        }
        if ops >= 200 {
            assert!(
                pool.extent_count() > 1,
                "the workload must cover pool growth"
            );
        }
        if spares > 0 {
            let free = pool.alloc_stats().free_zones as usize;
            assert!(
                free >= spares || pool.extent_count() == pool.max_extents(),
                "{free} free zones, {spares} spares asked for"
            );
        }
    }
}

/// Recovery as an engine would run it (drop unreachable owners), then the invariants.
fn check(pool: &Arc<Pool>, acked: &[&Ack], in_flight: Option<&Ack>) -> Result<(), String> {
    let reachable: BTreeSet<OwnerId> = (0..REACH)
        .filter_map(|i| OwnerId::from_raw(pool.root(i)))
        .collect();
    pool.retain_owners(|o| reachable.contains(&o))
        .map_err(|e| e.to_string())?;

    let mut seen: HashMap<PmOff, &str> = HashMap::new();
    for off in pool.free_zones() {
        seen.insert(off, "free");
    }
    for owner in pool.owners() {
        if !reachable.contains(&owner) {
            return Err(format!("{owner} is live but unreachable after retain"));
        }
        for off in pool.zones_of(owner) {
            if seen.insert(off, "owned").is_some() {
                return Err(format!(
                    "zone {off} is both free and owned (or owned twice)"
                ));
            }
            check_zone(pool, owner, off)?;
        }
    }
    if seen.len() as u64 != pool.zone_count() {
        return Err(format!(
            "{} of {} zones are neither free nor owned: leaked",
            pool.zone_count() - seen.len() as u64,
            pool.zone_count()
        ));
    }
    // A release in flight at the crash may or may not have happened.
    let released: BTreeSet<OwnerId> = acked
        .iter()
        .copied()
        .chain(in_flight)
        .filter_map(|a| match a {
            Ack::Released { owner } => Some(*owner),
            _ => None,
        })
        .collect();
    for a in acked {
        match a {
            Ack::Zone { owner, off, tag } if !released.contains(owner) => {
                if !pool.zones_of(*owner).contains(off) {
                    return Err(format!("acknowledged zone {off} of {owner} was lost"));
                }
                if check_zone(pool, *owner, *off)? != *tag {
                    return Err(format!("acknowledged zone {off} has another tag"));
                }
            }
            Ack::Released { owner } if pool.is_live(*owner) => {
                return Err(format!("released {owner} is live again"));
            }
            _ => {}
        }
    }
    Ok(())
}

#[test]
fn allocator_survives_every_crash_point() {
    let mut points = 0;
    for seed in [1u64, 2, 3] {
        let report = CrashTest::new(seed)
            .run(workload(seed, 220, Protocol::Correct, 0), check)
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

/// Spares are free zones and growth ahead of need is ordinary growth: the same
/// invariants hold at every fence, and no pass touches a zone once it is handed out.
#[test]
fn allocator_with_spares_survives_every_crash_point() {
    let mut points = 0;
    for seed in [4u64, 5, 6] {
        let report = CrashTest::new(seed)
            .run(workload(seed, 220, Protocol::Correct, 3), check)
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

#[test]
fn allocator_survives_sampled_crash_points_with_several_mixes() {
    let report = CrashTest::new(42)
        .max_points(150)
        .mixes(3)
        .run(workload(42, 500, Protocol::Correct, 0), check)
        .unwrap_or_else(|f| panic!("{f}"));
    assert_eq!(report.points, 150);
    assert_eq!(report.images, 450);
}

#[test]
fn harness_catches_publish_before_persist() {
    let failure = CrashTest::new(7)
        .run(workload(7, 120, Protocol::PublishBeforePersist, 0), check)
        .expect_err("a zone committed before its contents persisted must be caught");
    assert!(failure.message.contains("not intact"), "{failure}");
    let text = failure.to_string();
    assert!(text.contains("seed 7") && text.contains(&format!("crash point {}", failure.point)));

    // The reported point reproduces the failure on its own.
    let again = CrashTest::new(7)
        .replay(failure.point)
        .run(workload(7, 120, Protocol::PublishBeforePersist, 0), check)
        .expect_err("replay reproduces");
    assert_eq!(again.point, failure.point);
}

#[test]
fn harness_reports_recovery_panics_with_the_crash_point() {
    let failure = CrashTest::new(9)
        .run(
            workload(9, 10, Protocol::Correct, 0),
            |_pool, _acked: &[&Ack], _in_flight: Option<&Ack>| panic!("checker exploded"),
        )
        .expect_err("a panicking checker fails the test");
    assert!(failure.message.contains("checker exploded"));
}

#[derive(Clone, Debug)]
enum ObjAck {
    Committed { index: u32, tag: u64 },
    Freed { index: u32 },
}

const SLOT: u64 = 96;

fn record(tag: u64) -> Vec<u8> {
    (0..SLOT)
        .map(|i| (tag.rotate_left(i as u32) & 0xff) as u8)
        .collect()
}

#[test]
fn object_pool_survives_every_crash_point() {
    let seed = 11;
    let report = CrashTest::new(seed)
        .run(
            move |pool: &Arc<Pool>, acks: &mut AckLog<ObjAck>| {
                let owner = pool.create_owner().unwrap();
                let grant = pool.alloc_zone(owner).unwrap();
                let objs = ObjPool::format(pool, &grant, SLOT).unwrap();
                let zone = grant.commit().unwrap();
                pool.publish_root(0, zone.to_raw()).unwrap();
                pool.publish_root(1, owner.to_raw()).unwrap();
                let mut rng = SmallRng::seed_from_u64(seed);
                let mut live = Vec::new();
                for _ in 0..200 {
                    if rng.random_bool(0.3) && !live.is_empty() {
                        let index = live.swap_remove(rng.random_range(0..live.len()));
                        objs.free(pool, index).unwrap();
                        acks.ack(ObjAck::Freed { index });
                    } else if let Some(slot) = objs.get() {
                        let tag = rng.random::<u64>() | 1;
                        pool.write(slot.off(), &record(tag)).unwrap();
                        pool.persist(slot.off(), SLOT as usize).unwrap();
                        let index = slot.index();
                        objs.commit(pool, slot, tag).unwrap();
                        live.push(index);
                        acks.ack(ObjAck::Committed { index, tag });
                    }
                }
            },
            |pool: &Arc<Pool>, acked: &[&ObjAck], in_flight: Option<&ObjAck>| {
                let zone = PmOff::from_raw(pool.root(0));
                if zone.is_null() {
                    return if acked.is_empty() {
                        Ok(())
                    } else {
                        Err("object pool unreachable after acks".into())
                    };
                }
                let objs = ObjPool::open(pool, zone).map_err(|e| e.to_string())?;
                let live: HashMap<u32, u64> = objs
                    .live(pool)
                    .into_iter()
                    .map(|(i, off, tag)| {
                        assert_eq!(pool.read(off, SLOT as usize).unwrap(), record(tag), "slot {i} torn");
                        (i, tag)
                    })
                    .collect();
                let mut expect: HashMap<u32, u64> = HashMap::new();
                // A free in flight at the crash may or may not have happened.
                let in_flight_free = in_flight.filter(|a| matches!(a, ObjAck::Freed { .. }));
                for a in acked.iter().copied().chain(in_flight_free) {
                    match a {
                        ObjAck::Committed { index, tag } => expect.insert(*index, *tag),
                        ObjAck::Freed { index } => expect.remove(index),
                    };
                }
                for (index, tag) in &expect {
                    if live.get(index) != Some(tag) {
                        return Err(format!("acknowledged slot {index} lost: {live:?} {:?} acked {acked:?} zone {zone} raw {:?} cap {}", objs.live(pool), pool.read(zone, 96).unwrap().iter().map(|b| format!("{b:02x}")).collect::<String>(), objs.capacity()));
                    }
                }
                let free: BTreeSet<u32> = std::iter::from_fn(|| objs.get().map(|s| s.index())).collect();
                if free.len() + live.len() != objs.capacity() as usize
                    || live.keys().any(|i| free.contains(i))
                {
                    return Err("object pool slots leaked or doubly used".into());
                }
                Ok(())
            },
        )
        .unwrap_or_else(|f| panic!("{f}"));
    assert!(report.points > 300, "{report:?}");
}

#[test]
fn root_publish_is_all_or_nothing() {
    let report = CrashTest::new(5)
        .options(PoolOptions::small())
        .run(
            |pool: &Arc<Pool>, acks: &mut AckLog<(usize, u64)>| {
                for i in 0..100u64 {
                    let word = (i as usize * 7) % pmdb_pmem::ROOT_WORDS;
                    let value = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
                    pool.publish_root(word, value).unwrap();
                    acks.ack((word, value));
                }
            },
            |pool: &Arc<Pool>, acked: &[&(usize, u64)], _in_flight: Option<&(usize, u64)>| {
                let mut last = HashMap::new();
                for (w, v) in acked {
                    last.insert(*w, *v);
                }
                for (w, v) in last {
                    if pool.root(w) != v {
                        return Err(format!("root {w} lost {v:#x}"));
                    }
                }
                Ok(())
            },
        )
        .unwrap_or_else(|f| panic!("{f}"));
    assert_eq!(report.fences, 100);
}
