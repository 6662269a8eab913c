//! `PmOff`: a persistent address — extent index and byte offset packed in 8 bytes — so a
//! pool can be mapped anywhere and an address can be published with one atomic store.

use std::fmt;

const OFFSET_BITS: u32 = 48;
const OFFSET_MASK: u64 = (1 << OFFSET_BITS) - 1;

/// A persistent address inside a pool: extent index (16 bits) and offset (48 bits).
///
/// Offset 0 of every extent is its header, so the all-zero value never names data and
/// serves as the null address.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PmOff(u64);

impl PmOff {
    /// The null address.
    pub const NULL: PmOff = PmOff(0);

    /// The largest offset an extent can have.
    pub const MAX_OFFSET: u64 = OFFSET_MASK;

    /// Builds an address; `offset` must fit in 48 bits.
    pub const fn new(extent: u16, offset: u64) -> PmOff {
        assert!(offset <= OFFSET_MASK, "PmOff offset beyond 48 bits");
        PmOff(((extent as u64) << OFFSET_BITS) | offset)
    }

    /// Rebuilds an address from its stored 8-byte form.
    pub const fn from_raw(raw: u64) -> PmOff {
        PmOff(raw)
    }

    /// The 8-byte form to store in PM.
    pub const fn to_raw(self) -> u64 {
        self.0
    }

    pub const fn extent(self) -> u16 {
        (self.0 >> OFFSET_BITS) as u16
    }

    pub const fn offset(self) -> u64 {
        self.0 & OFFSET_MASK
    }

    pub const fn is_null(self) -> bool {
        self.0 == 0
    }

    /// The address `bytes` further on in the same extent, if it stays representable.
    pub fn checked_add(self, bytes: u64) -> Option<PmOff> {
        let offset = self.offset().checked_add(bytes)?;
        (offset <= OFFSET_MASK).then(|| PmOff::new(self.extent(), offset))
    }
}

impl fmt::Debug for PmOff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PmOff({}:{:#x})", self.extent(), self.offset())
    }
}

impl fmt::Display for PmOff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{:#x}", self.extent(), self.offset())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_extent_and_offset() {
        let off = PmOff::new(7, 0x1234_5678_9abc);
        assert_eq!(off.extent(), 7);
        assert_eq!(off.offset(), 0x1234_5678_9abc);
        assert_eq!(PmOff::from_raw(off.to_raw()), off);
        assert!(!off.is_null());
        assert!(PmOff::NULL.is_null());
    }

    #[test]
    fn checked_add_stays_in_extent() {
        let off = PmOff::new(3, PmOff::MAX_OFFSET - 8);
        assert_eq!(off.checked_add(8), Some(PmOff::new(3, PmOff::MAX_OFFSET)));
        assert_eq!(off.checked_add(9), None);
    }
}
