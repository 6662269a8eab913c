//! Options for creating and opening a pool.

use crate::backend::BackendChoice;
use crate::emulation::Emulation;
use crate::error::{PmemError, Result};
use crate::layout::{Geometry, MAX_EXTENTS, validate_geometry};

/// Default zone size: 4 MiB.
pub const DEFAULT_ZONE_SIZE: u64 = 4 << 20;
/// Default zones per extent: 64 (256 MiB extents with the default zone size).
pub const DEFAULT_ZONES_PER_EXTENT: u32 = 64;
/// Default number of owner slots.
pub const DEFAULT_MAX_OWNERS: u32 = 1 << 16;
/// Default maximum number of extents: 32 (8 GiB with the default geometry).
pub const DEFAULT_MAX_EXTENTS: u32 = 32;

/// How to create or open a pool.
///
/// Geometry (`zone_size`, `zones_per_extent`, `max_owners`) is fixed at create and read
/// from the pool at open; at open a given `zone_size` is checked against the pool's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolOptions {
    /// Zone size in bytes (power of two, at least 4 KiB). Create: default 4 MiB. Open:
    /// if set, must match the pool's.
    pub zone_size: Option<u64>,
    /// Zones per extent file (create only).
    pub zones_per_extent: u32,
    /// Owner slots in the registry (create only).
    pub max_owners: u32,
    /// Extents created up front (create only).
    pub initial_extents: u32,
    /// The most extents the pool may grow to. Create: default 32. Open: if set, replaces
    /// the maximum recorded at create.
    pub max_extents: Option<u32>,
    /// Backend selection for file-backed pools.
    pub backend: BackendChoice,
    /// Latency and bandwidth emulation, off by default.
    pub emulation: Emulation,
    /// Open only to look: extents are mapped read-only, nothing in the directory changes
    /// (no leftover `.tmp` removed, no extent count adopted), and every write fails with
    /// `PmemError::ReadOnly`. Refused at create.
    pub read_only: bool,
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions {
            zone_size: None,
            zones_per_extent: DEFAULT_ZONES_PER_EXTENT,
            max_owners: DEFAULT_MAX_OWNERS,
            initial_extents: 1,
            max_extents: None,
            backend: BackendChoice::Auto,
            emulation: Emulation::default(),
            read_only: false,
        }
    }
}

impl PoolOptions {
    /// A small geometry for tests and crash simulation: 16 KiB zones, 8 per extent, 64
    /// owners, at most 4 extents.
    pub fn small() -> PoolOptions {
        PoolOptions {
            zone_size: Some(16 << 10),
            zones_per_extent: 8,
            max_owners: 64,
            initial_extents: 1,
            max_extents: Some(4),
            ..PoolOptions::default()
        }
    }

    pub fn with_backend(mut self, backend: BackendChoice) -> PoolOptions {
        self.backend = backend;
        self
    }

    pub fn with_emulation(mut self, emulation: Emulation) -> PoolOptions {
        self.emulation = emulation;
        self
    }

    pub fn with_read_only(mut self) -> PoolOptions {
        self.read_only = true;
        self
    }

    pub fn with_max_extents(mut self, max_extents: u32) -> PoolOptions {
        self.max_extents = Some(max_extents);
        self
    }

    /// The geometry and maximum extent count of a new pool, checked.
    pub(crate) fn new_pool_geometry(&self) -> Result<(Geometry, u32)> {
        if self.read_only {
            return Err(PmemError::InvalidOption {
                name: "read_only",
                reason: "a pool cannot be created read-only".into(),
            });
        }
        let geometry = Geometry {
            zone_size: self.zone_size.unwrap_or(DEFAULT_ZONE_SIZE),
            zones_per_extent: self.zones_per_extent,
            max_owners: self.max_owners,
        };
        validate_geometry(&geometry)
            .map_err(|(name, reason)| PmemError::InvalidOption { name, reason })?;
        let max_extents = checked_max_extents(self.max_extents.unwrap_or(DEFAULT_MAX_EXTENTS))?;
        if self.initial_extents == 0 || self.initial_extents > max_extents {
            return Err(PmemError::InvalidOption {
                name: "initial_extents",
                reason: format!(
                    "{} is not in 1..={max_extents} (the maximum)",
                    self.initial_extents
                ),
            });
        }
        Ok((geometry, max_extents))
    }

    /// The maximum extent count of a pool being opened whose header records `recorded`
    /// and which has `present` extents: never fewer than it has.
    pub(crate) fn max_extents_at_open(&self, recorded: u32, present: usize) -> Result<u32> {
        let max = checked_max_extents(self.max_extents.unwrap_or(recorded))?;
        Ok(max.max(present as u32))
    }
}

fn checked_max_extents(max_extents: u32) -> Result<u32> {
    if max_extents == 0 || max_extents > MAX_EXTENTS {
        return Err(PmemError::InvalidOption {
            name: "max_extents",
            reason: format!("{max_extents} is not in 1..={MAX_EXTENTS}"),
        });
    }
    Ok(max_extents)
}
