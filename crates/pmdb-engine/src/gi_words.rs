//! Cross-checks of the memtable slots' global-index words. A slot's crc leaves the word
//! out (a merge rewrites it after the slot is published), so recovery holds the words of
//! each subtable against each other instead. Merges take a subtable's oldest frozen
//! memtable first, into the open generation, named by its first member's id, and a
//! flush takes whole generations out of PM; so among the memtables not yet flushed:
//! every merged one names a generation whose first member is there and names itself,
//! every merged one is older than every one not merged, and older members name older
//! (or the same) generations. A word that breaks one of these rules makes the
//! subtable's read order unknowable: the caller leaves the subtable unknown, reading
//! nothing of it and freeing nothing.

use std::collections::{BTreeMap, HashMap};

/// One memtable slot's word, with what names the slot.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GiWord {
    pub id: u64,
    pub subtable: u32,
    /// The generation the memtable merged into; 0: none.
    pub gi: u64,
}

/// For each subtable whose words break a rule, why. `flushed` is the manifest's bound
/// per subtable: memtables at or below it are in SSTs and their words no longer count.
pub(crate) fn check(
    words: impl IntoIterator<Item = GiWord>,
    flushed: &BTreeMap<u32, u64>,
) -> BTreeMap<u32, String> {
    let mut by_subtable: HashMap<u32, Vec<GiWord>> = HashMap::new();
    for m in words {
        if flushed.get(&m.subtable).is_none_or(|&bound| m.id > bound) {
            by_subtable.entry(m.subtable).or_default().push(m);
        }
    }
    let mut damaged = BTreeMap::new();
    for (subtable, mut mems) in by_subtable {
        mems.sort_by_key(|m| m.id);
        if let Some(why) = broken_rule(&mems) {
            damaged.insert(subtable, why);
        }
    }
    damaged
}

/// The first rule `mems` (one subtable's, oldest first) break, if any.
fn broken_rule(mems: &[GiWord]) -> Option<String> {
    let gi_of: HashMap<u64, u64> = mems.iter().map(|m| (m.id, m.gi)).collect();
    let mut last_gi = 0;
    let mut unmerged_seen: Option<u64> = None;
    for m in mems {
        if m.gi == 0 {
            unmerged_seen.get_or_insert(m.id);
            continue;
        }
        if let Some(older) = unmerged_seen {
            return Some(format!(
                "memtable {} names global-index generation {}, but the older memtable {older} \
                 is not merged",
                m.id, m.gi
            ));
        }
        if gi_of.get(&m.gi) != Some(&m.gi) {
            return Some(format!(
                "memtable {} names global-index generation {}, whose first member is not a \
                 memtable naming it",
                m.id, m.gi
            ));
        }
        if m.gi < last_gi {
            return Some(format!(
                "memtable {} names global-index generation {}, older than its older \
                 neighbour's {last_gi}",
                m.id, m.gi
            ));
        }
        last_gi = m.gi;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mem(id: u64, subtable: u32, gi: u64) -> GiWord {
        GiWord { id, subtable, gi }
    }

    #[test]
    fn words_a_merge_leaves_pass_and_each_broken_rule_is_caught() {
        let none = BTreeMap::new();
        // Generation 3 (members 3, 4), generation 5 (member 5), then 6 and 7 unmerged.
        let good = [
            mem(3, 1, 3),
            mem(4, 1, 3),
            mem(5, 1, 5),
            mem(6, 1, 0),
            mem(7, 1, 0),
        ];
        assert!(check(good, &none).is_empty());
        // A crash between two members' words: the newer is not merged yet.
        assert!(check(good[..4].iter().copied(), &none).is_empty());
        let cases = [
            // The newest memtable's word set: an older one is not merged.
            (
                vec![mem(3, 1, 3), mem(6, 1, 0), mem(7, 1, 3)],
                "is not merged",
            ),
            // A generation whose first member does not name itself, or is not there.
            (vec![mem(3, 1, 0), mem(4, 1, 3)], "is not merged"),
            (vec![mem(4, 1, 2), mem(5, 1, 0)], "first member"),
            // A newer member naming an older generation than its neighbour's.
            (vec![mem(3, 1, 3), mem(5, 1, 5), mem(6, 1, 3)], "older than"),
        ];
        for (mems, why) in cases {
            let damaged = check(mems.iter().copied(), &none);
            assert!(
                damaged.get(&1).is_some_and(|d| d.contains(why)),
                "{damaged:?} for {mems:?}"
            );
        }
        // Memtables in SSTs no longer count; other subtables are judged apart.
        let flushed = BTreeMap::from([(1, 4)]);
        let mixed = [mem(3, 1, 9), mem(4, 1, 0), mem(5, 1, 0), mem(8, 2, 8)];
        assert!(check(mixed, &flushed).is_empty());
    }
}
