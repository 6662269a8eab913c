//! halloc: the crash-consistent zone allocator.
//!
//! Zones are fixed-size pieces of the pool, each with an 8-byte owner word; owners are
//! slots of a registry in extent 0 whose 8-byte word says live or dead, with a generation
//! so that a reused slot never adopts an old owner's zones.
//!
//! Protocol, each step persisted before the next: `alloc_zone` reserves a zone in DRAM
//! only (get) → the caller initialises and persists it → `commit` writes the zone's owner
//! word (one 8-byte store, flushed and fenced). `release_owner` frees all of an owner's
//! zones with one 8-byte store (the owner turns dead). Recovery scans the registry and all
//! owner words: a zone is owned only if its word names a live owner of the same
//! generation; uncommitted, dead-owner and stale words all come back free. Owners that
//! the caller cannot reach are dropped with `retain_owners`.
//!
//! The `Heap` is built on the pool's media and owns it, so a grant or a recovery needs
//! nothing above the allocator.
//!
//! Spares: with a prefaulter running (`crate::prefault`), the zones `alloc_zone` will
//! hand out next are kept pre-faulted, and the pool grows by an extent before it runs
//! out of free zones. Neither changes a persistent word beyond what growth always writes:
//! a spare is an ordinary free zone whose pages happen to be mapped, so a crash leaves it
//! free, and allocation order is the same with or without spares.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::error::{PmemError, Result};
use crate::layout::{Geometry, ZoneId};
use crate::media::Media;
use crate::off::PmOff;

const SLOT_BITS: u32 = 24;
const SLOT_MASK: u64 = (1 << SLOT_BITS) - 1;
const STATE_LIVE: u64 = 1;
const STATE_DEAD: u64 = 2;
const STATE_MASK: u64 = 3;
const GEN_MAX: u64 = (1 << 38) - 1;

/// An owner of zones: registry slot and generation, packed as stored in owner words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OwnerId(u64);

impl OwnerId {
    fn new(slot: u32, generation: u64) -> OwnerId {
        OwnerId((generation << SLOT_BITS) | slot as u64)
    }

    /// Rebuilds an id from its stored form (`None` for a word no owner can have).
    pub fn from_raw(raw: u64) -> Option<OwnerId> {
        (raw >> SLOT_BITS != 0).then_some(OwnerId(raw))
    }

    /// The 8-byte form, for storing an owner in the caller's own metadata.
    pub fn to_raw(self) -> u64 {
        self.0
    }

    pub fn slot(self) -> u32 {
        (self.0 & SLOT_MASK) as u32
    }

    pub fn generation(self) -> u64 {
        self.0 >> SLOT_BITS
    }
}

impl std::fmt::Display for OwnerId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "owner {}#{}", self.slot(), self.generation())
    }
}

fn registry_word(generation: u64, state: u64) -> u64 {
    (generation << 2) | state
}

fn registry_off(g: &Geometry, slot: u32) -> PmOff {
    PmOff::new(0, g.registry_off() + slot as u64 * 8)
}

struct OwnerEntry {
    generation: u64,
    zones: Vec<ZoneId>,
}

/// The allocator's DRAM state, rebuilt by recovery.
#[derive(Default)]
struct AllocState {
    /// Free zones, highest first so that `pop` hands out low addresses.
    free: Vec<ZoneId>,
    owners: HashMap<u32, OwnerEntry>,
    /// Registry slots not live, with the generation last written to each.
    free_slots: Vec<(u32, u64)>,
    reserved: u64,
    spares: Spares,
}

/// What the prefaulter keeps ready, and how it is asked to.
#[derive(Default)]
struct Spares {
    /// Free zones to keep pre-faulted; 0 while no prefaulter runs.
    target: usize,
    /// Passes run in the allocating thread rather than in the prefaulter's own.
    inline: bool,
    running: bool,
    stop: bool,
    /// Zones handed out so far: each asks for a pass.
    allocs: u64,
    /// Free zones pre-faulted and not handed out since, so a pass skips them.
    faulted: Vec<ZoneId>,
}

/// What recovery found when a pool was opened.
#[derive(Clone, Debug, Default)]
pub struct RecoveryReport {
    pub extents: u32,
    pub zones: u64,
    pub owned_zones: u64,
    pub free_zones: u64,
    pub live_owners: u64,
    /// Words that no valid state can produce (media damage); `pmdb pool check` fails on
    /// any. The zones they describe are treated as free.
    pub anomalies: Vec<String>,
    /// Zone owner words scanned.
    pub words_scanned: u64,
    /// Owner registry slots scanned.
    pub registry_slots: u64,
    pub elapsed: Duration,
}

