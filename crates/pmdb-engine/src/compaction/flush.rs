//! Global index to level 1: the oldest sealed generation is merged with the level-1
//! files it overlaps into new level-1 files. One manifest edit adds them, deletes the
//! files they replace, records that the generation's memtables are in SSTs and adds the
//! generation's record bytes and the files' bytes to the write totals; once it
//! is durable the members' catalog slots are freed and their PM goes back to the pool
//! in one batch (when the last reader of the generation lets go). A crash after the edit
//! and before the slots are freed leaves memtables the manifest calls flushed: recovery
//! frees them (the record's two homes, and the rule that decides between them).

use std::collections::HashSet;
use std::sync::Arc;

use crate::compaction::JobCtx;
use crate::compaction::output::{self, Target};
use crate::error::Result;
use crate::format::manifest::{Change, WriteTotals};
use crate::iter::InternalIterator;
use crate::iter::index::IndexIter;
use crate::keys;
use crate::registry::SubtableState;

/// Compacts the subtable's oldest generation to level 1 if it is sealed; whether it was.
pub(super) fn flush_sealed(ctx: &JobCtx, state: &SubtableState) -> Result<bool> {
    let _l1 = state.jobs[1].lock();
    state.check_live()?;
    let view = state.view.load_full();
    let Some(gi) = view.gis.last().filter(|g| g.is_sealed()).cloned() else {
        return Ok(false);
    };
    let horizon = ctx.seqs.horizon();
    let mut bounds = IndexIter::new(Arc::clone(&gi));
    bounds.seek_to_first();
    let range = if bounds.valid() {
        let lo = keys::user_key(bounds.key()).to_vec();
        bounds.seek_to_last();
        bounds.status()?;
        Some((lo, keys::user_key(bounds.key()).to_vec()))
    } else {
        bounds.status()?;
        None
    };
    let replaced = match &range {
        Some((lo, hi)) => view.levels.overlapping(1, lo, hi),
        None => Vec::new(),
    };
    let mut inputs: Vec<Box<dyn InternalIterator>> =
        vec![Box::new(IndexIter::new(Arc::clone(&gi)))];
    inputs.extend(
        replaced
            .iter()
            .map(|t| Box::new(t.sst.compaction_iter()) as Box<dyn InternalIterator>),
    );
    let added = output::write(
        ctx,
        inputs,
        &Target {
            subtable: state.id,
            level: 1,
            horizon,
            levels: &view.levels,
        },
    )?;
    let mut changes: Vec<Change> = added
        .iter()
        .map(|t| Change::AddFile(t.meta.clone()))
        .collect();
    changes.extend(replaced.iter().map(|t| Change::DeleteFile {
        subtable: state.id,
        level: 1,
        number: t.meta.number,
    }));
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
    let deleted: HashSet<u64> = replaced.iter().map(|t| t.meta.number).collect();
    state.view.update(|old| {
        let mut next = old.clone();
        next.gis.retain(|g| !Arc::ptr_eq(g, &gi));
        next.levels = Arc::new(old.levels.apply(&deleted, added.clone()));
        next
    });
    ctx.tiers.remove_files(&deleted);
    let mut stats = ctx.tiers.stats.lock();
    stats.flushes += 1;
    stats.compaction_bytes_read += replaced.iter().map(|t| t.meta.size).sum::<u64>();
    Ok(true)
}
