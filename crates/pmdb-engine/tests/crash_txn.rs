//! Crash simulation of transaction commit: bank transfers between accounts in two
//! subtables, each a transaction that also writes an audit record, some racing a second
//! transaction that must fail validation, crashed at every fence. After recovery the data
//! is the acknowledged transactions' (plus possibly the one in flight, whole), money is
//! neither made nor lost, no transaction that failed validation left a trace, and the
//! recovered database validates new transactions against what it recovered.

// Shared with the batch crash tests; this one uses the model and the reads only.
#[allow(dead_code)]
mod common;

use std::sync::Arc;

use common::{Batch, Model, Shape};
use pmdb_engine::{Db, DbError, DbOptions, Isolation, Subtable, Transaction};
use pmdb_pmem::{AckLog, CrashTest, Pool};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const ACCOUNTS: u32 = 8;
const OPENING: u64 = 1000;

/// Accounts `key000`… in the first two subtables; audit records in the third.
const SHAPE: Shape = Shape {
    subtables: &["checking", "savings", "audit"],
    keys: ACCOUNTS,
    max_ops: 0,
    deletes: 0.0,
    max_pad: 0,
};

fn options() -> DbOptions {
    DbOptions {
        memtable_size: 64 << 10,
        ..DbOptions::small().manual_tiering()
    }
}

fn balance(tx: &mut Transaction, sub: &Subtable, key: &[u8]) -> u64 {
    let v = tx.get(sub, key).unwrap().expect("account exists");
    u64::from_be_bytes(v.try_into().unwrap())
}

/// Moves `amount` from one account to another and audits it, as transaction `tx`; returns
/// the writes as a batch of the model.
fn transfer(
    tx: &mut Transaction,
    subs: &[Subtable],
    from: (usize, Vec<u8>),
    to: (usize, Vec<u8>),
    amount: u64,
    audit: Vec<u8>,
) -> Batch {
    assert_ne!(from, to, "a transfer between two accounts");
    let mut ops = Vec::new();
    let a = balance(tx, &subs[from.0], &from.1);
    let b = balance(tx, &subs[to.0], &to.1);
    let moved = amount.min(a);
    let writes = [(from, a - moved), (to, b + moved)];
    for ((sub, key), value) in writes {
        tx.put(&subs[sub], &key, value.to_be_bytes()).unwrap();
        ops.push((sub, key, Some(value.to_be_bytes().to_vec())));
    }
    let record = format!("moved {moved}").into_bytes();
    tx.put(&subs[2], &audit, &record).unwrap();
    ops.push((2, audit, Some(record)));
    Batch { ops }
}

fn workload(seed: u64, transfers: u64) -> impl Fn(&Arc<Pool>, &mut AckLog<Batch>) {
    move |pool, acks| {
        let db = Db::open_pool(Arc::clone(pool), options()).unwrap();
        let subs: Vec<Subtable> = SHAPE
            .subtables
            .iter()
            .map(|n| db.subtable(n).unwrap())
            .collect();
        let mut open = db.transaction();
        let mut ops = Vec::new();
        for (sub, accounts) in subs[..2].iter().enumerate() {
            for k in (0..ACCOUNTS).map(|i| SHAPE.key(i)) {
                open.put(accounts, &k, OPENING.to_be_bytes()).unwrap();
                ops.push((sub, k, Some(OPENING.to_be_bytes().to_vec())));
            }
        }
        open.commit().unwrap();
        acks.ack(Batch { ops });
        let mut rng = SmallRng::seed_from_u64(seed);
        let account = |rng: &mut SmallRng| (rng.random_range(0..2), rng.random_range(0..ACCOUNTS));
        // Two different accounts.
        let pair = |rng: &mut SmallRng| {
            let from = account(rng);
            let mut to = account(rng);
            if to == from {
                to.1 = (to.1 + 1) % ACCOUNTS;
            }
            let named = |(sub, i)| (sub, SHAPE.key(i));
            (named(from), named(to))
        };
        for i in 0..transfers {
            let (from, to) = pair(&mut rng);
            let isolation = if i % 3 == 0 {
                Isolation::Serializable
            } else {
                Isolation::Snapshot
            };
            let mut tx = db.transaction_with(isolation);
            let pad = rng.random_range(0..400);
            let audit = format!("t{i:05}{}", "x".repeat(pad)).into_bytes();
            let batch = transfer(
                &mut tx,
                &subs,
                from.clone(),
                to,
                rng.random_range(1..200),
                audit,
            );
            // Every fourth transfer races another from the same account, which loses.
            let rival = (i % 4 == 0).then(|| {
                let mut rival = db.transaction();
                let (_, to) = pair(&mut rng);
                let to = if to == from { (1 - to.0, to.1) } else { to };
                transfer(
                    &mut rival,
                    &subs,
                    from,
                    to,
                    1,
                    format!("r{i:05}").into_bytes(),
                );
                rival
            });
            tx.commit().unwrap();
            acks.ack(batch);
            if let Some(rival) = rival {
                let err = rival.commit().expect_err("the rival must fail validation");
                assert!(matches!(err, DbError::Conflict { .. }), "{err}");
            }
        }
        assert!(
            db.subtable_stats().iter().any(|s| s.memtables > 1),
            "the workload must cover memtable freezes"
        );
    }
}

fn total(model: &Model) -> u64 {
    model
        .iter()
        .filter(|((sub, _), _)| *sub < 2)
        .map(|(_, v)| u64::from_be_bytes(v.as_slice().try_into().unwrap()))
        .sum()
}

fn check(pool: &Arc<Pool>, acked: &[&Batch], in_flight: Option<&Batch>) -> Result<(), String> {
    let (db, got) = SHAPE.recovered(pool, &options(), acked, in_flight, false)?;
    let money = total(&got);
    if money != 0 && money != 2 * u64::from(ACCOUNTS) * OPENING {
        return Err(format!("money was made or lost: {money}"));
    }
    if got.keys().any(|(sub, k)| *sub == 2 && k.starts_with(b"r")) {
        return Err("a transaction that failed validation left its audit record".into());
    }
    if money == 0 {
        return Ok(());
    }
    // After recovery, validation still sees what was recovered.
    let subs: Vec<Subtable> = SHAPE
        .subtables
        .iter()
        .map(|n| db.subtable(n).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    let mut tx = db.transaction();
    let from = (0, SHAPE.key(0));
    transfer(
        &mut tx,
        &subs,
        from.clone(),
        (1, SHAPE.key(1)),
        1,
        b"after".to_vec(),
    );
    subs[0]
        .put(&from.1, 7u64.to_be_bytes())
        .map_err(|e| e.to_string())?;
    match tx.commit() {
        Err(DbError::Conflict { .. }) => Ok(()),
        other => Err(format!(
            "a transfer racing a recovered write committed: {other:?}"
        )),
    }
}

fn run(seed: u64, transfers: u64) -> usize {
    let report = CrashTest::new(seed)
        .options(options().pool)
        .run(workload(seed, transfers), check)
        .unwrap_or_else(|f| panic!("{f}"));
    assert_eq!(
        report.points as u64,
        report.fences + 1,
        "every fence tested"
    );
    report.images
}

#[test]
fn transactions_survive_every_crash_point() {
    let images: usize = (1..=2).map(|s| run(s, 250)).sum();
    assert!(images >= 1000, "{images} crash images");
}
