//! The source of the iterator stack over one SST level: its files are sorted and do not
//! overlap, so the level reads as one run, opening one file's iterator at a time.

use std::sync::Arc;

use crate::error::Result;
use crate::iter::InternalIterator;
use crate::keys;
use crate::sst::iter::SstIter;
use crate::table::Table;

pub(crate) struct LevelIter {
    files: Vec<Arc<Table>>,
    /// The file `current` reads, if any.
    at: usize,
    current: Option<SstIter>,
}

impl LevelIter {
    pub fn new(files: Vec<Arc<Table>>) -> LevelIter {
        LevelIter {
            files,
            at: 0,
            current: None,
        }
    }

    fn open(&mut self, at: usize) -> Option<&mut SstIter> {
        if at >= self.files.len() {
            self.current = None;
            return None;
        }
        if self.at != at || self.current.is_none() {
            self.at = at;
            self.current = Some(self.files[at].sst.iter());
        }
        self.current.as_mut()
    }

    /// Moves on to the following files while the current one is exhausted.
    fn skip_forward(&mut self) {
        while self
            .current
            .as_ref()
            .is_some_and(|c| !c.valid() && c.status().is_ok())
        {
            let next = self.at + 1;
            match self.open(next) {
                Some(it) => it.seek_to_first(),
                None => return,
            }
        }
    }

    fn skip_backward(&mut self) {
        while self
            .current
            .as_ref()
            .is_some_and(|c| !c.valid() && c.status().is_ok())
        {
            if self.at == 0 {
                return;
            }
            let prev = self.at - 1;
            if let Some(it) = self.open(prev) {
                it.seek_to_last();
            }
        }
    }
}

impl InternalIterator for LevelIter {
    fn valid(&self) -> bool {
        self.current.as_ref().is_some_and(|c| c.valid())
    }

    fn seek_to_first(&mut self) {
        if let Some(it) = self.open(0) {
            it.seek_to_first();
        }
        self.skip_forward();
    }

    fn seek_to_last(&mut self) {
        let last = self.files.len().wrapping_sub(1);
        if let Some(it) = self.open(last) {
            it.seek_to_last();
        }
        self.skip_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        let at = self
            .files
            .partition_point(|t| keys::compare(&t.meta.largest, target).is_lt());
        if let Some(it) = self.open(at) {
            it.seek(target);
        }
        self.skip_forward();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        // The last file whose smallest key is at or before the target.
        let after = self
            .files
            .partition_point(|t| keys::compare(&t.meta.smallest, target).is_le());
        match after.checked_sub(1) {
            Some(at) => {
                if let Some(it) = self.open(at) {
                    it.seek_for_prev(target);
                }
                self.skip_backward();
            }
            None => self.current = None,
        }
    }

    fn next(&mut self) {
        if let Some(it) = self.current.as_mut() {
            it.next();
        }
        self.skip_forward();
    }

    fn prev(&mut self) {
        if let Some(it) = self.current.as_mut() {
            it.prev();
        }
        self.skip_backward();
    }

    fn key(&self) -> &[u8] {
        self.current.as_ref().expect("valid").key()
    }

    fn value(&self) -> Result<&[u8]> {
        self.current.as_ref().expect("valid").value()
    }

    fn status(&self) -> Result<()> {
        self.current.as_ref().map_or(Ok(()), |c| c.status())
    }
}
