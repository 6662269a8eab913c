//! A schema's definition (its id and name) and its persistent codec, the value of the
//! schema's entry in the catalog subtable (`N` + name). Byte table: `docs/format.md`,
//! "Schema definition". `public` has no entry: every database has it, and it cannot be
//! dropped.

use crate::error::CodecError;
use crate::reader::put_name;
use crate::schema::MAX_IDENT;

const VERSION: u8 = 1;
/// Prefix of a schema entry's key; the schema's name follows.
pub const NAMESPACE_PREFIX: u8 = b'N';

/// `N` + name: where a schema's definition lives.
pub fn namespace_key(name: &str) -> Vec<u8> {
    let mut k = vec![NAMESPACE_PREFIX];
    k.extend_from_slice(name.as_bytes());
    k
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamespaceDef {
    /// From the counter table ids come from: no table, view or sequence shares it.
    pub id: u64,
    pub name: String,
}

impl NamespaceDef {
    /// Checks what a decoder or a CREATE SCHEMA must not let through.
    pub fn validate(&self) -> Result<(), String> {
        if self.name.is_empty() || self.name.len() > MAX_IDENT || self.name.contains('\0') {
            return Err(format!(
                "a schema name of {} bytes (1 to {MAX_IDENT}, no zero byte)",
                self.name.len()
            ));
        }
        Ok(())
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![VERSION];
        out.extend_from_slice(&self.id.to_le_bytes());
        put_name(&mut out, &self.name);
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<NamespaceDef, CodecError> {
        let mut r = crate::reader::checked("schema definition", bytes)?;
        let version = r.byte()?;
        if version != VERSION {
            return Err(r.invalid(format!("format version {version}")));
        }
        let id = u64::from_le_bytes(r.take()?);
        let name = r.name(MAX_IDENT)?;
        if r.left() != 0 {
            return Err(r.invalid(format!("{} bytes after the end", r.left())));
        }
        let def = NamespaceDef { id, name };
        def.validate().map_err(|reason| r.invalid(reason))?;
        Ok(def)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn definitions_round_trip(id in any::<u64>(), name in "[a-zA-Z_ .\"é]{1,40}") {
            let def = NamespaceDef { id, name };
            prop_assert_eq!(NamespaceDef::decode(&def.encode()).unwrap(), def);
        }

        #[test]
        fn damage_is_reported(at in any::<prop::sample::Index>(), bit in 0u8..8) {
            let def = NamespaceDef { id: 9, name: "billing".into() };
            let mut bytes = def.encode();
            let i = at.index(bytes.len());
            bytes[i] ^= 1 << bit;
            prop_assert!(NamespaceDef::decode(&bytes).is_err());
            prop_assert!(NamespaceDef::decode(&bytes[..i]).is_err());
        }
    }

    #[test]
    fn bad_names_are_refused() {
        for name in ["", "a\0b"] {
            let def = NamespaceDef {
                id: 1,
                name: name.into(),
            };
            assert!(def.validate().is_err());
        }
        let long = NamespaceDef {
            id: 1,
            name: "x".repeat(MAX_IDENT + 1),
        };
        assert!(NamespaceDef::decode(&long.encode()).is_err());
    }
}
