//! Opening a database after a clean shutdown or a crash: reachability (owners the catalog
//! does not name are freed), rollback of a partially published last commit group, and
//! the parallel rebuild of the DRAM indexes: zones are scanned and sorted one zone per
//! task, then each memtable's radix tree is built at once from its sorted runs.
//!
//! Freeing is only as safe as the proof that nothing reaches what is freed. When a
//! structure that names owners cannot be read — a catalog zone or slot, or the committed
//! lsn's root cell — recovery frees nothing and finishes no drop: it reports the damage
//! and the database opens read-only. A read-only open recovers the same way in DRAM
//! alone: a partial group is rolled back in the memtables' DRAM state, never published.
//!
//! Partial groups: each memtable's head names its last published part, whose chunk header
//! carries (group lsn, number of parts). Groups publish in order, so only the group with
//! the highest lsn can be partial: if fewer memtables end with it than it has parts, its
//! parts are rolled back (head := previous position). The root word "committed lsn"
//! records the newest group recovery knows to be complete; it is published before any
//! rollback so a crash during recovery never re-judges an older, complete group.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use pmdb_pmem::{OwnerId, Pool};

use crate::art::BulkEntry;
use crate::catalog::{Catalog, MemtableDesc, SubtableDesc};
use crate::error::{DbError, Result};
use crate::format::MAX_SEQ;
use crate::format::catalog::MAX_MEMTABLE_ID;
use crate::format::head::HeadWord;
use crate::gi::Gi;
use crate::gi_words::{self, GiWord};
use crate::levels::Levels;
use crate::memtable::Memtable;
use crate::memtable::scan::ZoneScan;
use crate::options::DbOptions;
use crate::registry::SubtableState;
use crate::view::ReadView;

/// What recovery did when a database was opened.
#[derive(Clone, Debug, Default)]
pub struct RecoveryStats {
    /// Records indexed.
    pub records: u64,
    /// Bytes of records indexed.
    pub bytes: u64,
    pub subtables: usize,
    pub memtables: usize,
    /// Zones scanned.
    pub zones: usize,
    /// Threads that rebuilt the indexes.
    pub threads: usize,
    /// Parts of a partially published last group that were rolled back.
    pub rolled_back_parts: usize,
    /// Owners the catalog did not reach (an interrupted memtable creation or a dropped
    /// subtable), freed.
    pub released_owners: usize,
    /// Subtable drops that were committed but not finished, finished.
    pub finished_drops: usize,
    /// Memtables the manifest says are in SSTs already (a flush stopped before it freed
    /// them): not read, and freed.
    pub flushed_memtables: usize,
    /// Zones the catalog occupies.
    pub catalog_zones: usize,
    /// Media damage found (damaged chunks are skipped, never trusted).
    pub damage: Vec<String>,
    /// Why the database refuses writes, if it does: it was opened read-only, or the
    /// structures that make data reachable are damaged (nothing was freed then).
    pub read_only: Option<String>,
    /// Subtables fenced off (`DbOptions::fence_damaged`), each with why.
    pub fenced: Vec<String>,
    /// Time for the whole open, and for the index rebuild alone.
    pub elapsed: Duration,
    pub rebuild: Duration,
}

impl RecoveryStats {
    /// Records indexed per second during the rebuild.
    pub fn records_per_sec(&self) -> f64 {
        let s = self.rebuild.as_secs_f64();
        if s > 0.0 {
            self.records as f64 / s
        } else {
            0.0
        }
    }
}

impl std::fmt::Display for RecoveryStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "recovered {} records ({} bytes) from {} zones of {} memtables in {} subtables with {} threads in {:.1} ms (index rebuild {:.1} ms)",
            self.records,
            self.bytes,
            self.zones,
            self.memtables,
            self.subtables,
            self.threads,
            self.elapsed.as_secs_f64() * 1e3,
            self.rebuild.as_secs_f64() * 1e3
        )?;
        if self.rolled_back_parts > 0 {
            write!(
                f,
                "; rolled back {} parts of a partial group",
                self.rolled_back_parts
            )?;
        }
        if !self.damage.is_empty() {
            write!(f, "; {} damage reports", self.damage.len())?;
        }
        if let Some(reason) = &self.read_only {
            write!(f, "; read-only: {reason}")?;
        }
        for fenced in &self.fenced {
            write!(f, "; fenced off: subtable {fenced}")?;
        }
        Ok(())
    }
}

