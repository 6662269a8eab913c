//! Leveled compaction: the level furthest over its target (level 1's is `l1_target`,
//! each deeper one `level_ratio` times more) gives one file, picked round robin by key,
//! which is merged with the files of the next level it overlaps (the edit adds the bytes
//! written to the write totals). A file that overlaps nothing below moves down by a
//! manifest edit alone, writing nothing. Jobs are a file's key range, so each is short
//! and jobs on other levels run beside it.

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
    let mut target = ctx.options.l1_target as f64;
    let mut best: Option<(f64, u8)> = None;
    for level in 1..MAX_LEVEL.min(levels.depth() + 1) {
        let score = levels.bytes(level) as f64 / target;
        if score >= 1.0 && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, level));
        }
        target *= ctx.options.level_ratio as f64;
    }
    best.map(|(_, l)| l)
}

/// Compacts one file of the subtable's fullest level; whether there was one to do.
pub(super) fn compact_one(ctx: &JobCtx, state: &SubtableState) -> Result<bool> {
    let Some(level) = pick_level(ctx, &state.view.load().levels) else {
        return Ok(false);
    };
    let _upper = state.jobs[usize::from(level)].lock();
    let _lower = state.jobs[usize::from(level) + 1].lock();
    state.check_live()?;
    let view = state.view.load_full();
    let levels = &view.levels;
    let files = levels.level(level);
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
    let below = levels.overlapping(level + 1, file.smallest_user(), file.largest_user());
    let deleted: HashSet<u64> = below.iter().chain([&file]).map(|t| t.meta.number).collect();
    let mut changes: Vec<Change> = [&file]
        .into_iter()
        .chain(&below)
        .map(|t| Change::DeleteFile {
            subtable: state.id,
            level: t.meta.level,
            number: t.meta.number,
        })
        .collect();
    let added = if below.is_empty() {
        let mut meta = file.meta.clone();
        meta.level = level + 1;
        let moved = Arc::new(Table {
            meta: meta.clone(),
            sst: Arc::clone(&file.sst),
        });
        vec![moved]
    } else {
        let inputs: Vec<Box<dyn InternalIterator>> = [&file]
            .into_iter()
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
    };
    changes.extend(added.iter().map(|t| Change::AddFile(t.meta.clone())));
    if !below.is_empty() {
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
    if !below.is_empty() {
        ctx.tiers.remove_files(&deleted);
        let mut stats = ctx.tiers.stats.lock();
        stats.compaction_bytes_read +=
            file.meta.size + below.iter().map(|t| t.meta.size).sum::<u64>();
    }
    ctx.tiers.stats.lock().compactions += 1;
    Ok(true)
}
