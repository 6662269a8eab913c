//! Root cells: how the engine keeps a value in the pool's root area so that a changed
//! root word is caught rather than trusted. A cell is four root words: two copies, each
//! the value and a check word (a crc32 of the cell's place, the copy and the value,
//! beside a fixed tag).
//!
//! A copy is two words, and only single 8-byte stores are atomic, so a crash while one
//! copy is written may leave it torn; the other copy is untouched then. Readers take copy
//! A when it verifies, else copy B; a writer rewrites first the copy readers would not
//! take now, then the other (see [`RootCell::write_first`]). Either way the copy readers
//! take is intact at every instant, so a crash yields the old value or the new one, and
//! a cell both of whose copies fail is damage, never a crash.

use super::FormatError;

/// Root words of one cell.
pub(crate) const CELL_WORDS: usize = 4;
/// High half of every check word ("PMRC"), so an all-zero copy never verifies.
const CHECK_TAG: u64 = (u32::from_le_bytes(*b"PMRC") as u64) << 32;

/// One of a cell's two copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CellCopy {
    A,
    B,
}

impl CellCopy {
    /// Offset of the copy's value word in the cell.
    pub fn at(self) -> usize {
        match self {
            CellCopy::A => 0,
            CellCopy::B => 2,
        }
    }

    pub fn other(self) -> CellCopy {
        match self {
            CellCopy::A => CellCopy::B,
            CellCopy::B => CellCopy::A,
        }
    }
}

/// A verified cell: its value and the copy it was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RootCell {
    pub value: u64,
    pub from: CellCopy,
}

impl RootCell {
    /// The words of one copy of `value` in the cell whose first root word is `cell`.
    pub fn encode_copy(cell: usize, copy: CellCopy, value: u64) -> [u64; 2] {
        [value, check(cell, copy, value)]
    }

    /// Reads the cell whose first root word is `cell` from its four words.
    pub fn decode(cell: usize, words: [u64; CELL_WORDS]) -> Result<RootCell, FormatError> {
        [CellCopy::A, CellCopy::B]
            .into_iter()
            .find(|&copy| {
                let at = copy.at();
                words[at + 1] == check(cell, copy, words[at])
            })
            .map(|from| RootCell {
                value: words[from.at()],
                from,
            })
            .ok_or(FormatError::Checksum)
    }

    /// The copy to rewrite first when the cell changes: the one readers do not take now,
    /// so the one they do stays intact until the first is complete again. Of a cell that
    /// does not verify (never written), either.
    pub fn write_first(current: Option<RootCell>) -> CellCopy {
        current.map_or(CellCopy::A, |c| c.from.other())
    }
}

fn check(cell: usize, copy: CellCopy, value: u64) -> u64 {
    let mut h = crc32fast::Hasher::new();
    h.update(&(cell as u64).to_le_bytes());
    h.update(&(copy.at() as u64).to_le_bytes());
    h.update(&value.to_le_bytes());
    CHECK_TAG | h.finalize() as u64
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::testing::fuzz_config;
    use super::*;

    fn cell(cell: usize, a: u64, b: u64) -> [u64; CELL_WORDS] {
        let [av, ac] = RootCell::encode_copy(cell, CellCopy::A, a);
        let [bv, bc] = RootCell::encode_copy(cell, CellCopy::B, b);
        [av, ac, bv, bc]
    }

    #[test]
    fn reads_copy_a_then_copy_b() {
        let words = cell(1, 7, 9);
        assert_eq!(
            RootCell::decode(1, words),
            Ok(RootCell {
                value: 7,
                from: CellCopy::A
            })
        );
        let mut torn = words;
        torn[0] = 8;
        assert_eq!(
            RootCell::decode(1, torn),
            Ok(RootCell {
                value: 9,
                from: CellCopy::B
            })
        );
        torn[3] ^= 1;
        assert_eq!(RootCell::decode(1, torn), Err(FormatError::Checksum));
        assert_eq!(RootCell::decode(1, [0; 4]), Err(FormatError::Checksum));
    }

    #[test]
    fn every_bit_flip_of_a_copy_is_caught_and_the_other_copy_read() {
        let words = cell(5, 0x1234_5678, 0x1234_5678);
        for word in 0..CELL_WORDS {
            for bit in 0..64 {
                let mut w = words;
                w[word] ^= 1 << bit;
                let got = RootCell::decode(5, w).unwrap();
                assert_eq!(got.value, 0x1234_5678, "word {word} bit {bit}");
                assert_eq!(got.from == CellCopy::A, word >= 2, "word {word} bit {bit}");
            }
        }
    }

    #[test]
    fn a_cell_moved_to_another_place_does_not_verify() {
        assert!(RootCell::decode(5, cell(1, 3, 3)).is_err());
        let words = cell(1, 3, 3);
        assert!(RootCell::decode(1, [words[2], words[3], words[0], words[1]]).is_err());
    }

    #[test]
    fn the_copy_read_is_written_last() {
        assert_eq!(RootCell::write_first(None), CellCopy::A);
        let from_a = RootCell::decode(1, cell(1, 3, 3)).ok();
        assert_eq!(RootCell::write_first(from_a), CellCopy::B);
        let mut torn = cell(1, 3, 3);
        torn[1] = 0;
        assert_eq!(
            RootCell::write_first(RootCell::decode(1, torn).ok()),
            CellCopy::A
        );
    }

    proptest! {
        #![proptest_config(fuzz_config())]

        #[test]
        fn arbitrary_words_never_panic(words in prop::array::uniform4(any::<u64>())) {
            if let Ok(c) = RootCell::decode(1, words) {
                prop_assert_eq!(words[c.from.at() + 1], check(1, c.from, c.value));
            }
        }
    }
}
