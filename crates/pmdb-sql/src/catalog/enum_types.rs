//! CREATE TYPE … AS ENUM, ALTER TYPE (ADD VALUE, RENAME TO) and DROP TYPE. A type is
//! one catalog entry; columns name it by id, so renaming the type or adding a label
//! rewrites that entry alone. The labels are what a value of the type is stored as, so
//! RENAME VALUE, which would change stored rows, is refused.

use std::sync::Arc;

use datafusion::arrow::array::{Array, StringArray};
use pmdb_engine::WriteBatch;

use super::Catalog;
use crate::enum_type::{EnumDef, by_id, check_label, enum_key};
use crate::error::{Result, SqlError, state};
use crate::names::RelName;
use crate::types::SqlType;

fn undefined(name: &RelName) -> SqlError {
    SqlError::user(
        state::UNDEFINED_OBJECT,
        format!("type \"{}\" does not exist", name.name),
    )
}

/// Where ALTER TYPE … ADD VALUE puts its label.
pub enum LabelPlace {
    Last,
    Before(String),
    After(String),
}

impl Catalog {
    pub fn enum_type(&self, name: &RelName) -> Option<Arc<EnumDef>> {
        self.enums.read().get(name).cloned()
    }

    pub fn enum_types(&self) -> Vec<Arc<EnumDef>> {
        self.enums.read().values().cloned().collect()
    }

    /// The enum type whose id is `id`.
    pub fn enum_by_id(&self, id: u64) -> Option<Arc<EnumDef>> {
        by_id(&self.enums, id)
    }

    /// Checks each of `strings` is a label of enum type `id` (22P02 otherwise).
    pub(crate) fn check_enum_labels(&self, id: u64, strings: &StringArray) -> Result<()> {
        let def = self.enum_by_id(id).ok_or_else(|| {
            SqlError::user(
                state::UNDEFINED_OBJECT,
                format!("enum type #{id} no longer exists"),
            )
        })?;
        for i in 0..strings.len() {
            if strings.is_valid(i) && def.position(strings.value(i)).is_none() {
                return Err(crate::enum_type::invalid_label(&def, strings.value(i)));
            }
        }
        Ok(())
    }

    /// CREATE TYPE `name` AS ENUM (`labels`).
    pub fn create_enum(&self, name: &RelName, labels: Vec<String>) -> Result<()> {
        let _ddl = self.ddl();
        self.schema_or_error(&name.schema)?;
        if self.type_name_taken(name) {
            return Err(SqlError::user(
                state::DUPLICATE_OBJECT,
                format!("type \"{}\" already exists", name.name),
            ));
        }
        for l in &labels {
            check_label(l).map_err(|m| SqlError::user(state::INVALID_PARAMETER_VALUE, m))?;
        }
        let cat = self.catalog_subtable()?;
        let def = EnumDef {
            id: self.take_ids(&cat, 1)?,
            schema: name.schema.clone(),
            name: name.name.clone(),
            labels,
        };
        def.validate()
            .map_err(|m| SqlError::user(state::INVALID_DEFINITION, m))?;
        self.store_enum(None, def)
    }

    /// Writes `def` (the type called `old` before, if it was renamed) in the DDL's
    /// transaction and shows it.
    fn store_enum(&self, old: Option<&RelName>, def: EnumDef) -> Result<()> {
        let cat = self.catalog_subtable()?;
        let name = def.rel_name();
        let mut batch = WriteBatch::new();
        if let Some(old) = old.filter(|o| **o != name) {
            batch.delete(&cat, enum_key(old));
        }
        batch.put(&cat, enum_key(&name), def.encode());
        self.write(batch)?;
        let mut enums = self.enums.write();
        if let Some(old) = old {
            enums.remove(old);
        }
        enums.insert(name, Arc::new(def));
        Ok(())
    }

    fn enum_or_error(&self, name: &RelName) -> Result<Arc<EnumDef>> {
        self.enum_type(name).ok_or_else(|| undefined(name))
    }

    /// ALTER TYPE `name` ADD VALUE `label` at `place`. `Ok(false)` if the type has the
    /// label and `if_not_exists` was given.
    pub fn add_enum_label(
        &self,
        name: &RelName,
        label: String,
        place: LabelPlace,
        if_not_exists: bool,
    ) -> Result<bool> {
        let _ddl = self.ddl();
        let old = self.enum_or_error(name)?;
        if old.position(&label).is_some() {
            return if if_not_exists {
                Ok(false)
            } else {
                Err(SqlError::user(
                    state::DUPLICATE_OBJECT,
                    format!("enum label \"{label}\" already exists"),
                ))
            };
        }
        check_label(&label).map_err(|m| SqlError::user(state::INVALID_PARAMETER_VALUE, m))?;
        let neighbour = |l: &str| {
            old.position(l).ok_or_else(|| {
                SqlError::user(
                    state::INVALID_PARAMETER_VALUE,
                    format!("\"{l}\" is not an existing enum label"),
                )
            })
        };
        let at = match &place {
            LabelPlace::Last => old.labels.len(),
            LabelPlace::Before(l) => neighbour(l)?,
            LabelPlace::After(l) => neighbour(l)? + 1,
        };
        let mut def = old.as_ref().clone();
        def.labels.insert(at, label);
        def.validate()
            .map_err(|m| SqlError::user(state::INVALID_DEFINITION, m))?;
        self.store_enum(Some(name), def)?;
        Ok(true)
    }

    /// ALTER TYPE `name` RENAME TO `new_name` (in its schema).
    pub fn rename_enum(&self, name: &RelName, new_name: String) -> Result<()> {
        let _ddl = self.ddl();
        let old = self.enum_or_error(name)?;
        let to = name.sibling(new_name);
        if self.type_name_taken(&to) {
            return Err(SqlError::user(
                state::DUPLICATE_OBJECT,
                format!("type \"{}\" already exists", to.name),
            ));
        }
        let mut def = old.as_ref().clone();
        def.name = to.name;
        def.validate()
            .map_err(|m| SqlError::user(state::INVALID_NAME, m))?;
        self.store_enum(Some(name), def)
    }

    /// DROP TYPE `name`: refused (2BP01) while a column is of it, and with `cascade`
    /// (which would drop those columns) 0A000. `Ok(false)` if it does not exist and
    /// `if_exists` was given.
    pub fn drop_enum(&self, name: &RelName, if_exists: bool, cascade: bool) -> Result<bool> {
        let _ddl = self.ddl();
        let def = match self.enum_type(name) {
            Some(def) => def,
            None if if_exists => return Ok(false),
            None => return Err(undefined(name)),
        };
        let users = self.type_users(SqlType::Enum(def.id), None, &def.name);
        super::refuse_dependents("DROP TYPE", &format!("type {}", def.name), &users, cascade)?;
        let mut batch = WriteBatch::new();
        batch.delete(&self.catalog_subtable()?, enum_key(name));
        self.write(batch)?;
        self.enums.write().remove(name);
        Ok(true)
    }

    /// The enum types of schema `schema`.
    pub(super) fn enums_in(&self, schema: &str) -> Vec<RelName> {
        self.enums
            .read()
            .keys()
            .filter(|n| n.schema == schema)
            .cloned()
            .collect()
    }
}
