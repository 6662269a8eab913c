//! A domain's definition (its name, the type it is over, and its NOT NULL, DEFAULT and
//! CHECK constraints) and its persistent codec, the value of the domain's entry in the
//! catalog subtable (`d` + name). Byte table: `docs/format.md`, "Domain definition".
//!
//! A value of a domain is a value of its base type, stored as one: a domain adds rules,
//! not a representation. A domain over another domain keeps that domain's rules too, so
//! the definition names it ([`DomainDef::parent`]) besides the base type they share.

use crate::error::CodecError;
use crate::names::RelName;
use crate::reader::put_name;
use crate::schema::{CheckDef, MAX_DEFAULT, MAX_IDENT, get_text, get_type, put_text, put_type};
use crate::types::SqlType;

const VERSION: u8 = 1;
/// Prefix of a domain entry's key; the domain's name follows.
pub const DOMAIN_PREFIX: u8 = b'd';
/// The most CHECK constraints one domain states (this bounds what a decoder reads).
pub const MAX_DOMAIN_CHECKS: usize = 1024;

const NOT_NULL: u8 = 1;
const HAS_DEFAULT: u8 = 2;
const HAS_PARENT: u8 = 4;

/// `d` + name (see [`RelName::key_bytes`]): where a domain's definition lives.
pub fn domain_key(name: &RelName) -> Vec<u8> {
    let mut k = vec![DOMAIN_PREFIX];
    k.extend_from_slice(&name.key_bytes());
    k
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainDef {
    /// From the counter table ids come from: no table, view, sequence, schema or type
    /// shares it. Columns of the domain name it by this id.
    pub id: u64,
    pub schema: String,
    pub name: String,
    /// What a value of the domain is stored and computed as (never a domain).
    pub base: SqlType,
    /// The domain this one was declared over, whose rules hold for its values too.
    pub parent: Option<u64>,
    /// NOT NULL: a NULL is no value of the domain.
    pub not_null: bool,
    /// The SQL text of the value a column of the domain gets when a row gives none and
    /// the column states no default of its own.
    pub default: Option<String>,
    /// The domain's own CHECK constraints, each over `VALUE`.
    pub checks: Vec<CheckDef>,
}

impl DomainDef {
    /// The domain's name in its schema, as the catalog keys it.
    pub fn rel_name(&self) -> RelName {
        RelName::new(self.schema.clone(), self.name.clone())
    }

    /// Checks what a decoder or a CREATE DOMAIN must not let through.
    pub fn validate(&self) -> Result<(), String> {
        for (what, n) in [("domain", &self.name), ("schema", &self.schema)] {
            if n.is_empty() || n.len() > MAX_IDENT {
                return Err(format!(
                    "a {what} name of {} bytes (1 to {MAX_IDENT})",
                    n.len()
                ));
            }
        }
        if self.parent == Some(self.id) {
            return Err(format!("domain {} is over itself", self.name));
        }
        if self
            .default
            .as_ref()
            .is_some_and(|d| d.is_empty() || d.len() > MAX_DEFAULT)
        {
            return Err("a default of no text or too long a text".into());
        }
        if self.checks.len() > MAX_DOMAIN_CHECKS {
            return Err(format!(
                "{} CHECK constraints (at most {MAX_DOMAIN_CHECKS})",
                self.checks.len()
            ));
        }
        for (i, c) in self.checks.iter().enumerate() {
            if c.name.is_empty() || c.name.len() > MAX_IDENT {
                return Err(format!("a constraint name of {} bytes", c.name.len()));
            }
            if c.expr.is_empty() || c.expr.len() > MAX_DEFAULT {
                return Err(format!(
                    "constraint {:?} has no text or too long a text",
                    c.name
                ));
            }
            if self.checks[..i].iter().any(|o| o.name == c.name) {
                return Err(format!("constraint {:?} is stated twice", c.name));
            }
        }
        Ok(())
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![VERSION];
        out.extend_from_slice(&self.id.to_le_bytes());
        put_name(&mut out, &self.schema);
        put_name(&mut out, &self.name);
        put_type(&mut out, self.base);
        let mut flags = 0;
        if self.not_null {
            flags |= NOT_NULL;
        }
        if self.default.is_some() {
            flags |= HAS_DEFAULT;
        }
        if self.parent.is_some() {
            flags |= HAS_PARENT;
        }
        out.push(flags);
        if let Some(parent) = self.parent {
            out.extend_from_slice(&parent.to_le_bytes());
        }
        if let Some(default) = &self.default {
            put_text(&mut out, default);
        }
        out.extend_from_slice(&(self.checks.len() as u16).to_le_bytes());
        for c in &self.checks {
            put_name(&mut out, &c.name);
            put_text(&mut out, &c.expr);
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<DomainDef, CodecError> {
        let invalid = |reason: String| CodecError::Invalid {
            what: "domain definition",
            reason,
        };
        let mut r = crate::reader::checked("domain definition", bytes)?;
        let version = r.byte()?;
        if version != VERSION {
            return Err(invalid(format!("format version {version}")));
        }
        let id = u64::from_le_bytes(r.take()?);
        let schema = r.name(MAX_IDENT)?;
        let name = r.name(MAX_IDENT)?;
        let base = get_type(&mut r)?;
        let flags = r.byte()?;
        if flags & !(NOT_NULL | HAS_DEFAULT | HAS_PARENT) != 0 {
            return Err(invalid(format!("flags {flags:#04x}")));
        }
        let parent = (flags & HAS_PARENT != 0)
            .then(|| r.take().map(u64::from_le_bytes))
            .transpose()?;
        let default = (flags & HAS_DEFAULT != 0)
            .then(|| get_text(&mut r, "default"))
            .transpose()?;
        let n = u16::from_le_bytes(r.take()?) as usize;
        if n > MAX_DOMAIN_CHECKS {
            return Err(invalid(format!("{n} CHECK constraints")));
        }
        let checks = (0..n)
            .map(|_| {
                Ok(CheckDef {
                    name: r.name(MAX_IDENT)?,
                    expr: get_text(&mut r, "CHECK expression")?,
                })
            })
            .collect::<Result<Vec<_>, CodecError>>()?;
        if r.left() != 0 {
            return Err(invalid(format!("{} bytes after the end", r.left())));
        }
        let def = DomainDef {
            id,
            schema,
            name,
            base,
            parent,
            not_null: flags & NOT_NULL != 0,
            default,
            checks,
        };
        def.validate().map_err(invalid)?;
        Ok(def)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn def(checks: &[(&str, &str)]) -> DomainDef {
        DomainDef {
            id: 12,
            schema: "public".into(),
            name: "positive".into(),
            base: SqlType::decimal(9, 2),
            parent: Some(4),
            not_null: true,
            default: Some("1.5".into()),
            checks: checks
                .iter()
                .map(|(n, e)| CheckDef {
                    name: n.to_string(),
                    expr: e.to_string(),
                })
                .collect(),
        }
    }

    proptest! {
        #[test]
        fn definitions_round_trip(
            names in prop::collection::btree_set("[a-z_]{1,12}", 0..5),
            not_null in any::<bool>(),
            parent in prop::option::of(0u64..10),
            default in prop::option::of("[0-9]{1,4}"),
        ) {
            let checks: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "VALUE > 0")).collect();
            let mut d = def(&checks);
            d.not_null = not_null;
            d.parent = parent;
            d.default = default;
            prop_assert_eq!(DomainDef::decode(&d.encode()).unwrap(), d);
        }

        #[test]
        fn any_bytes_decode_to_what_encodes_back_or_are_refused(
            body in prop::collection::vec(any::<u8>(), 0..160),
        ) {
            // Sealed with a valid checksum, so the decoder's own checks are what refuse.
            let mut bytes = body.clone();
            bytes.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
            if let Ok(d) = DomainDef::decode(&bytes) {
                prop_assert_eq!(d.encode(), bytes);
            }
        }

        #[test]
        fn damage_is_reported(at in any::<prop::sample::Index>(), bit in 0u8..8) {
            let mut bytes = def(&[("positive_check", "VALUE > 0")]).encode();
            let i = at.index(bytes.len());
            bytes[i] ^= 1 << bit;
            prop_assert!(DomainDef::decode(&bytes).is_err());
            prop_assert!(DomainDef::decode(&bytes[..i]).is_err());
        }
    }

    #[test]
    fn bad_definitions_are_refused() {
        assert!(
            def(&[("c", "VALUE > 0"), ("c", "VALUE < 9")])
                .validate()
                .unwrap_err()
                .contains("twice")
        );
        let mut d = def(&[]);
        d.parent = Some(d.id);
        assert!(d.validate().is_err());
        let mut d = def(&[]);
        d.name.clear();
        assert!(d.validate().is_err());
        assert!(def(&[("c", "")]).validate().is_err());
    }
}
