//! Read views: per subtable, one immutable set of the structures that hold its data —
//! the active memtable and the frozen ones, the global-index generations, and the SST
//! levels, each newest first — swapped as a unit. Readers load the current view without
//! a lock and hold it (or what is in it) for as long as they read; a structure leaves PM
//! or the SST directory only after the last view naming it is gone, which is what makes
//! reclamation safe. Writers of views (the commit leader freezing a memtable, the
//! background jobs merging and compacting) replace the view by compare-and-swap, each
//! applying its own change to whatever view is current.

use std::sync::Arc;

use arc_swap::{ArcSwap, Guard};

use crate::gi::Gi;
use crate::iter::InternalIterator;
use crate::iter::index::IndexIter;
use crate::levels::Levels;
use crate::memtable::Memtable;

#[derive(Clone, Default)]
pub(crate) struct ReadView {
    /// Newest first: the active memtable (if any), then the frozen ones.
    pub memtables: Vec<Arc<Memtable>>,
    /// Global-index generations, newest first; the first takes merges unless sealed.
    pub gis: Vec<Arc<Gi>>,
    pub levels: Arc<Levels>,
}

impl ReadView {
    /// The memtables, newest first.
    pub fn memtables(&self) -> &[Arc<Memtable>] {
        &self.memtables
    }

    /// A cursor over every version this view holds, one source per structure (newest
    /// first), for a merging iterator.
    pub fn sources(&self) -> Vec<Box<dyn InternalIterator>> {
        let mut sources: Vec<Box<dyn InternalIterator>> = self
            .memtables
            .iter()
            .map(|m| Box::new(IndexIter::new(Arc::clone(m))) as Box<dyn InternalIterator>)
            .chain(
                self.gis
                    .iter()
                    .map(|g| Box::new(IndexIter::new(Arc::clone(g))) as Box<dyn InternalIterator>),
            )
            .collect();
        sources.extend(self.levels.iters());
        sources
    }

    /// The memtable appends go to, unless it is full or sealed.
    pub fn active(&self) -> Option<&Arc<Memtable>> {
        self.memtables.first()
    }
}

/// The current view of one subtable.
pub(crate) struct ViewCell(ArcSwap<ReadView>);

impl ViewCell {
    pub fn new(view: ReadView) -> ViewCell {
        ViewCell(ArcSwap::from_pointee(view))
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

    /// Replaces the view with `change` applied to the current one (again, if another
    /// writer replaced it meanwhile).
    pub fn update(&self, change: impl Fn(&ReadView) -> ReadView) {
        self.0.rcu(|old| change(old));
    }

    /// Freezes the active memtable: `fresh` becomes the active one and the rest stay
    /// readable behind it.
    pub fn freeze(&self, fresh: Arc<Memtable>) {
        self.update(|old| {
            let mut view = old.clone();
            view.memtables.insert(0, Arc::clone(&fresh));
            view
        });
    }

    /// Empties the view (the subtable was dropped) and returns what it held.
    pub fn clear(&self) -> Arc<ReadView> {
        self.0.swap(Arc::new(ReadView::default()))
    }
}
