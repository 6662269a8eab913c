//! The YCSB core workloads A–F as the YCSB specification defines them: the operation
//! mix, the request distributions (scrambled zipfian, uniform, latest), the key naming
//! ("user" + hash of the key number), the record layout (10 fields × 100 B by default)
//! and the scan lengths (uniform 1–100). A [`Generator`] turns a workload into a
//! reproducible stream of operations; the engines that run them come separately.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::dist::{ZIPFIAN_CONSTANT, Zipfian, fnv64};
use crate::limits::InvalidSetting;

/// How keys are chosen for reads, updates and scans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestDistribution {
    Uniform,
    /// Scrambled zipfian, constant 0.99.
    Zipfian,
    /// Zipfian over recency: the newest inserts are the most popular.
    Latest,
}

/// One YCSB core workload: proportions of each operation and the key distribution.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    pub name: char,
    pub read: f64,
    pub update: f64,
    pub insert: f64,
    pub scan: f64,
    pub read_modify_write: f64,
    pub distribution: RequestDistribution,
    pub max_scan_length: u64,
}

impl Workload {
    /// The core workload `name` (A–F), as in YCSB's workloads/workloada … workloadf.
    pub fn core(name: char) -> Option<Workload> {
        let w = |read, update, insert, scan, rmw, distribution| Workload {
            name: name.to_ascii_uppercase(),
            read,
            update,
            insert,
            scan,
            read_modify_write: rmw,
            distribution,
            max_scan_length: 100,
        };
        use RequestDistribution::*;
        Some(match name.to_ascii_uppercase() {
            'A' => w(0.5, 0.5, 0.0, 0.0, 0.0, Zipfian),
            'B' => w(0.95, 0.05, 0.0, 0.0, 0.0, Zipfian),
            'C' => w(1.0, 0.0, 0.0, 0.0, 0.0, Zipfian),
            'D' => w(0.95, 0.0, 0.05, 0.0, 0.0, Latest),
            'E' => w(0.0, 0.0, 0.05, 0.95, 0.0, Zipfian),
            'F' => w(0.5, 0.0, 0.0, 0.0, 0.5, Zipfian),
            _ => return None,
        })
    }

    /// A one-line description for reports.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (p, what) in [
            (self.read, "read"),
            (self.update, "update"),
            (self.insert, "insert"),
            (self.scan, "scan"),
            (self.read_modify_write, "read-modify-write"),
        ] {
            if p > 0.0 {
                parts.push(format!("{:.0}% {what}", p * 100.0));
            }
        }
        format!("{} ({:?})", parts.join(", "), self.distribution).to_lowercase()
    }
}

/// Record layout: how many fields of how many bytes, and the key form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub field_count: usize,
    pub field_length: usize,
    /// 8-byte binary keys instead of YCSB's "user…" strings.
    pub short_keys: bool,
}

impl Layout {
    /// YCSB's default: "user" + 20 digits, 10 fields of 100 bytes.
    pub const YCSB: Layout = Layout {
        field_count: 10,
        field_length: 100,
        short_keys: false,
    };
    /// The X-Engine evaluation's setting: 8-byte keys, one 500-byte value.
    pub const XENGINE: Layout = Layout {
        field_count: 1,
        field_length: 500,
        short_keys: true,
    };

    /// The key of record number `n` in this layout.
    pub fn key(&self, n: u64) -> Vec<u8> {
        if self.short_keys {
            fnv64(n).to_be_bytes().to_vec()
        } else {
            key(n)
        }
    }

    pub fn value_size(&self) -> usize {
        self.field_count * self.field_length
    }
}

/// The key of record number `n`: "user" followed by the hash of `n` (YCSB's hashed
/// insert order), so consecutive inserts scatter over the key space.
pub fn key(n: u64) -> Vec<u8> {
    format!("user{:020}", fnv64(n)).into_bytes()
}

