//! The extensions pmdb has built in, and an installed extension's definition with its
//! persistent codec: the value of its entry in the catalog subtable (`X` + name). Byte
//! table: `docs/format.md`, "Extension definition". An extension's types and functions
//! are pmdb's own code; CREATE EXTENSION makes its types usable in a database, as
//! PostgreSQL's does, and DROP EXTENSION takes them away again.

use crate::error::CodecError;
use crate::reader::put_name;
use crate::schema::MAX_IDENT;

const VERSION: u8 = 1;
/// Prefix of an extension entry's key; the extension's name follows.
pub const EXTENSION_PREFIX: u8 = b'X';

/// An extension pmdb can install: its name and the version it provides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Available {
    pub name: &'static str,
    pub version: &'static str,
    pub comment: &'static str,
}

/// `hstore`: the type of sets of text keys with text values ([`crate::hstore`]).
pub const HSTORE: Available = Available {
    name: "hstore",
    version: "1.8",
    comment: "data type for storing sets of (key, value) pairs",
};

/// PL/pgSQL, which every PostgreSQL database shows installed: pmdb's DO blocks run it.
pub const PLPGSQL: Available = Available {
    name: "plpgsql",
    version: "1.0",
    comment: "PL/pgSQL procedural language",
};

/// What CREATE EXTENSION can install.
pub const INSTALLABLE: &[Available] = &[HSTORE];

/// `X` + name: where an installed extension's definition lives.
pub fn extension_key(name: &str) -> Vec<u8> {
    let mut k = vec![EXTENSION_PREFIX];
    k.extend_from_slice(name.as_bytes());
    k
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtensionDef {
    /// One of [`INSTALLABLE`]'s names.
    pub name: String,
    /// The version installed: what pmdb provided when CREATE EXTENSION ran.
    pub version: String,
}

impl ExtensionDef {
    /// The built-in extension it installs.
    pub fn available(&self) -> Option<Available> {
        INSTALLABLE.iter().copied().find(|a| a.name == self.name)
    }

    /// Checks what a decoder must not let through: an extension pmdb does not have, or
    /// a version of it pmdb cannot serve.
    pub fn validate(&self) -> Result<(), String> {
        match self.available() {
            Some(a) if a.version == self.version => Ok(()),
            Some(a) => Err(format!(
                "extension {:?} at version {:?} (pmdb has version {:?})",
                self.name, self.version, a.version
            )),
            None => Err(format!(
                "extension {:?}, which pmdb does not have",
                self.name
            )),
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![VERSION];
        put_name(&mut out, &self.name);
        put_name(&mut out, &self.version);
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<ExtensionDef, CodecError> {
        let mut r = crate::reader::checked("extension definition", bytes)?;
        let version = r.byte()?;
        if version != VERSION {
            return Err(r.invalid(format!("format version {version}")));
        }
        let name = r.name(MAX_IDENT)?;
        let ext_version = r.name(MAX_IDENT)?;
        if r.left() != 0 {
            return Err(r.invalid(format!("{} bytes after the end", r.left())));
        }
        let def = ExtensionDef {
            name,
            version: ext_version,
        };
        def.validate().map_err(|reason| r.invalid(reason))?;
        Ok(def)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hstore() -> ExtensionDef {
        ExtensionDef {
            name: HSTORE.name.into(),
            version: HSTORE.version.into(),
        }
    }

    #[test]
    fn definitions_round_trip() {
        assert_eq!(ExtensionDef::decode(&hstore().encode()).unwrap(), hstore());
    }

    #[test]
    fn unknown_extensions_and_versions_are_damage() {
        for def in [
            ExtensionDef {
                name: "postgis".into(),
                version: "3.4".into(),
            },
            ExtensionDef {
                name: "hstore".into(),
                version: "9.9".into(),
            },
        ] {
            assert!(ExtensionDef::decode(&def.encode()).is_err());
        }
    }

    proptest! {
        #[test]
        fn damage_is_reported(at in any::<prop::sample::Index>(), bit in 0u8..8) {
            let mut bytes = hstore().encode();
            let i = at.index(bytes.len());
            bytes[i] ^= 1 << bit;
            prop_assert!(ExtensionDef::decode(&bytes).is_err());
            prop_assert!(ExtensionDef::decode(&bytes[..i]).is_err());
        }
    }
}
