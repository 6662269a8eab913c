//! The visibility layer: turns a stream of internal keys into what a reader at a snapshot
//! sees — for each user key inside the bounds, its newest version with seq ≤ snapshot,
//! nothing where that version is a tombstone. Forward it stands on the entry it yields,
//! so values are read where they lie; backward it meets a key's versions oldest first and
//! must step past the newest before knowing it is the newest, so it keeps a copy (as
//! LevelDB's DBIter does).

use std::ops::Bound;

use crate::error::Result;
use crate::format::record::Kind;
use crate::iter::InternalIterator;
use crate::keys::{self, IKey};

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Not positioned yet.
    Start,
    /// Forward: the inner iterator stands on the current entry.
    OnInner,
    /// Backward: the current entry is the saved copy.
    Saved,
    Done,
}

pub(crate) struct VisibleIter<I> {
    inner: I,
    snap: u64,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
    reverse: bool,
    state: State,
    /// Forward: the user key already dealt with (yielded, deleted, or an excluded bound).
    skip: Option<Vec<u8>>,
    saved_key: Vec<u8>,
    saved_value: Vec<u8>,
}

impl<I: InternalIterator> VisibleIter<I> {
    pub fn new(
        inner: I,
        snap: u64,
        lower: Bound<Vec<u8>>,
        upper: Bound<Vec<u8>>,
        reverse: bool,
    ) -> VisibleIter<I> {
        VisibleIter {
            inner,
            snap,
            lower,
            upper,
            reverse,
            state: State::Start,
            skip: None,
            saved_key: Vec::new(),
            saved_value: Vec::new(),
        }
    }

    /// Moves to the next visible entry in scan order; `false` at the end.
    pub fn advance(&mut self) -> Result<bool> {
        let found = match (self.state, self.reverse) {
            (State::Done, _) => return Ok(false),
            (State::Start, false) => {
                self.seek_lower();
                self.find_forward()?
            }
            (State::Start, true) => {
                self.seek_upper();
                self.find_backward()?
            }
            (_, false) => {
                self.inner.next();
                self.find_forward()?
            }
            (_, true) => self.find_backward()?,
        };
        if !found {
            self.state = State::Done;
            self.inner.status()?;
        }
        Ok(found)
    }

    /// The current user key. Requires the last `advance` to have returned `true`.
    pub fn key(&self) -> &[u8] {
        match self.state {
            State::Saved => &self.saved_key,
            _ => keys::user_key(self.inner.key()),
        }
    }

    /// The current value, borrowed from where it lies (forward) or from the saved copy.
    pub fn value(&self) -> Result<&[u8]> {
        match self.state {
            State::Saved => Ok(&self.saved_value),
            _ => self.inner.value(),
        }
    }

    fn seek_lower(&mut self) {
        match &self.lower {
            Bound::Included(k) => self.inner.seek(IKey::first_of(k).as_slice()),
            Bound::Excluded(k) => {
                self.inner.seek(IKey::first_of(k).as_slice());
                self.skip = Some(k.clone());
            }
            Bound::Unbounded => self.inner.seek_to_first(),
        }
    }

    fn seek_upper(&mut self) {
        match &self.upper {
            Bound::Included(k) => self.inner.seek_for_prev(IKey::last_of(k).as_slice()),
            Bound::Excluded(k) => self.inner.seek_for_prev(IKey::first_of(k).as_slice()),
            Bound::Unbounded => self.inner.seek_to_last(),
        }
    }

    fn above_upper(&self, user: &[u8]) -> bool {
        match &self.upper {
            Bound::Included(u) => keys::compare_user_keys(user, u).is_gt(),
            Bound::Excluded(u) => keys::compare_user_keys(user, u).is_ge(),
            Bound::Unbounded => false,
        }
    }

    fn below_lower(&self, user: &[u8]) -> bool {
        match &self.lower {
            Bound::Included(l) => keys::compare_user_keys(user, l).is_lt(),
            Bound::Excluded(l) => keys::compare_user_keys(user, l).is_le(),
            Bound::Unbounded => false,
        }
    }

    fn find_forward(&mut self) -> Result<bool> {
        while self.inner.valid() {
            let ikey = self.inner.key();
            let user = keys::user_key(ikey);
            if self.above_upper(user) {
                return Ok(false);
            }
            if self.skip.as_deref() == Some(user) || keys::seq_of(ikey) > self.snap {
                self.inner.next();
                continue;
            }
            // The newest version this snapshot sees: the key is dealt with either way.
            let kind = keys::kind_of(ikey);
            let skip = self.skip.get_or_insert_with(Vec::new);
            skip.clear();
            skip.extend_from_slice(user);
            if kind == Kind::Put {
                self.state = State::OnInner;
                return Ok(true);
            }
            self.inner.next();
        }
        Ok(false)
    }

    fn find_backward(&mut self) -> Result<bool> {
        loop {
            // One user key: walk its versions (oldest first), keeping the newest visible.
            let mut current = false;
            let mut newest: Option<Kind> = None;
            while self.inner.valid() {
                let ikey = self.inner.key();
                let user = keys::user_key(ikey);
                if current && user != self.saved_key.as_slice() {
                    break;
                }
                if self.below_lower(user) {
                    break;
                }
                if !current {
                    current = true;
                    self.saved_key.clear();
                    self.saved_key.extend_from_slice(user);
                }
                if keys::seq_of(ikey) <= self.snap {
                    let kind = keys::kind_of(ikey);
                    if kind == Kind::Put {
                        let value = self.inner.value()?;
                        self.saved_value.clear();
                        self.saved_value.extend_from_slice(value);
                    }
                    newest = Some(kind);
                }
                self.inner.prev();
            }
            if !current {
                return Ok(false);
            }
            if newest == Some(Kind::Put) {
                self.state = State::Saved;
                return Ok(true);
            }
        }
    }
}
