//! Memtable to global index: the oldest frozen memtable's versions move into the open
//! generation's tree (pointers only), its membership is published in its catalog slot,
//! and a view without it is swapped in. A generation past its budget is sealed.

use std::sync::Arc;

use crate::catalog::Catalog;
use crate::compaction::JobCtx;
use crate::error::Result;
use crate::gi::Gi;
use crate::registry::SubtableState;

/// Merges the subtable's oldest frozen memtable, if one is ready; whether one was.
pub(super) fn merge_frozen(ctx: &JobCtx, state: &SubtableState) -> Result<bool> {
    let _merging = state.jobs[0].lock();
    state.check_live()?;
    let view = state.view.load_full();
    let Some(m) = view.memtables.get(1..).and_then(<[_]>::last) else {
        return Ok(false);
    };
    // Still taking the groups appended before it froze; or damaged, in which case
    // nothing newer may pass it (it is read before the global index).
    if !m.index.is_frozen() || m.is_sealed() {
        return Ok(false);
    }
    let (gi, fresh) = match view.gis.first() {
        Some(g) if !g.is_sealed() => (Arc::clone(g), false),
        _ => (Arc::new(Gi::new(Arc::clone(&ctx.pool), m.desc.id)), true),
    };
    gi.merge(m, ctx.seqs.horizon())?;
    Catalog::set_gi(&ctx.pool, &m.desc, gi.id)?;
    state.view.update(|old| {
        let mut next = old.clone();
        next.memtables.retain(|x| !Arc::ptr_eq(x, m));
        if fresh {
            next.gis.insert(0, Arc::clone(&gi));
        }
        next
    });
    ctx.tiers.stats.lock().merges += 1;
    if gi.bytes() >= ctx.options.gi_budget {
        seal(ctx, &gi);
    }
    Ok(true)
}

/// Seals the subtable's open generation, if it holds anything.
pub(super) fn seal_open(ctx: &JobCtx, state: &SubtableState) {
    let _merging = state.jobs[0].lock();
    if let Some(g) = state.view.load().gis.first()
        && !g.is_sealed()
    {
        seal(ctx, g);
    }
}

fn seal(ctx: &JobCtx, gi: &Arc<Gi>) {
    gi.seal();
    gi.index.freeze();
    ctx.background.build_filter(Arc::clone(gi) as _);
}
