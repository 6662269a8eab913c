//! Shared test workload: zones stamped with a self-checking pattern, so a checker can
//! tell an intact zone from a torn one.

#![allow(dead_code)] // each test binary uses its own subset

use pmdb_pmem::{OwnerId, PmOff, Pool};

pub const PATTERN_LEN: usize = 512;
const HEADER: usize = 32;

/// Bytes stamped at the start of a zone: owner, zone address, tag, crc, then a body
/// derived from the tag.
pub fn pattern(owner: OwnerId, off: PmOff, tag: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + PATTERN_LEN);
    out.extend_from_slice(&owner.to_raw().to_le_bytes());
    out.extend_from_slice(&off.to_raw().to_le_bytes());
    out.extend_from_slice(&tag.to_le_bytes());
    let mut x = tag | 1;
    let body: Vec<u8> = (0..PATTERN_LEN)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 56) as u8
        })
        .collect();
    let crc = crc(&out, &body);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&body);
    out
}

fn crc(head: &[u8], body: &[u8]) -> u64 {
    // FNV-1a over header and body: enough to tell a stamped zone from a torn one.
    let mut h: u64 = 0xcbf29ce484222325;
    for b in head.iter().chain(body) {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

pub fn pattern_len() -> usize {
    HEADER + PATTERN_LEN
}

/// Checks that the zone at `off` carries an intact pattern naming `owner` and itself;
/// returns its tag.
pub fn check_zone(pool: &Pool, owner: OwnerId, off: PmOff) -> Result<u64, String> {
    let bytes = pool
        .read(off, pattern_len())
        .map_err(|e| format!("zone {off}: {e}"))?;
    let word = |i: usize| u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap());
    let tag = word(2);
    let expected = pattern(owner, off, tag);
    if bytes != expected.as_slice() {
        return Err(format!(
            "zone {off} of {owner} is not intact (owner word {:#x}, address word {:#x}, tag {tag:#x})",
            word(0),
            word(1)
        ));
    }
    Ok(tag)
}
