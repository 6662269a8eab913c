//! The stages of a commit group, each a function of its own: validate → sequence →
//! append → persist → publish (run by the leader under `LeaderState`), then index → make
//! visible (run after the leadership has passed on).

use std::sync::Arc;

use pmdb_pmem::{Backend, PmOff};
use smallvec::SmallVec;

use super::conflicts;
use super::context::CommitCtx;
use super::request::Request;
use crate::art::KeySource;
use crate::error::{DbError, Result};
use crate::format::head::max_part_bytes;
use crate::format::record::{self, Kind};
use crate::index::PoolKeys;
use crate::memtable::append::{Appended, RecIn};
use crate::memtable::{Entries, Memtable};
use crate::options::LeaderStage;
use crate::registry::SubtableState;

/// What only the leader touches: the next group's lsn, the File backend's not yet synced
/// ranges, a reused encoding buffer, memtables frozen whose indexes are still to be
/// frozen, and why commits stopped, if an earlier publish failed half-way or a leader
/// panicked.
pub(crate) struct LeaderState {
    next_lsn: u64,
    unsynced: Vec<(PmOff, usize)>,
    buf: Vec<u8>,
    frozen: Vec<Arc<Memtable>>,
    poisoned: Option<&'static str>,
}

impl LeaderState {
    pub fn new(next_lsn: u64) -> LeaderState {
        LeaderState {
            next_lsn,
            unsynced: Vec::new(),
            buf: Vec::new(),
            frozen: Vec::new(),
            poisoned: None,
        }
    }

    /// Refuses every later group with `why`, until the database is reopened.
    pub fn poison(&mut self, why: &'static str) {
        self.poisoned.get_or_insert(why);
    }
}

/// A request that passed validation, with the subtable of each of its ops.
struct Admitted {
    member: usize,
    targets: SmallVec<[Arc<SubtableState>; 2]>,
}

/// Group members by index: most groups are small, and need no allocation for it.
pub(super) type Members = SmallVec<[usize; 8]>;

/// One subtable's share of a group.
struct Part<'g> {
    state: Arc<SubtableState>,
    recs: SmallVec<[RecIn<'g>; 2]>,
}

/// A group with its sequence numbers: parts ordered by subtable id.
struct Sequenced<'g> {
    first_seq: u64,
    count: u64,
    parts: SmallVec<[Part<'g>; 2]>,
}

/// A group that is durable and published but not yet visible.
pub(super) struct Published {
    first_seq: u64,
    count: u64,
    entries: SmallVec<[(Arc<Memtable>, Entries); 2]>,
    /// Memtables frozen by this group or an earlier failed one: once this group is
    /// visible, every group appended to them is indexed.
    frozen: Vec<Arc<Memtable>>,
    members: Members,
}

impl Published {
    /// The group members (indices) this group committed.
    pub fn members(&self) -> impl Iterator<Item = usize> + '_ {
        self.members.iter().copied()
    }
}

/// A group that failed after validation: every admitted member shares the error.
pub(super) struct Failed {
    pub error: DbError,
    pub members: Vec<usize>,
}

/// The leader's part: validate, sequence, append, persist, publish. Requests that fail
/// validation are finished here with their own error.
pub(super) fn make_durable(
    ctx: &CommitCtx<'_>,
    st: &mut LeaderState,
    group: &[Arc<Request>],
) -> Result<Published, Failed> {
    let admitted = validate(ctx, group);
    let members: Members = admitted.iter().map(|a| a.member).collect();
    let fail = |error: DbError| Failed {
        error,
        members: members.to_vec(),
    };
    if let Some(why) = st.poisoned {
        return Err(fail(DbError::GroupFailed(format!(
            "{why}; reopen the database"
        ))));
    }
    let seqd = sequence(ctx, group, &admitted).map_err(fail)?;
    if seqd.parts.is_empty() {
        return Ok(Published {
            first_seq: seqd.first_seq,
            count: 0,
            entries: SmallVec::new(),
            frozen: Vec::new(),
            members,
        });
    }
    let lsn = st.next_lsn;
    let appended = append(ctx, st, lsn, &seqd).map_err(fail)?;
    let sync = admitted.iter().any(|a| group[a.member].sync);
    let defer = ctx.pool.backend() == Backend::File && !sync;
    let ranges = || {
        appended
            .iter()
            .flat_map(|(_, a, _)| a.ranges.iter().copied())
    };
    let broken_order = ctx.options.broken_publish_order();
    if !broken_order {
        persist(ctx, st, ranges(), defer).map_err(fail)?;
    }
    if let Err(e) = publish(ctx, st, &appended, defer) {
        // The heads are in an unknown state: refuse writes until the database is reopened.
        st.poison("an earlier publish failed half-way");
        return Err(fail(e));
    }
    if broken_order {
        persist(ctx, st, ranges(), defer).map_err(fail)?;
    }
    ctx.seqs.consume(seqd.count);
    st.next_lsn = lsn + 1;
    let entries = appended
        .into_iter()
        .map(|(memtable, a, part)| {
            memtable.set_published(a.end, part.recs.len() as u64, a.record_bytes);
            (memtable, a.versions)
        })
        .collect();
    Ok(Published {
        first_seq: seqd.first_seq,
        count: seqd.count,
        entries,
        frozen: std::mem::take(&mut st.frozen),
        members,
    })
}

