//! Hardware threads and cores, and where each mapping puts its helpers.

use std::fmt;

use crate::PrefetchError;

/// Where helpers run, after seed 001's section 7.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mapping {
    /// Helpers on physical cores of their own, away from core 0 where the OS starts
    /// work first; they bring lines to the shared outer caches.
    M1,
    /// Helpers on the second hardware thread of a core (its SMT sibling), which shares
    /// that core's L1 and L2 with the scanner beside it.
    M2,
    /// Two stages: helpers on other cores stage lines in the outer caches, then helpers
    /// on SMT siblings bring them to L1.
    M3,
}

impl fmt::Display for Mapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mapping::M1 => "M1",
            Mapping::M2 => "M2",
            Mapping::M3 => "M3",
        })
    }
}

impl std::str::FromStr for Mapping {
    type Err = String;

    fn from_str(s: &str) -> Result<Mapping, String> {
        match s.to_ascii_uppercase().as_str() {
            "M1" => Ok(Mapping::M1),
            "M2" => Ok(Mapping::M2),
            "M3" => Ok(Mapping::M3),
            _ => Err(format!("unknown mapping {s:?}: use M1, M2 or M3")),
        }
    }
}

/// The machine's cores, each with its hardware threads (CPU numbers), in core order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    pub cores: Vec<Vec<usize>>,
}

impl Topology {
    /// This machine's, from `/sys/devices/system/cpu`; without it, one core per CPU
    /// the process may use.
    pub fn detect() -> Topology {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut cores: Vec<Vec<usize>> = Vec::new();
        for cpu in 0..cpus {
            let path = format!("/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list");
            let siblings = std::fs::read_to_string(path)
                .ok()
                .and_then(|s| parse_cpu_list(s.trim()))
                .unwrap_or_else(|| vec![cpu]);
            if !cores.iter().any(|c| c.contains(&cpu)) {
                cores.push(siblings);
            }
        }
        Topology { cores }
    }

    fn threads(&self) -> usize {
        self.cores.iter().map(Vec::len).sum()
    }

    fn unsupported(&self, mapping: Mapping, what: &'static str) -> PrefetchError {
        PrefetchError::Unsupported {
            mapping,
            what,
            cores: self.cores.len(),
            threads: self.threads(),
        }
    }

    /// The CPUs of `helpers` helpers (per stage) under `mapping`.
    pub fn place(&self, mapping: Mapping, helpers: usize) -> Result<Placement, PrefetchError> {
        let smt: Vec<usize> = self
            .cores
            .iter()
            .filter_map(|threads| threads.get(1).copied())
            .collect();
        // Other cores than the first, last first: where scanners are least likely to be.
        let far: Vec<usize> = self.cores.iter().skip(1).rev().map(|t| t[0]).collect();
        let pick =
            |from: &[usize]| -> Vec<usize> { (0..helpers).map(|i| from[i % from.len()]).collect() };
        match mapping {
            Mapping::M1 if far.is_empty() => Err(self.unsupported(mapping, "a second core")),
            Mapping::M1 => Ok(Placement {
                near: Vec::new(),
                far: pick(&far),
            }),
            Mapping::M2 | Mapping::M3 if smt.is_empty() => {
                Err(self.unsupported(mapping, "cores with two hardware threads (SMT)"))
            }
            Mapping::M2 => Ok(Placement {
                near: pick(&smt),
                far: Vec::new(),
            }),
            Mapping::M3 if far.is_empty() => Err(self.unsupported(mapping, "a second core")),
            Mapping::M3 => Ok(Placement {
                near: pick(&smt),
                far: pick(&far),
            }),
        }
    }
}

/// `0-3,8,10-11` → [0, 1, 2, 3, 8, 10, 11].
fn parse_cpu_list(s: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for part in s.split(',') {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<usize>().ok()?..=b.parse::<usize>().ok()?),
            None => out.push(part.parse().ok()?),
        }
    }
    Some(out)
}

/// The CPUs helpers are pinned to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Helpers that bring lines to L1, on SMT siblings (M2, M3's second stage).
    pub near: Vec<usize>,
    /// Helpers on other cores (M1; M3's first stage, which stages lines in the outer
    /// caches and passes each job on).
    pub far: Vec<usize>,
}

/// What one helper does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Take from the queue, prefetch to the nearest level (M1, M2).
    Only,
    /// Take from the queue, prefetch to the outer levels, pass the job on (M3).
    First,
    /// Take from the staged queue, prefetch to the nearest level (M3).
    Second,
}

impl Placement {
    /// Each helper's CPU and stage.
    pub(crate) fn stages(&self) -> impl Iterator<Item = (usize, Stage)> + '_ {
        let two = !self.near.is_empty() && !self.far.is_empty();
        let (far, near) = if two {
            (Stage::First, Stage::Second)
        } else {
            (Stage::Only, Stage::Only)
        };
        self.far
            .iter()
            .map(move |&c| (c, far))
            .chain(self.near.iter().map(move |&c| (c, near)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn smt4() -> Topology {
        Topology {
            cores: vec![vec![0, 4], vec![1, 5], vec![2, 6], vec![3, 7]],
        }
    }

    #[test]
    fn cpu_lists_parse() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("5"), Some(vec![5]));
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    fn mappings_place_helpers_by_core() {
        let t = smt4();
        let m1 = t.place(Mapping::M1, 2).unwrap();
        assert_eq!(
            m1,
            Placement {
                near: vec![],
                far: vec![3, 2]
            }
        );
        let m2 = t.place(Mapping::M2, 2).unwrap();
        assert_eq!(
            m2,
            Placement {
                near: vec![4, 5],
                far: vec![]
            }
        );
        let m3 = t.place(Mapping::M3, 1).unwrap();
        assert_eq!(
            m3,
            Placement {
                near: vec![4],
                far: vec![3]
            }
        );
        let stages: Vec<_> = m3.stages().collect();
        assert_eq!(stages, [(3, Stage::First), (4, Stage::Second)]);
        // More helpers than places wrap around.
        assert_eq!(t.place(Mapping::M1, 4).unwrap().far, [3, 2, 1, 3]);
    }

    #[test]
    fn mappings_the_machine_cannot_hold_are_errors() {
        let no_smt = Topology {
            cores: vec![vec![0], vec![1]],
        };
        assert_eq!(no_smt.place(Mapping::M1, 1).unwrap().far, [1]);
        for m in [Mapping::M2, Mapping::M3] {
            let e = no_smt.place(m, 1).unwrap_err().to_string();
            assert!(e.contains("SMT") && e.contains("2 cores"), "{e}");
        }
        let one = Topology {
            cores: vec![vec![0]],
        };
        assert!(
            one.place(Mapping::M1, 1)
                .unwrap_err()
                .to_string()
                .contains("second core")
        );
        assert_eq!("m3".parse::<Mapping>(), Ok(Mapping::M3));
        assert!("m4".parse::<Mapping>().is_err());
    }
}