/// A zone reserved for an owner but not yet committed. Dropping it returns the zone.
#[must_use = "a zone grant must be committed, or it is returned on drop"]
pub struct ZoneGrant<'p> {
    heap: &'p Heap,
    zone: ZoneId,
    owner: OwnerId,
    committed: bool,
}

impl<'p> ZoneGrant<'p> {
    /// Address of the zone's first byte.
    pub fn off(&self) -> PmOff {
        self.heap.geometry().zone_off(self.zone)
    }

    pub fn len(&self) -> u64 {
        self.heap.geometry().zone_size
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    pub fn owner(&self) -> OwnerId {
        self.owner
    }

    /// Commits the zone to its owner: one 8-byte owner-word store, flushed and fenced.
    /// The caller must have persisted whatever it initialised first.
    pub fn commit(mut self) -> Result<PmOff> {
        let heap = self.heap;
        let mut st = heap.state.lock();
        let entry = st
            .owners
            .get_mut(&self.owner.slot())
            .filter(|e| e.generation == self.owner.generation())
            .ok_or(PmemError::DeadOwner {
                owner: self.owner.to_raw(),
            })?;
        heap.media.meta_publish(
            heap.geometry().owner_word_off(self.zone),
            self.owner.to_raw(),
        )?;
        entry.zones.push(self.zone);
        st.reserved -= 1;
        self.committed = true;
        Ok(self.off())
    }
}

impl Drop for ZoneGrant<'_> {
    fn drop(&mut self) {
        if !self.committed {
            let mut st = self.heap.state.lock();
            st.reserved -= 1;
            st.free.push(self.zone);
        }
    }
}

/// Occupancy of a pool's zones and owners.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllocStats {
    pub extents: u32,
    pub zones: u64,
    pub free_zones: u64,
    pub owned_zones: u64,
    pub reserved_zones: u64,
    pub live_owners: u64,
}

/// The zone allocator of one pool, on the media it owns.
pub(crate) struct Heap {
    media: Media,
    state: Mutex<AllocState>,
    /// Wakes the prefaulter's thread when a zone was handed out or it must stop.
    demand: Condvar,
    recovery: RecoveryReport,
}

impl Heap {
    /// Takes over `media` and rebuilds the allocator from its registry and owner words.
    pub fn recover(media: Media) -> Heap {
        let (state, recovery) = recover(&media);
        Heap {
            media,
            state: Mutex::new(state),
            demand: Condvar::new(),
            recovery,
        }
    }

    pub fn media(&self) -> &Media {
        &self.media
    }

    fn geometry(&self) -> &Geometry {
        self.media.geometry()
    }

