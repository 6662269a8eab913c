//! Read views: per subtable, one immutable set of the structures that hold its data — the
//! active memtable and the frozen ones, newest first (the global index and SST levels join
//! it later) — swapped as a unit. Readers load the current view without a lock and hold it
//! (or the memtables in it) for as long as they read; a structure leaves PM only after
//! the last view naming it is gone, which is what makes reclamation safe.

use std::sync::Arc;

use arc_swap::{ArcSwap, Guard};

use crate::memtable::Memtable;

#[derive(Default)]
pub(crate) struct ReadView {
    /// Newest first: the active memtable (if any), then the frozen ones.
    memtables: Vec<Arc<Memtable>>,
}

impl ReadView {
    /// The memtables, newest first.
    pub fn memtables(&self) -> &[Arc<Memtable>] {
        &self.memtables
    }

    /// The memtable appends go to, unless it is full or sealed.
    pub fn active(&self) -> Option<&Arc<Memtable>> {
        self.memtables.first()
    }
}

/// The current view of one subtable.
pub(crate) struct ViewCell(ArcSwap<ReadView>);

impl ViewCell {
    pub fn new(memtables: Vec<Arc<Memtable>>) -> ViewCell {
        ViewCell(ArcSwap::from_pointee(ReadView { memtables }))
    }

    /// The current view, without a lock and, in the common case, without touching a
    /// shared reference count.
    pub fn load(&self) -> Guard<Arc<ReadView>> {
        self.0.load()
    }

    /// The current view, owned (for readers that outlive the call, such as scans).
    pub fn load_full(&self) -> Arc<ReadView> {
        self.0.load_full()
    }

    /// Freezes the active memtable: `fresh` becomes the active one and the rest stay
    /// readable behind it. Only the commit leader calls this, so views never race.
    pub fn freeze(&self, fresh: Arc<Memtable>) {
        let old = self.0.load();
        let mut memtables = Vec::with_capacity(old.memtables.len() + 1);
        memtables.push(fresh);
        memtables.extend(old.memtables.iter().cloned());
        self.0.store(Arc::new(ReadView { memtables }));
    }

    /// Empties the view (the subtable was dropped) and returns what it held.
    pub fn clear(&self) -> Vec<Arc<Memtable>> {
        let old = self.0.swap(Arc::new(ReadView::default()));
        old.memtables.clone()
    }
}