pub(crate) struct Recovered {
    pub subtables: Vec<Arc<SubtableState>>,
    pub max_seq: u64,
    pub next_lsn: u64,
    pub next_memtable_id: u64,
    pub next_subtable_id: u32,
    pub stats: RecoveryStats,
}

/// Recovers the pool's side of the database. `flushed` is what the manifest says is in
/// SSTs (per subtable, the highest memtable id): those memtables are not read, and are
/// freed when the database is writable. `levels` are each subtable's SST levels.
pub(crate) fn recover(
    pool: &Arc<Pool>,
    catalog: &Catalog,
    options: &DbOptions,
    flushed: &BTreeMap<u32, u64>,
    mut levels: HashMap<u32, Arc<Levels>>,
) -> Result<Recovered> {
    let start = Instant::now();
    let mut stats = RecoveryStats {
        catalog_zones: catalog.zone_count(),
        ..RecoveryStats::default()
    };
    let mut entries = catalog.entries(pool);
    let mut unreachable_unknown = std::mem::take(&mut entries.damage);
    // A subtable whose global-index words contradict each other is left unknown: its
    // read order cannot be known, so nothing of it is read, and nothing is freed.
    let words = entries.memtables.iter().map(|m| GiWord {
        id: m.id,
        subtable: m.subtable,
        gi: m.gi,
    });
    let contradicted = gi_words::check(words, flushed);
    for (subtable, why) in &contradicted {
        unreachable_unknown.push(format!(
            "subtable {subtable}: {why}; the subtable is left unknown"
        ));
    }
    entries
        .subtables
        .retain(|s| !contradicted.contains_key(&s.id));
    entries
        .memtables
        .retain(|m| !contradicted.contains_key(&m.subtable));
    let committed = Catalog::committed_lsn(pool).unwrap_or_else(|e| {
        unreachable_unknown.push(e);
        0
    });
    stats.read_only = if pool.is_read_only() {
        Some("it was opened read-only".into())
    } else if !unreachable_unknown.is_empty() {
        Some(format!(
            "the catalog or a root word is damaged ({} problems), so nothing can be proven \
             unreachable; nothing was freed",
            unreachable_unknown.len()
        ))
    } else {
        None
    };
    stats.damage = unreachable_unknown;
    let writes = stats.read_only.is_none();
    let (subs, descs) = finish_drops(
        pool,
        catalog,
        entries.subtables,
        entries.memtables,
        writes,
        &mut stats,
    )?;
    let (done, descs): (Vec<MemtableDesc>, Vec<MemtableDesc>) = descs
        .into_iter()
        .partition(|m| flushed.get(&m.subtable).is_some_and(|&f| m.id <= f));
    stats.flushed_memtables = done.len();
    if writes {
        for m in &done {
            catalog.free(pool, m.slot)?;
        }
        let reachable: HashSet<OwnerId> = descs
            .iter()
            .map(|d| d.owner)
            .chain([catalog.owner()])
            .collect();
        stats.released_owners = pool.retain_owners(|o| reachable.contains(&o))?;
    }

    let mut memtables = Vec::with_capacity(descs.len());
    for desc in descs {
        let (zones, mut damaged) = match Memtable::load_zones(pool, &desc) {
            Ok(zones) => (zones, false),
            Err(e) => {
                stats.damage.push(e.to_string());
                (Vec::new(), true)
            }
        };
        let head = HeadWord::unpack(pool.load_u64(desc.head_off)?).unwrap_or_else(|e| {
            stats.damage.push(format!(
                "memtable {}: {e}; none of its records are read",
                desc.id
            ));
            damaged = true;
            HeadWord { start: 0, end: 0 }
        });
        let memtable = Memtable::new(desc, Arc::clone(pool), zones, 0);
        if damaged {
            memtable.lose_records();
        }
        memtables.push((memtable, head));
    }

    let top_lsn = roll_back_partial_group(pool, &mut memtables, committed, writes, &mut stats)?;

    // Rebuild the indexes in parallel, one zone per task.
    let rebuild_start = Instant::now();
    let memtables: Vec<Arc<Memtable>> = memtables
        .into_iter()
        .map(|(m, head)| {
            m.set_published(head.end, 0, 0);
            Arc::new(m)
        })
        .collect();
    let tasks: Vec<_> = memtables
        .iter()
        .flat_map(|m| {
            m.scan_plan(m.used())
                .into_iter()
                .map(move |(z, zone, end)| (Arc::clone(m), z, zone, end))
        })
        .collect();
    stats.zones = tasks.len();
    stats.threads = options.threads().min(tasks.len()).max(1);
    // Phase 1: zones are scanned in parallel, one zone per task, each into the records
    // it holds (crc checked, keys' first bytes kept for sorting).
    let next = AtomicUsize::new(0);
    let found: Vec<Mutex<Vec<Vec<BulkEntry>>>> =
        memtables.iter().map(|_| Mutex::new(Vec::new())).collect();
    let slot_of: HashMap<u64, usize> = memtables
        .iter()
        .enumerate()
        .map(|(i, m)| (m.desc.id, i))
        .collect();
    let total = Mutex::new(ZoneScan::default());
    std::thread::scope(|s| {
        for _ in 0..stats.threads {
            s.spawn(|| {
                let mut mine = ZoneScan::default();
                while let Some((m, z, zone, end)) = tasks.get(next.fetch_add(1, Ordering::Relaxed))
                {
                    let scan = m.scan_zone(*z, *zone, *end);
                    if scan.lost {
                        m.lose_records();
                    } else if !scan.damage.is_empty() {
                        // Appending behind damage would put new records where the
                        // next recovery stops reading: start a new memtable instead.
                        m.seal();
                    }
                    m.add_record_bytes(scan.bytes);
                    mine.records += scan.records;
                    mine.bytes += scan.bytes;
                    mine.max_seq = mine.max_seq.max(scan.max_seq);
                    mine.max_lsn = mine.max_lsn.max(scan.max_lsn);
                    mine.damage.extend(scan.damage);
                    found[slot_of[&m.desc.id]].lock().push(scan.entries);
                }
                let mut t = total.lock();
                t.records += mine.records;
                t.bytes += mine.bytes;
                t.max_seq = t.max_seq.max(mine.max_seq);
                t.max_lsn = t.max_lsn.max(mine.max_lsn);
                t.damage.extend(mine.damage);
            });
        }
    });
    // Phase 2: each memtable's index, or each global-index generation's, is built at
    // once from its records (sorted, newest version of each key), in parallel.
    let mut units: Vec<Vec<&Arc<Memtable>>> = Vec::new();
    let mut gen_of: BTreeMap<(u32, u64), usize> = BTreeMap::new();
    for m in &memtables {
        if m.desc.gi == 0 {
            units.push(vec![m]);
        } else {
            let at = *gen_of
                .entry((m.desc.subtable, m.desc.gi))
                .or_insert_with(|| {
                    units.push(Vec::new());
                    units.len() - 1
                });
            units[at].push(m);
        }
    }
    let next = AtomicUsize::new(0);
    let build_damage = Mutex::new(Vec::new());
    let gens = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..stats.threads.min(units.len()).max(1) {
            s.spawn(|| {
                while let Some(unit) = units.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let runs: Vec<BulkEntry> = unit
                        .iter()
                        .flat_map(|m| std::mem::take(&mut *found[slot_of[&m.desc.id]].lock()))
                        .flatten()
                        .collect();
                    let records = runs.len() as u64;
                    let m = unit[0];
                    if m.desc.gi == 0 {
                        match m.index.build(runs) {
                            Ok(()) => m.add_records(records),
                            Err(e) => {
                                m.lose_records();
                                build_damage.lock().push(format!(
                                    "memtable {}: its records could not be indexed ({e})",
                                    m.desc.id
                                ));
                            }
                        }
                        continue;
                    }
                    let members: Vec<Arc<Memtable>> = unit.iter().map(|&m| Arc::clone(m)).collect();
                    let gi = Gi::recovered(Arc::clone(pool), m.desc.gi, &members);
                    match gi.index.build(runs) {
                        Ok(()) => gens.lock().push((m.desc.subtable, Arc::new(gi))),
                        Err(e) => build_damage.lock().push(format!(
                            "global-index generation {}: its records could not be indexed ({e}); \
                             it is left out, and the database opens read-only",
                            m.desc.gi
                        )),
                    }
                }
            });
        }
    });
    let build_damage = build_damage.into_inner();
    if build_damage.iter().any(|d| d.starts_with("global-index")) && stats.read_only.is_none() {
        stats.read_only = Some("a global-index generation could not be rebuilt".into());
    }
    stats.damage.extend(build_damage);
    let mut gens_of: HashMap<u32, Vec<Arc<Gi>>> = HashMap::new();
    for (sub, gi) in gens.into_inner() {
        gens_of.entry(sub).or_default().push(gi);
    }
    let total = total.into_inner();
    stats.rebuild = rebuild_start.elapsed();
    stats.records = total.records;
    stats.bytes = total.bytes;
    stats.damage.extend(total.damage);

    // Memtables recovery found damaged were sealed: each one's subtable is fenced off, or
    // the database opens read-only, so that nothing waits for a merge that can never
    // happen and no job frees the damaged zones.
    let mut damaged: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for m in memtables.iter().filter(|m| m.is_sealed()) {
        damaged.entry(m.desc.subtable).or_default().push(m.desc.id);
    }
    let names: HashMap<u32, String> = subs.iter().map(|s| (s.id, s.name.clone())).collect();
    let fence = options.fence_damaged && stats.read_only.is_none();
    if !damaged.is_empty() && !fence && stats.read_only.is_none() {
        stats.read_only = Some(format!(
            "{} damaged (see the damage reports); nothing was freed. Open with \
             fence_damaged (pmdb --fence-damaged) to write the other subtables",
            damaged_memtables(&damaged, &names)
        ));
    }
    let mut by_subtable: HashMap<u32, Vec<Arc<Memtable>>> = HashMap::new();
    let next_memtable_id = next_id(
        memtables.iter().map(|m| m.desc.id),
        MAX_MEMTABLE_ID + 1,
        "memtable",
    )?;
    stats.memtables = memtables.len();
    for m in memtables.into_iter().filter(|m| m.desc.gi == 0) {
        by_subtable.entry(m.desc.subtable).or_default().push(m);
    }
    let next_subtable_id = next_id(
        subs.iter().map(|s| u64::from(s.id)),
        u64::from(u32::MAX),
        "subtable",
    )? as u32;
    let subtables: Vec<Arc<SubtableState>> = subs
        .into_iter()
        .map(|s| {
            let mut memtables = by_subtable.remove(&s.id).unwrap_or_default();
            memtables.sort_by_key(|m| std::cmp::Reverse(m.desc.id));
            let mut gis = gens_of.remove(&s.id).unwrap_or_default();
            gis.sort_by_key(|g| std::cmp::Reverse(g.id));
            // Only the newest generation may take merges, and only below its budget.
            for (i, g) in gis.iter().enumerate() {
                if i > 0 || g.bytes() >= options.gi_budget {
                    g.seal();
                    g.index.freeze();
                }
            }
            let levels = levels.remove(&s.id).unwrap_or_default();
            let fenced = damaged
                .remove_entry(&s.id)
                .filter(|_| fence)
                .map(|(id, ids)| {
                    format!(
                        "{} damaged",
                        damaged_memtables(&BTreeMap::from([(id, ids)]), &names)
                    )
                });
            let state = SubtableState::new(
                s,
                ReadView {
                    memtables,
                    gis,
                    levels,
                },
            );
            Arc::new(match fenced {
                Some(reason) => {
                    stats.fenced.push(format!("{}: {reason}", state.name));
                    state.fenced_off(reason)
                }
                None => state,
            })
        })
        .collect();
    for (id, mems) in by_subtable {
        stats.damage.push(format!(
            "{} memtables belong to subtable {id}, which the catalog does not list",
            mems.len()
        ));
    }
    stats.subtables = subtables.len();
    // Each is at most MAX_SEQ (the chunk codec and `committed_lsn` bound them).
    let next_lsn = top_lsn.max(total.max_lsn).max(committed) + 1;
    if next_lsn > MAX_SEQ && stats.read_only.is_none() {
        stats.read_only = Some(format!(
            "commit group numbers are exhausted (the newest is {})",
            next_lsn - 1
        ));
    }
    stats.elapsed = start.elapsed();
    Ok(Recovered {
        subtables,
        max_seq: total.max_seq,
        next_lsn,
        next_memtable_id,
        next_subtable_id,
        stats,
    })
}

