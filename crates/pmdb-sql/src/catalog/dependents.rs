//! What depends on a relation through a query: the views and materialized views whose
//! queries read it, directly or through each other. A DROP or a change that would
//! leave one reading what is gone is refused (2BP01) unless CASCADE drops them too.

use std::sync::Arc;

use pmdb_engine::WriteBatch;

use super::Catalog;
use crate::error::{Result, SqlError, state};
use crate::names::RelName;
use crate::table::Table;
use crate::view::{ViewDef, query_relations, view_key};

/// A relation whose query reads others.
#[derive(Clone)]
pub(crate) enum Dependent {
    View(Arc<ViewDef>),
    /// A materialized view: a table that keeps its query.
    Materialized(Arc<Table>),
}

impl Dependent {
    pub fn rel_name(&self) -> RelName {
        match self {
            Dependent::View(v) => v.rel_name(),
            Dependent::Materialized(t) => t.name().clone(),
        }
    }

    pub fn query(&self) -> &str {
        match self {
            Dependent::View(v) => &v.query,
            Dependent::Materialized(t) => t.def().materialized.as_deref().unwrap_or_default(),
        }
    }

    /// What PostgreSQL's messages call it.
    pub fn kind(&self) -> &'static str {
        match self {
            Dependent::View(_) => "view",
            Dependent::Materialized(_) => "materialized view",
        }
    }
}

impl Catalog {
    /// The views and materialized views whose queries name relation `name`, other than
    /// `name` itself.
    pub(super) fn relations_over(&self, name: &RelName) -> Vec<Dependent> {
        let reads = |query: &str| query_relations(query).iter().any(|r| r == name);
        let views = self
            .views()
            .into_iter()
            .filter(|v| &v.rel_name() != name && reads(&v.query))
            .map(Dependent::View);
        let materialized = self
            .tables()
            .into_iter()
            .filter(|t| t.name() != name && t.def().materialized.as_deref().is_some_and(reads))
            .map(Dependent::Materialized);
        views.chain(materialized).collect()
    }

    /// The relations that depend on relation `name`, and on those, and so on, for a
    /// DROP: refused (2BP01) unless `cascade`, which drops them too.
    pub(super) fn dependents(&self, name: &RelName, cascade: bool) -> Result<Vec<Dependent>> {
        let mut found: Vec<Dependent> = Vec::new();
        let mut next = vec![name.clone()];
        while let Some(n) = next.pop() {
            for d in self.relations_over(&n) {
                if !cascade {
                    return Err(SqlError::user(
                        state::DEPENDENT_OBJECTS_STILL_EXIST,
                        format!(
                            "cannot drop {name} because other objects depend on it: {} {} \
                             depends on {n} (use DROP ... CASCADE to drop the dependent \
                             objects too)",
                            d.kind(),
                            d.rel_name().name
                        ),
                    ));
                }
                if !found.iter().any(|f| f.rel_name() == d.rel_name()) {
                    next.push(d.rel_name());
                    found.push(d);
                }
            }
        }
        Ok(found)
    }

    /// Drops `dependents` (found by [`Catalog::dependents`] with CASCADE): each
    /// materialized view as its own DROP would, in the catalog's transaction; the views'
    /// entries go into `batch`, and are forgotten by [`Catalog::forget_views`] once it
    /// is written.
    pub(super) fn drop_dependents(
        &self,
        dependents: &[Dependent],
        batch: &mut WriteBatch,
    ) -> Result<()> {
        let cat = self.catalog_subtable()?;
        for d in dependents {
            match d {
                Dependent::View(v) => batch.delete(&cat, view_key(&v.rel_name())),
                Dependent::Materialized(t) => {
                    self.drop_stored(t.name(), None, true, true)?;
                }
            }
        }
        Ok(())
    }

    /// Forgets the views among `dependents`, whose entries a written batch deleted.
    pub(super) fn forget_views(&self, dependents: &[Dependent]) {
        let mut views = self.views.write();
        for d in dependents {
            if let Dependent::View(v) = d {
                views.remove(&v.rel_name());
            }
        }
    }
}
