//! Shared crash-test workload: random batches of puts and deletes over a few subtables,
//! the model they build, and the database's contents read back by scans both ways and by
//! gets, which must all agree.

use std::collections::BTreeMap;

use std::sync::Arc;

use pmdb_engine::{Db, DbError, DbOptions, Subtable, WriteBatch, WriteOptions};
use pmdb_pmem::{AckLog, Pool};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// (subtable index, key) → value.
pub type Model = BTreeMap<(usize, Vec<u8>), Vec<u8>>;

#[derive(Clone, Debug)]
pub struct Batch {
    /// (subtable index, key, Some(value) for a put, None for a delete)
    pub ops: Vec<(usize, Vec<u8>, Option<Vec<u8>>)>,
}

/// What a workload's batches look like.
pub struct Shape {
    pub subtables: &'static [&'static str],
    pub keys: u32,
    /// Operations per batch: 1 to this many.
    pub max_ops: usize,
    /// Chance of an operation being a delete.
    pub deletes: f64,
    /// Values are a batch-and-operation label padded by up to this many bytes.
    pub max_pad: usize,
}

impl Shape {
    pub fn key(&self, i: u32) -> Vec<u8> {
        format!("key{i:03}").into_bytes()
    }

    pub fn random_batch(&self, rng: &mut SmallRng, id: u64) -> Batch {
        let n = rng.random_range(1..=self.max_ops);
        let ops = (0..n)
            .map(|j| {
                let sub = rng.random_range(0..self.subtables.len());
                let k = self.key(rng.random_range(0..self.keys));
                if rng.random_bool(self.deletes) {
                    (sub, k, None)
                } else {
                    let mut v = format!("batch{id}/op{j}/").into_bytes();
                    v.resize(
                        v.len() + rng.random_range(0..self.max_pad),
                        b'a' + (id % 26) as u8,
                    );
                    (sub, k, Some(v))
                }
            })
            .collect();
        Batch { ops }
    }

    /// The crash test's workload: opens the database in `pool`, commits `batches` random
    /// batches (from `seed`), acknowledging each, calls `after(db, id)` after batch `id`,
    /// and returns the database.
    pub fn write_batches(
        &self,
        pool: &Arc<Pool>,
        options: DbOptions,
        seed: u64,
        batches: u64,
        acks: &mut AckLog<Batch>,
        mut after: impl FnMut(&Db, u64),
    ) -> Db {
        let db = Db::open_pool(Arc::clone(pool), options).unwrap();
        let subs: Vec<Subtable> = self
            .subtables
            .iter()
            .map(|n| db.subtable(n).unwrap())
            .collect();
        let mut rng = SmallRng::seed_from_u64(seed);
        for id in 0..batches {
            let batch = self.random_batch(&mut rng, id);
            let mut wb = WriteBatch::new();
            for (sub, k, v) in &batch.ops {
                match v {
                    Some(v) => wb.put(&subs[*sub], k, v),
                    None => wb.delete(&subs[*sub], k),
                }
            }
            db.write(wb, WriteOptions::default()).unwrap();
            acks.ack(batch);
            after(&db, id);
        }
        db
    }

