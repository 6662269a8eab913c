//! Writing a compaction's output: the merged inputs, less the versions no reader needs,
//! into SST files of about `target_file_size`, cut between user keys so a key's
//! versions stay in one file of a level; a flush's output, for level 0, is one file.
//!
//! What is kept of a key: every version newer than the horizon (the oldest sequence
//! number a reader may read at), and the newest version at or below it — unless that is
//! a tombstone and no deeper level holds the key, when it hides nothing and goes too.

use std::sync::Arc;

use crate::compaction::JobCtx;
use crate::error::{DbError, Result};
use crate::format::record::Kind;
use crate::iter::InternalIterator;
use crate::iter::merge::MergingIterator;
use crate::keys;
use crate::levels::Levels;
use crate::sst::writer::SstWriter;
use crate::table::Table;
use crate::tiers::file_meta;

/// What a compaction writes into.
pub(super) struct Target<'a> {
    pub subtable: u32,
    pub level: u8,
    pub horizon: u64,
    /// The levels as they were when the job started (for the tombstone rule).
    pub levels: &'a Levels,
}

/// Writes `inputs`, merged, as files of `target.level`; returns them, opened.
pub(super) fn write(
    ctx: &JobCtx,
    inputs: Vec<Box<dyn InternalIterator>>,
    target: &Target<'_>,
) -> Result<Vec<Arc<Table>>> {
    let mut merged = MergingIterator::new(inputs);
    merged.seek_to_first();
    let mut done = Vec::new();
    let mut open: Option<(u64, SstWriter)> = None;
    let mut key: Vec<u8> = Vec::new();
    let mut below_kept = false;
    let mut first = true;
    let result = (|| -> Result<()> {
        while merged.valid() {
            let ikey = merged.key();
            let user = keys::user_key(ikey);
            if first || user != key.as_slice() {
                first = false;
                key.clear();
                key.extend_from_slice(user);
                below_kept = false;
                if let Some((_, w)) = &open
                    && target.level > 0
                    && w.estimated_len() >= ctx.options.target_file_size
                {
                    let (number, w) = open.take().expect("open");
                    done.push(finish(ctx, target, number, w)?);
                }
            }
            let tag = keys::tag_of(ikey);
            let keep = if tag >> 8 > target.horizon {
                true
            } else if below_kept {
                false
            } else {
                below_kept = true;
                keys::kind_of_tag(tag) != Kind::Delete
                    || target.levels.deeper_holds(target.level, user)
            };
            if keep {
                if open.is_none() {
                    open = Some(ctx.tiers.new_writer(target.subtable)?);
                }
                let (_, w) = open.as_mut().expect("open");
                let value = merged.value()?;
                w.add(ikey, value)?;
            }
            merged.next();
        }
        merged.status()?;
        if let Some((number, w)) = open.take() {
            done.push(finish(ctx, target, number, w)?);
        }
        Ok(())
    })();
    match result {
        Ok(()) => Ok(done),
        Err(e) => {
            // Nothing names the files written so far: remove them now (the next open
            // would otherwise).
            let written = done.iter().map(|t| t.meta.number).collect();
            ctx.tiers.remove_files(&written);
            Err(e)
        }
    }
}

fn finish(ctx: &JobCtx, target: &Target<'_>, number: u64, w: SstWriter) -> Result<Arc<Table>> {
    let meta = w.finish()?;
    ctx.tiers.throttle(meta.file_len);
    ctx.tiers.stats.lock().sst_bytes_written += meta.file_len;
    if meta.entries == 0 {
        return Err(DbError::Corrupt(format!(
            "SST {number}: a compaction output file holds no entry"
        )));
    }
    ctx.tiers.open_table(file_meta(
        number,
        target.subtable,
        target.level,
        target.horizon,
        meta,
    ))
}
