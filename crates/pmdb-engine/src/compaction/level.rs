//! Compaction by debt: the level furthest over its target goes first. Level 0's target is
//! `l0_compaction_trigger` files (flushed generations), level 1's `l1_target` bytes,
//! each deeper one `level_ratio` times more. Level 0 gives all its files, merged into
//! the level-1 files they overlap; a deeper level gives one file, picked round robin by
//! key, merged with the files of the next level it overlaps (the edit adds the bytes
//! written to the write totals). A single file of level 1 or deeper that overlaps
//! nothing below moves down by a manifest edit alone, writing nothing. A deeper level's
//! jobs are a file's key range, so each is short and jobs on other levels run beside
//! it; flushes go on beside level 0's.

use std::collections::HashSet;
use std::sync::Arc;

use crate::compaction::JobCtx;
use crate::compaction::output::{self, Target};
use crate::error::Result;
use crate::format::manifest::{Change, MAX_LEVEL, WriteTotals};
use crate::iter::InternalIterator;
use crate::keys;
use crate::levels::Levels;
use crate::registry::SubtableState;
use crate::table::Table;

/// The level most over its target, if any is.
fn pick_level(ctx: &JobCtx, levels: &Levels) -> Option<u8> {
    let trigger = ctx.options.l0_compaction_trigger.max(1) as f64;
    let mut best = Some((levels.level(0).len() as f64 / trigger, 0)).filter(|(s, _)| *s >= 1.0);
    let mut target = ctx.options.l1_target as f64;
    for level in 1..MAX_LEVEL.min(levels.depth() + 1) {
        let score = levels.bytes(level) as f64 / target;
        if score >= 1.0 && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, level));
        }
        target *= ctx.options.level_ratio as f64;
    }
    best.map(|(_, l)| l)
}

/// Runs one compaction of the subtable's level most over its target; whether there was
/// one to do.
pub(super) fn compact_one(ctx: &JobCtx, state: &SubtableState) -> Result<bool> {
    match pick_level(ctx, &state.view.load().levels) {
        Some(0) => compact_level0(ctx, state),
        Some(level) => compact_file(ctx, state, level),
        None => Ok(false),
    }
}

/// Merges every file of level 0 into level 1; whether there was one.
pub(super) fn compact_level0(ctx: &JobCtx, state: &SubtableState) -> Result<bool> {
    let _lower = state.level_lock(1).lock();
    state.check_live()?;
    let view = state.view.load_full();
    let flushed = view.levels.level(0).to_vec();
    compact(ctx, state, &view.levels, 0, flushed)
}

/// Compacts one file of level `level` (1 or deeper), the next round robin by key.
fn compact_file(ctx: &JobCtx, state: &SubtableState, level: u8) -> Result<bool> {
    let _upper = state.level_lock(level).lock();
    let _lower = state.level_lock(level + 1).lock();
    state.check_live()?;
    let view = state.view.load_full();
    let files = view.levels.level(level);
    if files.is_empty() {
        return Ok(false);
    }
    let file = {
        let mut cursors = state.cursors.lock();
        let cursor = &mut cursors[usize::from(level)];
        let at = if cursor.is_empty() {
            0
        } else {
            files.partition_point(|t| keys::compare(&t.meta.smallest, cursor).is_le())
        };
        let file = Arc::clone(files.get(at).unwrap_or(&files[0]));
        cursor.clone_from(&file.meta.largest);
        file
    };
    compact(ctx, state, &view.levels, level, vec![file])
}

/// Moves `upper`, files of `level`, into the next level: merged with the files there that
/// they overlap, or, for one file of level 1 or deeper that overlaps none, by the
/// manifest edit alone.
fn compact(
    ctx: &JobCtx,
    state: &SubtableState,
    levels: &Levels,
    level: u8,
    upper: Vec<Arc<Table>>,
) -> Result<bool> {
    let (Some(lo), Some(hi)) = (
        upper
            .iter()
            .map(|t| t.smallest_user())
            .min_by(|a, b| keys::compare_user_keys(a, b)),
        upper
            .iter()
            .map(|t| t.largest_user())
            .max_by(|a, b| keys::compare_user_keys(a, b)),
    ) else {
        return Ok(false);
    };
    let below = levels.overlapping(level + 1, lo, hi);
    let deleted: HashSet<u64> = upper.iter().chain(&below).map(|t| t.meta.number).collect();
    let mut changes: Vec<Change> = upper
        .iter()
        .chain(&below)
        .map(|t| Change::DeleteFile {
            subtable: state.id,
            level: t.meta.level,
            number: t.meta.number,
        })
        .collect();
    // A level-0 file is a whole generation: rewritten, it is cut into files of the
    // target size like the rest of level 1.
    let rewritten = level == 0 || !below.is_empty();
    let added = if rewritten {
        let inputs: Vec<Box<dyn InternalIterator>> = upper
            .iter()
            .chain(&below)
            .map(|t| Box::new(t.sst.compaction_iter()) as Box<dyn InternalIterator>)
            .collect();
        output::write(
            ctx,
            inputs,
            &Target {
                subtable: state.id,
                level: level + 1,
                horizon: ctx.seqs.horizon(),
                levels,
            },
        )?
    } else {
        let mut meta = upper[0].meta.clone();
        meta.level = level + 1;
        vec![Arc::new(Table {
            meta,
            sst: Arc::clone(&upper[0].sst),
        })]
    };
    changes.extend(added.iter().map(|t| Change::AddFile(t.meta.clone())));
    if rewritten {
        changes.push(Change::Written(WriteTotals {
            compaction_bytes: added.iter().map(|t| t.meta.size).sum(),
            ..WriteTotals::default()
        }));
    }
    ctx.tiers.log(changes)?;
    state.view.update(|old| {
        let mut next = old.clone();
        next.levels = Arc::new(old.levels.apply(&deleted, added.clone()));
        next
    });
    if rewritten {
        ctx.tiers.remove_files(&deleted);
        ctx.tiers.stats.lock().compaction_bytes_read +=
            upper.iter().chain(&below).map(|t| t.meta.size).sum::<u64>();
    }
    ctx.tiers.stats.lock().compactions += 1;
    Ok(true)
}
