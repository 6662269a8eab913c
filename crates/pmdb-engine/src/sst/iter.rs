//! The table's source of the iterator stack: a two-level cursor, an index cursor over the
//! data blocks and a cursor in the current one. It owns the table (`Arc<Sst>`) and its
//! blocks, so a scan can outlive the call that made it.

use std::sync::Arc;

use pmdb_pmem::PmemError;

use super::block::BlockIter;
use super::table::Sst;
use crate::error::{DbError, Result};
use crate::format::sst::BlockHandle;
use crate::iter::InternalIterator;

impl Sst {
    /// An unpositioned cursor over the table's entries.
    pub fn iter(self: &Arc<Self>) -> SstIter {
        SstIter {
            index: self.index_iter(),
            sst: Arc::clone(self),
            cached: true,
            data: None,
            data_handle: BlockHandle::default(),
            error: None,
        }
    }

    /// A cursor for a compaction: it reads each block once, and the table goes away
    /// after it, so its blocks bypass the cache rather than push out what readers use.
    pub fn compaction_iter(self: &Arc<Self>) -> SstIter {
        SstIter {
            cached: false,
            ..self.iter()
        }
    }
}

pub(crate) struct SstIter {
    sst: Arc<Sst>,
    /// Whether blocks go through the table's block cache.
    cached: bool,
    index: BlockIter,
    /// A cursor in the block the index cursor is on.
    data: Option<BlockIter>,
    data_handle: BlockHandle,
    error: Option<DbError>,
}

impl SstIter {
    fn fail(&mut self, e: DbError) {
        self.error.get_or_insert(e);
        self.data = None;
    }

    /// Points the data cursor (unpositioned) at the block the index cursor is on; false
    /// if there is none or it cannot be read.
    fn load_block(&mut self) -> bool {
        if !self.index.valid() {
            self.data = None;
            if let Err(e) = self.index.status() {
                let e = self.sst.index_error(e);
                self.fail(e);
            }
            return false;
        }
        let handle = match self.sst.handle_at(&self.index) {
            Ok(handle) => handle,
            Err(e) => {
                self.fail(e);
                return false;
            }
        };
        if self.data.is_some() && self.data_handle == handle {
            return true;
        }
        match self.sst.data_block(handle, self.cached) {
            Ok(block) => {
                self.data = Some(BlockIter::new(block));
                self.data_handle = handle;
                true
            }
            Err(e) => {
                self.fail(e);
                false
            }
        }
    }

    /// Whether the data cursor is on an entry; records its error if it met one.
    fn data_valid(&mut self) -> bool {
        let Some(data) = &self.data else {
            return false;
        };
        if let Err(e) = data.status() {
            let e = self
                .sst
                .block_error("data block", self.data_handle.offset, e);
            self.fail(e);
            return false;
        }
        data.valid()
    }

    /// Moves forward over blocks until the data cursor is on an entry (blocks are never
    /// empty, but a seek can end past a block's last key).
    fn skip_forward(&mut self) {
        while self.error.is_none() && !self.data_valid() {
            if !self.index.valid() {
                self.data = None;
                return;
            }
            self.index.next();
            if !self.load_block() {
                return;
            }
            if let Some(data) = &mut self.data {
                data.seek_to_first();
            }
        }
    }

    fn skip_backward(&mut self) {
        while self.error.is_none() && !self.data_valid() {
            if !self.index.valid() {
                self.data = None;
                return;
            }
            self.index.prev();
            if !self.load_block() {
                return;
            }
            if let Some(data) = &mut self.data {
                data.seek_to_last();
            }
        }
    }

    fn data(&self) -> &BlockIter {
        self.data.as_ref().expect("the iterator is valid")
    }

    fn data_mut(&mut self) -> &mut BlockIter {
        self.data.as_mut().expect("the iterator is valid")
    }
}

impl InternalIterator for SstIter {
    fn valid(&self) -> bool {
        self.error.is_none() && self.data.as_ref().is_some_and(BlockIter::valid)
    }

    fn seek_to_first(&mut self) {
        self.index.seek_to_first();
        if self.load_block() {
            self.data_mut().seek_to_first();
        }
        self.skip_forward();
    }

    fn seek_to_last(&mut self) {
        self.index.seek_to_last();
        if self.load_block() {
            self.data_mut().seek_to_last();
        }
        self.skip_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        self.index.seek(target);
        if self.load_block() {
            self.data_mut().seek(target);
        }
        self.skip_forward();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        // The entry is in the first block whose index key is at or after the target, or
        // in one before it; if no index key is, in the last block.
        self.index.seek(target);
        if !self.index.valid() && self.index.status().is_ok() {
            self.index.seek_to_last();
        }
        if self.load_block() {
            self.data_mut().seek_for_prev(target);
        }
        self.skip_backward();
    }

    fn next(&mut self) {
        self.data_mut().next();
        self.skip_forward();
    }

    fn prev(&mut self) {
        self.data_mut().prev();
        self.skip_backward();
    }

    fn key(&self) -> &[u8] {
        self.data().key()
    }

    fn value(&self) -> Result<&[u8]> {
        Ok(self.data().value())
    }

    fn status(&self) -> Result<()> {
        match &self.error {
            None => Ok(()),
            Some(e) => Err(duplicate(e)),
        }
    }
}

/// A copy of an error met earlier (`status` reports it each time it is asked; `DbError`
/// is not `Clone` because `io::Error` is not).
fn duplicate(e: &DbError) -> DbError {
    match e {
        DbError::Pmem(PmemError::Io { path, source }) => DbError::Pmem(PmemError::Io {
            path: path.clone(),
            source: std::io::Error::new(source.kind(), source.to_string()),
        }),
        DbError::Corrupt(what) => DbError::Corrupt(what.clone()),
        other => DbError::Corrupt(other.to_string()),
    }
}