/// A value of `layout`, its bytes derived from `n` and `version` so that reads can be
/// checked. Cheap (a copy out of a fixed random pool), so the client does not dominate
/// what it measures.
pub fn value(layout: &Layout, n: u64, version: u64) -> Vec<u8> {
    static POOL: OnceLock<Vec<u8>> = OnceLock::new();
    let pool = POOL.get_or_init(|| {
        let mut rng = SmallRng::seed_from_u64(0x5eed);
        (0..VALUE_POOL)
            .map(|_| b'a' + rng.random_range(0..26u8))
            .collect()
    });
    let len = layout.value_size();
    let mut v = Vec::with_capacity(len);
    let h = fnv64(n ^ version.rotate_left(32));
    let mut at = (h as usize) % (VALUE_POOL / 2);
    while v.len() < len {
        let take = (len - v.len()).min(VALUE_POOL - at);
        v.extend_from_slice(&pool[at..at + take]);
        at = 0;
    }
    // The first bytes name the record and version, so two values never look alike.
    for (d, s) in v.iter_mut().zip(h.to_le_bytes()) {
        *d = s;
    }
    v
}

const VALUE_POOL: usize = 1 << 16;

/// One operation of the run phase, on record numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Read(u64),
    Update(u64),
    Insert(u64),
    /// Start record and number of records.
    Scan(u64, u64),
    ReadModifyWrite(u64),
}

/// Kinds of operation, for counting and reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    Read,
    Update,
    Insert,
    Scan,
    ReadModifyWrite,
}

impl Op {
    pub fn kind(&self) -> OpKind {
        match self {
            Op::Read(_) => OpKind::Read,
            Op::Update(_) => OpKind::Update,
            Op::Insert(_) => OpKind::Insert,
            Op::Scan(..) => OpKind::Scan,
            Op::ReadModifyWrite(_) => OpKind::ReadModifyWrite,
        }
    }
}

/// Zipfian draws beyond the inserted records tried before folding one into range. In
/// YCSB's own settings (inserts at most a few percent of the records) a redraw is rare,
/// so this many misses in a row only happens in a degenerate configuration.
const MAX_REDRAWS: u32 = 1000;

/// A reproducible stream of operations for one thread. Threads of one run share the
/// record counters, so inserts get distinct numbers and reads only pick inserted ones.
pub struct Generator {
    workload: Workload,
    rng: SmallRng,
    zipf: Zipfian,
    counters: Arc<Counters>,
}

/// Records of a run: numbers handed to inserts, and records known to be inserted.
#[derive(Debug)]
pub struct Counters {
    claimed: AtomicU64,
    inserted: AtomicU64,
}

impl Counters {
    pub fn new(records: u64) -> Arc<Counters> {
        Arc::new(Counters {
            claimed: AtomicU64::new(records),
            inserted: AtomicU64::new(records),
        })
    }

    /// Records inserted so far (loaded ones included).
    pub fn inserted(&self) -> u64 {
        self.inserted.load(Ordering::Acquire)
    }

    /// Marks record `n` as inserted (readable by other threads' operations).
    pub fn acknowledge(&self, n: u64) {
        self.inserted.fetch_max(n + 1, Ordering::AcqRel);
    }
}

impl Generator {
    /// A generator over `records` loaded records, expecting about `operations` operations
    /// (so the zipfian space covers the records inserts will add, as YCSB sizes it).
    pub fn new(
        workload: Workload,
        records: u64,
        operations: u64,
        seed: u64,
    ) -> Result<Generator, InvalidSetting> {
        Generator::shared(workload, Counters::new(records), operations, seed)
    }

    /// A generator sharing `counters` with the other threads of a run.
    pub fn shared(
        workload: Workload,
        counters: Arc<Counters>,
        operations: u64,
        seed: u64,
    ) -> Result<Generator, InvalidSetting> {
        let records = counters.inserted.load(Ordering::Acquire);
        // Every workload's first operation may pick an existing record, and there is
        // none to pick from an empty table.
        if records == 0 {
            return Err(InvalidSetting::new(
                "records",
                "must be at least 1 for a workload to pick records from, not 0",
            ));
        }
        if workload.scan > 0.0 && workload.max_scan_length == 0 {
            return Err(InvalidSetting::new(
                "max_scan_length",
                "must be at least 1 when the workload scans, not 0",
            ));
        }
        let expected_inserts = (operations as f64 * workload.insert * 2.0) as u64;
        Ok(Generator {
            zipf: Zipfian::new(
                records.saturating_add(expected_inserts.max(1)),
                ZIPFIAN_CONSTANT,
            )?,
            workload,
            rng: SmallRng::seed_from_u64(seed),
            counters,
        })
    }

