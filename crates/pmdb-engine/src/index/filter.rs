//! A Bloom filter over the keys of a frozen index (the fastbloom crate, 1% false
//! positives): a point read that asks a frozen memtable or global-index generation for a
//! key it does not hold is answered without descending the tree or reading a record in
//! PM. The database's background worker builds it once the index is frozen (nothing is
//! inserted any more, so the filter holds every key the index will ever hold); until
//! then, reads ask the tree.

use std::ops::{Bound, ControlFlow};
use std::sync::atomic::{AtomicBool, Ordering};

use fastbloom::BloomFilter;

use super::{LiveIndex, PoolKeys};
use crate::art::KeySource;
use crate::error::Result;

/// False positives the filter is sized for.
const FALSE_POSITIVES: f64 = 0.01;
/// Keys added between two looks at the stop flag.
const STOP_CHECK: u64 = 4096;

impl LiveIndex {
    /// Builds the filter from the frozen tree. Returns false if the index is not frozen
    /// yet or `stop` was raised (the database is closing) before the filter was done.
    pub fn build_filter(&self, stop: &AtomicBool) -> Result<bool> {
        let Some(index) = self.frozen.get() else {
            return Ok(false);
        };
        let keys = PoolKeys(&self.pool);
        let mut filter = BloomFilter::with_false_pos(FALSE_POSITIVES)
            .expected_items(usize::try_from(index.len()).unwrap_or(usize::MAX).max(1));
        let (mut added, mut failed, mut stopped) = (0u64, None, false);
        index.walk(&keys, Bound::Unbounded, true, |leaf| {
            match keys.key(leaf.any_record()) {
                Ok(key) => {
                    filter.insert(key);
                }
                Err(e) => {
                    failed = Some(e);
                    return ControlFlow::Break(());
                }
            }
            added += 1;
            if added % STOP_CHECK == 0 && stop.load(Ordering::Relaxed) {
                stopped = true;
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        if stopped {
            return Ok(false);
        }
        let _ = self.filter.set(filter);
        Ok(true)
    }

    /// Whether the filter proves the index holds no version of `key`.
    pub(crate) fn filter_excludes(&self, key: &[u8]) -> bool {
        self.filter.get().is_some_and(|f| !f.contains(key))
    }

    /// DRAM the filter occupies, once built.
    pub(super) fn filter_bytes(&self) -> u64 {
        self.filter.get().map_or(0, |f| f.num_bits() as u64 / 8)
    }
}

#[cfg(test)]
mod tests {
    use crate::db::Db;
    use crate::options::DbOptions;

    /// Every frozen memtable gets a filter that holds all its keys, so reads of present
    /// keys still find them, while absent keys are turned away — before and after
    /// reopening (recovery queues the frozen memtables' filters too).
    #[test]
    fn frozen_memtables_get_filters_that_miss_no_key() {
        let dir = tempfile::tempdir().unwrap();
        let options = DbOptions {
            memtable_size: 64 << 10,
            ..DbOptions::small().manual_tiering()
        };
        let check = |db: &Db| {
            db.core().background.wait_idle();
            let t = db.existing_subtable("t").unwrap();
            let view = t.state.view.load();
            let (active, frozen) = view.memtables().split_first().unwrap();
            assert!(frozen.len() >= 4, "{} frozen", frozen.len());
            assert!(frozen.iter().all(|m| m.index.filter.get().is_some()));
            assert!(active.index.filter.get().is_none());
            for i in 0..2000u32 {
                let v = t.get_owned(i.to_be_bytes()).unwrap();
                assert_eq!(v, Some(vec![i as u8; 100]), "key {i}");
            }
            let turned_away = (2000..4000u32)
                .filter(|i| {
                    frozen
                        .iter()
                        .all(|m| m.index.filter_excludes(&i.to_be_bytes()))
                })
                .count();
            assert!(turned_away > 1800, "{turned_away} of 2000 absent keys");
            assert!(t.get((5000u32).to_be_bytes()).unwrap().is_none());
        };
        {
            let db = Db::open(dir.path(), options.clone()).unwrap();
            let t = db.subtable("t").unwrap();
            for i in 0..2000u32 {
                t.put(i.to_be_bytes(), vec![i as u8; 100]).unwrap();
            }
            check(&db);
        }
        check(&Db::open(dir.path(), options).unwrap());
    }
}