    /// What recovery found when the heap was built.
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.recovery
    }

    /// Registers a new live owner (one 8-byte registry store, flushed and fenced).
    pub fn create_owner(&self) -> Result<OwnerId> {
        let mut st = self.state.lock();
        let max_owners = self.geometry().max_owners;
        let (slot, last_gen) = st
            .free_slots
            .pop()
            .ok_or(PmemError::OwnersFull { max_owners })?;
        // A slot whose generation is exhausted is retired rather than wrapped, so an
        // old owner word can never match again.
        if last_gen >= GEN_MAX {
            return Err(PmemError::OwnersFull { max_owners });
        }
        let generation = last_gen + 1;
        self.media.meta_publish(
            registry_off(self.geometry(), slot),
            registry_word(generation, STATE_LIVE),
        )?;
        st.owners.insert(
            slot,
            OwnerEntry {
                generation,
                zones: Vec::new(),
            },
        );
        Ok(OwnerId::new(slot, generation))
    }

    /// Reserves a free zone for `owner`, growing the media by one extent if none is free.
    pub fn alloc_zone(&self, owner: OwnerId) -> Result<ZoneGrant<'_>> {
        let mut st = self.state.lock();
        if !st.is_live(owner) {
            return Err(PmemError::DeadOwner {
                owner: owner.to_raw(),
            });
        }
        if st.free.is_empty() {
            let extent = self.media.grow()?;
            self.add_extent_zones(&mut st, extent);
        }
        let zone = st.free.pop().expect("free list refilled");
        st.reserved += 1;
        if st.spares.target > 0 {
            st.spares.allocs += 1;
            st.spares.faulted.retain(|&z| z != zone);
            if st.spares.inline {
                drop(st);
                // Failures are the next allocation's to report, should it need the zone.
                let _ = self.prepare_spares();
            } else {
                self.demand.notify_one();
            }
        }
        Ok(ZoneGrant {
            heap: self,
            zone,
            owner,
            committed: false,
        })
    }

    /// Puts a grown extent's zones on the free list, behind every zone already there (the
    /// list is kept highest first).
    fn add_extent_zones(&self, st: &mut AllocState, extent: u16) {
        let mut free: Vec<ZoneId> = (0..self.geometry().zones_per_extent)
            .rev()
            .map(|index| ZoneId { extent, index })
            .collect();
        free.append(&mut st.free);
        st.free = free;
    }

    /// Starts keeping `target` free zones pre-faulted. With `inline`, each pass runs in
    /// the thread that allocated; else the caller runs `serve_spares` on a thread of its
    /// own. One prefaulter per pool.
    pub fn start_spares(&self, target: usize, inline: bool) -> Result<()> {
        self.media.writable("pre-faulting zones")?;
        {
            let mut st = self.state.lock();
            if st.spares.running {
                return Err(PmemError::InvalidOption {
                    name: "prefault_zones",
                    reason: "a prefaulter is already running on this pool".into(),
                });
            }
            st.spares = Spares {
                target,
                inline,
                running: true,
                ..Spares::default()
            };
        }
        if inline {
            let _ = self.prepare_spares();
        }
        Ok(())
    }

    /// Stops the prefaulter: `serve_spares` returns, allocations ask for no more passes.
    pub fn stop_spares(&self) {
        let mut st = self.state.lock();
        st.spares.stop = true;
        st.spares.target = 0;
        self.demand.notify_all();
    }

    /// Marks the prefaulter gone (its thread joined), so another may start.
    pub fn spares_stopped(&self) {
        self.state.lock().spares = Spares::default();
    }

    /// The prefaulter's thread: a pass at once and then after every allocation, until
    /// `stop_spares`.
    pub fn serve_spares(&self) {
        let mut seen = None;
        loop {
            {
                let mut st = self.state.lock();
                while !st.spares.stop && seen == Some(st.spares.allocs) {
                    self.demand.wait(&mut st);
                }
                if st.spares.stop {
                    return;
                }
                seen = Some(st.spares.allocs);
            }
            // Failures (the pool at its largest, I/O) are the commit path's to report,
            // when its own allocation needs the zone.
            let _ = self.prepare_spares();
        }
    }

    /// One pass: grows the pool by an extent when fewer zones than the target are free
    /// (and it may grow), then pre-faults the zones `alloc_zone` hands out next. Runs
    /// without the state lock held across I/O, so allocations and commits go on.
    fn prepare_spares(&self) -> Result<()> {
        let (target, short) = {
            let st = self.state.lock();
            (st.spares.target, st.free.len() < st.spares.target)
        };
        if short && self.media.extent_count() < self.media.max_extents() {
            let extent = self.media.grow()?;
            self.add_extent_zones(&mut self.state.lock(), extent);
        }
        let todo: Vec<ZoneId> = {
            let mut st = self.state.lock();
            let next: Vec<ZoneId> = st.free.iter().rev().take(target).copied().collect();
            st.spares.faulted.retain(|z| next.contains(z));
            next.into_iter()
                .filter(|z| !st.spares.faulted.contains(z))
                .collect()
        };
        let zone_size = self.geometry().zone_size as usize;
        for zone in todo {
            // The zone may be handed out meanwhile: pre-faulting changes no byte of it.
            self.media
                .prefault(self.geometry().zone_off(zone), zone_size)?;
            let mut st = self.state.lock();
            if st.free.contains(&zone) {
                st.spares.faulted.push(zone);
            }
        }
        Ok(())
    }

    /// Marks `owner` dead (one 8-byte store, flushed and fenced), then returns all its
    /// zones to the free list.
    pub fn release_owner(&self, owner: OwnerId) -> Result<()> {
        let mut st = self.state.lock();
        if !st.is_live(owner) {
            return Err(PmemError::DeadOwner {
                owner: owner.to_raw(),
            });
        }
        self.media.meta_publish(
            registry_off(self.geometry(), owner.slot()),
            registry_word(owner.generation(), STATE_DEAD),
        )?;
        let entry = st.owners.remove(&owner.slot()).expect("checked live above");
        st.free.extend(entry.zones);
        st.free.sort_unstable_by(|a, b| b.cmp(a));
        st.free_slots.push((owner.slot(), owner.generation()));
        Ok(())
    }

    /// Releases every live owner for which `keep` is false; returns how many.
    pub fn retain_owners(&self, mut keep: impl FnMut(OwnerId) -> bool) -> Result<usize> {
        let drop: Vec<OwnerId> = self.owners().into_iter().filter(|&o| !keep(o)).collect();
        for &owner in &drop {
            self.release_owner(owner)?;
        }
        Ok(drop.len())
    }

    /// The live owners, by slot.
    pub fn owners(&self) -> Vec<OwnerId> {
        let st = self.state.lock();
        let mut owners: Vec<OwnerId> = st
            .owners
            .iter()
            .map(|(&slot, e)| OwnerId::new(slot, e.generation))
            .collect();
        owners.sort_unstable();
        owners
    }

    pub fn is_live(&self, owner: OwnerId) -> bool {
        self.state.lock().is_live(owner)
    }

    /// The zones committed to `owner`, in address order (empty if it is not live).
    pub fn zones_of(&self, owner: OwnerId) -> Vec<PmOff> {
        let st = self.state.lock();
        let mut zones: Vec<ZoneId> = match st.owners.get(&owner.slot()) {
            Some(e) if e.generation == owner.generation() => e.zones.clone(),
            _ => Vec::new(),
        };
        zones.sort_unstable();
        self.offs(zones)
    }

    /// The live owner that committed the zone starting at `zone_off`, per its owner word.
    pub fn zone_owner(&self, zone_off: PmOff) -> Option<OwnerId> {
        let zone = self.geometry().zone_of(zone_off)?;
        if zone.extent as u32 >= self.media.extent_count() {
            return None;
        }
        let word = self.media.meta_load(self.geometry().owner_word_off(zone));
        let owner = OwnerId::from_raw(word)?;
        self.is_live(owner).then_some(owner)
    }

    /// Free zones in address order.
    pub fn free_zones(&self) -> Vec<PmOff> {
        let mut free = self.state.lock().free.clone();
        free.sort_unstable();
        self.offs(free)
    }

    fn offs(&self, zones: Vec<ZoneId>) -> Vec<PmOff> {
        zones
            .into_iter()
            .map(|z| self.geometry().zone_off(z))
            .collect()
    }

    /// Zones in the extents mapped now.
    pub fn zone_count(&self) -> u64 {
        self.media.extent_count() as u64 * self.geometry().zones_per_extent as u64
    }

    pub fn stats(&self) -> AllocStats {
        let st = self.state.lock();
        let owned: u64 = st.owners.values().map(|e| e.zones.len() as u64).sum();
        AllocStats {
            extents: self.media.extent_count(),
            zones: self.zone_count(),
            free_zones: st.free.len() as u64,
            owned_zones: owned,
            reserved_zones: st.reserved,
            live_owners: st.owners.len() as u64,
        }
    }
}

