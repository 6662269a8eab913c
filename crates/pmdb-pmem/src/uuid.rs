//! Pool uuids. Every extent header carries its pool's uuid, so an extent copied in from
//! another pool is refused rather than mixed in; it is random (RFC 4122 version 4) so that
//! two pools never share one.

/// A fresh random uuid.
pub(crate) fn new_uuid() -> [u8; 16] {
    use rand::TryRngCore;
    let mut uuid = [0u8; 16];
    rand::rngs::OsRng
        .try_fill_bytes(&mut uuid)
        .unwrap_or_else(|_| {
            // No OS randomness: fall back to time and pid, which still tells pools apart.
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos() as u64;
            uuid[..8].copy_from_slice(&t.to_le_bytes());
            uuid[8..12].copy_from_slice(&std::process::id().to_le_bytes());
        });
    // RFC 4122 version 4, variant 1.
    uuid[6] = (uuid[6] & 0x0f) | 0x40;
    uuid[8] = (uuid[8] & 0x3f) | 0x80;
    uuid
}

/// The usual 8-4-4-4-12 form.
pub fn format_uuid(u: &[u8; 16]) -> String {
    let hex: String = u.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_version_4_and_distinct() {
        let (a, b) = (new_uuid(), new_uuid());
        assert_ne!(a, b);
        assert_eq!(a[6] >> 4, 4);
        let s = format_uuid(&a);
        assert_eq!(s.len(), 36);
        assert_eq!(s.matches('-').count(), 4);
    }
}