/// Validate: each request on its own — one database, existing subtables, keys and values
/// within the limits — and a transaction's request against everything committed after
/// its snapshot, the members admitted before it included. A request that fails is
/// finished with its error and left out.
fn validate(ctx: &CommitCtx<'_>, group: &[Arc<Request>]) -> SmallVec<[Admitted; 4]> {
    if group.iter().any(|r| r.validation.is_some()) {
        // The group before may still be indexing: its writes must be seen.
        ctx.seqs.wait_all_visible();
    }
    let mut seen: SmallVec<[Arc<SubtableState>; 4]> = SmallVec::new();
    let mut admitted: SmallVec<[Admitted; 4]> = SmallVec::with_capacity(group.len());
    for (member, req) in group.iter().enumerate() {
        let checked = validate_one(ctx, &req.batch, &mut seen).and_then(|targets| {
            if let Some(v) = &req.validation {
                let earlier: Vec<(u32, &[u8], Kind)> = admitted
                    .iter()
                    .flat_map(|a| {
                        group[a.member]
                            .batch
                            .ops()
                            .map(|op| (op.subtable, op.key, op.kind))
                    })
                    .collect();
                conflicts::check(ctx, v, &earlier)?;
            }
            Ok(targets)
        });
        match checked {
            Ok(targets) => admitted.push(Admitted { member, targets }),
            Err(e) => req.finish(Err(e)),
        }
    }
    admitted
}

fn validate_one(
    ctx: &CommitCtx<'_>,
    batch: &crate::batch::WriteBatch,
    seen: &mut SmallVec<[Arc<SubtableState>; 4]>,
) -> Result<SmallVec<[Arc<SubtableState>; 2]>> {
    if batch.mixed || batch.db.is_some_and(|db| db != ctx.db_id) {
        return Err(DbError::ForeignSubtable);
    }
    // A batch lands in one memtable per subtable, whose log positions are 32-bit; a
    // batch larger than a memtable makes its memtable as large as it needs.
    let max = max_part_bytes(ctx.options.memtable_size, ctx.pool.zone_size());
    let mut stored = 0u64;
    let mut targets = SmallVec::with_capacity(batch.len());
    for op in batch.ops() {
        ctx.options.check_limits(op.key, op.value)?;
        stored += record::record_len(op.key.len(), op.value.len()) as u64;
        if stored > max {
            return Err(DbError::BatchTooLarge { bytes: stored, max });
        }
        let state = match seen.iter().find(|s| s.id == op.subtable) {
            Some(s) => Arc::clone(s),
            None => {
                let s = ctx
                    .registry
                    .by_id(op.subtable)
                    .ok_or(DbError::NoSuchSubtable { id: op.subtable })?;
                seen.push(Arc::clone(&s));
                s
            }
        };
        state.check_unfenced()?;
        targets.push(state);
    }
    Ok(targets)
}

/// Sequence: consecutive sequence numbers in request order, ops split by subtable.
fn sequence<'g>(
    ctx: &CommitCtx<'_>,
    group: &'g [Arc<Request>],
    admitted: &[Admitted],
) -> Result<Sequenced<'g>> {
    let count: u64 = admitted
        .iter()
        .map(|a| group[a.member].batch.len() as u64)
        .sum();
    let first_seq = ctx.seqs.peek(count)?;
    let mut seq = first_seq;
    let mut parts: SmallVec<[Part<'g>; 2]> = SmallVec::new();
    for a in admitted {
        for (op, state) in group[a.member].batch.ops().zip(&a.targets) {
            let at = match parts.binary_search_by_key(&state.id, |p| p.state.id) {
                Ok(at) => at,
                Err(at) => {
                    let part = Part {
                        state: Arc::clone(state),
                        recs: SmallVec::new(),
                    };
                    parts.insert(at, part);
                    at
                }
            };
            parts[at].recs.push(RecIn {
                seq,
                kind: op.kind,
                key: op.key,
                value: op.value,
            });
            seq += 1;
        }
    }
    Ok(Sequenced {
        first_seq,
        count,
        parts,
    })
}

/// Each part with the memtable it went to and what appending it produced.
type AppendedParts<'s, 'g> = SmallVec<[(Arc<Memtable>, Appended, &'s Part<'g>); 2]>;