/// The id after the highest of `ids` (1 if there are none), at most `max`: the slot
/// codecs bound stored ids below it, so failing here means one let a bad id through.
fn next_id(ids: impl Iterator<Item = u64>, max: u64, what: &str) -> Result<u64> {
    ids.max()
        .map_or(Some(1), |id| id.checked_add(1))
        .filter(|&next| next <= max)
        .ok_or_else(|| DbError::Corrupt(format!("the catalog holds the last {what} id")))
}

/// Finishes the drops that were committed (dropped word set) but not completed: frees the
/// dropped subtables' memtable slots, then their own slots — only with `free`; without,
/// the dropped subtables and their memtables are only left out. Returns what is left.
fn finish_drops(
    pool: &Pool,
    catalog: &Catalog,
    subs: Vec<SubtableDesc>,
    descs: Vec<MemtableDesc>,
    free: bool,
    stats: &mut RecoveryStats,
) -> Result<(Vec<SubtableDesc>, Vec<MemtableDesc>)> {
    let (dropped, subs): (Vec<SubtableDesc>, Vec<SubtableDesc>) =
        subs.into_iter().partition(|s| s.dropped);
    let gone: HashSet<u32> = dropped.iter().map(|s| s.id).collect();
    let (orphans, descs): (Vec<MemtableDesc>, Vec<MemtableDesc>) =
        descs.into_iter().partition(|m| gone.contains(&m.subtable));
    if free {
        for m in orphans {
            catalog.free(pool, m.slot)?;
        }
        for s in &dropped {
            catalog.free(pool, s.slot)?;
        }
        stats.finished_drops = dropped.len();
    }
    Ok((subs, descs))
}