impl AllocState {
    fn is_live(&self, owner: OwnerId) -> bool {
        self.owners
            .get(&owner.slot())
            .is_some_and(|e| e.generation == owner.generation())
    }
}

/// Rebuilds the allocator's DRAM state from the registry and the owner words.
fn recover(media: &Media) -> (AllocState, RecoveryReport) {
    let start = Instant::now();
    let g = *media.geometry();
    let mut report = RecoveryReport {
        extents: media.extent_count(),
        ..RecoveryReport::default()
    };
    let mut st = AllocState::default();
    report.registry_slots = g.max_owners as u64;
    for slot in 0..g.max_owners {
        let word = media.meta_load(registry_off(&g, slot));
        let generation = word >> 2;
        match word & STATE_MASK {
            0 if word == 0 => st.free_slots.push((slot, 0)),
            STATE_LIVE if generation > 0 => {
                st.owners.insert(
                    slot,
                    OwnerEntry {
                        generation,
                        zones: Vec::new(),
                    },
                );
            }
            STATE_DEAD if generation > 0 => st.free_slots.push((slot, generation)),
            _ => {
                report
                    .anomalies
                    .push(format!("owner slot {slot} holds an invalid word {word:#x}"));
                // Retire the slot: reusing it could revive zones of an unknown generation.
            }
        }
    }
    st.free_slots.reverse();
    for extent in 0..media.extent_count() as u16 {
        for index in (0..g.zones_per_extent).rev() {
            let zone = ZoneId { extent, index };
            let word = media.meta_load(g.owner_word_off(zone));
            report.words_scanned += 1;
            let owner = match OwnerId::from_raw(word) {
                Some(o) if o.slot() < g.max_owners => Some(o),
                None if word == 0 => None,
                _ => {
                    report.anomalies.push(format!(
                        "zone {extent}:{index} has an invalid owner word {word:#x}"
                    ));
                    None
                }
            };
            match owner.and_then(|o| st.owners.get_mut(&o.slot()).map(|e| (o, e))) {
                Some((o, entry)) if entry.generation == o.generation() => {
                    entry.zones.push(zone);
                }
                _ => st.free.push(zone),
            }
        }
    }
    // Zones were pushed highest-index first per extent; order the whole list so `pop`
    // hands out the lowest address.
    st.free.sort_unstable_by(|a, b| b.cmp(a));
    report.zones = report.extents as u64 * g.zones_per_extent as u64;
    report.free_zones = st.free.len() as u64;
    report.owned_zones = report.zones - report.free_zones;
    report.live_owners = st.owners.len() as u64;
    report.elapsed = start.elapsed();
    (st, report)
}