/// Append: every part into its subtable's active memtable; nothing is published yet.
fn append<'s, 'g>(
    ctx: &CommitCtx<'_>,
    st: &mut LeaderState,
    lsn: u64,
    seqd: &'s Sequenced<'g>,
) -> Result<AppendedParts<'s, 'g>> {
    let nparts = seqd.parts.len() as u32;
    let mut appended = SmallVec::with_capacity(seqd.parts.len());
    for part in &seqd.parts {
        let keys = part.recs.iter().map(|r| r.key);
        ctx.options.panic_if_told(LeaderStage::Append, keys);
        let memtable = active_memtable(ctx, st, &part.state)?;
        let a = loop {
            // Nothing of a part is published before the whole group is, so a part the
            // pool had no zone for is appended again from its start once PM is back.
            match memtable.append_part(lsn, nparts, &part.recs, &mut st.buf) {
                Err(e) if e.is_pool_full() && ctx.jobs.wait_for_zone() => continue,
                other => break other?,
            }
        };
        appended.push((memtable, a, part));
    }
    Ok(appended)
}

/// The subtable's active memtable, starting a new one when there is none yet or the
/// current one is full (the old one stays readable, frozen).
fn active_memtable(
    ctx: &CommitCtx<'_>,
    st: &mut LeaderState,
    state: &SubtableState,
) -> Result<Arc<Memtable>> {
    let old = state.view.load().active().cloned();
    if let Some(m) = &old
        && m.used() < ctx.options.memtable_size
        && !m.is_sealed()
    {
        return Ok(Arc::clone(m));
    }
    if old.is_some() {
        ctx.jobs.wait_for_room(state);
    }
    let fresh = ctx.registry.new_memtable(state)?;
    st.frozen.extend(old);
    Ok(fresh)
}

/// Persist: flush `ranges` and fence — or, on the File backend for a group that did not
/// ask for sync, remember them for the next group that does.
fn persist(
    ctx: &CommitCtx<'_>,
    st: &mut LeaderState,
    ranges: impl IntoIterator<Item = (PmOff, usize)>,
    defer: bool,
) -> Result<()> {
    if defer {
        st.unsynced.extend(ranges);
        return Ok(());
    }
    for (off, len) in st.unsynced.drain(..).chain(ranges) {
        ctx.pool.flush(off, len)?;
    }
    ctx.pool.fence();
    Ok(())
}

/// Publish: every touched memtable's head word, then one fence.
fn publish(
    ctx: &CommitCtx<'_>,
    st: &mut LeaderState,
    appended: &[(Arc<Memtable>, Appended, &Part<'_>)],
    defer: bool,
) -> Result<()> {
    for (m, a, _) in appended {
        ctx.pool.store_u64(m.desc.head_off, a.head().pack())?;
    }
    let heads = appended.iter().map(|(m, _, _)| (m.desc.head_off, 8));
    persist(ctx, st, heads, defer)
}

/// Index: the group's records into their memtables' DRAM indexes (one lock per part),
/// dropping versions older than any reader needs. The records are durable and published
/// already: if one cannot be read back, its memtable takes no more appends and the group
/// learns that its writes are durable but not readable until the database is reopened
/// (the caller then never makes it visible).
pub(super) fn index(ctx: &CommitCtx<'_>, published: &mut Published) -> Result<()> {
    let horizon = ctx.seqs.horizon();
    let mut outcome = Ok(());
    for (memtable, entries) in std::mem::take(&mut published.entries) {
        let keys = PoolKeys(memtable.index.pool());
        let inserted = ctx
            .options
            .index_error_if_told(entries.iter().map(|v| keys.key(v.rec)))
            .and_then(|()| memtable.index.insert(&entries, horizon));
        if let Err(e) = inserted {
            log::error!(
                "memtable {}: indexing a committed group failed: {e}; commits stop until \
                 the database is reopened",
                memtable.desc.id
            );
            memtable.seal();
            outcome = Err(DbError::GroupFailed(format!(
                "the writes are durable but could not be indexed ({e}); reopen the database to read them"
            )));
        }
    }
    outcome
}

/// Make visible: once every earlier group is visible, this one becomes visible at once;
/// false if an earlier group's leader failed, so this one never will until a reopen, or
/// if this one was not wholly `indexed` (it is never made visible in part). Then every
/// group appended to the memtables it froze is indexed: their indexes freeze, and the
/// background worker builds their filters.
pub(super) fn make_visible(ctx: &CommitCtx<'_>, published: &Published, indexed: bool) -> bool {
    let visible = published.count == 0
        || (indexed
            && ctx.seqs.publish(
                published.first_seq,
                published.first_seq + published.count - 1,
            ));
    for memtable in &published.frozen {
        memtable.index.freeze();
        ctx.background.build_filter(Arc::clone(memtable) as _);
    }
    if !published.frozen.is_empty() {
        ctx.jobs.ctx.notify();
    }
    visible
}
