//! An enum type's definition (its name and its labels, in their order) and its
//! persistent codec, the value of the type's entry in the catalog subtable (`e` +
//! name). Byte table: `docs/format.md`, "Enum type definition".
//!
//! A value of an enum type is stored as its label's text, so a row reads without the
//! catalog; the order of the labels, which the type alone knows, is what sorts and
//! compares its values ([`crate::enum_order`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::RwLock;

use crate::error::{CodecError, SqlError, state};
use crate::names::RelName;
use crate::reader::put_name;
use crate::schema::MAX_IDENT;

const VERSION: u8 = 1;
/// Prefix of an enum type entry's key; the type's name follows.
pub const ENUM_PREFIX: u8 = b'e';
/// PostgreSQL's longest label: NAMEDATALEN - 1 bytes.
pub const MAX_LABEL: usize = 63;
/// The most labels a type may have (PostgreSQL's limit is its oid space; this bounds
/// what a decoder reads).
pub const MAX_LABELS: usize = 65_535;

/// `e` + name (see [`RelName::key_bytes`]): where an enum type's definition lives.
pub fn enum_key(name: &RelName) -> Vec<u8> {
    let mut k = vec![ENUM_PREFIX];
    k.extend_from_slice(&name.key_bytes());
    k
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnumDef {
    /// From the counter table ids come from: no table, view, sequence or schema
    /// shares it. Columns of the type name it by this id, so a rename keeps them.
    pub id: u64,
    pub schema: String,
    pub name: String,
    /// In the type's order: the first sorts first.
    pub labels: Vec<String>,
}

impl EnumDef {
    /// The type's name in its schema, as the catalog keys it.
    pub fn rel_name(&self) -> RelName {
        RelName::new(self.schema.clone(), self.name.clone())
    }

    /// The place of `label` in the type's order.
    pub fn position(&self, label: &str) -> Option<usize> {
        self.labels.iter().position(|l| l == label)
    }

    /// Checks what a decoder or a CREATE TYPE must not let through.
    pub fn validate(&self) -> Result<(), String> {
        for (what, n) in [("type", &self.name), ("schema", &self.schema)] {
            if n.is_empty() || n.len() > MAX_IDENT {
                return Err(format!(
                    "a {what} name of {} bytes (1 to {MAX_IDENT})",
                    n.len()
                ));
            }
        }
        if self.labels.len() > MAX_LABELS {
            return Err(format!(
                "{} labels (at most {MAX_LABELS})",
                self.labels.len()
            ));
        }
        for (i, l) in self.labels.iter().enumerate() {
            check_label(l)?;
            if self.labels[..i].contains(l) {
                return Err(format!("label {l:?} is given twice"));
            }
        }
        Ok(())
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![VERSION];
        out.extend_from_slice(&self.id.to_le_bytes());
        put_name(&mut out, &self.schema);
        put_name(&mut out, &self.name);
        out.extend_from_slice(&(self.labels.len() as u16).to_le_bytes());
        for l in &self.labels {
            put_name(&mut out, l);
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<EnumDef, CodecError> {
        let invalid = |reason: String| CodecError::Invalid {
            what: "enum type definition",
            reason,
        };
        let mut r = crate::reader::checked("enum type definition", bytes)?;
        let version = r.byte()?;
        if version != VERSION {
            return Err(invalid(format!("format version {version}")));
        }
        let id = u64::from_le_bytes(r.take()?);
        let schema = r.name(MAX_IDENT)?;
        let name = r.name(MAX_IDENT)?;
        let n = u16::from_le_bytes(r.take()?) as usize;
        let labels = (0..n)
            .map(|_| r.name(MAX_LABEL))
            .collect::<Result<Vec<_>, _>>()?;
        if r.left() != 0 {
            return Err(invalid(format!("{} bytes after the end", r.left())));
        }
        let def = EnumDef {
            id,
            schema,
            name,
            labels,
        };
        def.validate().map_err(invalid)?;
        Ok(def)
    }
}

/// The catalog's enum types by name, shared with every table handle (which checks the
/// values written to its enum columns against them).
pub type EnumTypes = Arc<RwLock<BTreeMap<RelName, Arc<EnumDef>>>>;

/// The enum type whose id is `id`.
pub fn by_id(types: &EnumTypes, id: u64) -> Option<Arc<EnumDef>> {
    types.read().values().find(|d| d.id == id).cloned()
}

/// 22P02, as PostgreSQL reads a text that is no label of `def`.
pub fn invalid_label(def: &EnumDef, label: &str) -> SqlError {
    SqlError::user(
        state::INVALID_TEXT_REPRESENTATION,
        format!("invalid input value for enum {}: \"{label}\"", def.name),
    )
}

/// A label PostgreSQL takes: at most 63 bytes (an empty one is a label too).
pub fn check_label(label: &str) -> Result<(), String> {
    if label.len() > MAX_LABEL {
        return Err(format!(
            "invalid enum label \"{label}\": labels must be {MAX_LABEL} bytes or less"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn def(labels: &[&str]) -> EnumDef {
        EnumDef {
            id: 9,
            schema: "shop".into(),
            name: "mood".into(),
            labels: labels.iter().map(|l| l.to_string()).collect(),
        }
    }

    proptest! {
        #[test]
        fn definitions_round_trip(labels in prop::collection::btree_set("[a-zé ]{0,12}", 0..8)) {
            let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
            let d = def(&labels);
            prop_assert_eq!(EnumDef::decode(&d.encode()).unwrap(), d);
        }

        #[test]
        fn damage_is_reported(at in any::<prop::sample::Index>(), bit in 0u8..8) {
            let mut bytes = def(&["sad", "ok", "happy"]).encode();
            let i = at.index(bytes.len());
            bytes[i] ^= 1 << bit;
            prop_assert!(EnumDef::decode(&bytes).is_err());
            prop_assert!(EnumDef::decode(&bytes[..i]).is_err());
        }
    }

    #[test]
    fn bad_definitions_are_refused() {
        assert!(
            def(&["a", "b", "a"])
                .validate()
                .unwrap_err()
                .contains("twice")
        );
        assert!(def(&[&"x".repeat(64)]).validate().is_err());
        assert!(def(&[&"x".repeat(63), ""]).validate().is_ok());
        let mut d = def(&["a"]);
        d.name.clear();
        assert!(d.validate().is_err());
    }

    #[test]
    fn labels_keep_their_order() {
        let d = def(&["sad", "ok", "happy"]);
        assert_eq!(d.position("ok"), Some(1));
        assert_eq!(d.position("meh"), None);
    }
}
