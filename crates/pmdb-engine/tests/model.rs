//! Model-based property tests: random puts, deletes, batches, snapshots, scans (both
//! directions, random bounds) and reopens across subtables, checked against a BTreeMap
//! model after every step.

use std::collections::BTreeMap;
use std::ops::Bound;

use pmdb_engine::{Db, DbOptions, Snapshot, WriteBatch, WriteOptions};
use proptest::prelude::*;

const SUBS: usize = 3;

#[derive(Clone, Debug)]
enum Step {
    Put(usize, Vec<u8>, Vec<u8>),
    Delete(usize, Vec<u8>),
    Batch(Vec<(usize, Vec<u8>, Option<Vec<u8>>)>),
    TakeSnapshot,
    CheckSnapshot(usize),
    Scan(usize, Option<Vec<u8>>, Option<Vec<u8>>, bool, bool),
    Reopen,
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    // Short keys over a small alphabet (with 0x00) so keys collide, nest as prefixes
    // and exercise the escaping.
    prop::collection::vec(
        prop_oneof![Just(0u8), Just(b'a'), Just(b'b'), Just(0xff)],
        1..4,
    )
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..300)
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0..SUBS, key(), value()).prop_map(|(s, k, v)| Step::Put(s, k, v)),
        2 => (0..SUBS, key()).prop_map(|(s, k)| Step::Delete(s, k)),
        3 => prop::collection::vec((0..SUBS, key(), prop::option::of(value())), 1..6)
            .prop_map(Step::Batch),
        1 => Just(Step::TakeSnapshot),
        1 => (0..8usize).prop_map(Step::CheckSnapshot),
        2 => (0..SUBS, prop::option::of(key()), prop::option::of(key()), any::<bool>(), any::<bool>())
            .prop_map(|(s, a, b, inclusive, rev)| Step::Scan(s, a, b, inclusive, rev)),
        1 => Just(Step::Reopen),
    ]
}

type Model = Vec<BTreeMap<Vec<u8>, Vec<u8>>>;

fn options() -> DbOptions {
    DbOptions {
        memtable_size: 32 << 10,
        recovery_threads: 2,
        ..DbOptions::small()
    }
}

fn expected_scan(
    m: &BTreeMap<Vec<u8>, Vec<u8>>,
    lo: &Option<Vec<u8>>,
    hi: &Option<Vec<u8>>,
    inclusive: bool,
    rev: bool,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let lo_b = lo.clone().map_or(Bound::Unbounded, Bound::Included);
    let hi_b = hi.clone().map_or(Bound::Unbounded, |h| {
        if inclusive {
            Bound::Included(h)
        } else {
            Bound::Excluded(h)
        }
    });
    if let (Some(l), Some(h)) = (lo, hi)
        && (l > h || (l == h && !inclusive))
    {
        return Vec::new();
    }
    let mut v: Vec<_> = m
        .range((lo_b, hi_b))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if rev {
        v.reverse();
    }
    v
}

fn run(steps: Vec<Step>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let mut db = Db::open(dir.path(), options()).unwrap();
    let mut model: Model = vec![BTreeMap::new(); SUBS];
    let mut snaps: Vec<(Snapshot, Model)> = Vec::new();
    let name = |i: usize| format!("sub{i}");
    for step in steps {
        match step {
            Step::Put(s, k, v) => {
                db.subtable(&name(s)).unwrap().put(&k, &v).unwrap();
                model[s].insert(k, v);
            }
            Step::Delete(s, k) => {
                db.subtable(&name(s)).unwrap().delete(&k).unwrap();
                model[s].remove(&k);
            }
            Step::Batch(ops) => {
                let mut wb = WriteBatch::new();
                for (s, k, v) in &ops {
                    let sub = db.subtable(&name(*s)).unwrap();
                    match v {
                        Some(v) => {
                            wb.put(&sub, k, v);
                            model[*s].insert(k.clone(), v.clone());
                        }
                        None => {
                            wb.delete(&sub, k);
                            model[*s].remove(k);
                        }
                    }
                }
                db.write(wb, WriteOptions::default()).unwrap();
            }
            Step::TakeSnapshot => snaps.push((db.snapshot(), model.clone())),
            Step::CheckSnapshot(i) => {
                if let Some((snap, m)) = snaps.get(i % snaps.len().max(1)) {
                    for (s, expect) in m.iter().enumerate() {
                        let sub = db.subtable(&name(s)).unwrap();
                        let got: Vec<(Vec<u8>, Vec<u8>)> = snap
                            .scan::<&[u8]>(&sub, ..)
                            .unwrap()
                            .map(|e| e.unwrap().to_owned())
                            .collect();
                        let want: Vec<_> =
                            expect.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                        prop_assert_eq!(got, want);
                        for (k, v) in expect {
                            let got = snap.get(&sub, k).unwrap().map(|g| g.to_vec());
                            prop_assert_eq!(got.as_ref(), Some(v));
                        }
                    }
                }
            }
            Step::Scan(s, lo, hi, inclusive, rev) => {
                let sub = db.subtable(&name(s)).unwrap();
                let lo_b = lo.as_deref().map_or(Bound::Unbounded, Bound::Included);
                let hi_b = hi.as_deref().map_or(Bound::Unbounded, |h| {
                    if inclusive {
                        Bound::Included(h)
                    } else {
                        Bound::Excluded(h)
                    }
                });
                let it = if rev {
                    sub.scan_rev::<[u8]>((lo_b, hi_b))
                } else {
                    sub.scan::<[u8]>((lo_b, hi_b))
                };
                let got: Vec<_> = it.map(|e| e.unwrap().to_owned()).collect();
                prop_assert_eq!(got, expected_scan(&model[s], &lo, &hi, inclusive, rev));
            }
            Step::Reopen => {
                // Snapshots do not survive a reopen.
                snaps.clear();
                drop(db);
                db = Db::open(dir.path(), options()).unwrap();
            }
        }
        for (s, m) in model.iter().enumerate() {
            let Ok(sub) = db.existing_subtable(&name(s)) else {
                prop_assert!(m.is_empty());
                continue;
            };
            for (k, v) in m {
                let got = sub.get(k).unwrap().map(|g| g.to_vec());
                prop_assert_eq!(got.as_ref(), Some(v));
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn engine_matches_a_btreemap(steps in prop::collection::vec(step(), 1..200)) {
        run(steps)?;
    }
}
