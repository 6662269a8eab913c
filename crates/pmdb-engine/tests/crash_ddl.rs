//! Crash simulation of subtable creation and drop, at every fence: random sequences of
//! creates, drops and writes are crashed; after recovery the subtables are exactly those
//! the acknowledged steps leave (the step in flight done or not), each holds exactly its
//! acknowledged data, nothing is reported damaged, and no owner is left behind (every
//! live owner is the catalog's or a memtable's). With the smallest zones, the catalog
//! grows to several zones and reuses the slots of dropped subtables on the way.

use std::collections::BTreeMap;
use std::sync::Arc;

use pmdb_engine::{Db, DbOptions};
use pmdb_pmem::{AckLog, CrashTest, Pool};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// A subtable, by its number: its name is `s<number>`.
type Name = usize;

#[derive(Clone, Debug)]
enum Step {
    Create(Name),
    Drop(Name),
    Put(Name, Vec<u8>, Vec<u8>),
}

type Rows = BTreeMap<Vec<u8>, Vec<u8>>;
type Model = BTreeMap<Name, Rows>;

/// What a run works with: the database's options, how many subtable names it picks
/// from, and its largest value.
#[derive(Clone)]
struct Setup {
    options: DbOptions,
    names: usize,
    max_value: usize,
    /// Catalog zones the completed workload must have reached.
    catalog_zones: usize,
}

/// A few subtables with values across chunks and zones.
fn few_subtables() -> Setup {
    Setup {
        options: DbOptions {
            memtable_size: 32 << 10,
            ..DbOptions::small().manual_tiering()
        },
        names: 4,
        max_value: 3000,
        catalog_zones: 1,
    }
}

/// Many subtables in 4 KiB zones, 15 catalog slots each: the catalog spills into
/// several zones and reuses dropped slots.
fn many_subtables() -> Setup {
    let mut options = DbOptions {
        memtable_size: 4 << 10,
        ..DbOptions::small().manual_tiering()
    };
    options.pool.zone_size = Some(4 << 10);
    options.pool.zones_per_extent = 64;
    options.pool.max_extents = Some(8);
    options.max_key_size = 64;
    Setup {
        options,
        names: 40,
        max_value: 200,
        catalog_zones: 3,
    }
}

fn name(n: Name) -> String {
    format!("s{n}")
}

fn apply(model: &mut Model, step: &Step) {
    match step {
        Step::Create(name) => {
            model.entry(*name).or_default();
        }
        Step::Drop(name) => {
            model.remove(name);
        }
        Step::Put(name, k, v) => {
            model.entry(*name).or_default().insert(k.clone(), v.clone());
        }
    }
}

fn random_step(rng: &mut SmallRng, setup: &Setup, model: &Model, i: usize) -> Step {
    let name = rng.random_range(0..setup.names);
    let exists = model.contains_key(&name);
    match rng.random_range(0..10) {
        0 | 1 if exists => Step::Drop(name),
        _ if !exists => Step::Create(name),
        _ => {
            let key = format!("k{:02}", rng.random_range(0..30)).into_bytes();
            let len = rng.random_range(setup.max_value / 30..setup.max_value);
            Step::Put(name, key, vec![b'a' + (i % 26) as u8; len])
        }
    }
}

fn workload(setup: Setup, seed: u64, steps: usize) -> impl Fn(&Arc<Pool>, &mut AckLog<Step>) {
    move |pool, acks| {
        let db = Db::open_pool(Arc::clone(pool), setup.options.clone()).unwrap();
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut model = Model::new();
        for i in 0..steps {
            let step = random_step(&mut rng, &setup, &model, i);
            match &step {
                Step::Create(n) => drop(db.subtable(&name(*n)).unwrap()),
                Step::Drop(n) => db.drop_subtable(&name(*n)).unwrap(),
                Step::Put(n, k, v) => db.existing_subtable(&name(*n)).unwrap().put(k, v).unwrap(),
            }
            apply(&mut model, &step);
            acks.ack(step);
        }
    }
}

fn contents(db: &Db) -> Result<BTreeMap<String, Rows>, String> {
    let mut out = BTreeMap::new();
    for name in db.subtable_names() {
        let sub = db.existing_subtable(&name).map_err(|e| e.to_string())?;
        let rows = sub
            .scan::<&[u8]>(..)
            .map(|e| e.map(|e| e.into_parts()))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        out.insert(name, rows);
    }
    Ok(out)
}

fn named(model: &Model) -> BTreeMap<String, Rows> {
    model.iter().map(|(k, v)| (name(*k), v.clone())).collect()
}

fn check(
    setup: &Setup,
    pool: &Arc<Pool>,
    acked: &[&Step],
    in_flight: Option<&Step>,
) -> Result<(), String> {
    let db =
        Db::open_pool(Arc::clone(pool), setup.options.clone()).map_err(|e| format!("open: {e}"))?;
    if !db.recovery_stats().damage.is_empty() {
        return Err(format!("damage reported: {:?}", db.recovery_stats().damage));
    }
    let mut before = Model::new();
    acked.iter().for_each(|s| apply(&mut before, s));
    let mut after = before.clone();
    if let Some(s) = in_flight {
        apply(&mut after, s);
    }
    let got = contents(&db)?;
    if got != named(&before) && got != named(&after) {
        return Err(format!(
            "subtables {:?} are neither {:?} nor {:?} after {} steps (in flight: {in_flight:?})",
            got.keys().collect::<Vec<_>>(),
            before.keys().collect::<Vec<_>>(),
            after.keys().collect::<Vec<_>>(),
            acked.len()
        ));
    }
    let zones = db.recovery_stats().catalog_zones;
    if in_flight.is_none() && zones < setup.catalog_zones {
        return Err(format!(
            "the workload reached {zones} catalog zones, not {}",
            setup.catalog_zones
        ));
    }
    let memtables: usize = db.subtable_stats().iter().map(|s| s.memtables).sum();
    let owners = db.device().alloc.live_owners;
    if owners != memtables as u64 + 1 {
        return Err(format!(
            "{owners} live owners for {memtables} memtables and the catalog: a leak"
        ));
    }
    Ok(())
}

fn run(setup: &Setup, seed: u64, steps: usize) -> usize {
    let report = CrashTest::new(seed)
        .options(setup.options.pool.clone())
        .max_points(3000)
        .run(
            workload(setup.clone(), seed, steps),
            |pool, acked, in_flight| check(setup, pool, acked, in_flight),
        )
        .unwrap_or_else(|f| panic!("{f}"));
    assert_eq!(
        report.points as u64,
        report.fences + 1,
        "every fence tested"
    );
    report.images
}

#[test]
fn creates_and_drops_survive_every_crash_point() {
    let setup = few_subtables();
    let images: usize = (1..=6).map(|seed| run(&setup, seed, 160)).sum();
    assert!(images >= 2000, "{images} crash images");
}

#[test]
fn catalog_growth_and_slot_reuse_survive_every_crash_point() {
    let setup = many_subtables();
    let images: usize = (1..=3).map(|seed| run(&setup, seed, 200)).sum();
    assert!(images >= 1000, "{images} crash images");
}
