//! CREATE EXTENSION and DROP EXTENSION. An installed extension is one catalog entry;
//! its types are usable while it is there, and DROP EXTENSION is refused while a column
//! or domain is of one of them.

use std::collections::BTreeMap;
use std::sync::Arc;

use pmdb_engine::WriteBatch;

use super::{Catalog, mismatched};
use crate::error::{Result, SqlError, state};
use crate::extension::{EXTENSION_PREFIX, ExtensionDef, HSTORE, INSTALLABLE, extension_key};
use crate::names::{PUBLIC, RelName};
use crate::types::SqlType;

impl Catalog {
    pub fn extension(&self, name: &str) -> Option<Arc<ExtensionDef>> {
        self.extensions.read().get(name).cloned()
    }

    pub fn extensions(&self) -> Vec<Arc<ExtensionDef>> {
        self.extensions.read().values().cloned().collect()
    }

    /// Whether `name` is the hstore extension's type, installed (in `public`, where
    /// pmdb installs extensions).
    pub fn hstore_named(&self, name: &RelName) -> bool {
        name.schema == PUBLIC
            && name.name == HSTORE.name
            && self.extensions.read().contains_key(HSTORE.name)
    }

    /// CREATE EXTENSION `name`. `Ok(false)` if it is installed and `if_not_exists` was
    /// given.
    pub fn create_extension(&self, name: &str, if_not_exists: bool) -> Result<bool> {
        let _ddl = self.ddl();
        let Some(available) = INSTALLABLE.iter().find(|a| a.name == name) else {
            return Err(SqlError::user(
                state::FEATURE_NOT_SUPPORTED,
                format!("extension \"{name}\" is not available"),
            )
            .with_detail(format!(
                "pmdb's extensions are {}.",
                INSTALLABLE
                    .iter()
                    .map(|a| a.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        let types = match available.name {
            n if n == HSTORE.name => vec![RelName::public(n.to_owned())],
            _ => Vec::new(),
        };
        if self.extension(name).is_none()
            && let Some(taken) = types.iter().find(|t| self.type_name_taken(t))
        {
            return Err(SqlError::user(
                state::DUPLICATE_OBJECT,
                format!("type \"{}\" already exists", taken.name),
            ));
        }
        if self.extension(name).is_some() {
            return if if_not_exists {
                Ok(false)
            } else {
                Err(SqlError::user(
                    state::DUPLICATE_OBJECT,
                    format!("extension \"{name}\" already exists"),
                ))
            };
        }
        let def = ExtensionDef {
            name: available.name.to_owned(),
            version: available.version.to_owned(),
        };
        let mut batch = WriteBatch::new();
        batch.put(&self.catalog_subtable()?, extension_key(name), def.encode());
        self.write(batch)?;
        self.extensions
            .write()
            .insert(def.name.clone(), Arc::new(def));
        Ok(true)
    }

    /// DROP EXTENSION `name`: refused (2BP01) while a column or domain is of one of its
    /// types, and with CASCADE then too (0A000: pmdb drops no column for a type).
    /// `Ok(false)` if it is not installed and `if_exists` was given.
    pub fn drop_extension(&self, name: &str, if_exists: bool, cascade: bool) -> Result<bool> {
        let _ddl = self.ddl();
        if self.extension(name).is_none() {
            return if if_exists {
                Ok(false)
            } else {
                Err(SqlError::user(
                    state::UNDEFINED_OBJECT,
                    format!("extension \"{name}\" does not exist"),
                ))
            };
        }
        if name == HSTORE.name {
            let users = self.type_users(SqlType::Hstore, None, "hstore");
            super::refuse_dependents(
                "DROP EXTENSION",
                &format!("extension {name}"),
                &users,
                cascade,
            )?;
        }
        let mut batch = WriteBatch::new();
        batch.delete(&self.catalog_subtable()?, extension_key(name));
        self.write(batch)?;
        self.extensions.write().remove(name);
        Ok(true)
    }
}

/// The installed extensions' entries, each checked against its key.
pub(super) fn load(cat: &pmdb_engine::Subtable) -> Result<BTreeMap<String, Arc<ExtensionDef>>> {
    let mut out = BTreeMap::new();
    for entry in cat.scan(vec![EXTENSION_PREFIX]..vec![EXTENSION_PREFIX + 1]) {
        let entry = entry?;
        let key = String::from_utf8_lossy(&entry.key()[1..]).into_owned();
        let what = || format!("catalog entry of extension {key:?}");
        let def = ExtensionDef::decode(entry.value()).map_err(|source| SqlError::Damaged {
            what: what(),
            source,
        })?;
        if def.name.as_bytes() != &entry.key()[1..] {
            return Err(mismatched(
                what(),
                format!("it defines extension {:?}", def.name),
            ));
        }
        out.insert(def.name.clone(), Arc::new(def));
    }
    Ok(out)
}
