//! Global index to level 0: the oldest generation, sealed, is written out as one SST
//! file of level 0, merged with nothing, so a flush costs one write of the generation's
//! live versions however large the levels below are. One manifest edit adds the file,
//! records that the generation's memtables are in SSTs and adds the generation's record
//! bytes and the file's bytes to the write totals; once it is durable the members'
//! catalog slots are freed and their PM goes back to the pool in one batch (when the
//! last reader of the generation lets go). A crash after the edit and before the slots
//! are freed leaves memtables the manifest calls flushed: recovery frees them (the
//! record's two homes, and the rule that decides between them).

use std::sync::Arc;

use crate::compaction::JobCtx;
use crate::compaction::output::{self, Target};
use crate::error::Result;
use crate::format::manifest::{Change, WriteTotals};
use crate::iter::index::IndexIter;
use crate::registry::SubtableState;

/// Writes the subtable's oldest generation to level 0 if it is sealed; whether it was.
pub(super) fn flush_sealed(ctx: &JobCtx, state: &SubtableState) -> Result<bool> {
    let _l0 = state.level_lock(0).lock();
    state.check_live()?;
    let view = state.view.load_full();
    let Some(gi) = view.gis.last().filter(|g| g.is_sealed()).cloned() else {
        return Ok(false);
    };
    let added = output::write(
        ctx,
        vec![Box::new(IndexIter::new(Arc::clone(&gi)))],
        &Target {
            subtable: state.id,
            level: 0,
            horizon: ctx.seqs.horizon(),
            levels: &view.levels,
        },
    )?;
    let mut changes: Vec<Change> = added
        .iter()
        .map(|t| Change::AddFile(t.meta.clone()))
        .collect();
    let max_seq = added.iter().map(|t| t.meta.max_seq).max().unwrap_or(0);
    changes.extend([
        Change::Flushed {
            subtable: state.id,
            memtable: gi.max_member(),
        },
        Change::LastSeq(max_seq),
        Change::NextMemtable(ctx.registry.next_memtable_id()),
        Change::Written(WriteTotals {
            flushed_record_bytes: gi.record_bytes(),
            flush_bytes: added.iter().map(|t| t.meta.size).sum(),
            compaction_bytes: 0,
        }),
    ]);
    let free = || -> Result<()> {
        for member in gi.member_descs() {
            ctx.registry.free_slot(member.slot)?;
        }
        gi.retire();
        Ok(())
    };
    if ctx.options.broken_free_order() {
        free()?;
        ctx.tiers.log(changes)?;
    } else {
        ctx.tiers.log(changes)?;
        free()?;
    }
    state.view.update(|old| {
        let mut next = old.clone();
        next.gis.retain(|g| !Arc::ptr_eq(g, &gi));
        next.levels = Arc::new(old.levels.apply(&Default::default(), added.clone()));
        next
    });
    ctx.tiers.stats.lock().flushes += 1;
    Ok(true)
}