    /// Records inserted so far.
    pub fn records(&self) -> u64 {
        self.counters.inserted.load(Ordering::Acquire)
    }

    /// A record number to read, update or start a scan at.
    fn choose(&mut self) -> u64 {
        let records = self.records();
        match self.workload.distribution {
            RequestDistribution::Uniform => self.rng.random_range(0..records),
            RequestDistribution::Zipfian => {
                // Draws beyond the records inserted so far are drawn again, as YCSB does;
                // but when the zipfian space dwarfs the records (a few records and many
                // expected inserts) a hit could take for ever, so the last draw is folded
                // into range instead.
                let mut n = self.zipf.next_scrambled(&mut self.rng);
                for _ in 0..MAX_REDRAWS {
                    if n < records {
                        return n;
                    }
                    n = self.zipf.next_scrambled(&mut self.rng);
                }
                n % records
            }
            RequestDistribution::Latest => {
                let back = self.zipf.next(&mut self.rng) % records;
                records - 1 - back
            }
        }
    }

    pub fn next_op(&mut self) -> Op {
        let w = &self.workload;
        let mut roll: f64 = self.rng.random();
        let mut pick = |p: f64| {
            roll -= p;
            roll < 0.0
        };
        if pick(w.read) {
            Op::Read(self.choose())
        } else if pick(w.update) {
            Op::Update(self.choose())
        } else if pick(w.insert) {
            Op::Insert(self.counters.claimed.fetch_add(1, Ordering::AcqRel))
        } else if pick(w.scan) {
            let len = self.rng.random_range(1..=w.max_scan_length);
            Op::Scan(self.choose(), len)
        } else {
            Op::ReadModifyWrite(self.choose())
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn mix(name: char, ops: u64) -> HashMap<OpKind, f64> {
        let mut g = Generator::new(Workload::core(name).unwrap(), 10_000, ops, 7).unwrap();
        let mut counts: HashMap<OpKind, u64> = HashMap::new();
        for _ in 0..ops {
            *counts.entry(g.next_op().kind()).or_default() += 1;
        }
        counts
            .into_iter()
            .map(|(k, c)| (k, c as f64 / ops as f64))
            .collect()
    }

    #[test]
    fn operation_mix_matches_the_spec() {
        for name in ['A', 'B', 'C', 'D', 'E', 'F'] {
            let w = Workload::core(name).unwrap();
            let got = mix(name, 100_000);
            for (kind, p) in [
                (OpKind::Read, w.read),
                (OpKind::Update, w.update),
                (OpKind::Insert, w.insert),
                (OpKind::Scan, w.scan),
                (OpKind::ReadModifyWrite, w.read_modify_write),
            ] {
                let share = got.get(&kind).copied().unwrap_or(0.0);
                assert!((share - p).abs() < 0.01, "{name} {kind:?}: {share} vs {p}");
            }
        }
        assert!(Workload::core('G').is_none());
        assert_eq!(Workload::core('a').unwrap().name, 'A');
    }

    #[test]
    fn zipfian_requests_concentrate_on_few_keys() {
        let mut g = Generator::new(Workload::core('C').unwrap(), 100_000, 200_000, 3).unwrap();
        let mut counts = vec![0u32; 100_000];
        for _ in 0..200_000 {
            if let Op::Read(n) = g.next_op() {
                counts[n as usize] += 1;
            }
        }
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let top_1pct: u32 = counts[..1000].iter().sum();
        let share = top_1pct as f64 / 200_000.0;
        // For 100,000 items at 0.99 the hottest 1% of keys draw about 60% of requests
        // (0.61 with this seed); a uniform draw would give them 1%.
        assert!((0.5..0.7).contains(&share), "top 1% share {share}");
    }

    #[test]
    fn uniform_requests_spread_evenly() {
        let mut w = Workload::core('C').unwrap();
        w.distribution = RequestDistribution::Uniform;
        let mut g = Generator::new(w, 1000, 100_000, 5).unwrap();
        let mut counts = vec![0u32; 1000];
        for _ in 0..100_000 {
            if let Op::Read(n) = g.next_op() {
                counts[n as usize] += 1;
            }
        }
        let top_1pct: u32 = {
            counts.sort_unstable_by(|a, b| b.cmp(a));
            counts[..10].iter().sum()
        };
        assert!((top_1pct as f64 / 100_000.0) < 0.02);
    }

    #[test]
    fn latest_favours_recent_inserts() {
        let mut g = Generator::new(Workload::core('D').unwrap(), 10_000, 100_000, 11).unwrap();
        let (mut reads, mut recent) = (0u64, 0u64);
        for _ in 0..100_000 {
            match g.next_op() {
                Op::Read(n) => {
                    assert!(n < g.records(), "read of a record not inserted yet");
                    reads += 1;
                    // Within the newest 1% of what exists.
                    if n >= g.records() - g.records() / 100 {
                        recent += 1;
                    }
                }
                Op::Insert(n) => {
                    assert_eq!(n, g.records());
                    g.counters.acknowledge(n);
                }
                other => panic!("{other:?} in workload D"),
            }
        }
        assert!(recent as f64 / reads as f64 > 0.5, "{recent} of {reads}");
    }

    #[test]
    fn scans_stay_in_range() {
        let mut g = Generator::new(Workload::core('E').unwrap(), 5_000, 50_000, 13).unwrap();
        let mut lengths = Vec::new();
        for _ in 0..50_000 {
            if let Op::Scan(start, len) = g.next_op() {
                assert!(start < g.records());
                assert!((1..=100).contains(&len));
                lengths.push(len);
            }
        }
        let mean = lengths.iter().sum::<u64>() as f64 / lengths.len() as f64;
        assert!((mean - 50.5).abs() < 2.0, "mean scan length {mean}");
        assert!(lengths.contains(&1) && lengths.contains(&100));
    }

    #[test]
    fn keys_and_values_are_deterministic() {
        assert_eq!(key(5), key(5));
        assert_ne!(key(5), key(6));
        assert_eq!(key(0).len(), 24);
        let v = value(&Layout::YCSB, 9, 1);
        assert_eq!(v.len(), 1000);
        assert_eq!(
            value(
                &Layout {
                    field_count: 100,
                    field_length: 1000,
                    short_keys: false
                },
                3,
                0
            )
            .len(),
            100_000
        );
        assert_eq!(v, value(&Layout::YCSB, 9, 1));
        assert_ne!(v, value(&Layout::YCSB, 9, 2));
        assert_eq!(value(&Layout::XENGINE, 1, 0).len(), 500);
        assert_eq!(Layout::XENGINE.key(1).len(), 8);
        assert_eq!(Layout::YCSB.key(1), key(1));
        let mut a = Generator::new(Workload::core('A').unwrap(), 100, 100, 1).unwrap();
        let mut b = Generator::new(Workload::core('A').unwrap(), 100, 100, 1).unwrap();
        for _ in 0..100 {
            assert_eq!(a.next_op(), b.next_op());
        }
    }

    #[test]
    fn refuses_what_would_hang_or_panic() {
        for name in ['A', 'B', 'C', 'D', 'E', 'F'] {
            let w = Workload::core(name).unwrap();
            assert!(Generator::new(w, 0, 100, 1).is_err(), "{name}");
        }
        let mut e = Workload::core('E').unwrap();
        e.max_scan_length = 0;
        assert!(Generator::new(e, 10, 100, 1).is_err());
    }

    #[test]
    fn few_records_and_many_inserts_still_draw_in_range() {
        // One record, a zipfian space of a million: a plain redraw loop would almost never
        // land on record 0.
        let mut g = Generator::new(Workload::core('E').unwrap(), 1, 10_000_000, 17).unwrap();
        for _ in 0..1000 {
            if let Op::Scan(start, _) = g.next_op() {
                assert!(start < g.records());
            }
        }
    }
}
