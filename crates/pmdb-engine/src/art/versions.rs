//! Version lists: the versions of one key in one tree, oldest first, and the rule that
//! drops the ones no reader can see any more.

use smallvec::{SmallVec, smallvec};

/// One version of a key: its tag (`(seq << 8) | kind`, as in internal keys) and the
/// address of its record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Version {
    pub tag: u64,
    pub rec: u64,
}

impl Version {
    pub fn seq(&self) -> u64 {
        self.tag >> 8
    }
}

/// The versions of a key that has more than one, ascending by sequence number. Two fit
/// inline — what an updated key holds while no snapshot is open (the newest, and the one
/// before it for reads that started earlier).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionList {
    versions: SmallVec<[Version; 2]>,
    pruned: bool,
}

impl VersionList {
    pub(crate) fn one(v: Version, pruned: bool) -> VersionList {
        VersionList {
            versions: smallvec![v],
            pruned,
        }
    }

    /// The versions, oldest first.
    pub fn versions(&self) -> &[Version] {
        &self.versions
    }

    /// Whether older versions of the key were dropped from this tree: a reader older
    /// than every version left must not conclude the tree has none for it.
    pub fn pruned(&self) -> bool {
        self.pruned
    }

    pub(crate) fn newest(&self) -> Version {
        *self.versions.last().expect("a version list is never empty")
    }

    /// Heap bytes of the array, once it outgrows its inline room.
    pub(crate) fn heap_bytes(&self) -> usize {
        if self.versions.spilled() {
            self.versions.capacity() * size_of::<Version>()
        } else {
            0
        }
    }

    /// Adds a version in sequence order (groups may be indexed out of order), then drops
    /// every version older than the newest one at or below `horizon`: no reader reads
    /// below the horizon, so those versions are shadowed for all of them.
    pub(crate) fn add(&mut self, v: Version, horizon: u64) {
        let at = self
            .versions
            .iter()
            .rposition(|x| x.tag < v.tag)
            .map_or(0, |i| i + 1);
        self.versions.insert(at, v);
        if let Some(keep) = self.versions.iter().rposition(|x| x.seq() <= horizon)
            && keep > 0
        {
            self.versions.drain(..keep);
            self.pruned = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(seq: u64) -> Version {
        Version {
            tag: (seq << 8) | 1,
            rec: seq * 8,
        }
    }

    fn seqs(l: &VersionList) -> Vec<u64> {
        l.versions().iter().map(Version::seq).collect()
    }

    #[test]
    fn versions_stay_sorted_and_keep_what_readers_above_the_horizon_need() {
        let mut l = VersionList::one(v(10), false);
        l.add(v(30), 5);
        l.add(v(20), 5);
        assert_eq!(seqs(&l), [10, 20, 30]);
        assert!(!l.pruned());
        // A reader at 25 needs 20; everything older goes.
        l.add(v(40), 25);
        assert_eq!(seqs(&l), [20, 30, 40]);
        assert!(l.pruned());
        l.add(v(50), 100);
        assert_eq!(seqs(&l), [50]);
        assert_eq!(l.newest(), v(50));
    }
}