/// Finds the newest group among the memtables' last parts and rolls its parts back if it
/// is partial — on the media with `publish`, else in the heads kept in DRAM; returns its
/// lsn (0 if there is none).
fn roll_back_partial_group(
    pool: &Pool,
    memtables: &mut [(Memtable, HeadWord)],
    committed: u64,
    publish: bool,
    stats: &mut RecoveryStats,
) -> Result<u64> {
    let mut last = Vec::with_capacity(memtables.len());
    for (m, head) in memtables.iter() {
        match m.last_part(*head) {
            Ok(part) => last.push(part),
            Err(e) => {
                stats.damage.push(e.to_string());
                m.seal();
                last.push(None);
            }
        }
    }
    let Some(top) = last.iter().flatten().max_by_key(|h| h.lsn).copied() else {
        return Ok(0);
    };
    if top.lsn <= committed {
        return Ok(top.lsn);
    }
    let holders: Vec<usize> = last
        .iter()
        .enumerate()
        .filter(|(_, h)| h.is_some_and(|h| h.lsn == top.lsn))
        .map(|(i, _)| i)
        .collect();
    if holders.len() as u32 >= top.nparts {
        if publish {
            Catalog::publish_committed_lsn(pool, top.lsn)?;
        }
        return Ok(top.lsn);
    }
    if publish {
        Catalog::publish_committed_lsn(pool, top.lsn - 1)?;
    }
    for i in holders {
        let (m, head) = &mut memtables[i];
        *head = head.rolled_back();
        if publish {
            pool.publish_u64(m.desc.head_off, head.pack())?;
        }
        stats.rolled_back_parts += 1;
    }
    Ok(top.lsn)
}

/// "memtables 3, 7 of subtable \"t\" are" and the like, for the damaged memtables' ids by
/// subtable id (named by `names` where the catalog lists it).
fn damaged_memtables(damaged: &BTreeMap<u32, Vec<u64>>, names: &HashMap<u32, String>) -> String {
    let parts: Vec<String> = damaged
        .iter()
        .map(|(sub, ids)| {
            let ids: Vec<String> = ids.iter().map(u64::to_string).collect();
            let noun = if ids.len() == 1 {
                "memtable"
            } else {
                "memtables"
            };
            let subtable = names
                .get(sub)
                .map_or_else(|| format!("subtable {sub}"), |n| format!("subtable {n:?}"));
            format!("{noun} {} of {subtable}", ids.join(", "))
        })
        .collect();
    let count: usize = damaged.values().map(Vec::len).sum();
    format!(
        "{} {}",
        parts.join("; "),
        if count == 1 { "is" } else { "are" }
    )
}
