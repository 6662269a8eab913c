//! Crash simulation of subtable creation and drop, at every fence: random sequences of
//! creates, drops and writes are crashed; after recovery the subtables are exactly those
//! the acknowledged steps leave (the step in flight done or not), each holds exactly its
//! acknowledged data, nothing is reported damaged, and no owner is left behind (every
//! live owner is the catalog's or a memtable's).

use std::collections::BTreeMap;
use std::sync::Arc;

use pmdb_engine::{Db, DbOptions};
use pmdb_pmem::{AckLog, CrashTest, Pool};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const NAMES: [&str; 4] = ["a", "b", "c", "d"];

#[derive(Clone, Debug)]
enum Step {
    Create(&'static str),
    Drop(&'static str),
    Put(&'static str, Vec<u8>, Vec<u8>),
}

type Rows = BTreeMap<Vec<u8>, Vec<u8>>;
type Model = BTreeMap<&'static str, Rows>;

fn options() -> DbOptions {
    DbOptions {
        memtable_size: 32 << 10,
        ..DbOptions::small()
    }
}

fn apply(model: &mut Model, step: &Step) {
    match step {
        Step::Create(name) => {
            model.entry(name).or_default();
        }
        Step::Drop(name) => {
            model.remove(name);
        }
        Step::Put(name, k, v) => {
            model.entry(name).or_default().insert(k.clone(), v.clone());
        }
    }
}

fn random_step(rng: &mut SmallRng, model: &Model, i: usize) -> Step {
    let name = NAMES[rng.random_range(0..NAMES.len())];
    let exists = model.contains_key(name);
    match rng.random_range(0..10) {
        0 | 1 if exists => Step::Drop(name),
        _ if !exists => Step::Create(name),
        _ => {
            let key = format!("k{:02}", rng.random_range(0..30)).into_bytes();
            let len = rng.random_range(100..3000);
            Step::Put(name, key, vec![b'a' + (i % 26) as u8; len])
        }
    }
}

fn workload(seed: u64, steps: usize) -> impl Fn(&Arc<Pool>, &mut AckLog<Step>) {
    move |pool, acks| {
        let db = Db::open_pool(Arc::clone(pool), options()).unwrap();
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut model = Model::new();
        for i in 0..steps {
            let step = random_step(&mut rng, &model, i);
            match &step {
                Step::Create(name) => drop(db.subtable(name).unwrap()),
                Step::Drop(name) => db.drop_subtable(name).unwrap(),
                Step::Put(name, k, v) => db.existing_subtable(name).unwrap().put(k, v).unwrap(),
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
    model
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn check(pool: &Arc<Pool>, acked: &[&Step], in_flight: Option<&Step>) -> Result<(), String> {
    let db = Db::open_pool(Arc::clone(pool), options()).map_err(|e| format!("open: {e}"))?;
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
    let memtables: usize = db.subtable_stats().iter().map(|s| s.memtables).sum();
    let owners = db.device().alloc.live_owners;
    if owners != memtables as u64 + 1 {
        return Err(format!(
            "{owners} live owners for {memtables} memtables and the catalog: a leak"
        ));
    }
    Ok(())
}

fn run(seed: u64) -> usize {
    let report = CrashTest::new(seed)
        .options(options().pool)
        .max_points(3000)
        .run(workload(seed, 160), check)
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
    let images: usize = (1..=6).map(run).sum();
    assert!(images >= 2000, "{images} crash images");
}
