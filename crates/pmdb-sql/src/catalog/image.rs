//! The catalog's maps at one moment, read without the catalog's locks: what a reader
//! that must not see another session's uncommitted DDL reads (PostgreSQL's system
//! catalog as a client's session shows it), and what a rollback of DDL puts back.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::Catalog;
use crate::domain_rules::Domain;
use crate::enum_type::EnumDef;
use crate::extension::ExtensionDef;
use crate::names::RelName;
use crate::namespace::NamespaceDef;
use crate::sequence::Sequence;
use crate::table::Table;
use crate::view::ViewDef;

#[derive(Clone)]
pub struct CatalogImage {
    pub(super) schemas: BTreeMap<String, Arc<NamespaceDef>>,
    pub(super) tables: BTreeMap<RelName, Arc<Table>>,
    pub(super) sequences: BTreeMap<RelName, Arc<Sequence>>,
    pub(super) views: BTreeMap<RelName, Arc<ViewDef>>,
    pub(super) enums: BTreeMap<RelName, Arc<EnumDef>>,
    pub(super) domains: BTreeMap<RelName, Arc<Domain>>,
    pub(super) extensions: BTreeMap<String, Arc<ExtensionDef>>,
}

impl CatalogImage {
    /// Whether `name` is a relation's (a table's, view's, sequence's or index's).
    pub fn names_a_relation(&self, name: &RelName) -> bool {
        self.tables.contains_key(name)
            || self.views.contains_key(name)
            || self.sequences.contains_key(name)
            || self.tables.values().any(|t| {
                let def = t.def();
                def.schema == name.schema && def.names_an_index(&name.name)
            })
    }

    pub fn table(&self, name: &RelName) -> Option<Arc<Table>> {
        self.tables.get(name).cloned()
    }

    pub fn tables(&self) -> Vec<Arc<Table>> {
        self.tables.values().cloned().collect()
    }

    pub fn table_by_id(&self, id: u64) -> Option<Arc<Table>> {
        self.tables.values().find(|t| t.def().id == id).cloned()
    }

    /// Schema `name`, if it exists and is not `public` (which has no definition).
    pub fn schema(&self, name: &str) -> Option<Arc<NamespaceDef>> {
        self.schemas.get(name).cloned()
    }

    /// The schemas besides `public`.
    pub fn schemas(&self) -> Vec<Arc<NamespaceDef>> {
        self.schemas.values().cloned().collect()
    }

    pub fn sequence(&self, name: &RelName) -> Option<Arc<Sequence>> {
        self.sequences.get(name).cloned()
    }

    pub fn sequences(&self) -> Vec<Arc<Sequence>> {
        self.sequences.values().cloned().collect()
    }

    pub fn view(&self, name: &RelName) -> Option<Arc<ViewDef>> {
        self.views.get(name).cloned()
    }

    pub fn views(&self) -> Vec<Arc<ViewDef>> {
        self.views.values().cloned().collect()
    }

    pub fn enum_type(&self, name: &RelName) -> Option<Arc<EnumDef>> {
        self.enums.get(name).cloned()
    }

    pub fn enum_types(&self) -> Vec<Arc<EnumDef>> {
        self.enums.values().cloned().collect()
    }

    pub fn enum_by_id(&self, id: u64) -> Option<Arc<EnumDef>> {
        self.enums.values().find(|t| t.id == id).cloned()
    }

    pub fn domain_types(&self) -> Vec<Arc<Domain>> {
        self.domains.values().cloned().collect()
    }

    pub fn domain_by_id(&self, id: u64) -> Option<Arc<Domain>> {
        self.domains.values().find(|d| d.def.id == id).cloned()
    }

    pub fn extensions(&self) -> Vec<Arc<ExtensionDef>> {
        self.extensions.values().cloned().collect()
    }
}

impl Catalog {
    /// The maps as they are now, uncommitted DDL included.
    pub(super) fn current_image(&self) -> CatalogImage {
        CatalogImage {
            schemas: self.schemas.read().clone(),
            tables: self.tables.read().clone(),
            sequences: self.sequences.read().clone(),
            views: self.views.read().clone(),
            enums: self.enums.read().clone(),
            domains: self.domains.read().clone(),
            extensions: self.extensions.read().clone(),
        }
    }
}
