//! Candidate DRAM index structures for the memtable, measured the way the memtable uses
//! them: records (16-byte key, 8-byte tag, value) lie in a byte arena standing in for PM,
//! in commit order; an index maps keys to record addresses. The radix tree keeps no key
//! bytes and reads them from the records; the B-tree and the skip list keep each
//! version's internal key (key + tag) inline in their nodes, as the B-tree memtable index
//! before it did. Measured single-threaded at given sizes: inserts in random key order,
//! new versions of a quarter of the keys, point reads of random present keys, short
//! scans, and the DRAM each structure holds per key.

use std::collections::BTreeMap;
use std::ops::{Bound, ControlFlow};
use std::time::Instant;

use crossbeam_skiplist::SkipMap;
use parking_lot::RwLock;
use pmdb_engine::art::{Art, KeySource, Version};
use rand::SeedableRng;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use crate::engine::bench_key;
use crate::limits::{InvalidSetting, MAX_KEYS, MAX_OPERATIONS, check, check_memory};
use crate::machine::Machine;
use crate::progress::progress;

/// Bytes of each key, and of each record's value (records are spread as they are in PM).
const KEY_LEN: usize = 16;
const VALUE_LEN: usize = 100;
/// Record layout: key length (u32), value length (u32), tag (u64), key, value, padding.
const RECORD_HEADER: usize = 16;
const RECORD_LEN: usize = (RECORD_HEADER + KEY_LEN + VALUE_LEN).next_multiple_of(8);
/// Entries a scan reads.
const SCAN_LEN: usize = 10;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IndexResult {
    pub structure: String,
    pub keys: u64,
    pub insert_ns: f64,
    /// A new version of an existing key.
    pub update_ns: f64,
    pub get_ns: f64,
    /// A seek and `SCAN_LEN` entries.
    pub scan_ns: f64,
    /// DRAM the structure holds per key (all versions included): the growth of the
    /// resident memory of a process that built only this structure.
    pub bytes_per_key: f64,
    /// The structure's own count of its DRAM per key, where it keeps one.
    pub counted_bytes_per_key: Option<f64>,
    pub gets: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct IndexReport {
    pub machine: Machine,
    pub command: String,
    pub lookups: u64,
    pub results: Vec<IndexResult>,
}

/// Records in a byte arena, as a memtable's zones hold them.
struct Records {
    bytes: Vec<u8>,
}

impl Records {
    fn with_capacity(n: usize) -> Records {
        Records {
            bytes: Vec::with_capacity(n * RECORD_LEN),
        }
    }

    /// Appends a record and returns its address.
    fn append(&mut self, key: &[u8], tag: u64) -> u64 {
        let at = self.bytes.len();
        self.bytes.resize(at + RECORD_LEN, 0);
        let r = &mut self.bytes[at..];
        r[0..4].copy_from_slice(&(key.len() as u32).to_le_bytes());
        r[4..8].copy_from_slice(&(VALUE_LEN as u32).to_le_bytes());
        r[8..16].copy_from_slice(&tag.to_le_bytes());
        r[RECORD_HEADER..RECORD_HEADER + key.len()].copy_from_slice(key);
        at as u64
    }
}

impl KeySource for Records {
    fn record(&self, rec: u64) -> pmdb_engine::Result<(u64, &[u8])> {
        let at = rec as usize;
        let len = u32::from_le_bytes(self.bytes[at..at + 4].try_into().expect("4 bytes"));
        let tag = u64::from_le_bytes(self.bytes[at + 8..at + 16].try_into().expect("8 bytes"));
        Ok((
            tag,
            &self.bytes[at + RECORD_HEADER..at + RECORD_HEADER + len as usize],
        ))
    }
}

/// The internal key of a version, stored inline by the ordered maps (key, then the
/// inverted tag so that newer versions come first).
type InlineKey = smallvec::SmallVec<[u8; 32]>;

fn internal_key(key: &[u8], tag: u64) -> InlineKey {
    let mut k = InlineKey::from_slice(key);
    k.extend_from_slice(&(!tag).to_be_bytes());
    k
}

/// A structure under test. Like the memtable, each takes its lock (if it has one) once
/// per call; `get` and `scan` return a checksum so the work cannot be skipped.
trait Candidate {
    const NAME: &'static str;
    fn new() -> Self;
    fn insert(&mut self, records: &Records, key: &[u8], v: Version);
    fn get(&self, records: &Records, key: &[u8]) -> Option<u64>;
    fn scan(&self, records: &Records, from: &[u8], n: usize) -> u64;
    /// DRAM held, when the structure counts it.
    fn dram_bytes(&self) -> Option<usize>;
}

impl Candidate for Art {
    const NAME: &'static str = "adaptive radix tree (pmdb), keys read from the records";
    fn new() -> Self {
        Art::new()
    }
    fn insert(&mut self, records: &Records, key: &[u8], v: Version) {
        // No reader is older than the newest version: keep only what a reader that
        // started before this insert may want.
        let horizon = (v.tag >> 8).saturating_sub(1);
        Art::insert(self, records, key, v, horizon).expect("records are well-formed");
    }
    fn get(&self, records: &Records, key: &[u8]) -> Option<u64> {
        let (leaf, _) = Art::get(self, records, key).expect("records are well-formed")?;
        Some(leaf.any_record())
    }
    fn scan(&self, records: &Records, from: &[u8], n: usize) -> u64 {
        let mut sum = 0;
        let mut left = n;
        self.walk(records, Bound::Included(from), true, |leaf| {
            sum += leaf.any_record();
            left -= 1;
            if left == 0 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .expect("records are well-formed");
        sum
    }
    fn dram_bytes(&self) -> Option<usize> {
        Some(Art::dram_bytes(self))
    }
}

impl Candidate for RwLock<BTreeMap<InlineKey, u64>> {
    const NAME: &'static str = "std BTreeMap of internal keys (inline) behind a RwLock";
    fn new() -> Self {
        RwLock::new(BTreeMap::new())
    }
    fn insert(&mut self, _: &Records, key: &[u8], v: Version) {
        self.get_mut().insert(internal_key(key, v.tag), v.rec);
    }
    fn get(&self, _: &Records, key: &[u8]) -> Option<u64> {
        let from = internal_key(key, u64::MAX);
        let map = self.read();
        let (k, rec) = map.range(from..).next()?;
        (k[..k.len() - 8] == *key).then_some(*rec)
    }
    fn scan(&self, _: &Records, from: &[u8], n: usize) -> u64 {
        let from = internal_key(from, u64::MAX);
        self.read().range(from..).take(n).map(|(_, r)| *r).sum()
    }
    fn dram_bytes(&self) -> Option<usize> {
        None
    }
}

impl Candidate for SkipMap<InlineKey, u64> {
    const NAME: &'static str = "crossbeam-skiplist SkipMap of internal keys (inline)";
    fn new() -> Self {
        SkipMap::new()
    }
    fn insert(&mut self, _: &Records, key: &[u8], v: Version) {
        SkipMap::insert(self, internal_key(key, v.tag), v.rec);
    }
    fn get(&self, _: &Records, key: &[u8]) -> Option<u64> {
        let from = internal_key(key, u64::MAX);
        let e = self.lower_bound(Bound::Included(&from))?;
        (e.key()[..e.key().len() - 8] == *key).then_some(*e.value())
    }
    fn scan(&self, _: &Records, from: &[u8], n: usize) -> u64 {
        let from = internal_key(from, u64::MAX);
        self.range(from..).take(n).map(|e| *e.value()).sum()
    }
    fn dram_bytes(&self) -> Option<usize> {
        None
    }
}

/// Resident memory of this process, in bytes (0 where /proc is missing).
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn per_op(start: Instant, ops: u64) -> f64 {
    start.elapsed().as_nanos() as f64 / ops.max(1) as f64
}

fn measure<C: Candidate>(keys: u64, lookups: u64) -> IndexResult {
    let mut order: Vec<u64> = (0..keys).collect();
    order.shuffle(&mut SmallRng::seed_from_u64(keys));
    let ks: Vec<Vec<u8>> = order.iter().map(|&i| bench_key(i, KEY_LEN)).collect();
    let updated = ks.len() / 4;
    let mut records = Records::with_capacity(ks.len() + updated);
    let mut seq = 0u64;
    let mut version = |records: &mut Records, key: &[u8]| {
        seq += 1;
        let tag = (seq << 8) | 1;
        Version {
            tag,
            rec: records.append(key, tag),
        }
    };
    // Every record is written before the clock starts, as the commit path writes a
    // group's records before it indexes them.
    let inserts: Vec<Version> = ks.iter().map(|k| version(&mut records, k)).collect();
    let updates: Vec<(usize, Version)> = (0..updated as u64)
        .map(|i| {
            let at = (crate::dist::fnv64(i) % keys) as usize;
            (at, version(&mut records, &ks[at]))
        })
        .collect();
    let heap_before = resident_bytes();
    let mut index = C::new();
    let bar = progress(&format!("{}: insert {keys}", C::NAME), keys);
    let start = Instant::now();
    for (i, (k, v)) in ks.iter().zip(&inserts).enumerate() {
        index.insert(&records, k, *v);
        if i % 65536 == 0 {
            bar.set_position(i as u64);
        }
    }
    let insert_ns = per_op(start, keys);
    bar.finish_and_clear();
    let start = Instant::now();
    for (at, v) in &updates {
        index.insert(&records, &ks[*at], *v);
    }
    let update_ns = per_op(start, updated as u64);
    let bytes = resident_bytes().saturating_sub(heap_before);
    let counted = index.dram_bytes().map(|b| b as f64 / keys as f64);
    // Keys probed in another random order than they were inserted in.
    let probe = |i: u64| &ks[(crate::dist::fnv64(i ^ 0x5eed) % keys) as usize];
    let start = Instant::now();
    let mut check = 0u64;
    for i in 0..lookups {
        check ^= index.get(&records, probe(i)).expect("present key found");
    }
    let get_ns = per_op(start, lookups);
    let scans = (lookups / 10).max(1);
    let start = Instant::now();
    for i in 0..scans {
        check ^= index.scan(&records, probe(i), SCAN_LEN);
    }
    let scan_ns = per_op(start, scans);
    std::hint::black_box(check);
    IndexResult {
        structure: C::NAME.into(),
        keys,
        insert_ns,
        update_ns,
        get_ns,
        scan_ns,
        bytes_per_key: bytes as f64 / keys as f64,
        counted_bytes_per_key: counted,
        gets: lookups,
    }
}

/// Refuses sizes that would divide by zero, run for days or exhaust memory: the records
/// (a quarter of them twice) and each structure's copy of the keys.
pub fn validate(key_counts: &[u64], lookups: u64) -> Result<(), InvalidSetting> {
    for &keys in key_counts {
        check("keys", keys, 1..=MAX_KEYS)?;
    }
    check("lookups", lookups, 1..=MAX_OPERATIONS)?;
    let largest = key_counts.iter().copied().max().unwrap_or(0);
    let per_key = (RECORD_LEN * 5 / 4 + 3 * 64) as u64;
    check_memory("keys", largest.saturating_mul(per_key))
}

/// How many structures are compared.
pub const CANDIDATES: usize = 3;

/// Measures candidate `candidate` (0 to `CANDIDATES - 1`) at `keys` keys, in this process.
pub fn measure_one(candidate: usize, keys: u64, lookups: u64) -> Option<IndexResult> {
    match candidate {
        0 => Some(measure::<Art>(keys, lookups)),
        1 => Some(measure::<RwLock<BTreeMap<InlineKey, u64>>>(keys, lookups)),
        2 => Some(measure::<SkipMap<InlineKey, u64>>(keys, lookups)),
        _ => None,
    }
}

/// Measures every candidate at every size. `one(candidate, keys)` runs one measurement —
/// in a fresh process of its own, so that the resident memory it reports grew for that
/// structure alone and not into what an earlier one freed.
pub fn run<E>(
    key_counts: &[u64],
    lookups: u64,
    command: String,
    one: impl Fn(usize, u64) -> Result<IndexResult, E>,
) -> Result<IndexReport, E>
where
    E: From<InvalidSetting>,
{
    validate(key_counts, lookups)?;
    let mut results = Vec::new();
    for &keys in key_counts {
        for candidate in 0..CANDIDATES {
            results.push(one(candidate, keys)?);
        }
    }
    Ok(IndexReport {
        machine: Machine::detect(),
        command,
        lookups,
        results,
    })
}

pub fn markdown(r: &IndexReport) -> String {
    let mut out = String::from("# Memtable index candidates\n\n");
    out.push_str(&format!(
        "Machine: {} ({} cores). Command: `{}`. Records of a {KEY_LEN}-byte key and a {VALUE_LEN}-byte value in a DRAM arena standing in for PM, in commit order; keys inserted in random order, then a new version of a quarter of them; {} point reads of random present keys; {} scans of {SCAN_LEN} keys. One thread. DRAM per key: the growth of resident memory while the structure was built (and its versions added), each structure in a process of its own; \"counted\" is the structure's own count where it keeps one.\n\n",
        r.machine.cpu,
        r.machine.cores,
        r.command,
        r.lookups,
        (r.lookups / 10).max(1)
    ));
    out.push_str("| structure | keys | insert ns | update ns | get ns | scan ns | DRAM bytes/key | counted |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for x in &r.results {
        let counted = x
            .counted_bytes_per_key
            .map_or_else(|| "—".to_string(), |b| format!("{b:.1}"));
        out.push_str(&format!(
            "| {} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.1} | {counted} |\n",
            x.structure, x.keys, x.insert_ns, x.update_ns, x.get_ns, x.scan_ns, x.bytes_per_key
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_candidate_finds_every_key() {
        let r = run(&[2000], 500, "test".into(), |c, k| {
            measure_one(c, k, 500).ok_or(InvalidSetting::new("candidate", "unknown"))
        })
        .unwrap();
        assert_eq!(r.results.len(), 3);
        assert!(
            r.results
                .iter()
                .all(|x| x.insert_ns > 0.0 && x.get_ns > 0.0 && x.scan_ns > 0.0)
        );
        assert!(markdown(&r).contains("radix tree"));
    }

    #[test]
    fn scans_agree_across_candidates() {
        let ks: Vec<Vec<u8>> = (0..500).map(|i| bench_key(i, KEY_LEN)).collect();
        let mut records = Records::with_capacity(ks.len());
        let mut art = <Art as Candidate>::new();
        let mut tree = <RwLock<BTreeMap<InlineKey, u64>> as Candidate>::new();
        for (i, k) in ks.iter().enumerate() {
            let tag = ((i as u64 + 1) << 8) | 1;
            let v = Version {
                tag,
                rec: records.append(k, tag),
            };
            Candidate::insert(&mut art, &records, k, v);
            Candidate::insert(&mut tree, &records, k, v);
        }
        for k in ks.iter().step_by(7) {
            assert_eq!(
                Candidate::scan(&art, &records, k, 5),
                Candidate::scan(&tree, &records, k, 5)
            );
            assert_eq!(
                Candidate::get(&art, &records, k),
                Candidate::get(&tree, &records, k)
            );
        }
    }

    #[test]
    fn refuses_empty_and_absurd_sizes() {
        for (keys, lookups) in [(0, 10), (10, 0), (MAX_KEYS + 1, 10)] {
            let e = run(&[keys], lookups, "test".into(), |c, k| {
                measure_one(c, k, lookups).ok_or(InvalidSetting::new("candidate", "unknown"))
            })
            .unwrap_err();
            assert!(e.to_string().contains("must be"), "{e}");
        }
    }
}
