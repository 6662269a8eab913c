//! The SST levels of one subtable, as a read view holds them. Level 0 holds flushed
//! global-index generations, one file each, newest first: their key ranges overlap, and
//! each holds only versions newer than any file after it or in a deeper level. L1 and
//! below are each a run of files sorted by key with no two overlapping, and a user
//! key's versions in one file of a level (compaction cuts files between keys, never
//! inside one). Immutable: a flush or compaction makes a new `Levels` with its edit
//! applied.

use std::collections::HashSet;
use std::sync::Arc;

use crate::error::Result;
use crate::format::manifest::MAX_LEVEL;
use crate::iter::InternalIterator;
use crate::iter::level::LevelIter;
use crate::keys;
use crate::sst::SstValue;
use crate::table::Table;

/// What the levels hold for a key at a snapshot.
pub(crate) enum LevelLookup {
    /// The newest version the snapshot may see: its tag and value.
    Found {
        tag: u64,
        value: SstValue,
    },
    Absent,
    /// A file written after the reader took its snapshot may have dropped the version it
    /// needs: read again at a newer sequence number.
    Pruned,
}

#[derive(Clone)]
pub(crate) struct Levels {
    /// `levels[l]` is level `l`; level 0 is always there, even empty.
    levels: Vec<Vec<Arc<Table>>>,
}

impl Default for Levels {
    fn default() -> Levels {
        Levels {
            levels: vec![Vec::new()],
        }
    }
}

impl Levels {
    /// Levels holding `tables`, each placed by its level and sorted.
    pub fn new(tables: Vec<Arc<Table>>) -> Levels {
        Levels::default().apply(&HashSet::new(), tables)
    }

    /// The files of level `level`: level 0's newest first, the others' sorted by key.
    pub fn level(&self, level: u8) -> &[Arc<Table>] {
        self.levels
            .get(usize::from(level))
            .map_or(&[], Vec::as_slice)
    }

    /// The deepest level that holds a file (0 if none below level 0 does).
    pub fn depth(&self) -> u8 {
        (self.levels.len() - 1) as u8
    }

    pub fn files(&self) -> impl Iterator<Item = &Arc<Table>> {
        self.levels.iter().flatten()
    }

    /// Bytes of level `level`.
    pub fn bytes(&self, level: u8) -> u64 {
        self.level(level).iter().map(|t| t.meta.size).sum()
    }

    /// These levels with the files numbered in `deleted` gone and `added` placed.
    pub fn apply(&self, deleted: &HashSet<u64>, added: Vec<Arc<Table>>) -> Levels {
        let mut levels: Vec<Vec<Arc<Table>>> = self
            .levels
            .iter()
            .map(|l| {
                l.iter()
                    .filter(|t| !deleted.contains(&t.meta.number))
                    .cloned()
                    .collect()
            })
            .collect();
        for t in added {
            let at = usize::from(t.meta.level.min(MAX_LEVEL));
            if levels.len() <= at {
                levels.resize_with(at + 1, Vec::new);
            }
            levels[at].push(t);
        }
        // Flushes number their files in the order they run, oldest generation first.
        levels[0].sort_by_key(|t| std::cmp::Reverse(t.meta.number));
        for l in &mut levels[1..] {
            l.sort_by(|a, b| keys::compare(&a.meta.smallest, &b.meta.smallest));
        }
        while levels.len() > 1 && levels.last().is_some_and(Vec::is_empty) {
            levels.pop();
        }
        Levels { levels }
    }

    /// The files of `level` whose keys overlap the user keys `[lo, hi]`.
    pub fn overlapping(&self, level: u8, lo: &[u8], hi: &[u8]) -> Vec<Arc<Table>> {
        self.level(level)
            .iter()
            .filter(|t| t.overlaps(lo, hi))
            .cloned()
            .collect()
    }

    /// Whether a level below `level` holds a file overlapping user key `key` (if not, a
    /// tombstone of it written to `level` hides nothing and may go). What is written to
    /// level 0 is newer than every file there, so for level 0 those count too.
    pub fn deeper_holds(&self, level: u8, key: &[u8]) -> bool {
        (level == 0 && self.level(0).iter().any(|t| t.overlaps(key, key)))
            || (level + 1..=self.depth()).any(|l| self.file_for(l, key).is_some())
    }

    /// The file of `level` (1 or deeper) whose range holds user key `key`.
    fn file_for(&self, level: u8, key: &[u8]) -> Option<&Arc<Table>> {
        let files = self.level(level);
        let at = files.partition_point(|t| keys::compare_user_keys(t.largest_user(), key).is_lt());
        files
            .get(at)
            .filter(|t| keys::compare_user_keys(t.smallest_user(), key).is_le())
    }

    /// The newest version of `key` at `snap`: level 0's files newest first, then level by
    /// level.
    pub fn get(&self, key: &[u8], snap: u64) -> Result<LevelLookup> {
        let flushed = self.level(0).iter().filter(|t| t.overlaps(key, key));
        let leveled = (1..=self.depth()).filter_map(|l| self.file_for(l, key));
        for table in flushed.chain(leveled) {
            if let Some((tag, value)) = table.sst.get(key, snap)? {
                return Ok(LevelLookup::Found { tag, value });
            }
            if snap < table.meta.horizon {
                return Ok(LevelLookup::Pruned);
            }
        }
        Ok(LevelLookup::Absent)
    }

    /// One iterator per file of level 0 and one per deeper level.
    pub fn iters(&self) -> Vec<Box<dyn InternalIterator>> {
        let flushed = self.level(0).iter().map(|t| vec![Arc::clone(t)]);
        let leveled = self.levels[1..].iter().filter(|l| !l.is_empty()).cloned();
        flushed
            .chain(leveled)
            .map(|l| Box::new(LevelIter::new(l)) as Box<dyn InternalIterator>)
            .collect()
    }
}
