//! One live SST file as the levels hold it: what the manifest says of it, and the open
//! table.

use std::sync::Arc;

use crate::format::manifest::FileMeta;
use crate::keys;
use crate::sst::table::Sst;

/// One live SST file.
pub(crate) struct Table {
    pub meta: FileMeta,
    pub sst: Arc<Sst>,
}

impl Table {
    pub fn smallest_user(&self) -> &[u8] {
        keys::user_key(&self.meta.smallest)
    }

    pub fn largest_user(&self) -> &[u8] {
        keys::user_key(&self.meta.largest)
    }

    pub fn overlaps(&self, lo: &[u8], hi: &[u8]) -> bool {
        keys::compare_user_keys(self.smallest_user(), hi).is_le()
            && keys::compare_user_keys(self.largest_user(), lo).is_ge()
    }
}
