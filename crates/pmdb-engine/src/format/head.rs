//! The memtable head word: the 8-byte publish point of the log-free commit. It holds the
//! start of the last published part (high half) and the end of the published log (low
//! half), positions in the memtable's log (`zone index * zone size + offset`). One atomic
//! store moves both, so recovery always finds the last part's chunk header, whose lsn
//! and part count say whether that part's group is complete, and can roll the part back
//! by setting the end to its start.

use super::FormatError;

/// Positions are 32-bit: a memtable takes no more groups once it holds `memtable_size`
/// bytes, which the options keep at most 2 GiB, and a group's part is bounded by
/// [`max_part_bytes`], so the last part always ends within the word.
const HALF: u32 = 32;
pub(crate) const HALF_MASK: u64 = (1 << HALF) - 1;

/// The most record bytes (as stored, headers and padding included) one part of a group
/// may hold in a memtable of `memtable_size` bytes with zones of `zone_size` bytes. A part
/// starts before `memtable_size` (plus a zone header); of two zones in a row the second
/// starts with a record that did not fit in the first, so each pair holds more than one
/// zone's room and the part takes less than twice its bytes, plus a zone at each end.
pub(crate) fn max_part_bytes(memtable_size: u64, zone_size: u64) -> u64 {
    HALF_MASK
        .saturating_sub(memtable_size)
        .saturating_sub(4 * zone_size)
        / 2
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HeadWord {
    /// Start of the last published part.
    pub start: u64,
    /// End of the published log; 0 while nothing is published.
    pub end: u64,
}

impl HeadWord {
    pub fn pack(self) -> u64 {
        assert!(
            self.start <= self.end && self.end <= HALF_MASK,
            "head positions {}..{} do not fit a head word",
            self.start,
            self.end
        );
        (self.start << HALF) | self.end
    }

    pub fn unpack(word: u64) -> Result<HeadWord, FormatError> {
        let head = HeadWord {
            start: word >> HALF,
            end: word & HALF_MASK,
        };
        if head.start > head.end {
            return Err(FormatError::Invalid(
                "head word: last part starts past the end",
            ));
        }
        Ok(head)
    }

    /// Start of the last published part, if the head names one.
    pub fn last_part(self) -> Option<u64> {
        (self.start != self.end).then_some(self.start)
    }

    /// The head with its last part unpublished.
    pub fn rolled_back(self) -> HeadWord {
        HeadWord {
            start: self.start,
            end: self.start,
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::testing::fuzz_config;
    use super::*;

    #[test]
    fn round_trips() {
        for head in [
            HeadWord { start: 0, end: 0 },
            HeadWord {
                start: 64,
                end: 4096,
            },
            HeadWord {
                start: HALF_MASK,
                end: HALF_MASK,
            },
        ] {
            assert_eq!(HeadWord::unpack(head.pack()), Ok(head));
        }
        assert_eq!(
            HeadWord {
                start: 64,
                end: 4096
            }
            .pack(),
            (64 << 32) | 4096
        );
    }

    #[test]
    fn a_part_ends_within_the_word_and_takes_a_gigabyte_value() {
        let zone = 4 << 20;
        for memtable in [zone, 64 << 20, u32::MAX as u64 / 2] {
            let part = max_part_bytes(memtable, zone);
            // The worst case: started at the memtable's end, each zone pair one zone full.
            assert!(memtable + 2 * part + 4 * zone <= HALF_MASK, "{memtable}");
        }
        // With the default 64 MiB memtables: PostgreSQL's largest value and its row.
        assert!(max_part_bytes(64 << 20, zone) > (1 << 30) + (64 << 20));
    }

    #[test]
    fn parts_and_rollback() {
        assert_eq!(HeadWord { start: 0, end: 0 }.last_part(), None);
        let head = HeadWord {
            start: 64,
            end: 4096,
        };
        assert_eq!(head.last_part(), Some(64));
        assert_eq!(head.rolled_back(), HeadWord { start: 64, end: 64 });
        assert_eq!(head.rolled_back().last_part(), None);
    }

    #[test]
    fn a_start_past_the_end_is_refused() {
        assert!(HeadWord::unpack((4097 << 32) | 4096).is_err());
        assert!(HeadWord::unpack(1 << 32).is_err());
    }

    #[test]
    #[should_panic(expected = "do not fit")]
    fn positions_past_32_bits_are_not_packed() {
        HeadWord {
            start: 0,
            end: 1 << 32,
        }
        .pack();
    }

    proptest! {
        #![proptest_config(fuzz_config())]

        #[test]
        fn arbitrary_words_never_panic(word in any::<u64>()) {
            if let Ok(head) = HeadWord::unpack(word) {
                prop_assert_eq!(head.pack(), word);
            }
        }
    }
}
