//! PM first: what leaves PM for the SSTs, and when. Merged memtables stay in their
//! global-index generations, sealed or not, and are read from PM, until the PM the
//! subtables hold passes the flush watermark (`DbOptions::flush_watermark`). Then the
//! coldest generation goes to level 0: of every subtable's oldest generation (a
//! subtable's generations can only leave oldest first, as the levels below must hold
//! older versions than what stays above), the one whose first memtable was started
//! earliest, whatever its subtable; an open one is sealed first. A pool about to run
//! out of zones counts as past the watermark, whatever it is set to. A subtable whose
//! level 0 holds `L0_STOP` times its trigger waits for the compaction of level 0
//! before it flushes again, unless the pool is about to run out.

use std::sync::Arc;

use crate::compaction::{JobCtx, flush, merge};
use crate::error::Result;
use crate::registry::SubtableState;

/// Level-0 files a subtable may hold, as a multiple of `l0_compaction_trigger`, before
/// its flushes wait for the compaction of level 0: every point read that reaches the SSTs
/// looks at each of them.
const L0_STOP: usize = 4;

/// PM the subtables' data holds: their memtables' logs and their generations' members.
fn pm_held(states: &[Arc<SubtableState>]) -> u64 {
    states
        .iter()
        .map(|s| {
            let view = s.view.load();
            let memtables: u64 = view.memtables().iter().map(|m| m.used()).sum();
            memtables + view.gis.iter().map(|g| g.bytes()).sum::<u64>()
        })
        .sum()
}

/// Flushes the coldest generation if the subtables hold more PM than the watermark
/// allows; whether one was flushed.
pub(super) fn make_room(ctx: &JobCtx) -> Result<bool> {
    let states = ctx.registry.all();
    if pm_held(&states) < ctx.options.flush_watermark() && !ctx.pm_is_short() {
        return Ok(false);
    }
    let Some(coldest) = coldest(&states) else {
        return Ok(false);
    };
    let view = coldest.view.load_full();
    let waiting = view.levels.level(0).len();
    if waiting >= L0_STOP * ctx.options.l0_compaction_trigger.max(1) && !ctx.pm_is_short() {
        return Ok(false);
    }
    if view.gis.last().is_some_and(|g| !g.is_sealed()) {
        // A subtable's only generation is its open one.
        merge::seal_open(ctx, &coldest);
    }
    flush::flush_sealed(ctx, &coldest)
}

/// The subtable whose oldest generation is the coldest of all, among those that may be
/// flushed.
fn coldest(states: &[Arc<SubtableState>]) -> Option<Arc<SubtableState>> {
    states
        .iter()
        .filter(|s| s.check_unfenced().is_ok())
        .filter_map(|s| Some((s.view.load().gis.last()?.id, s)))
        .min_by_key(|(id, _)| *id)
        .map(|(_, s)| Arc::clone(s))
}