    /// The database's contents by forward scans, checked against reverse scans (same
    /// entries, in order) and point gets of every key.
    pub fn contents(&self, db: &Db) -> Result<Model, String> {
        let mut out = Model::new();
        for (i, name) in self.subtables.iter().enumerate() {
            let Ok(sub) = db.existing_subtable(name) else {
                continue;
            };
            let fwd: Vec<(Vec<u8>, Vec<u8>)> = sub
                .scan::<&[u8]>(..)
                .map(|e| e.map(|e| e.to_owned()))
                .collect::<Result<_, _>>()
                .map_err(|e| format!("{name}: scan: {e}"))?;
            let mut rev: Vec<(Vec<u8>, Vec<u8>)> = sub
                .scan_rev::<&[u8]>(..)
                .map(|e| e.map(|e| e.to_owned()))
                .collect::<Result<_, _>>()
                .map_err(|e| format!("{name}: reverse scan: {e}"))?;
            rev.reverse();
            if fwd != rev {
                return Err(format!("{name}: forward and reverse scans differ"));
            }
            if fwd.windows(2).any(|w| w[0].0 >= w[1].0) {
                return Err(format!("{name}: scan out of order"));
            }
            for k in (0..self.keys).map(|i| self.key(i)) {
                let got = sub.get_owned(&k).map_err(|e| format!("{name}: get: {e}"))?;
                let scanned = fwd.iter().find(|(sk, _)| *sk == k).map(|(_, v)| v.clone());
                if got != scanned {
                    return Err(format!("{name}: get and scan disagree on {k:?}"));
                }
            }
            out.extend(fwd.into_iter().map(|(k, v)| ((i, k), v)));
        }
        Ok(out)
    }
}

impl Shape {
    /// The database a crash left in `pool`, opened and checked: no damage reported, and
    /// its contents the acknowledged batches' state, or that plus the batch in flight.
    /// With `read_only_too`, the unchanged image is first opened read-only (recovery in
    /// DRAM alone), which must see the same contents.
    pub fn recovered(
        &self,
        pool: &Arc<Pool>,
        options: &DbOptions,
        acked: &[&Batch],
        in_flight: Option<&Batch>,
        read_only_too: bool,
    ) -> Result<(Db, Model), String> {
        let seen_read_only = if read_only_too {
            let unchanged = pool.crash(0).expect("simulated pool");
            let read_only = Pool::open_image(&unchanged, &options.pool.clone().with_read_only())
                .map_err(|e| format!("read-only open after crash: {e}"))?;
            // Before the create completed there is no database to read; the writable
            // open creates an empty one.
            match Db::open_pool(Arc::new(read_only), options.clone()) {
                Ok(db) => Some(self.contents(&db)?),
                Err(DbError::NoDatabase { .. }) => Some(Model::new()),
                Err(e) => return Err(format!("read-only open after crash: {e}")),
            }
        } else {
            None
        };
        let db = Db::open_pool(Arc::clone(pool), options.clone())
            .map_err(|e| format!("open after crash: {e}"))?;
        if !db.recovery_stats().damage.is_empty() {
            return Err(format!("damage reported: {:?}", db.recovery_stats().damage));
        }
        let got = self.contents(&db)?;
        if seen_read_only.is_some_and(|seen| seen != got) {
            return Err("a read-only open saw other data than the writable open".into());
        }
        prefix_or_in_flight(&got, acked, in_flight)?;
        Ok((db, got))
    }
}

pub fn apply(model: &mut Model, batch: &Batch) {
    for (sub, k, v) in &batch.ops {
        match v {
            Some(v) => model.insert((*sub, k.clone()), v.clone()),
            None => model.remove(&(*sub, k.clone())),
        };
    }
}

/// Checks that `got` is the acknowledged batches' state, or that plus the batch in
/// flight; returns the first.
pub fn prefix_or_in_flight(
    got: &Model,
    acked: &[&Batch],
    in_flight: Option<&Batch>,
) -> Result<Model, String> {
    let mut before = Model::new();
    acked.iter().for_each(|b| apply(&mut before, b));
    let mut after = before.clone();
    if let Some(b) = in_flight {
        apply(&mut after, b);
    }
    if *got == before || *got == after {
        return Ok(before);
    }
    let wrong: Vec<_> = after
        .iter()
        .filter(|(k, v)| got.get(*k) != Some(v) && before.get(*k) != got.get(*k))
        .map(|(k, _)| k)
        .chain(before.keys().filter(|k| !got.contains_key(*k)))
        .take(3)
        .collect();
    Err(format!(
        "state after recovery is neither the acknowledged prefix nor it plus the batch in flight ({} acked batches; e.g. {wrong:?})",
        acked.len()
    ))
}
